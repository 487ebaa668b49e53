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
}
