import Foundation
import KeelCore
import KeelHTTP
import KeelTesting
import Testing

/// A TestServer, a manual clock and a client wired together, with every attempt event recorded.
final class Harness: Sendable {
    let server: TestServer
    let clock = ManualClock()
    let events = Locked<[AttemptEvent]>([])
    let eventStream: AsyncStream<AttemptEvent>
    private let continuation: AsyncStream<AttemptEvent>.Continuation
    let client: HTTPClient

    init(policy: CallPolicy = CallPolicy(), budget: RetryBudget = RetryBudget(), seed: UInt64 = 7,
         transport: (any HTTPTransport)? = nil, baseURL: URL? = nil, server: TestServer? = nil) throws {
        self.server = try server ?? TestServer()
        let (stream, continuation) = AsyncStream<AttemptEvent>.makeStream()
        eventStream = stream
        self.continuation = continuation
        let events = self.events
        client = HTTPClient(configuration: .init(
            baseURL: baseURL ?? self.server.baseURL, transport: transport ?? URLSessionTransport(),
            clock: clock, wallClock: clock.wallClock, random: .seeded(seed), policy: policy, budget: budget,
            contractVersion: try ContractVersionFixture.version,
            observer: { event in
                events.withLock { $0.append(event) }
                continuation.yield(event)
            }
        ))
    }

    deinit { continuation.finish() }

    /// Sends `operation`, advancing the manual clock through every scheduled retry delay (and nothing
    /// else: attempt timers only fire when a test advances the clock itself).
    func send(_ operation: HTTPOperation) async -> Result<HTTPClient.Reply, HTTPFailure> {
        let clock = self.clock
        let stream = eventStream
        let driver = Task {
            for await event in stream {
                if case .retryScheduled(_, let delay, _) = event {
                    try? await clock.waitForSleepers(count: 1)
                    clock.advance(by: delay)
                }
            }
        }
        defer { driver.cancel() }
        do {
            return .success(try await client.send(operation))
        } catch {
            return .failure(error)
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
