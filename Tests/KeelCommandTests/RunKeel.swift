import Foundation
import KeelTesting

/// Runs the built `keel` with `arguments` (stdin closed) in `directory`, and returns how it ended and
/// everything it wrote (``ChildProcess/waitForExit(timeout:)`` waits for both streams to close).
func runKeel(_ arguments: [String], in directory: URL? = nil) async throws -> (ChildProcess.Termination, String, String)
{
    let child = try ChildProcess.launch(product: "keel", arguments: arguments, workingDirectory: directory)
    child.closeInput()
    let status = try await child.waitForExit(timeout: .seconds(60))
    return (status, child.output(of: .standardOutput), child.output(of: .standardError))
}
