import Foundation
import KeelCore
import KeelReference

/// `keel demo`: the reference app against the reference backend, scenario by scenario, every claim checked.
enum DemoCommand {
    static let command = Keel.Command(
        name: "demo",
        summary: "Show the standard being kept: the reference notes app on two devices against the reference backend.",
        usage: """
            USAGE: keel demo [--report <file.html>] [--only <scenario>,...] [--keep]

            Starts 'keel backend' on a free loopback port with a fresh temporary data directory and drives
            'keel-notes' processes (two devices) through scenarios: an offline start with stale data, edits
            queued as pending, kill -9 during sync, a conflict between two devices resolved, an account switch
            with a pending change, deep links and a notification, a captive portal, a required update, trace
            context, and a publication that happens once. Each scenario names the requirements it demonstrates,
            and every check prints what was verified; a table of requirements ends the run.

            'keel-notes' is looked for next to this executable (swift build --product keel-notes).

            OPTIONS:
              --report <file.html>  Also write the timeline and the table as one self-contained HTML page.
              --only <names>        Run these scenarios only (comma-separated): \(NotesDemo.scenarios.map(\.id).joined(separator: ", ")).
              --keep                Keep the temporary data directory (printed at the end).
              -h, --help            Show this help.

            EXIT STATUS: 0 when every verification held, 1 when one did not (it prints what was expected and
            what was seen) or the demo could not run, 2 for usage errors.

            """,
        run: run
    )

    static func run(_ raw: [String]) async throws -> Int32 {
        let arguments = try Arguments(raw, options: ["report", "only"], flags: ["keep"])
        guard arguments.positionals.isEmpty else {
            throw UsageError("unexpected argument '\(arguments.positionals[0])'")
        }
        let only = arguments.value("only").map { $0.split(separator: ",").map(String.init) }
        let names = NotesDemo.scenarios.map(\.id).joined(separator: ", ")
        if let only, only.isEmpty {
            throw UsageError("--only names no scenario; the scenarios are \(names)")
        }
        if let only, let unknown = only.first(where: { name in !NotesDemo.scenarios.contains { $0.id == name } }) {
            throw UsageError("no scenario '\(unknown)'; the scenarios are \(names)")
        }
        // The report's directory is checked before the demo runs, not after a whole run.
        if let path = arguments.value("report") {
            guard !path.isEmpty else { throw UsageError("--report needs a file path") }
            if let problem = OutputFile.problem(with: path) { throw UsageError("--report \(path): \(problem)") }
        }
        let keel =
            Bundle.main.executableURL?.resolvingSymlinksInPath()
            ?? URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        let notes = keel.deletingLastPathComponent().appendingPathComponent("keel-notes")
        guard FileManager.default.isExecutableFile(atPath: notes.path) else {
            return fail(
                "keel-notes is not built next to keel (\(notes.path)): swift build --product keel-notes", status: 1)
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "keel-demo-\(ProcessInfo.processInfo.processIdentifier)-\(UInt32.random(in: 0...UInt32.max))")

        // The data directory goes whatever happens, unless --keep asked to keep it — interrupted too (Ctrl-C,
        // SIGTERM): it holds the devices' vaults and their keys. An interrupt cancels the run, which stops its
        // processes before the directory goes (removed while a device was starting, it was made again).
        let keep = arguments.has("keep")
        defer { if !keep { try? FileManager.default.removeItem(at: directory) } }
        say("keel demo — the reference notes app (keel-notes) on two devices against the reference backend")
        say("every step names the requirement it shows; every ✓ was checked against what the processes reported")
        let demo = NotesDemo(.init(keel: keel.path, notes: notes.path, directory: directory))
        let work = Task {
            try await demo.run(only: only) { event in
                for line in NotesDemo.lines(for: event) { say(line) }
            }
        }
        let interruption = Locked<Int32?>(nil)
        let signals = TerminationSignals { number in
            interruption.withLock { $0 = $0 ?? number }
            work.cancel()
            // A process that does not answer may hold the run: after a few seconds the directory goes anyway.
            DispatchQueue.global().asyncAfter(deadline: .now() + 5) {
                if !keep { try? FileManager.default.removeItem(at: directory) }
                exit(128 + number)
            }
        }
        defer { signals.restore() }
        let outcome = await work.result
        if let number = interruption.withLock({ $0 }) {
            FileHandle.standardError.write("keel demo: interrupted\(keep ? "; data kept in \(directory.path)" : "")\n")
            return 128 + number
        }
        let report: NotesDemo.Report
        do { report = try outcome.get() } catch {
            return fail("the demo could not start: \(error)", status: 1)
        }
        for line in NotesDemo.summary(report) { say(line) }
        if let path = arguments.value("report") {
            do {
                try Data(NotesDemo.html(report).utf8).write(to: URL(fileURLWithPath: path), options: .atomic)
                say("report: \(path)")
            } catch {
                return fail("cannot write the report to \(path): \(error.localizedDescription)", status: 1)
            }
        }
        if keep { say("data kept in \(directory.path)") }
        return report.passed ? 0 : 1
    }
}
