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
}
