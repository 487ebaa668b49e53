import KeelCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// An exclusive, advisory lock (`flock`) on a file or directory, held until ``release()`` (or until the
/// process dies: the kernel drops it, so a killed process never leaves it behind). It keeps two holders —
/// two processes (an app and its extension), or two instances in one process — from overwriting each
/// other's whole-file state: a vault's manifest is changed under it, an effect ledger is held for life.
package final class ExclusiveFileLock: Sendable {
    /// Why a lock was not taken.
    package enum Failure: Error {
        /// Someone else holds it.
        case held
        /// The path cannot be opened or locked (`errno`).
        case failed(Int32)
    }

    private let descriptor: Locked<Int32?>

    /// Locks `path` (a directory, or a file created 0600 when missing); with `waiting`, waits for a
    /// holder to let go instead of failing with ``Failure/held``.
    package init(_ path: String, waiting: Bool = false) throws(Failure) {
        var fd = open(path, O_RDONLY | O_CLOEXEC | O_DIRECTORY)
        if fd < 0 && errno == ENOTDIR { fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600) }
        if fd < 0 && errno == ENOENT { fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600) }
        guard fd >= 0 else { throw .failed(errno) }
        while flock(fd, waiting ? LOCK_EX : LOCK_EX | LOCK_NB) != 0 {
            let code = errno
            if code == EINTR { continue }
            close(fd)
            throw code == EWOULDBLOCK ? .held : .failed(code)
        }
        descriptor = Locked(fd)
    }

    /// Releases the lock (once; later calls do nothing).
    package func release() {
        let fd = descriptor.withLock { fd in
            defer { fd = nil }
            return fd
        }
        if let fd { close(fd) }
    }

    deinit { release() }
}
