import Foundation
import KeelContract
import KeelCore
import KeelHTTP
import KeelReference
import KeelTesting
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// One HTTP exchange with the backend over a real loopback socket.
struct Exchange {
    let status: Int
    let headers: [String: String]
    let body: JSONValue?
    let text: String

    subscript(_ member: String) -> JSONValue? { body?[member] }
}

/// The reference backend, driven over HTTP as any client would.
final class BackendHarness: Sendable {
    let directory: TemporaryDirectory
    let backend: ReferenceBackend

    init(directory: TemporaryDirectory? = nil, admin: Bool = true) throws {
        self.directory = try directory ?? TemporaryDirectory(prefix: "keel-backend")
        backend = try ReferenceBackend(
            configuration: .init(dataDirectory: self.directory.url("backend"), admin: admin, random: .seeded(11)))
    }

    func call(
        _ method: String, _ path: String, headers: [String: String] = [:], json: String? = nil,
        timeout: TimeInterval = 10
    ) async throws -> Exchange {
        var request = URLRequest(url: URL(string: backend.baseURL.absoluteString + path)!)
        request.httpMethod = method
        request.timeoutInterval = timeout
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        if let json {
            request.httpBody = Data(json.utf8)
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        let (data, response) = try await URLSession.shared.data(for: request)
        let http = response as! HTTPURLResponse  // an HTTP URL answers with an HTTPURLResponse
        var fields: [String: String] = [:]
        for (name, value) in http.allHeaderFields { fields["\(name)".lowercased()] = "\(value)" }
        return Exchange(
            status: http.statusCode, headers: fields, body: try? JSONValue(parsing: data),
            text: String(decoding: data, as: UTF8.self))
    }

    func signIn(_ account: String) async throws -> String {
        let answer = try await call("POST", "/sessions", json: #"{"account": "\#(account)"}"#)
        return try #require(answer["token"]?.stringValue)
    }

    func mutate(_ token: String, batchKey: String, _ mutations: String, account: String? = nil) async throws -> Exchange
    {
        var headers = ["Authorization": "Bearer \(token)", "Idempotency-Key": batchKey]
        if let account { headers["X-Account-ID"] = account }
        return try await call("POST", "/mutations", headers: headers, json: #"{"mutations": [\#(mutations)]}"#)
    }

    /// A batch creating note n1 (mutation m1, correlation id `op-1`) sent with `token` and held by the
    /// backend for 1.5 s, once `/operations/op-1` says it is in progress; the task ends with its answer.
    func holdAMutation(token: String, batchKey: String) async throws -> Task<Exchange, any Error> {
        backend.setFault(.init(mode: .none, delayAcks: .milliseconds(1500)))
        let held = Task {
            try await call(
                "POST", "/mutations",
                headers: ["Authorization": "Bearer \(token)", "Idempotency-Key": batchKey, "X-Correlation-ID": "op-1"],
                json: #"{"mutations": [\#(BackendHarness.create("m1", note: "n1"))]}"#)
        }
        var status: JSONValue?
        for _ in 0..<200 where status != "inProgress" {
            try await Task.sleep(for: .milliseconds(5))
            status = try await call("GET", "/operations/op-1", headers: ["Authorization": "Bearer \(token)"])["status"]
        }
        #expect(status == "inProgress")
        return held
    }

    static func create(_ id: String, note: String, title: String = "T", key: String? = nil) -> String {
        let keyMember = key.map { #", "idempotencyKey": "\#($0)""# } ?? ""
        return #"{"id": "\#(id)", "type": "create", "noteID": "\#(note)", "title": "\#(title)"\#(keyMember)}"#
    }

    static func update(_ id: String, note: String, base: Int, title: String) -> String {
        #"{"id": "\#(id)", "type": "update", "noteID": "\#(note)", "baseVersion": \#(base), "title": "\#(title)"}"#
    }
}

@Suite(.timeLimit(.minutes(1))) struct ReferenceBackendTests {
    /// Found in review: a batch re-sent with its members in another order (or other spacing, or `1.0` for
    /// `1`) under the same keys was refused as a reused key, though it is the same batch; a `bearer` token
    /// in lower case was refused; a batch key equal to a mutation key in flight elsewhere read as in progress.
    @Test func theSameBatchInAnotherSpellingIsTheSameBatch() async throws {
        let harness = try BackendHarness()
        let token = try await harness.signIn("alice")
        let batch = "spelling-batch-000001"
        let first = try await harness.mutate(
            token, batchKey: batch, BackendHarness.create("m1", note: "n1", key: "spelling-key-000000001"))
        #expect(first.status == 200, "\(first.text)")
        let update =
            #"{"id": "m2", "type": "update", "noteID": "n1", "baseVersion": 1, "title": "U", "idempotencyKey": "spelling-key-000000002"}"#
        #expect(try await harness.mutate(token, batchKey: "spelling-batch-000002", update).status == 200)
        // The first batch again, members reordered and spaced otherwise: replayed, not refused.
        let reordered = try await harness.call(
            "POST", "/mutations", headers: ["Authorization": "Bearer \(token)", "Idempotency-Key": batch],
            json:
                #"{ "mutations" : [ {"idempotencyKey":"spelling-key-000000001","title":"T","noteID":"n1","type":"create","id":"m1"} ] }"#
        )
        #expect(reordered.status == 200, "\(reordered.text)")
        #expect(reordered.text == first.text)
        // The update again with 1.0 for its base version, under a new batch key: a duplicate, not a reuse.
        let respelled = try await harness.mutate(
            token, batchKey: "spelling-batch-000003",
            update.replacingOccurrences(of: #""baseVersion": 1,"#, with: #""baseVersion": 1.0,"#))
        #expect(respelled.status == 200, "\(respelled.text)")
        #expect(respelled["results"]?[0]?["status"] == "duplicate", "\(respelled.text)")
        // The scheme name in any case.
        let lower = try await harness.call("GET", "/notes/n1", headers: ["Authorization": "bearer \(token)"])
        #expect(lower.status == 200, "\(lower.text)")
        // A batch whose key is the key of a mutation another batch is still applying is not in progress.
        _ = try await harness.call("POST", "/_admin/fault", json: #"{"mode": "none", "delayAcksMs": 1500, "count": 1}"#)
        let held = Task {
            try await harness.mutate(
                token, batchKey: "holding-batch-0000001",
                BackendHarness.create("m3", note: "n3", key: "shared-key-0000000001"))
        }
        try await Task.sleep(for: .milliseconds(500))
        let other = try await harness.mutate(
            token, batchKey: "shared-key-0000000001",
            BackendHarness.create("m4", note: "n4", key: "other-key-00000000001"))
        #expect(other.status == 200, "\(other.text)")
        #expect(try await held.value.status == 200)
    }

    /// Found in review: a stop did not wait for a request whose body was still arriving (it counted only
    /// complete requests), and an answer held back by `delayAcksMs` kept the stop waiting for the whole delay
    /// and was then cut off, its mutation applied and never acknowledged.
    @Test func aStopFinishesARequestStillArrivingAndSendsHeldAnswersAtOnce() async throws {
        let harness = try BackendHarness()
        let token = try await harness.signIn("alice")
        // Held: a mutation whose answer waits 30 s.
        _ = try await harness.call("POST", "/_admin/fault", json: #"{"mode": "none", "delayAcksMs": 30000}"#)
        let held = Task {
            try await harness.mutate(
                token, batchKey: "held-batch-0000000001", BackendHarness.create("m1", note: "n1"), account: nil)
        }
        // Arriving: a request whose head is in and whose body is not.
        let body = #"{"mutations": [{"id": "m2", "type": "create", "noteID": "n2", "title": "T"}]}"#
        let head =
            "POST /mutations HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(token)\r\n"
            + "Idempotency-Key: slow-batch-0000000001\r\nContent-Type: application/json\r\n"
            + "Content-Length: \(body.utf8.count)\r\n\r\n"
        let socket = try POSIX.connect(host: "127.0.0.1", port: UInt16(harness.backend.port))
        defer { POSIX.close(socket) }
        #expect(POSIX.writeAll(socket, Array(head.utf8) + Array(body.utf8.prefix(10))))
        try await Task.sleep(for: .milliseconds(500))  // both are in flight
        let start = ContinuousClock.now
        let stopped = Task { await harness.backend.stop(timeout: .seconds(10)) }
        try await Task.sleep(for: .milliseconds(300))
        #expect(POSIX.writeAll(socket, Array(body.utf8.dropFirst(10))))
        var answer: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while answer.count < 12, ContinuousClock.now - start < .seconds(15),
            POSIX.waitReadable([socket], timeoutMilliseconds: 500).contains(0)
        {
            guard let count = buffer.withUnsafeMutableBytes({ POSIX.read(socket, into: $0) }), count > 0 else { break }
            answer += buffer[..<count]
        }
        #expect(String(decoding: answer, as: UTF8.self).hasPrefix("HTTP/1.1 200"), "the arriving request was cut off")
        #expect(try await held.value.status == 200, "the held answer was cut off")
        await stopped.value
        #expect(ContinuousClock.now - start < .seconds(8), "the stop waited for the held answer's delay")
    }

    /// Found in review: admin endpoints answered any caller that reached the loopback port — a web page the
    /// user had open could switch faults on.
    @Test func adminEndpointsRefuseWebPages() async throws {
        let harness = try BackendHarness()
        let page = try await harness.call(
            "POST", "/_admin/fault", headers: ["Origin": "http://evil.example"], json: #"{"mode": "portal"}"#)
        #expect(page.status == 403, "\(page.text)")
        let rebound = try await harness.call(
            "POST", "/_admin/fault", headers: ["Host": "evil.example:80"], json: #"{"mode": "portal"}"#)
        #expect(rebound.status == 403, "\(rebound.text)")
        #expect(
            try await harness.call("GET", "/_admin/applied", headers: ["Origin": "http://evil.example"]).status == 403)
        // Nothing changed, and a local caller is answered.
        let local = try await harness.call(
            "POST", "/_admin/fault", headers: ["Origin": "http://127.0.0.1:8080"], json: #"{"mode": "none"}"#)
        #expect(local.status == 200, "\(local.text)")
        #expect(try await harness.call("GET", "/_admin/applied").status == 200)
        for host in ["LOCALHOST:8080", "localhost.:8080", "[::1]:8080", "127.0.0.1"] {
            #expect(try await harness.call("GET", "/_admin/applied", headers: ["Host": host]).status == 200, "\(host)")
        }
    }

    @Test func eachIdempotencyKeyIsAppliedOnceAndItsResultReplayed() async throws {
        let harness = try BackendHarness()
        let token = try await harness.signIn("alice")
        let first = try await harness.mutate(
            token, batchKey: "batch-0000000000000001", BackendHarness.create("m1", note: "n1"))
        #expect(first.status == 200 && first["results"]?[0]?["status"] == "applied")
        #expect(first["results"]?[0]?["note"]?["version"] == 1)
        // The same batch again: the stored answer, byte for byte.
        let replay = try await harness.mutate(
            token, batchKey: "batch-0000000000000001", BackendHarness.create("m1", note: "n1"))
        #expect(replay.text == first.text)
        // The same mutation in another batch: a duplicate with the stored note.
        let again = try await harness.mutate(
            token, batchKey: "batch-0000000000000002",
            BackendHarness.create("m1", note: "n1") + "," + BackendHarness.create("m2", note: "n2"))
        #expect(again["results"]?[0]?["status"] == "duplicate" && again["results"]?[0]?["note"]?["version"] == 1)
        #expect(again["results"]?[1]?["status"] == "applied")
        // A key reused with another payload: 422, and nothing of that batch applied (m3 is new).
        let reused = try await harness.mutate(
            token, batchKey: "batch-0000000000000003",
            BackendHarness.create("m3", note: "n3") + "," + BackendHarness.create("m1", note: "n1", title: "Other"))
        #expect(reused.status == 422 && reused["code"] == "idempotency_key_reused")
        #expect(try harness.backend.appliedKeys() == ["m1": 1, "m2": 1])
        // The batch key reused with another body: 422 too.
        let batchReused = try await harness.mutate(
            token, batchKey: "batch-0000000000000001", BackendHarness.create("m4", note: "n4"))
        #expect(batchReused.status == 422 && batchReused["code"] == "idempotency_key_reused")
        // An explicit idempotency key is the key (not the id).
        _ = try await harness.mutate(
            token, batchKey: "batch-0000000000000005",
            BackendHarness.create("m5", note: "n5", key: "explicit-key-000001"))
        #expect(try harness.backend.appliedKeys()["explicit-key-000001"] == 1)
        let admin = try await harness.call("GET", "/_admin/applied")
        #expect(admin["applied"]?["m1"] == 1 && admin["entities"] == 3)
    }

    @Test func aKeyStillBeingAppliedAnswers409AndTheOperationIsInProgress() async throws {
        let harness = try BackendHarness()
        let token = try await harness.signIn("alice")
        let slow = try await harness.holdAMutation(token: token, batchKey: "batch-0000000000000009")
        let concurrent = try await harness.mutate(
            token, batchKey: "batch-0000000000000010", BackendHarness.create("m1", note: "n1"))
        #expect(concurrent.status == 409 && concurrent["code"] == "idempotency_key_in_progress")
        #expect(try await slow.value["results"]?[0]?["status"] == "applied")
        let done = try await harness.call("GET", "/operations/op-1", headers: ["Authorization": "Bearer \(token)"])
        #expect(done["status"] == "applied")
        let unknown = try await harness.call("GET", "/operations/op-2", headers: ["Authorization": "Bearer \(token)"])
        #expect(unknown.status == 404)
        #expect(try harness.backend.appliedKeys() == ["m1": 1])
    }

    /// Found in review: `/operations/{correlationID}` answered 404 (read by reconcile as "never arrived") for
    /// a publication that was made, `applied` for a batch whose only change was a conflict, and 404 for a
    /// stored batch replayed under a new correlation id (a re-send after a relaunch).
    @Test func theOperationStatusSaysWhatBecameOfEveryKindOfOperation() async throws {
        let harness = try BackendHarness()
        let token = try await harness.signIn("alice")
        func status(_ id: String) async throws -> JSONValue? {
            try await harness.call("GET", "/operations/\(id)", headers: ["Authorization": "Bearer \(token)"])["status"]
        }
        func send(_ batchKey: String, _ mutation: String, correlation: String) async throws -> Exchange {
            try await harness.call(
                "POST", "/mutations",
                headers: [
                    "Authorization": "Bearer \(token)", "Idempotency-Key": batchKey, "X-Correlation-ID": correlation,
                ],
                json: #"{"mutations": [\#(mutation)]}"#)
        }
        #expect(
            try await send("batch-0000000000000001", BackendHarness.create("m1", note: "n1"), correlation: "op-1")
                .status == 200)
        #expect(try await status("op-1") == "applied")
        // Only a conflict: answered, nothing changed.
        let stale = try await send(
            "batch-0000000000000002", BackendHarness.update("m2", note: "n1", base: 0, title: "Old"),
            correlation: "op-2")
        #expect(stale["results"]?[0]?["status"] == "conflict")
        #expect(try await status("op-2") == "notApplied")
        // The first batch replayed under another operation's id: that operation applied it too.
        #expect(
            try await send("batch-0000000000000001", BackendHarness.create("m1", note: "n1"), correlation: "op-3")
                .status == 200)
        #expect(try await status("op-3") == "applied")
        // A publication.
        let published = try await harness.call(
            "POST", "/notes/n1/publish",
            headers: [
                "Authorization": "Bearer \(token)", "Idempotency-Key": "publish-000000000001",
                "X-Correlation-ID": "op-4",
            ])
        #expect(published.status == 200)
        #expect(try await status("op-4") == "applied")
        // A conflict later sent under an operation that already applied something does not undo it.
        _ = try await send(
            "batch-0000000000000005", BackendHarness.update("m5", note: "n1", base: 0, title: "Old"),
            correlation: "op-1")
        #expect(try await status("op-1") == "applied")
    }

    @Test func aPublicationIsMadeOncePerKeyAndReplayed() async throws {
        let harness = try BackendHarness()
        let alice = try await harness.signIn("alice")
        let bob = try await harness.signIn("bob")
        _ = try await harness.mutate(alice, batchKey: "batch-0000000000000001", BackendHarness.create("m1", note: "n1"))
        _ = try await harness.mutate(alice, batchKey: "batch-0000000000000002", BackendHarness.create("m2", note: "n2"))
        func publish(_ note: String, key: String?, token: String = alice) async throws -> Exchange {
            var headers = ["Authorization": "Bearer \(token)"]
            if let key { headers["Idempotency-Key"] = key }
            return try await harness.call("POST", "/notes/\(note)/publish", headers: headers)
        }
        let first = try await publish("n1", key: "publish-000000000001")
        #expect(first.status == 200 && first["noteID"] == "n1" && first["version"] == 1)
        let path = try #require(first["path"]?.stringValue)
        #expect(path.hasPrefix("/p/") && first["publication"]?.stringValue.map { path == "/p/" + $0 } == true)
        // A replay (the answer was lost) answers the same publication; nothing new is made.
        let replay = try await publish("n1", key: "publish-000000000001")
        #expect(replay.status == 200 && replay["path"]?.stringValue == path)
        #expect(try harness.backend.publicationCounts() == ["n1": 1])
        // The key reused for another note: refused, nothing published.
        let reused = try await publish("n2", key: "publish-000000000001")
        #expect(reused.status == 422 && reused["code"] == "idempotency_key_reused")
        // No key at all: 400 (the Idempotency-Key draft), a key of the wrong length 422; nothing published.
        let keyless = try await publish("n2", key: nil)
        #expect(keyless.status == 400 && keyless["code"] == "idempotency_key_missing")
        #expect(try await publish("n2", key: "short").status == 422)
        #expect(try await publish("nope", key: "publish-000000000002").status == 404)
        // Bob cannot publish Alice's note, and his key space is his own.
        #expect(try await publish("n1", key: "publish-000000000001", token: bob).status == 404)
        #expect(try harness.backend.publicationCounts() == ["n1": 1])
        let published = try await harness.call("GET", "/_admin/published")
        #expect(published["published"] == ["n1": 1])

        // A key whose publication is still being answered: 409 with the in-progress code, then the same answer.
        harness.backend.setFault(.init(mode: .none, delayAcks: .milliseconds(1000)))
        let slow = Task { try await publish("n2", key: "publish-000000000003") }
        var made = false
        for _ in 0..<200 where !made {
            try await Task.sleep(for: .milliseconds(5))
            made = try harness.backend.publicationCounts()["n2"] == 1
        }
        let concurrent = try await publish("n2", key: "publish-000000000003")
        #expect(concurrent.status == 409 && concurrent["code"] == "idempotency_key_in_progress")
        let answered = try await slow.value
        harness.backend.setFault(.none)
        #expect(try await publish("n2", key: "publish-000000000003")["path"] == answered["path"])
        #expect(try harness.backend.publicationCounts() == ["n1": 1, "n2": 1])
    }

    @Test func aChangeSentAgainUnderANewKeyIsCountedTwice() async throws {
        // Key deduplication cannot see a client that re-mints a key for a change it already sent: the count of
        // applications can, so "applied exactly once" is a check that fails for that bug.
        let harness = try BackendHarness()
        let token = try await harness.signIn("alice")
        _ = try await harness.mutate(token, batchKey: "batch-0000000000000001", BackendHarness.create("m1", note: "n1"))
        let update = BackendHarness.update("m2", note: "n1", base: 1, title: "A")
        _ = try await harness.mutate(token, batchKey: "batch-0000000000000002", update)
        #expect(try harness.backend.appliedKeys() == ["m1": 1, "m2": 1])
        let again = update.replacingOccurrences(
            of: #""baseVersion": 1"#, with: #""baseVersion": 2, "idempotencyKey": "m2-reminted-00000001""#)
        #expect(again != update)
        let second = try await harness.mutate(token, batchKey: "batch-0000000000000003", again)
        #expect(second["results"]?[0]?["status"] == "applied")
        #expect(try harness.backend.appliedKeys() == ["m1": 1, "m2": 2, "m2-reminted-00000001": 2])
        // Found in review: two changes to two notes that share a mutation id (a hand-written client's "m9"),
        // under keys of their own, are two changes, each applied once — not one change applied twice.
        _ = try await harness.mutate(
            token, batchKey: "batch-0000000000000004",
            BackendHarness.create("m9", note: "n8", key: "device-one-key-0001") + ", "
                + BackendHarness.create("m9", note: "n9", key: "device-two-key-0001"))
        let applied = try harness.backend.appliedKeys()
        #expect(applied["device-one-key-0001"] == 1 && applied["device-two-key-0001"] == 1, "\(applied)")
        #expect(applied["m2"] == 2)
    }

    @Test func aCountedFaultEndsByItselfAndTheNotesAreInspectable() async throws {
        let harness = try BackendHarness()
        let token = try await harness.signIn("alice")
        _ = try await harness.call("POST", "/_admin/fault", json: #"{"mode": "unavailable", "count": 2}"#)
        let auth = ["Authorization": "Bearer \(token)"]
        #expect(try await harness.call("GET", "/changes", headers: auth).status == 503)
        #expect(try await harness.call("GET", "/changes", headers: auth).status == 503)
        #expect(try await harness.call("GET", "/changes", headers: auth).status == 200)
        _ = try await harness.mutate(token, batchKey: "batch-0000000000000001", BackendHarness.create("m1", note: "n1"))
        let notes = try await harness.call("GET", "/_admin/notes")
        #expect(notes["notes"]?[0]?["id"] == "n1" && notes["notes"]?[0]?["account"] == "alice")
        #expect(notes["notes"]?[0]?["version"] == 1 && notes["notes"]?[0]?["deleted"] == false)
        #expect(try harness.backend.notes().map { $0["id"] } == ["n1"])
        let bad = try await harness.call("POST", "/_admin/fault", json: #"{"mode": "unavailable", "count": -1}"#)
        #expect(bad.status == 422)
    }

    @Test func aStaleBaseVersionIsAConflictCarryingTheServersNote() async throws {
        let harness = try BackendHarness()
        let token = try await harness.signIn("alice")
        _ = try await harness.mutate(token, batchKey: "batch-0000000000000001", BackendHarness.create("m1", note: "n1"))
        _ = try await harness.mutate(
            token, batchKey: "batch-0000000000000002", BackendHarness.update("m2", note: "n1", base: 1, title: "A"))
        let stale = try await harness.mutate(
            token, batchKey: "batch-0000000000000003", BackendHarness.update("m3", note: "n1", base: 1, title: "B"))
        let result = try #require(stale["results"]?[0])
        #expect(result["status"] == "conflict" && result["serverVersion"]?["version"] == 2)
        #expect(result["serverVersion"]?["title"] == "A")
        let missing = try await harness.mutate(
            token, batchKey: "batch-0000000000000004", BackendHarness.update("m4", note: "nope", base: 1, title: "B"))
        #expect(missing["results"]?[0]?["status"] == "rejected" && missing["results"]?[0]?["code"] == "not_found")
        let invalid = try await harness.mutate(
            token, batchKey: "batch-0000000000000005",
            #"{"id": "m5", "type": "create", "noteID": "n5", "visibility": "everyone"}"#)
        #expect(invalid["results"]?[0]?["code"] == "validation")
    }

    @Test func theChangesFeedResumesFromItsCursorAndAccountsAreIsolated() async throws {
        let harness = try BackendHarness()
        let alice = try await harness.signIn("alice")
        let bob = try await harness.signIn("bob")
        for index in 1...5 {
            _ = try await harness.mutate(
                alice, batchKey: "batch-000000000000000\(index)", BackendHarness.create("m\(index)", note: "n\(index)"))
        }
        let auth = ["Authorization": "Bearer \(alice)"]
        let first = try await harness.call("GET", "/changes?limit=2", headers: auth)
        #expect(first["changes"]?[1]?["id"] == "n2" && first["hasMore"] == true)
        let cursor = try #require(first["cursor"]?.stringValue)
        // A pull that failed after this page resumes from the saved cursor: nothing skipped, nothing twice.
        let rest = try await harness.call("GET", "/changes?limit=10&cursor=\(cursor)", headers: auth)
        if case .array(let changes)? = rest["changes"] {
            #expect(changes.map { $0["id"] } == ["n3", "n4", "n5"])
        } else {
            Issue.record("no changes array: \(rest.text)")
        }
        #expect(rest["hasMore"] == false)
        #expect(try await harness.call("GET", "/changes?cursor=garbage", headers: auth).status == 400)
        #expect(try await harness.call("GET", "/changes?limit=0", headers: auth).status == 400)
        // Only a cursor this backend could have issued: never one past the account's last change (it would
        // answer "nothing new" for good), never another spelling of one (leading zero, upper case, sign).
        // Bob's feed is empty, so even Alice's last cursor is not his.
        let last = try #require(rest["cursor"]?.stringValue)
        #expect(try await harness.call("GET", "/changes?cursor=\(last)", headers: auth)["changes"] == [])
        let scope = String(last.dropFirst(3).prefix { $0 != "." })
        let forgeries =
            ["6", "abc", "1e0", "05", "0x1", "A", "+5", "-1", ""].map { "c2.\(scope).\($0)" } + [
                "c1.0", "c1.2", "c2.000000000000.2", "c2.\(scope)", "C2.\(scope).2",
            ]
        for forged in forgeries {
            let answer = try await harness.call("GET", "/changes?cursor=\(forged)", headers: auth)
            #expect(answer.status == 400 && answer["code"] == "invalid_cursor", "\(forged): \(answer.text)")
        }
        // Found in review: a cursor was a bare sequence number, so Alice's cursor read Bob's feed from the
        // same number on (an app that switched accounts and kept its cursor skipped Bob's first changes).
        let bobsAuth = ["Authorization": "Bearer \(bob)"]
        for index in 1...5 {
            _ = try await harness.mutate(
                bob, batchKey: "bob-batch-00000000000\(index)", BackendHarness.create("b\(index)", note: "b\(index)"),
                account: "bob")
        }
        let alicesMiddle = try #require(first["cursor"]?.stringValue)
        let crossed = try await harness.call("GET", "/changes?cursor=\(alicesMiddle)", headers: bobsAuth)
        #expect(crossed.status == 400 && crossed["code"] == "invalid_cursor", "\(crossed.text)")
        #expect(try await harness.call("GET", "/changes?cursor=\(last)", headers: bobsAuth).status == 400)
        let bobsFirst = try await harness.call("GET", "/changes?limit=2", headers: bobsAuth)
        let bobsCursor = try #require(bobsFirst["cursor"]?.stringValue)
        #expect(try await harness.call("GET", "/changes?cursor=\(bobsCursor)", headers: bobsAuth).status == 200)
        // Bob sees none of Alice's notes, and Alice's token is refused when it claims to be Bob's.
        let bobs = try await harness.call("GET", "/changes", headers: ["Authorization": "Bearer \(bob)"])
        if case .array(let changes)? = bobs["changes"] {
            #expect(changes.map { $0["id"] } == ["b1", "b2", "b3", "b4", "b5"])
        } else {
            Issue.record("no changes array: \(bobs.text)")
        }
        #expect(try await harness.call("GET", "/notes/n1", headers: ["Authorization": "Bearer \(bob)"]).status == 404)
        #expect(try await harness.call("GET", "/notes/n1", headers: auth)["title"] == "T")
        let claimed = try await harness.mutate(
            alice, batchKey: "batch-0000000000000099", BackendHarness.create("x", note: "x"), account: "bob")
        #expect(claimed.status == 403 && claimed["code"] == "account_mismatch")
        #expect(try await harness.call("GET", "/changes").status == 401)
        #expect(try await harness.call("GET", "/changes", headers: ["Authorization": "Bearer nope"]).status == 401)
        let log = harness.backend.requestLog
        #expect(log.contains { $0.path == "/mutations" && $0.status == 403 && $0.account == nil })
    }

    /// Found in review: the account claim was compared with Swift's `==`, which takes a decomposed "é" for the
    /// precomposed one — two accounts here, as sessions and notes are stored by bytes — so a token of one was
    /// accepted claiming the other; and of two `X-Account-ID` fields only the first was checked.
    @Test func anAccountClaimMatchesItsTokenByteForByteAndOnlyOnce() async throws {
        let harness = try BackendHarness()
        let decomposed = try await harness.signIn("e\u{301}ve")
        let precomposed = try await harness.signIn("\u{E9}ve")
        #expect(decomposed != precomposed)
        _ = try await harness.mutate(
            decomposed, batchKey: "batch-0000000000000001", BackendHarness.create("m1", note: "n1"))
        /// The status line of a request sent as written (URLSession would not send these fields as they are).
        func status(_ fields: [String]) throws -> String {
            let socket = try POSIX.connect(host: "127.0.0.1", port: UInt16(harness.backend.port))
            defer { POSIX.close(socket) }
            let head = (["GET /notes/n1 HTTP/1.1", "Host: x", "Connection: close"] + fields).joined(separator: "\r\n")
            _ = POSIX.writeAll(socket, Array((head + "\r\n\r\n").utf8))
            var received: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 4096)
            while !POSIX.waitReadable([socket], timeoutMilliseconds: 5000).isEmpty,
                let count = chunk.withUnsafeMutableBytes({ POSIX.read(socket, into: $0) }), count > 0
            {
                received += chunk[0..<count]
            }
            return String(decoding: received, as: UTF8.self).components(separatedBy: "\r\n").first ?? ""
        }
        #expect(try status(["Authorization: Bearer \(decomposed)", "X-Account-ID: e\u{301}ve"]).contains(" 200 "))
        #expect(try status(["Authorization: Bearer \(decomposed)", "X-Account-ID: \u{E9}ve"]).contains(" 403 "))
        #expect(
            try status([
                "Authorization: Bearer \(decomposed)", "X-Account-ID: e\u{301}ve", "X-Account-ID: \u{E9}ve",
            ]).contains(" 403 "))
    }

    /// Found in review: title and tag limits counted Swift characters, so 200 decomposed "é" (400 code points)
    /// passed `maxLength: 200`, and the backend then served notes its own contract says cannot exist.
    @Test func lengthLimitsCountCodePointsAsTheContractDoes() async throws {
        let harness = try BackendHarness()
        let token = try await harness.signIn("alice")
        let decomposed = String(repeating: "e\u{301}", count: 200)
        let tooLong = try await harness.mutate(
            token, batchKey: "batch-0000000000000001",
            #"{"id": "m1", "type": "create", "noteID": "n1", "title": "\#(decomposed)"}"#)
        #expect(tooLong["results"]?[0]?["status"] == "rejected", "\(tooLong.text)")
        let fits = try await harness.mutate(
            token, batchKey: "batch-0000000000000002",
            #"{"id": "m2", "type": "create", "noteID": "n2", "title": "\#(String(repeating: "e\u{301}", count: 100))"}"#
        )
        #expect(fits["results"]?[0]?["status"] == "applied", "\(fits.text)")
        let tags = try await harness.mutate(
            token, batchKey: "batch-0000000000000003",
            #"{"id": "m3", "type": "create", "noteID": "n3", "title": "T", "tags": ["\#(String(repeating: "e\u{301}", count: 64))"]}"#
        )
        #expect(tags["results"]?[0]?["status"] == "rejected", "\(tags.text)")
        // Two tags that differ in code points are two tags (JSON Schema's uniqueItems compares code points).
        let distinct = try await harness.mutate(
            token, batchKey: "batch-0000000000000004",
            #"{"id": "m4", "type": "create", "noteID": "n4", "title": "T", "tags": ["\u00e9", "e\u0301"]}"#)
        #expect(distinct["results"]?[0]?["status"] == "applied", "\(distinct.text)")
    }

    /// Found in an outside audit: keys and operations in progress were kept in Swift sets, which take a
    /// decomposed "é" for the precomposed one, so two accounts the store tells apart shared them: the other
    /// account got 409 for its own key, and read the first one's operation as in progress.
    @Test func unicodeEquivalentAccountsShareNoKeyOrOperationInProgress() async throws {
        let harness = try BackendHarness()
        let precomposed = try await harness.signIn("jos\u{E9}")
        let decomposed = try await harness.signIn("jose\u{301}")
        let held = try await harness.holdAMutation(token: precomposed, batchKey: "batch-0000000000000001")
        let theirs = try await harness.call(
            "GET", "/operations/op-1", headers: ["Authorization": "Bearer \(decomposed)"])
        #expect(theirs.status == 404, "\(theirs.text)")
        let own = try await harness.mutate(
            decomposed, batchKey: "batch-0000000000000001", BackendHarness.create("m1", note: "n1", title: "U"))
        #expect(own.status == 200 && own["results"]?[0]?["status"] == "applied", "\(own.text)")
        #expect(try await held.value["results"]?[0]?["status"] == "applied")
    }

    /// Found in an outside audit: a mutation's idempotency key was measured in Swift characters (16 decomposed
    /// "é", 32 code points, was too short; 128 of them, 256 code points, fit), a batch's duplicate keys and an
    /// account name's length were judged the same way, and by bytes.
    @Test func keysAndAccountNamesAreMeasuredAndToldApartByCodePoints() async throws {
        let harness = try BackendHarness()
        let token = try await harness.signIn("alice")
        let sixteen = String(repeating: "e\u{301}", count: 8)
        let fits = try await harness.mutate(
            token, batchKey: "batch-0000000000000001", BackendHarness.create("m1", note: "n1", key: sixteen))
        #expect(fits["results"]?[0]?["status"] == "applied", "\(fits.text)")
        let tooLong = try await harness.mutate(
            token, batchKey: "batch-0000000000000002",
            BackendHarness.create("m2", note: "n2", key: String(repeating: "e\u{301}", count: 65)))
        #expect(tooLong.status == 422, "\(tooLong.text)")
        let pair = try await harness.mutate(
            token, batchKey: "batch-0000000000000003",
            BackendHarness.create("m3", note: "n3", key: "kkkkkkkkkkkkkkk\u{E9}") + ", "
                + BackendHarness.create("m4", note: "n4", key: "kkkkkkkkkkkkkkke\u{301}"))
        #expect(pair.status == 200 && pair["results"]?[1]?["status"] == "applied", "\(pair.text)")
        let name = String(repeating: "\u{E9}", count: 64)  // 64 code points, 128 bytes
        let signedIn = try await harness.call("POST", "/sessions", json: #"{"account": "\#(name)"}"#)
        #expect(signedIn.status == 200, "\(signedIn.text)")
        let longer = try await harness.call("POST", "/sessions", json: #"{"account": "\#(name)a"}"#)
        #expect(longer.status == 422)
    }

    /// Found in an outside audit: path parameters were compared as sent, so `/notes/a%2Fb` never found note
    /// `a/b`, and `/operations/op%2Fx` answered 404 — read by reconcile as "never applied" — for an operation
    /// that was. A raw `/` is another path.
    @Test func pathParametersArePercentDecoded() async throws {
        let harness = try BackendHarness()
        let token = try await harness.signIn("alice")
        let auth = ["Authorization": "Bearer \(token)"]
        let made = try await harness.call(
            "POST", "/mutations",
            headers: auth.merging(["Idempotency-Key": "batch-0000000000000001", "X-Correlation-ID": "op/x \u{E9}"]) {
                $1
            },
            json: #"{"mutations": [\#(BackendHarness.create("m1", note: "a/b c\u{E9}"))]}"#)
        #expect(made["results"]?[0]?["status"] == "applied", "\(made.text)")
        let note = try await harness.call("GET", "/notes/a%2Fb%20c%C3%A9", headers: auth)
        #expect(note.status == 200 && note["title"] == "T", "\(note.text)")
        #expect(try await harness.call("GET", "/notes/a/b%20c%C3%A9", headers: auth).status == 404)
        #expect(try await harness.call("GET", "/notes/a%2Fb%20c%C3%A", headers: auth).status == 404)
        let operation = try await harness.call("GET", "/operations/op%2Fx%20%C3%A9", headers: auth)
        #expect(operation["status"] == "applied", "\(operation.text)")
        let published = try await harness.call(
            "POST", "/notes/a%2Fb%20c%C3%A9/publish",
            headers: auth.merging(["Idempotency-Key": "publish-000000000001"]) { $1 })
        #expect(published.status == 200 || published.status == 201, "\(published.text)")
        #expect(try harness.backend.publicationCounts(account: "alice") == ["a/b c\u{E9}": 1])
        #expect(try harness.backend.publicationCounts(account: "bob").isEmpty)
        let admin = try await harness.call("GET", "/_admin/published?account=alice")
        #expect(admin["published"] == .object(["a/b c\u{E9}": 1]), "\(admin.text)")
    }

    /// Found in an outside audit: a 401 named no scheme (RFC 9110 §11.6.1 requires `WWW-Authenticate`), and
    /// the version gate was passed by a platform the contract does not name or by leaving it out.
    @Test func a401NamesBearerAndTheVersionGateNeedsBothHeaders() async throws {
        let harness = try BackendHarness()
        let unauthenticated = try await harness.call("GET", "/changes")
        #expect(unauthenticated.status == 401)
        #expect(unauthenticated.headers["www-authenticate"]?.hasPrefix("Bearer") == true)
        let token = try await harness.signIn("alice")
        _ = try await harness.call("POST", "/_admin/min-version", json: #"{"platform": "ios", "version": "2.0"}"#)
        for fields in [["X-App-Version": "1.0", "X-App-Platform": "IOS"], ["X-App-Version": "1.0"]] {
            let answer = try await harness.call(
                "GET", "/changes", headers: fields.merging(["Authorization": "Bearer \(token)"]) { $1 })
            #expect(answer.status == 400 && answer["code"] == "validation", "\(fields)")
        }
        let plain = try await harness.call("GET", "/changes", headers: ["Authorization": "Bearer \(token)"])
        #expect(plain.status == 200)
    }

    @Test func everythingSurvivesARestartOfTheBackend() async throws {
        let directory = try TemporaryDirectory(prefix: "keel-backend-restart")
        var harness: BackendHarness? = try BackendHarness(directory: directory)
        let token = try await harness!.signIn("alice")
        _ = try await harness!.mutate(
            token, batchKey: "batch-0000000000000001", BackendHarness.create("m1", note: "n1"))
        await harness!.backend.stop()
        harness = nil
        let restarted = try BackendHarness(directory: directory)
        let replay = try await restarted.mutate(
            token, batchKey: "batch-0000000000000002", BackendHarness.create("m1", note: "n1"))
        #expect(replay["results"]?[0]?["status"] == "duplicate")  // the token and the key survived
        let feed = try await restarted.call("GET", "/changes", headers: ["Authorization": "Bearer \(token)"])
        #expect(feed["changes"]?[0]?["id"] == "n1")
        #expect(try restarted.backend.appliedKeys() == ["m1": 1])
    }

    /// One backend per data directory, in this process too: the keys being applied are held in memory, so a
    /// second backend on the same database could apply a key the first is still applying. The directory
    /// serves again once the first stops.
    @Test func aDataDirectoryIsServedByOneBackendAtATime() async throws {
        let directory = try TemporaryDirectory(prefix: "keel-backend-lock")
        let first = try BackendHarness(directory: directory)
        #expect(throws: ReferenceBackend.DataDirectoryInUse.self) {
            try ReferenceBackend(configuration: .init(dataDirectory: directory.url("backend")))
        }
        #expect(try await first.call("POST", "/sessions", json: #"{"account": "alice"}"#).status == 200)
        await first.backend.stop()
        let second = try BackendHarness(directory: directory)
        #expect(try await second.call("POST", "/sessions", json: #"{"account": "alice"}"#).status == 200)
        second.backend.shutdown()
        _ = try BackendHarness(directory: directory)
    }

    /// `GET /_admin/requests` lists what a test or the demo checks a client sent: the trace, correlation and
    /// idempotency headers as received (a replay after a kill must carry the key of the call in flight).
    @Test func theRequestLogShowsTheHeadersAClientSent() async throws {
        let harness = try BackendHarness()
        let token = try await harness.signIn("alice")
        let sent = try await harness.call(
            "POST", "/mutations",
            headers: [
                "Authorization": "Bearer \(token)", "Idempotency-Key": "batch-key-0000000001",
                "traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "X-Correlation-ID": "op-7",
            ],
            json:
                #"{"mutations": [{"id": "m1", "type": "create", "noteID": "n1", "title": "T", "idempotencyKey": "note-key-0000000001"}]}"#
        )
        #expect(sent.status == 200, "\(sent.text)")
        let log = try await harness.call("GET", "/_admin/requests")
        guard case .array(let entries)? = log["requests"] else {
            Issue.record("no request log: \(log.text)")
            return
        }
        let post = try #require(entries.first { $0["path"] == "/mutations" })
        #expect(post["idempotencyKey"] == "batch-key-0000000001")
        #expect(post["traceparent"] == "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
        #expect(post["account"] == "alice" && post["status"] == 200)
        let signIn = try #require(entries.first { $0["path"] == "/sessions" })
        #expect(signIn["idempotencyKey"] == .null)
    }

    @Test func theVersionPolicyAndFaultsAnswerAsTheContractSays() async throws {
        let harness = try BackendHarness()
        let token = try await harness.signIn("alice")
        let old = ["Authorization": "Bearer \(token)", "X-App-Version": "1.9", "X-App-Platform": "ios"]
        _ = try await harness.call(
            "POST", "/_admin/min-version", json: #"{"platform": "ios", "version": "2.0", "latest": "2.3"}"#)
        let refused = try await harness.call("GET", "/changes", headers: old)
        #expect(refused.status == 426 && refused["code"] == "update_required")
        // A body without `version` is refused rather than read as "clear the minimum".
        let forgotten = try await harness.call("POST", "/_admin/min-version", json: #"{"platform": "ios"}"#)
        #expect(forgotten.status == 422 && forgotten["code"] == "validation")
        #expect(try await harness.call("GET", "/changes", headers: old).status == 426)
        #expect(refused["minimumVersions"]?["ios"] == "2.0")
        var current = old
        current["X-App-Version"] = "2.1"
        let allowed = try await harness.call("GET", "/changes", headers: current)
        #expect(allowed.status == 200 && allowed.headers["x-update-available"] == "2.3")
        let config = try await harness.call("GET", "/client-config?platform=ios&appVersion=1.0")
        #expect(config["status"] == "updateRequired" && config["minimumVersion"] == "2.0")
        // Found in review: an old app sending its version headers got 426 from the endpoints the contract
        // declares no 426 for — `/client-config` (which exists to say "update required", as a 200), sign-in,
        // and the status of its operations.
        let askedByTheOldApp = try await harness.call(
            "GET", "/client-config?platform=ios&appVersion=1.9",
            headers: ["X-App-Version": "1.9", "X-App-Platform": "ios"])
        #expect(askedByTheOldApp.status == 200 && askedByTheOldApp["status"] == "updateRequired")
        let signIn = try await harness.call(
            "POST", "/sessions", headers: ["X-App-Version": "1.9", "X-App-Platform": "ios"], json: #"{"account": "al"}"#
        )
        #expect(signIn.status == 200)
        #expect(try await harness.call("GET", "/operations/nothing", headers: old).status == 404)
        #expect(
            try await harness.call(
                "GET", "/changes",
                headers: ["Authorization": "Bearer \(token)", "X-App-Version": "1.0", "X-App-Platform": "android"]
            ).status == 200)

        _ = try await harness.call("POST", "/_admin/fault", json: #"{"mode": "unavailable", "retryAfter": 30}"#)
        let maintenance = try await harness.call("GET", "/changes", headers: current)
        #expect(
            maintenance.status == 503 && maintenance["code"] == "maintenance"
                && maintenance.headers["retry-after"] == "30")
        _ = try await harness.call("POST", "/_admin/fault", json: #"{"mode": "portal"}"#)
        let portal = try await harness.call("GET", "/changes", headers: current)
        #expect(portal.status == 200 && portal.text.contains("<html>") && portal.body == nil)
        let client = HTTPClient(
            configuration: .init(
                baseURL: harness.backend.baseURL,
                policy: CallPolicy(attemptTimeout: .milliseconds(300), deadline: .seconds(1), maximumAttempts: 1)))
        _ = try await harness.call("POST", "/_admin/fault", json: #"{"mode": "drop"}"#)
        do {
            _ = try await client.send(
                .post(
                    "/mutations", body: Data(#"{"mutations": [\#(BackendHarness.create("m1", note: "n1"))]}"#.utf8),
                    idempotency: .keyed(IdempotencyKey("batch-0000000000000001")),
                    headers: ["Authorization": "Bearer \(token)"]))
            Issue.record("a dropped answer arrived")
        } catch {
            #expect(error.outcome == .unknown)
        }
        #expect(try harness.backend.appliedKeys() == ["m1": 1])  // applied, though nobody heard it
        _ = try await harness.call("POST", "/_admin/fault", json: #"{"mode": "stall"}"#)
        do {
            _ = try await client.send(
                .post(
                    "/mutations", body: Data(#"{"mutations": [\#(BackendHarness.create("m2", note: "n2"))]}"#.utf8),
                    idempotency: .keyed(IdempotencyKey("batch-0000000000000002")),
                    headers: ["Authorization": "Bearer \(token)"]))
            Issue.record("a stalled backend answered")
        } catch {
            #expect(error.kind == .timeout && error.outcome == .unknown)
        }
        #expect(try harness.backend.appliedKeys()["m2"] == nil)  // a stall applies nothing
        let badMode = try await harness.call("POST", "/_admin/fault", json: #"{"mode": "explode"}"#)
        #expect(badMode.status == 422)
        harness.backend.setFault(.none)
        #expect(try await harness.call("GET", "/changes", headers: current).status == 200)
    }

    @Test func theContractsBoundsOnDeduplicationAreEnforced() async throws {
        let harness = try BackendHarness()
        let token = try await harness.signIn("alice")
        // A per-mutation key of 16...128 characters, a base version of 0 or more: else the batch is refused.
        for (index, mutation) in [
            BackendHarness.create("m1", note: "n1", key: "short"),
            BackendHarness.create("m1", note: "n1", key: String(repeating: "k", count: 129)),
            #"{"id": "m1", "type": "update", "noteID": "n1", "baseVersion": -1, "title": "T"}"#,
            // Found in review: an empty id (the key when there is none) was applied and stored.
            BackendHarness.create("", note: "n1"),
            BackendHarness.create(String(repeating: "i", count: 129), note: "n1"),
            // Found in an outside audit: a note id no GET could name (414) was created; so was one with a
            // control character.
            BackendHarness.create("m1", note: String(repeating: "n", count: 129)),
            BackendHarness.create("m1", note: ""),
            BackendHarness.create("m1", note: #"n\u0001"#),
        ].enumerated() {
            let answer = try await harness.mutate(token, batchKey: "batch-000000000000010\(index)", mutation)
            #expect(answer.status == 422 && answer["code"] == "validation", "\(mutation): \(answer.text)")
        }
        // The batch's own key: missing is 400 `idempotency_key_missing` (the IETF draft, §2.7), a key of the
        // wrong length 422; neither applies anything.
        let keyless = try await harness.call(
            "POST", "/mutations", headers: ["Authorization": "Bearer \(token)"],
            json: #"{"mutations": [\#(BackendHarness.create("m1", note: "n1"))]}"#)
        #expect(keyless.status == 400 && keyless["code"] == "idempotency_key_missing", "\(keyless.text)")
        let shortKey = try await harness.mutate(token, batchKey: "short", BackendHarness.create("m1", note: "n1"))
        #expect(shortKey.status == 422 && shortKey["code"] == "validation")
        #expect(try harness.backend.appliedKeys().isEmpty)
        let edge = try await harness.mutate(
            token, batchKey: "batch-0000000000000110",
            BackendHarness.create("m1", note: "n1", key: String(repeating: "k", count: 128)))
        #expect(edge["results"]?[0]?["status"] == "applied")
        // An app version that does not parse is refused, not let past the minimum.
        _ = try await harness.call("POST", "/_admin/min-version", json: #"{"platform": "ios", "version": "2.0"}"#)
        let garbled = try await harness.call(
            "GET", "/changes",
            headers: ["Authorization": "Bearer \(token)", "X-App-Platform": "ios", "X-App-Version": "abc"])
        #expect(garbled.status == 400)
    }

    @Test func appliedCountsAreScopedPerAccountAsKeysAre() async throws {
        let harness = try BackendHarness()
        let key = "shared-key-00000001"
        for account in ["alice", "bob"] {
            let token = try await harness.signIn(account)
            let answer = try await harness.mutate(
                token, batchKey: "batch-0000000000000001", BackendHarness.create("m1", note: "n1", key: key))
            #expect(answer["results"]?[0]?["status"] == "applied")
        }
        // Each account applied its change once: never reported as a double application.
        #expect(try await harness.call("GET", "/_admin/applied")["applied"] == [key: 1])
        #expect(try harness.backend.appliedKeys() == [key: 1])
        let byAccount = try await harness.call("GET", "/_admin/applied-by-account")
        #expect(byAccount["accounts"] == ["alice": [key: 1], "bob": [key: 1]])
        // Found in an outside test: "josé" in NFC and in NFD are two accounts everywhere in the backend, but
        // the oracle folded them into one (Swift's String equality) and read the key as applied twice.
        let other = "shared-key-00000002"
        for account in ["jos\u{E9}", "jose\u{301}"] {
            let token = try await harness.signIn(account)
            let answer = try await harness.mutate(
                token, batchKey: "batch-0000000000000002", BackendHarness.create("m2", note: "n2", key: other))
            #expect(answer["results"]?[0]?["status"] == "applied")
        }
        let applied = try await harness.call("GET", "/_admin/applied")
        #expect(applied["applied"]?[other] == 1, "\(applied.text)")
        let accounts = try await harness.call("GET", "/_admin/applied-by-account")
        guard case .object(let members)? = accounts["accounts"] else {
            Issue.record("no accounts object: \(accounts.text)")
            return
        }
        #expect(members.count == 4, "\(accounts.text)")
    }

    @Test func aRefusedAdminBodyChangesNothing() async throws {
        let harness = try BackendHarness()
        let token = try await harness.signIn("alice")
        let headers = ["Authorization": "Bearer \(token)", "X-App-Platform": "android", "X-App-Version": "1.0"]
        for body in [
            #"{"platform": "android", "version": "3.0", "latest": "garbage"}"#,
            #"{"platform": "android", "version": "3.0", "latest": 5}"#,
            #"{"platform": "android", "version": "3.0", "latest": "2.0"}"#,
            #"{"platform": "android", "version": "3.0", "minimum": "3.0"}"#,
        ] {
            #expect(try await harness.call("POST", "/_admin/min-version", json: body).status == 422, "\(body)")
            #expect(try await harness.call("GET", "/changes", headers: headers).status == 200, "\(body)")
        }
        for body in [
            #"{"mode": "unavailable", "retryafter": 5}"#, #"{"mode": "none", "delayAcksMs": 1000000000000}"#,
        ] {
            #expect(try await harness.call("POST", "/_admin/fault", json: body).status == 422, "\(body)")
            #expect(try await harness.call("GET", "/changes", headers: headers).status == 200, "\(body)")
        }
        let accepted = #"{"platform": "android", "version": "3.0", "latest": "3.1"}"#
        #expect(try await harness.call("POST", "/_admin/min-version", json: accepted).status == 200)
        #expect(try await harness.call("GET", "/changes", headers: headers).status == 426)
    }

    @Test func everyRequestLogFieldIsOneWordOfVisibleText() {
        #expect(BackendHandler.logWord(nil) == "-" && BackendHandler.logWord("") == "-")
        #expect(BackendHandler.logWord("00-ab-01") == "00-ab-01")
        // A space would add a field, an escape sequence would reach the terminal, a line break a line.
        #expect(BackendHandler.logWord("evil\u{1b}[31m red account=bob") == "evil%1B[31m%20red%20account=bob")
        #expect(BackendHandler.logWord("a\u{07}b\nc%\"é") == "a%07b%0Ac%25%22%C3%A9")
    }

    @Test func adminEndpointsExistOnlyWithAdmin() async throws {
        let harness = try BackendHarness(admin: false)
        #expect(try await harness.call("GET", "/_admin/applied").status == 404)
        #expect(try await harness.call("POST", "/_admin/fault", json: #"{"mode": "stall"}"#).status == 404)
    }

    /// RFC 9110 §15.5.6: a known endpoint called with a method it does not answer is 405 with `Allow`, for
    /// everyone (before authentication) — a 404 would say the endpoint does not exist. A path that names no
    /// resource stays 404, and the right method still reaches the endpoint.
    @Test func aWrongMethodIs405WithTheAllowedMethods() async throws {
        let harness = try BackendHarness()
        let cases: [(method: String, path: String, allow: String)] = [
            ("GET", "/mutations", "POST"), ("DELETE", "/notes/n1", "GET, HEAD"), ("GET", "/notes/n1/publish", "POST"),
            ("PUT", "/changes", "GET, HEAD"), ("GET", "/sessions", "POST"), ("POST", "/operations/c1", "GET, HEAD"),
            ("PATCH", "/client-config", "GET, HEAD"), ("POST", "/_admin/applied", "GET, HEAD"),
            ("GET", "/_admin/fault", "POST"), ("HEAD", "/mutations", "POST"),
        ]
        for (method, path, allow) in cases {
            let answer = try await harness.call(method, path)
            #expect(answer.status == 405, "\(method) \(path)")
            #expect(answer.headers["allow"] == allow, "\(method) \(path)")
            // A HEAD answer has no body to carry the code.
            #expect(method == "HEAD" || answer["code"]?.stringValue == "method_not_allowed", "\(method) \(path)")
        }
        #expect(try await harness.call("GET", "/nowhere").status == 401)  // unknown: authentication first
        let token = try await harness.signIn("alice")
        let bearer = ["Authorization": "Bearer \(token)"]
        #expect(try await harness.call("GET", "/nowhere", headers: bearer).status == 404)
        #expect(try await harness.call("GET", "/changes", headers: bearer).status == 200)
        #expect(try await harness.call("GET", "/notes/missing", headers: bearer).status == 404)
        // Found in an outside audit: HEAD, which every server must answer where it answers GET (RFC 9110
        // §9.1), was 405. It is the GET's answer without the body.
        let get = try await harness.call("GET", "/changes", headers: bearer)
        let head = try await harness.call("HEAD", "/changes", headers: bearer)
        #expect(head.status == 200 && head.text.isEmpty)
        #expect(head.headers["content-length"] == String(get.text.utf8.count))
        #expect(try await harness.call("HEAD", "/notes/missing", headers: bearer).status == 404)
    }
}
