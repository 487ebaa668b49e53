// Thin adapter over the POSIX socket, pipe and thread calls the test kit needs.
// The platform ladder lives here and nowhere else in KeelTesting.
#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#else
    #error("KeelTesting needs POSIX sockets")
#endif

/// The POSIX calls used by the test server, the benchmark client and the child-process harness.
/// Every call that may be repeated retries on `EINTR` (`connect` may not); none raises `SIGPIPE`.
package enum POSIX {
    package enum Shutdown {
        case read, write, both

        fileprivate var how: Int32 {
            switch self {
            case .read: Int32(SHUT_RD)
            case .write: Int32(SHUT_WR)
            case .both: Int32(SHUT_RDWR)
            }
        }
    }

    /// The current `errno`, as a thrown error.
    package struct Failure: Error, CustomStringConvertible {
        package let call: String
        package let errno: Int32
        package var description: String { "\(call) failed: \(POSIX.describe(errno: errno)) (errno \(errno))" }
    }

    private static var streamType: Int32 {
        #if canImport(Glibc) || canImport(Musl)
            Int32(SOCK_STREAM.rawValue)
        #else
            SOCK_STREAM
        #endif
    }

    private static func makeStreamSocket() throws(Failure) -> Int32 {
        let fd = socket(AF_INET, streamType, 0)
        guard fd >= 0 else { throw Failure(call: "socket", errno: errno) }
        setCloseOnExec(fd)
        setNoSigPipe(fd)
        return fd
    }

    private static func makeAddress(host: String, port: UInt16) throws(Failure) -> sockaddr_in {
        var address = sockaddr_in()
        #if canImport(Darwin)
            address.sin_len = UInt8(MemoryLayout<sockaddr_in>.size)
        #endif
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else {
            throw Failure(call: "inet_pton(\(host))", errno: EINVAL)
        }
        return address
    }

    /// The `listen` backlog of a listening socket.
    private static let listenBacklog: Int32 = 128

    /// A TCP socket bound to `host:port` (port 0 = any free port) and listening. Returns the fd and the port.
    package static func makeListeningSocket(host: String, port: UInt16) throws(Failure) -> (fd: Int32, port: UInt16) {
        let fd = try makeStreamSocket()
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = try makeAddress(host: host, port: port)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0 else {
            let error = errno
            close(fd)
            throw Failure(call: "bind(\(host):\(port))", errno: error)
        }
        guard listen(fd, listenBacklog) == 0 else {
            let error = errno
            close(fd)
            throw Failure(call: "listen", errno: error)
        }
        // Non-blocking: a connection that is aborted between poll and accept must not block the
        // accept thread (it could then never see the shutdown signal).
        setNonBlocking(fd)
        var actual = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &actual) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return (fd, UInt16(bigEndian: actual.sin_port))
    }

    /// A TCP socket bound to `host` on a free port but not listening: it holds the port (nobody else can
    /// take it) while connections to it are refused.
    package static func makeBoundSocket(host: String) throws(Failure) -> (fd: Int32, port: UInt16) {
        let fd = try makeStreamSocket()
        var address = try makeAddress(host: host, port: 0)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0 else {
            let error = errno
            close(fd)
            throw Failure(call: "bind(\(host))", errno: error)
        }
        var actual = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &actual) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return (fd, UInt16(bigEndian: actual.sin_port))
    }

    /// A TCP connection to `host:port`, with Nagle's algorithm off.
    package static func connect(host: String, port: UInt16) throws(Failure) -> Int32 {
        let fd = try makeStreamSocket()
        var address = try makeAddress(host: host, port: port)
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                systemConnect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard result == 0 else {
            let error = errno
            close(fd)
            throw Failure(call: "connect(\(host):\(port))", errno: error)
        }
        setNoDelay(fd)
        return fd
    }

    /// The system `connect(2)`, called once (``connect(host:port:)`` shadows the name). Not retried on
    /// `EINTR`: an interrupted connect goes on in the background, and calling it again does not resume it.
    private static func systemConnect(_ fd: Int32, _ address: UnsafePointer<sockaddr>, _ length: socklen_t) -> Int32 {
        #if canImport(Darwin)
            Darwin.connect(fd, address, length)
        #elseif canImport(Glibc)
            Glibc.connect(fd, address, length)
        #else
            Musl.connect(fd, address, length)
        #endif
    }

    /// What one `accept` call produced.
    package enum Accepted {
        /// A new connection.
        case connection(Int32)
        /// Nothing pending after all (the listener is non-blocking).
        case nothing
        /// The call failed with `errno` (e.g. EMFILE: out of descriptors).
        case failed(Int32)
    }

    /// Accepts one connection from a non-blocking listener.
    package static func accept(_ fd: Int32) -> Accepted {
        while true {
            #if canImport(Darwin)
                let client = Darwin.accept(fd, nil, nil)
            #elseif canImport(Glibc)
                let client = Glibc.accept(fd, nil, nil)
            #else
                let client = Musl.accept(fd, nil, nil)
            #endif
            if client >= 0 {
                setCloseOnExec(client)
                setBlocking(client)
                setNoDelay(client)
                setNoSigPipe(client)
                return .connection(client)
            }
            switch errno {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK, ECONNABORTED: return .nothing
            default: return .failed(errno)
            }
        }
    }

    private static func setBlocking(_ fd: Int32) {
        let flags = fcntl(fd, F_GETFL)
        if flags >= 0 { _ = fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) }
    }

    private static func setNonBlocking(_ fd: Int32) {
        let flags = fcntl(fd, F_GETFL)
        if flags >= 0 { _ = fcntl(fd, F_SETFL, flags | O_NONBLOCK) }
    }

    /// Waits until data (or end-of-stream) is ready on `fd` without consuming it.
    /// Returns the number of bytes visible (≥ 1), 0 at end of stream, or nil on error.
    package static func peekBlocking(_ fd: Int32) -> Int? {
        var byte: UInt8 = 0
        while true {
            let count = recv(fd, &byte, 1, Int32(MSG_PEEK))
            if count >= 0 { return count }
            if errno == EINTR { continue }
            return nil
        }
    }

    /// Reads up to `buffer.count` bytes. Returns the count, 0 at end of stream, or `nil` on error (reset).
    package static func read(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer) -> Int? {
        while true {
            let count = recv(fd, buffer.baseAddress, buffer.count, 0)
            if count >= 0 { return count }
            if errno == EINTR { continue }
            return nil
        }
    }

    /// Whether the peer has closed its side, even while some of its data is still unread.
    ///
    /// Linux reports this directly (POLLRDHUP); elsewhere it is a zero-length peek, which cannot see a
    /// close behind unread data.
    package static func peerHasHungUp(_ fd: Int32) -> Bool {
        #if canImport(Glibc) || canImport(Musl)
            let pollReadHangUp: Int16 = 0x2000  // POLLRDHUP; Glibc's module does not export it
            var entry = pollfd(fd: fd, events: pollReadHangUp, revents: 0)
            guard poll(&entry, 1, 0) > 0 else { return false }
            return entry.revents & (pollReadHangUp | Int16(POLLHUP) | Int16(POLLERR)) != 0
        #else
            return peerHasClosed(fd)
        #endif
    }

    /// Whether the peer has closed its side: a zero-length peek. Data waiting to be read is not a close.
    private static func peerHasClosed(_ fd: Int32) -> Bool {
        var byte: UInt8 = 0
        while true {
            let count = recv(fd, &byte, 1, Int32(MSG_PEEK) | Int32(MSG_DONTWAIT))
            if count == 0 { return true }
            if count > 0 { return false }
            if errno == EINTR { continue }
            return errno != EAGAIN && errno != EWOULDBLOCK
        }
    }

    /// Writes all of `bytes`. Returns false when the peer is gone (EPIPE, ECONNRESET).
    package static func write(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Bool {
        var offset = 0
        while offset < bytes.count {
            #if canImport(Darwin)
                let flags: Int32 = 0
            #else
                let flags = Int32(MSG_NOSIGNAL)
            #endif
            let count = send(fd, bytes.baseAddress! + offset, bytes.count - offset, flags)
            if count > 0 {
                offset += count
            } else if count < 0 && errno == EINTR {
                continue
            } else {
                return false
            }
        }
        return true
    }

    /// Writes all of `bytes` to a pipe or file.
    package static func writeAll(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                #if canImport(Darwin)
                    let count = Darwin.write(fd, buffer.baseAddress! + offset, buffer.count - offset)
                #elseif canImport(Glibc)
                    let count = Glibc.write(fd, buffer.baseAddress! + offset, buffer.count - offset)
                #else
                    let count = Musl.write(fd, buffer.baseAddress! + offset, buffer.count - offset)
                #endif
                if count > 0 {
                    offset += count
                } else if count < 0 && errno == EINTR {
                    continue
                } else {
                    return false
                }
            }
            return true
        }
    }

    /// Reads from a pipe or file. Returns the count, 0 at end of file, `nil` on error.
    package static func readFile(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer) -> Int? {
        while true {
            #if canImport(Darwin)
                let count = Darwin.read(fd, buffer.baseAddress, buffer.count)
            #elseif canImport(Glibc)
                let count = Glibc.read(fd, buffer.baseAddress, buffer.count)
            #else
                let count = Musl.read(fd, buffer.baseAddress, buffer.count)
            #endif
            if count >= 0 { return count }
            if errno == EINTR { continue }
            return nil
        }
    }

    /// Waits until one of `fds` is readable (or hung up), or `timeoutMilliseconds` pass (-1 = forever).
    /// Returns the indices of the ready descriptors; empty on timeout or on a poll error.
    package static func waitReadable(_ fds: [Int32], timeoutMilliseconds: Int32) -> [Int] {
        var entries = fds.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
        while true {
            let result = poll(&entries, nfds_t(entries.count), timeoutMilliseconds)
            if result < 0 && errno == EINTR { continue }
            if result <= 0 { return [] }
            return entries.indices.filter { entries[$0].revents != 0 }
        }
    }

    package static func shutdown(_ fd: Int32, _ direction: Shutdown) {
        #if canImport(Darwin)
            _ = Darwin.shutdown(fd, direction.how)
        #elseif canImport(Glibc)
            _ = Glibc.shutdown(fd, direction.how)
        #else
            _ = Musl.shutdown(fd, direction.how)
        #endif
    }

    /// Makes the next `close` send RST instead of FIN (SO_LINGER with a zero timeout).
    package static func setLingerZero(_ fd: Int32) {
        var value = linger(l_onoff: 1, l_linger: 0)
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &value, socklen_t(MemoryLayout<linger>.size))
    }

    package static func close(_ fd: Int32) {
        #if canImport(Darwin)
            _ = Darwin.close(fd)
        #elseif canImport(Glibc)
            _ = Glibc.close(fd)
        #else
            _ = Musl.close(fd)
        #endif
    }

    /// A pipe whose both ends close on exec.
    package static func makePipe() throws(Failure) -> (read: Int32, write: Int32) {
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { throw Failure(call: "pipe", errno: errno) }
        setCloseOnExec(fds[0])
        setCloseOnExec(fds[1])
        return (fds[0], fds[1])
    }

    /// A connected pair of local stream sockets, both close-on-exec. Used for a child's stdin so that
    /// writing after the child died fails with an error instead of raising SIGPIPE.
    package static func makeSocketPair() throws(Failure) -> (Int32, Int32) {
        var fds: [Int32] = [0, 0]
        guard socketpair(AF_UNIX, streamType, 0, &fds) == 0 else { throw Failure(call: "socketpair", errno: errno) }
        setCloseOnExec(fds[0])
        setCloseOnExec(fds[1])
        setNoSigPipe(fds[0])
        return (fds[0], fds[1])
    }

    private static func setCloseOnExec(_ fd: Int32) {
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
    }

    private static func setNoDelay(_ fd: Int32) {
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
    }

    /// On Darwin, makes writing to `fd` after the peer is gone fail with `EPIPE` instead of raising
    /// `SIGPIPE` (SO_NOSIGPIPE). Elsewhere a no-op: there ``write(_:_:)`` sends with `MSG_NOSIGNAL`.
    private static func setNoSigPipe(_ fd: Int32) {
        #if canImport(Darwin)
            var one: Int32 = 1
            setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &one, socklen_t(MemoryLayout<Int32>.size))
        #endif
    }

    /// The inode number of the file or socket behind `fd` (what `/proc/<pid>/fd/<n>` links name).
    package static func inode(of fd: Int32) -> UInt64? {
        var info = stat()
        guard fstat(fd, &info) == 0 else { return nil }
        return UInt64(info.st_ino)
    }

    /// The description of `errno` value `code`.
    package static func describe(errno code: Int32) -> String { String(cString: strerror(code)) }
}
