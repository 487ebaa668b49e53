import Foundation
import KeelCore

/// An HTTP/1.1 transport over Keel's own sockets (TLS through OpenSSL on Linux): the one to use where
/// ``URLSessionTransport`` cannot keep its promises.
///
/// It exists because FoundationNetworking on Linux keeps downloading a response after its task is
/// cancelled: a 1 GiB chunked body over ``TransportRequest/maximumResponseBytes`` still arrived in full and
/// drove the process to over 1 GB. Here the limit bounds memory: a declared `Content-Length` over it is
/// refused before any of the body is read, and a chunked or close-delimited body is cut off the moment
/// it passes the limit; either way the connection is closed at once.
///
/// What it does, and deliberately does not do:
/// - `http` and `https` (TLS 1.2+, chain verified against the system trust store or
///   ``Configuration/trustedCertificatesFile``, the certificate must name the host; on Apple platforms
///   use ``URLSessionTransport`` for `https`);
/// - keep-alive connections per origin for requests that allow reuse; a request that must never be sent
///   twice (``TransportRequest/reusesConnections`` false) gets a fresh connection and `Connection: close`,
///   and nothing here ever re-sends a request by itself;
/// - redirects are returned, never followed (Keel judges them); cookies and caches do not exist;
/// - cancellation closes the connection at once; ``TransportRequest/transportTimeout`` bounds the whole
///   exchange; header names and values with line breaks are refused before anything is sent.
///
/// ## Topics
/// - ``Configuration``
/// - ``init(configuration:)``
/// - ``send(_:)``
/// - ``send(_:interruption:)``
public final class SocketTransport: InterruptibleHTTPTransport {
    /// Settings of a ``SocketTransport``.
    public struct Configuration: Sendable {
        /// The longest a connection (name resolution, TCP and TLS handshakes) may take.
        public var connectTimeout: Duration
        /// Larger response heads (status line and header fields) are a malformed response.
        public var maximumHeadBytes: Int
        /// Idle keep-alive connections kept per origin.
        public var maximumIdleConnectionsPerOrigin: Int
        /// How long an idle connection is kept for reuse. A connection a NAT or a network change silently
        /// dropped raises no error until a request on it times out, so one idle for longer is closed instead
        /// of used (`.zero`: never reused).
        public var maximumIdleTime: Duration
        /// A PEM file of trusted certificates for `https`; nil for the system's trust store.
        public var trustedCertificatesFile: String?
        /// Runs on the worker thread before a new connection resolves its host (tests make it block, as a
        /// resolver that never answers does).
        package var beforeConnecting: (@Sendable () -> Void)?

        /// Settings; the defaults suit an app talking to its API.
        public init(
            connectTimeout: Duration = .seconds(15), maximumHeadBytes: Int = 64 * 1024,
            maximumIdleConnectionsPerOrigin: Int = 4, trustedCertificatesFile: String? = nil,
            maximumIdleTime: Duration = .seconds(60)
        ) {
            precondition(connectTimeout > .zero, "SocketTransport.connectTimeout must be positive")
            precondition(maximumHeadBytes >= 1024, "SocketTransport.maximumHeadBytes must be at least 1 KiB")
            self.connectTimeout = connectTimeout
            self.maximumHeadBytes = maximumHeadBytes
            self.maximumIdleConnectionsPerOrigin = maximumIdleConnectionsPerOrigin
            self.trustedCertificatesFile = trustedCertificatesFile
            self.maximumIdleTime = maximumIdleTime
        }
    }

    /// The settings it was made with.
    public let configuration: Configuration
    /// Idle connections per origin, with when each became idle.
    private let idle = Locked<[Endpoint: [(socket: ClientSocket, since: ContinuousClock.Instant)]]>([:])

    /// A transport with `configuration`.
    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
    }

    deinit {
        for sockets in idle.withLock({ $0.values }) { sockets.forEach { $0.socket.close() } }
    }

    /// Performs one exchange on a worker thread (socket I/O blocks); cancelling the task, or `interruption`,
    /// closes the connection at once. (``send(_:)`` is this with an interruption nothing gives.)
    ///
    /// - Throws: ``TransportError``.
    public func send(_ request: TransportRequest, interruption: TransportInterruption) async throws(TransportError)
        -> TransportResponse
    {
        let exchange = Exchange()
        return try await onWorker(exchange, interruption: interruption) { continuation in
            continuation.resume(
                with: Result { () throws(TransportError) -> TransportResponse in try self.perform(request, exchange) })
        }
    }

    /// Runs `work` on a worker thread (socket I/O blocks) and waits for it to hand back its result;
    /// cancelling the calling task cancels `exchange`, which closes its connection at once, and ends the
    /// wait at once too: a worker stuck where nothing can interrupt it (`getaddrinfo` on a resolver that
    /// never answers) no longer holds the call past its timeout or deadline. Such a worker finishes in the
    /// background; its connection is closed when it gets one.
    ///
    /// An `interruption` (the client's attempt timer) ends the exchange the same way, as `timedOut`.
    func onWorker<Value: Sendable>(
        _ exchange: Exchange, interruption: TransportInterruption? = nil,
        _ work: @escaping @Sendable (FirstResult<Value>) -> Void
    ) async throws(TransportError) -> Value {
        let result = FirstResult<Value>()
        /// Closes the connection and ends the wait with `code` (a cancel, or the attempt timer).
        @Sendable func stop(_ code: TransportError.Code, _ detail: String) {
            exchange.cancel()
            result.resume(
                throwing: TransportError(code: code, requestMayHaveBeenSent: exchange.mayHaveSent, detail: detail))
        }
        // Before the worker starts: an interruption that came first ends the exchange before it is sent.
        interruption?.onInterrupt { stop(.timedOut, "interrupted by the attempt timer") }
        do {
            return try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Value, any Error>) in
                    result.start(continuation)
                    DispatchQueue.global().async { work(result) }
                }
            } onCancel: {
                stop(
                    .cancelled,
                    exchange.mayHaveSent ? "cancelled while sending or receiving" : "cancelled before sending")
            }
        } catch let error as TransportError {
            throw error
        } catch {
            throw TransportError(code: .other, requestMayHaveBeenSent: true, detail: "\(error)")
        }
    }

    // MARK: - One exchange

    /// Where a connection goes: scheme, host and port.
    struct Endpoint: Hashable, Sendable {
        let isSecure: Bool
        let host: String
        let port: Int
    }

    /// The socket of an exchange, so that cancellation (from another thread) can reach it.
    final class Exchange: Sendable {
        private let state = Locked<(socket: ClientSocket?, isCancelled: Bool)>((nil, false))
        private let sending = Locked(false)

        /// Called just before the first byte of the request is written.
        func markSending() { sending.withLock { $0 = true } }
        /// Whether the request may have left (its writing had begun).
        var mayHaveSent: Bool { sending.withLock { $0 } }

        /// Attaches `socket`; false when the exchange was cancelled already.
        func attach(_ socket: ClientSocket) -> Bool {
            state.withLock { state -> Bool in
                guard !state.isCancelled else { return false }
                state.socket = socket
                return true
            }
        }

        /// Lets go of the socket before it is pooled or closed, so that a late cancel cannot reach a
        /// socket another exchange now uses; true when the exchange was cancelled meanwhile.
        func detach() -> Bool {
            state.withLock { state -> Bool in
                state.socket = nil
                return state.isCancelled
            }
        }

        /// Cancels the attached socket (and any later attach). The socket is cancelled under the lock, so
        /// it cannot have been detached and handed to another exchange in between.
        func cancel() {
            state.withLock { state in
                state.isCancelled = true
                state.socket?.cancel()
            }
        }
    }

    private func perform(_ request: TransportRequest, _ exchange: Exchange) throws(TransportError) -> TransportResponse
    {
        let start = ContinuousClock.now
        let deadline = start + request.transportTimeout
        let target = try Self.target(of: request)
        let head = try Self.head(of: request, target: target)

        // A pooled connection, or a new one (attached before it connects, so a cancel stops the connect).
        // Nothing has been sent before this point.
        let socket: ClientSocket
        var isPooled = false
        if request.reusesConnections, let reused = takeIdle(target.endpoint) {
            guard exchange.attach(reused) else {
                reused.close()
                throw TransportError(
                    code: .cancelled, requestMayHaveBeenSent: false, detail: "cancelled before sending")
            }
            socket = reused
            isPooled = true
        } else {
            socket = try connect(
                target.endpoint, deadline: min(deadline, start + configuration.connectTimeout), exchange: exchange)
        }
        // The exchange lets go of the socket exactly once: a cancel that arrives after the socket went to
        // the pool must not close it there (its descriptor number could then be reused by a new connection
        // that the pool would hand out as this one).
        var keepsSocket = false
        var detached = false
        defer {
            if !detached, exchange.detach() { keepsSocket = false }
            if !keepsSocket { socket.close() }
        }

        exchange.markSending()
        do throws(ClientSocket.Failure) {
            try socket.write(head + [UInt8](request.body ?? Data()), deadline: deadline)
        } catch {
            throw Self.failure(
                error, sent: true, phase: isPooled ? "writing on a pooled connection" : "writing the request")
        }

        var reader = ResponseReader(
            socket: socket, deadline: deadline, maximumHeadBytes: configuration.maximumHeadBytes)
        let response: TransportResponse
        let reusable: Bool
        do throws(ResponseReadFailure) {
            (response, reusable) = try reader.read(
                method: request.method, limit: request.maximumResponseBytes)
        } catch {
            switch error {
            case .socket(let failure): throw Self.failure(failure, sent: true, phase: "reading the response")
            case .malformed(let reason):
                throw TransportError(code: .malformedResponse, requestMayHaveBeenSent: true, detail: reason)
            case .tooLarge(let reason):
                throw TransportError(code: .responseTooLarge, requestMayHaveBeenSent: true, detail: reason)
            case .closedWithoutResponse:
                // A reused connection the server closed while idle broke; a fresh one it accepted and then
                // closed without a word is a malformed exchange. Either way the request may have arrived.
                throw isPooled
                    ? TransportError(
                        code: .connectionLost, requestMayHaveBeenSent: true,
                        detail: "a reused connection closed before a response")
                    : TransportError(
                        code: .malformedResponse, requestMayHaveBeenSent: true,
                        detail: "the server closed the connection without answering")
            }
        }
        if reusable && request.reusesConnections {
            detached = true
            if !exchange.detach() { keepsSocket = putIdle(socket, target.endpoint) }
        }
        return response
    }

    func connect(_ endpoint: Endpoint, deadline: ContinuousClock.Instant, exchange: Exchange)
        throws(TransportError) -> ClientSocket
    {
        configuration.beforeConnecting?()
        do throws(ClientSocket.Failure) {
            let tls =
                endpoint.isSecure ? TLSSettings(trustedCertificatesFile: configuration.trustedCertificatesFile) : nil
            return try ClientSocket.connect(
                host: endpoint.host, port: endpoint.port, tls: tls, deadline: deadline, register: exchange.attach)
        } catch {
            throw Self.failure(error, sent: false, phase: "connecting to \(endpoint.host):\(endpoint.port)")
        }
    }

    static func failure(_ failure: ClientSocket.Failure, sent: Bool, phase: String) -> TransportError {
        switch failure {
        case .dns(let text):
            return TransportError(code: .dnsFailed, requestMayHaveBeenSent: sent, detail: "\(phase): \(text)")
        case .unreachable(let text):
            return TransportError(code: .notConnected, requestMayHaveBeenSent: sent, detail: "\(phase): \(text)")
        case .refused(let text):
            return TransportError(code: .cannotConnect, requestMayHaveBeenSent: sent, detail: "\(phase): \(text)")
        case .connectTimedOut:
            return TransportError(code: .timedOut, requestMayHaveBeenSent: sent, detail: "\(phase): timed out")
        case .tls(let text):
            return TransportError(
                code: .secureConnectionFailed, requestMayHaveBeenSent: sent, detail: "\(phase): \(text)")
        case .timedOut:
            return TransportError(code: .timedOut, requestMayHaveBeenSent: sent, detail: "\(phase): timed out")
        case .broken(let text):
            return TransportError(code: .connectionLost, requestMayHaveBeenSent: sent, detail: "\(phase): \(text)")
        case .cancelled:
            return TransportError(code: .cancelled, requestMayHaveBeenSent: sent, detail: "\(phase): cancelled")
        }
    }

    // MARK: - Pool

    private func takeIdle(_ endpoint: Endpoint) -> ClientSocket? {
        while let (candidate, since) = idle.withLock({ $0[endpoint]?.popLast() }) {
            // A server may have closed an idle connection; sending on it would only fail after the fact. One idle
            // too long may be gone without a word (found in an outside audit: a silently dropped pooled
            // connection cost a whole attempt's timeout).
            if since.duration(to: .now) < configuration.maximumIdleTime, candidate.isReusable { return candidate }
            candidate.close()
        }
        return nil
    }

    private func putIdle(_ socket: ClientSocket, _ endpoint: Endpoint) -> Bool {
        idle.withLock { idle in
            guard idle[endpoint, default: []].count < configuration.maximumIdleConnectionsPerOrigin else {
                return false
            }
            idle[endpoint, default: []].append((socket, .now))
            return true
        }
    }

    // MARK: - Request

    struct Target {
        let endpoint: Endpoint
        /// `path?query`, as sent on the request line.
        let requestTarget: String
        /// The `Host` field value.
        let hostField: String
    }

    static func target(of request: TransportRequest) throws(TransportError) -> Target {
        guard let components = URLComponents(url: request.url, resolvingAgainstBaseURL: true),
            let scheme = components.scheme?.lowercased(), scheme == "http" || scheme == "https",
            let host = components.host, !host.isEmpty, let encodedHost = components.percentEncodedHost,
            isAddress(host, written: encodedHost)
                || encodedHost.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "%") })
        else {
            throw TransportError(
                code: .other, requestMayHaveBeenSent: false, detail: "\(request.url) is not an http(s) URL with a host")
        }
        let isSecure = scheme == "https"
        let defaultPort = isSecure ? 443 : 80
        let port = components.port ?? defaultPort
        var requestTarget = components.percentEncodedPath.isEmpty ? "/" : components.percentEncodedPath
        if let query = components.percentEncodedQuery { requestTarget += "?" + query }
        // The Host field is the host as written in the URL (never a decoded form that could carry a line
        // break; a percent-escaped name is refused above).
        let bracketed = isAddress(host, written: encodedHost) ? "[\(host)]" : encodedHost
        return Target(
            endpoint: Endpoint(isSecure: isSecure, host: host, port: port), requestTarget: requestTarget,
            hostField: port == defaultPort ? bracketed : "\(bracketed):\(port)")
    }

    /// Whether the URL's host is an IPv6 address written as one: `host` (decoded) is an address and the host
    /// as written escapes nothing but the zone separator (`%25`): `%3A%3A1` is a name that decodes to `::1`.
    private static func isAddress(_ host: String, written: String) -> Bool {
        isIPv6(host) && (written == host || written.replacingOccurrences(of: "%25", with: "%") == host)
    }

    /// Whether `host` is an IPv6 address as URLComponents gives one from between its brackets: hex digits,
    /// colons and dots (an embedded IPv4 address), then perhaps `%` and a zone id of unreserved characters.
    /// A colon alone does not make one: a percent-escaped host decodes to anything (`%3A%0D%0A...`), and
    /// only an address may skip the check of the host as written. Checked on its bytes: Foundation's
    /// `contains` on strings goes through CFStringFind, a measurable share of every request.
    package static func isIPv6(_ host: String) -> Bool {
        var colons = 0
        var inZone = false
        for byte in host.utf8 {
            if inZone {
                // RFC 3986 unreserved: letters, digits, `-`, `.`, `_`, `~`.
                let letter = byte | 0x20
                guard
                    (letter >= UInt8(ascii: "a") && letter <= UInt8(ascii: "z"))
                        || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"))
                        || [UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~")].contains(byte)
                else { return false }
                continue
            }
            switch byte {
            case UInt8(ascii: ":"): colons += 1
            case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "f"),
                UInt8(ascii: "A")...UInt8(ascii: "F"), UInt8(ascii: "."):
                break
            case UInt8(ascii: "%"): inZone = true
            default: return false
            }
        }
        return colons >= 2
    }

    /// The request line and header fields. Fields the transport owns (`Host`, `Content-Length`,
    /// `Transfer-Encoding`, `Connection`) are written by it; a name or value with a line break or NUL is
    /// refused (it would smuggle a second request).
    static func head(of request: TransportRequest, target: Target) throws(TransportError) -> [UInt8] {
        guard HeaderFields.isToken(request.method.utf8) else {
            throw TransportError(code: .other, requestMayHaveBeenSent: false, detail: "invalid method")
        }
        // Appended as bytes: this runs for every request, and its cost grows with every header a middleware
        // adds (keel-bench trace.overhead).
        var head: [UInt8] = []
        head.reserveCapacity(256)
        func append(_ text: String) { head.append(contentsOf: text.utf8) }
        append(request.method)
        head.append(32)
        append(target.requestTarget)
        // The URL was checked (`target(of:)`); checked again here, where a line break would do harm.
        guard !FieldSyntax.hasLineBreakOrNUL(target.hostField) else {
            throw TransportError(code: .other, requestMayHaveBeenSent: false, detail: "the host has a line break")
        }
        append(" HTTP/1.1\r\nHost: ")
        append(target.hostField)
        append("\r\n")
        for field in request.headers where !isOwnedByTransport(field.name) {
            guard FieldSyntax.isFieldName(field.name), !FieldSyntax.hasLineBreakOrNUL(field.value) else {
                throw TransportError(
                    code: .other, requestMayHaveBeenSent: false,
                    detail: "header field \(field.name.debugDescription) has a line break or is not a field name")
            }
            append(field.name)
            append(": ")
            append(field.value)
            append("\r\n")
        }
        if let body = request.body {
            append("Content-Length: \(body.count)\r\n")
        } else if request.method == "POST" || request.method == "PUT" || request.method == "PATCH" {
            append("Content-Length: 0\r\n")
        }
        if !request.reusesConnections { append("Connection: close\r\n") }
        append("\r\n")
        return head
    }

    /// `Host`, `Content-Length`, `Transfer-Encoding` and `Connection`, in any case: the transport writes
    /// them itself.
    private static func isOwnedByTransport(_ name: String) -> Bool {
        // Most names have none of the four lengths: no comparison at all (run for every field of every request).
        switch name.utf8.count {
        case 4: HeaderFields.equalIgnoringCase(name, "host")
        case 10: HeaderFields.equalIgnoringCase(name, "connection")
        case 14: HeaderFields.equalIgnoringCase(name, "content-length")
        case 17: HeaderFields.equalIgnoringCase(name, "transfer-encoding")
        default: false
        }
    }
}
