import KeelCore

/// A token bucket that limits retries across all calls of one client, so a failing backend does not
/// get a retry storm from one app (in the spirit of AWS "standard" retry mode and gRPC retry throttling).
///
/// Every retry costs ``retryCost`` tokens; every success returns ``successRefund`` tokens, up to
/// ``capacity``. When the bucket cannot pay for a retry, the call fails with its last failure instead.
public final class RetryBudget: Sendable {
    /// The most tokens the bucket holds (and starts with).
    public let capacity: Int
    /// Tokens a retry costs.
    public let retryCost: Int
    /// Tokens a successful call returns.
    public let successRefund: Int
    private let tokens: Locked<Int>

    /// A budget of `capacity` tokens. Defaults: 500, 5 per retry, 1 back per success (AWS standard mode).
    public init(capacity: Int = 500, retryCost: Int = 5, successRefund: Int = 1) {
        precondition(
            capacity > 0 && retryCost > 0 && successRefund >= 0, "RetryBudget needs positive capacity and cost")
        self.capacity = capacity
        self.retryCost = retryCost
        self.successRefund = successRefund
        self.tokens = Locked(capacity)
    }

    /// Tokens available now.
    public var available: Int { tokens.withLock { $0 } }

    /// Takes the cost of one retry; false (and nothing taken) when the budget is exhausted.
    public func spendForRetry() -> Bool {
        tokens.withLock { tokens in
            guard tokens >= retryCost else { return false }
            tokens -= retryCost
            return true
        }
    }

    /// Returns the refund for a successful call, plus what it spent on retries (a retry that worked
    /// costs nothing in the end, as in AWS standard mode).
    public func recordSuccess(refunding spent: Int = 0) {
        tokens.withLock { $0 = min(capacity, $0 + successRefund + max(0, spent)) }
    }
}
