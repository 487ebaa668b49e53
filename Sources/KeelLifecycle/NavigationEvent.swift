public import KeelCore

/// The four ways a user goes back. The navigator gives all of them one decision (MOB-PLAT-008).
public enum BackTrigger: String, Sendable, Hashable, Codable, CaseIterable {
    /// The system Back (Android button or gesture navigation's back).
    case systemBack
    /// The platform's edge-swipe gesture (iOS interactive pop).
    case gesture
    /// The in-app back or close button.
    case appButton
    /// Dismissing a modal: swipe down, tap outside, its close button.
    case modalDismiss
}

/// How the app was running when a deep link or notification arrived.
public enum EntryMode: String, Sendable, Hashable, Codable, CaseIterable {
    /// The process was started for it.
    case cold
    /// The app was running, with a stack of its own.
    case warm
}

/// What happened: the navigator turns each into a new state and effects.
public enum NavigationEvent: Sendable, Hashable {
    /// Open a route (pushed, or presented when modal).
    case open(route: String, parameters: [String: String] = [:])
    /// Go back, by any trigger.
    case back(BackTrigger)
    /// A deep link; `id` identifies the delivery (a redelivered one is ignored).
    case deepLink(url: String, mode: EntryMode, id: String? = nil)
    /// A tapped notification that opens `route`; `id` identifies the delivery.
    case notification(route: String, parameters: [String: String] = [:], mode: EntryMode, id: String? = nil)
    /// An account signed in (a different one than the current is a switch). Accounts are told apart by their
    /// bytes, as ``AccountID`` compares them: canonically equivalent ids are two accounts.
    case signIn(account: AccountID)
    /// The account signed out.
    case signOut
    /// Another saved account becomes the active one.
    case switchAccount(AccountID)
    /// Text typed into the input of the screen on top.
    case type(String)
    /// The user confirmed the prompt.
    case confirm
    /// The user cancelled the prompt.
    case cancel
    /// The app went to the background (process death may follow without another event).
    case background
    /// The system is about to terminate the app: the same as ``background`` (input saved as declared, a
    /// snapshot checkpoint).
    case willTerminate
    /// The server said the session expired.
    case sessionExpired
    /// Access to `route` with these parameters was revoked (the app's ``AccessChecker`` already refuses it).
    case accessRevoked(route: String, parameters: [String: String] = [:])
    /// Access was granted again (nothing to do for entries; later opens are checked anew).
    case accessGranted(route: String, parameters: [String: String] = [:])
}

/// What the app must do after an event: the navigator never performs I/O itself.
public enum NavigationEffect: Sendable, Hashable, CustomStringConvertible {
    /// Persist this draft in the account's drafts store.
    case saveDraft(DraftKey, String)
    /// Delete this draft from the account's drafts store.
    case deleteDraft(DraftKey)
    /// A draft was put back into the entry it belongs to.
    case restoreDraft(DraftKey)
    /// Unsaved input was dropped, as its route's lifecycle declares (warned about, or `onDeath: drop`).
    case inputLost(String)
    /// Back at the root: leave the app (the platform closes or backgrounds it).
    case leaveApp
    /// Save the navigation snapshot now (a checkpoint).
    case saveSnapshot
    /// The entry needs sign-in first: sign-in is shown and the entry is opened afterwards.
    case signInRequired(String)
    /// The entry is not accessible: it was not opened, or it was cut from the stack.
    case accessDenied(String)
    /// A sensitive one-time entry was not restored.
    case droppedSensitive(String)
    /// The account signed out: run its deletion triggers (`Vaults.logout()`).
    case purgeAccount(AccountID)
    /// The deep link or notification was already handled.
    case alreadyConsumed(String)
    /// The snapshot could not be used (an unknown newer format, damage, an account in it that is not a valid
    /// ``AccountID``): a fresh start; drafts are kept.
    case snapshotDiscarded(String)

    /// The text form `keel navigation simulate` prints: `saveDraft edit noteID=1`, `leaveApp`, ...
    public var description: String {
        switch self {
        case .saveDraft(let key, _): return "saveDraft " + key.entryLabel
        case .deleteDraft(let key): return "deleteDraft " + key.entryLabel
        case .restoreDraft(let key): return "restoreDraft " + key.entryLabel
        case .inputLost(let label): return "inputLost " + label
        case .leaveApp: return "leaveApp"
        case .saveSnapshot: return "saveSnapshot"
        case .signInRequired(let label): return "signInRequired " + label
        case .accessDenied(let label): return "accessDenied " + label
        case .droppedSensitive(let label): return "droppedSensitive " + label
        case .purgeAccount(let account): return "purgeAccount " + account.rawValue
        case .alreadyConsumed(let id): return "alreadyConsumed " + id
        case .snapshotDiscarded(let reason): return "snapshotDiscarded " + reason
        }
    }
}

extension DraftKey {
    /// `edit noteID=1`: the route and its sorted parameters.
    var entryLabel: String { NavigationEntry.label(route: route, parameters: parameters) }
}

/// The new state after an event, what the app must do, and why nothing happened when nothing could.
public struct NavigationResult: Sendable, Hashable {
    /// The state now.
    public var state: NavigationState
    /// What the app must do, in order.
    public var effects: [NavigationEffect]
    /// Why the event was refused (an unknown route, a missing parameter, a prompt waiting); the state is
    /// then unchanged.
    public var error: String?

    /// A result.
    public init(state: NavigationState, effects: [NavigationEffect] = [], error: String? = nil) {
        self.state = state
        self.effects = effects
        self.error = error
    }
}

/// The app's own access decisions: custom checks (`custom:premium`) and per-entry revocations. The
/// navigator checks sign-in, the session and account ownership itself.
public protocol AccessChecker: Sendable {
    /// Whether `account` may see `route` with `parameters` now.
    func allows(_ route: Route, parameters: [String: String], account: AccountID) -> Bool
}

/// Allows everything the navigator's own checks allow.
public struct AllowAllAccess: AccessChecker {
    /// An access checker that adds no check.
    public init() {}
    /// Always true.
    public func allows(_ route: Route, parameters: [String: String], account: AccountID) -> Bool { true }
}
