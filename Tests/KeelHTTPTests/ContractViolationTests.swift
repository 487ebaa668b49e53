import Foundation
import KeelContract
import KeelCore
import KeelHTTP
import KeelTesting
import Testing

private enum Visibility: String, ClosedEnum { case `private`, shared }

private struct NotePage: Codable, Sendable {
    struct Note: Codable, Sendable {
        var id: Int
        var visibility: Visibility
    }
    var notes: [Note]
}

/// MOB-API-001 through the client: a reply that breaks the contract is its own failure, typed and loud,
/// and never leaks payload text to the user.
@Suite(.timeLimit(.minutes(1))) struct ContractViolationTests {
    @Test func anUndeclaredClosedEnumValueIsAContractViolationWithItsPath() async throws {
        let harness = try Harness(policy: CallPolicy(maximumAttempts: 3))
        harness.server.enqueue(
            .json(
                #"{"notes": [{"id": 1, "visibility": "shared"}, {"id": 2, "visibility": "team-SECRET"}]}"#,
                headers: ["X-Request-ID": "req-1"]))
        do {
            _ = try await harness.pump.run { try await harness.client.send(.get("/notes"), decoding: NotePage.self) }
            Issue.record("an undeclared closed-enum value must not decode")
        } catch let failure as HTTPFailure {
            #expect(failure.kind == .contractViolation)
            #expect(failure.outcome == .rejected)  // a read: nothing was changed
            let violation = try #require(failure.contractViolation)
            #expect(violation.code == .undeclaredEnumValue)
            #expect(violation.path == "notes[1].visibility")
            #expect(failure.requestID == "req-1")
            #expect(failure.attempts == 1)  // the same reply would break the contract again: not retried
            let shown = UserFacingOutcome(failure: failure, mutates: false)
            #expect(!shown.message.contains("team-SECRET") && !shown.message.contains("visibility"))
            #expect(shown.messageKey == "keel.failure.contractViolation.notDone")
            #expect(!String(describing: failure).contains("team-SECRET"))
            // Nor in what reflection shows (dump, crash reporters that walk an error's children); the value is
            // there for code that reads it on purpose.
            var dumped = ""
            dump(failure, to: &dumped)
            #expect(!dumped.contains("team-SECRET"), "\(dumped)")
            #expect(dumped.contains("notes[1].visibility") && dumped.contains("undeclaredEnumValue"), "\(dumped)")
            #expect(violation.value == "team-SECRET")
        }
        #expect(harness.server.requestCount == 1)
    }

    @Test func aMutationWhoseReplyBreaksTheContractHasAnUnknownOutcome() async throws {
        struct Note: Decodable, Sendable { var id: Int }
        let harness = try Harness(policy: CallPolicy(maximumAttempts: 1))
        harness.server.enqueue(.json(#"{"id": "seven"}"#, status: 201))
        do {
            _ = try await harness.client.send(.post("/notes", body: Data("{}".utf8)), decoding: Note.self)
            Issue.record("expected a failure")
        } catch {
            #expect(error.kind == .contractViolation)
            #expect(error.outcome == .unknown)  // the server did act; the app cannot read how
            #expect(error.status == 201)
            #expect(error.contractViolation?.code == .typeMismatch)
            #expect(error.contractViolation?.path == "id")
        }
    }

    @Test func aDecodedValueComesWithItsReplysMetadata() async throws {
        let harness = try Harness()
        harness.server.enqueue(TestResponse(status: 503))
        harness.server.enqueue(
            .json(#"{"notes": [{"id": 1, "visibility": "shared", "added": true}]}"#, headers: ["X-Request-ID": "abc-9"])
        )
        let decoded = try await harness.pump.run {
            try await harness.client.sendForReply(.get("/notes"), decoding: NotePage.self)
        }
        #expect(decoded.value.notes.map(\.id) == [1])
        #expect(decoded.reply.status == 200)
        #expect(decoded.reply.requestID == "abc-9")
        #expect(decoded.reply.header("x-request-id") == "abc-9")
        #expect(decoded.reply.attempts == 2)
        let sent = try #require(harness.server.requests.last?.headers["X-Correlation-ID"])
        #expect(decoded.reply.correlationID.rawValue == sent)
    }
}
