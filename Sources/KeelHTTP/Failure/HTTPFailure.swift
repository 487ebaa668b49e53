public import Foundation
public import KeelCore

/// A call that did not succeed: what happened, and whether the server may have applied it (MOB-API-003).
///
/// ``outcome`` is the part users and data depend on: `unknown` means a mutating request may have been
/// applied (it was sent, but no answer came back). Keel never folds it into success or failure.
public struct HTTPFailure: Error, Sendable, CustomStringConvertible {
    /// What happened. Extensible: switch with a `default`.
    public struct Kind: Sendable, Hashable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }
        public var description: String { name }

        /// No route to the API: not connected, DNS failure, connection refused, connection lost.
        public static let offline = Kind("offline")
        /// An attempt or the whole call ran out of time (or the server answered 408).
        public static let timeout = Kind("timeout")
        /// Something between the device and the API intercepted the call (login page, foreign redirect).
        public static let captivePortal = Kind("captivePortal")
        /// 401: the session is not (or no longer) valid.
        public static let authentication = Kind("authentication")
        /// 403: the account may not do this.
        public static let authorization = Kind("authorization")
        /// 400/422: the input was refused; see ``HTTPFailure/fieldErrors``.
        public static let validation = Kind("validation")
        /// 409/412: the server's state changed meanwhile.
        public static let conflict = Kind("conflict")
        /// 429: too many requests.
        public static let rateLimited = Kind("rateLimited")
        /// 503 with the contract's maintenance code.
        public static let maintenance = Kind("maintenance")
        /// This app version is no longer supported (version-policy issue).
        public static let updateRequired = Kind("updateRequired")
        /// A newer app version is available (version-policy issue).
        public static let updateAvailable = Kind("updateAvailable")
        /// Anything else: other 4xx/5xx, undecodable or malformed responses, oversized bodies.
        public static let technical = Kind("technical")
        /// The caller cancelled the call.
        public static let cancelled = Kind("cancelled")

        /// Every kind Keel produces today.
        public static let allKnown: [Kind] = [
            .offline, .timeout, .captivePortal, .authentication, .authorization, .validation, .conflict,
            .rateLimited, .maintenance, .updateRequired, .updateAvailable, .technical, .cancelled,
        ]
    }

    /// Whether the server may have applied the request.
    public enum Outcome: Sendable, Hashable, CaseIterable, CustomStringConvertible {
        /// The request never reached the server.
        case notSent
        /// The server answered and did not apply it.
        case rejected
        /// It may have been applied: sent, but the answer is missing or unreadable.
        case unknown

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

    /// A failure. The client makes these; apps make them for previews and tests of their error screens.
    public init(
        kind: Kind, outcome: Outcome, status: Int?, errorCode: String?, requestID: String?, correlationID: CorrelationID,
        attempts: Int, retryAt: Date?, fieldErrors: [FieldError], detail: Redacted<String>
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
        self.detail = detail
    }

    public var description: String {
        "\(kind) (\(outcome)) after \(attempts) attempt(s)" + (status.map { ", status \($0)" } ?? "")
            + (requestID.map { ", request \($0)" } ?? "")
    }
}
