public import Foundation
public import KeelCore

/// A scripted response of the ``TestServer``: what to send, how slowly, and what to do to the socket.
///
/// Modelled on OkHttp MockWebServer's `MockResponse` and `SocketPolicy`.
///
/// ```swift
/// server.enqueue(TestResponse(status: 503, headers: ["Retry-After": "2"]))
/// server.enqueue(TestResponse(body: "ok").throttled(bytes: 1, per: .milliseconds(10)))
/// server.enqueue(TestResponse(socketEffect: .noResponse))
/// ```
public struct TestResponse: Sendable {
    /// The status code.
    public var status: Int
    /// The reason phrase; a standard one is used when nil.
    public var reason: String?
    /// Header fields. `Content-Length` (or `Transfer-Encoding: chunked`) and `Connection: close` are
    /// added when absent and needed.
    public var headers: HeaderFields
    /// The body bytes (not sent for `HEAD` requests and 1xx/204/304 statuses).
    public var body: Data
    /// When set, the body is this many bytes generated while sending (``body`` is ignored): for bodies too
    /// large to hold in memory, such as a 1 GiB download. See ``generatedBody(count:)``.
    public var generatedBodyCount: Int?
    /// When set, the body is sent chunked in chunks of at most this many bytes.
    public var chunkSize: Int?
    /// Wait before sending the status line and headers.
    public var headersDelay: Duration
    /// Wait after the headers, before the first body byte.
    public var bodyDelay: Duration
    /// Send the body slowly: this many bytes, then a pause of `period`, until done.
    public var throttle: Throttle?
    /// What to do to the connection around this response.
    public var socketEffect: SocketEffect
    /// When set, these bytes are written instead of a status line, headers and body: for malformed
    /// responses (a garbage status line, a lying `Content-Length`, broken chunking, huge headers).
    public var rawBytes: Data?

    /// Body throttling: `bytes` per `period`.
    public struct Throttle: Sendable, Equatable {
        /// Bytes per slice (at least 1).
        public let bytes: Int
        /// Pause after each slice.
        public let period: Duration
        /// `bytes` (at least 1) per `period`.
        public init(bytes: Int, period: Duration) {
            precondition(bytes > 0, "TestResponse.Throttle needs a positive byte count")
            self.bytes = bytes
            self.period = period
        }
    }

    /// A response with the given parts. The defaults are `200`, no headers, empty body, keep-alive.
    public init(
        status: Int = 200,
        reason: String? = nil,
        headers: HeaderFields = [:],
        body: Data = Data(),
        socketEffect: SocketEffect = .keepOpen
    ) {
        precondition((100...999).contains(status), "TestResponse status \(status) is not a three-digit code")
        self.status = status
        self.reason = reason
        self.headers = headers
        self.body = body
        self.generatedBodyCount = nil
        self.chunkSize = nil
        self.headersDelay = .zero
        self.bodyDelay = .zero
        self.throttle = nil
        self.socketEffect = socketEffect
        self.rawBytes = nil
    }

    /// A response whose body is `text` in UTF-8.
    public init(
        status: Int = 200, headers: HeaderFields = [:], body text: String, socketEffect: SocketEffect = .keepOpen
    ) {
        self.init(status: status, headers: headers, body: Data(text.utf8), socketEffect: socketEffect)
    }

    /// A response with the given socket effect and nothing else of note.
    public init(socketEffect: SocketEffect) {
        self.init(status: 200, socketEffect: socketEffect)
    }

    // MARK: - Modifiers

    /// This response, sent chunked in chunks of at most `size` bytes.
    public func chunked(size: Int) -> TestResponse {
        precondition(size > 0, "chunk size must be positive")
        var copy = self
        copy.chunkSize = size
        return copy
    }

    /// This response, with its headers sent after `delay`.
    public func delayingHeaders(by delay: Duration) -> TestResponse {
        var copy = self
        copy.headersDelay = delay
        return copy
    }

    /// This response, with its body started `delay` after the headers.
    public func delayingBody(by delay: Duration) -> TestResponse {
        var copy = self
        copy.bodyDelay = delay
        return copy
    }

    /// This response, with its body sent `bytes` at a time every `period`.
    public func throttled(bytes: Int, per period: Duration) -> TestResponse {
        var copy = self
        copy.throttle = Throttle(bytes: bytes, period: period)
        return copy
    }

    /// This response, with `effect` applied to its connection.
    public func with(_ effect: SocketEffect) -> TestResponse {
        var copy = self
        copy.socketEffect = effect
        return copy
    }

    /// Whether the scripted headers say `Connection: close` (the server then closes after sending).
    var asksToClose: Bool {
        headers.tokens(for: "Connection").contains("close")
    }

    /// This response, with a body of `count` bytes (`x`) generated while it is sent instead of held in
    /// memory. Combine with ``chunked(size:)`` for chunked framing; otherwise `Content-Length` is `count`.
    public func generatedBody(count: Int) -> TestResponse {
        precondition(count >= 0, "generated body size must not be negative")
        var copy = self
        copy.generatedBodyCount = count
        return copy
    }

    /// The body's length in bytes.
    var bodyCount: Int { generatedBodyCount ?? body.count }

    // MARK: - Helpers

    /// A response written exactly as `bytes`, then handled by `socketEffect` (default: close after it,
    /// since a malformed response leaves the connection in an unknown state).
    public static func raw(_ bytes: Data, socketEffect: SocketEffect = .disconnectAtEnd) -> TestResponse {
        var response = TestResponse(status: 200, socketEffect: socketEffect)
        response.rawBytes = bytes
        return response
    }

    /// A response written exactly as `text` (UTF-8); see ``raw(_:socketEffect:)-(Data,_)``.
    public static func raw(_ text: String, socketEffect: SocketEffect = .disconnectAtEnd) -> TestResponse {
        raw(Data(text.utf8), socketEffect: socketEffect)
    }

    /// A JSON response: `Content-Type: application/json` and the given body.
    public static func json(_ text: String, status: Int = 200, headers: HeaderFields = [:]) -> TestResponse {
        var fields = headers
        fields["Content-Type"] = "application/json"
        return TestResponse(status: status, headers: fields, body: text)
    }

    /// A redirect to `location` (absolute URL or path) with the given 3xx status.
    public static func redirect(to location: String, status: Int = 302) -> TestResponse {
        precondition([301, 302, 303, 307, 308].contains(status), "redirect status must be 301, 302, 303, 307 or 308")
        return TestResponse(status: status, headers: ["Location": location], body: Data())
    }

    /// A redirect to `url` with the given 3xx status.
    public static func redirect(to url: URL, status: Int = 302) -> TestResponse {
        redirect(to: url.absoluteString, status: status)
    }
}
