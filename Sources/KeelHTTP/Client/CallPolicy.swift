/// Timeouts and retry rules for calls (MOB-API-002). Every value is finite: there is no way to wait forever.
public struct CallPolicy: Sendable {
    /// The longest one attempt may take.
    public var attemptTimeout: Duration
    /// The longest the whole call may take: all attempts and all delays between them.
    public var deadline: Duration
    /// The most attempts (the first one included).
    public var maximumAttempts: Int
    /// Delays between attempts.
    public var backoff: Backoff
    /// Statuses worth retrying (when the operation allows it).
    public var transientStatuses: Set<Int>
    /// Larger response bodies fail as `technical`.
    public var maximumResponseBytes: Int

    /// A policy. Preconditions: timeouts positive and at most a day (a zero or "infinite" value is a
    /// programming error, not a configuration), at least one attempt.
    public init(
        attemptTimeout: Duration = .seconds(15),
        deadline: Duration = .seconds(45),
        maximumAttempts: Int = 3,
        backoff: Backoff = Backoff(),
        transientStatuses: Set<Int> = [408, 429, 500, 502, 503, 504],
        maximumResponseBytes: Int = 16 * 1024 * 1024
    ) {
        let day = Duration.seconds(86_400)
        precondition(
            attemptTimeout > .zero && attemptTimeout <= day,
            "CallPolicy.attemptTimeout must be > 0 and ≤ 1 day, not \(attemptTimeout)")
        precondition(
            deadline > .zero && deadline <= day, "CallPolicy.deadline must be > 0 and ≤ 1 day, not \(deadline)")
        precondition(
            (1...20).contains(maximumAttempts), "CallPolicy.maximumAttempts must be 1...20, not \(maximumAttempts)")
        precondition(maximumResponseBytes > 0, "CallPolicy.maximumResponseBytes must be positive")
        self.attemptTimeout = attemptTimeout
        self.deadline = deadline
        self.maximumAttempts = maximumAttempts
        self.backoff = backoff
        self.transientStatuses = transientStatuses
        self.maximumResponseBytes = maximumResponseBytes
    }
}
