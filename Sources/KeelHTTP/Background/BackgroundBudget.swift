import KeelCore

/// The time the operating system grants the app to finish work in the background (MOB-API-004).
///
/// The client consults it for every call: ``remaining()`` clamps the call's deadline (and so each attempt's
/// timeout), and when ``expired()`` returns, calls still running are cancelled and end with their outcome as
/// it stands — `notSent` when nothing left, `unknown` when a mutation may have reached the server — which
/// the ``OperationJournal`` keeps for ``HTTPClient/reconcile(rebuild:status:)`` after the app comes back.
///
/// Apps on Apple platforms adapt `UIApplication.beginBackgroundTask(expirationHandler:)` and
/// `backgroundTimeRemaining` (a thin adapter; see the HTTP client guide). ``ManualBackgroundBudget`` is the
/// portable one: a value the app (or a test) sets and an expiry it signals.
public protocol BackgroundBudget: Sendable {
    /// The time left, or nil when there is no limit (the app is in the foreground).
    func remaining() -> Duration?
    /// Returns when the budget has run out (at once if it already has). Must return promptly when the
    /// calling task is cancelled.
    func expired() async
}

/// A budget the app or a test controls: ``setRemaining(_:)`` when the OS grants time, ``expire()`` when it
/// takes it away.
public final class ManualBackgroundBudget: BackgroundBudget {
    private struct State {
        var remaining: Duration?
        var isExpired = false
        var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
        var nextWaiter = 0
    }

    private let state: Locked<State>

    /// A budget with `remaining` time (nil: unlimited).
    public init(remaining: Duration? = nil) { state = Locked(State(remaining: remaining)) }

    /// The time left (nil: unlimited; zero once expired).
    public func remaining() -> Duration? { state.withLock { $0.isExpired ? .zero : $0.remaining } }

    /// Sets the time left; nil for unlimited (back in the foreground). A new grant: an expired budget lives
    /// again, and the next ``expire()`` ends the calls made under it. Calls the earlier expiry cancelled
    /// stay cancelled. (Found in an outside audit: an expired budget stayed expired for good, and an app
    /// keeping one client failed every call at once after its first background task ran out.)
    public func setRemaining(_ remaining: Duration?) {
        state.withLock { state in
            state.remaining = remaining
            state.isExpired = false
        }
    }

    /// Whether ``expire()`` was called since the last grant.
    public var isExpired: Bool { state.withLock { $0.isExpired } }

    /// The OS took the time away: every call still running is cancelled.
    public func expire() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.isExpired = true
            defer { state.waiters = [:] }
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Returns once ``expire()`` was called, or when the calling task is cancelled.
    public func expired() async {
        let id = state.withLock { state -> Int in
            defer { state.nextWaiter += 1 }
            return state.nextWaiter
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { state -> Bool in
                    if state.isExpired || Task.isCancelled { return true }
                    state.waiters[id] = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let waiter = state.withLock { $0.waiters.removeValue(forKey: id) }
            waiter?.resume()
        }
    }
}
