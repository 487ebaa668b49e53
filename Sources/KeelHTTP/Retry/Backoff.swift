public import KeelCore

/// How long to wait before retry number `n`: exponential backoff with full jitter.
///
/// `delay = random(0, min(cap, base · 2^(n-1)))` (the "full jitter" of the AWS architecture blog): retries
/// of many clients spread out instead of arriving together.
public struct Backoff: Sendable, Equatable {
    /// The delay ceiling before the first retry.
    public var base: Duration
    /// The largest delay ever chosen.
    public var cap: Duration

    /// Backoff from `base`, never beyond `cap`. Preconditions: both positive, `base ≤ cap`.
    public init(base: Duration = .milliseconds(200), cap: Duration = .seconds(10)) {
        precondition(base > .zero && cap >= base, "Backoff needs 0 < base ≤ cap (got base \(base), cap \(cap))")
        self.base = base
        self.cap = cap
    }

    /// The ceiling for retry `retry` (1 for the first retry).
    public func ceiling(forRetry retry: Int) -> Duration {
        precondition(retry >= 1, "retries are numbered from 1")
        var ceiling = base
        for _ in 1..<min(retry, 64) {
            ceiling *= 2
            if ceiling >= cap { return cap }
        }
        return min(ceiling, cap)
    }

    /// A jittered delay for retry `retry`, drawn from `random`.
    public func delay(forRetry retry: Int, using random: RandomSource) -> Duration {
        let ceiling = ceiling(forRetry: retry)
        let nanoseconds = ceiling.inNanoseconds
        guard nanoseconds > 0 else { return .zero }
        return .nanoseconds(random.next(in: 0...nanoseconds))
    }
}
