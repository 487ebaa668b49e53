import Foundation
import KeelCore
import KeelHTTP
import KeelSync
import KeelTesting
import Testing

/// OBS-LOG-004 as MOB-API-004 reads it: a request id is only ever what the server sent, in every failure
/// and every journal state; a correlation id is one per operation, valid, and the same everywhere.
@Suite(.timeLimit(.minutes(1))) struct NoFabricatedIDsTests {
    /// Each scenario: what the server does, and the request id it sends (nil: none).
    static let scenarios: [(name: String, response: TestResponse, requestID: String?)] = [
        ("500 without id", TestResponse(status: 500), nil),
        ("500 with id", TestResponse(status: 500, headers: ["X-Request-ID": "srv-500"]), "srv-500"),
        (
            "422 with id",
            TestResponse(status: 422, headers: ["X-Request-ID": "srv-422"], body: #"{"code": "validation"}"#),
            "srv-422"
        ),
        ("409 without id", TestResponse(status: 409), nil),
        ("answer lost", TestResponse(socketEffect: .disconnectAfterRequest), nil),
        ("reset", TestResponse(socketEffect: .resetAfterRequest), nil),
        ("portal page", TestResponse(headers: ["Content-Type": "text/html"], body: "<html>login</html>"), nil),
        (
            "update required",
            TestResponse(
                status: 426, headers: ["X-Request-ID": "srv-426"],
                body: #"{"code": "update_required", "minimumVersions": {"ios": "9.0"}}"#), "srv-426"
        ),
        ("success without id", TestResponse(status: 201, body: "{}"), nil),
        ("success with id", TestResponse(status: 201, headers: ["X-Request-ID": "srv-201"], body: "{}"), "srv-201"),
    ]

    @Test func noFailureKindOrJournalStateCarriesAnInventedID() async throws {
        let directory = try TemporaryDirectory(prefix: "keel-ids")
        let journal = try SQLiteOperationJournal(path: directory.url("journal.sqlite").path)
        let server = try TestServer()
        let client = HTTPClient(
            configuration: .init(
                baseURL: server.baseURL, random: .seeded(5), policy: CallPolicy(maximumAttempts: 1),
                versionPolicy: VersionPolicyContract(appVersion: AppVersion("5.0")!, platform: "ios"),
                journal: journal))
        var kinds: Set<String> = []
        var states: Set<String> = []
        for (index, scenario) in Self.scenarios.enumerated() {
            server.enqueue(scenario.response)
            var operation = HTTPOperation.post("/mutations", body: Data("{}".utf8))
            operation.operationID = "op-\(index)"
            var reported: String?
            var correlation: CorrelationID
            do {
                let reply = try await client.send(operation)
                reported = reply.requestID
                correlation = reply.correlationID
            } catch {
                kinds.insert(error.kind.name)
                reported = error.requestID
                correlation = error.correlationID
            }
            #expect(reported == scenario.requestID, "\(scenario.name)")
            let entry = try #require(try await journal.entry("op-\(index)"))
            states.insert(SQLiteOperationJournal.text(entry.state))
            #expect(entry.requestID == scenario.requestID, "\(scenario.name): journal")
            #expect(entry.correlationID == correlation, "\(scenario.name): one correlation id everywhere")
            let sent = server.requests.last?.headers["X-Correlation-ID"]
            #expect(sent == correlation.rawValue, "\(scenario.name): the id sent is the id reported")
        }
        // Offline: nothing answered at all.
        let refusing = try RefusingPort()
        let offline = HTTPClient(
            configuration: .init(baseURL: refusing.url("/"), random: .seeded(6), journal: journal))
        var lonely = HTTPOperation.post("/mutations", body: Data("{}".utf8))
        lonely.operationID = "offline"
        let failure = await #expect(throws: HTTPFailure.self) { try await offline.send(lonely) }
        #expect(failure?.requestID == nil)
        #expect(try await journal.entry("offline")?.requestID == nil)
        kinds.insert(failure?.kind.name ?? "")
        states.insert(try await journal.entry("offline").map { SQLiteOperationJournal.text($0.state) } ?? "")
        // The scan covered the kinds and states it claims to.
        #expect(
            kinds.isSuperset(of: ["technical", "validation", "conflict", "captivePortal", "updateRequired", "offline"]))
        #expect(states.isSuperset(of: ["succeeded", "unknown", "failed:validation", "failed:offline"]))
        // No id of any correlation is all zeros, and all are distinct operations.
        let ids = try await journal.all().map(\.correlationID.rawValue)
        #expect(Set(ids).count == ids.count)
        #expect(!ids.contains { $0.allSatisfy { $0 == "0" || $0 == "-" } })
    }
}
