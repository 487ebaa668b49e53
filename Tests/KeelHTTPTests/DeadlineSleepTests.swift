import Foundation
import KeelCore
import KeelHTTP
import KeelTesting
import Testing

/// The client's attempt timers: nearly all of them are cancelled because the answer came first, and a
/// cancelled one must cost nothing afterwards.
@Suite(.timeLimit(.minutes(1))) struct DeadlineSleepTests {
    @Test func aWaitEndsAtItsDeadlineAndNotBefore() async throws {
        let clock = ContinuousClock()
        let start = clock.now
        try await DeadlineSleep.sleep(until: start.advanced(by: .milliseconds(40)), on: clock)
        let elapsed = clock.now - start
        #expect(elapsed >= .milliseconds(40))
        #expect(elapsed < .seconds(5))
        // A deadline that has passed returns at once.
        try await DeadlineSleep.sleep(until: start, on: clock)
    }

    @Test func aCancelledWaitThrowsAtOnce() async throws {
        let clock = ContinuousClock()
        let started = Locked(false)
        let waiting = Task {
            started.withLock { $0 = true }
            try await DeadlineSleep.sleep(until: clock.now.advanced(by: .seconds(600)), on: clock)
        }
        while !started.withLock({ $0 }) { await Task.yield() }
        let start = clock.now
        waiting.cancel()
        await #expect(throws: CancellationError.self) { try await waiting.value }
        #expect(clock.now - start < .seconds(5))
        // Cancelled before it began: it never waits.
        let early = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            try await DeadlineSleep.wait(.seconds(600))
        }
        await #expect(throws: CancellationError.self) { try await early.value }
    }

    @Test func anyOtherClockIsSleptOnItself() async throws {
        let clock = ManualClock()
        let sleeping = Task { try await DeadlineSleep.sleep(until: clock.now.advanced(by: .seconds(30)), on: clock) }
        try await clock.waitForSleepers(count: 1)
        clock.advance(by: .seconds(30))
        try await sleeping.value
        #expect(clock.sleeperCount == 0)
    }

    #if os(Linux)
        /// Thousands of 10-minute waits, all cancelled once they are waiting, leave nothing behind until their
        /// deadline. `Task.sleep` keeps each cancelled sleep's job and timer until then: 5,000 of them kept
        /// 4.6 MB. A first round fills the runtime's and dispatch's own caches to this size; of the second, the
        /// threads' caches still keep about 1 MB whatever sleeps (as much after `Task.sleep`s whose deadlines
        /// have passed), hence the bound.
        @Test func cancelledWaitsLeaveNothingBehindUntilTheirDeadline() async throws {
            let count = 5000
            let clock = ContinuousClock()
            func round() async {
                let waiting = Locked(0)
                await withThrowingTaskGroup(of: Void.self) { group in
                    for _ in 0..<count {
                        group.addTask {
                            waiting.withLock { $0 += 1 }
                            try await DeadlineSleep.sleep(until: clock.now.advanced(by: .seconds(600)), on: clock)
                        }
                    }
                    while waiting.withLock({ $0 }) < count { await Task.yield() }
                    try? await Task.sleep(for: .milliseconds(100))  // real time: every child is inside its wait
                    group.cancelAll()
                    while (try? await group.next()) != nil {}
                }
                try? await Task.sleep(for: .milliseconds(100))  // dispatch frees cancelled timers on its own queue
            }
            await round()
            let before = try #require(HeapUsage.bytesInUse())
            await round()
            let grown = try #require(HeapUsage.bytesInUse()) - before
            #expect(grown < 2_500_000, "the heap grew by \(grown) bytes after \(count) cancelled waits")
        }
    #endif
}
