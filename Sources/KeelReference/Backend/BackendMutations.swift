import Foundation
import KeelContract
import KeelCore
import KeelCrypto
import KeelStore
import KeelTesting

/// `POST /mutations`: idempotent batches of note mutations.
extension BackendHandler {
    func mutations(_ request: RecordedRequest, account: String) throws -> TestResponse {
        let batchKey = try Self.idempotencyKey(of: request)
        let batch = try Self.object(request.body)
        let mutations = try Self.parseBatch(batch)
        let keys = mutations.map { $0.key }
        // Told apart by their bytes, as the store keeps them (see State.keysInProgress).
        guard Set(keys.map { Array($0.utf8) }).count == keys.count else {
            throw BackendFailure(
                status: 422, code: "validation", message: "a batch carries each idempotency key once",
                errors: [("mutations", "duplicateKey")])
        }
        // The batch as parsed, its members sorted and numbers in one spelling: the same batch re-sent by an
        // encoder that orders members or spaces them differently (a Swift dictionary, another launch) is the
        // same batch. Batches stored under the earlier raw-bytes hash are still recognized.
        let bodyHash = SHA256Digest.hex(Self.canonical(.object(batch)).serialized())
        let rawHash = SHA256Digest.hex([UInt8](request.body))
        let correlation = request.headers["X-Correlation-ID"].map { account + "\u{0}" + $0 }

        // Batch keys and mutation keys are claimed apart: a batch key equal to some mutation's key is not
        // that mutation in progress.
        return try withKeysClaimed(
            [account + "\u{0}batch\u{0}" + batchKey] + keys.map { account + "\u{0}mutation\u{0}" + $0 },
            operation: correlation,
            busy: "a request with one of these idempotency keys is still being applied"
        ) {
            try applyBatch(
                request, batchKey: batchKey, mutations: mutations, bodyHash: bodyHash, rawHash: rawHash,
                account: account)
        }
    }

    private func applyBatch(
        _ request: RecordedRequest, batchKey: String, mutations: [IncomingMutation], bodyHash: String,
        rawHash: String, account: String
    ) throws -> TestResponse {
        if let stored = try store.batchKey(batchKey, account: account) {
            guard stored.bodyHash == bodyHash || stored.bodyHash == rawHash else { throw Self.keyReused(batchKey) }
            // The replay answers for the operation it is sent under too (a re-send after a relaunch carries the
            // journal's correlation id, which may be another than the first send's).
            if let id = request.headers["X-Correlation-ID"] {
                let applied = Self.appliedSomething(stored.response)
                try store.pool.writeSync { db in
                    try store.recordOperation(id, account: account, applied: applied, in: db)
                }
            }
            return TestResponse(
                status: 200, headers: ["Content-Type": "application/json"], body: Data(stored.response.utf8))
        }

        let now = configuration.clock.now()
        let response = try store.pool.writeSync { db -> String in
            var results: [JSONValue] = []
            for mutation in mutations {
                if let record = try store.mutationKey(mutation.key, account: account, in: db) {
                    // Thrown inside the transaction: nothing of the batch is applied.
                    guard record.payloadHash == mutation.hash else { throw Self.keyReused(mutation.key) }
                    var replay = record.result
                    if replay["status"]?.stringValue == "applied" { replay["status"] = "duplicate" }
                    results.append(.object(replay))
                    continue
                }
                let (result, applied) = try self.apply(mutation, account: account, now: now, in: db)
                try store.recordMutationKey(
                    mutation.key, account: account, noteID: mutation.noteID, payloadHash: mutation.hash,
                    result: result, applied: applied, in: db)
                results.append(.object(result))
            }
            if let id = request.headers["X-Correlation-ID"] {
                // Applied when any change of the batch is (now, or earlier under its key); otherwise the
                // backend answered it without changing anything.
                try store.recordOperation(id, account: account, applied: Self.appliedAny(results), in: db)
            }
            let response = JSONValue.object(["results": .array(results)]).description
            try store.recordBatchKey(batchKey, account: account, bodyHash: bodyHash, response: response, in: db)
            return response
        }
        holdLateAnswer()
        return TestResponse(status: 200, headers: ["Content-Type": "application/json"], body: Data(response.utf8))
    }

    /// The request's `Idempotency-Key`: 400 `idempotency_key_missing` without one (the IETF Idempotency-Key
    /// draft, §2.7: the server cannot tell a retry from a new request), 422 `validation` for one that is not
    /// 16...128 characters (the contract's schema for the header; counted in code points, as JSON Schema does).
    static func idempotencyKey(of request: RecordedRequest) throws -> String {
        guard let key = request.headers["Idempotency-Key"] else {
            throw BackendFailure(
                status: 400, code: "idempotency_key_missing",
                message: "this operation needs an Idempotency-Key header; nothing was applied",
                errors: [("Idempotency-Key", "required")])
        }
        guard (16...128).contains(key.unicodeScalars.count) else {
            throw BackendFailure(
                status: 422, code: "validation", message: "Idempotency-Key must be 16...128 characters",
                errors: [("Idempotency-Key", "length")])
        }
        return key
    }

    /// Runs `body` with the (account-scoped) idempotency keys claimed as in progress, and the operation
    /// (account-scoped correlation id) as in progress for `/operations`; released when the answer leaves.
    /// A key another request holds: 409 `idempotency_key_in_progress`, as the Idempotency-Key draft says.
    func withKeysClaimed<T>(_ scoped: [String], operation: String? = nil, busy: String, _ body: () throws -> T)
        throws -> T
    {
        let scoped = scoped.map { Array($0.utf8) }
        let operation = operation.map { Array($0.utf8) }
        let claimed = state.withLock { state -> Bool in
            guard state.keysInProgress.isDisjoint(with: scoped) else { return false }
            state.keysInProgress.formUnion(scoped)
            if let operation { state.operationsInProgress.insert(operation) }
            return true
        }
        guard claimed else {
            throw BackendFailure(
                status: 409, code: "idempotency_key_in_progress", message: busy, headers: ["Retry-After": "1"])
        }
        defer {
            state.withLock { state in
                state.keysInProgress.subtract(scoped)
                if let operation { state.operationsInProgress.remove(operation) }
            }
        }
        return try body()
    }

    /// A late answer (`delayAcksMs`): applied and committed, but its keys stay in progress until it leaves.
    /// Held in short waits, so that a backend that stops answers at once instead of after the delay.
    func holdLateAnswer() {
        guard let delay = state.withLock({ $0.fault.delayAcks }) else { return }
        let until = ContinuousClock.now + delay
        while ContinuousClock.now < until, !state.withLock({ $0.stopping }) {
            Thread.sleep(forTimeInterval: min(0.02, max(0, (until - ContinuousClock.now).inSeconds)))
        }
    }

    private static func keyReused(_ key: String) -> BackendFailure {
        BackendFailure(
            status: 422, code: "idempotency_key_reused",
            message: "idempotency key \(key) was used before with another payload; nothing of the batch was applied",
            errors: [("idempotencyKey", "reused")])
    }

    struct IncomingMutation {
        var object: JSONObject
        var id: String
        var type: String
        var noteID: String
        var key: String
        /// SHA-256 of the mutation with its members sorted: the same payload in another member order is
        /// the same payload.
        var hash: String
    }

    static func parseBatch(_ batch: JSONObject) throws -> [IncomingMutation] {
        guard case .array(let items)? = batch["mutations"], (1...100).contains(items.count) else {
            throw BackendFailure(
                status: 422, code: "validation", message: "mutations must be an array of 1...100 mutations",
                errors: [("mutations", "size")])
        }
        return try items.enumerated().map { index, item in
            // The id stands in for the idempotency key when there is none: an empty or unbounded one cannot.
            // A note id must be one that can be read back: bounded (a 70,000-character id was created, then
            // every GET and publish of it answered 414 — found in an outside audit) and without control
            // characters. Ids are not held to the contract's `format: uuid` (an annotation in OpenAPI 3.0):
            // tests and demos write short ones by hand.
            guard case .object(let object) = item, let id = object["id"]?.stringValue,
                (1...128).contains(id.utf8.count),
                let type = object["type"]?.stringValue, ["create", "update", "delete"].contains(type),
                let noteID = object["noteID"]?.stringValue, (1...128).contains(noteID.utf8.count),
                !noteID.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
            else {
                throw BackendFailure(
                    status: 422, code: "validation", message: "mutation \(index) needs id, type and noteID",
                    errors: [("mutations/\(index)", "invalid")])
            }
            // The contract's bounds on what decides deduplication: a key of 16...128 characters (the mutation
            // id stands in when there is none), a base version that is a version (0 or more).
            if let value = object["idempotencyKey"] {
                // Characters as JSON Schema counts them: code points (a decomposed "é" is two).
                guard let text = value.stringValue, (16...128).contains(text.unicodeScalars.count) else {
                    throw BackendFailure(
                        status: 422, code: "validation",
                        message: "mutation \(index): idempotencyKey must be a string of 16...128 characters",
                        errors: [("mutations/\(index)/idempotencyKey", "length")])
                }
            }
            if let value = object["baseVersion"], value != .null {
                guard case .number(let number) = value, let version = number.int64, version >= 0 else {
                    throw BackendFailure(
                        status: 422, code: "validation",
                        message: "mutation \(index): baseVersion must be an integer of 0 or more",
                        errors: [("mutations/\(index)/baseVersion", "minimum")])
                }
            }
            let key = object["idempotencyKey"]?.stringValue ?? id
            return IncomingMutation(
                object: object, id: id, type: type, noteID: noteID, key: key,
                hash: SHA256Digest.hex(canonical(.object(object)).serialized()))
        }
    }

    static func canonical(_ value: JSONValue) -> JSONValue {
        switch value {
        case .object(let object):
            return .object(JSONObject(object.keys.sorted().map { ($0, canonical(object[$0]!)) }))
        case .array(let items): return .array(items.map(canonical))
        case .number(let number):
            // One spelling per integer (`1.0`, `1e0` and `1` are the same base version); other numbers as
            // written.
            return number.int64.map { .number(JSONNumber($0)) } ?? value
        default: return value
        }
    }

    /// Applies one mutation (or answers why not): the result object and whether the note changed.
    private func apply(_ mutation: IncomingMutation, account: String, now: Date, in db: Database) throws -> (
        JSONObject, Bool
    ) {
        var result: JSONObject = ["id": .string(mutation.id)]
        func rejected(_ code: String) -> (JSONObject, Bool) {
            result["status"] = "rejected"
            result["code"] = .string(code)
            return (result, false)
        }
        func conflict(_ current: BackendStore.StoredNote) -> (JSONObject, Bool) {
            result["status"] = "conflict"
            result["serverVersion"] = .object(current.document)
            return (result, false)
        }
        let current = try store.note(mutation.noteID, account: account, in: db)
        let base = mutation.object["baseVersion"].flatMap { value -> Int? in
            if case .number(let number) = value { return number.int64.map(Int.init) }
            return nil
        }
        var document: JSONObject
        var deleted = false
        switch mutation.type {
        case "create":
            // A create over a tombstone the client has seen (its base is the tombstone's version) brings the
            // note back: how a client keeps its edit against a delete from elsewhere.
            if let current, !(current.deleted && base == current.version) { return conflict(current) }
            document = [
                "id": .string(mutation.noteID), "title": "", "body": "", "kind": "text", "visibility": "private",
                "version": 0, "updatedAt": "", "deleted": false, "pinned": false, "tags": [],
            ]
        case "update":
            guard let current else { return rejected("not_found") }
            guard base == current.version else { return conflict(current) }
            guard !current.deleted else { return rejected("not_found") }
            document = current.document
        default:  // delete
            guard let current else { return rejected("not_found") }
            guard base == current.version else { return conflict(current) }
            guard !current.deleted else { return rejected("not_found") }
            document = current.document
            deleted = true
        }
        if !deleted {
            guard let changes = Self.validatedFields(mutation.object) else { return rejected("validation") }
            for (name, value) in changes { document[name] = value }
        }
        let version = (current?.version ?? 0) + 1
        document["version"] = .number(JSONNumber(Int64(version)))
        document["updatedAt"] = .string(now.formatted(.iso8601))
        document["deleted"] = .bool(deleted)
        try store.save(document, id: mutation.noteID, version: version, deleted: deleted, account: account, in: db)
        result["status"] = "applied"
        result["note"] = .object(document)
        return (result, true)
    }

    /// The note fields a mutation sets, checked against the contract; nil when one is invalid.
    private static func validatedFields(_ mutation: JSONObject) -> [(String, JSONValue)]? {
        var fields: [(String, JSONValue)] = []
        for name in ["title", "body", "kind", "visibility", "pinned", "tags"] {
            guard let value = mutation[name] else { continue }
            switch (name, value) {
            // Lengths and uniqueness as JSON Schema counts and compares them: by code point (Swift's `count`
            // and `==` go by grapheme and canonical equivalence: 200 decomposed "é" are 400 code points).
            case ("title", .string(let text)) where text.unicodeScalars.count <= 200: break
            case ("body", .string), ("kind", .string), ("pinned", .bool): break
            case ("visibility", .string(let text)) where text == "private" || text == "shared": break
            case ("tags", .array(let tags)):
                let names = tags.compactMap(\.stringValue)
                guard names.count == tags.count, Set(names.map { Array($0.unicodeScalars) }).count == names.count,
                    names.allSatisfy({ $0.unicodeScalars.count <= 64 })
                else { return nil }
            default: return nil
            }
            fields.append((name, value))
        }
        return fields
    }

    /// Whether a stored batch answer applied (or replayed) any change.
    static func appliedSomething(_ response: String) -> Bool {
        guard case .array(let results)? = (try? JSONValue(parsing: Data(response.utf8)))?["results"] else {
            return true  // an answer this backend wrote is readable; if not, do not call it "not applied"
        }
        return appliedAny(results)
    }

    /// Whether any of a batch's results applied a change, now or earlier under its key.
    static func appliedAny(_ results: [JSONValue]) -> Bool {
        results.contains { ["applied", "duplicate"].contains($0["status"]?.stringValue) }
    }
}
