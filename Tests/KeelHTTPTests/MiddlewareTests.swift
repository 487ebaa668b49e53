import Foundation
import KeelCore
import KeelHTTP
import KeelTesting
import Testing

/// A bearer-token middleware of the kind apps write: adds the current token, refreshes it after a 401 and
/// asks for one replay.
private final class BearerAuth: HTTPMiddleware, Sendable {
    let allowedOrigins: OriginAllowlist?
    private let state = Locked((token: "token-1", refreshes: 0, prepared: 0))

    init(allowedOrigins: OriginAllowlist? = nil) { self.allowedOrigins = allowedOrigins }

    var refreshes: Int { state.withLock { $0.refreshes } }
    var prepared: Int { state.withLock { $0.prepared } }

    func prepare(_ request: inout TransportRequest, context: MiddlewareContext) async throws(MiddlewareRefusal) {
        let token = state.withLock { state -> String in
            state.prepared += 1
            return state.token
        }
        request.headers["Authorization"] = "Bearer \(token)"
    }

    func shouldReplay(after response: TransportResponse, context: MiddlewareContext) async -> Bool {
        guard response.status == 401 else { return false }
        state.withLock {
            $0.refreshes += 1
            $0.token = "token-\($0.refreshes + 1)"
        }
        return true
    }
}

/// Asks for a replay after every answer, to prove the client's rules hold whatever middleware wants.
private struct AlwaysReplay: HTTPMiddleware {
    func shouldReplay(after response: TransportResponse, context: MiddlewareContext) async -> Bool { true }
}

/// Refuses to send anything (no credentials).
private struct NoCredentials: HTTPMiddleware {
    func prepare(_ request: inout TransportRequest, context: MiddlewareContext) async throws(MiddlewareRefusal) {
        throw MiddlewareRefusal(kind: .authentication, detail: "signed out")
    }
}

/// Never finishes preparing (a token refresh that hangs), until cancelled.
private struct HangingPreparation: HTTPMiddleware {
    func prepare(_ request: inout TransportRequest, context: MiddlewareContext) async throws(MiddlewareRefusal) {
        try? await Task.sleep(for: .seconds(3600))
    }
}

/// Prepares only once released, whatever cancellation says (a token refresh that awaits a refresh shared
/// with other calls: an unstructured task's value ignores the waiter's cancellation).
private final class UncancellablePreparation: HTTPMiddleware, Sendable {
    private let waiters = Locked((released: false, waiting: [CheckedContinuation<Void, Never>]()))

    func prepare(_ request: inout TransportRequest, context: MiddlewareContext) async throws(MiddlewareRefusal) {
        await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
            let released = waiters.withLock { state -> Bool in
                if !state.released { state.waiting.append(waiter) }
                return state.released
            }
            if released { waiter.resume() }
        }
    }

    func release() {
        let waiting = waiters.withLock { state in
            state.released = true
            defer { state.waiting = [] }
            return state.waiting
        }
        for waiter in waiting { waiter.resume() }
    }
}

/// Asks for a replay after a 401 only once a token refresh that hangs has finished (never, until cancelled).
private final class HangingReplayDecision: HTTPMiddleware, Sendable {
    private let state = Locked(false)
    var entered: Bool { state.withLock { $0 } }

    func shouldReplay(after response: TransportResponse, context: MiddlewareContext) async -> Bool {
        state.withLock { $0 = true }
        try? await Task.sleep(for: .seconds(3600))
        return true
    }
}

/// A bearer middleware that refreshes only a token that is still current: after a 401 it compares the token
/// the attempt sent (``MiddlewareContext/sentRequest``) with its current one. One it cannot see counts as
/// current (it must refresh: the answer may be to the token it holds).
private final class RotatingBearer: HTTPMiddleware, Sendable {
    private let state = Locked((token: "token-1", refreshes: 0))
    /// What each `shouldReplay` saw: the attempt, whether it was a replay, and the request it was sent as.
    let asked = Locked<[(attempt: Int, isReplay: Bool, sent: TransportRequest?)]>([])
    /// Whether `prepare` ever saw a sent request.
    let preparedWithSentRequest = Locked(false)

    var refreshes: Int { state.withLock { $0.refreshes } }

    func prepare(_ request: inout TransportRequest, context: MiddlewareContext) async throws(MiddlewareRefusal) {
        if context.sentRequest != nil { preparedWithSentRequest.withLock { $0 = true } }
        request.headers["Authorization"] = "Bearer \(state.withLock { $0.token })"
    }

    func shouldReplay(after response: TransportResponse, context: MiddlewareContext) async -> Bool {
        asked.withLock { $0.append((context.attempt, context.isReplay, context.sentRequest)) }
        guard response.status == 401 else { return false }
        let sent = context.sentRequest?.headers["Authorization"]
        state.withLock { state in
            // Refreshed by another call since this one was sent: replay with the new token, refresh nothing.
            if let sent, sent != "Bearer \(state.token)" { return }
            state.refreshes += 1
            state.token = "token-\(state.refreshes + 1)"
        }
        return true
    }
}

/// Answers 401 to `token-1` only once two requests carrying it have arrived (two calls sent before either
/// got its answer), and 200 to any other token.
private final class TwoCallsWithTheOldToken: HTTPTransport, Sendable {
    private let waiting = Locked((arrived: 0, continuations: [CheckedContinuation<Void, Never>]()))
    let tokens = Locked<[String?]>([])

    func send(_ request: TransportRequest) async throws(TransportError) -> TransportResponse {
        let token = request.headers["Authorization"]
        tokens.withLock { $0.append(token) }
        guard token == "Bearer token-1" else { return TransportResponse(status: 200, body: Data("{}".utf8)) }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let released = waiting.withLock { state -> [CheckedContinuation<Void, Never>] in
                state.arrived += 1
                state.continuations.append(continuation)
                guard state.arrived >= 2 else { return [] }
                defer { state.continuations = [] }
                return state.continuations
            }
            for waiter in released { waiter.resume() }
        }
        return TransportResponse(status: 401)
    }
}

/// Request middleware (issue #10): headers on every attempt, one replay under the client's rules, origin
/// allowlists, and no way to turn an unknown outcome into a success or to repeat an unsafe call.
@Suite(.timeLimit(.minutes(1))) struct MiddlewareTests {
    @Test func everyAttemptIsPreparedAfreshIncludingRetries() async throws {
        let auth = BearerAuth()
        let harness = try Harness(policy: CallPolicy(maximumAttempts: 3), middleware: [auth])
        harness.server.enqueue(TestResponse(status: 503))
        harness.server.enqueue(.json("{}"))
        _ = try #require(await harness.send(.get("/notes")).success)
        #expect(
            harness.server.requests.map { $0.headers.values(for: "Authorization") } == [
                ["Bearer token-1"], ["Bearer token-1"],
            ])
        #expect(auth.prepared == 2)
    }

    @Test func a401IsReplayedOnceWithTheRefreshedToken() async throws {
        let auth = BearerAuth()
        let harness = try Harness(middleware: [auth])
        harness.server.enqueue(TestResponse(status: 401))
        harness.server.enqueue(.json(#"{"id": 1}"#))
        let reply = try #require(await harness.send(.get("/notes/1")).success)
        #expect(reply.attempts == 2)  // a replay is an attempt
        #expect(harness.server.requests.map { $0.headers["Authorization"] } == ["Bearer token-1", "Bearer token-2"])
        #expect(harness.events.withLock { $0.contains(.replayScheduled(nextAttempt: 2, status: 401)) })
        #expect(harness.scheduledDelays.isEmpty)  // no backoff, no retry budget
    }

    @Test func anAnswerThatAsksToWaitIsNotReplayedAtOnce() async throws {
        // RFC 9110 §10.2.3: a middleware asking for a replay does not make the client ignore Retry-After; the
        // retry rules send it again, after the wait and within the retry budget.
        for status in [503, 429, 500] {
            let harness = try Harness(
                policy: CallPolicy(
                    deadline: .seconds(60), backoff: Backoff(base: .milliseconds(10), cap: .milliseconds(50))),
                middleware: [AlwaysReplay()])
            harness.server.enqueue(TestResponse(status: status, headers: ["Retry-After": "2"]))
            harness.server.enqueue(.json("{}"))
            let reply = try #require(await harness.send(.get("/notes")).success, "\(status)")
            #expect(reply.attempts == 2)
            #expect(harness.scheduledDelays == [.seconds(2)], "\(status)")
            #expect(harness.events.withLock { $0.contains(.replayRefused(afterAttempt: 1, status: status)) })
        }
    }

    @Test func onlyOneReplayPerCall() async throws {
        let auth = BearerAuth()
        let harness = try Harness(middleware: [auth])
        for _ in 0..<3 { harness.server.enqueue(TestResponse(status: 401)) }
        let failure = try #require(await harness.send(.get("/notes")).failure)
        #expect(failure.kind == .authentication)
        #expect(failure.attempts == 2)
        #expect(harness.server.requestCount == 2)
    }

    @Test func aReplayCountsAgainstTheMaximumAttempts() async throws {
        let harness = try Harness(policy: CallPolicy(maximumAttempts: 1), middleware: [BearerAuth()])
        harness.server.enqueue(TestResponse(status: 401))
        let failure = try #require(await harness.send(.get("/notes")).failure)
        #expect(failure.kind == .authentication)
        #expect(failure.attempts == 1)
        #expect(harness.events.withLock { $0.contains(.replayRefused(afterAttempt: 1, status: 401)) })
        #expect(harness.server.requestCount == 1)
    }

    @Test func aReplayMustFitInTheDeadline() async throws {
        let policy = CallPolicy(attemptTimeout: .seconds(6), deadline: .seconds(6))
        let harness = try Harness(policy: policy, middleware: [BearerAuth()])
        harness.server.enqueue(TestResponse(status: 401).delayingHeaders(by: .milliseconds(500)))
        let call = Task { await harness.send(.get("/notes")) }
        _ = try await harness.server.takeRequest(timeout: .seconds(30))
        try await harness.clock.waitForSleepers(count: 1)
        harness.clock.advance(by: .milliseconds(5_950))  // 50 ms of the deadline left when the 401 arrives
        let failure = try #require(await call.value.failure)
        #expect(failure.kind == .authentication)
        #expect(harness.events.withLock { $0.contains(.replayRefused(afterAttempt: 1, status: 401)) })
        #expect(harness.server.requestCount == 1)
    }

    @Test func anUnsafeCallWhoseOutcomeIsUnknownIsNeverReplayed() async throws {
        let harness = try Harness(policy: CallPolicy(maximumAttempts: 3), middleware: [AlwaysReplay()])
        harness.server.enqueue(TestResponse(status: 500))  // may have been applied
        harness.server.enqueue(.json("{}"))
        let failure = try #require(await harness.send(.post("/payments", body: Data("{}".utf8))).failure)
        #expect(failure.outcome == .unknown)
        #expect(failure.kind == .technical)
        #expect(harness.server.requestCount == 1)
        #expect(harness.events.withLock { $0.contains(.replayRefused(afterAttempt: 1, status: 500)) })
    }

    @Test func aReplayedAnswerThatMayHaveBeenAppliedKeepsTheOutcomeUnknown() async throws {
        // A keyed POST may be replayed after a 500, but the 500 may have come after the commit: if the replay
        // is then refused, the call's outcome is still unknown, not rejected.
        let harness = try Harness(policy: CallPolicy(maximumAttempts: 2), middleware: [AlwaysReplay()])
        harness.server.enqueue(TestResponse(status: 500))
        harness.server.enqueue(TestResponse(status: 400))
        let key = IdempotencyKey("key-9")
        let failure = try #require(
            await harness.send(.post("/pay", body: Data("{}".utf8), idempotency: .keyed(key))).failure)
        #expect(failure.kind == .validation)
        #expect(failure.outcome == .unknown)
        #expect(harness.server.requestCount == 2)
    }

    @Test func anUnsafeCallRefusedWith401IsReplayedBecauseNothingWasApplied() async throws {
        let auth = BearerAuth()
        let harness = try Harness(middleware: [auth])
        harness.server.enqueue(TestResponse(status: 401))
        harness.server.enqueue(.json(#"{"id": 2}"#, status: 201))
        let reply = try #require(await harness.send(.post("/notes", body: Data("{}".utf8))).success)
        #expect(reply.status == 201)
        #expect(harness.server.requestCount == 2)
    }

    @Test func aSuccessIsFinalWhateverTheMiddlewareWants() async throws {
        let harness = try Harness(middleware: [AlwaysReplay()])
        harness.server.enqueue(.json("{}", status: 201))
        harness.server.enqueue(.json("{}", status: 201))
        let reply = try #require(await harness.send(.post("/notes", body: Data("{}".utf8))).success)
        #expect(reply.attempts == 1)
        #expect(harness.server.requestCount == 1)
    }

    @Test func aRefusalSendsNothingAndEndsWithItsKind() async throws {
        let harness = try Harness(middleware: [NoCredentials()])
        let failure = try #require(await harness.send(.post("/notes", body: Data("{}".utf8))).failure)
        #expect(failure.kind == .authentication)
        #expect(failure.outcome == .notSent)
        #expect(harness.server.requestCount == 0)
    }

    @Test func aHangingPreparationEndsAtTheDeadlineWithNothingSent() async throws {
        let harness = try Harness(
            policy: CallPolicy(attemptTimeout: .seconds(2), deadline: .seconds(3)), middleware: [HangingPreparation()])
        let call = Task { await harness.send(.post("/notes", body: Data("{}".utf8))) }
        try await harness.clock.waitForSleepers(count: 1)
        harness.clock.advance(by: .seconds(3))
        let failure = try #require(await call.value.failure)
        #expect(failure.kind == .timeout)
        #expect(failure.outcome == .notSent)
        #expect(harness.server.requestCount == 0)
    }

    @Test func aPreparationThatIgnoresCancellationStillEndsAtTheDeadline() async throws {
        // MOB-API-002: the call ends at its deadline even when the middleware does not stop when asked to.
        let stuck = UncancellablePreparation()
        // Released after 20 s of real time at the latest, so that a call that waits for it fails this test
        // (it must end within 10 s) instead of holding the test process.
        let start = ContinuousClock.now
        let watchdog = Task {
            try? await Task.sleep(for: .seconds(20))
            stuck.release()
        }
        defer {
            watchdog.cancel()
            stuck.release()
        }
        let harness = try Harness(
            policy: CallPolicy(attemptTimeout: .seconds(2), deadline: .seconds(3)), middleware: [stuck])
        let call = Task { await harness.send(.post("/notes", body: Data("{}".utf8))) }
        try await harness.clock.waitForSleepers(count: 1)
        harness.clock.advance(by: .seconds(3))
        let failure = try #require(await call.value.failure)
        #expect(ContinuousClock.now - start < .seconds(10), "the call waited for the middleware")
        #expect(failure.kind == .timeout)
        #expect(failure.outcome == .notSent)
        #expect(harness.server.requestCount == 0)
    }

    @Test func aHangingReplayDecisionEndsAtTheDeadline() async throws {
        // MOB-API-002: the decision to replay (a token refresh over the network) is inside the call's deadline.
        let hanging = HangingReplayDecision()
        let harness = try Harness(
            policy: CallPolicy(attemptTimeout: .seconds(2), deadline: .seconds(3)), middleware: [hanging])
        harness.server.enqueue(TestResponse(status: 401))
        let call = Task { await harness.send(.post("/notes", body: Data("{}".utf8))) }
        let entered = ContinuousClock.now + .seconds(30)
        while !hanging.entered, ContinuousClock.now < entered { try await Task.sleep(for: .milliseconds(5)) }
        #expect(hanging.entered)
        try await harness.clock.waitForSleepers(count: 1)
        harness.clock.advance(by: .seconds(3))
        let failure = try #require(await call.value.failure)
        #expect(failure.kind == .timeout)
        #expect(failure.outcome == .rejected)  // the server refused it with a 401: nothing was applied
        #expect(harness.server.requestCount == 1)
    }

    @Test func anAllowlistedMiddlewareNeverSeesAnotherOrigin() async throws {
        let api = try TestServer()
        let elsewhere = try TestServer()
        let auth = BearerAuth(allowedOrigins: OriginAllowlist([api.baseURL]))
        // The same middleware on a client of the other origin adds nothing there.
        let other = try Harness(server: elsewhere, middleware: [auth])
        elsewhere.enqueue(.json("{}"))
        _ = try #require(await other.send(.get("/notes")).success)
        #expect(elsewhere.requests.first?.headers.contains("Authorization") == false)
        #expect(auth.prepared == 0)
        // On its own origin it does.
        let own = try Harness(server: api, middleware: [auth])
        api.enqueue(.json("{}"))
        _ = try #require(await own.send(.get("/notes")).success)
        #expect(api.requests.first?.headers["Authorization"] == "Bearer token-1")
    }

    @Test func authorizationNeverFollowsARedirectToAnotherOrigin() async throws {
        let api = try TestServer()
        let elsewhere = try TestServer()
        let harness = try Harness(server: api, middleware: [BearerAuth(allowedOrigins: OriginAllowlist([api.baseURL]))])
        api.enqueue(TestResponse(status: 307, headers: ["Location": elsewhere.url("/collect").absoluteString]))
        let failure = try #require(await harness.send(.get("/notes")).failure)
        #expect(failure.kind == .captivePortal)  // a redirect off the API's origin is not the API
        #expect(api.requests.first?.headers["Authorization"] == "Bearer token-1")
        #expect(elsewhere.requestCount == 0)  // nothing, let alone the token, reached the other origin
        // And back: a redirect from the other origin to the API is not followed either.
        let reverse = try Harness(
            server: elsewhere, middleware: [BearerAuth(allowedOrigins: OriginAllowlist([api.baseURL]))])
        elsewhere.enqueue(TestResponse(status: 302, headers: ["Location": api.url("/notes").absoluteString]))
        _ = try #require(await reverse.send(.get("/start")).failure)
        #expect(elsewhere.requests.first?.headers.contains("Authorization") == false)
        #expect(api.requestCount == 1)
    }

    /// Adopter audit: `shouldReplay` could not see the request it was answering, so a refresh middleware could
    /// not tell a 401 to the token it had already replaced: two concurrent 401s rotated the token twice.
    @Test func concurrent401sToTheSameTokenRefreshItOnce() async throws {
        let auth = RotatingBearer()
        let transport = TwoCallsWithTheOldToken()
        let client = HTTPClient(
            configuration: .init(
                baseURL: URL(string: "https://api.example.com/v1")!, transport: transport, middleware: [auth]))
        async let first = client.send(.get("/notes/1"))
        async let second = client.send(.get("/notes/2"))
        let replies = try await [first, second]
        #expect(replies.map(\.attempts) == [2, 2])  // each replayed once
        #expect(auth.refreshes == 1)  // the second 401 was to the token the first one had replaced
        #expect(
            transport.tokens.withLock { $0 }.sorted { ($0 ?? "") < ($1 ?? "") } == [
                "Bearer token-1", "Bearer token-1", "Bearer token-2", "Bearer token-2",
            ])
        // What shouldReplay saw: the first attempt of each call, as sent (the middleware's header, the client's
        // own fields, the URL); prepare never sees a sent request.
        let asked = auth.asked.withLock { $0 }
        #expect(asked.count == 2)
        for question in asked {
            #expect(question.attempt == 1 && !question.isReplay)
            let sent = try #require(question.sent)
            #expect(sent.headers["Authorization"] == "Bearer token-1")
            #expect(sent.headers["X-Correlation-ID"] != nil)
            #expect(sent.url.path.hasPrefix("/v1/notes/"))
        }
        #expect(!auth.preparedWithSentRequest.withLock { $0 })
    }

    /// Adopter audit: apps unit-test their own middleware and wrappers without a client, with the public
    /// initializers of a context and a reply.
    @Test func appsCanTestTheirMiddlewareAndWrappersWithoutAClient() async throws {
        let auth = RotatingBearer()
        let operation = HTTPOperation.get("/notes")
        let sent = TransportRequest(
            method: "GET", url: URL(string: "https://api.example.com/notes")!,
            headers: ["Authorization": "Bearer token-1"])
        let context = MiddlewareContext(operation: operation, sentRequest: sent)
        #expect(context.attempt == 1 && !context.isReplay)
        #expect(context.operation.path == "/notes")
        #expect(await auth.shouldReplay(after: TransportResponse(status: 401), context: context))
        #expect(auth.refreshes == 1)
        // A 401 to the old token again (a call sent before the refresh): no second refresh.
        let late = MiddlewareContext(
            operation: operation, correlationID: context.correlationID, trace: context.trace, attempt: 1,
            sentRequest: sent)
        #expect(await auth.shouldReplay(after: TransportResponse(status: 401), context: late))
        #expect(auth.refreshes == 1)
        #expect(late.correlationID == context.correlationID)
        #expect(late.trace.traceID == context.trace.traceID)
        // A context continues the operation's own ids, as the client's does.
        let id = CorrelationID.make(using: .seeded(3))
        var continued = operation
        continued.correlationID = id
        #expect(MiddlewareContext(operation: continued).correlationID == id)

        let reply = HTTPClient.Reply(headers: ["X-Request-ID": "req-1"], requestID: "req-1", correlationID: id)
        #expect(reply.status == 200 && reply.attempts == 1 && reply.body.isEmpty)
        #expect(reply.header("x-request-id") == "req-1")
        let decoded = HTTPClient.Decoded(value: 7, reply: reply)
        #expect(decoded.value == 7 && decoded.reply.requestID == "req-1")
    }

    @Test func originsMatchExactly() throws {
        let list = try OriginAllowlist(["https://api.example.com", "http://127.0.0.1:8080"])
        #expect(list.contains(URL(string: "https://API.example.com/v1/notes")!))
        #expect(list.contains(URL(string: "https://api.example.com:443/")!))
        #expect(!list.contains(URL(string: "https://api.example.com.evil.net/")!))
        #expect(!list.contains(URL(string: "https://evil.net/api.example.com")!))
        #expect(!list.contains(URL(string: "https://api.example.com./")!))
        #expect(!list.contains(URL(string: "https://api.example.com@evil.net/")!))
        #expect(!list.contains(URL(string: "https://api.example.com:8443/")!))
        #expect(!list.contains(URL(string: "http://api.example.com/")!))
        #expect(list.contains(URL(string: "http://127.0.0.1:8080/x")!))
        #expect(throws: OriginAllowlistError.self) { try OriginAllowlist(["ftp://files.example.com"]) }
        #expect(throws: OriginAllowlistError.self) { try OriginAllowlist(["/relative"]) }
    }
}
