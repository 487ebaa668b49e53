public import Foundation
public import KeelCore

/// A clock that moves only when the test says so.
///
/// Code under test takes `any Clock<Duration>`; the test passes a `ManualClock`, lets the code start
/// sleeping, and then calls ``advance(by:)``. Sleepers whose deadline has been reached are woken in
/// deadline order (ties in the order they started sleeping). Nothing waits for real time.
///
/// ```swift
/// let clock = ManualClock()
/// let task = Task { try await clock.sleep(for: .seconds(5)); return "woke" }
/// try await clock.waitForSleepers(count: 1)
/// clock.advance(by: .seconds(5))
/// #expect(try await task.value == "woke")
/// ```
///
/// The clock also carries a wall clock (``wallClock``) that advances with it, for code that stamps dates.
///
/// ``advance(by:)`` wakes the sleepers that are due and returns; it does not wait for the woken tasks to
/// run. A task that sleeps again after waking (a periodic timer, a retry loop) therefore starts its next
/// sleep at whatever `now` is when it gets to run. For such loops, step one deadline at a time:
/// `await clock.waitForSleepers(count: 1)`, then ``advanceToNextDeadline()``, and repeat.
///
/// ## Topics
/// - ``now``, ``advance(by:)``, ``advance(to:)``, ``advanceToNextDeadline()``
/// - ``sleeperCount``, ``nextDeadline``, ``waitForSleepers(count:)``, ``wakeLog``
public final class ManualClock: Clock, Sendable {
    /// A point on the manual clock's timeline: the duration since the clock was created.
    public struct Instant: InstantProtocol, CustomStringConvertible {
        /// Time since the clock's origin.
        public var offset: Duration

        /// The instant `offset` after the clock's origin.
        public init(offset: Duration) { self.offset = offset }

        /// This instant moved by `duration`.
        public func advanced(by duration: Duration) -> Instant { Instant(offset: offset + duration) }
        /// The time from this instant to `other`.
        public func duration(to other: Instant) -> Duration { other.offset - offset }
        /// Whether `lhs` comes earlier on the clock's timeline (a smaller offset from the origin).
        public static func < (lhs: Instant, rhs: Instant) -> Bool { lhs.offset < rhs.offset }

        /// The offset from the clock's origin, e.g. `t+5.0 seconds`.
        public var description: String { "t+\(offset)" }
    }

    /// One woken sleeper, for tests of ordering.
    public struct Wake: Sendable, Equatable {
        /// The sleeper's number, in the order sleepers started (0 for the first).
        public let sleeper: Int
        /// The deadline it asked for.
        public let deadline: Instant
        /// The clock's time when it was woken.
        public let wokenAt: Instant
    }

    private struct Sleeper {
        let number: Int
        let deadline: Instant
        let continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var now: Instant
        var sleepers: [Sleeper] = []
        var nextSleeperNumber = 0
        var wakeLog: [Wake] = []
        /// Sleepers that have a number but have not registered their continuation yet.
        var starting: Set<Int> = []
        /// Starting sleepers whose task was cancelled before they registered.
        var cancelled: Set<Int> = []
        /// Where the advances so far are taking the clock (ahead of `now` while one is waking sleepers).
        var target = Instant(offset: .zero)
    }

    private let state: WaitableState<State>
    private let wallOrigin: Date

    /// A clock at `t+0`, whose wall clock starts at `wallClockOrigin`.
    public init(wallClockOrigin: Date = Date(timeIntervalSince1970: 1_767_225_600)) {
        state = WaitableState(State(now: Instant(offset: .zero)))
        wallOrigin = wallClockOrigin
    }

    // MARK: - Clock

    /// The clock's current time; it moves only through the `advance` methods.
    public var now: Instant { state.withLock { $0.now } }

    /// One nanosecond.
    public var minimumResolution: Duration { .nanoseconds(1) }

    /// Suspends until the clock has been advanced to `deadline`.
    ///
    /// Returns at once when `deadline` is not in the future. Throws `CancellationError` when the task is
    /// cancelled, at once and without waiting for the clock.
    public func sleep(until deadline: Instant, tolerance: Duration? = nil) async throws {
        try Task.checkCancellation()
        let number = state.withLock { state in
            defer { state.nextSleeperNumber += 1 }
            state.starting.insert(state.nextSleeperNumber)
            return state.nextSleeperNumber
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let resumeNow: Result<Void, any Error>? = state.withLock { state in
                    state.starting.remove(number)
                    if state.cancelled.remove(number) != nil { return .failure(CancellationError()) }
                    if deadline <= state.now {
                        state.wakeLog.append(Wake(sleeper: number, deadline: deadline, wokenAt: state.now))
                        return .success(())
                    }
                    // Deadline order; equal deadlines in the order the sleepers started (their numbers).
                    let index =
                        state.sleepers.firstIndex {
                            $0.deadline > deadline || ($0.deadline == deadline && $0.number > number)
                        } ?? state.sleepers.endIndex
                    state.sleepers.insert(
                        Sleeper(number: number, deadline: deadline, continuation: continuation), at: index)
                    return nil
                }
                if let resumeNow { continuation.resume(with: resumeNow) }
            }
        } onCancel: {
            let sleeper: Sleeper? = state.withLock { state in
                guard let index = state.sleepers.firstIndex(where: { $0.number == number }) else {
                    // Not registered yet: refuse when it registers. Already woken: nothing to do.
                    if state.starting.contains(number) { state.cancelled.insert(number) }
                    return nil
                }
                return state.sleepers.remove(at: index)
            }
            sleeper?.continuation.resume(throwing: CancellationError())
        }
    }

    // MARK: - Advancing

    /// Moves time forward by `duration`, waking every sleeper whose deadline is reached, in deadline order.
    public func advance(by duration: Duration) {
        precondition(duration >= .zero, "ManualClock cannot go backwards (advance(by: \(duration)))")
        // Counted from where every advance so far is going, taken in one step: two advances at once (a
        // ClockPump's and the test's) add up, neither is lost (found in an outside review).
        let target = state.withLock { state -> Instant in
            state.target = max(state.target, state.now).advanced(by: duration)
            return state.target
        }
        advance(to: target)
    }

    /// Moves time forward to `instant` (no-op if it is not in the future), waking due sleepers in order.
    ///
    /// Time moves through each due deadline in turn, so a woken sleeper's ``Wake/wokenAt`` is its deadline.
    public func advance(to instant: Instant) {
        state.withLock { state in state.target = max(state.target, instant) }
        while true {
            let due: Sleeper? = state.withLock { state in
                guard let first = state.sleepers.first, first.deadline <= instant else {
                    if instant > state.now { state.now = instant }
                    return nil
                }
                state.sleepers.removeFirst()
                if first.deadline > state.now { state.now = first.deadline }
                state.wakeLog.append(Wake(sleeper: first.number, deadline: first.deadline, wokenAt: state.now))
                return first
            }
            guard let due else { return }
            due.continuation.resume()
        }
    }

    /// Moves time to the earliest sleeper's deadline and wakes the sleepers due then. Returns false if none sleeps.
    @discardableResult
    public func advanceToNextDeadline() -> Bool {
        guard let deadline = nextDeadline else { return false }
        advance(to: deadline)
        return true
    }

    // MARK: - Inspecting

    /// How many tasks are sleeping on this clock.
    public var sleeperCount: Int { state.withLock { $0.sleepers.count } }

    /// The earliest deadline among the sleepers.
    public var nextDeadline: Instant? { state.withLock { $0.sleepers.first?.deadline } }

    /// Every wake so far, in the order the clock woke the sleepers.
    public var wakeLog: [Wake] { state.withLock { $0.wakeLog } }

    /// Waits until at least `count` tasks are sleeping on the clock (so the test can advance past them).
    ///
    /// - Throws: ``WaitTimeout`` after `timeout` of real time, which means the code under test never slept.
    public func waitForSleepers(count: Int, timeout: Duration = .seconds(10)) async throws {
        try await state.wait(timeout: timeout, for: "\(count) sleeper(s) on the manual clock") { state in
            state.sleepers.count >= count ? () : nil
        }
    }

    /// The number the next task to sleep on the clock gets (sleepers are numbered from 0 as they start).
    package var nextSleeperNumber: Int { state.withLock { $0.nextSleeperNumber } }

    /// Waits until a task numbered `first` or later (one that started sleeping after ``nextSleeperNumber``
    /// was `first`) is sleeping on the clock: sleepers that were already there do not count.
    ///
    /// - Throws: ``WaitTimeout`` after `timeout` of real time.
    package func waitForSleeper(numberedFrom first: Int, timeout: Duration = .seconds(10)) async throws {
        try await state.wait(timeout: timeout, for: "a sleeper numbered from \(first) on the manual clock") { state in
            state.sleepers.contains { $0.number >= first } ? () : nil
        }
    }

    /// A wall clock that reads this clock's time as an offset from the wall-clock origin.
    public var wallClock: WallClock {
        WallClock { [state, wallOrigin] in
            let offset = state.withLock { $0.now.offset }
            return wallOrigin.addingTimeInterval(offset.inSeconds)
        }
    }
}
