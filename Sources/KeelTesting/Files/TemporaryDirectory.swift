public import Foundation

/// A fresh directory under the system's temporary directory, removed when the value is released.
///
/// Set `KEEL_KEEP_TEMPORARY_DIRECTORIES=1` to keep them for inspection after a failing test.
public final class TemporaryDirectory: Sendable {
    /// The directory.
    public let url: URL

    /// Creates a new, empty directory whose name starts with `prefix`.
    ///
    /// - Throws: the file system's error when the directory cannot be created.
    public init(prefix: String = "keel") throws {
        let name = "\(prefix)-\(UUID().uuidString.lowercased())"
        url = FileManager.default.temporaryDirectory.appendingPathComponent(name, isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    /// The URL of `relativePath` inside the directory.
    public func url(_ relativePath: String) -> URL {
        url.appendingPathComponent(relativePath)
    }

    /// The directory's path.
    public var path: String { url.path }

    deinit {
        if ProcessInfo.processInfo.environment["KEEL_KEEP_TEMPORARY_DIRECTORIES"] == "1" { return }
        try? FileManager.default.removeItem(at: url)
    }
}
