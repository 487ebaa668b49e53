import Foundation
import KeelCore
import KeelHTTP
import KeelTesting
import Testing

/// A TestServer, a manual clock and a client wired together, with every attempt event recorded; retry
/// delays are pumped by KeelTesting's ClockPump.
final class Harness: Sendable {
    let server: TestServer
    let clock = ManualClock()
    let pump: ClockPump
    let events = Locked<[AttemptEvent]>([])
    let client: HTTPClient

    init(
        policy: CallPolicy = CallPolicy(), budget: RetryBudget = RetryBudget(), seed: UInt64 = 7,
        transport: (any HTTPTransport)? = nil, baseURL: URL? = nil, server: TestServer? = nil,
        random: RandomSource? = nil, middleware: [any HTTPMiddleware] = [],
        versionPolicy: VersionPolicyContract? = nil, onVersionPolicyChange: (@Sendable (VersionPolicy) -> Void)? = nil,
        backgroundBudget: (any BackgroundBudget)? = nil
    ) throws {
        self.server = try server ?? TestServer()
        let pump = ClockPump(clock: clock)
        self.pump = pump
        let events = self.events
        client = HTTPClient(
            configuration: .init(
                baseURL: baseURL ?? self.server.baseURL,
                transport: transport ?? HTTPClient.Configuration.makeDefaultTransport(),
                clock: clock, wallClock: clock.wallClock, random: random ?? .seeded(seed), policy: policy,
                budget: budget,
                contractVersion: try ContractVersionFixture.version,
                observer: { event in
                    events.withLock { $0.append(event) }
                    if case .retryScheduled(_, let delay, _) = event { pump.announce(delay) }
                },
                middleware: middleware, versionPolicy: versionPolicy, onVersionPolicyChange: onVersionPolicyChange,
                backgroundBudget: backgroundBudget
            ))
    }

    /// Sends `operation`, advancing the manual clock through every scheduled retry delay (and nothing
    /// else: attempt timers only fire when a test advances the clock itself).
    func send(_ operation: HTTPOperation) async -> Result<HTTPClient.Reply, HTTPFailure> {
        await pump.run {
            do throws(HTTPFailure) {
                return .success(try await client.send(operation))
            } catch {
                return .failure(error)
            }
        }
    }

    /// Waits (in real time, at most `timeout`) until an event matching `predicate` was recorded.
    func waitForEvent(timeout: Duration = .seconds(30), _ predicate: @escaping @Sendable (AttemptEvent) -> Bool)
        async throws
    {
        let deadline = ContinuousClock.now + timeout
        while !events.withLock({ $0.contains(where: predicate) }) {
            guard ContinuousClock.now < deadline else {
                throw WaitTimeout(waitingFor: "an attempt event", timeout: timeout)
            }
            try await Task.sleep(for: .milliseconds(5))
        }
    }

    var scheduledDelays: [Duration] {
        events.withLock { $0.compactMap { if case .retryScheduled(_, let delay, _) = $0 { delay } else { nil } } }
    }

    var declinedReason: DeclineReason? {
        events.withLock { $0.compactMap { if case .retryDeclined(let reason) = $0 { reason } else { nil } }.last }
    }
}

import KeelContract

enum ContractVersionFixture {
    static var version: ContractVersion { get throws { try ContractVersion("1.4.0") } }
}

extension Result {
    var failure: Failure? {
        if case .failure(let failure) = self { return failure }
        return nil
    }

    var success: Success? {
        if case .success(let value) = self { return value }
        return nil
    }
}
