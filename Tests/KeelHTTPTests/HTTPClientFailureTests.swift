import Foundation
import KeelCore
import KeelHTTP
import KeelTesting
import Testing

/// A transport that fails at the seam, for conditions a loopback socket cannot produce (no network, DNS).
struct FaultTransport: HTTPTransport {
    let error: TransportError
    func send(_ request: TransportRequest) async throws(TransportError) -> TransportResponse { throw error }
}

/// MOB-API-003: a test per error class, captive portal and network loss, honest ids.
@Suite(.timeLimit(.minutes(1))) struct HTTPClientFailureTests {
    let once = CallPolicy(maximumAttempts: 1)

    private func failure(for response: TestResponse, _ operation: HTTPOperation = .get("/notes")) async throws
        -> HTTPFailure
    {
        let harness = try Harness(policy: once)
        harness.server.enqueue(response)
        return try #require(await harness.send(operation).failure)
    }

    @Test func status401IsAuthentication() async throws {
        let failure = try await failure(for: TestResponse(status: 401, headers: ["X-Request-ID": "req-401"]))
        #expect(failure.kind == .authentication)
        #expect(failure.outcome == .rejected)
        #expect(failure.requestID == "req-401")
    }

    @Test func status403IsAuthorization() async throws {
        #expect(try await failure(for: TestResponse(status: 403)).kind == .authorization)
    }

    @Test(arguments: [400, 422])
    func status400And422AreValidationWithFieldDetails(status: Int) async throws {
        let body =
            #"{"code": "invalid", "message": "Title is too long, dude", "errors": [{"field": "/title", "code": "tooLong"}, {"field": "/tags/0", "code": "empty"}]}"#
        let failure = try await failure(
            for: .json(body, status: status), HTTPOperation(method: "POST", path: "/notes", body: Data("{}".utf8)))
        #expect(failure.kind == .validation)
        #expect(failure.outcome == .rejected)
        #expect(failure.errorCode == "invalid")
        #expect(
            failure.fieldErrors == [.init(field: "/title", code: "tooLong"), .init(field: "/tags/0", code: "empty")])
    }

    @Test(arguments: [409, 412])
    func status409And412AreConflict(status: Int) async throws {
        #expect(try await failure(for: TestResponse(status: status)).kind == .conflict)
    }

    @Test func status429IsRateLimited() async throws {
        #expect(try await failure(for: TestResponse(status: 429)).kind == .rateLimited)
    }

    @Test func status503WithTheMaintenanceCodeIsMaintenanceOtherwiseTechnical() async throws {
        let maintenance = try await failure(
            for: .json(#"{"code": "maintenance"}"#, status: 503, headers: ["Retry-After": "600"]))
        #expect(maintenance.kind == .maintenance)
        #expect(maintenance.retryAt != nil)
        #expect(try await failure(for: TestResponse(status: 503)).kind == .technical)
    }

    @Test(arguments: [500, 501, 404, 418])
    func otherStatusesAreTechnical(status: Int) async throws {
        let failure = try await failure(for: TestResponse(status: status))
        #expect(failure.kind == .technical)
        #expect(failure.status == status)
    }

    @Test func aGatewayErrorOnAMutationIsOutcomeUnknown() async throws {
        // A 500 after the commit; a gateway's 5xx after its upstream applied it (Cloudflare's 520–524, a
        // proxy's 503 after an upstream reset, 507); a same-origin 3xx after processing.
        let post = HTTPOperation(method: "POST", path: "/pay", body: Data("{}".utf8))
        for status in [500, 502, 503, 504, 507, 520, 522, 524, 599, 303] {
            let failure = try await failure(for: TestResponse(status: status), post)
            #expect(failure.outcome == .unknown, "status \(status)")  // applied, then failed; or applied upstream
        }
        // Answers that say the request was not taken up at all: the backend's maintenance answer, a method it
        // does not implement, an HTTP version it does not speak, a portal's 511.
        let maintenance = try await failure(for: .json(#"{"code": "maintenance"}"#, status: 503), post)
        #expect(maintenance.kind == .maintenance && maintenance.outcome == .rejected)
        for status in [501, 505, 511] {
            #expect(try await failure(for: TestResponse(status: status), post).outcome != .unknown, "status \(status)")
        }
        #expect(try await failure(for: TestResponse(status: 503)).outcome == .rejected)  // a read changes nothing
    }

    @Test func aRefusedConnectionIsOfflineAndNotSent() async throws {
        let refusing = try RefusingPort()
        let url = refusing.baseURL
        let harness = try Harness(policy: once, baseURL: url)
        // An unsafe POST goes out on a fresh connection, so "refused" proves it never left.
        let failure = try #require(
            await harness.send(HTTPOperation(method: "POST", path: "/notes", body: Data())).failure)
        #expect(failure.kind == .offline)
        #expect(failure.outcome == .notSent)
    }

    @Test(arguments: [TransportError.Code.notConnected, .dnsFailed])
    func noNetworkAndDNSFailureAreOfflineAndNotSent(code: TransportError.Code) async throws {
        let harness = try Harness(
            policy: once,
            transport: FaultTransport(
                error: TransportError(code: code, requestMayHaveBeenSent: false, detail: "injected")))
        let failure = try #require(
            await harness.send(HTTPOperation(method: "POST", path: "/notes", body: Data())).failure)
        #expect(failure.kind == .offline)
        #expect(failure.outcome == .notSent)
    }

    /// The same through the real default transport and the system's resolver: a name that cannot exist
    /// (`.invalid`, RFC 2606) fails to resolve, so nothing was sent — not a stub's word for it (found in a
    /// conformance audit: the DNS class came only from an injected error).
    @Test func aNameThatDoesNotResolveIsOfflineAndNotSentThroughTheRealTransport() async throws {
        let client = HTTPClient(
            configuration: .init(
                baseURL: URL(string: "http://keel-test.nonexistent.invalid:8080")!,
                transport: SocketTransport(configuration: .init(connectTimeout: .seconds(10))),
                policy: CallPolicy(attemptTimeout: .seconds(10), deadline: .seconds(10), maximumAttempts: 1),
                allowsCleartextHTTP: true))  // to reach the resolver: cleartext http to a name is refused otherwise
        do {
            _ = try await client.send(HTTPOperation(method: "POST", path: "/notes", body: Data("{}".utf8)))
            Issue.record("a name under .invalid resolved")
        } catch {
            #expect(error.kind == .offline, "\(error)")
            #expect(error.outcome == .notSent, "\(error)")
        }
    }

    @Test func anAttemptTimeoutIsTimeoutWithUnknownOutcome() async throws {
        let harness = try Harness(policy: CallPolicy(attemptTimeout: .seconds(2), maximumAttempts: 1))
        harness.server.enqueue(TestResponse(socketEffect: .noResponse))
        let call = Task { await harness.send(HTTPOperation(method: "POST", path: "/notes", body: Data("{}".utf8))) }
        _ = try await harness.server.takeRequest()
        try await harness.clock.waitForSleepers(count: 1)
        harness.clock.advance(by: .seconds(2))
        let failure = try #require(await call.value.failure)
        #expect(failure.kind == .timeout)
        #expect(failure.outcome == .unknown)
    }

    @Test func status408IsTimeout() async throws {
        #expect(try await failure(for: TestResponse(status: 408)).kind == .timeout)
    }

    // MARK: - Captive portals and network loss

    @Test func aCaptivePortalLoginPageIsCaptivePortalNotSuccess() async throws {
        let harness = try Harness(policy: once, server: try TestServer(dispatcher: .captivePortal(.loginPage)))
        let failure = try #require(await harness.send(.get("/notes")).failure)
        #expect(failure.kind == .captivePortal)
        #expect(failure.outcome == .notSent)  // a read: the API never saw it
        // A mutation answered by "something in between" may still have been forwarded: unknown, never notSent.
        let post = try #require(await harness.send(HTTPOperation(method: "POST", path: "/notes", body: Data())).failure)
        #expect(post.kind == .captivePortal)
        #expect(post.outcome == .unknown)
    }

    @Test func aPortalAnswerDoesNotEraseThatAnEarlierAttemptReachedTheServer() async throws {
        // Attempt 1 reaches the API and is refused (429); attempt 2 is answered by a portal. The request did
        // reach the server, so the call's outcome is rejected, not notSent.
        let harness = try Harness(
            policy: CallPolicy(maximumAttempts: 2, backoff: Backoff(base: .milliseconds(200), cap: .seconds(2))))
        harness.server.enqueue(TestResponse(status: 429))
        harness.server.enqueue(
            TestResponse(
                status: 200, headers: ["Content-Type": "text/html"], body: "<html><body>Hotel Wi-Fi</body></html>"))
        let failure = try #require(await harness.send(.get("/notes")).failure)
        #expect(failure.kind == .captivePortal)
        #expect(failure.attempts == 2)
        #expect(failure.outcome == .rejected)
    }

    /// 511 Network Authentication Required is the status RFC 6585 gives an intercepting proxy that wants a
    /// network login: a portal, not the API failing (found in an outside audit: `technical`, `rejected`). The
    /// proxy forwards nothing before the login, so a mutation too was not sent.
    @Test func a511IsACaptivePortalNotAServerFailure() async throws {
        let harness = try Harness(policy: once)
        let login = TestResponse(
            status: 511, headers: ["Content-Type": "text/html"], body: "<html><body>Log in to the Wi-Fi</body></html>")
        harness.server.enqueue(login)
        let read = try #require(await harness.send(.get("/notes")).failure)
        #expect(read.kind == .captivePortal && read.outcome == .notSent, "\(read)")
        harness.server.enqueue(login)
        let post = try #require(await harness.send(HTTPOperation(method: "POST", path: "/notes", body: Data())).failure)
        #expect(post.kind == .captivePortal && post.outcome == .notSent, "\(post)")
        harness.server.enqueue(login)
        #expect(await harness.client.probeReachability() == .captivePortal)
    }

    @Test func aRedirectToAnotherOriginIsCaptivePortal() async throws {
        let harness = try Harness(
            policy: once,
            server: try TestServer(
                dispatcher: .captivePortal(.redirect(to: URL(string: "http://portal.example.net/login")!))))
        #expect(try #require(await harness.send(.get("/notes")).failure).kind == .captivePortal)
    }

    @Test func anHTMLBodyOnAJSONEndpointIsCaptivePortal() async throws {
        let failure = try await failure(
            for: TestResponse(
                status: 200, headers: ["Content-Type": "text/html"], body: "<html><body>Hotel Wi-Fi</body></html>"))
        #expect(failure.kind == .captivePortal)
    }

    /// A media type is case-insensitive (RFC 9110 §8.3.1): `Text/HTML` with parameters is still HTML, and a
    /// JSON type that merely mentions html is not.
    @Test(arguments: ["Text/HTML; charset=UTF-8", "TEXT/html"])
    func anHTMLTypeInAnyCaseIsCaptivePortal(type: String) async throws {
        let failure = try await failure(
            for: TestResponse(
                status: 200, headers: ["Content-Type": type], body: "<html><body>Hotel Wi-Fi</body></html>"))
        #expect(failure.kind == .captivePortal)
        let harness = try Harness(policy: once)
        harness.server.enqueue(
            TestResponse(status: 200, headers: ["Content-Type": "application/json; x=text/html"], body: #"{"a": 1}"#))
        #expect(await harness.send(.get("/notes")).success != nil)
    }

    /// Portals that send no Content-Type at all are recognised by the body itself.
    @Test(arguments: ["<!DOCTYPE html><html><body>Sign in</body></html>", "\n  <HTML><head></head></HTML>"])
    func anHTMLPageWithoutAContentTypeIsCaptivePortal(page: String) async throws {
        let failure = try await failure(for: TestResponse(status: 200, body: page))
        #expect(failure.kind == .captivePortal)
        // And JSON without a Content-Type is still the API's answer.
        let harness = try Harness(policy: once)
        harness.server.enqueue(TestResponse(status: 200, body: #"{"html": "<html>"}"#))
        #expect(await harness.send(.get("/notes")).success != nil)
    }

    /// The network switch as it usually happens on a phone: the old path goes silent mid-body — no FIN, no
    /// RST, nothing more — and only the attempt's own timer can end it (found in a conformance audit: the
    /// test above drops the connection cleanly, the fast, explicit failure the standard says not to count on).
    /// The silent connection is never used again; a read and a keyed call complete on a new one with the same
    /// key; an unsafe call ends `unknown`.
    @Test func aConnectionThatGoesSilentMidBodyEndsTheAttemptAndIsNeverUsedAgain() async throws {
        func scenario(_ operation: HTTPOperation) async throws -> (
            Result<HTTPClient.Reply, HTTPFailure>, [RecordedRequest]
        ) {
            let harness = try Harness(
                policy: CallPolicy(attemptTimeout: .seconds(2), deadline: .seconds(30), maximumAttempts: 3))
            harness.server.enqueue(
                TestResponse(
                    body: #"{"id": 1, "title": "long enough"}"#, socketEffect: .stallDuringResponseBody(afterBytes: 9)))
            harness.server.enqueue(.json(#"{"id": 1}"#))
            let call = Task { await harness.send(operation) }
            _ = try await harness.server.takeRequest()
            try await harness.clock.waitForSleepers(count: 1)
            harness.clock.advance(by: .seconds(2))
            return (await call.value, harness.server.requests)
        }
        let (read, readRequests) = try await scenario(.get("/notes/1"))
        #expect(read.success?.attempts == 2, "\(read)")
        #expect(readRequests.count == 2 && readRequests[0].connectionID != readRequests[1].connectionID)

        let key = IdempotencyKey("key-43")
        let (keyed, keyedRequests) = try await scenario(
            HTTPOperation(method: "POST", path: "/notes", body: Data("{}".utf8), idempotency: .keyed(key)))
        #expect(keyed.success?.attempts == 2, "\(keyed)")
        #expect(keyedRequests.map { $0.headers["Idempotency-Key"] } == ["key-43", "key-43"])
        #expect(keyedRequests.count == 2 && keyedRequests[0].connectionID != keyedRequests[1].connectionID)

        let (unsafe, unsafeRequests) = try await scenario(
            HTTPOperation(method: "POST", path: "/notes", body: Data("{}".utf8)))
        #expect(
            unsafe.failure?.kind == .timeout && unsafe.failure?.outcome == .unknown,
            "\(unsafe.failure.map { "\($0.kind) \($0.outcome) \($0.detail.unredacted)" } ?? "none")")
        #expect(unsafeRequests.count == 1)
    }

    @Test func networkLossMidBodyThenRecovery() async throws {
        // The "network switch": the server drops every connection mid-body, then serves again on the same port.
        func scenario(_ operation: HTTPOperation) async throws -> (
            Result<HTTPClient.Reply, HTTPFailure>, [RecordedRequest]
        ) {
            let harness = try Harness()
            harness.server.enqueue(
                TestResponse(
                    body: #"{"id": 1, "title": "long enough"}"#,
                    socketEffect: .disconnectDuringResponseBody(afterBytes: 5)))
            harness.server.enqueue(.json(#"{"id": 1}"#))
            return (await harness.send(operation), harness.server.requests)
        }
        let (read, readRequests) = try await scenario(.get("/notes/1"))
        #expect(read.success?.attempts == 2)
        #expect(readRequests.count == 2)

        let key = IdempotencyKey("key-42")
        let (keyed, keyedRequests) = try await scenario(
            HTTPOperation(method: "POST", path: "/notes", body: Data("{}".utf8), idempotency: .keyed(key)))
        #expect(keyed.success != nil)
        #expect(keyedRequests.map { $0.headers["Idempotency-Key"] } == ["key-42", "key-42"])

        let (unsafe, unsafeRequests) = try await scenario(
            HTTPOperation(method: "POST", path: "/notes", body: Data("{}".utf8)))
        #expect(unsafe.failure?.outcome == .unknown)
        #expect(unsafeRequests.count == 1)
    }

    // MARK: - Honest identifiers (OBS-LOG-004)

    @Test func theRequestIDIsTheServersOrAbsentNeverInvented() async throws {
        let withID = try await failure(for: TestResponse(status: 500, headers: ["X-Request-ID": "srv-7"]))
        #expect(withID.requestID == "srv-7")
        let withoutID = try await failure(for: TestResponse(status: 500))
        #expect(withoutID.requestID == nil)
    }

    @Test func theCorrelationIDIsMintedOnceAndSentOnEveryAttempt() async throws {
        let harness = try Harness()
        harness.server.enqueue(TestResponse(status: 503))
        harness.server.enqueue(TestResponse(status: 503))
        let failure = try #require(await harness.send(.get("/notes")).failure)
        let sent = harness.server.requests.compactMap { $0.headers["X-Correlation-ID"] }
        #expect(sent.count == 3)
        #expect(Set(sent) == [failure.correlationID.rawValue])
        // A correlation id the app already has (e.g. persisted with a queued operation) is used as is.
        let known = try CorrelationID(validating: "0123456789abcdef0123456789abcdef")
        var operation = HTTPOperation.get("/notes")
        operation.correlationID = known
        harness.server.enqueue(.json("{}"))
        _ = await harness.send(operation)
        #expect(harness.server.requests.last?.headers["X-Correlation-ID"] == known.rawValue)
    }

    // MARK: - Malformed responses

    @Test(arguments: [
        "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\ntruncated",
        "THIS IS NOT HTTP\r\n\r\n",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nbroken\r\n",
    ])
    func malformedResponsesEndAsTechnical(raw: String) async throws {
        let failure = try await failure(
            for: .raw(raw), HTTPOperation(method: "POST", path: "/notes", body: Data("{}".utf8)))
        #expect(failure.kind == .technical, "\(failure)")
        #expect(failure.outcome == .unknown)
    }

    @Test func aHugeHeaderEndsAsAFailureNotACrash() async throws {
        let header =
            "HTTP/1.1 200 OK\r\nX-Big: " + String(repeating: "a", count: 10 * 1024 * 1024)
            + "\r\nContent-Length: 2\r\n\r\n{}"
        let failure = try await failure(for: .raw(header))
        #expect(failure.kind == .technical || failure.kind == .offline)
    }

    @Test func anOversizedBodyIsTechnical() async throws {
        let harness = try Harness(policy: CallPolicy(maximumAttempts: 3, maximumResponseBytes: 1024))
        harness.server.enqueue(.json("[" + String(repeating: "1,", count: 2000) + "1]"))
        let failure = try #require(await harness.send(.get("/big")).failure)
        #expect(failure.kind == .technical)
        #expect(failure.attempts == 1)  // too large once is too large every time: not retried
    }
}
