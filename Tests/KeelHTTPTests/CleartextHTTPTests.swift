import Foundation
import KeelCore
import KeelHTTP
import KeelTesting
import Testing

/// Records every request that reaches the transport seam, and hands it to `inner` (a real socket) or, without
/// one, answers 200 at once.
private final class RecordingTransport: StreamingHTTPTransport, Sendable {
    let inner: SocketTransport?
    private let sent = Locked<[URL]>([])

    init(inner: SocketTransport? = nil) { self.inner = inner }

    var urls: [URL] { sent.withLock { $0 } }

    func send(_ request: TransportRequest) async throws(TransportError) -> TransportResponse {
        sent.withLock { $0.append(request.url) }
        guard let inner else { return TransportResponse(status: 200, body: Data("{}".utf8)) }
        return try await inner.send(request)
    }

    func openStream(_ request: TransportRequest, connectTimeout: Duration, noProgressTimeout: Duration)
        async throws(TransportError) -> TransportStream
    {
        sent.withLock { $0.append(request.url) }
        guard let inner else {
            throw TransportError(code: .other, requestMayHaveBeenSent: false, detail: "no streams here")
        }
        return try await inner.openStream(request, connectTimeout: connectTimeout, noProgressTimeout: noProgressTimeout)
    }
}

/// Adds a token, and counts how often it was asked to.
private final class CountingBearer: HTTPMiddleware, Sendable {
    private let count = Locked(0)
    var prepared: Int { count.withLock { $0 } }
    var mayWait: Bool { false }

    func prepare(_ request: inout TransportRequest, context: MiddlewareContext) async throws(MiddlewareRefusal) {
        count.withLock { $0 += 1 }
        request.headers["Authorization"] = "Bearer secret"
    }
}

/// Moves every request to another URL (what `prepare` may do to any part of a request).
private struct MovesTheRequest: HTTPMiddleware {
    let to: URL
    var mayWait: Bool { false }

    func prepare(_ request: inout TransportRequest, context: MiddlewareContext) async throws(MiddlewareRefusal) {
        request.url = to
    }
}

/// Security audit: nothing enforced HTTPS, so on Linux a bearer token could go out in cleartext to any host
/// (on Apple platforms ATS blocks it). Cleartext `http` now reaches only this device unless the app opts in
/// (`HTTPClient.Configuration.allowsCleartextHTTP`).
@Suite(.timeLimit(.minutes(1))) struct CleartextHTTPTests {
    /// TEST-NET-1 (RFC 5737): an address no one answers on; a connection to it fails or hangs.
    static let unreachable = "192.0.2.1"

    /// A client of `base` on the real socket transport (behind a recorder), with connect and attempt limits
    /// long enough that only a refusal can end a call quickly, unless `short`.
    private static func client(
        _ base: String, allowsCleartextHTTP: Bool = false, short: Bool = false,
        middleware: [any HTTPMiddleware] = []
    ) -> (HTTPClient, RecordingTransport) {
        let limit: Duration = short ? .milliseconds(500) : .seconds(30)
        let transport = RecordingTransport(inner: SocketTransport(configuration: .init(connectTimeout: limit)))
        let client = HTTPClient(
            configuration: .init(
                baseURL: URL(string: base)!, transport: transport,
                policy: CallPolicy(attemptTimeout: limit, deadline: limit * 2, maximumAttempts: 1),
                middleware: middleware, allowsCleartextHTTP: allowsCleartextHTTP))
        return (client, transport)
    }

    private static func send(_ client: HTTPClient, _ operation: HTTPOperation = .get("/notes")) async -> (
        HTTPFailure?, Duration
    ) {
        let start = ContinuousClock.now
        do {
            _ = try await client.send(operation)
            return (nil, ContinuousClock.now - start)
        } catch {
            return (error, ContinuousClock.now - start)
        }
    }

    private static func isRefusal(_ failure: HTTPFailure?) -> Bool {
        failure?.detail.unredacted.contains("allowsCleartextHTTP") == true
    }

    @Test func cleartextToAnotherHostIsRefusedBeforeAnythingIsSent() async throws {
        let bearer = CountingBearer()
        let (client, transport) = Self.client("http://\(Self.unreachable)", middleware: [bearer])
        for operation in [HTTPOperation.get("/notes"), .post("/notes", body: Data("{}".utf8))] {
            let (failure, took) = await Self.send(client, operation)
            let refused = try #require(failure)
            #expect(refused.kind == .technical, "\(refused)")
            #expect(refused.outcome == .notSent)  // nothing left the device
            #expect(refused.attempts == 0)
            #expect(refused.status == nil)
            #expect(Self.isRefusal(refused), "\(refused.detail.unredacted)")
            #expect(refused.detail.unredacted.contains(Self.unreachable))
            #expect(took < .seconds(2), "refused at once, not after a connect timeout (\(took))")
        }
        #expect(transport.urls.isEmpty)  // no socket was ever asked for
        #expect(bearer.prepared == 0)  // the token was not even put on a request
    }

    @Test func everyNonLoopbackSpellingIsRefused() async throws {
        for base in [
            "http://api.example.com", "HTTP://api.example.com:8080/v1", "http://10.0.0.7", "http://192.168.1.20:8080",
            "http://127.0.0.1.evil.example", "http://localhost.evil.example", "http://evil.example/127.0.0.1",
            "http://127.1", "http://0177.0.0.1", "http://[::2]", "http://[fe80::1%25lo0]", "http://%6Cocalhost",
            "http://localhost.",
        ] {
            let transport = RecordingTransport()
            let client = HTTPClient(configuration: .init(baseURL: URL(string: base)!, transport: transport))
            let (failure, _) = await Self.send(client)
            #expect(Self.isRefusal(failure), "\(base): \(failure.map { "\($0)" } ?? "sent")")
            #expect(failure?.outcome == .notSent, "\(base)")
            #expect(transport.urls.isEmpty, "\(base)")
        }
    }

    @Test func loopbackCleartextAndHTTPSAreSentAsBefore() async throws {
        // A real exchange with TestServer on 127.0.0.1, token and all.
        let server = try TestServer()
        server.enqueue(.json("{}"))
        let bearer = CountingBearer()
        let local = HTTPClient(configuration: .init(baseURL: server.baseURL, middleware: [bearer]))
        let (failure, _) = await Self.send(local)
        #expect(failure == nil, "\(String(describing: failure))")
        #expect(server.requests.first?.headers["Authorization"] == "Bearer secret")
        // Every loopback spelling, and https to any host, reach the transport.
        for base in [
            "http://localhost:8080", "http://LocalHost", "http://127.0.0.1", "http://127.45.6.200:9",
            "http://[::1]:8080", "http://[0:0:0:0:0:0:0:1]", "http://[::ffff:127.0.0.1]", "https://api.example.com",
            "https://192.168.1.20", "HTTPS://\(Self.unreachable)",
        ] {
            let transport = RecordingTransport()
            let client = HTTPClient(configuration: .init(baseURL: URL(string: base)!, transport: transport))
            let (failure, _) = await Self.send(client)
            #expect(failure == nil, "\(base): \(String(describing: failure))")
            #expect(transport.urls.count == 1, "\(base)")
        }
        // The same transport refuses its neighbour: the line runs between loopback and the rest.
        let (refused, _) = await Self.send(
            HTTPClient(configuration: .init(baseURL: URL(string: "http://128.0.0.1")!, transport: RecordingTransport()))
        )
        #expect(Self.isRefusal(refused))
    }

    @Test func theOptInLetsCleartextThroughToTheNetwork() async throws {
        let (refusing, refusingTransport) = Self.client("http://\(Self.unreachable)", short: true)
        #expect(Self.isRefusal(await Self.send(refusing).0))
        #expect(refusingTransport.urls.isEmpty)
        // Opted in: the client tries to connect; TEST-NET-1 answers nothing, so the attempt ends as no route or
        // as a timeout, not as the refusal.
        let (allowing, transport) = Self.client("http://\(Self.unreachable)", allowsCleartextHTTP: true, short: true)
        let (failure, _) = await Self.send(allowing)
        let ended = try #require(failure)
        #expect(!Self.isRefusal(ended), "\(ended.detail.unredacted)")
        #expect([.offline, .timeout].contains(ended.kind), "\(ended)")
        #expect(ended.attempts == 1)
        #expect(transport.urls.map(\.host) == [Self.unreachable])
    }

    @Test func httpsIsUntouchedOnTheRealTransport() async throws {
        let (cleartext, _) = Self.client("http://\(Self.unreachable)", short: true)
        #expect(Self.isRefusal(await Self.send(cleartext).0))
        // The same host over https goes to the network as it always did (and gets no answer there).
        let (client, transport) = Self.client("https://\(Self.unreachable)", short: true)
        let (failure, _) = await Self.send(client)
        let ended = try #require(failure)
        #expect(!Self.isRefusal(ended), "\(ended.detail.unredacted)")
        #expect([.offline, .timeout].contains(ended.kind), "\(ended)")
        #expect(transport.urls.count == 1)
    }

    @Test func aStreamToAnotherHostIsRefusedBeforeConnecting() async throws {
        let (client, transport) = Self.client("http://\(Self.unreachable)")
        let start = ContinuousClock.now
        let (events, failure) = await collect(
            client.events(
                .get("/events"), format: .serverSentEvents, policy: StreamPolicy(connectTimeout: .seconds(30))))
        #expect(events.isEmpty)
        let refused = try #require(failure)
        #expect(refused.kind == .technical)
        #expect(refused.outcome == .notSent)
        #expect(Self.isRefusal(refused), "\(refused.detail.unredacted)")
        #expect(ContinuousClock.now - start < .seconds(2))
        #expect(transport.urls.isEmpty)
    }

    @Test func aMiddlewareCannotMoveARequestToCleartext() async throws {
        let server = try TestServer()
        let transport = RecordingTransport()
        let client = HTTPClient(
            configuration: .init(
                baseURL: server.baseURL, transport: transport,
                middleware: [MovesTheRequest(to: URL(string: "http://api.example.com/collect")!)]))
        let (failure, _) = await Self.send(client)
        let refused = try #require(failure)
        #expect(Self.isRefusal(refused), "\(refused.detail.unredacted)")
        #expect(refused.outcome == .notSent)
        #expect(transport.urls.isEmpty)
    }
}
