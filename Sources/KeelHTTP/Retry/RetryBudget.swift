import KeelCore

/// A token bucket that limits retries across all calls of one client, so a failing backend does not
/// get a retry storm from one app (in the spirit of AWS "standard" retry mode and gRPC retry throttling).
///
/// Every retry costs ``retryCost`` tokens; a call that succeeds at once returns ``successRefund`` tokens, one
/// that succeeded after retries the cost of its last retry (AWS standard mode), up to ``capacity``. When the
/// bucket cannot pay for a retry, the call fails with its last failure instead.
public final class RetryBudget: Sendable {
    /// The most tokens the bucket holds (and starts with).
    public let capacity: Int
    /// Tokens a retry costs.
    public let retryCost: Int
    /// Tokens a call that succeeded without a retry returns.
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

    /// Returns what a successful call earns back. A call that succeeded at once returns ``successRefund``; one
    /// that needed retries (`spent` > 0) gets back the cost of its last retry only, as in AWS standard mode: a
    /// backend that answers only at the third attempt must still drain the budget, or retries would triple its
    /// load for good (found in an outside audit: every retry's cost and the success's token came back).
    public func recordSuccess(refunding spent: Int = 0) {
        let earned = spent > 0 ? min(spent, retryCost) : successRefund
        tokens.withLock { $0 = min(capacity, $0 + earned) }
    }
}
