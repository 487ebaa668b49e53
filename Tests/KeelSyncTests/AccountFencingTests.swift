import Foundation
import KeelContract
import KeelCore
import KeelHTTP
import KeelReference
import KeelStore
import KeelSync
import KeelTesting
import Testing

/// MOB-DATA-006 (sync): an account switch stops the old account's sync before the next account's vault
/// opens; nothing of one account is shown or sent in the other's context, and a late answer of the old
/// session is written nowhere.
@Suite(.timeLimit(.minutes(1))) struct AccountFencingTests {
    /// A device whose app switches accounts through ``SyncAccounts``; `online` decides where the next
    /// engine's client points (the backend, or a closed port).
    final class App: Sendable {
        let world: SyncWorld
        let device: SyncDevice
        let accounts: SyncAccounts
        let online = Locked(true)

        init(world: SyncWorld, tokens: [AccountID: String]) throws {
            self.world = world
            device = try world.device("phone")
            let dead = try deadBaseURL()
            let online = online
            accounts = SyncAccounts(vaults: device.vaults) { vault in
                let url = online.withLock { $0 } ? world.backend.baseURL : dead
                let remote = NotesRemote(
                    client: world.client(baseURL: url), account: vault.account, token: tokens[vault.account]!)
                return try SyncEngine(
                    vault: vault, remote: remote, policies: NotesSync.policies, offline: NotesSync.offline,
                    random: .seeded(
                        SyncDevice.seeds.withLock { next in
                            defer { next += 1 }
                            return next
                        }))
            }
        }

        /// The app relaunched (with or without network) into `account`.
        func relaunch(_ account: AccountID, online isOnline: Bool) async throws -> SyncEngine {
            await accounts.deactivate()
            online.withLock { $0 = isOnline }
            return try await accounts.activate(account)
        }
    }

    /// Found in review: a sign-out purged the outbox whatever it held, so an app that signs out on an error
    /// (a 401) lost the user's unsent changes without a word. It now refuses until told they may go.
    @Test func aSignOutNeverLosesUnsentChangesUnlessTold() async throws {
        let world = try SyncWorld()
        let tokens = [AccountID.alice: try await world.token(.alice)]
        let app = try App(world: world, tokens: tokens)
        let engine = try await app.relaunch(.alice, online: false)
        try await engine.create("note", id: "n1", fields: .note("Written offline"), operation: "createNote")
        await #expect {
            _ = try await app.accounts.signOut()
        } throws: { error in
            (error as? SyncError)?.code == .unsentChanges
        }
        // Nothing was signed out: the engine runs, the change is still queued.
        #expect(try await engine.outstandingCount() == 1)
        let report = try await app.accounts.signOut(discardingUnsent: true)
        #expect(report.deletedDatasets.contains(engine.storage.outbox))
        #expect(await engine.isStopped)
    }

    /// Found in review: with no engine (the app could not make one — no token stored — and signs out on that
    /// error), the sign-out did not count the outbox at all and purged the account's unsent changes.
    @Test func aSignOutWithoutAnEngineStillKeepsUnsentChanges() async throws {
        struct NoToken: Error {}
        let world = try SyncWorld()
        let app = try App(world: world, tokens: [.alice: try await world.token(.alice)])
        let engine = try await app.relaunch(.alice, online: false)
        try await engine.create("note", id: "n1", fields: .note("Written offline"), operation: "createNote")
        await app.accounts.deactivate()
        // The next launch opens Alice's vault, but her engine cannot be made.
        let launch = SyncAccounts(vaults: app.device.vaults) { _ in throw NoToken() }
        await #expect(throws: NoToken.self) { _ = try await launch.activate(.alice) }
        let open = await app.device.vaults.active
        #expect(await launch.engine == nil && open != nil)
        await #expect {
            _ = try await launch.signOut()
        } throws: { error in
            (error as? SyncError)?.code == .unsentChanges
        }
        // Nothing was purged: signed in again, the change is still queued.
        let again = try await app.accounts.activate(.alice)
        #expect(try await again.outstandingCount() == 1)
    }

    /// Found in a review: a sign-out naming an account whose vault is not open deleted its outbox without
    /// counting it. Without `discardingUnsent` it is refused; with it, the vault goes by its manifest.
    @Test func aSignOutOfAnAccountWhoseVaultIsNotOpenNeedsLeaveToLoseItsChanges() async throws {
        let world = try SyncWorld()
        let app = try App(world: world, tokens: [.alice: try await world.token(.alice)])
        let engine = try await app.relaunch(.alice, online: false)
        try await engine.create("note", id: "n1", fields: .note("Written offline"), operation: "createNote")
        await app.accounts.deactivate()
        #expect(await app.device.vaults.active == nil)
        await #expect {
            _ = try await app.accounts.signOut(account: .alice)
        } throws: { error in
            (error as? SyncError)?.code == .unsentChanges
        }
        let again = try await app.accounts.activate(.alice)
        #expect(try await again.outstandingCount() == 1)  // nothing was purged
        await app.accounts.deactivate()
        let report = try await app.accounts.signOut(discardingUnsent: true, account: .alice)
        #expect(report.deletedDatasets.contains(again.storage.outbox))
    }

    /// DATA-006.1: offline, Alice has a cached note, a draft, a photo and a pending change; the switch to Bob
    /// shows him none of it and sends none of it; back on Alice (online) everything is intact and her change
    /// goes out under her own account, once.
    @Test func anOfflineSwitchKeepsCacheDraftMediaAndPendingChangeWithTheirAccount() async throws {
        let world = try SyncWorld()
        let tokens = [AccountID.alice: try await world.token(.alice), .bob: try await world.token(.bob)]
        let app = try App(world: world, tokens: tokens)
        var engine = try await app.accounts.activate(.alice)
        try await engine.create("note", id: "n1", fields: .note("Alice's cached note"), operation: "createNote")
        #expect(await engine.sync().isComplete)
        try await engine.vault.writeFile("drafts", named: "n1.txt", contents: Data("half-typed".utf8))
        try await engine.vault.writeFile("media", named: "photo.jpg", contents: Data([0xFF, 0xD8, 0xFF, 0xE0]))

        engine = try await app.relaunch(.alice, online: false)
        let pending = try await engine.create(
            "note", id: "n2", fields: .note("Written offline"), operation: "createNote")
        #expect(await engine.sync().failure?.kind == .offline)
        #expect(try await engine.state(of: pending) == .pending)
        let requestsBefore = world.backend.requestLog.count

        // Offline switch to Bob.
        let bob = try await app.accounts.activate(.bob)
        #expect(await engine.isStopped && !engine.vault.isOpen)
        #expect(try await bob.entities("note").isEmpty)
        #expect(try await bob.outbox().isEmpty)
        #expect(try await bob.conflicts().isEmpty)
        #expect(try await bob.vault.fileNames("drafts").isEmpty)
        #expect(try await bob.vault.fileNames("media").isEmpty)
        #expect(await bob.sync().failure?.kind == .offline)
        await #expect(throws: SyncError.self) {
            try await engine.update("note", id: "n2", fields: [:], operation: "editNote")
        }

        // Bob online: his sync sends nothing of Alice's and receives nothing of hers.
        let bobOnline = try await app.relaunch(.bob, online: true)
        #expect(await bobOnline.sync().isComplete)
        #expect(try await bobOnline.entities("note").isEmpty)
        let bobsRequests = world.backend.requestLog.dropFirst(requestsBefore)
        #expect(!bobsRequests.isEmpty && bobsRequests.allSatisfy { $0.account == "bob" })
        #expect(!bobsRequests.contains { $0.path == "/mutations" })
        #expect(try world.backend.appliedKeys()[pending.idempotencyKey.rawValue] == nil)

        // Back to Alice, online: everything of hers is there, and her change is sent as hers.
        let alice = try await app.relaunch(.alice, online: true)
        #expect(try await alice.state(of: pending) == .pending)
        #expect(try await alice.entity("note", id: "n1")?.fields["title"] == "Alice's cached note")
        #expect(try await alice.vault.readFile("drafts", named: "n1.txt") == Data("half-typed".utf8))
        #expect(try await alice.vault.readFile("media", named: "photo.jpg") == Data([0xFF, 0xD8, 0xFF, 0xE0]))
        let before = world.backend.requestLog.count
        #expect(await alice.sync().isComplete)
        #expect(try await alice.state(of: pending) == .synced)
        #expect(try world.backend.appliedKeys()[pending.idempotencyKey.rawValue] == 1)
        let push = try #require(world.backend.requestLog.dropFirst(before).first { $0.path == "/mutations" })
        #expect(push.account == "alice" && push.status == 200)
    }

    /// DATA-006.2: the backend holds Alice's acknowledgement until after the app switched to Bob. The switch
    /// waits for Alice's sync to stop (its call cancelled); the late answer changes nothing in either vault;
    /// Alice's change is still outstanding and is confirmed (applied once) when she comes back.
    @Test func aLateAnswerOfTheOldSessionIsWrittenNowhere() async throws {
        let world = try SyncWorld()
        let tokens = [AccountID.alice: try await world.token(.alice), .bob: try await world.token(.bob)]
        let app = try App(world: world, tokens: tokens)
        let alice = try await app.accounts.activate(.alice)
        let change = try await alice.create("note", id: "n1", fields: .note("Slow"), operation: "createNote")
        world.backend.setFault(.init(mode: .none, delayAcks: .milliseconds(800)))
        let running = Task { await alice.sync() }
        for _ in 0..<400 where try world.backend.appliedKeys()[change.idempotencyKey.rawValue] == nil {
            try await Task.sleep(for: .milliseconds(5))
        }
        #expect(try world.backend.appliedKeys()[change.idempotencyKey.rawValue] == 1)  // applied, answer held

        let bob = try await app.accounts.activate(.bob)  // returns only once Alice's sync has stopped
        let report = await running.value
        #expect(!report.isComplete && report.acknowledged == 0)
        #expect(report.droppedAnswers == 1 || report.failure?.kind == .cancelled)
        // The backend answers late; wait until it has.
        for _ in 0..<400 where !world.backend.requestLog.contains(where: { $0.path == "/mutations" }) {
            try await Task.sleep(for: .milliseconds(5))
        }
        #expect(world.backend.requestLog.contains { $0.path == "/mutations" && $0.account == "alice" })
        #expect(try await bob.entities("note").isEmpty)
        #expect(try await bob.outbox().isEmpty)
        #expect(try await bob.settlement(of: change.id) == nil)

        world.backend.setFault(.none)
        let back = try await app.accounts.activate(.alice)
        // The late answer was not taken as success: the change is `sending` (sent, answer never learned) and
        // goes again with its key.
        #expect(try await back.state(of: change) == .sending)
        #expect(try await back.settlement(of: change.id) == nil)
        #expect(await back.sync().isComplete)
        #expect(try await back.state(of: change) == .synced)
        #expect(try world.backend.appliedKeys()[change.idempotencyKey.rawValue] == 1)
    }

    /// DATA-006.2 (a concurrent answer of the old session after the new one is activated): Alice's push is
    /// out — applied by the backend, its answer held by a remote that ignores cancellation — when the app
    /// switches to Bob. The switch does not return, nor open Bob's vault, while that push is out; once the
    /// answer arrives it is dropped, and neither vault changed: Bob has nothing of Alice's, and her change is
    /// still `sending` when she comes back, then goes once.
    @Test func aSwitchWaitsForTheOldSessionsPushAndDropsItsAnswer() async throws {
        let world = try SyncWorld()
        let tokens = [AccountID.alice: try await world.token(.alice), .bob: try await world.token(.bob)]
        let device = try world.device("phone")
        let hold = PushHold()
        // Whether Alice's push was still out when Bob's engine was made (his vault already open), per engine made.
        let madeWhileHeld = Locked<[AccountID: Bool]>([:])
        let accounts = SyncAccounts(vaults: device.vaults) { vault in
            madeWhileHeld.withLock { $0[vault.account] = hold.isOut }
            let inner = NotesRemote(client: world.client(), account: vault.account, token: tokens[vault.account]!)
            return try SyncEngine(
                vault: vault, remote: vault.account == .alice ? HeldPushRemote(inner: inner, hold: hold) : inner,
                policies: NotesSync.policies, offline: NotesSync.offline,
                random: .seeded(
                    SyncDevice.seeds.withLock { next in
                        defer { next += 1 }
                        return next
                    }))
        }
        let alice = try await accounts.activate(.alice)
        let change = try await alice.create("note", id: "n1", fields: .note("Slow"), operation: "createNote")
        let running = Task { await alice.sync() }
        await hold.entered.wait()
        #expect(try world.backend.appliedKeys()[change.idempotencyKey.rawValue] == 1)  // applied, answer held

        let activated = Locked(false)
        let switching = Task {
            let bob = try await accounts.activate(.bob)
            activated.withLock { $0 = true }
            return bob
        }
        // The switch has begun (Alice's engine is told to stop)…
        while await !alice.isStopped { try await Task.sleep(for: .milliseconds(2)) }
        // …and is given time to finish, were it not waiting for her push: it must not return meanwhile.
        for _ in 0..<200 where !activated.withLock({ $0 }) { try await Task.sleep(for: .milliseconds(5)) }
        #expect(!activated.withLock { $0 })
        #expect(alice.vault.isOpen && madeWhileHeld.withLock { $0[.bob] } == nil)

        hold.release.fire()
        let bob = try await switching.value
        let report = await running.value
        #expect(report.droppedAnswers == 1 && report.acknowledged == 0 && !report.isComplete)
        #expect(madeWhileHeld.withLock { $0[.bob] } == false)  // Bob's engine came after Alice's push was back
        #expect(!alice.vault.isOpen)
        #expect(try await bob.entities("note").isEmpty)
        #expect(try await bob.outbox().isEmpty)
        #expect(try await bob.settlement(of: change.id) == nil)

        let back = try await accounts.activate(.alice)
        #expect(try await back.state(of: change) == .sending)
        #expect(try await back.outbox().map(\.state) == [.sending])
        #expect(try await back.settlement(of: change.id) == nil)
        #expect(await back.sync().isComplete)
        #expect(try await back.state(of: change) == .synced)
        #expect(try world.backend.appliedKeys()[change.idempotencyKey.rawValue] == 1)
    }

    /// The engine's own fence: a remote that ignores cancellation and answers after the engine was stopped
    /// gets its answer dropped — the change stays outstanding, nothing is acknowledged.
    @Test func anAnswerArrivingAfterStopIsDropped() async throws {
        let world = try SyncWorld()
        let device = try world.device("phone")
        let vault = try await device.vaults.open(.alice)
        let gate = Gate()
        let remote = StubbornRemote(
            inner: NotesRemote(client: world.client(), account: .alice, token: try await world.token(.alice)),
            gate: gate)
        let engine = try SyncEngine(
            vault: vault, remote: remote, policies: NotesSync.policies, offline: NotesSync.offline, random: .seeded(41))
        let change = try await engine.create("note", id: "n1", fields: .note("x"), operation: "createNote")
        let running = Task { await engine.sync() }
        await gate.waitUntilEntered()
        let stopping = Task { await engine.stop() }
        try await Task.sleep(for: .milliseconds(20))
        gate.open()
        await stopping.value
        let report = await running.value
        #expect(report.droppedAnswers == 1 && report.acknowledged == 0)
        #expect(try world.backend.appliedKeys()[change.idempotencyKey.rawValue] == 1)
        await #expect(throws: SyncError.self) { try await engine.outbox() }  // stopped: refused
        await device.vaults.close()
        let reopened = try await device.engine(.alice)
        #expect(try await reopened.state(of: change) == .sending)
        #expect(try await reopened.outbox().map(\.state) == [.sending])  // sent, answer unknown: not `pending`
        #expect(try await reopened.settlement(of: change.id) == nil)
    }
}

/// Lets a test hold a call until it decides.
final class Gate: Sendable {
    private let state = Locked<(entered: Bool, open: Bool)>((false, false))

    func enter() async {
        state.withLock { $0.entered = true }
        while !state.withLock({ $0.open }) { try? await Task.sleep(for: .milliseconds(2)) }
    }

    func waitUntilEntered() async {
        while !state.withLock({ $0.entered }) { try? await Task.sleep(for: .milliseconds(2)) }
    }

    func open() { state.withLock { $0.open = true } }
}

/// A remote that finishes its call whatever happens to the task that made it, then waits at the gate.
struct StubbornRemote: SyncRemote {
    let inner: NotesRemote
    let gate: Gate

    func push(_ batch: [PendingMutation], batchKey: IdempotencyKey, context: SyncContext) async throws(HTTPFailure)
        -> [PushResult]
    {
        let inner = inner
        let results = await Task.detached { try? await inner.push(batch, batchKey: batchKey, context: context) }.value
        await gate.enter()
        guard let results else {
            throw HTTPFailure(kind: .technical, outcome: .unknown, correlationID: context.correlationID)
        }
        return results
    }

    func pull(after cursor: String?, limit: Int, context: SyncContext) async throws(HTTPFailure) -> PullPage {
        try await inner.pull(after: cursor, limit: limit, context: context)
    }
}

/// A one-shot signal, awaited on a continuation: no polling, and no spinning when the waiting task is
/// cancelled.
final class Signal: Sendable {
    private let state = Locked<(fired: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    var hasFired: Bool { state.withLock { $0.fired } }

    func fire() {
        let waiters = state.withLock { state in
            defer { state = (true, []) }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Returns once ``fire()`` was called, whether or not the calling task is cancelled.
    func wait() async {
        await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
            let fired = state.withLock { state in
                if !state.fired { state.waiters.append(waiter) }
                return state.fired
            }
            if fired { waiter.resume() }
        }
    }
}

/// Holds a push's answer: `entered` fires once the backend has answered a push, which then waits for
/// `release`.
final class PushHold: Sendable {
    let entered = Signal()
    let release = Signal()

    /// Whether a push is held (entered, not yet released).
    var isOut: Bool { entered.hasFired && !release.hasFired }
}

/// A remote whose pushes ignore cancellation: each is sent and answered whatever happens to the task that
/// made it, and its answer handed back only once `hold` is released.
struct HeldPushRemote: SyncRemote {
    let inner: NotesRemote
    let hold: PushHold

    func push(_ batch: [PendingMutation], batchKey: IdempotencyKey, context: SyncContext) async throws(HTTPFailure)
        -> [PushResult]
    {
        let inner = inner
        let answer = await Task.detached { () -> Result<[PushResult], HTTPFailure> in
            do throws(HTTPFailure) {
                return .success(try await inner.push(batch, batchKey: batchKey, context: context))
            } catch {
                return .failure(error)
            }
        }.value
        hold.entered.fire()
        await hold.release.wait()
        return try answer.get()
    }

    func pull(after cursor: String?, limit: Int, context: SyncContext) async throws(HTTPFailure) -> PullPage {
        try await inner.pull(after: cursor, limit: limit, context: context)
    }
}
