import Foundation
import KeelCore
import KeelHTTP
import KeelReference
import KeelSync
import KeelTesting
import Testing

/// Signs every call of one account (what an app's authentication middleware does).
struct BearerToken: HTTPMiddleware {
    let token: String
    let account: String
    var mayWait: Bool { false }

    func prepare(_ request: inout TransportRequest, context: MiddlewareContext) async throws(MiddlewareRefusal) {
        request.headers["Authorization"] = "Bearer \(token)"
        request.headers["X-Account-ID"] = account
    }
}

/// KeelHTTP's journal and reconcile against the reference backend's operation-status endpoint: an operation
/// whose answer was lost is looked up, never re-sent blindly.
@Suite(.timeLimit(.minutes(1))) struct ReconcileAgainstBackendTests {
    @Test func aLostAnswerIsSettledByTheOperationStatusEndpoint() async throws {
        let harness = try BackendHarness()
        let token = try await harness.signIn("alice")
        let journal = try SQLiteOperationJournal(path: harness.directory.url("journal.sqlite").path)
        let client = HTTPClient(
            configuration: .init(
                baseURL: harness.backend.baseURL,
                policy: CallPolicy(attemptTimeout: .milliseconds(400), deadline: .seconds(2), maximumAttempts: 1),
                middleware: [BearerToken(token: token, account: "alice")], journal: journal))
        func operation(_ id: String, key: String) -> HTTPOperation {
            var operation = HTTPOperation.post(
                "/mutations",
                body: Data(
                    #"{"mutations": [{"id": "\#(id)", "type": "create", "noteID": "\#(id)", "title": "T"}]}"#.utf8),
                idempotency: .keyed(IdempotencyKey(key)), headers: ["Content-Type": "application/json"])
            operation.operationID = id
            return operation
        }

        harness.backend.setFault(.init(mode: .drop))  // applied, answer lost
        await #expect(throws: HTTPFailure.self) {
            try await client.send(operation("applied-1", key: "batch-0000000000000001"))
        }
        harness.backend.setFault(.init(mode: .stall))  // never applied, never answered
        await #expect(throws: HTTPFailure.self) {
            try await client.send(operation("stalled-1", key: "batch-0000000000000002"))
        }
        harness.backend.setFault(.none)
        #expect(try await journal.unresolved().count == 2)

        // The app cannot rebuild them (no rebuild closure): both are looked up, none is sent again.
        let settled = try await client.reconcile()
        let states = Dictionary(uniqueKeysWithValues: settled.map { ($0.operationID, $0.state) })
        #expect(states["applied-1"] == .succeeded)
        #expect(states["stalled-1"] == .notApplied)
        #expect(try harness.backend.appliedKeys() == ["applied-1": 1])
        #expect(try await journal.unresolved().isEmpty)
    }

    /// MOB-API-004 (API-004.3), suspension and resumption: the OS takes the background time away while the
    /// backend has applied a keyed mutation and holds its answer. The call ends as it stands — `unknown` in the
    /// journal, never lost, never called done —; when the app has time again, reconcile re-sends it with the
    /// same key and correlation id, the backend answers from its record (applied once), and the outcome is
    /// determined: `succeeded` (found in a conformance audit: the journal tests stopped at `unknown`).
    @Test func anOperationCutByTheBackgroundBudgetIsDeterminedAfterResumption() async throws {
        let harness = try BackendHarness()
        let token = try await harness.signIn("alice")
        let journal = try SQLiteOperationJournal(path: harness.directory.url("journal.sqlite").path)
        let budget = ManualBackgroundBudget(remaining: .seconds(30))
        let client = HTTPClient(
            configuration: .init(
                baseURL: harness.backend.baseURL,
                policy: CallPolicy(attemptTimeout: .seconds(10), deadline: .seconds(20), maximumAttempts: 1),
                middleware: [BearerToken(token: token, account: "alice")], journal: journal,
                backgroundBudget: budget))
        var operation = HTTPOperation.post(
            "/mutations",
            body: Data(
                #"{"mutations": [{"id": "m1", "type": "create", "noteID": "n1", "title": "T", "idempotencyKey": "note-key-000000000001"}]}"#
                    .utf8),
            idempotency: .keyed(IdempotencyKey("batch-0000000000000009")), headers: ["Content-Type": "application/json"]
        )
        operation.operationID = "suspended-1"
        let sent = operation

        harness.backend.setFault(.init(mode: .none, delayAcks: .milliseconds(1500)))
        let call = Task { try await client.send(sent) }
        let deadline = ContinuousClock.now + .seconds(10)
        while (try harness.backend.appliedKeys()["note-key-000000000001"]) == nil, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(try harness.backend.appliedKeys() == ["note-key-000000000001": 1])
        budget.expire()  // suspended: the answer the backend holds never arrives
        await #expect(throws: HTTPFailure.self) { try await call.value }
        let cut = try #require(try await journal.entry("suspended-1"))
        #expect(cut.state == .unknown)

        // Resumed at once: the backend is still working on the first attempt (its answer held), so the re-send
        // is told "in progress" and the outcome stays unknown — nothing applied twice, nothing guessed.
        harness.backend.setFault(.none)
        budget.setRemaining(nil)
        let rebuild: @Sendable (JournalEntry) async -> HTTPOperation? = { $0.operationID == "suspended-1" ? sent : nil }
        let early = try await client.reconcile(rebuild: rebuild)
        #expect(early.map(\.state) == [.unknown], "\(early)")
        #expect(try await journal.unresolved().map(\.operationID) == ["suspended-1"])
        // Once the backend has finished it, the next reconcile determines the outcome from its record.
        let finished = ContinuousClock.now + .seconds(10)
        while !harness.backend.requestLog.contains(where: { $0.path == "/mutations" && $0.status == 200 }),
            ContinuousClock.now < finished
        {
            try await Task.sleep(for: .milliseconds(20))
        }
        let settled = try await client.reconcile(rebuild: rebuild)
        #expect(settled.map(\.operationID) == ["suspended-1"])
        #expect(settled.first?.state == .succeeded, "\(settled)")
        #expect(try await journal.unresolved().isEmpty)
        #expect(try harness.backend.appliedKeys() == ["note-key-000000000001": 1])
        let posts = harness.backend.requestLog.filter { $0.path == "/mutations" }
        #expect(posts.count == 3, "the attempt cut short, the re-send told in progress, the re-send answered")
        #expect(Set(posts.map(\.idempotencyKey)) == ["batch-0000000000000009"])
        #expect(Set(posts.map(\.correlationID)) == [cut.correlationID.rawValue])
    }
}
