import Foundation
import KeelContract
import KeelCore
import KeelHTTP
import KeelReference
import KeelStore
import KeelSync
import KeelTesting
import Testing

/// MOB-DATA-004: the offline scenario contract, against the reference backend on real sockets and the
/// account's vault on real SQLite files.
@Suite(.timeLimit(.minutes(1))) struct OfflineScenarioTests {
    /// DATA-004.1: the app starts with the backend down, shows what it has (with its age), takes edits into
    /// the outbox, refuses an online-only operation at once, and sends everything when the backend is back.
    @Test func startingAndWorkingWithoutNetworkShowsCachedDataAndQueuesEdits() async throws {
        let world = try SyncWorld()
        let device = try world.device("phone")
        let time = MovableWallClock()
        let token = try await world.token(.alice)
        var engine = try await device.engine(.alice, token: token, clock: time.clock)
        try await engine.create("note", id: "n1", fields: .note("Groceries", body: "milk"), operation: "createNote")
        #expect(await engine.sync().isComplete)
        await engine.stop()

        // Relaunch without network: the backend's port is closed.
        time.advance(by: 2 * 3600)
        let down = world.client(baseURL: try deadBaseURL())
        engine = try await device.engine(.alice, token: token, client: down, clock: time.clock)
        let cached = try #require(try await engine.entity("note", id: "n1"))
        #expect(cached.fields["title"] == "Groceries" && cached.state == .synced && cached.serverVersion == 1)
        let freshness = try await engine.freshness(of: "note")
        #expect(freshness.description == "updated 2 h ago" && !freshness.isStale)
        // Nothing has failed yet, but nothing got through either: an operation no scenario declares is not
        // queued, and the user is told it is not available offline.
        #expect(await engine.connectivity == .unknown)
        do {
            try await engine.create("note", id: "n3", fields: .note("x"), operation: "publishNote")
            Issue.record("an undeclared operation was queued")
        } catch { #expect(error.code == .offline) }

        let edit = try await engine.update("note", id: "n1", fields: ["body": "milk, eggs"], operation: "editNote")
        let created = try await engine.create("note", id: "n2", fields: .note("Offline idea"), operation: "createNote")
        let report = await engine.sync()
        #expect(!report.isComplete && report.failure?.kind == .offline && report.failure?.outcome == .notSent)
        #expect(await engine.connectivity == .offline)
        #expect(try await engine.state(of: edit) == .pending)
        #expect(try await engine.state(of: created) == .pending)
        #expect(try await engine.entity("note", id: "n1")?.fields["body"] == "milk, eggs")
        #expect(try await engine.entity("note", id: "n1")?.state == .pending)
        // Not declared offline: fails fast with `offline`, nothing queued.
        await #expect(throws: SyncError.self) {
            try await engine.create("note", id: "n3", fields: .note("x"), operation: "publishNote")
        }
        do {
            try await engine.create("note", id: "n3", fields: .note("x"), operation: "publishNote")
        } catch { #expect(error.code == .offline) }
        #expect(try await engine.outstandingCount() == 2)
        #expect(try world.backend.noteCount() == 1)
        await engine.stop()

        // The network is back: both changes reach the backend, once.
        engine = try await device.engine(.alice, token: token, clock: time.clock)
        let back = await engine.sync()
        #expect(back.isComplete, "\(back)")
        // Online, the outbox still does not take it: the app sends it with the HTTP client.
        do {
            try await engine.create("note", id: "n3", fields: .note("x"), operation: "publishNote")
            Issue.record("an undeclared operation was queued")
        } catch { #expect(error.code == .notOfflineCapable) }
        #expect(try await engine.state(of: edit) == .synced)
        #expect(try await engine.state(of: created) == .synced)
        #expect(try world.backend.noteCount() == 2)
        #expect(try world.backend.appliedKeys()[edit.idempotencyKey.rawValue] == 1)
    }

    /// DATA-004.2: `pending` → `sending` → `synced` only after the backend confirms: a change the backend has
    /// applied but not yet answered reads `sending` everywhere (its state, its note, its outbox entry; no
    /// settlement), and `synced` only once the push returned. An answer lost on the way leaves the change
    /// `sending`, never `synced`, and it is confirmed by sending it again with its key.
    @Test func aChangeIsSyncedOnlyAfterTheBackendConfirmsIt() async throws {
        let world = try SyncWorld()
        let engine = try await world.device("phone").engine(.alice)
        let change = try await engine.create("note", id: "n1", fields: .note("Plan"), operation: "createNote")
        #expect(try await engine.state(of: change) == .pending)
        #expect(try await engine.entity("note", id: "n1")?.state == .pending)
        #expect(try await engine.outbox().map(\.state) == [.pending])

        // The backend applies the change and holds its answer (well within the client's 5 s attempt timeout).
        world.backend.setFault(.init(mode: .none, delayAcks: .seconds(2)))
        let returned = Locked(false)
        let running = Task {
            let report = await engine.sync()
            returned.withLock { $0 = true }
            return report
        }
        for _ in 0..<400 where try world.backend.appliedKeys()[change.idempotencyKey.rawValue] == nil {
            try await Task.sleep(for: .milliseconds(5))
        }
        #expect(try world.backend.appliedKeys()[change.idempotencyKey.rawValue] == 1)
        // Applied, the answer not yet here: `sending`, not `synced`, nothing settled.
        #expect(try await engine.state(of: change) == .sending)
        #expect(try await engine.entity("note", id: "n1")?.state == .sending)
        #expect(try await engine.outbox().map(\.state) == [.sending])
        #expect(try await engine.settlement(of: change.id) == nil)
        #expect(!returned.withLock { $0 }, "the answer came before the reads: they did not see it held")
        let confirmed = await running.value
        #expect(confirmed.isComplete && confirmed.acknowledged == 1)
        #expect(try await engine.state(of: change) == .synced)
        #expect(try await engine.entity("note", id: "n1")?.state == .synced)
        #expect(try await engine.outbox().isEmpty)
        #expect(try await engine.settlement(of: change.id) == .applied(version: 1))

        // Applied by the backend, answer lost: the engine cannot know, so it does not say synced.
        world.backend.setFault(.init(mode: .drop))
        let edit = try await engine.update("note", id: "n1", fields: ["body": "details"], operation: "editNote")
        let lost = await engine.sync()
        #expect(lost.failure?.outcome == .unknown)
        #expect(try await engine.state(of: edit) == .sending)
        #expect(try await engine.entity("note", id: "n1")?.state == .sending)
        #expect(try await engine.outbox().map(\.state) == [.sending])
        #expect(try await engine.settlement(of: edit.id) == nil)
        #expect(try world.backend.appliedKeys()[edit.idempotencyKey.rawValue] == 1)

        // Sent again with its key: confirmed, applied once.
        world.backend.setFault(.none)
        #expect(await engine.sync().isComplete)
        #expect(try await engine.state(of: edit) == .synced)
        #expect(try await engine.settlement(of: edit.id) == .applied(version: 2))
        #expect(try world.backend.appliedKeys()[edit.idempotencyKey.rawValue] == 1)  // sent twice, applied once
    }

    /// Found in review: a settlement record is kept for every change ever made, so the state dataset only
    /// grew. `forgetSettlements(before:)` forgets those older than a date (on the engine's wall clock).
    @Test func settlementsOlderThanADateAreForgotten() async throws {
        let world = try SyncWorld()
        let time = MovableWallClock()
        let engine = try await world.device("phone").engine(.alice, clock: time.clock)
        let old = try await engine.create("note", id: "n1", fields: .note("Old"), operation: "createNote")
        #expect(await engine.sync().isComplete)
        time.advance(by: 8 * 86400)
        let recent = try await engine.create("note", id: "n2", fields: .note("Recent"), operation: "createNote")
        #expect(await engine.sync().isComplete)
        #expect(try await engine.forgetSettlements(before: Date(timeIntervalSince1970: 1_790_000_000 + 86400)) == 1)
        #expect(try await engine.settlement(of: old.id) == nil)
        #expect(try await engine.settlement(of: recent.id) == .applied(version: 1))
        #expect(try await engine.entity("note", id: "n1")?.state == .synced)
    }

    /// DATA-004.2: a change the backend refuses is `failed` with KeelHTTP's kind and a safe action; later
    /// changes of the same note wait behind it, other notes go on; a refused token fails the batch with
    /// `authentication` → sign in again, then the changes go through.
    @Test func aRefusedChangeIsFailedWithItsKindAndASafeRecoveryAction() async throws {
        let world = try SyncWorld()
        let device = try world.device("phone")
        let engine = try await device.engine(.alice)
        let tooLong = try await engine.create(
            "note", id: "n1", fields: .note(String(repeating: "x", count: 201)), operation: "createNote")
        let behind = try await engine.update("note", id: "n1", fields: ["body": "more"], operation: "editNote")
        let fine = try await engine.create("note", id: "n2", fields: .note("Fine"), operation: "createNote")
        let report = await engine.sync()
        #expect(report.rejected == 1 && report.acknowledged == 1)
        #expect(try await engine.state(of: tooLong) == .failed)
        #expect(try await engine.state(of: behind) == .pending)
        #expect(try await engine.state(of: fine) == .synced)
        let failed = try #require(try await engine.entity("note", id: "n1"))
        #expect(
            failed.state == .failed && failed.failure?.kind == .validation && failed.failure?.errorCode == "validation")
        let shown = try #require(failed.failure).userFacing(correlationID: tooLong.correlationID)
        #expect(shown.action == .fixInput(fields: []) && !shown.message.contains("validation"))
        // The user gives up the refused change; the one behind it goes.
        try await engine.discard(tooLong)
        #expect(try await engine.settlement(of: tooLong.id) == .discarded)
        #expect(await engine.sync().rejected == 1)  // an update of a note the server never had: refused too
        #expect(try await engine.state(of: behind) == .failed)
        await engine.stop()

        // A token the backend does not know: the batch fails as `authentication`, the action is to sign in.
        let stale = try await device.engine(.alice, token: "not-a-token")
        let queued = try await stale.create("note", id: "n3", fields: .note("Later"), operation: "createNote")
        let refused = await stale.sync()
        #expect(refused.failure?.kind == .authentication)
        #expect(try await stale.state(of: queued) == .failed)
        let action = try #require(try await stale.entity("note", id: "n3")?.failure).userFacing(
            correlationID: queued.correlationID
        ).action
        #expect(action == .signInAgain)
        await stale.stop()
        let signedIn = try await device.engine(.alice)
        // Signed in again: only what the old session's refusal held back goes; the refused content stays failed.
        #expect(try await signedIn.retryFailed(causedBy: [.authentication]) == 1)
        let retried = await signedIn.sync()
        #expect(retried.rejected == 0 && retried.acknowledged == 1, "\(retried)")
        #expect(try await signedIn.state(of: queued) == .synced)
        #expect(try await signedIn.state(of: behind) == .failed)
        #expect(try await signedIn.retryFailed() == 1)
        #expect(await signedIn.sync().rejected == 1)
    }

    /// DATA-004.3: the data's age is shown as the user reads it and judged against the scenario's maximum
    /// staleness, on the engine's injected wall clock.
    /// The declared periodic condition is real: `runPeriodically` syncs once per interval on the injected clock —
    /// nothing before it —, and ends once the engine is stopped (found in an outside audit: never exercised).
    @Test func aPeriodicConditionSyncsOncePerIntervalAndEndsWithTheEngine() async throws {
        let world = try SyncWorld()
        let engine = try await world.device("phone").engine(.alice)
        #expect(engine.offline.periodicInterval == .seconds(900))
        let change = try await engine.create("note", id: "p1", fields: .note("P"), operation: "createNote")
        let clock = ManualClock()
        let loop = Task { await engine.runPeriodically(clock: clock) }
        try await clock.waitForSleepers(count: 1)
        clock.advance(by: .seconds(899))
        try await clock.waitForSleepers(count: 1)
        #expect(try await engine.state(of: change) == .pending, "nothing is sent before the interval")
        #expect(try world.backend.appliedKeys().isEmpty)
        clock.advance(by: .seconds(1))
        let deadline = ContinuousClock.now + .seconds(20)
        while try await engine.state(of: change) != .synced, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(try await engine.state(of: change) == .synced)
        #expect(try world.backend.appliedKeys() == [change.idempotencyKey.rawValue: 1])
        // The loop waits for the next interval, and ends when it comes to a stopped engine.
        try await clock.waitForSleepers(count: 1)
        await engine.stop()
        clock.advance(by: .seconds(900))
        await loop.value
    }

    @Test func stalenessIsShownAndJudgedAgainstTheScenario() async throws {
        let world = try SyncWorld()
        let time = MovableWallClock()
        let engine = try await world.device("phone").engine(.alice, clock: time.clock)
        let never = try await engine.freshness(of: "note")
        #expect(never.description == "never updated" && never.isStale && never.lastPull == nil)
        #expect(await engine.pull().isComplete)
        #expect(try await engine.freshness(of: "note").description == "updated just now")
        time.advance(by: 5 * 60)
        #expect(try await engine.freshness(of: "note").description == "updated 5 min ago")
        time.advance(by: 3 * 3600)
        let hours = try await engine.freshness(of: "note")
        #expect(hours.description == "updated 3 h ago" && !hours.isStale)
        #expect(hours.maximumStaleness == .seconds(6 * 3600))
        time.advance(by: 3 * 3600)
        let stale = try await engine.freshness(of: "note")
        #expect(stale.isStale && stale.description == "updated 6 h ago")
        time.advance(by: 2 * 86_400)
        #expect(try await engine.freshness(of: "note").description == "updated 2 d ago")
        // The clock set back past the last pull (found in review: it read as fresh): the data's age is not
        // known, so it is stale.
        time.advance(by: -3 * 86_400)
        let setBack = try await engine.freshness(of: "note")
        #expect(setBack.isStale && setBack.description == "update time unknown")
        time.advance(by: 3 * 86_400)
        // A failed pull does not make old data look fresh.
        world.backend.setFault(.init(mode: .unavailable, retryAfter: 30))
        #expect(await engine.pull().failure?.kind == .maintenance)
        #expect(try await engine.freshness(of: "note").isStale)
        world.backend.setFault(.none)
        #expect(await engine.pull().isComplete)
        #expect(try await engine.freshness(of: "note").description == "updated just now")
    }

    /// The declaration itself: what the app must say before anything syncs.
    @Test func incompleteDeclarationsAreRefused() throws {
        let scenario = OfflineScenario(
            name: "a", operations: ["edit"], entityTypes: ["note"], maximumStaleness: .seconds(60), display: .banner,
            conditions: [.manual])
        #expect(throws: SyncError.self) { try OfflineContract([scenario, scenario]) }
        #expect(throws: SyncError.self) {
            try OfflineContract([
                OfflineScenario(
                    name: "b", operations: ["edit"], entityTypes: ["note"], maximumStaleness: .seconds(60),
                    display: .banner, conditions: [])
            ])
        }
        #expect(throws: SyncError.self) {
            try OfflineContract([
                OfflineScenario(
                    name: "c", operations: ["edit"], entityTypes: ["note"], maximumStaleness: .zero, display: .banner,
                    conditions: [.manual])
            ])
        }
        let contract = try OfflineContract([scenario])
        #expect(throws: SyncError.self) { try contract.requireOnline("publish", connectivity: .offline) }
        try contract.requireOnline("publish", connectivity: .online)
        try contract.requireOnline("edit", connectivity: .offline)
        #expect(contract.syncs(on: .manual) && !contract.syncs(on: .foreground))

        var policies = ConflictPolicies()
        #expect(throws: SyncError.self) { try policies.register("note", .clientWins(because: "  ")) }
        #expect(throws: SyncError.self) {
            try policies.register("note", .manual(because: "text"), fields: ["pinned": .clientWins(because: "")])
        }
        try policies.register("note", .manual(because: "text"))
        #expect(throws: SyncError.self) { try policies.register("note", .manual(because: "again")) }
        #expect(policies.declaration == ["note: manual — text"])
    }
}

/// Edges of the outbox the happy paths do not reach.
@Suite(.timeLimit(.minutes(1))) struct OutboxEdgeTests {
    /// Enqueues racing right after launch each get their own place in the outbox: none overwrites another.
    @Test func concurrentEnqueuesNeverShareAnOutboxEntry() async throws {
        let world = try SyncWorld()
        let engine = try await world.device("phone").engine(.alice)
        let changes = try await withThrowingTaskGroup(of: PendingMutation.self) { group in
            for index in 0..<24 {
                group.addTask {
                    try await engine.create(
                        "note", id: "n\(index)", fields: .note("N\(index)"), operation: "createNote")
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(Set(changes.map(\.sequence)).count == 24)
        #expect(try await engine.outstandingCount() == 24)
        #expect(await engine.sync().acknowledged == 24)
        #expect(try world.backend.noteCount() == 24)
    }

    /// An entity without a type or an id cannot be addressed (the backend refuses the whole batch it is in):
    /// such a change is refused when queued, and nothing of its call is queued.
    @Test func aChangeOfAnEntityWithoutAnIDIsRefusedAndNothingIsQueued() async throws {
        let world = try SyncWorld()
        let engine = try await world.device("phone").engine(.alice)
        for (type, id) in [("note", ""), ("", "n1")] {
            let error = await #expect(throws: SyncError.self) {
                try await engine.enqueue(
                    [.create("note", id: "fine", fields: .note("F")), .create(type, id: id, fields: .note("X"))],
                    operation: "createNote")
            }
            #expect(error?.code == .invalidChange)
        }
        #expect(try await engine.outstandingCount() == 0)
    }

    /// A change that went out without a known answer may already be applied: it cannot be discarded as if it
    /// never left, and it reads `sending` until the backend answers.
    @Test func aChangeSentWithoutAKnownAnswerCannotBeDiscarded() async throws {
        let world = try SyncWorld()
        let engine = try await world.device("phone").engine(.alice)
        let change = try await engine.create("note", id: "n1", fields: .note("x"), operation: "createNote")
        world.backend.setFault(.init(mode: .drop))
        _ = await engine.sync()
        #expect(try await engine.state(of: change) == .sending)
        await #expect(throws: SyncError.self) { try await engine.discard(change) }
        world.backend.setFault(.none)
        _ = await engine.sync()
        #expect(try await engine.state(of: change) == .synced)
    }

    /// Found in review: after an attempt whose answer was lost (the backend applied it), a later attempt that
    /// did not get through (maintenance, a captive portal) made the change `pending` again — discardable,
    /// recorded as discarded, and back on the next pull. The first answer is still unknown: it stays `sending`.
    @Test func anUnknownOutcomeStaysUnknownThroughLaterAttemptsThatDoNotGetThrough() async throws {
        let world = try SyncWorld()
        let engine = try await world.device("phone").engine(.alice)
        let change = try await engine.create("note", id: "n1", fields: .note("x"), operation: "createNote")
        world.backend.setFault(.init(mode: .drop))  // applied; the answer is lost
        _ = await engine.sync()
        #expect(try await engine.state(of: change) == .sending)
        for fault in [ReferenceBackend.Fault(mode: .portal), .init(mode: .unavailable, retryAfter: 1)] {
            world.backend.setFault(fault)
            // A portal's page answers the POST (outcome unknown); maintenance refuses it before the backend
            // looks at its key (rejected): neither says what became of the first attempt.
            #expect(await engine.sync().failure != nil, "\(fault.mode)")
            #expect(try await engine.state(of: change) == .sending, "\(fault.mode)")
            await #expect(throws: SyncError.self) { try await engine.discard(change) }
        }
        world.backend.setFault(.none)
        _ = await engine.sync()
        #expect(try await engine.state(of: change) == .synced)
        #expect(try world.backend.appliedKeys() == [change.idempotencyKey.rawValue: 1])
    }

    /// The same after an engine stopped with the change out (as a killed app leaves it): the in-flight marker
    /// makes the change `sending` for the next engine, and a retry that does not get through keeps it so.
    @Test func aChangeLeftOutByAStoppedEngineStaysUnknownThroughAFailedRetry() async throws {
        let world = try SyncWorld()
        let device = try world.device("phone")
        let first = try await device.engine(.alice)
        let change = try await first.create("note", id: "n1", fields: .note("x"), operation: "createNote")
        world.backend.setFault(.init(mode: .none, delayAcks: .milliseconds(300)))  // applied, answered late
        let run = Task { await first.sync() }
        for _ in 0..<2000 where try world.backend.appliedKeys().isEmpty { try await Task.sleep(for: .milliseconds(2)) }
        await first.stop()  // the answer is never read
        _ = await run.value
        let second = try await device.engine(.alice)
        #expect(try await second.state(of: change) == .sending)
        world.backend.setFault(.init(mode: .unavailable, retryAfter: 1))  // refused before its key is looked at
        _ = await second.sync()
        #expect(try await second.state(of: change) == .sending)
        await #expect(throws: SyncError.self) { try await second.discard(change) }
        world.backend.setFault(.none)
        // Until the first request's late answer is out, the backend says the key is still being applied (409).
        for _ in 0..<100 where try await second.state(of: change) != .synced {
            _ = await second.sync()
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(try await second.state(of: change) == .synced)
        #expect(try world.backend.appliedKeys() == [change.idempotencyKey.rawValue: 1])
    }

    /// Found in an outside audit: a scenario had to declare an operation, so data the app only shows offline
    /// (server-owned lists) could not get a staleness of its own. A scenario without operations is read-only:
    /// its staleness counts, and it makes nothing available to the outbox.
    @Test func aReadOnlyScenarioGivesItsDataAStalenessAndQueuesNothing() async throws {
        let clock = MovableWallClock()
        let world = try SyncWorld(clock: clock.clock)
        let vault = try await world.device("phone").vaults.open(.alice)
        let token = try await world.token(.alice)
        let contract = try OfflineContract([
            OfflineScenario(
                name: "browseNotes", operations: [], entityTypes: ["note"], maximumStaleness: .seconds(3600),
                display: .banner, conditions: [.foreground, .manual]),
            OfflineScenario(
                name: "editNotes", operations: ["createNote"], entityTypes: ["note"],
                maximumStaleness: .seconds(6 * 3600), display: .itemBadges, conditions: [.manual]),
        ])
        #expect(contract.scenario(for: "browseNotes") == nil)
        #expect(contract.maximumStaleness(of: "note") == .seconds(3600))  // the strictest of the two
        let engine = try SyncEngine(
            vault: vault, remote: NotesRemote(client: world.client(), account: .alice, token: token),
            policies: NotesSync.policies, offline: contract, clock: clock.clock)
        #expect(await engine.handle(.foreground)?.isComplete == true)
        clock.advance(by: 2 * 3600)
        let freshness = try await engine.freshness(of: "note")
        #expect(freshness.isStale && freshness.maximumStaleness == .seconds(3600), "\(freshness)")
        await engine.stop()
    }

    /// Found in review: the scenario's queue and data were declared and never checked — a scenario naming
    /// another queue was accepted, and its operations queued changes of types it does not show.
    @Test func aScenarioIsHeldToItsQueueAndItsData() async throws {
        let world = try SyncWorld()
        let vault = try await world.device("phone").vaults.open(.alice)
        let remote = NotesRemote(client: world.client(), account: .alice, token: "t")
        var policies = NotesSync.policies
        try policies.register("task", .serverWins(because: "tasks are assigned by the server"))
        func contract(queue: String) throws -> OfflineContract {
            try OfflineContract([
                OfflineScenario(
                    name: "notes", operations: ["createNote"], entityTypes: ["note"], maximumStaleness: .seconds(60),
                    queue: queue, display: .banner, conditions: [.manual]),
                OfflineScenario(
                    name: "tasks", operations: ["createTask"], entityTypes: ["task"], maximumStaleness: .seconds(60),
                    display: .banner, conditions: [.manual]),
            ])
        }
        let elsewhere = try contract(queue: "mail")
        let refused = #expect(throws: SyncError.self) {
            try SyncEngine(vault: vault, remote: remote, policies: policies, offline: elsewhere)
        }
        #expect(refused?.code == .invalidDeclaration && refused?.subject == "notes")
        let engine = try SyncEngine(
            vault: vault, remote: remote, policies: policies,
            offline: try contract(queue: SyncStorage.default.outbox))
        let stray = await #expect(throws: SyncError.self) {
            try await engine.create("task", id: "t1", fields: ["title": "T"], operation: "createNote")
        }
        #expect(stray?.code == .invalidChange && stray?.subject == "task/t1")
        let mixed = await #expect(throws: SyncError.self) {
            try await engine.enqueue(
                [.create("note", id: "n1", fields: ["title": "N"]), .create("task", id: "t2", fields: [:])],
                operation: "createNote")
        }
        #expect(mixed?.code == .invalidChange)
        #expect(try await engine.outstandingCount() == 0)  // all of it or none
        try await engine.create("task", id: "t1", fields: ["title": "T"], operation: "createTask")
        try await engine.create("note", id: "n1", fields: ["title": "N"], operation: "createNote")
        #expect(try await engine.outstandingCount() == 2)
    }

    /// A scenario that shows a type without a conflict policy is refused when the engine is made.
    @Test func anEngineForATypeWithoutAPolicyIsRefused() async throws {
        let world = try SyncWorld()
        let vault = try await world.device("phone").vaults.open(.alice)
        let offline = try OfflineContract([
            OfflineScenario(
                name: "tasks", operations: ["editTask"], entityTypes: ["task"], maximumStaleness: .seconds(60),
                display: .banner, conditions: [.manual])
        ])
        let remote = NotesRemote(client: world.client(), account: .alice, token: "t")
        do {
            _ = try SyncEngine(vault: vault, remote: remote, policies: NotesSync.policies, offline: offline)
            Issue.record("an engine for a type without a policy was made")
        } catch {
            #expect(error.code == .noConflictPolicy && error.subject == "task")
        }
    }
}
