/// Conversions between `Duration` and the units platform APIs take, written once for the package.
///
/// Every conversion clamps: a `Duration` holds far more than any `Int64` count of nanoseconds, milliseconds
/// or even seconds (`.seconds(Int64.max) * 2` is a valid value), and `components` itself traps beyond
/// `Int64` seconds — an app-configured timeout must never crash the process.
extension Duration {
    private static let longest = Duration.seconds(Int64.max)
    private static let shortest = Duration.seconds(Int64.min)

    /// `components`, clamped to `Int64` seconds (whose attoseconds are then 0).
    private var clampedComponents: (seconds: Int64, attoseconds: Int64) {
        if self >= Self.longest { return (.max, 0) }
        if self <= Self.shortest { return (.min, 0) }
        return components
    }

    /// The duration in seconds, as a `TimeInterval` (`Date` arithmetic, URLSession timeouts).
    package var inSeconds: Double {
        let (seconds, attoseconds) = clampedComponents
        return Double(seconds) + Double(attoseconds) / 1e18
    }

    /// The duration in whole nanoseconds, truncated toward zero and clamped to `Int64`.
    package var inNanoseconds: Int64 {
        let (seconds, attoseconds) = clampedComponents
        let (whole, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return seconds < 0 ? .min : .max }
        let (sum, overflow2) = whole.addingReportingOverflow(attoseconds / 1_000_000_000)
        return overflow2 ? (seconds < 0 ? .min : .max) : sum
    }

    /// The duration in whole milliseconds, truncated toward zero and clamped to `Int64`.
    package var inMilliseconds: Int64 {
        let (seconds, attoseconds) = clampedComponents
        let (whole, overflow) = seconds.multipliedReportingOverflow(by: 1000)
        if overflow { return seconds < 0 ? .min : .max }
        let (sum, overflow2) = whole.addingReportingOverflow(attoseconds / 1_000_000_000_000_000)
        return overflow2 ? (seconds < 0 ? .min : .max) : sum
    }

    /// The duration in whole milliseconds, rounded up (a positive duration never becomes 0 ms), for
    /// timers that must not fire early.
    package var inMillisecondsRoundedUp: Int64 {
        let truncated = inMilliseconds
        guard truncated < .max, truncated > .min else { return truncated }
        return self > .milliseconds(truncated) ? truncated + 1 : truncated
    }

    /// The duration in whole seconds, rounded up, at least `minimum` (timeouts of APIs that take whole
    /// seconds must never round down to zero).
    package func inWholeSecondsRoundedUp(minimum: Int64 = 0) -> Int64 {
        let (seconds, attoseconds) = clampedComponents
        return Swift.max(minimum, attoseconds > 0 && seconds < .max ? seconds + 1 : seconds)
    }
}
