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
    private let current = Locked<AsyncStream<Announcement>.Continuation?>(nil)

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
        _ = current.withLock { $0?.yield(Announcement(wait: wait, firstSleeper: first)) }
    }

    /// Runs `body`, advancing the clock through every wait announced meanwhile: each time, once a task has
    /// started sleeping on the clock since the announcement (one already asleep — another call's timer —
    /// is not the announced wait), by exactly the announced duration. A timer that another task starts between
    /// the announcement and the announced sleep is still taken for it: code that announces should sleep next.
    public func run<Result>(_ body: () async throws -> Result) async rethrows -> Result {
        let (waits, continuation) = AsyncStream<Announcement>.makeStream()
        current.withLock { $0 = continuation }
        let clock = self.clock
        let driver = Task {
            for await announced in waits {
                // A timeout here means the code never slept after announcing: nothing to advance.
                guard (try? await clock.waitForSleeper(numberedFrom: announced.firstSleeper)) != nil else { continue }
                clock.advance(by: announced.wait)
            }
        }
        defer {
            current.withLock { $0 = nil }
            continuation.finish()
            driver.cancel()
        }
        return try await body()
    }
}
