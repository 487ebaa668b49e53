import Foundation

/// Checks of a file path a command will write at its end (a report, a chart), made before the command does
/// its long work: a path that cannot be written is refused at once, not after a run of many minutes.
package enum OutputFile {
    /// Why `path` cannot be written as a file, or nil when it can be (as far as can be told without creating
    /// it): it must not be empty, name a directory (or end in `/`), or lie in a folder that does not exist or
    /// this user cannot write to. Nothing is created.
    package static func problem(with path: String) -> String? {
        guard !path.isEmpty else { return "an empty path" }
        var isDirectory: ObjCBool = false
        let exists = FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory)
        if path.hasSuffix("/") || (exists && isDirectory.boolValue) {
            return "\(path) is a directory; give the path of the file to write"
        }
        if exists, !FileManager.default.isWritableFile(atPath: path) {
            return "\(path) exists and this user cannot write it"
        }
        let folder = URL(fileURLWithPath: path).deletingLastPathComponent().path
        guard FileManager.default.fileExists(atPath: folder, isDirectory: &isDirectory), isDirectory.boolValue,
            FileManager.default.isWritableFile(atPath: folder)
        else {
            return "\(folder) is not a directory this user can write to"
        }
        return nil
    }
}
