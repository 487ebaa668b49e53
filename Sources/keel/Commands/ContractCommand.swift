import Foundation
import KeelContractTools

/// `keel contract diff`: the compatibility gate for installed clients (MOB-API-001).
enum ContractCommand {
    static let command = Keel.Command(
        name: "contract",
        summary: "Compare two versions of an OpenAPI contract for installed clients.",
        usage: """
            USAGE: keel contract diff <base.yaml|json> <revision.yaml|json> [--format text|json] [--fail-on breaking|warning]

            Answers: can a client built against BASE keep working against a server that implements REVISION?
            Every change is printed with a severity (breaking, warning, info), a stable rule id, where it is
            (method, path, status, schema pointer) and one line of explanation. $refs are followed on both
            sides, so renaming a component without changing its shape is not a change.

            OPTIONS:
              --format text|json      Output style (default text). json: {"changes": [...], "summary": {...}}.
              --fail-on breaking|warning
                                      The lowest severity that fails the command (default breaking).
              -h, --help              Show this help.

            EXIT STATUS:
              0  nothing at or above the fail level
              1  something at or above the fail level
              2  unreadable or invalid input (not YAML/JSON, no openapi field, unsupported version, dangling
                 $ref): the message names the file and the location

            """,
        run: run
    )

    static func run(_ raw: [String]) async throws -> Int32 {
        guard raw.first == "diff" else {
            throw UsageError(raw.first.map { "unknown contract subcommand '\($0)'" } ?? "missing subcommand: keel contract diff ...")
        }
        let arguments = try Arguments(Array(raw.dropFirst()), options: ["format", "fail-on"])
        guard arguments.positionals.count == 2 else { throw UsageError("expected two files: BASE REVISION") }
        let json: Bool
        switch arguments.value("format") ?? "text" {
        case "text": json = false
        case "json": json = true
        case let other: throw UsageError("--format must be text or json, not '\(other)'")
        }
        let threshold: ContractChange.Severity
        switch arguments.value("fail-on") ?? "breaking" {
        case "breaking": threshold = .breaking
        case "warning": threshold = .warning
        case let other: throw UsageError("--fail-on must be breaking or warning, not '\(other)'")
        }
        let changes: [ContractChange]
        do {
            let base = try OpenAPIDocument.load(from: URL(fileURLWithPath: arguments.positionals[0]))
            let revision = try OpenAPIDocument.load(from: URL(fileURLWithPath: arguments.positionals[1]))
            changes = try ContractDiff(base: base, revision: revision).changes()
        } catch {
            FileHandle.standardError.write("error: \(error)\n")
            return 2
        }
        let counts = Dictionary(grouping: changes, by: \.severity).mapValues(\.count)
        let failing = changes.contains { $0.severity >= threshold }
        if json {
            struct Report: Encodable {
                struct Summary: Encodable { var breaking: Int; var warning: Int; var info: Int; var failed: Bool }
                var changes: [ContractChange]
                var summary: Summary
            }
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
            let report = Report(changes: changes, summary: .init(breaking: counts[.breaking] ?? 0, warning: counts[.warning] ?? 0,
                                                                  info: counts[.info] ?? 0, failed: failing))
            say(String(decoding: try encoder.encode(report), as: UTF8.self))
        } else {
            for change in changes { say(change.description) }
            say("\(counts[.breaking] ?? 0) breaking, \(counts[.warning] ?? 0) warning, \(counts[.info] ?? 0) info"
                + (failing ? " — fails at --fail-on \(threshold.rawValue)" : ""))
        }
        return failing ? 1 : 0
    }
}
