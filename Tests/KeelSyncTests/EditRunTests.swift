import Foundation
import KeelContract
import KeelCore
import KeelHTTP
import KeelReference
import KeelStore
import KeelSync
import KeelTesting
import Testing

/// A run of edits of one entity (an autosave): each edit goes out on its own, in order, against the version
/// the one before it became — and acknowledging one moves the later ones along in the entity's record, not
/// by rewriting every later outbox entry (which made such a run cost time quadratic in its length: 1,000
/// edits of one note took 26 s to sync, 2 s now).
@Suite(.timeLimit(.minutes(2))) struct EditRunTests {
    /// Lets `allowed` pushes through, then refuses them before anything is sent.
    struct PushGate: HTTPMiddleware {
        let allowed: Locked<Int>
        var mayWait: Bool { false }
        func prepare(_ request: inout TransportRequest, context: MiddlewareContext) async throws(MiddlewareRefusal) {
            guard request.url.path.hasSuffix("/mutations") else { return }
            let open = allowed.withLock { allowed in
                defer { allowed -= 1 }
                return allowed > 0
            }
            guard open else { throw MiddlewareRefusal(kind: .offline, detail: "push gate closed") }
        }
        func shouldReplay(after response: TransportResponse, context: MiddlewareContext) async -> Bool { false }
    }

    func gatedEngine(_ world: SyncWorld, _ device: SyncDevice, gate: Locked<Int>) async throws -> SyncEngine {
        let client = HTTPClient(
            configuration: .init(
                baseURL: world.backend.baseURL, random: .seeded(7),
                policy: CallPolicy(attemptTimeout: .seconds(5), deadline: .seconds(10), maximumAttempts: 1),
                middleware: [PushGate(allowed: gate)]))
        return try await device.engine(.alice, client: client)
    }

    /// A phone with note `n` created and synced (version 1), its pushes through `gate` (open).
    struct Phone {
        let world: SyncWorld
        let device: SyncDevice
        let gate: Locked<Int>
        let engine: SyncEngine
    }

    func phoneWithSyncedNote(_ prefix: String, clock: WallClock = .system) async throws -> Phone {
        let world = try SyncWorld(prefix: prefix, clock: clock)
        let device = try world.device("phone")
        let gate = Locked(Int.max)
        let engine = try await gatedEngine(world, device, gate: gate)
        try await engine.create("note", id: "n", fields: .note("v0"), operation: "createNote")
        #expect(await engine.sync().acknowledged == 1)
        return Phone(world: world, device: device, gate: gate, engine: engine)
    }

    /// Note `n`'s record overwritten with noise on disk (as a flipped sector would leave it).
    func damageNoteRecord(_ phone: Phone) async throws {
        #expect(
            try await HostileAnswerTests.overwriteWithNoise(
                ["note/n"], in: phone.engine.storage.entities, of: phone.device) == 1)
    }

    /// Edits of note `n`'s title, queued.
    func queueEdits(_ engine: SyncEngine, _ titles: [String]) async throws -> [PendingMutation] {
        var edits: [PendingMutation] = []
        for title in titles {
            edits.append(
                try await engine.update("note", id: "n", fields: ["title": .string(title)], operation: "editNote"))
        }
        return edits
    }

    /// The outbox entry of `change` exactly as stored (sealed: a rewrite seals it anew).
    func storedEntry(_ engine: SyncEngine, _ change: PendingMutation) async throws -> Data? {
        let id = String(format: "%020llu", change.sequence)
        return try await engine.vault.read(engine.storage.outbox) { try $0.storedBytes(id) }
    }

    func integer(_ value: JSONValue?) -> Int64? {
        if case .number(let number)? = value { return number.int64 }
        return nil
    }

    func object(_ data: Data?) throws -> JSONObject {
        guard case .object(let object) = try JSONValue(parsing: #require(data)) else {
            throw SyncError(code: .damagedRecord, subject: "test", message: "not an object")
        }
        return object
    }

    func serverNote(_ world: SyncWorld, _ id: String) throws -> JSONObject? {
        try world.backend.notes().first { $0["id"]?.stringValue == id }
    }

    @Test func acknowledgingAnEditMovesTheLaterOnesAlongWithoutRewritingThem() async throws {
        let phone = try await phoneWithSyncedNote("keel-edit-run")
        let (world, gate, engine) = (phone.world, phone.gate, phone.engine)
        let noteID = try #require(try serverNote(world, "n")?["id"]?.stringValue)

        let edits = try await queueEdits(engine, ["v1", "v2", "v3"])
        #expect(edits.allSatisfy { $0.baseVersion == 1 })
        gate.withLock { $0 = 0 }
        _ = await engine.push()  // refused before sending: the records take the queued edits
        let second = try await storedEntry(engine, edits[1])
        let third = try await storedEntry(engine, edits[2])

        gate.withLock { $0 = 1 }
        let first = await engine.push()  // the first edit only; the second push is refused
        #expect(first.acknowledged == 1)
        #expect(try serverNote(world, noteID).map { integer($0["version"]) } == 2)
        // The edit behind it was taken for the refused push: written once, with the base it went out with.
        #expect(try await storedEntry(engine, edits[1]) != second)
        // The last one stands as it was written...
        #expect(try await storedEntry(engine, edits[2]) == third)
        // ...and both go against the version the first one became.
        let outbox = try await engine.outbox()
        #expect(outbox.map(\.id) == [edits[1].id, edits[2].id])
        #expect(outbox.map(\.baseVersion) == [2, 2])
        #expect(try await engine.entity("note", id: "n")?.fields["title"] == "v3")

        gate.withLock { $0 = .max }
        let rest = await engine.sync()
        #expect(rest.isComplete && rest.acknowledged == 2 && rest.conflicts == 0 && rest.rejected == 0, "\(rest)")
        let server = try #require(try serverNote(world, noteID))
        #expect(integer(server["version"]) == 4 && server["title"]?.stringValue == "v3")
        #expect(try world.backend.appliedKeys().values.allSatisfy { $0 == 1 })
        #expect(try await engine.outbox().isEmpty)
    }

    /// The server keeps a field of its own (`updatedAt`, moved by each change it applies): after an
    /// acknowledgement the user sees the server's value of it — worked out without reading the later changes
    /// back, as none of them sets it — and the later changes' own values of the fields they set.
    @Test func afterAnAcknowledgementTheServersOwnFieldsShowUnderTheLaterChanges() async throws {
        let time = MovableWallClock()
        let phone = try await phoneWithSyncedNote("keel-edit-run-stamp", clock: time.clock)
        let (world, gate, engine) = (phone.world, phone.gate, phone.engine)
        let created = try #require(try await engine.entity("note", id: "n")?.fields["updatedAt"])
        try await engine.update("note", id: "n", fields: ["title": "v1"], operation: "editNote")
        try await engine.update("note", id: "n", fields: ["body": "b2"], operation: "editNote")

        time.advance(by: 60)
        gate.withLock { $0 = 1 }
        #expect(await engine.push().acknowledged == 1)
        let server = try #require(try serverNote(world, "n"))
        let stamped = try #require(server["updatedAt"])
        #expect(stamped != created)
        let shown = try #require(try await engine.entity("note", id: "n"))
        #expect(shown.fields["updatedAt"] == stamped)
        #expect(shown.fields["title"] == "v1" && shown.fields["body"] == "b2")
        #expect(shown.serverVersion == 2 && shown.outstandingChanges == 1)
    }

    /// A later change that sets the field the server moved keeps showing its own value.
    @Test func aLaterChangeOfAFieldTheServerMovedStillShowsOnTop() async throws {
        let time = MovableWallClock()
        let phone = try await phoneWithSyncedNote("keel-edit-run-stamp-local", clock: time.clock)
        let (gate, engine) = (phone.gate, phone.engine)
        try await engine.update("note", id: "n", fields: ["title": "v1"], operation: "editNote")
        try await engine.update(
            "note", id: "n", fields: ["updatedAt": "2030-01-01T00:00:00Z"], operation: "editNote")

        time.advance(by: 60)
        gate.withLock { $0 = 1 }
        #expect(await engine.push().acknowledged == 1)
        let shown = try #require(try await engine.entity("note", id: "n"))
        #expect(shown.fields["updatedAt"] == "2030-01-01T00:00:00Z")
        #expect(shown.fields["title"] == "v1")
    }

    /// Edits queued behind the first one, then the entity's record damaged on disk: the record is rebuilt from
    /// the outbox, and the edits still go against the versions they moved to — the first change's entry holds
    /// its base, and the later ones queued against the same base take it — instead of each meeting a conflict
    /// with the device's own earlier edit.
    @Test func aDamagedRecordIsRebuiltWithTheBasesTheEditsMovedTo() async throws {
        let phone = try await phoneWithSyncedNote("keel-edit-run-damage")
        let (world, gate, engine) = (phone.world, phone.gate, phone.engine)
        var edits = try await queueEdits(engine, ["v1", "v2", "v3"])
        gate.withLock { $0 = 1 }
        #expect(await engine.push().acknowledged == 1)
        // One more edit between two acknowledgements: queued against the version the first one made.
        edits.append(try await engine.update("note", id: "n", fields: ["body": "b4"], operation: "editNote"))
        gate.withLock { $0 = 1 }
        #expect(await engine.push().acknowledged == 1)

        try await damageNoteRecord(phone)
        gate.withLock { $0 = .max }
        let report = await engine.sync()
        #expect(report.isComplete && report.acknowledged == 2 && report.conflicts == 0, "\(report)")
        for edit in edits.dropFirst(2) {
            #expect(try await engine.settlement(of: edit.id) != nil)
            if case .applied? = try await engine.settlement(of: edit.id) {
            } else {
                Issue.record("\(edit.id) not applied")
            }
        }
        #expect(try serverNote(world, "n").map { integer($0["version"]) } == 5)
        #expect(try await engine.damagedRecords().count == 1)
    }

    /// The first change leaves otherwise than by an acknowledgement (discarded here): the next one becomes
    /// first, and its entry takes the base it moved to while it waited, so a damaged record loses nothing.
    @Test func theChangeThatBecomesFirstHoldsItsMovedBase() async throws {
        let phone = try await phoneWithSyncedNote("keel-edit-run-discard")
        let (world, gate, engine) = (phone.world, phone.gate, phone.engine)
        let edits = try await queueEdits(engine, ["v1", "v2", "v3"])
        gate.withLock { $0 = 1 }
        #expect(await engine.push().acknowledged == 1)
        try await engine.discard(edits[1])
        let third = String(format: "%020llu", edits[2].sequence)
        let entry = try await engine.vault.read(engine.storage.outbox) { try $0.get(third) }
        #expect(integer(try object(entry)["base"]) == 2)

        try await damageNoteRecord(phone)
        gate.withLock { $0 = .max }
        let report = await engine.sync()
        #expect(report.isComplete && report.acknowledged == 1 && report.conflicts == 0, "\(report)")
        #expect(try serverNote(world, "n").map { integer($0["version"]) } == 3)
    }

    /// An autosave's edits of the same fields against the same base are one run in the entity's record, not
    /// one entry each: the record an acknowledgement reads and writes stays small however long the run.
    @Test func aRunOfLikeEditsIsKeptAsOneRunInTheRecord() async throws {
        let phone = try await phoneWithSyncedNote("keel-edit-run-runs")
        let (gate, engine) = (phone.gate, phone.engine)
        for index in 1...50 {
            try await engine.update("note", id: "n", fields: ["title": .string("v\(index)")], operation: "editNote")
        }
        try await engine.update("note", id: "n", fields: ["body": "b"], operation: "editNote")
        gate.withLock { $0 = 1 }
        #expect(await engine.push().acknowledged == 1)  // the first edit; the others move to version 2

        let stored = try await engine.vault.read(engine.storage.entities) { try $0.get("note/n") }
        guard case .array(let runs)? = try object(stored)["changes"] else {
            Issue.record("no changes in the record")
            return
        }
        #expect(runs.count == 2)
        #expect(integer(runs[0]["count"]) == 49 && integer(runs[0]["base"]) == 2)
        #expect(runs[1]["count"] == nil && runs[1]["fields"] == ["body"])
        gate.withLock { $0 = .max }
        let rest = await engine.sync()
        #expect(rest.isComplete && rest.acknowledged == 50 && rest.conflicts == 0, "\(rest)")
        let shown = try #require(try await engine.entity("note", id: "n"))
        #expect(shown.fields["title"] == "v50" && shown.fields["body"] == "b" && shown.serverVersion == 52)
    }

    /// A record whose runs do not add up to its outstanding changes (a count damaged on disk, or absurd) is a
    /// damaged record — set aside and rebuilt from the outbox — and never a request for memory.
    @Test func runsThatDoNotAddUpAreADamagedRecord() async throws {
        for count: JSONValue in [.number(JSONNumber(Int64(1) << 62)), 0, -3, 3, "many"] {
            let world = try SyncWorld(prefix: "keel-edit-run-count")
            let device = try world.device("phone")
            let gate = Locked(0)
            let engine = try await gatedEngine(world, device, gate: gate)
            try await engine.create("note", id: "n", fields: .note("v0"), operation: "createNote")
            try await engine.update("note", id: "n", fields: ["title": "v1"], operation: "editNote")
            _ = await engine.push()  // refused: the record takes both changes
            try await engine.vault.write(engine.storage.entities) { entities in
                var record = try object(try entities.get("note/n"))
                record["changes"] = [["base": nil, "kind": "create", "fields": ["title", "body"], "count": count]]
                try entities.put("note/n", Data(JSONValue.object(record).serialized()))
            }
            gate.withLock { $0 = .max }
            let report = await engine.sync()
            #expect(report.isComplete && report.acknowledged == 2, "\(count): \(report)")
            #expect(try await engine.damagedRecords().count == 1, "\(count)")
            #expect(try await engine.entity("note", id: "n")?.fields["title"] == "v1")
        }
    }

    /// The base an edit goes out with is written into its entry in the transaction that sends it: sent again
    /// under the same key (no answer came), it carries the same base — a different one would be a different
    /// payload under that key, which the backend refuses (422).
    @Test func anEditSentWithoutAnAnswerGoesAgainWithTheBaseItWasSentWith() async throws {
        let phone = try await phoneWithSyncedNote("keel-edit-run-drop")
        let (world, gate, engine) = (phone.world, phone.gate, phone.engine)
        let edits = [
            try await engine.update("note", id: "n", fields: ["title": "v1"], operation: "editNote"),
            try await engine.update("note", id: "n", fields: ["title": "v2"], operation: "editNote"),
        ]
        gate.withLock { $0 = 1 }
        #expect(await engine.push().acknowledged == 1)

        // The second edit is applied, and its answer lost.
        world.backend.setFault(.init(mode: .drop))
        gate.withLock { $0 = .max }
        let lost = await engine.push()
        #expect(lost.acknowledged == 0 && lost.failure != nil, "\(lost)")
        let sent = try #require(try await engine.outbox().first)
        #expect(sent.id == edits[1].id && sent.baseVersion == 2)

        world.backend.setFault(.none)
        let again = await engine.sync()
        #expect(again.isComplete && again.acknowledged == 1 && again.rejected == 0, "\(again)")
        #expect(try world.backend.appliedKeys()[edits[1].idempotencyKey.rawValue] == 1)
        #expect(try await engine.settlement(of: edits[1].id) == .applied(version: 3))
    }

    /// A vault an engine of format 1 wrote: entity records without bases, the later entries' own bases the
    /// ones that count, the mark of format 1. The bases are read from the entries once, the edits go out
    /// without a conflict, and the mark is written again with format 2 (an engine of format 1 then stops).
    @Test func aVaultOfTheEarlierFormatSyncsAndIsMarkedWithTheNewOne() async throws {
        let phone = try await phoneWithSyncedNote("keel-edit-run-format")
        let (gate, engine) = (phone.gate, phone.engine)
        _ = try await queueEdits(engine, ["v1", "v2", "v3"])
        gate.withLock { $0 = 0 }
        _ = await engine.push()  // folds the edits into the record
        try await engine.vault.write([engine.storage.entities, engine.storage.state]) { transaction in
            let entities = try transaction.records(engine.storage.entities)
            let id = try #require(try entities.ids().first)
            var record = try object(try entities.get(id))
            #expect(record["changes"] != nil)
            record["changes"] = nil
            try entities.put(id, Data(JSONValue.object(record).serialized()))
            let state = try transaction.records(engine.storage.state)
            var mark = try object(try state.get("folded"))
            mark["format"] = 1
            try state.put("folded", Data(JSONValue.object(mark).serialized()))
        }

        gate.withLock { $0 = .max }
        let report = await engine.sync()
        #expect(report.isComplete && report.acknowledged == 3 && report.conflicts == 0 && report.rejected == 0)
        #expect(try await engine.entity("note", id: "n")?.serverVersion == 4)
        let mark = try await engine.vault.read(engine.storage.state) { try $0.get("folded") }
        #expect(integer(try object(mark)["format"]) == 2)
    }
}
