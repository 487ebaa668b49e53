public import Foundation
public import KeelContract
public import KeelCore

/// A call that did not succeed: what happened, and whether the server may have applied it (MOB-API-003).
///
/// ``outcome`` is the part users and data depend on: `unknown` means a mutating request may have been
/// applied (it was sent, but no answer came back). Keel never folds it into success or failure.
public struct HTTPFailure: KeelError, CustomStringConvertible {
    /// What happened. Extensible: switch with a `default`.
    public typealias Kind = ErrorCode<HTTPFailure>

    /// Whether the server may have applied the request.
    public enum Outcome: Sendable, Hashable, CaseIterable, CustomStringConvertible {
        /// The request never reached the server.
        case notSent
        /// The server answered and did not apply it.
        case rejected
        /// It may have been applied: sent, but the answer is missing or unreadable.
        case unknown

        /// The case's name, e.g. `notSent`.
        public var description: String {
            switch self {
            case .notSent: "notSent"
            case .rejected: "rejected"
            case .unknown: "unknown"
            }
        }
    }

    /// A field-level problem from a validation failure, in the contract's terms.
    public struct FieldError: Sendable, Hashable {
        /// The field (a JSON pointer or a name, as the contract gives it).
        public let field: String
        /// The contract's machine code for the problem.
        public let code: String
        /// A field error: `field` as the contract names it, with its machine `code`.
        public init(field: String, code: String) {
            self.field = field
            self.code = code
        }
    }

    /// What happened.
    public let kind: Kind
    /// Whether the server may have applied it, across all attempts.
    public let outcome: Outcome
    /// The HTTP status of the last response, if one arrived.
    public let status: Int?
    /// The contract's machine error code from the body, if any.
    public let errorCode: String?
    /// The id the server gave the exchange (its request-id header), when it sent one. Never invented.
    public let requestID: String?
    /// The user operation's correlation id.
    public let correlationID: CorrelationID
    /// How many attempts were made.
    public let attempts: Int
    /// When the server said to try again (from `Retry-After`), by the wall clock.
    public let retryAt: Date?
    /// Field-level validation problems.
    public let fieldErrors: [FieldError]
    /// Diagnostic detail for logs; may contain server text, so it is redacted and never user-facing.
    public let detail: Redacted<String>

    /// The typed decoding error when the reply broke the contract (kind ``Kind/contractViolation``): its
    /// code, the coding path (`notes[3].status`) and the type. For developers and crash reports; the
    /// user-facing projection never shows it.
    public let contractViolation: ContractDecodingError?

    /// What happened, as this error type's code (the same value as ``kind``).
    public var code: Kind { kind }

    /// A failure. The client makes these; apps make them for previews and tests of their error screens,
    /// giving only what matters to the case at hand.
    public init(
        kind: Kind, outcome: Outcome, status: Int? = nil, errorCode: String? = nil, requestID: String? = nil,
        correlationID: CorrelationID, attempts: Int = 1, retryAt: Date? = nil, fieldErrors: [FieldError] = [],
        contractViolation: ContractDecodingError? = nil, detail: Redacted<String> = Redacted("")
    ) {
        self.kind = kind
        self.outcome = outcome
        self.status = status
        self.errorCode = errorCode
        self.requestID = requestID
        self.correlationID = correlationID
        self.attempts = attempts
        self.retryAt = retryAt
        self.fieldErrors = fieldErrors
        self.contractViolation = contractViolation
        self.detail = detail
    }

    /// A developer-facing summary: kind, outcome, attempts, and the status and request id when known. It never
    /// includes ``detail`` or server text, but is not meant for users; see ``UserFacingOutcome``.
    public var description: String {
        "\(kind) (\(outcome)) after \(attempts) attempt(s)" + (status.map { ", status \($0)" } ?? "")
            + (requestID.map { ", request \($0)" } ?? "")
    }
}

extension HTTPFailure: CustomReflectable {
    /// What `dump` and reflecting crash reporters see: every field, with ``contractViolation`` reduced to its
    /// code, path and type. Its `value` and `message` may quote the reply (an undeclared enum value, a date
    /// string); code that needs them reads them from the property, on purpose.
    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "kind": kind, "outcome": outcome, "status": status as Any, "errorCode": errorCode as Any,
                "requestID": requestID as Any, "correlationID": correlationID, "attempts": attempts,
                "retryAt": retryAt as Any, "fieldErrors": fieldErrors,
                "contractViolation": contractViolation.map {
                    "\($0.code) at \($0.path.isEmpty ? "top level" : $0.path) (\($0.typeName))"
                } as Any,
                "detail": detail,
            ], displayStyle: .struct)
    }
}

extension ErrorCode where Domain == HTTPFailure {
    /// No route to the API: not connected, DNS failure, connection refused, connection lost.
    public static var offline: Self { Self("offline") }
    /// An attempt or the whole call ran out of time (or the server answered 408).
    public static var timeout: Self { Self("timeout") }
    /// Something between the device and the API intercepted the call (login page, foreign redirect).
    public static var captivePortal: Self { Self("captivePortal") }
    /// 401: the session is not (or no longer) valid.
    public static var authentication: Self { Self("authentication") }
    /// 403: the account may not do this.
    public static var authorization: Self { Self("authorization") }
    /// 400/422: the input was refused; see ``HTTPFailure/fieldErrors``.
    public static var validation: Self { Self("validation") }
    /// 409/412: the server's state changed meanwhile.
    public static var conflict: Self { Self("conflict") }
    /// 409 to a call with an `Idempotency-Key`, with one of the contract's in-progress codes
    /// (``ErrorBodyContract/inProgressCodes``): an earlier attempt with the same key is still being applied
    /// (the IETF Idempotency-Key draft). The outcome is `unknown`; the client retries it like a transient
    /// failure, honouring `Retry-After`.
    public static var inProgress: Self { Self("inProgress") }
    /// 429: too many requests.
    public static var rateLimited: Self { Self("rateLimited") }
    /// 503 with the contract's maintenance code.
    public static var maintenance: Self { Self("maintenance") }
    /// This app version is no longer supported on this platform (HTTP 426 with the contract's
    /// `update_required` code and a minimum version for this platform); see ``HTTPClient/versionPolicy``.
    public static var updateRequired: Self { Self("updateRequired") }
    /// This app version is blocked for security reasons (the contract's `version_blocked` code).
    public static var versionBlocked: Self { Self("versionBlocked") }
    /// A successful reply broke the contract: it does not decode as the contract's model (a value of a
    /// closed enum the contract does not declare, a missing required member, a wrong type).
    /// MOB-API-001 wants this loud: ``HTTPFailure/contractViolation`` carries the typed decoding error.
    /// The outcome of a mutation is `unknown`: the server acted on it, but the app cannot read how.
    public static var contractViolation: Self { Self("contractViolation") }
    /// Anything else: other 4xx/5xx, malformed responses, oversized bodies.
    public static var technical: Self { Self("technical") }
    /// The caller cancelled the call.
    public static var cancelled: Self { Self("cancelled") }

    /// Every kind this release of ``HTTPClient`` can produce (`updateRequired` and `versionBlocked` only
    /// with a ``HTTPClient/Configuration/versionPolicy``). The set is extensible: switch with a `default`.
    public static var allKnown: [Self] {
        [
            .offline, .timeout, .captivePortal, .authentication, .authorization, .validation, .conflict,
            .inProgress, .rateLimited, .maintenance, .updateRequired, .versionBlocked, .contractViolation, .technical,
            .cancelled,
        ]
    }
}
