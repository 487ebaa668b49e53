package import Foundation

/// Checks of a file path a command will write at its end (a report, a chart), made before the command does
/// its long work: a path that cannot be written is refused at once, not after a run of many minutes.
package enum OutputFile {
    /// Why `path` cannot be written as a file, or nil when it can be (as far as can be told without creating
    /// it): it must not be empty, name a directory (or end in `/`), or lie in a folder that does not exist or
    /// this user cannot write to. A symbolic link is judged by the file it points to; a FIFO or a device
    /// (`/dev/stdout`) only needs to be writable. Nothing is created.
    package static func problem(with path: String) -> String? {
        guard !path.isEmpty else { return "an empty path" }
        if path.hasSuffix("/") { return "\(path) is a directory; give the path of the file to write" }
        switch destination(of: path) {
        case .directory:
            return "\(path) is a directory; give the path of the file to write"
        case .other:
            return "\(path) is neither a file, a FIFO nor a device"
        case .inPlace:
            return access(path, W_OK) == 0 ? nil : "\(path) exists and this user cannot write it"
        case .file(let target):
            if FileManager.default.fileExists(atPath: target), !FileManager.default.isWritableFile(atPath: target) {
                return "\(path) exists and this user cannot write it"
            }
            // Written atomically: a new file in the same folder, renamed over the old one.
            let folder = URL(fileURLWithPath: target).deletingLastPathComponent().path
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: folder, isDirectory: &isDirectory), isDirectory.boolValue,
                FileManager.default.isWritableFile(atPath: folder)
            else {
                return "\(folder) is not a directory this user can write to"
            }
            return nil
        }
    }

    /// Writes `data` at `path`, as ``problem(with:)`` judged it: a regular file (or nothing yet) is replaced
    /// atomically; a symbolic link is followed, and the file it points to written, the link kept; a FIFO or a
    /// device (`/dev/stdout`) is written in place, not replaced by a regular file (found in an outside audit:
    /// `keel demo --report` renamed a file over them).
    ///
    /// - Throws: `CocoaError` when the file cannot be written; ``OutputFile/Failure`` for a directory or
    ///   something that is neither a file, a FIFO nor a device.
    package static func write(_ data: Data, to path: String) throws {
        switch destination(of: path) {
        case .directory: throw Failure(message: "\(path) is a directory")
        case .other: throw Failure(message: "\(path) is neither a file, a FIFO nor a device")
        case .file(let target): try data.write(to: URL(fileURLWithPath: target), options: .atomic)
        case .inPlace:
            let descriptor = open(path, O_WRONLY | O_CLOEXEC)
            guard descriptor >= 0 else { throw Failure(message: "\(path): \(String(cString: strerror(errno)))") }
            defer { close(descriptor) }
            try data.withUnsafeBytes { buffer in
                var offset = 0
                while offset < buffer.count {
                    let count = Foundation.write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
                    if count > 0 {
                        offset += count
                    } else if count < 0 && errno == EINTR {
                        continue
                    } else {
                        throw Failure(message: "\(path): \(String(cString: strerror(errno)))")
                    }
                }
            }
        }
    }

    /// Why ``write(_:to:)`` could not write.
    package struct Failure: Error, CustomStringConvertible {
        /// What, for people.
        package let message: String
        package var description: String { message }
    }

    /// What writing at a path writes.
    enum Destination: Equatable {
        /// A regular file, at this path (links resolved), or nothing yet: written atomically.
        case file(String)
        /// A FIFO or a device (what the path names, links followed): opened and written in place.
        case inPlace
        /// A directory: refused.
        case directory
        /// A socket, say: refused.
        case other
    }

    static func destination(of path: String) -> Destination {
        var status = stat()
        if stat(path, &status) == 0 {
            switch status.st_mode & S_IFMT {
            case S_IFDIR: return .directory
            case S_IFIFO, S_IFCHR, S_IFBLK: return .inPlace
            case S_IFREG:
                // The file a link points to, so that the rename replaces it, not the link.
                guard let resolved = realpath(path, nil) else { return .file(path) }
                defer { free(resolved) }
                return .file(String(cString: resolved))
            default: return .other
            }
        }
        // Nothing there, or a link to nothing yet: the file is made where the links lead.
        var target = path
        for _ in 0..<40 {
            var link = stat()
            guard lstat(target, &link) == 0, link.st_mode & S_IFMT == S_IFLNK,
                let next = try? FileManager.default.destinationOfSymbolicLink(atPath: target)
            else { break }
            target =
                next.hasPrefix("/")
                ? next : URL(fileURLWithPath: target).deletingLastPathComponent().appendingPathComponent(next).path
        }
        return .file(target)
    }
}
