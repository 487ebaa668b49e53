import Foundation
import KeelTesting
import Testing

/// The reference app is the worked example of the README: its app side must build on Keel's public API
/// alone, or an app copying it would not compile (issue #15: "if it needs an internal, the public API is
/// missing something — add it properly"). Found in an outside audit: it used `Locked`, `AccountID.same`,
/// `RandomSource.uuidString()` and KeelCrypto's digest, all package-internal, and nothing noticed — inside
/// the package, `package` declarations are visible.
@Suite struct ReferenceAppPublicAPITests {
    /// `NotesApp`, `NotesRemote` and `NotesSync` type-checked by swiftc as a module of their own, outside the
    /// package (no `-package-name`), against the modules this build produced.
    @Test func theReferenceAppsOwnCodeTypeChecksOnPublicAPIAlone() async throws {
        let repository = ContractGenerateCommandTests.repository
        let sources = ["Sources/KeelReference/App", "Sources/KeelReference/Client"].flatMap { folder in
            let directory = repository.appendingPathComponent(folder)
            return ((try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? [])
                .filter { $0.hasSuffix(".swift") }.sorted().map { directory.appendingPathComponent($0).path }
        }
        try #require(sources.count >= 3, "the app side's sources: \(sources)")
        // The C modules Keel's modules import (their module maps, for swiftc outside SwiftPM).
        let shims =
            ((try? FileManager.default.contentsOfDirectory(atPath: repository.appendingPathComponent("Sources").path))
            ?? []).sorted().filter {
                FileManager.default.fileExists(
                    atPath: repository.appendingPathComponent("Sources/\($0)/module.modulemap").path)
            }
        let compiler = try ChildProcess.launch(
            executable: try ContractGenerateCommandTests.swiftc(),
            arguments: [
                "-typecheck", "-swift-version", "6", "-enable-upcoming-feature", "ExistentialAny",
                "-enable-upcoming-feature", "InternalImportsByDefault", "-module-name", "ReferenceAppOutsideKeel",
                "-I", ChildProcess.productsDirectory.appendingPathComponent("Modules").path,
            ] + shims.flatMap { ["-I", repository.appendingPathComponent("Sources/\($0)").path] } + sources)
        compiler.closeInput()
        let status = try await compiler.waitForExit(timeout: .seconds(300))
        let errors = compiler.output(of: .standardError)
        #expect(status == .exited(0), "\(errors)")
        #expect(!errors.contains("inaccessible"), "\(errors)")
    }
}
