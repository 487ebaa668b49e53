/// What happened during a call, one event at a time, for tests and the app's diagnostics.
public enum AttemptEvent: Sendable, Equatable {
    /// Attempt `number` (1-based) is being sent.
    case attemptStarted(number: Int)
    /// Attempt `number` ended with a response of `status`.
    case attemptResponded(number: Int, status: Int)
    /// Attempt `number` failed with `kind` (and this outcome for that attempt).
    case attemptFailed(number: Int, kind: HTTPFailure.Kind, outcome: HTTPFailure.Outcome)
    /// The client will wait `delay` before attempt `nextAttempt`, because of `reason`.
    case retryScheduled(nextAttempt: Int, delay: Duration, reason: HTTPFailure.Kind)
    /// No retry, and why (`notRetryable`, `attemptsExhausted`, `deadline`, `budgetExhausted`, `retryAfterTooLong`).
    case retryDeclined(reason: String)
}
