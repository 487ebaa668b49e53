import KeelCore
import KeelCrypto

#if canImport(Glibc)
    package import Glibc
#elseif canImport(Musl)
    package import Musl
#elseif canImport(Darwin)
    package import Darwin
#endif

/// The few POSIX file operations key files and vault manifests need: atomic, durable replacement and
/// bounded reads that never follow a symlink. Failures carry `errno`. Package-wide: KeelLifecycle's effect
/// ledger is written the same way.
package enum DurableFiles {
    package struct Failure: Error {
        package let operation: String
        package let path: String
        package let errno: Int32

        package var isNotFound: Bool { errno == ENOENT }
        package var description: String {
            // `read` refuses a FIFO, a socket or a device with EINVAL, whose own text ("Invalid argument") says
            // nothing about the file.
            if operation == "read", errno == EINVAL { return "\(path) is not a regular file" }
            return "\(operation) \(path): \(String(cString: strerror(errno)))"
        }
    }

    /// Makes the SQLite database `file` readable by its owner only before SQLite opens it: SQLite gives a new
    /// file the process's default mode (0644 under the usual umask), and its WAL and shared-memory files the
    /// mode of the database file. Made first with 0600, or narrowed when an older Keel made it (the file and
    /// its companions, `-wal`, `-shm`, `-journal`). Best effort: a file that cannot be narrowed still opens.
    package static func restrictDatabaseToOwner(_ file: String) {
        let created = open(file, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC | O_NOFOLLOW, 0o600)
        if created >= 0 {
            close(created)
            return
        }
        for path in VaultFiles.databaseCompanions.map({ file + $0 }) where kind(path) == .file {
            _ = chmod(path, 0o600)
        }
    }

    /// Writes `bytes` to a new temporary file beside `path` with `mode`, syncs it, then moves it to `path`
    /// and syncs the directory: after a crash `path` holds either its old content or all of `bytes`.
    /// With `exclusive`, an existing `path` is never replaced (`EEXIST`).
    package static func write(_ bytes: [UInt8], to path: String, mode: mode_t, exclusive: Bool) throws(Failure) {
        let directory = parent(of: path)
        let temporary = directory + "/.tmp-" + Hex.encode(randomTag()) + ".part"
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode)
        guard descriptor >= 0 else { throw Failure(operation: "create", path: temporary, errno: errno) }
        var written = 0
        while written < bytes.count {
            let result = bytes.withUnsafeBytes { buffer in
                posixWrite(descriptor, buffer.baseAddress! + written, buffer.count - written)
            }
            if result < 0 {
                if errno == EINTR { continue }
                let failure = Failure(operation: "write", path: temporary, errno: errno)
                close(descriptor)
                unlink(temporary)
                throw failure
            }
            written += result
        }
        // fchmod as well: the process umask may have narrowed `mode` at creation, never widened it.
        guard fchmod(descriptor, mode) == 0, fsync(descriptor) == 0 else {
            let failure = Failure(operation: "sync", path: temporary, errno: errno)
            close(descriptor)
            unlink(temporary)
            throw failure
        }
        close(descriptor)
        if exclusive {
            // link() refuses an existing target, where rename() would replace it.
            guard link(temporary, path) == 0 else {
                let failure = Failure(operation: "link", path: path, errno: errno)
                unlink(temporary)
                throw failure
            }
            unlink(temporary)
        } else {
            guard rename(temporary, path) == 0 else {
                let failure = Failure(operation: "rename", path: path, errno: errno)
                unlink(temporary)
                throw failure
            }
        }
        try syncDirectory(directory)
    }

    /// Syncs a directory, so that a create, rename or unlink in it survives a crash.
    package static func syncDirectory(_ path: String) throws(Failure) {
        let descriptor = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else { throw Failure(operation: "open directory", path: path, errno: errno) }
        defer { close(descriptor) }
        guard fsync(descriptor) == 0 else { throw Failure(operation: "sync directory", path: path, errno: errno) }
    }

    /// Whether the open file `descriptor` is a regular file (not a FIFO, a socket, a device or a directory).
    static func isRegularFile(_ descriptor: Int32) -> Bool {
        var status = stat()
        return fstat(descriptor, &status) == 0 && status.st_mode & S_IFMT == S_IFREG
    }

    /// Opens the regular file at `path` for reading. A symlink is refused (`ELOOP`), a directory (`EISDIR`)
    /// and anything else that is not a regular file (`EINVAL`) too. Opened without blocking: a FIFO put in
    /// place of a file (which a plain open waits on until something writes to it — forever, for an
    /// inspection) is refused at once.
    private static func openRegularFile(_ path: String) throws(Failure) -> (descriptor: Int32, size: Int) {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
        guard descriptor >= 0 else { throw Failure(operation: "open", path: path, errno: errno) }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else {
            let code = errno
            close(descriptor)
            throw Failure(operation: "stat", path: path, errno: code)
        }
        guard status.st_mode & S_IFMT == S_IFREG else {
            close(descriptor)
            throw Failure(operation: "read", path: path, errno: status.st_mode & S_IFMT == S_IFDIR ? EISDIR : EINVAL)
        }
        return (descriptor, Int(status.st_size))
    }

    /// The content of the regular file at `path`, at most `limit` bytes (`EFBIG` beyond). A symlink is
    /// refused (`ELOOP`), a directory (`EISDIR`) and any other file that is not regular (`EINVAL`) too.
    package static func read(_ path: String, limit: Int) throws(Failure) -> [UInt8] {
        let (descriptor, size) = try openRegularFile(path)
        defer { close(descriptor) }
        guard size <= limit else { throw Failure(operation: "read", path: path, errno: EFBIG) }
        var bytes = [UInt8](repeating: 0, count: size + 1)
        var total = 0
        while true {
            let result = bytes.withUnsafeMutableBytes { buffer in
                posixRead(descriptor, buffer.baseAddress! + total, buffer.count - total)
            }
            if result < 0 {
                if errno == EINTR { continue }
                throw Failure(operation: "read", path: path, errno: errno)
            }
            if result == 0 { break }
            total += result
            if total > limit { throw Failure(operation: "read", path: path, errno: EFBIG) }
            if total == bytes.count { bytes.append(contentsOf: repeatElement(0, count: 4096)) }
        }
        return Array(bytes[..<total])
    }

    /// The first `count` bytes of the regular file at `path` (fewer when it is shorter); a symlink, or a file
    /// that is not regular, is refused as by ``read(_:limit:)``.
    static func head(_ path: String, count: Int) throws(Failure) -> [UInt8] {
        let (descriptor, _) = try openRegularFile(path)
        defer { close(descriptor) }
        var bytes = [UInt8](repeating: 0, count: count)
        var total = 0
        while total < count {
            let result = bytes.withUnsafeMutableBytes { buffer in
                posixRead(descriptor, buffer.baseAddress! + total, count - total)
            }
            if result < 0 {
                if errno == EINTR { continue }
                throw Failure(operation: "read", path: path, errno: errno)
            }
            if result == 0 { break }
            total += result
        }
        return Array(bytes[..<total])
    }

    /// Overwrites the file at `path` with zeros in place — its own blocks, so every hard link to it reads
    /// zeros too — and syncs it. Nothing when there is no file. (Writing a new file and renaming it over
    /// `path` would leave the old blocks, and any other link, holding the old bytes.)
    static func zeroInPlace(_ path: String) throws(Failure) {
        let descriptor = open(path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW)
        guard descriptor >= 0 else {
            if errno == ENOENT { return }
            throw Failure(operation: "open", path: path, errno: errno)
        }
        defer { _ = close(descriptor) }
        var information = stat()
        guard fstat(descriptor, &information) == 0 else { throw Failure(operation: "stat", path: path, errno: errno) }
        let zeros = [UInt8](repeating: 0, count: Int(information.st_size))
        var written = 0
        while written < zeros.count {
            let result = zeros.withUnsafeBytes {
                pwrite(descriptor, $0.baseAddress! + written, zeros.count - written, off_t(written))
            }
            if result < 0 {
                if errno == EINTR { continue }
                throw Failure(operation: "write", path: path, errno: errno)
            }
            written += result
        }
        guard fsync(descriptor) == 0 else { throw Failure(operation: "sync", path: path, errno: errno) }
    }

    /// The names in `directory` of other links to the file at `path` among this type's own temporary files
    /// (`.tmp-*.part`): what a crash between `link` and `unlink` in ``write(_:to:mode:exclusive:)`` leaves.
    static func leftoverLinks(to path: String, in directory: String) -> [String] {
        var target = stat()
        guard lstat(path, &target) == 0, let stream = opendir(directory) else { return [] }
        defer { closedir(stream) }
        var found: [String] = []
        while let entry = readdir(stream) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            guard name.hasPrefix(".tmp-"), name.hasSuffix(".part") else { continue }
            var other = stat()
            let candidate = directory + "/" + name
            if lstat(candidate, &other) == 0, other.st_ino == target.st_ino, other.st_dev == target.st_dev {
                found.append(candidate)
            }
        }
        return found
    }

    /// Renames `path` to `destination` (one step: either name holds it, never both, never neither).
    static func move(_ path: String, to destination: String) throws(Failure) {
        guard rename(path, destination) == 0 else {
            throw Failure(operation: "rename", path: path, errno: errno)
        }
    }

    /// Removes the file at `path`; true when it was there.
    @discardableResult
    package static func remove(_ path: String) throws(Failure) -> Bool {
        if unlink(path) == 0 { return true }
        if errno == ENOENT { return false }
        throw Failure(operation: "remove", path: path, errno: errno)
    }

    /// What is at `path` (not following a final symlink), or nil when nothing is. `.unreadable` when it
    /// cannot be told (a directory on the way that this process may not enter): never "nothing", which a
    /// caller would take for a fresh install (found in an outside audit).
    package static func kind(_ path: String) -> FileKind? {
        var status = stat()
        guard lstat(path, &status) == 0 else { return errno == ENOENT || errno == ENOTDIR ? nil : .unreadable }
        switch status.st_mode & S_IFMT {
        case S_IFDIR: return .directory
        case S_IFREG: return .file
        case S_IFLNK: return .symlink
        default: return .other
        }
    }

    package enum FileKind { case directory, file, symlink, other, unreadable }

    /// `path`, or where it leads when it is a symlink to a directory. For the data directory an app or a
    /// person names, which may be a link (macOS's `/tmp` is one); nothing inside it is followed.
    static func followingLinkToDirectory(_ path: String) -> String {
        guard kind(path) == .symlink, let resolved = realpath(path, nil) else { return path }
        defer { free(resolved) }
        let target = String(cString: resolved)
        return kind(target) == .directory ? target : path
    }

    /// The length in bytes of what is at `path` (not following a final symlink), or nil when nothing is.
    static func size(_ path: String) -> Int64? {
        var status = stat()
        guard lstat(path, &status) == 0 else { return nil }
        return Int64(status.st_size)
    }

    /// The permission bits of `path`.
    static func mode(_ path: String) -> mode_t? {
        var status = stat()
        guard lstat(path, &status) == 0 else { return nil }
        return status.st_mode & 0o7777
    }

    /// Creates the directory `path` with `mode` (its parent must exist); nothing when it is a directory
    /// already, which then gets `mode`. A new directory's entry in its parent is synced to disk, so that
    /// files later written durably inside it cannot be lost with it on a power cut.
    static func makeDirectory(_ path: String, mode: mode_t) throws(Failure) {
        if mkdir(path, mode) != 0 {
            guard errno == EEXIST else { throw Failure(operation: "create directory", path: path, errno: errno) }
            guard kind(path) == .directory else {
                throw Failure(operation: "create directory", path: path, errno: ENOTDIR)
            }
        } else {
            var parent = path
            while parent.count > 1, parent.hasSuffix("/") { parent.removeLast() }
            if let slash = parent.lastIndex(of: "/") {
                parent = slash == parent.startIndex ? "/" : String(parent[..<slash])
            } else {
                parent = "."
            }
            do { try syncDirectory(parent) } catch {
                // Not made durably: gone again, so that the next call makes (and syncs) it once more.
                rmdir(path)
                throw error
            }
        }
        guard chmod(path, mode) == 0 else { throw Failure(operation: "chmod", path: path, errno: errno) }
    }

    /// `path` with every symlink resolved. Components that do not exist yet are appended to the resolved
    /// nearest existing ancestor, so a directory about to be created can be compared with others.
    static func resolved(_ path: String) -> String {
        var absolute = path.hasPrefix("/") ? path : currentDirectory() + "/" + path
        while absolute.count > 1, absolute.hasSuffix("/") { absolute.removeLast() }
        var missing: [Substring] = []
        var existing = absolute
        while true {
            if let real = realpath(existing, nil) {
                defer { free(real) }
                let base = String(cString: real)
                let joined = ([base == "/" ? "" : base] + missing.reversed().map(String.init)).joined(separator: "/")
                return joined.isEmpty ? "/" : joined
            }
            guard let slash = existing.lastIndex(of: "/"), existing != "/" else { return absolute }
            missing.append(existing[existing.index(after: slash)...])
            existing = slash == existing.startIndex ? "/" : String(existing[..<slash])
        }
    }

    /// Whether `inner` is `outer` or below it (both resolved first).
    static func isSameOrInside(_ inner: String, _ outer: String) -> Bool {
        let inner = resolved(inner)
        let outer = resolved(outer)
        return inner == outer || outer == "/" || inner.hasPrefix(outer + "/")
    }

    static func parent(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }

    private static func currentDirectory() -> String {
        guard let cwd = getcwd(nil, 0) else { return "/" }
        defer { free(cwd) }
        return String(cString: cwd)
    }

    private static func randomTag() -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        return (0..<8).map { _ in UInt8.random(in: 0...255, using: &generator) }
    }
}

// `write` and `read` are shadowed by the methods above inside the enum.
private func posixWrite(_ descriptor: Int32, _ buffer: UnsafeRawPointer, _ count: Int) -> Int {
    write(descriptor, buffer, count)
}

private func posixRead(_ descriptor: Int32, _ buffer: UnsafeMutableRawPointer, _ count: Int) -> Int {
    read(descriptor, buffer, count)
}
