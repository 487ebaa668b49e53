import Foundation
import KeelCore
import KeelReference
import KeelTesting

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
            what was seen) or the demo could not run or was cut short by a reader that went away (`| head`),
            2 for usage errors, 128 + the signal's number when SIGINT, SIGTERM or SIGHUP stopped it. Stopped,
            it removes its data directory (unless --keep) all the same.

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
        // The run's directory goes inside the temporary directory, which must be there: a TMPDIR naming nothing
        // was created with all its parents and left behind, and one that cannot be written gave Foundation's
        // "error 512" (found in an outside audit). As `keel navigation simulate` says it.
        let base = FileManager.default.temporaryDirectory
        let directory = base.appendingPathComponent(
            "keel-demo-\(ProcessInfo.processInfo.processIdentifier)-\(UInt32.random(in: 0...UInt32.max))")
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: base.path, isDirectory: &isDirectory), isDirectory.boolValue,
            (try? FileManager.default.createDirectory(
                at: directory, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])) != nil
        else {
            return fail(
                "cannot make the run's directory in \(base.path): set TMPDIR to a writable directory", status: 1)
        }

        // The data directory goes whatever happens, unless --keep asked to keep it — interrupted too (Ctrl-C,
        // SIGTERM, SIGHUP), or cut short by a reader that went away (`keel demo | head`): it holds the devices'
        // vaults and their keys. Either cancels the run, which stops its processes before the directory goes
        // (removed while a device was starting, it was made again).
        let keep = arguments.has("keep")
        defer { if !keep { try? FileManager.default.removeItem(at: directory) } }
        // A closed standard output is an EPIPE on the next line written, not a SIGPIPE that kills the run and
        // leaves the directory (found in an outside audit: exit 141).
        signal(SIGPIPE, SIG_IGN)
        defer { signal(SIGPIPE, SIG_DFL) }
        let stop = Locked<Stop?>(nil)
        let running = Locked<Task<NotesDemo.Report, any Error>?>(nil)
        /// Stops the run for `reason` (the first reason stays): cancels it, and if it does not end within a few
        /// seconds (a process that does not answer), removes the directory and exits anyway.
        @Sendable func stopRun(_ reason: Stop) {
            guard
                stop.withLock({ stopped in
                    defer { stopped = stopped ?? reason }
                    return stopped == nil
                })
            else { return }
            running.withLock { $0 }?.cancel()
            DispatchQueue.global().asyncAfter(deadline: .now() + 5) {
                if !keep { try? FileManager.default.removeItem(at: directory) }
                exit(reason.status)
            }
        }
        /// Writes `line`; a reader that went away stops the run.
        @Sendable func show(_ line: String) {
            guard stop.withLock({ $0 }) != .outputClosed else { return }
            if !POSIX.writeAll(1, Array((line + "\n").utf8)) { stopRun(.outputClosed) }
        }
        let signals = TerminationSignals(TerminationSignals.withHangUp) { number in stopRun(.signal(number)) }
        defer { signals.restore() }
        show("keel demo — the reference notes app (keel-notes) on two devices against the reference backend")
        show("every step names the requirement it shows; every ✓ was checked against what the processes reported")
        let demo = NotesDemo(.init(keel: keel.path, notes: notes.path, directory: directory))
        let work = Task {
            try await demo.run(only: only) { event in
                for line in NotesDemo.lines(for: event) { show(line) }
            }
        }
        running.withLock { $0 = work }
        // Stopped before the task was known: cancelled now.
        if stop.withLock({ $0 }) != nil { work.cancel() }
        let outcome = await work.result
        switch stop.withLock({ $0 }) {
        case .signal(let number):
            FileHandle.standardError.write("keel demo: interrupted\(keep ? "; data kept in \(directory.path)" : "")\n")
            return 128 + number
        case .outputClosed:
            let kept = keep ? "; data kept in \(directory.path)" : ""
            FileHandle.standardError.write("keel demo: standard output was closed; the run stopped\(kept)\n")
            return 1
        case nil: break
        }
        let report: NotesDemo.Report
        do { report = try outcome.get() } catch {
            return fail("the demo could not start: \(error)", status: 1)
        }
        for line in NotesDemo.summary(report) { show(line) }
        if let path = arguments.value("report") {
            do {
                try OutputFile.write(Data(NotesDemo.html(report).utf8), to: path)
                show("report: \(path)")
            } catch {
                return fail("cannot write the report to \(path): \(error)", status: 1)
            }
        }
        if keep { show("data kept in \(directory.path)") }
        if stop.withLock({ $0 }) == .outputClosed { return 1 }
        return report.passed ? 0 : 1
    }

    /// Why a run stopped before its end.
    enum Stop: Equatable {
        /// A signal (SIGINT, SIGTERM, SIGHUP): exit 128 + its number.
        case signal(Int32)
        /// Standard output's reader went away: exit 1.
        case outputClosed

        var status: Int32 {
            switch self {
            case .signal(let number): 128 + number
            case .outputClosed: 1
            }
        }
    }
}
