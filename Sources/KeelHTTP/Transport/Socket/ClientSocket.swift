// The POSIX adapter of SocketTransport: name resolution, connect, deadline-bounded reads and writes, and
// cancellation from another thread. The platform ladder lives here and in TLSSession.swift only.
#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#else
    #error("SocketTransport needs POSIX sockets")
#endif
import KeelCore

/// One connected TCP socket, optionally wrapped in TLS. Used by one exchange at a time; ``cancel()`` may
/// come from any thread and makes every blocked or later read and write fail at once.
package final class ClientSocket: @unchecked Sendable {
    // @unchecked Sendable: `descriptor` and `tls` are set once; `isCancelled` is only read and written
    // through `cancelled`, a Locked; the socket itself is used by one exchange at a time (the pool hands it
    // out exclusively), and `shutdown` is safe to call concurrently with a blocked read.

    /// Why a socket operation failed.
    package enum Failure: Error, Sendable {
        /// The name did not resolve.
        case dns(String)
        /// No route or no network.
        case unreachable(String)
        /// The peer refused the connection.
        case refused(String)
        /// Connecting took longer than its deadline.
        case connectTimedOut
        /// The TLS handshake failed (untrusted certificate, wrong host name, no common protocol).
        case tls(String)
        /// A read or write passed its deadline.
        case timedOut
        /// The connection broke (reset, broken pipe).
        case broken(String)
        /// ``cancel()`` was called.
        case cancelled
    }

    private let descriptor: Int32
    private var tls: TLSSession?
    private let cancelled = Locked(false)

    private init(descriptor: Int32) { self.descriptor = descriptor }

    deinit { close() }

    /// Resolves `host`, connects to the first address that answers within `deadline`, and (when
    /// `tls` is given) completes a verified TLS handshake.
    static func connect(host: String, port: Int, tls: TLSSettings?, deadline: ContinuousClock.Instant)
        throws(Failure) -> ClientSocket
    {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &list)
        guard status == 0, let first = list else {
            throw .dns(String(cString: gai_strerror(status)))
        }
        defer { freeaddrinfo(list) }
        var lastFailure = Failure.unreachable("no address for \(host)")
        var cursor: UnsafeMutablePointer<addrinfo>? = first
        while let entry = cursor {
            cursor = entry.pointee.ai_next
            let fd = socket(entry.pointee.ai_family, entry.pointee.ai_socktype, entry.pointee.ai_protocol)
            guard fd >= 0 else { continue }
            let socket = ClientSocket(descriptor: fd)
            socket.configure()
            do throws(Failure) {
                try socket.connect(to: entry.pointee.ai_addr, length: entry.pointee.ai_addrlen, deadline: deadline)
                if let tls {
                    socket.tls = try TLSSession(descriptor: fd, host: host, settings: tls, deadline: deadline)
                }
                return socket
            } catch {
                lastFailure = error
                socket.close()
                if case .tls = error { throw error }
            }
        }
        throw lastFailure
    }

    private func configure() {
        _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC)
        var one: Int32 = 1
        _ = setsockopt(descriptor, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        #if canImport(Darwin)
            _ = setsockopt(descriptor, SOL_SOCKET, SO_NOSIGPIPE, &one, socklen_t(MemoryLayout<Int32>.size))
        #endif
    }

    private func connect(to address: UnsafePointer<sockaddr>, length: socklen_t, deadline: ContinuousClock.Instant)
        throws(Failure)
    {
        let flags = fcntl(descriptor, F_GETFL)
        _ = fcntl(descriptor, F_SETFL, flags | O_NONBLOCK)
        defer { _ = fcntl(descriptor, F_SETFL, flags) }
        #if canImport(Glibc)
            let result = Glibc.connect(descriptor, address, length)
        #else
            let result = Darwin.connect(descriptor, address, length)
        #endif
        if result != 0 {
            guard errno == EINPROGRESS else { throw Self.connectFailure(errno) }
            try wait(for: Int16(POLLOUT), deadline: deadline, timeout: .connectTimedOut)
            var error: Int32 = 0
            var size = socklen_t(MemoryLayout<Int32>.size)
            _ = getsockopt(descriptor, SOL_SOCKET, SO_ERROR, &error, &size)
            if error != 0 { throw Self.connectFailure(error) }
        }
    }

    private static func connectFailure(_ code: Int32) -> Failure {
        let text = String(cString: strerror(code))
        switch code {
        case ECONNREFUSED: return .refused(text)
        case ETIMEDOUT: return .connectTimedOut
        default: return .unreachable(text)
        }
    }

    // MARK: - I/O

    /// Writes all of `bytes` before `deadline`.
    func write(_ bytes: [UInt8], deadline: ContinuousClock.Instant) throws(Failure) {
        var offset = 0
        while offset < bytes.count {
            try checkCancelled()
            if let tls {
                offset += try tls.write(bytes, from: offset, socket: self, deadline: deadline)
                continue
            }
            try wait(for: Int16(POLLOUT), deadline: deadline, timeout: .timedOut)
            let written = bytes.withUnsafeBytes { buffer in
                send(descriptor, buffer.baseAddress! + offset, buffer.count - offset, Self.sendFlags)
            }
            if written < 0 {
                if errno == EINTR || errno == EAGAIN { continue }
                throw isCancelled ? .cancelled : .broken(String(cString: strerror(errno)))
            }
            offset += written
        }
    }

    /// Reads at most `buffer.count` bytes before `deadline`; 0 means the peer closed the connection.
    package func read(into buffer: inout [UInt8], deadline: ContinuousClock.Instant) throws(Failure) -> Int {
        try checkCancelled()
        if let tls { return try tls.read(into: &buffer, socket: self, deadline: deadline) }
        while true {
            try wait(for: Int16(POLLIN), deadline: deadline, timeout: .timedOut)
            let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            if count >= 0 {
                try checkCancelled()
                return count
            }
            if errno == EINTR || errno == EAGAIN { continue }
            throw isCancelled ? .cancelled : .broken(String(cString: strerror(errno)))
        }
    }

    /// Waits until the socket is ready for `events`, or throws `timeout` at `deadline`.
    func wait(for events: Int16, deadline: ContinuousClock.Instant, timeout: Failure) throws(Failure) {
        while true {
            try checkCancelled()
            let remaining = ContinuousClock.now.duration(to: deadline)
            guard remaining > .zero else { throw timeout }
            // Slices of at most a second, so that a cancellation is noticed even if shutdown raced.
            let milliseconds = Int32(min(remaining, .seconds(1)).inMillisecondsRoundedUp)
            var poller = pollfd(fd: descriptor, events: events, revents: 0)
            let ready = poll(&poller, 1, milliseconds)
            if ready > 0 { return }
            if ready < 0 && errno != EINTR { throw .broken(String(cString: strerror(errno))) }
        }
    }

    /// Whether an idle pooled connection is still usable: nothing to read (no EOF, no stray bytes).
    var isReusable: Bool {
        guard !isCancelled else { return false }
        var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        return poll(&poller, 1, 0) == 0
    }

    // MARK: - Ending

    /// Makes every current and later read and write fail with ``Failure/cancelled``. Any thread.
    func cancel() {
        cancelled.withLock { $0 = true }
        _ = shutdown(descriptor, Int32(SHUT_RDWR))
    }

    private var isCancelled: Bool { cancelled.withLock { $0 } }

    private func checkCancelled() throws(Failure) {
        if isCancelled { throw .cancelled }
    }

    private var isClosed = false

    /// Closes the connection (after a TLS close_notify when possible).
    func close() {
        guard !isClosed else { return }
        isClosed = true
        tls?.close()
        tls = nil
        _ = Self.systemClose(descriptor)
    }

    private static func systemClose(_ fd: Int32) -> Int32 {
        #if canImport(Glibc)
            Glibc.close(fd)
        #else
            Darwin.close(fd)
        #endif
    }

    #if canImport(Glibc)
        static let sendFlags = Int32(MSG_NOSIGNAL)
    #else
        static let sendFlags: Int32 = 0
    #endif

    /// The raw descriptor, for the TLS adapter.
    var fileDescriptor: Int32 { descriptor }
}
