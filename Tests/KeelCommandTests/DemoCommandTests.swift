import Foundation
import KeelTesting
import Testing

/// `keel demo`, run as the built binary (the README's first command): progress as it runs, a requirement
/// table, the HTML report, and its exit statuses.
@Suite(.timeLimit(.minutes(2))) struct DemoCommandTests {
    @Test func theDemoShowsItsStepsAndWritesASelfContainedReport() async throws {
        let directory = try TemporaryDirectory(prefix: "keel-demo-command")
        let report = directory.url("demo.html")
        // Written through a symbolic link, which stays one (found in an outside audit: the atomic write
        // renamed a regular file over it).
        let link = directory.url("latest.html")
        try FileManager.default.createSymbolicLink(atPath: link.path, withDestinationPath: "demo.html")
        let child = try ChildProcess.launch(
            product: "keel", arguments: ["demo", "--only", "links,switch", "--report", link.path])
        // Progress is visible while it runs: the first scenario's heading arrives before the end.
        let heading = try await child.waitForLine(timeout: .seconds(60)) { $0.hasPrefix("[1/2]") }
        #expect(heading.contains("An account switch"))
        let status = try await child.waitForExit(timeout: .seconds(90))
        let output = child.output(of: .standardOutput)
        #expect(status == .exited(0), "\(output)\(child.output(of: .standardError))")
        #expect(output.contains("demonstrates MOB-DATA-006"))
        #expect(output.contains("✓ eli sees none of dana's notes"))
        #expect(output.contains("Requirements demonstrated"))
        #expect(output.contains("✓ MOB-PLAT-008"))
        #expect(output.contains("every one held"))
        #expect(!output.contains("✗"))
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: link.path) == "demo.html")
        let html = try String(contentsOf: report, encoding: .utf8)
        #expect(html.hasPrefix("<!doctype html>") && html.contains("Every check held"))
        #expect(html.contains("id=\"links\"") && html.contains("id=\"switch\""))
        // Self-contained: no stylesheet, script, image or font is fetched from anywhere.
        #expect(!html.contains("<link") && !html.contains("<script") && !html.contains("src="))
        #expect(!html.contains("http://") && !html.contains("https://"))
    }

    /// Found in an outside audit: Ctrl-C or SIGTERM during the demo left its data directory — the devices'
    /// vaults and their keys — in the temporary directory (its removal was a `defer` no signal reaches); so
    /// did SIGHUP (a closed terminal). The scenario cut short says "interrupted", not a device that did not
    /// answer or "CancellationError()".
    @Test(arguments: [SIGINT, SIGTERM, SIGHUP])
    func anInterruptedDemoLeavesNothingBehind(signal: Int32) async throws {
        let temporary = try TemporaryDirectory(prefix: "keel-demo-interrupted")
        let child = try ChildProcess.launch(
            product: "keel", arguments: ["demo", "--only", "kill,links"], environment: ["TMPDIR": temporary.url.path])
        _ = try await child.waitForLine(timeout: .seconds(60)) { $0.hasPrefix("[1/2]") }
        let made = try FileManager.default.contentsOfDirectory(atPath: temporary.url.path)
        #expect(made.contains { $0.hasPrefix("keel-demo-") })  // its data directory, made before the first scenario
        child.kill(signal: signal)
        #expect(try await child.waitForExit(timeout: .seconds(30)) == .exited(128 + signal))
        let left = try FileManager.default.contentsOfDirectory(atPath: temporary.url.path)
        #expect(!left.contains { $0.hasPrefix("keel-demo-") }, "\(left)")
        let output = child.output(of: .standardOutput)
        #expect(output.contains("✗ stopped: interrupted"), "\(output)")
        #expect(!output.contains("CancellationError") && !output.contains("did not answer"), "\(output)")
    }

    /// Found in an outside audit: `keel demo | head -12` ended with SIGPIPE (exit 141), leaving the data
    /// directory with the devices' keys. A reader that goes away stops the run: exit 1, nothing left behind.
    @Test func aReaderThatGoesAwayStopsTheRunAndLeavesNothingBehind() async throws {
        let temporary = try TemporaryDirectory(prefix: "keel-demo-piped")
        let status = temporary.url("status")
        let keel = ChildProcess.productsDirectory.appendingPathComponent("keel").path
        let piped = try ChildProcess.launch(
            executable: "/bin/sh",
            arguments: [
                "-c", #"{ TMPDIR="$1" "$0" demo --only kill,links; echo $? > "$2"; } | head -3 > /dev/null"#,
                keel, temporary.url.path, status.path,
            ])
        #expect(try await piped.waitForExit(timeout: .seconds(60)) == .exited(0))
        #expect(try String(contentsOf: status, encoding: .utf8) == "1\n")
        let left = try FileManager.default.contentsOfDirectory(atPath: temporary.url.path)
        #expect(!left.contains { $0.hasPrefix("keel-demo-") }, "\(left)")
    }

    /// Found in an outside audit: a TMPDIR that cannot be written gave Foundation's "error 512", and one that
    /// does not exist was made, with its parents, and left behind. As `keel navigation simulate` says it
    /// (the demo's status for a run that cannot start is 1).
    @Test func aTemporaryDirectoryThatCannotBeUsedIsNamedAndNeverMade() async throws {
        let directory = try TemporaryDirectory(prefix: "keel-demo-tmpdir")
        let file = directory.url("not-a-directory")
        try Data().write(to: file)
        let nowhere = directory.url("missing/deeper").path
        for tmpdir in [file.path, nowhere] {
            let child = try ChildProcess.launch(
                product: "keel", arguments: ["demo", "--only", "links"], environment: ["TMPDIR": tmpdir])
            #expect(try await child.waitForExit(timeout: .seconds(30)) == .exited(1))
            let errors = child.output(of: .standardError)
            #expect(
                errors.contains("cannot make the run's directory in") && errors.contains("set TMPDIR"), "\(errors)")
            #expect(!errors.contains("NSCocoaErrorDomain"), "\(errors)")
        }
        #expect(!FileManager.default.fileExists(atPath: directory.url("missing").path))
    }

    @Test(arguments: [
        (["demo", "--only", "nope"], "no scenario 'nope'"),
        (["demo", "extra"], "unexpected argument 'extra'"),
        (["demo", "--report"], "--report"),
        (["demo", "--only", ""], "--only names no scenario"),
        (["demo", "--only", ","], "--only names no scenario"),
        // Checked before the run (which takes a while), not after it.
        (["demo", "--only", "links", "--report", "/nonexistent/keel-demo/r.html"], "is not a directory"),
        (["demo", "--only", "links", "--report", "/tmp"], "--report /tmp: /tmp is a directory"),
        (["demo", "--only", "links", "--report", "/nonexistent-keel-demo-dir/"], "is a directory"),
        (["demo", "--only", "links", "--report", ""], "--report needs a file path"),
    ])
    func usageErrorsExitWithTwo(arguments: [String], message: String) async throws {
        let child = try ChildProcess.launch(product: "keel", arguments: arguments)
        #expect(try await child.waitForExit() == .exited(2))
        #expect(child.output(of: .standardError).contains(message), "\(child.output(of: .standardError))")
    }

    /// keel-bench checks its chart's path before a run of many minutes, as the demo does (exit 2, nothing run).
    @Test(arguments: [
        ("/nonexistent/keel-bench/chart.svg", "/nonexistent/keel-bench is not a directory this user can write to"),
        ("/tmp", "/tmp is a directory"),
        ("", "an empty path"),
    ])
    func benchReportPathIsCheckedBeforeTheRun(path: String, message: String) async throws {
        let child = try ChildProcess.launch(
            product: "keel-bench", arguments: ["--filter", "schema.validate", "--rounds", "3", "--report", path])
        #expect(try await child.waitForExit() == .exited(2))
        let errors = child.output(of: .standardError)
        #expect(errors.contains("option '--report': \(message)"), "\(errors)")
        #expect(!child.output(of: .standardOutput).contains("schema.validate"))
    }
}
