import Foundation
import KeelCore
import KeelHTTP
import KeelTesting
import Testing

/// MOB-API-003 "review of user-facing messages": the projection is total, safe and leaks nothing.
@Suite(.timeLimit(.minutes(1))) struct UserFacingOutcomeTests {
    /// Text a hostile or careless backend might send: it must never reach the user.
    static let secret =
        "SQLSTATE[23505] duplicate key value violates unique constraint users_email_key at db-7.internal"

    /// A real failure built by the client from a response full of backend text.
    private func failure(status: Int, fieldsWithSecret: Bool = false) async throws -> HTTPFailure {
        let harness = try Harness(policy: CallPolicy(maximumAttempts: 1))
        let fields =
            fieldsWithSecret
            ? #", "errors": [{"field": "/email", "code": "taken", "message": "\#(Self.secret)"}, {"field": "\#(Self.secret)", "code": "\#(Self.secret)"}]"#
            : ""
        harness.server.enqueue(
            .json(
                #"{"code": "x", "message": "\#(Self.secret)"\#(fields)}"#, status: status,
                headers: ["X-Debug": Self.secret, "X-Request-ID": "req-1"]))
        return try #require(
            await harness.send(HTTPOperation(method: "POST", path: "/users", body: Data("{}".utf8))).failure)
    }

    @Test func noBackendTextReachesTheUserForAnyStatus() async throws {
        for status in [400, 401, 403, 404, 409, 412, 422, 429, 500, 502, 503, 504] {
            let failure = try await failure(status: status, fieldsWithSecret: true)
            for mutates in [true, false] {
                for canQueue in [true, false] {
                    let outcome = UserFacingOutcome(failure: failure, mutates: mutates, canQueue: canQueue)
                    #expect(!outcome.message.contains("SQLSTATE"))
                    #expect(!outcome.message.contains("db-7"))
                    #expect(!outcome.message.contains("duplicate key"))
                    #expect(!outcome.messageKey.contains("SQL"))
                }
            }
            // The diagnostic detail is redacted even when printed.
            #expect(!"\(failure.detail)".contains("SQLSTATE"))
            #expect(!String(describing: failure).contains("SQLSTATE"))
        }
    }

    @Test func everyKindAndOutcomeHasAStateAnActionAndTextWithoutBackendText() {
        let correlation = CorrelationID.make(using: .seeded(1))
        for kind in HTTPFailure.Kind.allKnown {
            for outcome in HTTPFailure.Outcome.allCases {
                // Every backend-supplied field carries hostile text.
                let failure = HTTPFailure(
                    kind: kind, outcome: outcome, status: 500, errorCode: Self.secret, requestID: Self.secret,
                    correlationID: correlation,
                    attempts: 2, retryAt: nil, fieldErrors: [.init(field: Self.secret, code: Self.secret)],
                    detail: Redacted(Self.secret)
                )
                for mutates in [true, false] {
                    let shown = UserFacingOutcome(failure: failure, mutates: mutates)
                    #expect(!shown.message.isEmpty)
                    #expect(
                        !shown.message.contains("SQLSTATE") && !shown.messageKey.contains("SQLSTATE"),
                        "\(kind) \(outcome)")
                    #expect(shown.messageKey.hasPrefix("keel.failure.\(kind)."))
                    // "Unknown" is never shown as done or as not done for a mutation.
                    if mutates && outcome == .unknown {
                        #expect(shown.state == .unknownWillCheck)
                        switch shown.action {
                        case .retry, .retryAt, .tryLater, .checkConnection:
                            Issue.record("\(kind): an uncertain mutation must not invite a repeat")
                        default: break
                        }
                    } else {
                        #expect(shown.state == .notDone)
                    }
                }
            }
        }
    }

    @Test func recoveryActionsMatchTheKind() {
        let correlation = CorrelationID.make(using: .seeded(1))
        func action(_ kind: HTTPFailure.Kind) -> UserFacingOutcome.RecoveryAction {
            UserFacingOutcome(
                failure: HTTPFailure(kind: kind, outcome: .rejected, correlationID: correlation), mutates: true
            ).action
        }
        #expect(action(.offline) == .checkConnection)
        #expect(action(.timeout) == .retry)
        #expect(action(.captivePortal) == .openNetworkLogin)
        #expect(action(.authentication) == .signInAgain)
        #expect(action(.authorization) == .requestAccess)
        #expect(action(.conflict) == .reviewConflict)
        #expect(action(.rateLimited) == .tryLater)
        #expect(action(.contractViolation) == .tryLater)
        #expect(action(.technical) == .tryLater)
        #expect(action(.cancelled) == .none)
    }

    @Test func validationNamesTheContractsFieldsAndSupportGetsTheServersRequestID() async throws {
        let validation = try await failure(status: 422, fieldsWithSecret: true)
        let shownValidation = UserFacingOutcome(failure: validation, mutates: true)
        // The fields are handed to the app as data, to map onto its own labels; they are never in the text.
        #expect(shownValidation.action == .fixInput(fields: ["/email", Self.secret]))
        #expect(!shownValidation.message.contains("/email") && !shownValidation.message.contains("SQLSTATE"))
        let technical = try await failure(status: 500)
        let shown = UserFacingOutcome(failure: technical, mutates: false)
        #expect(shown.action == .contactSupport(requestID: "req-1"))
        #expect(shown.message.contains("req-1"))
    }

    @Test func aRequestIDThatIsNotAnIdentifierIsNotShown() async throws {
        let harness = try Harness(policy: CallPolicy(maximumAttempts: 1))
        harness.server.enqueue(TestResponse(status: 500, headers: ["X-Request-ID": Self.secret]))
        let failure = try #require(await harness.send(.get("/x")).failure)
        #expect(failure.requestID == Self.secret)  // kept for logs and support tooling...
        let shown = UserFacingOutcome(failure: failure, mutates: false)
        #expect(shown.action == .tryLater)  // ...but never put in front of the user
        #expect(!shown.message.contains("SQLSTATE"))
    }

    @Test func offlineMutationsAreQueuedWhenTheAppHasAnOutbox() {
        let failure = HTTPFailure(
            kind: .offline, outcome: .notSent, correlationID: CorrelationID.make(using: .seeded(2)))
        #expect(UserFacingOutcome(failure: failure, mutates: true, canQueue: true).state == .queued)
        #expect(UserFacingOutcome(failure: failure, mutates: true, canQueue: false).state == .notDone)
    }
}
