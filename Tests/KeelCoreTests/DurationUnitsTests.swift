@testable import KeelCore
import Testing

/// Found in review: the conversions read `components`, which traps beyond `Int64` seconds, and the
/// millisecond sum could overflow: an app-configured timeout of `.seconds(Int64.max) * 2` crashed the process.
@Suite struct DurationUnitsTests {
    @Test func everyConversionClampsInsteadOfTrapping() {
        let huge = Duration.seconds(Int64.max) * 2
        #expect(huge.inMilliseconds == .max && huge.inNanoseconds == .max)
        #expect(huge.inMillisecondsRoundedUp == .max && huge.inWholeSecondsRoundedUp() == .max)
        #expect(huge.inSeconds == Double(Int64.max))
        let hugeNegative = Duration.seconds(Int64.min) * 2
        #expect(hugeNegative.inMilliseconds == .min && hugeNegative.inNanoseconds == .min)
        #expect(hugeNegative.inMillisecondsRoundedUp == .min)
        // Just past Int64 milliseconds: whole milliseconds fit, the fraction tips the sum over.
        let edge = Duration.milliseconds(Int64.max) + .milliseconds(1)
        #expect(edge.inMilliseconds == .max)
        #expect((Duration.seconds(Int64.max) + .milliseconds(500)).inWholeSecondsRoundedUp() == .max)
    }

    @Test func ordinaryDurationsConvertExactly() {
        let value = Duration.seconds(3) + .milliseconds(250) + .nanoseconds(7)
        #expect(value.inMilliseconds == 3250 && value.inMillisecondsRoundedUp == 3251)
        #expect(value.inNanoseconds == 3_250_000_007)
        #expect(value.inWholeSecondsRoundedUp() == 4 && Duration.zero.inWholeSecondsRoundedUp(minimum: 1) == 1)
        #expect(Duration.milliseconds(-1500).inMilliseconds == -1500)
        #expect(abs(value.inSeconds - 3.250000007) < 1e-12)
    }
}
