import Foundation

/// Peak resident memory of this process, from `/proc` (Linux), for tests and benchmarks that must show a
/// workload stays within a memory bound.
///
/// ```swift
/// let before = try PeakMemory.reset()
/// try await downloadSomethingLarge()
/// #expect(try PeakMemory.peak() - before < 48 << 20)
/// ```
public enum PeakMemory {
    /// Whether the peak can be reset and read here (`/proc/self/clear_refs` is writable).
    public static var isAvailable: Bool { FileManager.default.isWritableFile(atPath: "/proc/self/clear_refs") }

    /// Resets the peak to the current resident size and returns it, in bytes.
    ///
    /// - Throws: when `/proc` cannot be written or read.
    public static func reset() throws -> Int {
        try Data("5".utf8).write(to: URL(fileURLWithPath: "/proc/self/clear_refs"))
        return try peak()
    }

    /// The peak resident size since the process started or the last ``reset()``, in bytes.
    ///
    /// - Throws: when `/proc/self/status` cannot be read or has no `VmHWM` line.
    public static func peak() throws -> Int {
        let status = try String(contentsOfFile: "/proc/self/status", encoding: .utf8)
        guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
            let kilobytes = Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "")
        else { throw CocoaError(.fileReadCorruptFile) }
        return kilobytes * 1024
    }
}
