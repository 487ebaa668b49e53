import Foundation
import KeelCore
import KeelTesting
import Testing

private typealias Instant = ManualClock.Instant

private func at(_ duration: Duration) -> Instant { Instant(offset: duration) }

/// The time limit is only a safety net: a broken clock would otherwise hang a test forever.
@Suite(.timeLimit(.minutes(1))) struct ManualClockTests {
    // MARK: - Sleeping and waking

    @Test func sleepDoesNotReturnUntilAdvanceReachesTheDeadline() async throws {
        let clock = ManualClock()
        let woke = Locked(false)
        let task = Task {
            try await clock.sleep(for: .seconds(5))
            woke.withLock { $0 = true }
        }

        try await clock.waitForSleepers(count: 1)
        #expect(clock.nextDeadline == at(.seconds(5)))

        clock.advance(by: .seconds(4))
        await Task.yield()
        #expect(woke.withLock { $0 } == false)
        #expect(clock.sleeperCount == 1)
        #expect(clock.wakeLog.isEmpty)
        #expect(clock.now == at(.seconds(4)))

        clock.advance(by: .seconds(1))
        try await task.value
        #expect(woke.withLock { $0 } == true)
        #expect(clock.sleeperCount == 0)
        #expect(clock.nextDeadline == nil)
        #expect(clock.wakeLog.map(\.wokenAt) == [at(.seconds(5))])
    }

    @Test func oneAdvanceWakesSleepersInDeadlineOrderEachAtItsDeadline() async throws {
        let clock = ManualClock()
        var tasks: [Task<Void, any Error>] = []
        // Registered one after another, so sleeper 0 waits 3 s, sleeper 1 waits 1 s, sleeper 2 waits 2 s.
        for (index, seconds) in [3, 1, 2].enumerated() {
            tasks.append(Task { try await clock.sleep(until: at(.seconds(seconds))) })
            try await clock.waitForSleepers(count: index + 1)
        }
        #expect(clock.nextDeadline == at(.seconds(1)))

        clock.advance(by: .seconds(5))
        for task in tasks { try await task.value }

        let log = clock.wakeLog
        #expect(log.map(\.sleeper) == [1, 2, 0])
        #expect(log.map(\.deadline) == [at(.seconds(1)), at(.seconds(2)), at(.seconds(3))])
        #expect(log.allSatisfy { $0.wokenAt == $0.deadline })
        #expect(clock.now == at(.seconds(5)))
        #expect(clock.sleeperCount == 0)
    }

    @Test func equalDeadlinesWakeInRegistrationOrder() async throws {
        let clock = ManualClock()
        let taskA = Task { try await clock.sleep(until: at(.seconds(2))) }
        try await clock.waitForSleepers(count: 1)
        let taskB = Task { try await clock.sleep(until: at(.seconds(2))) }
        try await clock.waitForSleepers(count: 2)
        let taskC = Task { try await clock.sleep(until: at(.seconds(2))) }
        try await clock.waitForSleepers(count: 3)
        let taskD = Task { try await clock.sleep(until: at(.seconds(1))) }
        try await clock.waitForSleepers(count: 4)

        clock.advance(by: .seconds(2))
        for task in [taskA, taskB, taskC, taskD] { try await task.value }

        #expect(clock.wakeLog.map(\.sleeper) == [3, 0, 1, 2])
        #expect(clock.wakeLog.map(\.wokenAt) == [at(.seconds(1)), at(.seconds(2)), at(.seconds(2)), at(.seconds(2))])
    }

    @Test func sleepingUntilAPastOrPresentInstantReturnsAtOnceWithoutAdvancing() async throws {
        let clock = ManualClock()
        clock.advance(by: .seconds(10))

        try await clock.sleep(until: at(.seconds(3)))  // past
        try await clock.sleep(until: at(.seconds(10)))  // present
        try await clock.sleep(for: .zero)

        #expect(clock.now == at(.seconds(10)))
        #expect(clock.sleeperCount == 0)
        #expect(clock.wakeLog.map(\.deadline) == [at(.seconds(3)), at(.seconds(10)), at(.seconds(10))])
        #expect(clock.wakeLog.allSatisfy { $0.wokenAt == at(.seconds(10)) })
    }

    @Test func sleepingWorksThroughAnyClock() async throws {
        let clock = ManualClock()
        let erased: any Clock<Duration> = clock
        let task = Task { try await erased.sleep(for: .seconds(2)) }

        try await clock.waitForSleepers(count: 1)
        clock.advance(by: .seconds(2))
        try await task.value
        #expect(clock.wakeLog.map(\.deadline) == [at(.seconds(2))])
    }

    // MARK: - Cancellation

    @Test func cancellingASleepingTaskThrowsCancellationErrorWithoutAdvancing() async throws {
        let clock = ManualClock()
        let task = Task { try await clock.sleep(for: .seconds(60)) }
        try await clock.waitForSleepers(count: 1)

        task.cancel()
        let result = await task.result

        #expect(throws: CancellationError.self) { try result.get() }
        #expect(clock.sleeperCount == 0)
        #expect(clock.nextDeadline == nil)
        #expect(clock.now == at(.zero))
        #expect(clock.wakeLog.isEmpty)

        // The cancelled sleeper is gone: advancing past its deadline wakes nobody.
        clock.advance(by: .seconds(61))
        #expect(clock.wakeLog.isEmpty)
    }

    @Test func cancellingOneSleeperLeavesTheOthersAsleep() async throws {
        let clock = ManualClock()
        let kept = Task { try await clock.sleep(until: at(.seconds(5))) }
        try await clock.waitForSleepers(count: 1)
        let cancelled = Task { try await clock.sleep(until: at(.seconds(1))) }
        try await clock.waitForSleepers(count: 2)

        cancelled.cancel()
        await #expect(throws: CancellationError.self) { try await cancelled.value }
        #expect(clock.sleeperCount == 1)
        #expect(clock.nextDeadline == at(.seconds(5)))

        clock.advance(by: .seconds(5))
        try await kept.value
        #expect(clock.wakeLog.map(\.sleeper) == [0])
    }

    @Test func taskCancelledBeforeSleepingThrowsCancellationError() async throws {
        let clock = ManualClock()
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            try await clock.sleep(for: .seconds(1))
        }

        let result = await task.result

        #expect(throws: CancellationError.self) { try result.get() }
        #expect(clock.sleeperCount == 0)
        #expect(clock.now == at(.zero))
        #expect(clock.wakeLog.isEmpty)
    }

    // MARK: - Advancing

    @Test func advanceToAnEarlierInstantLeavesNowUnchanged() {
        let clock = ManualClock()
        clock.advance(by: .seconds(10))

        clock.advance(to: at(.seconds(4)))
        #expect(clock.now == at(.seconds(10)))

        clock.advance(to: at(.seconds(10)))
        #expect(clock.now == at(.seconds(10)))

        clock.advance(to: at(.seconds(12)))
        #expect(clock.now == at(.seconds(12)))
    }

    @Test func advanceToNextDeadlineReturnsFalseWhenNothingSleeps() {
        let clock = ManualClock()
        clock.advance(by: .seconds(1))
        #expect(clock.advanceToNextDeadline() == false)
        #expect(clock.now == at(.seconds(1)))
        #expect(clock.wakeLog.isEmpty)
    }

    @Test func advanceToNextDeadlineWakesOnlyTheEarliestSleeper() async throws {
        let clock = ManualClock()
        let late = Task { try await clock.sleep(until: at(.seconds(7))) }
        try await clock.waitForSleepers(count: 1)
        let early = Task { try await clock.sleep(until: at(.seconds(3))) }
        try await clock.waitForSleepers(count: 2)

        #expect(clock.advanceToNextDeadline() == true)
        try await early.value
        #expect(clock.now == at(.seconds(3)))
        #expect(clock.wakeLog.map(\.sleeper) == [1])
        #expect(clock.sleeperCount == 1)
        #expect(clock.nextDeadline == at(.seconds(7)))

        #expect(clock.advanceToNextDeadline() == true)
        try await late.value
        #expect(clock.now == at(.seconds(7)))
        #expect(clock.wakeLog.map(\.sleeper) == [1, 0])

        #expect(clock.advanceToNextDeadline() == false)
        #expect(clock.now == at(.seconds(7)))
    }

    @Test func nowAdvancesByExactlyTheGivenAmount() {
        let clock = ManualClock()
        #expect(clock.now == at(.zero))

        clock.advance(by: .milliseconds(1_500))
        #expect(clock.now == at(.milliseconds(1_500)))

        clock.advance(by: .nanoseconds(1))
        #expect(clock.now == at(.milliseconds(1_500) + .nanoseconds(1)))

        clock.advance(by: .zero)
        #expect(clock.now == at(.milliseconds(1_500) + .nanoseconds(1)))

        clock.advance(by: .seconds(3_600))
        #expect(clock.now.offset == .seconds(3_601) + .milliseconds(500) + .nanoseconds(1))
    }

    @Test func instantArithmeticIsConsistent() {
        let start = at(.seconds(2))
        let end = start.advanced(by: .milliseconds(250))
        #expect(end == at(.milliseconds(2_250)))
        #expect(start.duration(to: end) == .milliseconds(250))
        #expect(end.duration(to: start) == .milliseconds(-250))
        #expect(start < end)
        #expect(!(end < start))
    }

    // MARK: - Wall clock

    @Test func wallClockAdvancesWithTheClock() {
        let origin = Date(timeIntervalSince1970: 1_000_000)
        let clock = ManualClock(wallClockOrigin: origin)
        let wall = clock.wallClock
        #expect(wall.now() == origin)

        clock.advance(by: .seconds(90))
        #expect(wall.now() == origin.addingTimeInterval(90))
        #expect(clock.wallClock.now() == origin.addingTimeInterval(90))

        clock.advance(by: .milliseconds(500))
        #expect(abs(wall.now().timeIntervalSince(origin) - 90.5) < 1e-9)
    }

    // MARK: - Waiting for sleepers

    @Test func waitForSleepersReturnsAtOnceWhenEnoughAreAsleep() async throws {
        let clock = ManualClock()
        try await clock.waitForSleepers(count: 0, timeout: .milliseconds(100))

        let task = Task { try await clock.sleep(for: .seconds(1)) }
        try await clock.waitForSleepers(count: 1)
        try await clock.waitForSleepers(count: 1, timeout: .milliseconds(100))
        clock.advance(by: .seconds(1))
        try await task.value
    }

    @Test func waitForSleepersTimesOutWhenNothingSleeps() async {
        let clock = ManualClock()
        do {
            try await clock.waitForSleepers(count: 1, timeout: .milliseconds(100))
            Issue.record("waitForSleepers returned although nothing sleeps")
        } catch let timeout as WaitTimeout {
            #expect(timeout.timeout == .milliseconds(100))
            #expect(timeout.description.contains("sleeper"))
        } catch {
            Issue.record("expected WaitTimeout, got \(error)")
        }
        #expect(clock.now == at(.zero))
    }
}

@Suite(.timeLimit(.minutes(1))) struct ClockPumpTests {
    /// Found in review: the pump advanced as soon as *any* task slept on the clock. With another sleeper
    /// already there (a second call's timeout), it advanced before the announced sleep began; that sleep then
    /// ran from the advanced time and was never woken.
    @Test func anAnnouncedWaitIsAdvancedOnlyOnceItsSleepHasBegun() async throws {
        let clock = ManualClock()
        let pump = ClockPump(clock: clock)
        let otherTimer = Task { try await clock.sleep(for: .seconds(3600)) }
        defer { otherTimer.cancel() }
        try await clock.waitForSleepers(count: 1)
        let finished = Locked<ManualClock.Instant?>(nil)
        let run = Task {
            let woke = try await pump.run { () async throws -> ManualClock.Instant in
                pump.announce(.seconds(5))
                // Work between the announcement and the sleep (the code computes its next attempt).
                try await Task.sleep(for: .milliseconds(100))
                try await clock.sleep(until: clock.now.advanced(by: .seconds(5)))
                return clock.now
            }
            finished.withLock { $0 = woke }
        }
        // Real time, as a bound only: a pump that advanced too early leaves the sleep hanging.
        let deadline = ContinuousClock.now + .seconds(10)
        while finished.withLock({ $0 }) == nil, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(10))
        }
        run.cancel()
        #expect(finished.withLock { $0 } == at(.seconds(5)))
    }
}

/// Found in an outside review: two `advance(by:)` at once both read the same `now`, and one of them was
/// lost; and two overlapping `ClockPump.run`s lost each other's announcements (a retry that then slept for
/// ever).
@Suite(.timeLimit(.minutes(1))) struct ConcurrentAdvanceTests {
    @Test func advancesFromManyThreadsAtOnceAddUp() {
        let clock = ManualClock()
        DispatchQueue.concurrentPerform(iterations: 400) { _ in clock.advance(by: .milliseconds(5)) }
        #expect(clock.now.offset == .seconds(2))
    }

    @Test func overlappingPumpRunsShareOneDriver() async throws {
        struct Stuck: Error {}
        let clock = ManualClock()
        let pump = ClockPump(clock: clock)
        let (started, startedSignal) = AsyncStream<Void>.makeStream()
        let (otherEnded, otherEndedSignal) = AsyncStream<Void>.makeStream()
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                // Run A announces its wait only after run B, which began while A ran, has ended.
                try await pump.run {
                    startedSignal.yield()
                    for await _ in otherEnded { break }
                    pump.announce(.seconds(5))
                    try await clock.sleep(until: clock.now.advanced(by: .seconds(5)), tolerance: nil)
                }
            }
            for await _ in started { break }
            await pump.run {}  // run B
            otherEndedSignal.yield()
            group.addTask {
                try await Task.sleep(for: .seconds(10))  // real time: A's wait was never advanced
                throw Stuck()
            }
            try await group.next()
            group.cancelAll()
        }
        #expect(clock.now.offset == .seconds(5))
    }
}
