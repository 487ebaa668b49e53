import Foundation
import KeelCore
import KeelHTTP
import KeelSync
import KeelTesting
import Testing

/// MOB-API-005 (API-005.4): what the app keeps across a version answer. A required update, maintenance and
/// a security block each reach the client; afterwards the credentials, a draft and an uncertain operation
/// in the journal are all still there, byte for byte and unresolved.
@Suite(.timeLimit(.minutes(1))) struct VersionAnswerSurvivalTests {
    @Test func credentialsADraftAndAnUncertainOperationSurviveEveryVersionAnswer() async throws {
        let directory = try TemporaryDirectory(prefix: "keel-version-survival")
        let credentials = directory.url("credentials.json")
        let draft = directory.url("draft-7.json")
        let credentialBytes = Data(#"{"account": "a-1", "token": "t-1"}"#.utf8)
        let draftBytes = Data(#"{"title": "not sent yet"}"#.utf8)
        try credentialBytes.write(to: credentials)
        try draftBytes.write(to: draft)
        let journal = try SQLiteOperationJournal(path: directory.url("journal.sqlite").path)
        let server = try TestServer()
        let client = HTTPClient(
            configuration: .init(
                baseURL: server.baseURL, random: .seeded(8), policy: CallPolicy(maximumAttempts: 1),
                versionPolicy: VersionPolicyContract(appVersion: AppVersion("5.1")!, platform: "ios"),
                journal: journal))
        // An uncertain operation: sent, and the answer lost.
        server.enqueue(TestResponse(socketEffect: .disconnectAfterRequest))
        var uncertain = HTTPOperation.post("/mutations", body: Data("{}".utf8))
        uncertain.operationID = "uncertain"
        await #expect(throws: HTTPFailure.self) { try await client.send(uncertain) }
        #expect(try await journal.entry("uncertain")?.state == .unknown)

        // Maintenance first: once a required update (or a block) is known, it holds for the client's life.
        let answers: [(TestResponse, HTTPFailure.Kind, VersionPolicy)] = [
            (
                TestResponse(status: 503, headers: ["Retry-After": "60"], body: #"{"code": "maintenance"}"#),
                .maintenance, .maintenance(retryAt: nil)
            ),
            (
                TestResponse(status: 426, body: #"{"code": "update_required", "minimumVersions": {"ios": "6.0"}}"#),
                .updateRequired, .updateRequired(minimum: AppVersion("6.0")!)
            ),
            (TestResponse(status: 403, body: #"{"code": "version_blocked"}"#), .versionBlocked, .blocked(minimum: nil)),
        ]
        for (index, (response, kind, policy)) in answers.enumerated() {
            server.enqueue(response)
            var operation = HTTPOperation.post("/mutations", body: Data("{}".utf8))
            operation.operationID = "answer-\(index)"
            let failure = await #expect(throws: HTTPFailure.self) { try await client.send(operation) }
            #expect(failure?.kind == kind)
            if case .maintenance = policy {
                guard case .maintenance = client.versionPolicy else {
                    Issue.record("expected maintenance, got \(client.versionPolicy)")
                    continue
                }
            } else {
                #expect(client.versionPolicy == policy)
            }
            // After each answer: everything the app keeps is still there.
            #expect(try Data(contentsOf: credentials) == credentialBytes)
            #expect(try Data(contentsOf: draft) == draftBytes)
            let kept = try #require(try await journal.entry("uncertain"))
            #expect(kept.state == .unknown)
            #expect(try await journal.unresolved().map(\.operationID).contains("uncertain"))
        }
        // Refused for the version, not applied: those entries say so rather than vanishing.
        #expect(try await journal.entry("answer-1")?.state == .failed(.updateRequired))
        #expect(try await journal.entry("answer-2")?.state == .failed(.versionBlocked))
    }
}
