import Foundation
import KeelTesting
import Testing

@Suite struct TemporaryDirectoryTests {
    @Test func createsAFreshEmptyDirectoryAndRemovesItWithItsContents() throws {
        var path = ""
        do {
            let directory = try TemporaryDirectory(prefix: "keel-test")
            path = directory.path
            #expect(directory.url.lastPathComponent.hasPrefix("keel-test-"))
            #expect(try FileManager.default.contentsOfDirectory(atPath: path).isEmpty)
            try FileManager.default.createDirectory(
                at: directory.url("nested/deeper"), withIntermediateDirectories: true)
            try Data("x".utf8).write(to: directory.url("nested/deeper/file"))
            let other = try TemporaryDirectory(prefix: "keel-test")
            #expect(other.path != path)
        }
        #expect(!FileManager.default.fileExists(atPath: path))
    }
}
