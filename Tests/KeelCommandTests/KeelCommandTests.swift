import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
import KeelTesting
import Testing

/// The `keel` executable, run as a child process: stdout, stderr and exit status.
@Suite(.timeLimit(.minutes(3))) struct KeelCommandTests {
    struct Run {
        var status: ChildProcess.Termination
        var stdout: String
        var stderr: String
    }

    func keel(_ arguments: String...) async throws -> Run {
        let (status, stdout, stderr) = try await runKeel(arguments)
        return Run(status: status, stdout: stdout, stderr: stderr)
    }

    @Test func helpListsTheSubcommandsOnStdout() async throws {
        for invocation in [["--help"], ["-h"], ["help"]] {
            let child = try ChildProcess.launch(product: "keel", arguments: invocation)
            #expect(try await child.waitForExit() == .exited(0))
            let usage = try await child.waitForLine { $0.hasPrefix("USAGE: keel") }
            #expect(usage == "USAGE: keel <subcommand> [options]")
            _ = try await child.waitForLine { $0.contains("serve") }
            _ = try await child.waitForLine { $0.contains("faults") }
        }
    }

    @Test(arguments: ["serve", "faults", "schema", "contract", "inventory"])
    func everySubcommandHasHelp(subcommand: String) async throws {
        let viaFlag = try await keel(subcommand, "--help")
        #expect(viaFlag.status == .exited(0))
        #expect(viaFlag.stdout.hasPrefix("USAGE: keel \(subcommand)"))
        #expect(viaFlag.stderr.isEmpty)
        let viaHelp = try await keel("help", subcommand)
        #expect(viaHelp.stdout == viaFlag.stdout)
    }

    /// `--help` where an option may stand prints the subcommand's usage; as an option's value or after
    /// `--` it is that value (found by a black-box audit: any `-h` anywhere printed help).
    @Test func helpIsAnOptionOnlyWhereAnOptionMayStand() async throws {
        for arguments in [
            ["trace", "parse", "--help"], ["contract", "diff", "a.yaml", "-h"], ["demo", "--keep", "--help"],
        ] {
            let (status, stdout, _) = try await runKeel(arguments)
            #expect(status == .exited(0), "\(arguments)")
            #expect(stdout.hasPrefix("USAGE: keel \(arguments[0])"), "\(arguments)")
        }
        let value = try await keel(
            "trace", "parse", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "--tracestate", "-h")
        #expect(value.status == .exited(0))
        #expect(value.stdout.contains("tracestate:  dropped"), "\(value.stdout)")
        let afterDashes = try await keel("trace", "parse", "--", "-h")
        #expect(afterDashes.status == .exited(1))
        #expect(afterDashes.stdout.contains("traceparent: invalid"))
    }

    @Test func noArgumentsPrintsUsageToStderrAndExits2() async throws {
        let run = try await keel()
        #expect(run.status == .exited(2))
        #expect(run.stdout.isEmpty)
        #expect(run.stderr.hasPrefix("USAGE: keel"))
    }

    @Test func unknownSubcommandIsAUsageError() async throws {
        let run = try await keel("deploy")
        #expect(run.status == .exited(2))
        #expect(run.stdout.isEmpty)
        #expect(run.stderr.hasPrefix("error: unknown subcommand 'deploy'"))
        #expect(run.stderr.contains("USAGE: keel <subcommand>"))
    }

    @Test(arguments: [
        (["--verbose"], "unknown option '--verbose'"),
        (["faults", "--bogus"], "unknown option '--bogus'"),
        (["faults", "--timeout"], "option '--timeout' needs a value"),
        // Found in review: the next option was taken as the value (`--output --check` wrote into `--check/`).
        (["contract", "generate", "spec.yaml", "--output", "--check"], "option '--output' needs a value (--check is"),
        (["trace", "parse", "--tracestate", "--format", "json"], "option '--tracestate' needs a value"),
        (["backend", "--data", "--admin"], "option '--data' needs a value"),
        (["faults", "--timeout", "soon"], "option '--timeout' needs a whole number from 1 to 60"),
        (["faults", "--timeout", "0.5"], "option '--timeout' needs a whole number from 1 to 60"),
        (["faults", "--json=yes"], "option '--json' takes no value"),
        (["faults", "--only", "nope"], "unknown fault 'nope'"),
        (["serve", "--port", "70000"], "option '--port' needs a whole number from 0 to 65535"),
        (["serve", "extra"], "unexpected argument 'extra'"),
        (["serve", "--captive-portal", "ftp://x"], "--captive-portal needs 'login' or an http(s) URL"),
        // Found in review: the portal answered every request and the script was ignored without a word.
        (["serve", "--captive-portal", "login", "--script", "x.json"], "--script and --captive-portal cannot be"),
    ])
    func badFlagsAreUsageErrors(arguments: [String], message: String) async throws {
        let child = try ChildProcess.launch(product: "keel", arguments: arguments)
        #expect(try await child.waitForExit() == .exited(2))
        let first = try #require(try await child.nextLine(from: .standardError))
        #expect(first.hasPrefix("error: \(message)"), "stderr was: \(first)")
        #expect(try await child.nextLine() == nil)
    }

    @Test func versionIsPrinted() async throws {
        let run = try await keel("--version")
        #expect(run.status == .exited(0))
        #expect(run.stdout.hasPrefix("keel "))
    }

    @Test func faultsReportsWhatURLSessionSawForEachScriptedFault() async throws {
        let run = try await keel(
            "faults", "--json", "--timeout", "1", "--only", "ok", "--only", "no-response", "--only", "reset-at-start")
        #expect(run.status == .exited(0))
        let lines = run.stdout.split(separator: "\n").map(String.init)
        #expect(lines.count == 3)
        struct Observation: Decodable {
            var fault: String
            var status: Int?
            var bodyBytes: Int?
            var urlErrorCode: Int?
        }
        let observations = try lines.map { try JSONDecoder().decode(Observation.self, from: Data($0.utf8)) }
        #expect(observations.map(\.fault) == ["ok", "no-response", "reset-at-start"])
        #expect(observations[0].status == 200 && observations[0].bodyBytes == 16)
        #expect(observations[1].urlErrorCode == URLError.Code.timedOut.rawValue)
        #expect(observations[2].urlErrorCode == URLError.Code.networkConnectionLost.rawValue)
    }

    @Test func faultsTableHasOneRowPerFault() async throws {
        let run = try await keel("faults", "--timeout", "1")
        #expect(run.status == .exited(0))
        let rows = run.stdout.split(separator: "\n")
        #expect(rows.first?.hasPrefix("fault") == true)
        #expect(rows.count == 22)  // header + 21 faults
        #expect(rows.contains { $0.hasPrefix("captive-portal-login") && $0.contains("HTTP 200") })
        #expect(rows.contains { $0.hasPrefix("stall-at-start") && $0.contains("timedOut") })
        #expect(rows.contains { $0.hasPrefix("captive-portal-redirect") && $0.contains("cannotConnectToHost") })
    }

    @Test func serveAnswersFromAScriptFile() async throws {
        let directory = try TemporaryDirectory()
        let script = directory.url("script.json")
        try Data(
            #"""
            [{"status": 503, "headers": {"Retry-After": "7"}, "body": "down"},
             {"status": 200, "body": "0123456789", "chunkSize": 3},
             {"effect": "disconnectAtStart"}]
            """#.utf8
        ).write(to: script)
        let child = try ChildProcess.launch(product: "keel", arguments: ["serve", "--script", script.path])
        let banner = try #require(try await child.nextLine())
        let base = try #require(URL(string: String(banner.dropFirst("listening on ".count))))
        let first = await fetch(base.appendingPathComponent("a"))
        #expect(first.status == 503 && first.headers["Retry-After"] as? String == "7")
        let second = await fetch(base.appendingPathComponent("b"))
        #expect(second.text == "0123456789")
        let third = await fetch(base.appendingPathComponent("c"))
        #expect(third.errorCode != nil)
        _ = try await child.waitForLine { $0.hasPrefix("#1 GET /b") }
        try child.writeLine("quit")
        #expect(try await child.waitForExit() == .exited(0))
    }

    /// Found in review: `keel serve | head -1` died of SIGPIPE at the first request it logged after `head` had
    /// gone, and that request went unanswered. The log is lost; the server goes on.
    @Test func serveOutlivesAReaderOfItsLogThatWentAway() async throws {
        let keel = ChildProcess.productsDirectory.appendingPathComponent("keel").path
        let child = try ChildProcess.launch(
            executable: "/bin/bash", arguments: ["-c", "set -o pipefail; \"$0\" serve | head -1", keel])
        let banner = try #require(try await child.nextLine())
        let base = try #require(URL(string: String(banner.dropFirst("listening on ".count))))
        for path in ["a", "b", "c"] {
            #expect(await fetch(base.appendingPathComponent(path)).status == 404, "\(path)")
        }
        try child.writeLine("quit")
        #expect(try await child.waitForExit() == .exited(0))
    }

    @Test(arguments: [SIGTERM, SIGINT])
    func serveStopsCleanlyOnASignal(signal: Int32) async throws {
        let child = try ChildProcess.launch(product: "keel", arguments: ["serve"])
        let banner = try #require(try await child.nextLine())
        let base = try #require(URL(string: String(banner.dropFirst("listening on ".count))))
        #expect(await fetch(base.appendingPathComponent("a")).status == 404)
        _ = try await child.waitForLine { $0.hasPrefix("#0 GET /a") }
        child.kill(signal: signal)
        #expect(try await child.waitForExit() == .exited(0))
        #expect(child.output(of: .standardOutput).contains("stopped after 1 request(s)"))
    }

    @Test func serveAsACaptivePortalAnswersEveryPathWithTheLoginPage() async throws {
        let child = try ChildProcess.launch(product: "keel", arguments: ["serve", "--captive-portal", "login"])
        let banner = try #require(try await child.nextLine())
        let base = try #require(URL(string: String(banner.dropFirst("listening on ".count))))
        let answered = await fetch(base.appendingPathComponent("api/notes"))
        #expect(answered.status == 200)
        #expect(answered.text.contains("<form"))
    }

    @Test(arguments: [
        ("not json", "is not valid JSON: line 1, column 1"),
        (#"[{"status": 200, "status": 500}]"#, #"duplicate member "status""#),
        (#"{"status": 200}"#, "at top level expected Array"),
        (#"[{"status": "200"}]"#, "at [0].status expected"),
        // Found in an outside audit: the place named was the entry after the bad one ("at [2]: response [1]").
        (#"[{"status": 200}, {"effect": "explode"}, {}]"#, #"at [1]: response [1]: unknown effect "explode""#),
        (#"[{"effect": "disconnectDuringResponseBody"}]"#, #"needs "afterBytes""#),
        (#"[{"status": 42}]"#, "at [0]: response [0]: status 42 is not a three-digit code"),
        // A misspelt member would answer the default (200) instead of the 503 the author wrote.
        (#"[{"stauts": 503}]"#, #"unknown member "stauts""#),
        (#"[{"throttle": {"bytes": 4, "periodMS": 5}}]"#, #"unknown member "periodMS""#),
        (#"[{"status": 1e400}]"#, "the number 1e400 at /0/status is out of range"),
        // Found in an outside audit: valid JSON whose number an Int cannot hold was called "not valid JSON".
        (#"[{"status": 200.5}]"#, "at [0].status 200.5 is not a whole number an Int can hold"),
        (#"[{}, {"throttle": {"bytes": 5000000000000000000000, "periodMs": 5}}]"#, "at [1].throttle.bytes"),
    ])
    func serveRejectsABadScriptNamingTheFileAndTheProblem(content: String, message: String) async throws {
        let directory = try TemporaryDirectory()
        let script = directory.url("bad.json")
        try Data(content.utf8).write(to: script)
        let run = try await keel("serve", "--script", script.path)
        #expect(run.status == .exited(2))
        #expect(run.stderr.contains(script.path), "stderr was: \(run.stderr)")
        #expect(run.stderr.contains(message), "stderr was: \(run.stderr)")
        #expect(!run.stdout.contains("listening"))
    }

    @Test func serveRejectsAMissingScriptFile() async throws {
        let run = try await keel("serve", "--script", "/nonexistent/keel-script.json")
        #expect(run.status == .exited(2))
        #expect(run.stderr.contains("cannot read script /nonexistent/keel-script.json: no such file"))
        let directory = try TemporaryDirectory()
        let inDirectory = try await keel("serve", "--script", directory.url.path)
        #expect(inDirectory.status == .exited(2))
        #expect(inDirectory.stderr.contains("it is a directory"), "\(inDirectory.stderr)")
    }

    /// Found in an outside audit: a script given as a pipe (`--script <(...)`) was refused as "permission
    /// denied", though every other command reads its input files from pipes.
    @Test func serveReadsAScriptFromAPipe() async throws {
        let keel = ChildProcess.productsDirectory.appendingPathComponent("keel").path
        let child = try ChildProcess.launch(
            executable: "/bin/bash",
            arguments: ["-c", #"exec "$0" serve --script <(echo '[{"status": 418}]')"#, keel])
        defer { child.kill() }
        let banner = try #require(try await child.nextLine(timeout: .seconds(30)))
        let url = try #require(URL(string: String(banner.dropFirst("listening on ".count))))
        let (_, response) = try await URLSession.shared.data(from: url)
        #expect((response as? HTTPURLResponse)?.statusCode == 418)
    }
}
