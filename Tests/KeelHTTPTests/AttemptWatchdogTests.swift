import Foundation
import KeelCore
import KeelHTTP
import KeelTesting
import Testing

/// The client's attempt timers on the system clocks: one watchdog for every attempt in the process, and
/// transports it interrupts instead of racing each attempt against a timer task.
@Suite(.timeLimit(.minutes(1))) struct AttemptWatchdogTests {
    /// What ran, in order.
    final class Record: Sendable {
        let fired = Locked<[String]>([])
        func action(_ name: String) -> @Sendable () -> Void { { self.fired.withLock { $0.append(name) } } }
        var names: [String] { fired.withLock { $0 } }

        /// Waits (real time) until `count` actions have run.
        func wait(for count: Int, timeout: Duration = .seconds(20)) async throws {
            let deadline = ContinuousClock.now + timeout
            while fired.withLock({ $0.count }) < count {
                guard ContinuousClock.now < deadline else {
                    throw WaitTimeout(waitingFor: "\(count) watchdog actions", timeout: timeout)
                }
                try await Task.sleep(for: .milliseconds(2))
            }
        }
    }

    private static func after(_ duration: Duration) -> AttemptWatchdog.Deadline {
        .continuous(ContinuousClock.now + duration)
    }

    @Test func aDeadlineRunsItsActionAtItsTimeAndNotBefore() async throws {
        let watchdog = AttemptWatchdog()
        let record = Record()
        let start = ContinuousClock.now
        _ = watchdog.schedule(.continuous(start + .milliseconds(40)), record.action("a"))
        try await record.wait(for: 1)
        #expect(ContinuousClock.now - start >= .milliseconds(40))
        #expect(watchdog.pendingCount == 0)
        // The suspending clock is a system clock too.
        _ = watchdog.schedule(.suspending(SuspendingClock.now + .milliseconds(10)), record.action("b"))
        try await record.wait(for: 2)
        #expect(record.names == ["a", "b"])
    }

    @Test func deadlinesRunInTheirOrderWhateverTheOrderTheyCameIn() async throws {
        let watchdog = AttemptWatchdog()
        let record = Record()
        let start = ContinuousClock.now
        for (name, milliseconds) in [("c", 90), ("a", 30), ("e", 150), ("b", 60), ("d", 120)] {
            _ = watchdog.schedule(.continuous(start + .milliseconds(milliseconds)), record.action(name))
        }
        try await record.wait(for: 5)
        #expect(record.names == ["a", "b", "c", "d", "e"])
    }

    /// The timer is armed for the earliest deadline: one scheduled after a later one must re-arm it, or it
    /// would run only when the later one is due.
    @Test func anEarlierDeadlineScheduledAfterALaterOneRunsFirst() async throws {
        let watchdog = AttemptWatchdog()
        let record = Record()
        let late = watchdog.schedule(Self.after(.seconds(30)), record.action("late"))
        let start = ContinuousClock.now
        _ = watchdog.schedule(Self.after(.milliseconds(30)), record.action("early"))
        try await record.wait(for: 1)
        #expect(ContinuousClock.now - start < .seconds(20))
        #expect(record.names == ["early"])
        watchdog.cancel(late)
        #expect(watchdog.pendingCount == 0)
    }

    @Test func aCancelledDeadlineNeverRuns() async throws {
        let watchdog = AttemptWatchdog()
        let record = Record()
        let cancelled = watchdog.schedule(Self.after(.milliseconds(20)), record.action("cancelled"))
        watchdog.cancel(cancelled)
        _ = watchdog.schedule(Self.after(.milliseconds(80)), record.action("kept"))
        try await record.wait(for: 1)
        try await Task.sleep(for: .milliseconds(50))
        #expect(record.names == ["kept"])
        // Cancelling twice, or after it ran, does nothing.
        watchdog.cancel(cancelled)
        #expect(watchdog.pendingCount == 0)
    }

    @Test func aDeadlineThatHasPassedRunsAtOnceOnTheCallersThread() {
        let watchdog = AttemptWatchdog()
        let record = Record()
        _ = watchdog.schedule(.continuous(ContinuousClock.now - .seconds(1)), record.action("passed"))
        #expect(record.names == ["passed"])
        #expect(watchdog.pendingCount == 0)
    }

    /// Nearly every attempt timer is cancelled long before it is due: those must not pile up until then
    /// (a process making a thousand calls a second with 30-second timeouts).
    @Test func cancelledDeadlinesLeaveNothingBehindUntilTheyWereDue() {
        let watchdog = AttemptWatchdog()
        let record = Record()
        for index in 0..<20_000 {
            let token = watchdog.schedule(Self.after(.seconds(600) + .milliseconds(index)), record.action("x"))
            watchdog.cancel(token)
        }
        #expect(watchdog.pendingCount == 0)
        #expect(watchdog.storedCount <= 64, "the heap kept \(watchdog.storedCount) cancelled deadlines")
        #expect(record.names.isEmpty)
    }

    @Test func anInterruptionRunsItsHandlerOnceAndAHandlerSetAfterItAtOnce() {
        let interruption = TransportInterruption()
        let count = Locked(0)
        interruption.onInterrupt { count.withLock { $0 += 1 } }
        #expect(!interruption.isInterrupted)
        interruption.interrupt()
        interruption.interrupt()
        #expect(interruption.isInterrupted)
        #expect(count.withLock { $0 } == 1)
        interruption.onInterrupt { count.withLock { $0 += 10 } }
        #expect(count.withLock { $0 } == 11)
    }

    static let transports: [(name: String, make: @Sendable () -> any HTTPTransport)] = [
        ("SocketTransport", { SocketTransport() }),
        ("URLSessionTransport", { URLSessionTransport() }),
        ("a transport that cannot be interrupted", { Uninterruptible(SocketTransport()) }),
    ]

    /// An attempt timer on the real clock ends a stalled exchange with `timeout` and closes its connection,
    /// on each kind of transport: interrupted by the watchdog, or (a transport that cannot be interrupted)
    /// cancelled in a task raced against a timer.
    @Test(arguments: 0..<3)
    func anAttemptTimeoutOnTheSystemClockEndsAStalledExchange(transport index: Int) async throws {
        let (name, make) = Self.transports[index]
        let server = try TestServer()
        server.enqueue(TestResponse(socketEffect: .noResponse))
        let client = HTTPClient(
            configuration: .init(
                baseURL: server.baseURL, transport: make(), clock: ContinuousClock(),
                policy: CallPolicy(attemptTimeout: .milliseconds(300), maximumAttempts: 1)))
        let start = ContinuousClock.now
        let failure: HTTPFailure
        do {
            _ = try await client.send(.post("/notes", body: Data("{}".utf8), idempotency: .unsafe))
            Issue.record("\(name): a stalled exchange succeeded")
            return
        } catch {
            failure = error
        }
        #expect(ContinuousClock.now - start >= .milliseconds(300), "\(name)")
        #expect(failure.kind == .timeout, "\(name): \(failure)")
        #expect(failure.outcome == .unknown, "\(name)")
        #expect(failure.attempts == 1, "\(name)")
        _ = try await server.awaitConnectionEvent { $0.kind == .closedByClient }
        #expect(server.requestCount == 1, "\(name)")
    }

    /// An interruption that comes before the exchange starts ends it before anything is sent.
    @Test(arguments: 0..<2)
    func anExchangeInterruptedBeforeItStartsSendsNothing(transport index: Int) async throws {
        let (name, make) = Self.transports[index]
        let transport = try #require(make() as? any InterruptibleHTTPTransport)
        let server = try TestServer()
        let interruption = TransportInterruption()
        interruption.interrupt()
        await #expect(throws: TransportError.self, "\(name)") {
            try await transport.send(
                TransportRequest(method: "POST", url: server.url("/notes"), body: Data("{}".utf8)),
                interruption: interruption)
        }
        // Time for a request that did leave to arrive (real time).
        try await Task.sleep(for: .milliseconds(200))
        #expect(server.requestCount == 0, "\(name)")
    }
}

/// Forwards to another transport without being an ``InterruptibleHTTPTransport``, as an app's own
/// transport may.
struct Uninterruptible: HTTPTransport {
    let base: any HTTPTransport
    init(_ base: any HTTPTransport) { self.base = base }
    func send(_ request: TransportRequest) async throws(TransportError) -> TransportResponse {
        try await base.send(request)
    }
}
