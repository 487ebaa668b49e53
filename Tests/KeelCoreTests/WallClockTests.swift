import Foundation
import KeelCore
import Testing

@Suite struct WallClockTests {
    @Test func fixedClockAlwaysReturnsItsDate() {
        let date = Date(timeIntervalSince1970: 1_700_000_000.25)
        let clock = WallClock.fixed(date)
        #expect(clock.now() == date)
        #expect(clock.now() == date)
    }

    @Test func customClockReadsItsClosureOnEveryCall() {
        let reads = Locked(0)
        let origin = Date(timeIntervalSince1970: 1_000)
        let clock = WallClock {
            let count = reads.withLock { count in
                count += 1
                return count
            }
            return origin.addingTimeInterval(Double(count))
        }
        #expect(clock.now() == origin.addingTimeInterval(1))
        #expect(clock.now() == origin.addingTimeInterval(2))
        #expect(reads.withLock { $0 } == 2)
    }

    @Test func systemClockIsCloseToTheCurrentDate() {
        // A sanity bound for "reads the real clock", not a speed assertion.
        let before = Date()
        let reading = WallClock.system.now()
        #expect(abs(reading.timeIntervalSince(before)) < 5)
        #expect(abs(reading.timeIntervalSince(Date())) < 5)
    }
}
