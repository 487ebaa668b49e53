import Foundation
import Testing

@testable import KeelCore

@Suite struct OutputFileTests {
    @Test func aFileInAWritableFolderHasNoProblemAndNothingIsCreated() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("keel-output-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: false)
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("chart.svg").path
        #expect(OutputFile.problem(with: path) == nil)
        #expect(!FileManager.default.fileExists(atPath: path))
        // An existing file is written over: no problem either.
        try Data("old".utf8).write(to: URL(fileURLWithPath: path))
        #expect(OutputFile.problem(with: path) == nil)
    }

    @Test func pathsThatCannotBeWrittenAsAFileAreNamed() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("keel-output-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: false)
        defer { try? FileManager.default.removeItem(at: folder) }
        #expect(OutputFile.problem(with: "") == "an empty path")
        #expect(
            OutputFile.problem(with: folder.path)?.hasSuffix("is a directory; give the path of the file to write")
                == true)
        // A trailing slash means a directory, even one that does not exist yet.
        #expect(OutputFile.problem(with: folder.path + "/missing/")?.contains("is a directory") == true)
        #expect(
            OutputFile.problem(with: folder.path + "/missing/chart.svg")
                == "\(folder.path)/missing is not a directory this user can write to")
        // A file where the folder should be.
        let file = folder.appendingPathComponent("plain")
        try Data().write(to: file)
        #expect(OutputFile.problem(with: file.path + "/chart.svg")?.contains("is not a directory") == true)
    }

    /// Found in an outside audit: `keel demo --report` wrote with an atomic rename, which put a regular file
    /// in place of a symbolic link, a FIFO or a device. A link is followed (the file it points to is written,
    /// atomically); a FIFO is written in place; a directory stays an error.
    @Test func aLinkIsFollowedAndAFIFOIsWrittenInPlace() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("keel-output-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: false)
        defer { try? FileManager.default.removeItem(at: folder) }
        let target = folder.appendingPathComponent("report.html")
        try Data("old".utf8).write(to: target)
        let link = folder.appendingPathComponent("latest.html").path
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: "report.html")
        #expect(OutputFile.problem(with: link) == nil)
        try OutputFile.write(Data("new".utf8), to: link)
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: link) == "report.html")
        #expect(try String(contentsOf: target, encoding: .utf8) == "new")
        // A link to a file not made yet: the file is made where it points.
        let dangling = folder.appendingPathComponent("next.html").path
        try FileManager.default.createSymbolicLink(atPath: dangling, withDestinationPath: target.path + ".next")
        #expect(OutputFile.problem(with: dangling) == nil)
        try OutputFile.write(Data("next".utf8), to: dangling)
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: dangling) == target.path + ".next")
        #expect(try String(contentsOfFile: target.path + ".next", encoding: .utf8) == "next")

        let fifo = folder.appendingPathComponent("pipe").path
        #expect(mkfifo(fifo, 0o600) == 0)
        // Its reader is open first, so that opening it for writing does not wait.
        let reader = open(fifo, O_RDONLY | O_NONBLOCK)
        #expect(reader >= 0)
        defer { close(reader) }
        #expect(OutputFile.problem(with: fifo) == nil)
        try OutputFile.write(Data("through the pipe".utf8), to: fifo)
        var buffer = [UInt8](repeating: 0, count: 64)
        let count = buffer.withUnsafeMutableBytes { read(reader, $0.baseAddress, $0.count) }
        #expect(count > 0 && String(decoding: buffer[..<max(count, 0)], as: UTF8.self) == "through the pipe")
        var status = stat()
        #expect(lstat(fifo, &status) == 0 && status.st_mode & S_IFMT == S_IFIFO, "still a FIFO")

        #expect(throws: (any Error).self) { try OutputFile.write(Data(), to: folder.path) }
        #expect(OutputFile.problem(with: link.replacingOccurrences(of: "latest.html", with: "")) != nil)
    }
}
