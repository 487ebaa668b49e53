import Foundation
import KeelCore
import KeelHTTP
import KeelTesting
import Testing

/// MOB-API-004: a request in the background respects the time the OS grants, and when that time is taken
/// away it ends with its outcome as it stands — never lost, never guessed.
@Suite(.timeLimit(.minutes(1))) struct BackgroundBudgetTests {
    @Test func theBudgetClampsTheDeadlineAndEachAttempt() async throws {
        let budget = ManualBackgroundBudget(remaining: .seconds(4))
        let harness = try Harness(
            policy: CallPolicy(attemptTimeout: .seconds(30), deadline: .seconds(60), maximumAttempts: 3),
            backgroundBudget: budget)
        harness.server.enqueue(TestResponse(socketEffect: .noResponse))
        let call = Task { await harness.send(.get("/notes")) }
        _ = try await harness.server.takeRequest()
        try await harness.clock.waitForSleepers(count: 1)
        // The attempt's timer is set by the 4 s the OS granted, not by the 30 s attempt timeout.
        #expect(harness.clock.nextDeadline! <= ManualClock.Instant(offset: .seconds(4)))
        harness.clock.advance(by: .seconds(4))
        let failure = try #require(await call.value.failure)
        #expect(failure.kind == .timeout)
        #expect(failure.attempts == 1)  // no time left for another
    }

    /// Found in review: the budget was read once, when the call began. An app that went to the background
    /// during the call (here: while the first attempt waited) still gave the next attempt its whole 30 s.
    @Test func theBudgetIsReadAgainBeforeEveryAttempt() async throws {
        let budget = ManualBackgroundBudget(remaining: nil)  // in the foreground: no limit
        let harness = try Harness(
            policy: CallPolicy(attemptTimeout: .seconds(30), deadline: .seconds(120), maximumAttempts: 3),
            backgroundBudget: budget)
        harness.server.enqueue(TestResponse(socketEffect: .noResponse))
        harness.server.enqueue(TestResponse(socketEffect: .noResponse))
        let call = Task { await harness.send(.get("/notes")) }
        _ = try await harness.server.takeRequest()
        try await harness.clock.waitForSleepers(count: 1)
        #expect(harness.clock.nextDeadline! == ManualClock.Instant(offset: .seconds(30)))
        budget.setRemaining(.seconds(4))  // the app went to the background
        harness.clock.advance(by: .seconds(30))  // the first attempt times out; the retry follows
        _ = try await harness.server.takeRequest()
        try await harness.clock.waitForSleepers(count: 1)
        let secondAttemptEnds = try #require(harness.clock.nextDeadline)
        #expect(secondAttemptEnds <= harness.clock.now.advanced(by: .seconds(4)))
        harness.clock.advance(by: .seconds(4))
        let failure = try #require(await call.value.failure)
        #expect(failure.kind == .timeout)
        #expect(failure.attempts == 2)
    }

    @Test func anExpiredBudgetCancelsAMutationInFlightAndItsOutcomeIsUnknown() async throws {
        let budget = ManualBackgroundBudget(remaining: .seconds(30))
        let harness = try Harness(backgroundBudget: budget)
        harness.server.enqueue(TestResponse(socketEffect: .noResponse))
        let call = Task { await harness.send(.post("/payments", body: Data("{}".utf8))) }
        _ = try await harness.server.takeRequest()  // it reached the server
        budget.expire()
        let failure = try #require(await call.value.failure)
        #expect(failure.kind == .cancelled)
        #expect(failure.outcome == .unknown)  // it may have been applied: reconcile will ask
        #expect(failure.detail.unredacted.contains("background time budget expired"))
        _ = try await harness.server.awaitConnectionEvent { $0.kind == .closedByClient }
    }

    @Test func anExpiredBudgetBeforeAnythingLeftEndsNotSent() async throws {
        let budget = ManualBackgroundBudget(remaining: .seconds(30))
        budget.expire()
        let harness = try Harness(backgroundBudget: budget)
        harness.server.enqueue(.json("{}"))
        let failure = try #require(await harness.send(.post("/payments", body: Data("{}".utf8))).failure)
        #expect(failure.outcome == .notSent)
        #expect(harness.server.requestCount == 0)
    }

    /// Found in review: an expiry while the attempt was still connecting (here: stuck in the TLS handshake,
    /// so not one byte of the request left) was recorded `unknown` — every cancellation was — and the journal
    /// then refused to send the payment again until reconcile had asked the server about a request it never got.
    @Test func anExpiredBudgetWhileStillConnectingEndsNotSent() async throws {
        let budget = ManualBackgroundBudget(remaining: .seconds(30))
        let server = try TestServer()  // it never answers a TLS hello: the handshake hangs
        let harness = try Harness(
            baseURL: URL(string: "https://127.0.0.1:\(server.port)")!, server: server, backgroundBudget: budget)
        let call = Task { await harness.send(.post("/payments", body: Data("{}".utf8))) }
        _ = try await server.awaitConnectionEvent { $0.kind == .opened }
        budget.expire()
        let failure = try #require(await call.value.failure)
        #expect(failure.kind == .cancelled)
        #expect(failure.outcome == .notSent)
        #expect(server.requestCount == 0)
    }

    /// Found in an outside audit: once expired, a budget stayed expired, so an app that keeps one client
    /// (foreground, background task, foreground again) failed every later call at once.
    @Test func aNewGrantAfterAnExpiryLetsCallsRunAndTheNextExpiryEndsThem() async throws {
        let budget = ManualBackgroundBudget(remaining: .seconds(30))
        let harness = try Harness(backgroundBudget: budget)
        budget.expire()
        budget.setRemaining(nil)  // back in the foreground
        #expect(!budget.isExpired && budget.remaining() == nil)
        harness.server.enqueue(.json("{}"))
        _ = try #require(await harness.send(.get("/notes")).success)
        budget.setRemaining(.seconds(30))  // a new background task
        harness.server.enqueue(TestResponse(socketEffect: .noResponse))
        let call = Task { await harness.send(.get("/notes")) }
        _ = try await harness.server.takeRequest()
        budget.expire()
        let failure = try #require(await call.value.failure)
        #expect(failure.kind == .cancelled, "\(failure.detail.unredacted)")
    }

    @Test func withoutALimitNothingChanges() async throws {
        let budget = ManualBackgroundBudget(remaining: nil)
        let harness = try Harness(backgroundBudget: budget)
        harness.server.enqueue(.json("{}"))
        _ = try #require(await harness.send(.get("/notes")).success)
        #expect(!budget.isExpired)
    }
}

/// The real socket transport, and then the OS taking the background time away right after the complete
/// answer arrived (it waits until the call has seen its cancellation before handing the answer back).
private struct ExpiringAfterTheAnswer: InterruptibleHTTPTransport {
    let inner = HTTPClient.Configuration.makeDefaultTransport() as! any InterruptibleHTTPTransport
    let budget: ManualBackgroundBudget

    func send(_ request: TransportRequest) async throws(TransportError) -> TransportResponse {
        try await inner.send(request)
    }

    func send(_ request: TransportRequest, interruption: TransportInterruption) async throws(TransportError)
        -> TransportResponse
    {
        let response = try await inner.send(request, interruption: interruption)
        budget.expire()
        for _ in 0..<100_000 where !Task.isCancelled { await Task.yield() }
        return response
    }
}

extension BackgroundBudgetTests {
    /// Found in an outside audit: a complete answer that came in just as the budget expired was thrown away
    /// as "cancelled", so the journal said `unknown` of a payment the server had confirmed.
    @Test func aCompleteAnswerThatArrivesAsTheBudgetExpiresIsKept() async throws {
        let budget = ManualBackgroundBudget(remaining: .seconds(30))
        let harness = try Harness(transport: ExpiringAfterTheAnswer(budget: budget), backgroundBudget: budget)
        harness.server.enqueue(.json(#"{"id": "p1"}"#, status: 201))
        let reply = try #require(await harness.send(.post("/payments", body: Data("{}".utf8))).success)
        #expect(reply.status == 201)
        #expect(budget.isExpired)
    }
}
