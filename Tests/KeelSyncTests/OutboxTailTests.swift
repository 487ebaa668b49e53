import Foundation
import KeelContract
import KeelCore
import KeelReference
import KeelStore
import KeelSync
import KeelTesting
import Testing

/// An enqueue commits one row (the outbox entry); the entities' records take new entries later, a batch at a
/// time. What the app reads must never show the difference: before a fold, after it, after a relaunch, from
/// another engine on the same vault, and on a vault written before the fold mark existed.
@Suite(.timeLimit(.minutes(2))) struct OutboxTailTests {
    /// The entity records written so far (not what the app sees: what is on disk).
    func recordCount(_ engine: SyncEngine) async throws -> Int {
        try await engine.vault.read(engine.storage.entities) { try $0.count() }
    }

    /// What the app sees of every note: id → (fields, deleted, state, outstanding changes).
    func notes(_ engine: SyncEngine) async throws -> [String: String] {
        var result: [String: String] = [:]
        for note in try await engine.entities("note") {
            let fields = note.fields.keys.sorted().map { "\($0)=\(note.fields[$0]!)" }.joined(separator: ",")
            result[note.ref.id] = "\(fields) deleted=\(note.isDeleted) \(note.state) \(note.outstandingChanges)"
            let one = try #require(try await engine.entity("note", id: note.ref.id))
            #expect(one == note)
        }
        return result
    }

    /// The app relaunched: its engine stopped and its vaults closed, then new ones over the same directories.
    func relaunch(_ world: SyncWorld, _ device: SyncDevice, _ engine: SyncEngine, token: String) async throws -> (
        SyncDevice, SyncEngine
    ) {
        await engine.stop()
        await device.vaults.close()
        let relaunched = try world.device(device.name)
        return (relaunched, try await relaunched.engine(.alice, token: token))
    }

    /// A phone whose engine queued 70 new notes in one call: more than a tail holds, so they go into their
    /// records at once, and the mark is written.
    func phoneWithSeventyQueuedNotes(_ world: SyncWorld, token: String) async throws -> (SyncDevice, SyncEngine) {
        let device = try world.device("phone")
        let engine = try await device.engine(.alice, token: token)
        let changes = (0..<70).map { LocalChange.create("note", id: "n\($0)", fields: .note("T\($0)")) }
        try await engine.enqueue(changes, operation: "createNote")
        #expect(try await recordCount(engine) == 70)
        return (device, engine)
    }

    @Test func anEnqueueWritesOnlyItsOutboxEntryAndEveryReadShowsIt() async throws {
        let world = try SyncWorld()
        let token = try await world.token(.alice)
        var device = try world.device("phone")
        var engine = try await device.engine(.alice, token: token)
        try await engine.create("note", id: "a", fields: .note("A"), operation: "createNote")
        try await engine.create("note", id: "b", fields: .note("B"), operation: "createNote")
        try await engine.create("note", id: "c", fields: .note("C"), operation: "createNote")
        try await engine.update("note", id: "a", fields: ["title": "A2"], operation: "editNote")
        try await engine.delete("note", id: "c", operation: "deleteNote")
        // Nothing but outbox entries on disk; the app sees every change.
        #expect(try await recordCount(engine) == 0)
        #expect(try await engine.outstandingCount() == 5)
        let expected = [
            "a": "body=\"\",title=\"A2\" deleted=false pending 2",
            "b": "body=\"\",title=\"B\" deleted=false pending 1",
            "c": "body=\"\",title=\"C\" deleted=true pending 2",
        ]
        #expect(try await notes(engine) == expected)
        #expect(try await engine.entity("note", id: "d") == nil)
        // The rules see the tail too: a created note exists, a deleted one does not.
        await #expect(throws: SyncError.self) {
            try await engine.create("note", id: "b", fields: .note("again"), operation: "createNote")
        }
        await #expect(throws: SyncError.self) {
            try await engine.update("note", id: "c", fields: ["title": "gone"], operation: "editNote")
        }
        // A change made on top of one in the tail replaces what that one set.
        let edit = try await engine.update("note", id: "b", fields: ["title": "B2"], operation: "editNote")
        #expect(edit.previous == ["title": "B"])

        // Relaunched: the tail is read back from the outbox.
        (device, engine) = try await relaunch(world, device, engine, token: token)
        var relaunched = expected
        relaunched["b"] = "body=\"\",title=\"B2\" deleted=false pending 2"
        #expect(try await notes(engine) == relaunched)

        // A sync folds the tail first; every change reaches the backend once, in order.
        let report = await engine.sync()
        #expect(report.isComplete && report.acknowledged == 6, "\(report)")
        #expect(try await recordCount(engine) == 3)
        let synced = try await engine.entities("note")
        #expect(synced.map { $0.fields["title"] } == ["A2", "B2", "C"])
        #expect(synced.map(\.isDeleted) == [false, false, true])
        #expect(synced.allSatisfy { $0.state == .synced && $0.outstandingChanges == 0 })
        #expect(try world.backend.appliedKeys().values.allSatisfy { $0 == 1 })
        #expect(try world.backend.noteCount() == 2)
    }

    @Test func aLongRunOfSingleChangesFoldsWithoutChangingWhatTheAppSees() async throws {
        let world = try SyncWorld()
        let token = try await world.token(.alice)
        let device = try world.device("phone")
        let engine = try await device.engine(.alice, token: token)
        // 150 changes on 20 notes (several folds), checked against a model after every one of them.
        var model: [String: String] = [:]
        for step in 0..<150 {
            let id = "n\(step % 20)"
            if model[id] == nil {
                try await engine.create("note", id: id, fields: .note("t\(step)"), operation: "createNote")
                model[id] = "t\(step)"
            } else {
                try await engine.update("note", id: id, fields: ["title": .string("t\(step)")], operation: "editNote")
                model[id] = "t\(step)"
            }
            if step % 37 == 0 || step == 149 {
                let seen = try await engine.entities("note")
                #expect(seen.count == model.count)
                for note in seen { #expect(note.fields["title"]?.stringValue == model[note.ref.id]) }
            }
        }
        #expect(try await recordCount(engine) > 0)  // folded at least once
        // Several changes at once, more than the tail has room for: the tail folds first, and they queue.
        let batch = (0..<10).map { LocalChange.update("note", id: "n\($0)", fields: ["title": .string("b\($0)")]) }
        try await engine.enqueue(batch, operation: "editNote")
        for index in 0..<10 { model["n\(index)"] = "b\(index)" }
        #expect(try await engine.outstandingCount() == 160)
        let total = try await engine.entities("note").map(\.outstandingChanges).reduce(0, +)
        #expect(total == 160)
        for note in try await engine.entities("note") {
            #expect(note.fields["title"]?.stringValue == model[note.ref.id])
        }
        // The outbox numbers are unique and in order.
        let sequences = try await engine.outbox(limit: 1000).map(\.sequence)
        #expect(sequences == sequences.sorted() && Set(sequences).count == 160)

        let report = await engine.sync()
        #expect(report.isComplete && report.acknowledged == 160, "\(report)")
        for note in try await engine.entities("note") {
            #expect(note.state == .synced && note.fields["title"]?.stringValue == model[note.ref.id])
        }
    }

    /// Two engines on one vault (an app and its extension, say): neither trusts the tail it remembers once
    /// the other wrote.
    @Test func twoEnginesOnOneVaultSeeEachOthersChanges() async throws {
        let world = try SyncWorld()
        let token = try await world.token(.alice)
        let device = try world.device("phone")
        let first = try await device.engine(.alice, token: token)
        let vault = first.vault
        let second = try SyncEngine(
            vault: vault, remote: NotesRemote(client: world.client(), account: .alice, token: token),
            policies: NotesSync.policies, offline: NotesSync.offline, random: .seeded(77))
        try await first.create("note", id: "x", fields: .note("X"), operation: "createNote")
        try await second.update("note", id: "x", fields: ["title": "X2"], operation: "editNote")
        try await second.create("note", id: "y", fields: .note("Y"), operation: "createNote")
        await #expect(throws: SyncError.self) {
            try await first.create("note", id: "y", fields: .note("Y again"), operation: "createNote")
        }
        let edit = try await first.update("note", id: "y", fields: ["title": "Y2"], operation: "editNote")
        #expect(edit.previous == ["title": "Y"])
        #expect(try await first.entity("note", id: "x")?.fields["title"] == "X2")
        #expect(try await second.entity("note", id: "y")?.fields["title"] == "Y2")
        let sequences = try await first.outbox().map(\.sequence)
        #expect(sequences == [1, 2, 3, 4])
        #expect(await second.sync().acknowledged == 4)
        #expect(try await first.entity("note", id: "y")?.state == .synced)
    }

    /// The same vault opened a second time (another `Vaults`, as another process would): its writes go
    /// through a connection of their own, and the engine that remembers a tail still sees them before it
    /// numbers its next change.
    @Test func aWriteThroughAnotherConnectionIsSeenBeforeTheNextEnqueue() async throws {
        let world = try SyncWorld()
        let token = try await world.token(.alice)
        let first = try await world.device("phone").engine(.alice, token: token)
        try await first.create("note", id: "x", fields: .note("X"), operation: "createNote")
        let again = try world.device("phone")  // after the vault's key exists
        let second = try await again.engine(.alice, token: token)
        try await first.update("note", id: "x", fields: ["title": "X2"], operation: "editNote")
        try await second.create("note", id: "y", fields: .note("Y"), operation: "createNote")
        await #expect(throws: SyncError.self) {
            try await first.create("note", id: "y", fields: .note("Y again"), operation: "createNote")
        }
        try await first.update("note", id: "y", fields: ["title": "Y2"], operation: "editNote")
        #expect(try await first.outbox().map(\.sequence) == [1, 2, 3, 4])
        #expect(try await second.entity("note", id: "y")?.fields["title"] == "Y2")
        await again.vaults.close()
    }

    /// A vault written before the fold mark existed has every outbox entry in its record already: without a
    /// mark, nothing is put on top twice, and the first enqueue writes the mark.
    @Test func aVaultWithoutAFoldMarkHasEverythingFolded() async throws {
        let world = try SyncWorld()
        let token = try await world.token(.alice)
        var (device, engine) = try await phoneWithSeventyQueuedNotes(world, token: token)
        try await engine.vault.write(engine.storage.state) { try $0.delete("folded") }
        (device, engine) = try await relaunch(world, device, engine, token: token)

        let notes = try await engine.entities("note")
        #expect(notes.count == 70 && notes.allSatisfy { $0.outstandingChanges == 1 && $0.state == .pending })
        try await engine.update("note", id: "n3", fields: ["title": "edited"], operation: "editNote")
        #expect(try await engine.vault.read(engine.storage.state) { try $0.get("folded") } != nil)
        let n3 = try #require(try await engine.entity("note", id: "n3"))
        #expect(n3.outstandingChanges == 2 && n3.fields["title"] == "edited")
        #expect(try await engine.entities("note").map(\.outstandingChanges).reduce(0, +) == 71)
        let report = await engine.sync()
        #expect(report.isComplete && report.acknowledged == 71, "\(report)")
        #expect(try world.backend.noteCount() == 70)
    }

    /// A push that fails folds the tail (the mark moves) and leaves the outbox's last number as it was: the
    /// tail the engine remembers must not be laid on top again.
    @Test func aFoldThatLeavesTheLastNumberAloneIsNotMistakenForTheRememberedTail() async throws {
        let world = try SyncWorld()
        let token = try await world.token(.alice)
        let device = try world.device("phone")
        let engine = try await device.engine(.alice, token: token, client: world.client(baseURL: try deadBaseURL()))
        try await engine.create("note", id: "a", fields: .note("A"), operation: "createNote")
        try await engine.update("note", id: "a", fields: ["title": "A2"], operation: "editNote")
        try await engine.create("note", id: "b", fields: .note("B"), operation: "createNote")
        #expect(try await engine.entity("note", id: "a")?.outstandingChanges == 2)
        let report = await engine.push()
        #expect(!report.isComplete && report.failure != nil)
        #expect(try await recordCount(engine) == 2)  // folded by the push
        #expect(try await engine.entity("note", id: "a")?.outstandingChanges == 2)
        #expect(try await engine.entity("note", id: "b")?.outstandingChanges == 1)
        #expect(try await engine.entities("note").map(\.outstandingChanges) == [2, 1])
        try await engine.update("note", id: "b", fields: ["title": "B2"], operation: "editNote")
        #expect(try await engine.entities("note").map(\.outstandingChanges) == [2, 2])
    }

    /// A change queued while a push is out (the actor takes other calls while it waits) goes into its record
    /// when the answer is applied, and moves to the version the answer brought: no conflict with itself.
    @Test func aChangeQueuedDuringAPushFollowsTheAcknowledgedVersion() async throws {
        let world = try SyncWorld()
        let token = try await world.token(.alice)
        let device = try world.device("phone")
        let engine = try await device.engine(.alice, token: token)
        try await engine.create("note", id: "a", fields: .note("A"), operation: "createNote")
        #expect(await engine.sync().isComplete)
        try await engine.update("note", id: "a", fields: ["title": "A2"], operation: "editNote")
        world.backend.setFault(.init(mode: .none, delayAcks: .milliseconds(300)))
        let push = Task { await engine.push() }
        var polls = 0
        while try await engine.entity("note", id: "a")?.state != .sending, polls < 2000 {
            try await Task.sleep(for: .milliseconds(1))
            polls += 1
        }
        #expect(try await engine.entity("note", id: "a")?.state == .sending)
        let later = try await engine.update("note", id: "a", fields: ["title": "A3"], operation: "editNote")
        #expect(later.baseVersion == 1)
        let first = await push.value
        #expect(first.acknowledged >= 1 && first.conflicts == 0, "\(first)")
        world.backend.setFault(.none)
        let second = await engine.sync()
        #expect(second.isComplete && second.conflicts == 0, "\(second)")
        let note = try #require(try await engine.entity("note", id: "a"))
        #expect(note.state == .synced && note.fields["title"] == "A3")
        #expect(try world.backend.notes().first?["title"] == "A3")
        #expect(try await engine.conflicts().isEmpty)
    }

    /// The mark is derived data: a damaged one is rebuilt from the records; one a newer Keel wrote is
    /// refused, not overwritten.
    @Test func aDamagedMarkIsRebuiltAndANewerOneIsRefused() async throws {
        let world = try SyncWorld()
        let token = try await world.token(.alice)
        var (device, engine) = try await phoneWithSeventyQueuedNotes(world, token: token)
        try await engine.update("note", id: "n1", fields: ["title": "edited"], operation: "editNote")
        try await engine.create("note", id: "extra", fields: .note("X"), operation: "createNote")
        try await engine.vault.write(engine.storage.state) { try $0.put("folded", Data("not a mark".utf8)) }
        (device, engine) = try await relaunch(world, device, engine, token: token)

        let notes = try await engine.entities("note")
        #expect(notes.count == 71)
        #expect(notes.map(\.outstandingChanges).reduce(0, +) == 72)
        #expect(try await engine.entity("note", id: "n1")?.fields["title"] == "edited")
        #expect(try await engine.entity("note", id: "extra")?.outstandingChanges == 1)
        try await engine.update("note", id: "extra", fields: ["title": "X2"], operation: "editNote")
        let stored = try await engine.vault.read(engine.storage.state) { try $0.get("folded") }
        let mark = try JSONValue(parsing: try #require(stored))
        func integer(_ value: JSONValue?) -> Int64? {
            if case .number(let number)? = value { return number.int64 }
            return nil
        }
        #expect(integer(mark["through"]) == 70 && integer(mark["format"]) == 2)
        let report = await engine.sync()
        #expect(report.isComplete && report.acknowledged == 73, "\(report)")

        try await engine.vault.write(engine.storage.state) {
            try $0.put("folded", Data(#"{"through": 1, "format": 3}"#.utf8))
        }
        await #expect(throws: SyncError.self) { try await engine.entities("note") }
        await #expect(throws: SyncError.self) {
            try await engine.create("note", id: "late", fields: .note("L"), operation: "createNote")
        }
        let kept = try await engine.vault.read(engine.storage.state) { try $0.get("folded") }
        #expect(kept == Data(#"{"through": 1, "format": 3}"#.utf8))
    }
}
