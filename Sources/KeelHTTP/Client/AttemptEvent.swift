/// What happened during a call, one event at a time, for tests and the app's diagnostics.
public enum AttemptEvent: Sendable, Equatable {
    /// Attempt `number` (1-based) is being sent.
    case attemptStarted(number: Int)
    /// Attempt `number` ended with a response of `status`.
    case attemptResponded(number: Int, status: Int)
    /// Attempt `number` failed with `kind`; `outcome` is the operation's outcome so far (unknown wins).
    case attemptFailed(number: Int, kind: HTTPFailure.Kind, outcome: HTTPFailure.Outcome)
    /// The client will wait `delay` before attempt `nextAttempt`, because of `reason`.
    case retryScheduled(nextAttempt: Int, delay: Duration, reason: HTTPFailure.Kind)
    /// No retry, and why.
    case retryDeclined(reason: DeclineReason)
    /// A middleware asked to send the call once more after a response of `status`, and the client
    /// granted it: attempt `nextAttempt` follows at once (no backoff, no retry budget).
    case replayScheduled(nextAttempt: Int, status: Int)
    /// A middleware asked for a replay after attempt `afterAttempt` (answered `status`) and the client
    /// refused: no attempts or time left, or the operation may not be repeated.
    case replayRefused(afterAttempt: Int, status: Int)
}

/// Why a failed attempt was not retried.
public enum DeclineReason: String, Sendable, Equatable, CustomStringConvertible {
    /// The failure is not transient, or the operation may not be repeated after it was sent.
    case notRetryable
    /// The policy's maximum attempts were made.
    case attemptsExhausted
    /// The delay (plus a minimal attempt) would not fit in what is left of the deadline.
    case deadline
    /// The client's retry budget is spent.
    case budgetExhausted
    /// The server's `Retry-After` points past the deadline.
    case retryAfterTooLong

    /// The reason's name, e.g. `attemptsExhausted`.
    public var description: String { rawValue }
}
