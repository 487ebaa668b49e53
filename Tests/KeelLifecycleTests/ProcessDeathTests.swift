import Foundation
import KeelLifecycle
import KeelTesting
import Testing

/// PLAT-005.1 and PLAT-008.5 with a real process: `keel-fixtures lifecycle-app` navigates, types a draft,
/// starts an irreversible operation and is killed with SIGKILL; a relaunch on the same directory shows the
/// same screen with the draft, and the operation is never run again.
@Suite(.timeLimit(.minutes(2))) struct ProcessDeathTests {
    let directory: TemporaryDirectory
    init() throws { directory = try TemporaryDirectory(prefix: "keel-lifecycle-death") }

    static let contract = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("contracts/navigation.example.json").path

    func launch(relaunch: Bool) throws -> ChildProcess {
        try ChildProcess.launch(
            product: "keel-fixtures",
            arguments: ["lifecycle-app", "--dir", directory.url.path, "--contract", Self.contract]
                + (relaunch ? ["--relaunch"] : []))
    }

    /// Sends `line` and returns the next line the app prints.
    func say(_ line: String, to child: ChildProcess) async throws -> String {
        try child.writeLine(line)
        return try #require(try await child.nextLine(timeout: .seconds(30)), "no answer to \(line)")
    }

    func navigateAndType(_ child: ChildProcess) async throws {
        for line in [
            "signin alice", "open notes", "open note noteID=1", "open edit noteID=1", "type my draft", "background",
        ] {
            _ = try await say(line, to: child)
        }
    }

    var executions: [String] {
        ((try? String(contentsOf: directory.url("server.log"), encoding: .utf8)) ?? "").split(separator: "\n").map(
            String.init)
    }

    func killed(_ child: ChildProcess) async throws {
        child.kill()
        #expect(try await child.waitForExit() == .signaled(ChildProcess.Signal.kill))
    }

    @Test func afterSIGKILLTheSameScreenAndDraftReturnAndACompletedOperationIsNotRunAgain() async throws {
        let first = try launch(relaunch: false)
        try await navigateAndType(first)
        let started = try await say("publish", to: first)
        #expect(started.hasPrefix("started publish@"))
        let id = String(started.dropFirst("started ".count))
        #expect(try await say("go", to: first) == "completed \(id)")
        try await killed(first)
        #expect(executions == [id])

        let second = try launch(relaunch: true)
        let launchLine = try #require(try await second.nextLine(timeout: .seconds(30)))
        #expect(launchLine.contains(#""stack": ["home", "notes", "note", "edit"]"#))
        #expect(launchLine.contains("restoreDraft edit noteID=1"))
        #expect(try await second.nextLine(timeout: .seconds(30)) == "input my draft")
        // The confirmation replayed after restore (a re-render): the ledger answers, nothing runs.
        #expect(try await say("publish", to: second) == "recorded \(id) succeeded published \(id)")
        // Back and forward again on the same screen: still the same operation, still not run.
        #expect(executions == [id])
        second.closeInput()
        #expect(try await second.waitForExit() == .exited(0))
    }

    @Test func anOperationKilledInFlightIsReattachedAndNeverStartedAgain() async throws {
        let first = try launch(relaunch: false)
        try await navigateAndType(first)
        let started = try await say("publish", to: first)
        let id = String(started.dropFirst("started ".count))
        try await killed(first)  // recorded, not executed
        #expect(executions.isEmpty)

        let second = try launch(relaunch: true)
        _ = try await second.nextLine(timeout: .seconds(30))
        _ = try await second.nextLine(timeout: .seconds(30))
        #expect(try await say("unsettled", to: second) == "unsettled \(id)")
        #expect(try await say("publish", to: second) == "recorded \(id) started -")
        #expect(executions.isEmpty)
        second.closeInput()
        _ = try await second.waitForExit()
    }
}
