public import Foundation
public import KeelCore

/// An HTTP/1.1 server on real loopback sockets that scripts faults, for testing network clients.
///
/// The server binds `127.0.0.1` on a free port when created and serves each connection on its own
/// thread. It records every request in order, answers from a queue of ``TestResponse``s (or a
/// ``Dispatcher``), and applies each response's delays, throttling and ``SocketEffect``. Modelled on
/// OkHttp's MockWebServer.
///
/// ```swift
/// let server = try TestServer()
/// defer { server.shutdown() }
/// server.enqueue(.json(#"{"id": 1}"#))
/// let (data, _) = try await URLSession.shared.data(from: server.url("/notes/1"))
/// let request = try await server.takeRequest()
/// #expect(request.path == "/notes/1")
/// ```
///
/// ## Topics
/// - Addresses: ``port``, ``baseURL``, ``url(_:)``
/// - Scripting: ``enqueue(_:)``, ``setDispatcher(_:)``, ``Dispatcher``
/// - Inspecting: ``takeRequest(timeout:)``, ``requests``, ``requestCount``, ``connectionEvents``,
///   ``awaitConnectionEvent(timeout:where:)``
/// - Stopping: ``shutdown()``
///
/// Waits (delays, throttling, stalls) are real time: this server is the far end of a real socket.
/// ``shutdown()`` interrupts all of them, closes every connection and joins every thread it started.
public final class TestServer: Sendable {
    /// Answers a request when the queue is not used: a function of the recorded request.
    ///
    /// A dispatcher sees the whole request, so effects that act before the request is read
    /// (``SocketEffect/disconnectAtStart``, ``SocketEffect/stallAtStart``, ``SocketEffect/resetAtStart``)
    /// can only be scripted through the queue.
    public struct Dispatcher: Sendable {
        let respond: @Sendable (RecordedRequest) -> TestResponse

        /// A dispatcher that answers with `respond(request)`.
        public init(_ respond: @escaping @Sendable (RecordedRequest) -> TestResponse) { self.respond = respond }

        /// What this dispatcher answers to `request` (for a dispatcher that delegates to another).
        public func response(to request: RecordedRequest) -> TestResponse { respond(request) }

        /// What a captive portal shows instead of the real backend.
        public enum Portal: Sendable {
            /// Every path answers 200 with an HTML login page.
            case loginPage
            /// Every path answers 302 to the portal's login URL on another origin.
            case redirect(to: URL)
        }

        /// A captive portal: intercepts every path, whatever the method, like hotel or airport Wi-Fi.
        public static func captivePortal(_ portal: Portal = .loginPage) -> Dispatcher {
            Dispatcher { _ in
                switch portal {
                case .loginPage:
                    var headers: HeaderFields = [
                        "Content-Type": "text/html; charset=utf-8", "Cache-Control": "no-store",
                    ]
                    headers["Connection"] = "close"
                    return TestResponse(status: 200, headers: headers, body: captivePortalLoginPage)
                case .redirect(let url):
                    return .redirect(to: url, status: 302)
                }
            }
        }
    }

    /// A request the server refuses at the HTTP layer, before any dispatcher or queue sees it (a malformed
    /// head, a body too large, a head or body that stopped arriving): the status it is answered with and
    /// why — the pair ``ConnectionEvent/Kind/rejected(status:reason:)`` records.
    public struct Rejection: Sendable, Equatable {
        /// 400, 408, 413, 414, 431 or 505.
        public let status: Int
        /// What was wrong, for a person reading a log (`malformed Content-Length`).
        public let reason: String

        /// A rejection with `status` for `reason`.
        public init(status: Int, reason: String) {
            self.status = status
            self.reason = reason
        }
    }

    /// The header fields and body a ``Rejection`` is answered with (see
    /// ``Configuration/rejectionAnswer``). The status line, `Content-Length` and `Connection: close` are
    /// always the server's own: a rejected connection is closed after its answer.
    public struct RejectionAnswer: Sendable {
        /// Header fields; `Content-Length`, `Transfer-Encoding` and `Connection` given here are replaced.
        public var headers: HeaderFields
        /// The body.
        public var body: Data

        /// An answer with `headers` and `body`.
        public init(headers: HeaderFields = [:], body: Data = Data()) {
            self.headers = headers
            self.body = body
        }

        /// The default: plain text naming the reason (`TestServer rejected the request: <reason>`).
        public static func plainText(_ rejection: Rejection) -> RejectionAnswer {
            RejectionAnswer(
                headers: ["Content-Type": "text/plain; charset=utf-8"],
                body: Data("TestServer rejected the request: \(rejection.reason)\n".utf8))
        }
    }

    /// Settings fixed when the server starts.
    public struct Configuration: Sendable {
        /// The answer when the queue is empty and no dispatcher is set. Default: 404 saying so.
        public var responseWhenQueueIsEmpty: TestResponse
        /// Request heads larger than this are rejected: 414 when the request line alone is, else 431. Default
        /// 64 KiB.
        public var maximumHeadBytes: Int
        /// Request bodies larger than this are rejected with 413. Default 64 MiB.
        public var maximumBodyBytes: Int
        /// The port to listen on (0...65535); 0 (the default) lets the system choose a free one. Tests
        /// should keep 0.
        public var port: Int
        /// Whether every request is kept for ``TestServer/requests`` and ``TestServer/takeRequest(timeout:)``
        /// (the default). A long-running server answering through a ``Dispatcher`` (a reference backend)
        /// turns it off so that memory does not grow with traffic; ``TestServer/requestCount`` still counts,
        /// and ``TestServer/connectionEvents`` keeps only the newest thousand or so events.
        public var recordsRequests: Bool
        /// How long a connection may go without sending a byte — between requests, or in the middle of one
        /// (a slow head or body) — before the server closes it. Nil (the default): forever, as tests of slow
        /// clients need. A long-running server sets it, so idle connections cannot hold its threads forever.
        public var idleTimeout: Duration?
        /// Renders a request refused at the HTTP layer (a ``Rejection``) into header fields and a body.
        /// Default: ``RejectionAnswer/plainText(_:)``. A server that speaks an API contract (the reference
        /// backend) answers these in the contract's error format instead, so a client reads a machine code
        /// here as from any other failure.
        public var rejectionAnswer: @Sendable (Rejection) -> RejectionAnswer
        /// How connection threads are made (tests replace it to make thread creation fail on purpose, as it
        /// does at a process's memory or thread limit).
        package var spawnsConnectionThread:
            @Sendable (String, @escaping @Sendable () -> Void) -> Result<POSIXThread, POSIXThread.SpawnFailure> =
                POSIXThread.trySpawn

        /// Settings; the defaults suit tests.
        public init(
            port: Int = 0,
            responseWhenQueueIsEmpty: TestResponse = TestResponse(
                status: 404, body: "TestServer: no scripted response for this request\n"),
            maximumHeadBytes: Int = 64 * 1024,
            maximumBodyBytes: Int = 64 * 1024 * 1024,
            recordsRequests: Bool = true,
            idleTimeout: Duration? = nil,
            rejectionAnswer: @escaping @Sendable (Rejection) -> RejectionAnswer = RejectionAnswer.plainText
        ) {
            self.rejectionAnswer = rejectionAnswer
            precondition(
                idleTimeout.map { $0 > .zero } ?? true, "TestServer.Configuration.idleTimeout must be positive")
            self.idleTimeout = idleTimeout
            self.recordsRequests = recordsRequests
            self.responseWhenQueueIsEmpty = responseWhenQueueIsEmpty
            self.maximumHeadBytes = maximumHeadBytes
            self.maximumBodyBytes = maximumBodyBytes
            precondition((0...65_535).contains(port), "TestServer.Configuration.port must be 0...65535, not \(port)")
            self.port = port
        }
    }

    /// The port the server listens on (chosen by the system).
    public var port: Int { Int(core.port) }
    /// `http://127.0.0.1:<port>`.
    public var baseURL: URL { URL(string: "http://127.0.0.1:\(core.port)")! }

    /// A number unique to this server within the process; its threads are named `kts<serial>a` (accept)
    /// and `kts<serial>c` (connections), so diagnostics can tell them from other servers' threads.
    package var serialNumber: Int { core.serial }

    /// The inode numbers of the sockets the server holds open now (listener and connections), for
    /// leak diagnostics: after ``shutdown()`` none of them may remain open in the process.
    package var socketInodes: Set<UInt64> {
        core.threads.withLock { registry in
            guard !core.isShutDown else { return [] }
            return Set(([core.listenDescriptor] + registry.openDescriptors.values).compactMap(POSIX.inode(of:)))
        }
    }

    /// The inode numbers of the server's wake pipe, which lives as long as the server object.
    package var wakePipeInodes: Set<UInt64> {
        Set([core.wakeDescriptors.read, core.wakeDescriptors.write].compactMap(POSIX.inode(of:)))
    }

    /// The running server. Its threads hold the core, not this handle, so dropping the last reference
    /// to a `TestServer` shuts it down.
    let core: ServerCore

    /// Starts a server on `127.0.0.1` and a free port (or ``Configuration/port``).
    ///
    /// - Throws: ``TestServerError`` when the socket cannot be created or bound.
    public init(configuration: Configuration = Configuration(), dispatcher: Dispatcher? = nil) throws {
        core = try ServerCore(configuration: configuration, dispatcher: dispatcher)
    }

    deinit {
        core.shutdown()
    }

    /// The absolute URL of `path` on this server (`path` may carry a query: `/notes?since=1`).
    ///
    /// Characters a URL cannot carry as they are (a space, non-ASCII letters) are percent-encoded;
    /// existing percent-escapes are kept (`/a%20b` and `/a b` name the same resource).
    public func url(_ path: String = "/") -> URL {
        Self.url(port: port, path: path)
    }

    /// `http://127.0.0.1:<port><path>`, with `path` percent-encoded where it must be.
    static func url(port: Int, path: String) -> URL {
        let normalized = path.hasPrefix("/") ? path : "/" + path
        let (pathPart, query) =
            normalized.firstIndex(of: "?").map { (normalized[..<$0], normalized[$0...].dropFirst()) }
            ?? (normalized[...], nil)
        // `%` itself stays allowed so that existing escapes are not escaped twice.
        var pathCharacters = CharacterSet.urlPathAllowed
        pathCharacters.insert("%")
        var queryCharacters = CharacterSet.urlQueryAllowed
        queryCharacters.insert("%")
        var text =
            "http://127.0.0.1:\(port)" + (pathPart.addingPercentEncoding(withAllowedCharacters: pathCharacters) ?? "/")
        if let query { text += "?" + (query.addingPercentEncoding(withAllowedCharacters: queryCharacters) ?? "") }
        guard let url = URL(string: text) else {
            preconditionFailure("TestServer.url: cannot make a URL of \(path.debugDescription)")
        }
        return url
    }

    // MARK: - Scripting

    /// Appends `response` to the queue; requests are answered in queue order.
    public func enqueue(_ response: TestResponse) {
        core.state.withLock { $0.queue.append(response) }
    }

    /// Answers with `dispatcher` instead of the queue; `nil` returns to the queue.
    ///
    /// A dispatcher that captures the server strongly keeps it alive (server → dispatcher → server):
    /// capture it weakly, or call ``shutdown()`` explicitly.
    public func setDispatcher(_ dispatcher: Dispatcher?) {
        core.state.withLock { $0.dispatcher = dispatcher }
    }

    // MARK: - Inspecting

    /// Every request received so far, in arrival order (including requests cut short by a socket effect).
    public var requests: [RecordedRequest] { core.state.withLock { $0.requests } }

    /// How many requests have been received.
    public var requestCount: Int { core.state.withLock { $0.requestTotal } }

    /// Every connection event so far, in order (with `recordsRequests: false`, the newest thousand or so).
    public var connectionEvents: [ConnectionEvent] { core.state.withLock { $0.events } }

    /// The next request not yet taken, waiting for it to arrive if needed (like MockWebServer's `takeRequest`).
    ///
    /// - Throws: ``WaitTimeout`` when no request arrives within `timeout` (real time);
    ///   ``TestServerError`` when the server is (or gets) shut down with no request left to take.
    public func takeRequest(timeout: Duration = .seconds(10)) async throws -> RecordedRequest {
        try await core.state.wait(timeout: timeout, for: "a request to \(baseURL)") {
            state -> Result<RecordedRequest, TestServerError>? in
            guard state.takenCount < state.requests.count else {
                return state.isShutDown
                    ? .failure(TestServerError(code: .shutDown, message: "the server was shut down")) : nil
            }
            state.takenCount += 1
            return .success(state.requests[state.takenCount - 1])
        }.get()
    }

    /// Waits for the first connection event (past — among those kept, see ``connectionEvents`` — or future)
    /// matching `predicate`.
    ///
    /// `predicate` runs under the server's lock, on the server's threads too: it must not call back into the
    /// server (``requestCount``, ``requests``, another wait), which would deadlock.
    ///
    /// - Throws: ``WaitTimeout`` when none happens within `timeout` (real time).
    public func awaitConnectionEvent(
        timeout: Duration = .seconds(10),
        where predicate: @escaping @Sendable (ConnectionEvent) -> Bool
    ) async throws -> ConnectionEvent {
        try await core.state.wait(timeout: timeout, for: "a connection event on \(baseURL)") { state in
            state.events.first(where: predicate)
        }
    }

    // MARK: - Stopping

    /// Stops accepting, interrupts every delay and stall, closes every connection and joins every thread.
    /// Idempotent; also done when the last reference to the server goes away. Unused scripted responses
    /// are dropped.
    public func shutdown() {
        core.shutdown()
    }

    /// Stops gracefully: refuses new connections (on Linux a connect is refused at once; on Apple platforms,
    /// where a listening socket cannot be shut down, one may wait in the backlog until the drain ends and is
    /// then reset), lets every request already
    /// handed to the dispatcher (or the queue) get its response written — waiting at most `timeout`, real
    /// time — then does what ``shutdown()`` does. What a server process does on SIGTERM.
    ///
    /// A request is either handed on and answered, or never handed on: once nothing is in flight, the drain
    /// stops taking exchanges in the same step, so a request arriving on a kept-alive connection after that
    /// is closed unread instead of applied and cut off. Answers written during the drain carry
    /// `Connection: close`. An exchange stalled on purpose (`noResponse`, `halfCloseAfterRequest`,
    /// `shutdownOutputAtEnd`) is not waited for.
    public func drain(timeout: Duration = .seconds(10)) async {
        await core.drain(timeout: timeout)
    }
}

let captivePortalLoginPage = """
    <!DOCTYPE html>
    <html><head><title>Welcome to Guest Wi-Fi</title></head>
    <body><h1>Sign in to continue</h1>
    <form method="post" action="/login"><input name="room"><button>Connect</button></form>
    </body></html>

    """
