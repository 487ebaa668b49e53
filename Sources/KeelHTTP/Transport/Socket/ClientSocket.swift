// The POSIX adapter of SocketTransport: name resolution, connect, deadline-bounded non-blocking reads and
// writes, and cancellation from another thread. The platform ladder lives here and in TLSSession.swift only.
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
///
/// The descriptor is non-blocking for its whole life: every wait is a `poll` bounded by the exchange's
/// deadline (in slices of at most a second), so no call can outlive the deadline or ignore a cancel.
package final class ClientSocket: @unchecked Sendable {
    // @unchecked Sendable: `descriptor` and `tls` are used by one exchange at a time (the pool hands a
    // socket out exclusively); what other threads touch (`cancel`, `close`) is serialized by `lifecycle`,
    // so a cancel never reaches a descriptor number that was already closed and reused.

    /// Why a socket operation failed.
    package enum Failure: Error, Sendable {
        /// The name did not resolve.
        case dns(String)
        /// No route or no network.
        case unreachable(String)
        /// The peer refused the connection.
        case refused(String)
        /// Connecting (including the TLS handshake) took longer than its deadline.
        case connectTimedOut
        /// The TLS handshake failed (untrusted certificate, wrong host name, no common protocol).
        case tls(String)
        /// A read or write passed its deadline.
        case timedOut
        /// The connection broke (reset, broken pipe, a TLS stream cut without close_notify).
        case broken(String)
        /// ``cancel()`` was called.
        case cancelled
    }

    private let descriptor: Int32
    private var tls: TLSSession?
    private let lifecycle = Locked((isCancelled: false, isClosed: false))
    /// Set when a read or write failed: no TLS close_notify is attempted on such a connection.
    private var isBroken = false

    private init(descriptor: Int32) { self.descriptor = descriptor }

    deinit { close() }

    /// Resolves `host`, connects to the first address that answers within `deadline`, and (when
    /// `tls` is given) completes a verified TLS handshake. `register` receives each socket before it
    /// connects, so that the exchange can cancel the connect itself; it returns false when the exchange
    /// is already cancelled.
    static func connect(
        host: String, port: Int, tls: TLSSettings?, deadline: ContinuousClock.Instant,
        register: (ClientSocket) -> Bool
    ) throws(Failure) -> ClientSocket {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        // Name resolution blocks and cannot be cancelled; the platform resolver's own timeouts bound it.
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
            guard register(socket) else {
                socket.close()
                throw .cancelled
            }
            do throws(Failure) {
                try socket.connect(to: entry.pointee.ai_addr, length: entry.pointee.ai_addrlen, deadline: deadline)
                if let tls {
                    socket.tls = try Self.withSIGPIPEBlocked { () throws(Failure) -> TLSSession in
                        try TLSSession(socket: socket, host: host, settings: tls, deadline: deadline)
                    }
                }
                return socket
            } catch {
                lastFailure = error
                socket.isBroken = true
                socket.close()
                switch error {
                case .tls, .cancelled: throw error
                default: continue
                }
            }
        }
        throw lastFailure
    }

    private func configure() {
        _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC)
        _ = fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) | O_NONBLOCK)
        var one: Int32 = 1
        _ = setsockopt(descriptor, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        #if canImport(Darwin)
            _ = setsockopt(descriptor, SOL_SOCKET, SO_NOSIGPIPE, &one, socklen_t(MemoryLayout<Int32>.size))
        #endif
    }

    private func connect(to address: UnsafePointer<sockaddr>, length: socklen_t, deadline: ContinuousClock.Instant)
        throws(Failure)
    {
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
            if error != 0 { throw isCancelled ? .cancelled : Self.connectFailure(error) }
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
        do throws(Failure) {
            var offset = 0
            if let tls {
                // OpenSSL writes with write(2): SIGPIPE is blocked around it. A plain send needs no such
                // guard (MSG_NOSIGNAL), and spares the three signal-mask calls per request.
                try Self.withSIGPIPEBlocked { () throws(Failure) in
                    while offset < bytes.count {
                        try checkCancelled()
                        offset += try tls.write(bytes, from: offset, deadline: deadline)
                    }
                }
                return
            }
            while offset < bytes.count {
                try checkCancelled()
                let written = bytes.withUnsafeBytes { buffer in
                    send(descriptor, buffer.baseAddress! + offset, buffer.count - offset, Self.sendFlags)
                }
                if written >= 0 {
                    offset += written
                } else if errno == EAGAIN || errno == EWOULDBLOCK {
                    try wait(for: Int16(POLLOUT), deadline: deadline, timeout: .timedOut)
                } else if errno != EINTR {
                    throw isCancelled ? .cancelled : .broken(String(cString: strerror(errno)))
                }
            }
        } catch {
            isBroken = true
            // Whatever the failure looked like, a cancelled exchange ended because it was cancelled.
            throw isCancelled ? .cancelled : error
        }
    }

    /// Reads at most `buffer.count` bytes before `deadline`; 0 means the peer closed the connection.
    package func read(into buffer: inout [UInt8], deadline: ContinuousClock.Instant) throws(Failure) -> Int {
        do throws(Failure) {
            try checkCancelled()
            if let tls {
                let count = try Self.withSIGPIPEBlocked { () throws(Failure) -> Int in
                    try tls.read(into: &buffer, deadline: deadline)
                }
                try checkCancelled()
                return count
            }
            while true {
                let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
                if count >= 0 {
                    try checkCancelled()
                    return count
                }
                if errno == EAGAIN || errno == EWOULDBLOCK {
                    try wait(for: Int16(POLLIN), deadline: deadline, timeout: .timedOut)
                } else if errno != EINTR {
                    throw isCancelled ? .cancelled : .broken(String(cString: strerror(errno)))
                }
            }
        } catch {
            isBroken = true
            // Whatever the failure looked like, a cancelled exchange ended because it was cancelled.
            throw isCancelled ? .cancelled : error
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

    /// Whether an idle pooled connection is still usable: open (a closed socket's descriptor number may
    /// belong to another connection by now, so it is never polled), not cancelled or broken, and nothing to
    /// read (no EOF, no stray bytes).
    var isReusable: Bool {
        guard !lifecycle.withLock({ $0.isClosed || $0.isCancelled }), !isBroken else { return false }
        var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        return poll(&poller, 1, 0) == 0
    }

    /// The descriptor, for the TLS adapter's BIO.
    var fileDescriptor: Int32 { descriptor }

    // MARK: - Ending

    /// Makes every current and later read and write fail with ``Failure/cancelled``. Any thread; a no-op
    /// once the socket is closed (its descriptor number may already belong to another connection).
    func cancel() {
        lifecycle.withLock { state in
            guard !state.isClosed else { return }
            state.isCancelled = true
            _ = shutdown(descriptor, Int32(SHUT_RDWR))
        }
    }

    private var isCancelled: Bool { lifecycle.withLock { $0.isCancelled } }

    private func checkCancelled() throws(Failure) {
        if isCancelled { throw .cancelled }
    }

    /// Closes the connection (after a TLS close_notify when the connection is healthy).
    func close() {
        let (wasClosed, cancelled) = lifecycle.withLock { state in
            defer { state.isClosed = true }
            return (state.isClosed, state.isCancelled)
        }
        guard !wasClosed else { return }
        if let tls {
            Self.withSIGPIPEBlocked { tls.close(notifyingPeer: !cancelled && !isBroken) }
            self.tls = nil
        }
        // Under the lock: a concurrent cancel either ran before (and shut this descriptor down) or sees
        // `isClosed` and leaves the number alone.
        lifecycle.withLock { _ in _ = Self.systemClose(descriptor) }
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

    /// Runs `body` with SIGPIPE blocked on this thread, and discards one that `body` raised: OpenSSL
    /// writes with write(2), which (unlike send with MSG_NOSIGNAL) raises SIGPIPE on a closed connection,
    /// and SIGPIPE's default action kills the process. Thread-directed, so nothing else is affected.
    static func withSIGPIPEBlocked<Result, E: Error>(_ body: () throws(E) -> Result) throws(E) -> Result {
        #if canImport(Glibc)
            var block = sigset_t()
            var previous = sigset_t()
            sigemptyset(&block)
            sigaddset(&block, SIGPIPE)
            pthread_sigmask(SIG_BLOCK, &block, &previous)
            defer {
                var pending = sigset_t()
                sigpending(&pending)
                if sigismember(&pending, SIGPIPE) == 1 {
                    var zero = timespec(tv_sec: 0, tv_nsec: 0)
                    _ = sigtimedwait(&block, nil, &zero)
                }
                pthread_sigmask(SIG_SETMASK, &previous, nil)
            }
        #endif
        return try body()
    }
}
