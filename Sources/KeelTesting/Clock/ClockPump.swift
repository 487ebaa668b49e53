import KeelCore

/// Advances a ``ManualClock`` through the waits the code under test announces, while everything else
/// (a ``TestServer``, real sockets) runs in real time.
///
/// Code driven by a manual clock sleeps until a test advances it. When the code decides its own waits
/// (a retry delay with jitter, a backoff), the test does not know how far to advance; the code does, and
/// says so through an observer. The pump listens: for every announced wait it lets the code fall asleep
/// on the clock, then advances the clock by exactly that wait, and nothing else. Timers the code did not
/// announce (an attempt timeout, a deadline) fire only when the test advances the clock itself.
///
/// ```swift
/// let clock = ManualClock()
/// let pump = ClockPump(clock: clock)
/// let client = HTTPClient(configuration: .init(baseURL: server.baseURL, clock: clock, observer: { event in
///     if case .retryScheduled(_, let delay, _) = event { pump.announce(delay) }
/// }))
/// let reply = try await pump.run { try await client.send(.get("/notes")) }
/// ```
///
/// ## Topics
/// - ``init(clock:)``
/// - ``announce(_:)``
/// - ``run(_:)``
public final class ClockPump: Sendable {
    /// The clock it advances.
    public let clock: ManualClock
    /// The driver of the runs under way, and how many there are: runs that overlap share it.
    private struct Running {
        let continuation: AsyncStream<Announcement>.Continuation
        let driver: Task<Void, Never>
        var runs: Int
    }
    private let running = Locked<Running?>(nil)

    /// An announced wait, and the number the sleep that makes it will have at the earliest.
    private struct Announcement {
        let wait: Duration
        let firstSleeper: Int
    }

    /// A pump for `clock`.
    public init(clock: ManualClock) { self.clock = clock }

    /// Announces a wait the code under test is about to make on the clock. Call it from the code's
    /// observer, before the code sleeps. Announcements outside ``run(_:)`` are dropped.
    public func announce(_ wait: Duration) {
        let first = clock.nextSleeperNumber
        _ = running.withLock { $0?.continuation.yield(Announcement(wait: wait, firstSleeper: first)) }
    }

    /// Runs `body`, advancing the clock through every wait announced meanwhile: each time, once a task has
    /// started sleeping on the clock since the announcement (one already asleep — another call's timer —
    /// is not the announced wait), by exactly the announced duration. A timer that another task starts between
    /// the announcement and the announced sleep is still taken for it: code that announces should sleep next.
    ///
    /// Runs may overlap (two calls under way at once, or one inside another): they share one driver, and every
    /// wait announced while any of them runs is advanced once (found in an outside review: the second run took
    /// the first one's announcements, and when it ended the first one's later waits were never advanced).
    public func run<Result>(_ body: () async throws -> Result) async rethrows -> Result {
        let clock = self.clock
        running.withLock { running in
            if running != nil {
                running!.runs += 1
                return
            }
            let (waits, continuation) = AsyncStream<Announcement>.makeStream()
            let driver = Task {
                for await announced in waits {
                    // A timeout here means the code never slept after announcing: nothing to advance.
                    guard (try? await clock.waitForSleeper(numberedFrom: announced.firstSleeper)) != nil else {
                        continue
                    }
                    clock.advance(by: announced.wait)
                }
            }
            running = Running(continuation: continuation, driver: driver, runs: 1)
        }
        defer {
            running.withLock { running in
                guard var current = running else { return }
                current.runs -= 1
                guard current.runs == 0 else {
                    running = current
                    return
                }
                current.continuation.finish()
                current.driver.cancel()
                running = nil
            }
        }
        return try await body()
    }
}
