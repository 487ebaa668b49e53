import Foundation
import KeelCore
import KeelLifecycle
import KeelTesting

/// `keel navigation check`: prints an app's navigation contract for review and checks it in CI
/// (MOB-PLAT-008).
enum NavigationCommand {
    static let command = Keel.Command(
        name: "navigation",
        summary: "Check a navigation contract (NavigationContract.export()), or run the navigator on events.",
        usage: """
            USAGE: keel navigation check <contract.json> [--format text|json]
                   keel navigation simulate <contract.json> [--script <events.txt>]

            Reads the contract the app exports with `try contract.export()` and prints one row per route:
            its parent chain, access, modal, unsaved-input policy and process-death behaviour, sensitive,
            deep link. Checks the same rules as the app does at launch (a root and only one, known and
            acyclic parents, deep links that land only where back can go, confirmDiscard with onDeath,
            no onDeath the policy overrules, a public root, no route under a modal, no sensitive deep link
            or sensitive ancestor of one, no two deep links of the same shape, at most 64 ancestors).
            Where two deep links overlap, the more specific one wins (app://n/new before app://n/{id}).

            OPTIONS:
              --format text|json  Output style (default text). json prints {"sound": Bool, "routes":
                                  [{"id", "parents", "access", "modal", "sensitive", "input", "onDeath",
                                  "deepLink"}], "problems": [{"code", "route", "message"}]}.
              -h, --help          Show this help.

            EXIT STATUS: 0 sound, 1 declaration problems (each listed with its route), 2 unreadable or
            malformed input.

            simulate runs the real navigator on events, one per line (from --script, or stdin), and prints
            one JSON object per event:
              {"event": "<the line>", "account": "alice"|null, "stack": ["home", ...], "modal": "otp"|null,
               "prompt": null|"confirmDiscard"|"warnBeforeLoss", "effects": ["..."]}
            with "error" added when the event cannot apply (a missing parameter, an unknown route). Events:
              signin ACCOUNT | signout | switch ACCOUNT | open ROUTE [key=value]... |
              back systemBack|gesture|appButton|modalDismiss | link URL cold|warm |
              notify ROUTE [key=value]... cold|warm | type TEXT | confirm | cancel | background |
              kill (process death) | launch (cold start, restoring the snapshot) | expire (session expired) |
              revoke ROUTE [key=value]... | grant ROUTE [key=value]...
            ACCOUNT is an account id as Keel takes one (AccountID): an empty or placeholder id (null,
            anonymous, 0, an all-zero UUID, ...) or one with an invisible or control character makes the
            line malformed. link and notify take an optional delivery=ID last (the intent's delivery id: a
            redelivered one is alreadyConsumed); a cold one while the app is not running launches it first.
            Blank lines and lines starting with # are skipped. The snapshot, drafts and session live in a
            temporary directory for the run, so kill/launch is a real round trip through files.
            EXIT STATUS: 0 ran every event, 2 unreadable contract, a malformed event line (named by its
            number; nothing after it runs), standard input that cannot be read, or no temporary directory.

            """,
        run: run
    )

    static func run(_ raw: [String]) async throws -> Int32 {
        guard let verb = raw.first else { throw UsageError("expected 'check' or 'simulate'") }
        switch verb {
        case "check": return try check(Array(raw.dropFirst()))
        case "simulate": return try simulate(Array(raw.dropFirst()))
        default: throw UsageError("unknown navigation command '\(verb)'")
        }
    }

    struct RouteRow: Encodable {
        let id: String
        let parents: [String]
        let access: String
        let modal: Bool
        let sensitive: Bool
        let input: String?
        let onDeath: String?
        let deepLink: String?

        enum CodingKeys: String, CodingKey { case id, parents, access, modal, sensitive, input, onDeath, deepLink }

        /// Every member, `null` when the route has none (the shape the help lists, for every route).
        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(id, forKey: .id)
            try container.encode(parents, forKey: .parents)
            try container.encode(access, forKey: .access)
            try container.encode(modal, forKey: .modal)
            try container.encode(sensitive, forKey: .sensitive)
            try container.encode(input, forKey: .input)
            try container.encode(onDeath, forKey: .onDeath)
            try container.encode(deepLink, forKey: .deepLink)
        }
    }

    struct ProblemRow: Encodable {
        let code: String
        let route: String
        let message: String
    }

    struct Report: Encodable {
        let sound: Bool
        let routes: [RouteRow]
        let problems: [ProblemRow]
    }

    static func check(_ raw: [String]) throws -> Int32 {
        let arguments = try Arguments(raw, options: ["format"])
        guard arguments.positionals.count == 1 else { throw UsageError("expected one contract file") }
        let path = arguments.positionals[0]
        let format = try arguments.choice("format", default: "text", among: ["text", "json"])
        guard let data = readInputFile(path) else {
            return fail("\(path): cannot read the file")
        }
        if let problem = strictJSONProblem(data) { return fail("\(path): \(problem)") }
        let routes: [Route]
        var problems: [NavigationProblem] = []
        do {
            routes = try NavigationContract.routes(json: data)
        } catch {
            return fail("\(path): \(error.message)")
        }
        problems = NavigationContract.problems(in: routes)
        let byID = Dictionary(routes.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        let rows = routes.map { route in
            RouteRow(
                id: route.id, parents: chain(of: route, in: byID), access: route.access.description,
                modal: route.isModal, sensitive: route.isSensitive, input: route.input?.policy.rawValue,
                onDeath: route.input?.onDeath?.rawValue, deepLink: route.deepLink)
        }
        if format == "json" {
            try sayJSON(
                Report(
                    sound: problems.isEmpty, routes: rows,
                    problems: problems.map { ProblemRow(code: $0.code.name, route: $0.route, message: $0.message) }))
        } else {
            say(table(rows), terminator: "")
            for problem in problems { say("problem: \(problem.code.name): \(problem)") }
            if problems.isEmpty { say("\(path): \(routes.count) route(s), no problems") }
        }
        return problems.isEmpty ? 0 : 1
    }

    static func simulate(_ raw: [String]) throws -> Int32 {
        let arguments = try Arguments(raw, options: ["script"])
        guard arguments.positionals.count == 1 else { throw UsageError("expected one contract file") }
        let path = arguments.positionals[0]
        guard let data = readInputFile(path) else {
            return fail("\(path): cannot read the file")
        }
        if let problem = strictJSONProblem(data) { return fail("\(path): \(problem)") }
        let contract: NavigationContract
        do { contract = try NavigationContract(json: data) } catch { return fail("\(path): \(error.message)") }
        var script: Data?
        if let scriptPath = arguments.value("script") {
            guard let text = readInputFile(scriptPath) else {
                return fail("\(scriptPath): cannot read the file")
            }
            script = text
        }
        // The run's directory goes inside the temporary directory, which must be there: a TMPDIR naming
        // nothing was created, as a side effect of this run (found in an outside audit).
        let base = FileManager.default.temporaryDirectory
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: base.path, isDirectory: &isDirectory), isDirectory.boolValue else {
            return fail("cannot make the run's directory in \(base.path): set TMPDIR to a writable directory")
        }
        let directory = base.appendingPathComponent(
            "keel-navigation-\(ProcessInfo.processInfo.processIdentifier)-\(UInt32.random(in: 0...UInt32.max))")
        defer { try? FileManager.default.removeItem(at: directory) }
        let simulator: NavigationSimulator
        do { simulator = try NavigationSimulator(contract: contract, directory: directory) } catch {
            // (Foundation's own text here is "error 512", which helps nobody.)
            return fail("cannot make the run's directory in \(base.path): set TMPDIR to a writable directory")
        }
        // Stopped (Ctrl-C, SIGTERM), the run's directory goes with it: found in an outside audit, it was left
        // behind, with the drafts and session of the run. A reader that goes away (`| head -1`) ends the run
        // quietly: SIGPIPE had killed it (exit 141), leaving the directory too.
        let signals = TerminationSignals { number in
            try? FileManager.default.removeItem(at: directory)
            exit(128 + number)
        }
        defer { signals.restore() }
        signal(SIGPIPE, SIG_IGN)
        defer { signal(SIGPIPE, SIG_DFL) }
        var number = 0
        var status: Int32 = 0
        /// Runs one event line and prints its object; false after a malformed line (nothing after it runs).
        func run(_ bytes: ArraySlice<UInt8>) -> Bool {
            number += 1
            // Not read with replacement characters: two different account names would become one.
            guard var line = String(validating: lineBytes(bytes), as: UTF8.self) else {
                status = fail("line \(number): not valid UTF-8")
                return false
            }
            // A byte-order mark some editors put before the first line is not part of it.
            if number == 1, line.hasPrefix("\u{FEFF}") { line.removeFirst() }
            // Spaces and tabs only: Foundation's `.whitespaces` also takes a zero-width space off the end on
            // Linux, and `signin bob\u{200B}` would then sign in `bob` instead of being refused.
            let trimmed = line.trimmingSpacesAndTabs()
            if trimmed.isEmpty || trimmed.hasPrefix("#") { return true }
            let command: NavigationSimulator.Command
            do { command = try NavigationSimulator.parse(trimmed) } catch {
                status = fail("line \(number): \(error.description): \(trimmed)")
                return false
            }
            // A reader that went away takes no more lines: the run ends there.
            return POSIX.writeAll(1, Array((simulator.run(command, line: line).json + "\n").utf8))
        }
        if let script {
            _ = [UInt8](script).split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).lazy
                .allSatisfy(run)
        } else if let failure = forEachStandardInputLineBytes(run) {
            // Input that cannot be read is not the end of the events: the run is cut short, and says so.
            return fail("standard input cannot be read: \(String(cString: strerror(failure)))")
        }
        return status
    }

    /// The parent chain from the root down to the route's parent (stops at an unknown parent or a cycle).
    /// A chain longer than the contract allows shows its nearest ``NavigationContract/maximumDepth`` parents
    /// after "…" (the route is refused as too deep; the table stays linear in size).
    static func chain(of route: Route, in byID: [String: Route]) -> [String] {
        var chain: [String] = []
        var seen: Set<String> = [route.id]
        var current = route.parent
        while let parent = current, !seen.contains(parent) {
            guard chain.count < NavigationContract.maximumDepth else {
                chain.append("…")
                break
            }
            chain.append(parent)
            seen.insert(parent)
            current = byID[parent]?.parent
        }
        return chain.reversed()
    }

    static func table(_ rows: [RouteRow]) -> String {
        var text = "| route | parents | access | modal | input | on death | sensitive | deep link |\n"
        text += "|---|---|---|---|---|---|---|---|\n"
        for row in rows {
            let cells = [
                row.id, row.parents.isEmpty ? "—" : row.parents.joined(separator: " › "), row.access,
                row.modal ? "yes" : "no", row.input ?? "—", row.onDeath ?? "—", row.sensitive ? "yes" : "no",
                row.deepLink ?? "—",
            ]
            text += MarkdownTable.row(cells) + "\n"
        }
        return text
    }
}
