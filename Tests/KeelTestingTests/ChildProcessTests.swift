import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
import KeelTesting
import Testing

/// The child-process harness, driving the package's own `keel` executable and /bin/sh.
@Suite(.timeLimit(.minutes(1))) struct ChildProcessTests {
    @Test func launchesAProductReadsItsLinesWritesItsInputAndSeesItExit() async throws {
        let child = try ChildProcess.launch(product: "keel", arguments: ["serve"])
        let banner = try #require(try await child.nextLine())
        #expect(banner.hasPrefix("listening on http://127.0.0.1:"))
        let base = try #require(URL(string: String(banner.dropFirst("listening on ".count))))

        _ = try await makeSession().get(base.appendingPathComponent("hello"))
        let logged = try await child.waitForLine { $0.contains("GET /hello") }
        #expect(logged.hasPrefix("#0 GET /hello"))

        try child.writeLine("quit")
        #expect(try await child.waitForExit() == .exited(0))
        #expect(try await child.nextLine() == "stopped after 1 request(s)")
        #expect(try await child.nextLine() == nil)  // end of stream
    }

    @Test func sigkillEndsTheChildAtOnceWithoutRunningItsShutdown() async throws {
        let child = try ChildProcess.launch(product: "keel", arguments: ["serve"])
        let banner = try #require(try await child.nextLine())
        #expect(banner.hasPrefix("listening on"))
        child.kill()
        #expect(try await child.waitForExit() == .signaled(ChildProcess.Signal.kill))
        #expect(child.termination == .signaled(ChildProcess.Signal.kill))
        // A graceful stop prints "stopped after …"; SIGKILL leaves no chance to.
        #expect(try await child.nextLine() == nil)
        #expect(!FileManager.default.fileExists(atPath: "/proc/\(child.pid)/stat") || !isZombieOrAlive(child.pid))
        child.kill()  // after the end: does nothing, and in particular signals no other process
    }

    @Test func killingTheChildKillsWhatItStartedToo() async throws {
        // sh starts a grandchild that would hold the output pipe open for ten minutes.
        let child = try ChildProcess.launch(executable: "/bin/sh", arguments: ["-c", "sleep 600 & echo started; wait"])
        #expect(try await child.nextLine() == "started")
        child.kill()
        let start = ContinuousClock.now
        #expect(try await child.waitForExit(timeout: .seconds(20)) == .signaled(ChildProcess.Signal.kill))
        #expect(ContinuousClock.now - start < .seconds(20))  // not the grandchild's ten minutes
    }

    @Test func readsStandardErrorAndTheExitStatusSeparately() async throws {
        let child = try ChildProcess.launch(product: "keel", arguments: ["no-such-command"])
        #expect(try await child.waitForExit() == .exited(2))
        let firstError = try await child.nextLine(from: .standardError)
        #expect(firstError == "error: unknown subcommand 'no-such-command'")
        #expect(try await child.nextLine(from: .standardOutput) == nil)
        #expect(child.output(of: .standardError).contains("USAGE: keel"))
    }

    @Test func nextLineTimesOutWhileTheChildIsSilent() async throws {
        let child = try ChildProcess.launch(product: "keel", arguments: ["serve"])
        _ = try await child.nextLine()
        await #expect(throws: WaitTimeout.self) { try await child.nextLine(timeout: .milliseconds(200)) }
    }

    @Test func passesEnvironmentAndWorkingDirectoryAndReadsInput() async throws {
        let directory = try TemporaryDirectory()
        let child = try ChildProcess.launch(
            executable: "/bin/sh",
            arguments: ["-c", #"echo "$KEEL_GREETING"; pwd; read line; echo "got $line"; exit 7"#],
            environment: ["KEEL_GREETING": "hello child"],
            workingDirectory: directory.url
        )
        #expect(try await child.nextLine() == "hello child")
        let workingDirectory = try #require(try await child.nextLine())
        #expect(
            URL(fileURLWithPath: workingDirectory).resolvingSymlinksInPath() == directory.url.resolvingSymlinksInPath())
        try child.writeLine("ping")
        #expect(try await child.nextLine() == "got ping")
        #expect(try await child.waitForExit() == .exited(7))
    }

    @Test func closingInputGivesTheChildEndOfFile() async throws {
        let child = try ChildProcess.launch(executable: "/bin/sh", arguments: ["-c", "cat; echo done"])
        try child.write("partial line without newline")
        child.closeInput()
        #expect(try await child.nextLine() == "partial line without newlinedone")
        #expect(try await child.waitForExit() == .exited(0))
        #expect(throws: ChildProcessError.self) { try child.write("too late") }
    }

    @Test func releasingARunningChildKillsAndReapsIt() async throws {
        var pid: Int32 = 0
        do {
            let child = try ChildProcess.launch(executable: "/bin/sh", arguments: ["-c", "sleep 600"])
            pid = child.pid
        }
        // Reaped: no /proc entry (not even a zombie) remains for the pid.
        #expect(!FileManager.default.fileExists(atPath: "/proc/\(pid)/stat") || !isZombieOrAlive(pid))
    }

    @Test func aMissingProductIsAClearError() throws {
        #expect {
            _ = try ChildProcess.launch(product: "no-such-product")
        } throws: { error in
            (error as? ChildProcessError)?.message.contains("no executable no-such-product") == true
        }
    }

    private func isZombieOrAlive(_ pid: Int32) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8) else { return false }
        // A recycled pid could belong to a new process; only our `sh -c "sleep 600"` would matter.
        return stat.contains("(sh)") || stat.contains("(sleep)") || stat.contains("(keel)")
    }
}
