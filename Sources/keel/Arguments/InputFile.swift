import Foundation

/// The bytes of the input file at `path`, or nil when it cannot be read (missing, a directory, no
/// permission). A pipe is read like a file: CI scripts pass inputs as `<(…)` or `/dev/stdin`, which
/// `FileManager.contents(atPath:)` refuses on Linux.
func readInputFile(_ path: String) -> Data? {
    var isDirectory: ObjCBool = false
    guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue,
        let handle = FileHandle(forReadingAtPath: path)
    else { return nil }
    defer { try? handle.close() }
    do { return try handle.readToEnd() ?? Data() } catch { return nil }
}
