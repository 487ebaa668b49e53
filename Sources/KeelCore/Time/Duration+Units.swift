/// Conversions between `Duration` and the units platform APIs take, written once for the package.
extension Duration {
    /// The duration in seconds, as a `TimeInterval` (`Date` arithmetic, URLSession timeouts).
    package var inSeconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }

    /// The duration in whole nanoseconds, truncated toward zero and clamped to `Int64`.
    package var inNanoseconds: Int64 {
        let (seconds, attoseconds) = components
        let (whole, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return seconds < 0 ? .min : .max }
        let (sum, overflow2) = whole.addingReportingOverflow(attoseconds / 1_000_000_000)
        return overflow2 ? (seconds < 0 ? .min : .max) : sum
    }

    /// The duration in whole milliseconds, truncated toward zero and clamped to `Int64`.
    package var inMilliseconds: Int64 {
        let (seconds, attoseconds) = components
        let (whole, overflow) = seconds.multipliedReportingOverflow(by: 1000)
        if overflow { return seconds < 0 ? .min : .max }
        return whole + attoseconds / 1_000_000_000_000_000
    }

    /// The duration in whole milliseconds, rounded up (a positive duration never becomes 0 ms), for
    /// timers that must not fire early.
    package var inMillisecondsRoundedUp: Int64 {
        let truncated = inMilliseconds
        guard truncated < .max else { return truncated }
        return self > .milliseconds(truncated) ? truncated + 1 : truncated
    }

    /// The duration in whole seconds, rounded up, at least `minimum` (timeouts of APIs that take whole
    /// seconds must never round down to zero).
    package func inWholeSecondsRoundedUp(minimum: Int64 = 0) -> Int64 {
        let (seconds, attoseconds) = components
        return Swift.max(minimum, attoseconds > 0 ? seconds + 1 : seconds)
    }

}
