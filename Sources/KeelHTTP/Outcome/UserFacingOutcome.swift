public import Foundation

/// What the app tells the user about a failed call: the operation's state and one safe recovery action,
/// in words that never contain backend text (MOB-API-003).
///
/// A pure function of the failure and of whether the operation mutates. Nothing from the response body,
/// headers or underlying error reaches ``message``: only the failure's kind, outcome, field names from
/// the contract, a retry time, and the server's request id for support.
public struct UserFacingOutcome: Sendable, Equatable {
    /// The state of the user's operation.
    public enum State: Sendable, Equatable {
        /// It did not happen; nothing changed.
        case notDone
        /// It may have happened; the app will check before doing anything else.
        case unknownWillCheck
        /// It is queued and will be sent when possible (apps with an outbox).
        case queued
    }

    /// The one safe thing to offer.
    public enum RecoveryAction: Sendable, Equatable {
        case retry
        case retryAt(Date)
        case checkConnection
        case signInAgain
        case requestAccess
        case fixInput(fields: [String])
        case reviewConflict
        case openNetworkLogin
        case tryLater
        /// Install the update from the store (a required update or a security block; local data stays).
        case updateApp
        case contactSupport(requestID: String?)
        /// Nothing to do (the user cancelled).
        case none

        /// The action's name, without its values (`retryAt`, `fixInput`, `contactSupport`): for logs and
        /// machine-readable answers.
        public var name: String {
            switch self {
            case .retry: "retry"
            case .retryAt: "retryAt"
            case .checkConnection: "checkConnection"
            case .signInAgain: "signInAgain"
            case .requestAccess: "requestAccess"
            case .fixInput: "fixInput"
            case .reviewConflict: "reviewConflict"
            case .openNetworkLogin: "openNetworkLogin"
            case .tryLater: "tryLater"
            case .updateApp: "updateApp"
            case .contactSupport: "contactSupport"
            case .none: "none"
            }
        }
    }

    /// What became of the user's operation: not done, possibly done (the app checks first), or queued.
    public let state: State
    /// The one recovery to offer; ``RecoveryAction/none`` for a cancelled call, and for an uncertain mutation
    /// whose usual action would invite repeating it.
    public let action: RecoveryAction
    /// A stable key for the app's localization (`keel.failure.offline.notDone`).
    public let messageKey: String
    /// Default English text for ``messageKey``.
    public let message: String

    /// The outcome for `failure` of an operation that `mutates` (or not). `canQueue`: the app has an
    /// outbox that will send it later (offline mutations are then `queued`, not `notDone`).
    public init(failure: HTTPFailure, mutates: Bool, canQueue: Bool = false) {
        let uncertain = mutates && failure.outcome == .unknown
        let state: State
        if uncertain {
            state = .unknownWillCheck
        } else if canQueue, mutates, [HTTPFailure.Kind.offline, .timeout, .captivePortal].contains(failure.kind) {
            state = .queued
        } else {
            state = .notDone
        }
        let action: RecoveryAction
        switch failure.kind {
        case .offline: action = .checkConnection
        case .timeout: action = .retry
        case .captivePortal: action = .openNetworkLogin
        case .authentication: action = .signInAgain
        case .authorization: action = .requestAccess
        case .validation: action = .fixInput(fields: failure.fieldErrors.map(\.field))
        case .conflict: action = .reviewConflict
        case .inProgress, .rateLimited, .maintenance: action = failure.retryAt.map(RecoveryAction.retryAt) ?? .tryLater
        case .cancelled: action = .none
        case .updateRequired, .versionBlocked: action = .updateApp
        default:
            let reference = failure.requestID.flatMap(Self.safeReference)
            action = reference != nil ? .contactSupport(requestID: reference) : .tryLater
        }
        self.state = state
        // An uncertain mutation must not be repeated blindly: checking comes first, so nothing that
        // invites another attempt is offered.
        let invitesRepeat: Bool
        switch action {
        case .retry, .retryAt, .tryLater, .checkConnection: invitesRepeat = true
        default: invitesRepeat = false
        }
        self.action = uncertain && invitesRepeat ? .none : action
        messageKey = "keel.failure.\(failure.kind).\(Self.key(state))"
        message = Self.text(kind: failure.kind, state: state, action: self.action)
    }

    /// The server's request id if it looks like an identifier (≤ 64 of `A-Z a-z 0-9 . _ -`); a header
    /// full of anything else is backend text and is not shown.
    static func safeReference(_ requestID: String) -> String? {
        guard !requestID.isEmpty, requestID.utf8.count <= 64,
            requestID.utf8.allSatisfy({
                $0 < 0x80
                    && (($0 >= 0x30 && $0 <= 0x39) || ($0 | 0x20 >= 0x61 && $0 | 0x20 <= 0x7A)
                        || [0x2E, 0x5F, 0x2D].contains($0))
            })
        else { return nil }
        return requestID
    }

    private static func key(_ state: State) -> String {
        switch state {
        case .notDone: "notDone"
        case .unknownWillCheck: "unknown"
        case .queued: "queued"
        }
    }

    private static func text(kind: HTTPFailure.Kind, state: State, action: RecoveryAction) -> String {
        let what: String
        switch kind {
        case .offline: what = "There is no connection to the service."
        case .timeout: what = "The service took too long to answer."
        case .captivePortal: what = "This network needs you to sign in before it lets the app through."
        case .authentication: what = "Your session has ended."
        case .authorization: what = "Your account is not allowed to do this."
        case .validation: what = "Some of the information needs to be corrected."
        case .conflict: what = "This was changed somewhere else in the meantime."
        case .inProgress: what = "The service is still working on an earlier attempt of this."
        case .rateLimited: what = "Too many requests were made in a short time."
        case .maintenance: what = "The service is down for planned maintenance."
        case .contractViolation: what = "This version of the app could not read the service's answer."
        case .updateRequired: what = "This version of the app is no longer supported."
        case .versionBlocked: what = "This version of the app has been blocked to protect your account."
        case .cancelled: what = "The action was cancelled."
        default: what = "Something went wrong on our side."
        }
        let status: String
        switch state {
        case .notDone: status = "Nothing was changed."
        case .unknownWillCheck: status = "It may have gone through; the app is checking before doing anything else."
        case .queued: status = "It is saved on this device and will be sent when possible."
        }
        let next: String
        switch action {
        case .retry: next = "Try again."
        case .retryAt(let date): next = "Try again after \(ISO8601DateFormatter().string(from: date))."
        case .checkConnection: next = "Check your connection."
        case .signInAgain: next = "Sign in again."
        case .requestAccess: next = "Ask for access."
        // field names come from the server; the app maps them to its own labels
        case .fixInput: next = "Correct the highlighted fields."
        case .reviewConflict: next = "Review the changes."
        case .openNetworkLogin: next = "Open the network's sign-in page."
        case .tryLater: next = "Try again later."
        case .updateApp: next = "Update the app; everything on this device is kept."
        case .contactSupport(let requestID):
            next =
                requestID.map { "If it keeps happening, contact support with reference \($0)." }
                ?? "If it keeps happening, contact support."
        case .none: next = ""
        }
        return [what, status, next].filter { !$0.isEmpty }.joined(separator: " ")
    }
}
