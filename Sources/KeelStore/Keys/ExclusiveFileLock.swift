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
        /// Someone else holds it (and, when waiting, kept it for the whole wait).
        case held
        /// The path cannot be opened or locked (`errno`; `ENOENT` for a directory that is gone).
        case failed(Int32)
    }

    /// What is locked.
    package enum Target {
        /// An existing directory (never created: a vault deleted meanwhile stays deleted).
        case directory
        /// A lock file, created 0600 when missing (opened read-only when it exists).
        case file
    }

    private let descriptor: Locked<Int32?>

    /// Locks `path`; with `waitingUpTo`, waits at most that long for a holder to let go (a holder in a
    /// suspended app extension must not hang this process), otherwise fails at once with ``Failure/held``.
    package init(_ path: String, _ target: Target, waitingUpTo wait: Duration? = nil) throws(Failure) {
        let deadline = wait.map { ContinuousClock.now + $0 }
        var attempts = 0
        while true {
            let fd = try Self.lock(path, target, until: deadline)
            // The lock is on what was opened; it is this path's lock only if the path still names it. A lock
            // file unlinked by its holder (before releasing, as it must) or replaced meanwhile is another
            // file now: taken anyway, two holders would each believe they are alone. Open the path again.
            if Self.isStillAt(path, fd) {
                descriptor = Locked(fd)
                return
            }
            close(fd)
            attempts += 1
            guard target == .file, attempts < 16 else { throw .failed(ENOENT) }
        }
    }

    /// Opens `path` and takes the lock on what was opened.
    private static func lock(_ path: String, _ target: Target, until deadline: ContinuousClock.Instant?)
        throws(Failure) -> Int32
    {
        var fd: Int32
        switch target {
        case .directory:
            fd = open(path, O_RDONLY | O_CLOEXEC | O_DIRECTORY)
        case .file:
            // flock needs no write access: an existing lock file is opened read-only (without blocking: a FIFO
            // in its place would hold the open until something wrote to it).
            fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
            if fd < 0 && errno == ENOENT {
                fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
                if fd < 0 && errno == EEXIST { fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK) }
            }
        }
        guard fd >= 0 else { throw .failed(errno) }
        // A lock file is a regular file: anything else put in its place (a FIFO, a device) is refused.
        if target == .file, !DurableFiles.isRegularFile(fd) {
            close(fd)
            throw .failed(EINVAL)
        }
        while flock(fd, LOCK_EX | LOCK_NB) != 0 {
            let code = errno
            if code == EINTR { continue }
            if code == EWOULDBLOCK, let deadline, ContinuousClock.now < deadline {
                usleep(5_000)
                continue
            }
            close(fd)
            throw code == EWOULDBLOCK ? .held : .failed(code)
        }
        return fd
    }

    /// Whether `path` still names the file open as `fd` (same device and inode).
    private static func isStillAt(_ path: String, _ fd: Int32) -> Bool {
        var opened = stat()
        var named = stat()
        guard fstat(fd, &opened) == 0, stat(path, &named) == 0 else { return false }
        return opened.st_dev == named.st_dev && opened.st_ino == named.st_ino
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
