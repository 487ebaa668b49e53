import Foundation
import KeelCore
import KeelHTTP
import KeelTesting
import Testing

/// MOB-API-002: hung, cancelled and retried requests; non-idempotent results; network switch.
@Suite(.timeLimit(.minutes(1))) struct HTTPClientRetryTests {
    @Test func aHungServerEndsAtTheDeadlineWithKindTimeout() async throws {
        let harness = try Harness(
            policy: CallPolicy(
                attemptTimeout: .seconds(5), deadline: .seconds(8), maximumAttempts: 3,
                backoff: Backoff(base: .milliseconds(100), cap: .milliseconds(100))))
        for _ in 0..<3 { harness.server.enqueue(TestResponse(socketEffect: .noResponse)) }
        let call = Task { await harness.send(.get("/notes")) }
        // Attempt 1 hangs until its 5 s timer fires; attempt 2 gets what is left of the 8 s deadline.
        _ = try await harness.server.takeRequest()
        try await harness.clock.waitForSleepers(count: 1)
        harness.clock.advance(by: .seconds(5))
        _ = try await harness.server.takeRequest()
        try await harness.clock.waitForSleepers(count: 1)
        #expect(harness.clock.nextDeadline! <= ManualClock.Instant(offset: .seconds(8)))
        harness.clock.advance(to: ManualClock.Instant(offset: .seconds(8)))
        let failure = try #require(await call.value.failure)
        #expect(failure.kind == .timeout)
        #expect(failure.outcome == .unknown)
        #expect(failure.attempts == 2)
        // The client gave up on both connections; the server saw each closed.
        _ = try await harness.server.awaitConnectionEvent { $0.kind == .closedByClient && $0.connectionID == 1 }
        _ = try await harness.server.awaitConnectionEvent { $0.kind == .closedByClient && $0.connectionID == 2 }
    }

    @Test func cancellingTheTaskClosesTheConnectionAtOnce() async throws {
        let harness = try Harness()
        harness.server.enqueue(TestResponse(socketEffect: .noResponse))
        let call = Task { await harness.send(HTTPOperation(method: "POST", path: "/notes", body: Data("{}".utf8))) }
        _ = try await harness.server.takeRequest()
        call.cancel()
        let failure = try #require(await call.value.failure)
        #expect(failure.kind == .cancelled)
        #expect(failure.outcome == .unknown)  // the POST was sent; it may have been applied
        _ = try await harness.server.awaitConnectionEvent { $0.kind == .closedByClient }
        #expect(harness.clock.sleeperCount == 0)
    }

    @Test func cancellingDuringTheRetryDelaySendsNoFurtherAttempt() async throws {
        // Alamofire #2340: a request cancelled during the retry delay was still sent.
        let harness = try Harness()
        harness.server.enqueue(TestResponse(status: 503))
        harness.server.enqueue(TestResponse(body: "{}"))
        let call = Task { () -> Result<HTTPClient.Reply, HTTPFailure> in
            do throws(HTTPFailure) { return .success(try await harness.client.send(.get("/notes"))) } catch {
                return .failure(error)
            }
        }
        try await harness.waitForEvent { if case .retryScheduled = $0 { true } else { false } }
        try await harness.clock.waitForSleepers(count: 1)
        call.cancel()
        let failure = try #require(await call.value.failure)
        #expect(failure.kind == .cancelled)
        #expect(failure.attempts == 1)
        try await Task.sleep(for: .milliseconds(200))  // a stray second attempt would have arrived by now
        #expect(harness.server.requestCount == 1)
        #expect(harness.clock.sleeperCount == 0)
    }

    @Test func transientFailuresOfAnIdempotentCallAreRetriedWithJitteredBackoff() async throws {
        let policy = CallPolicy(maximumAttempts: 4, backoff: Backoff(base: .milliseconds(200), cap: .seconds(2)))
        let harness = try Harness(policy: policy)
        // The dropped connection comes first, on a fresh connection: on a reused one, libcurl itself
        // would silently re-send the GET once (see URLSessionTransportTests).
        harness.server.enqueue(TestResponse(socketEffect: .disconnectAfterRequest))
        harness.server.enqueue(TestResponse(status: 503))
        harness.server.enqueue(TestResponse(status: 502))
        harness.server.enqueue(.json(#"{"id": 1}"#))
        let reply = try #require(await harness.send(.get("/notes/1")).success)
        #expect(reply.attempts == 4, "\(harness.events.withLock { $0 }) \(harness.server.requests.map(\.connectionID))")
        #expect(String(decoding: reply.body, as: UTF8.self) == #"{"id": 1}"#)
        let delays = harness.scheduledDelays
        #expect(delays.count == 3)
        // Every step, in order (the state machine is asserted exhaustively).
        #expect(
            harness.events.withLock { $0 } == [
                .attemptStarted(number: 1), .attemptFailed(number: 1, kind: .technical, outcome: .unknown),
                .retryScheduled(nextAttempt: 2, delay: delays[0], reason: .technical),
                .attemptStarted(number: 2), .attemptResponded(number: 2, status: 503),
                .attemptFailed(number: 2, kind: .technical, outcome: .unknown),
                .retryScheduled(nextAttempt: 3, delay: delays[1], reason: .technical),
                .attemptStarted(number: 3), .attemptResponded(number: 3, status: 502),
                .attemptFailed(number: 3, kind: .technical, outcome: .unknown),
                .retryScheduled(nextAttempt: 4, delay: delays[2], reason: .technical),
                .attemptStarted(number: 4), .attemptResponded(number: 4, status: 200),
            ])
        #expect(Set(delays).count == 3)  // jittered: three different delays
        for (index, delay) in delays.enumerated() {
            #expect(delay <= policy.backoff.ceiling(forRetry: index + 1))
        }
        // The delays come from the injected random source, in order: a replay of the same seed draws the
        // correlation id first (as the client does), then one jittered delay per retry. Plain exponential
        // delays, or jitter from another source, fail here.
        let replay = RandomSource.seeded(7)
        _ = CorrelationID.make(using: replay)
        #expect(delays == (1...3).map { policy.backoff.delay(forRetry: $0, using: replay) })
        let requests = harness.server.requests
        #expect(Set(requests.map { $0.headers["X-Correlation-ID"] }).count == 1)  // one operation, one id
        #expect(requests.allSatisfy { $0.headers["API-Version"] == "1.4.0" })
    }

    @Test func aSentUnsafeCallIsNeverRetriedAndEndsUnknown() async throws {
        let harness = try Harness()
        harness.server.enqueue(TestResponse(socketEffect: .disconnectAfterRequest))
        harness.server.enqueue(TestResponse(status: 201))
        let failure = try #require(
            await harness.send(HTTPOperation(method: "POST", path: "/payments", body: Data("{}".utf8))).failure)
        #expect(failure.outcome == .unknown)
        #expect(failure.attempts == 1)
        #expect(harness.server.requestCount == 1)
        #expect(harness.declinedReason == .notRetryable)
    }

    @Test func anUnsafeCallIsSentExactlyOnceEvenAfterKeepAliveTraffic() async throws {
        let harness = try Harness(policy: CallPolicy(attemptTimeout: .seconds(5), maximumAttempts: 3))
        for round in 1...3 {
            harness.server.enqueue(.json("{}"))
            harness.server.enqueue(TestResponse(socketEffect: .disconnectAfterRequest))
            _ = try #require(await harness.send(.get("/warm")).success)
            let call = Task { await harness.send(HTTPOperation(method: "POST", path: "/pay", body: Data("{}".utf8))) }
            let failure = try #require(await call.value.failure)
            #expect(failure.outcome == .unknown)
            #expect(harness.server.requests.filter { $0.method == "POST" }.count == round)
        }
    }

    @Test func anUnsafeCallIsRetriedWhenTheRequestNeverLeft() async throws {
        // A port nobody listens on: the connection is refused, so the POST provably never left.
        let refusing = try RefusingPort()
        let url = refusing.baseURL
        let harness = try Harness(baseURL: url)
        let failure = try #require(
            await harness.send(HTTPOperation(method: "POST", path: "/notes", body: Data("{}".utf8))).failure)
        #expect(failure.kind == .offline)
        #expect(failure.outcome == .notSent)
        #expect(failure.attempts == 3)
        #expect(harness.declinedReason == .attemptsExhausted)
    }

    @Test func aKeyedCallIsRetriedWithTheSameKey() async throws {
        let harness = try Harness()
        harness.server.enqueue(TestResponse(socketEffect: .disconnectAfterRequest))
        harness.server.enqueue(TestResponse(status: 201, body: "{}"))
        let key = IdempotencyKey.make(using: .seeded(1))
        let operation = HTTPOperation(method: "POST", path: "/notes", body: Data("{}".utf8), idempotency: .keyed(key))
        let result = await harness.send(operation)
        let reply = try #require(
            result.success,
            "\(String(describing: result.failure)) \(harness.events.withLock { $0 }) \(harness.server.requests.map(\.path))"
        )
        #expect(reply.status == 201)
        #expect(harness.server.requests.map { $0.headers["Idempotency-Key"] } == [key.rawValue, key.rawValue])
    }

    @Test func aKeyStillInProgressIsRetriedAfterRetryAfterAndOtherwiseEndsUnknown() async throws {
        // 409 with the contract's in-progress code, to a keyed call: an earlier attempt with this key is
        // still being applied. Not a conflict of state: the same key is sent again after Retry-After.
        let inProgress = TestResponse.json(
            #"{"code": "idempotency_key_in_progress"}"#, status: 409, headers: ["Retry-After": "1"])
        let harness = try Harness(policy: CallPolicy(deadline: .seconds(60), maximumAttempts: 3))
        harness.server.enqueue(inProgress)
        harness.server.enqueue(TestResponse(status: 201, body: "{}"))
        let key = IdempotencyKey.make(using: .seeded(2))
        let operation = HTTPOperation(method: "POST", path: "/notes", body: Data("{}".utf8), idempotency: .keyed(key))
        #expect(try #require(await harness.send(operation).success).status == 201)
        #expect(harness.scheduledDelays == [.seconds(1)])
        #expect(harness.server.requests.map { $0.headers["Idempotency-Key"] } == [key.rawValue, key.rawValue])

        // Still in progress when the attempts run out: unknown (it may yet be applied), never "nothing changed".
        let stuck = try Harness(policy: CallPolicy(deadline: .seconds(60), maximumAttempts: 2))
        stuck.server.enqueue(inProgress)
        stuck.server.enqueue(inProgress)
        let failure = try #require(await stuck.send(operation).failure)
        #expect(failure.kind == .inProgress && failure.outcome == .unknown && failure.attempts == 2)
        let shown = UserFacingOutcome(failure: failure, mutates: true, canQueue: true)
        #expect(shown.message.hasPrefix("The service is still working on an earlier attempt of this."))
        #expect(!shown.message.contains("Nothing was changed"))

        // The same 409 code without a key, or a 409 without the code, is a conflict of state: not retried.
        let unkeyed = try Harness(policy: CallPolicy(deadline: .seconds(60), maximumAttempts: 3))
        unkeyed.server.enqueue(inProgress)
        let plain = try #require(await unkeyed.send(.post("/notes", body: Data("{}".utf8))).failure)
        #expect(plain.kind == .conflict && plain.outcome == .rejected && unkeyed.server.requests.count == 1)
        let conflict = try Harness(policy: CallPolicy(deadline: .seconds(60), maximumAttempts: 3))
        conflict.server.enqueue(.json(#"{"code": "version_conflict"}"#, status: 409))
        let state = try #require(await conflict.send(operation).failure)
        #expect(state.kind == .conflict && state.outcome == .rejected && conflict.server.requests.count == 1)
    }

    @Test func retryAfterIsHonouredNeverShorter() async throws {
        let harness = try Harness(
            policy: CallPolicy(
                deadline: .seconds(60), backoff: Backoff(base: .milliseconds(10), cap: .milliseconds(50))))
        harness.server.enqueue(TestResponse(status: 429, headers: ["Retry-After": "7"]))
        harness.server.enqueue(TestResponse(body: "{}"))
        _ = try #require(await harness.send(.get("/feed")).success)
        #expect(harness.scheduledDelays == [.seconds(7)])
    }

    @Test func retryAfterBeyondTheDeadlineStopsWithTheInstantToRetryAt() async throws {
        let harness = try Harness(policy: CallPolicy(deadline: .seconds(30)))
        harness.server.enqueue(TestResponse(status: 429, headers: ["Retry-After": "120"]))
        let failure = try #require(await harness.send(.get("/feed")).failure)
        #expect(failure.kind == .rateLimited)
        #expect(failure.retryAt == harness.clock.wallClock.now().addingTimeInterval(120))
        #expect(failure.attempts == 1)
        #expect(harness.declinedReason == .retryAfterTooLong)
    }

    @Test func theRetryBudgetStopsARetryStorm() async throws {
        let budget = RetryBudget(capacity: 5, retryCost: 5, successRefund: 1)
        let harness = try Harness(budget: budget)
        for _ in 0..<6 { harness.server.enqueue(TestResponse(status: 503)) }
        let first = try #require(await harness.send(.get("/a")).failure)
        #expect(first.attempts == 2)  // one retry paid for, the second declined
        #expect(harness.declinedReason == .budgetExhausted)
        let second = try #require(await harness.send(.get("/b")).failure)
        #expect(second.attempts == 1)
    }

    @Test func theDeadlineAlsoBoundsRetries() async throws {
        let harness = try Harness(
            policy: CallPolicy(
                attemptTimeout: .seconds(1), deadline: .seconds(2), maximumAttempts: 10,
                backoff: Backoff(base: .seconds(5), cap: .seconds(5))))
        for _ in 0..<10 { harness.server.enqueue(TestResponse(status: 503)) }
        // The first jittered delay (seed 7) exceeds what is left of the 2 s deadline, so no retry.
        let failure = try #require(await harness.send(.get("/a")).failure)
        #expect(failure.attempts == 1)
        #expect(harness.declinedReason == .deadline)
        #expect(harness.clock.now.offset <= .seconds(2))
    }
}

/// Programming errors trap with a message instead of producing an unbounded or guessed behaviour.
@Suite struct HTTPPreconditionTests {
    @Test func aZeroOrUnboundedTimeoutIsAProgrammingError() async {
        await #expect(processExitsWith: .failure) { _ = CallPolicy(attemptTimeout: .zero) }
        await #expect(processExitsWith: .failure) { _ = CallPolicy(deadline: .seconds(Int64.max)) }
        await #expect(processExitsWith: .failure) { _ = CallPolicy(maximumAttempts: 0) }
    }

    @Test func putAndDeleteMustDeclareTheirIdempotency() async {
        await #expect(processExitsWith: .failure) { _ = HTTPOperation(method: "PUT", path: "/notes/1") }
        await #expect(processExitsWith: .failure) { _ = HTTPOperation(method: "DELETE", path: "/notes/1") }
        #expect(HTTPOperation(method: "PUT", path: "/notes/1", idempotency: .idempotent).idempotency == .idempotent)
        #expect(HTTPOperation(method: "POST", path: "/notes").idempotency == .unsafe)
        #expect(HTTPOperation(method: "get", path: "/notes").idempotency == .idempotent)
    }
}
