public import Foundation
public import KeelCore

/// The seam between Keel's HTTP logic and the network: send one request, get one response.
///
/// The default is ``SocketTransport`` on Linux and ``URLSessionTransport`` on Apple platforms. Logic never
/// touches either directly, so a test can put a fault at this seam when a socket cannot express it. A
/// transport that can also end an exchange on a signal should adopt ``InterruptibleHTTPTransport``: its
/// attempts then need no timer task of their own. Implementations must honour task cancellation
/// (stop the exchange, close the connection), must not follow redirects (Keel judges them), and must
/// stop reading a body as soon as it exceeds ``TransportRequest/maximumResponseBytes`` (a declared
/// `Content-Length` over the limit is refused before any of the body is read).
public protocol HTTPTransport: Sendable {
    /// Performs one exchange.
    ///
    /// - Throws: ``TransportError`` when no complete response arrived.
    func send(_ request: TransportRequest) async throws(TransportError) -> TransportResponse
}

/// One HTTP request as the transport sends it.
///
/// (Named for the transport seam rather than `HTTPRequest`, so that apps importing swift-http-types
/// beside Keel need no module-qualified names.)
public struct TransportRequest: Sendable {
    /// The method (`GET`, `POST`, ...).
    public var method: String
    /// The absolute URL.
    public var url: URL {
        didSet { urlWasSet = true }
    }
    /// Whether ``url`` was set after the request was made (a middleware that moved it): only such a request's
    /// URL is checked again before it goes (a comparison of URLs on every attempt cost keel-bench trace.overhead).
    var urlWasSet = false
    /// Header fields in order.
    public var headers: HeaderFields
    /// The body, if any.
    public var body: Data?
    /// A backstop for the transport's own timer. Keel enforces the real attempt timeout itself (on the
    /// injected clock); the transport's timer only guards against a runaway exchange.
    public var transportTimeout: Duration
    /// Larger response bodies are cut off with ``ErrorCode/responseTooLarge``.
    public var maximumResponseBytes: Int
    /// Whether the request may go out on a pooled keep-alive connection. False for operations that must
    /// never be sent twice: an HTTP stack may silently re-send a request whose reused connection turns out
    /// dead (libcurl, behind FoundationNetworking, does so even for POST), so such requests get a fresh
    /// connection of their own.
    public var reusesConnections: Bool

    /// A request; the defaults suit a small JSON exchange.
    public init(
        method: String, url: URL, headers: HeaderFields = [:], body: Data? = nil,
        transportTimeout: Duration = .seconds(60), maximumResponseBytes: Int = 16 * 1024 * 1024,
        reusesConnections: Bool = true
    ) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.transportTimeout = transportTimeout
        self.maximumResponseBytes = maximumResponseBytes
        self.reusesConnections = reusesConnections
    }
}

/// One HTTP response as the transport received it.
public struct TransportResponse: Sendable {
    /// The status code.
    public var status: Int
    /// Header fields; look them up with ``header(_:)`` (case-insensitive).
    public var headers: HeaderFields
    /// The whole body.
    public var body: Data

    /// A response.
    public init(status: Int, headers: HeaderFields = [:], body: Data = Data()) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// The first value of header `name`, compared case-insensitively.
    public func header(_ name: String) -> String? { headers[name] }
}

/// Why a transport produced no response, and whether the request may have reached the server.
public struct TransportError: KeelError, CustomStringConvertible {
    /// The kind of transport failure.
    public typealias Code = ErrorCode<TransportError>

    /// The kind of failure.
    public let code: Code
    /// Whether any byte of the request may have left the device. False only when the transport can
    /// prove it did not (no route, no connection).
    public let requestMayHaveBeenSent: Bool
    /// The platform's description, for logs only (never shown to users).
    public let detail: String

    /// A transport failure.
    public init(code: Code, requestMayHaveBeenSent: Bool, detail: String) {
        self.code = code
        self.requestMayHaveBeenSent = requestMayHaveBeenSent
        self.detail = detail
    }

    /// A developer-facing explanation: the code, `(not sent)` when the request provably did not leave, and the
    /// platform's detail; never shown to users.
    public var description: String { "\(code)\(requestMayHaveBeenSent ? "" : " (not sent)"): \(detail)" }
}

extension ErrorCode where Domain == TransportError {
    /// The device has no network.
    public static var notConnected: Self { Self("notConnected") }
    /// The host name did not resolve.
    public static var dnsFailed: Self { Self("dnsFailed") }
    /// The connection was refused or could not be made.
    public static var cannotConnect: Self { Self("cannotConnect") }
    /// The transport's own timer fired.
    public static var timedOut: Self { Self("timedOut") }
    /// The connection broke after it was made.
    public static var connectionLost: Self { Self("connectionLost") }
    /// The server's answer was not valid HTTP (garbage status line, bad framing, truncated body).
    public static var malformedResponse: Self { Self("malformedResponse") }
    /// The body exceeded ``TransportRequest/maximumResponseBytes`` (or its declared length did).
    public static var responseTooLarge: Self { Self("responseTooLarge") }
    /// The exchange was cancelled.
    public static var cancelled: Self { Self("cancelled") }
    /// Anything else.
    public static var other: Self { Self("other") }
    /// The TLS handshake failed: an untrusted or expired certificate, one for another host, no common
    /// protocol version. Nothing was sent.
    public static var secureConnectionFailed: Self { Self("secureConnectionFailed") }
}

/// What a header field must be to go on the wire as it is: a token for a name, no CR, LF or NUL in a value
/// (either would end the field early and smuggle whatever follows). Every transport checks it before anything
/// is sent: SocketTransport as it writes the head, URLSessionTransport up front (libcurl, under URLSession on
/// Linux, writes fields as they are).
enum FieldSyntax {
    /// Whether `name` is a token, checked on its contiguous bytes where it has them (every native string).
    static func isFieldName(_ name: String) -> Bool {
        name.utf8.withContiguousStorageIfAvailable { HeaderFields.isToken($0) } ?? HeaderFields.isToken(name.utf8)
    }

    /// Whether `value` has a CR, LF or NUL.
    static func hasLineBreakOrNUL(_ value: String) -> Bool {
        func isBreak(_ byte: UInt8) -> Bool { byte == 13 || byte == 10 || byte == 0 }
        return value.utf8.withContiguousStorageIfAvailable { $0.contains(where: isBreak) }
            ?? value.utf8.contains(where: isBreak)
    }

    /// A refusal (nothing sent) of the first field of `headers` that cannot go on the wire as it is.
    static func hostileField(in headers: HeaderFields) -> TransportError? {
        for field in headers where !isFieldName(field.name) || hasLineBreakOrNUL(field.value) {
            return TransportError(
                code: .other, requestMayHaveBeenSent: false,
                detail: "header field \(field.name.debugDescription) has a line break or is not a field name")
        }
        return nil
    }
}
