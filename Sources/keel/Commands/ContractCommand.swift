import Foundation
import KeelContractTools

/// `keel contract diff`: the compatibility gate for installed clients (MOB-API-001);
/// `keel contract validate`: example payloads checked against the contract's schemas;
/// `keel contract generate`: Swift models from the contract, and the CI check that they are current.
enum ContractCommand {
    static let command = Keel.Command(
        name: "contract",
        summary: "Compare two versions of an OpenAPI contract; validate payloads; generate Swift models.",
        usage: """
            USAGE: keel contract diff <base.yaml|json> <revision.yaml|json> [--format text|json] [--fail-on breaking|warning]
                                      [--verbose] [--group]
                   keel contract validate <spec.yaml|json> --schema '#/components/schemas/NAME'
                                          [--format-assertion] [--format text|json] <instance.json>...
                   keel contract generate <spec.yaml|json> --output <dir> [--check] [--access public|internal]

            diff answers: can a client built against BASE keep working against a server that implements REVISION?
            Every change is printed with a severity (breaking, warning, info), a stable rule id, where it is
            (method, path, status, schema pointer) and one line of explanation. $refs are followed on both
            sides, so renaming a component without changing its shape is not a change; union variants are
            compared with their counterparts (by discriminator value, or by JSON kind), so a change inside an
            expandable field's object is found wherever it can be received. The text report groups
            findings by root cause: one change to a shared schema (a new value of a shared enum) is one entry
            with its origin (file#pointer of the schema), how many operations and places it reaches and the
            first three of them (--verbose lists all); breaking first, then warnings, then info, each by how
            many operations they reach. --format json keeps one object per occurrence, with "origin";
            --format json --group prints the root causes instead: {"groups": [{"rule", "severity", "origin",
            "message", "operations", "occurrences", "places": [{"method", "path", "status", "pointer"}]}],
            "summary": {...}}, places the most direct first (three, or all with --verbose).

            validate checks each instance against one schema of the contract, with the output and exit status of
            `keel schema validate`. $refs resolve inside the contract and the files it references; OpenAPI
            3.0's `nullable` and boolean exclusive bounds are honoured.

            generate writes Swift Codable models for the contract's component schemas (and the inline JSON
            bodies of operations with an operationId) to <dir>/<Spec>Models.swift: structs whose required
            members must be present, Extensible<...> for x-extensible-enum and the open-enum pattern, closed
            enums of strings or integers otherwise, markers (enum: [true], const) checked on decode, allOf merged,
            oneOf with a discriminator and unions told apart by JSON kind (an id or the expanded object) as
            enums with a case per variant. Output over 5,000 lines is split at declarations into
            <Spec>Models+Part2.swift, +Part3, ... so it compiles in parallel. A schema it cannot generate
            correctly (a union whose variants cannot be told apart, values of several types, ...) is reported
            with its location and nothing is written. The header records info.version and the SHA-256 of each
            input file; --check writes nothing and fails when a generated file is missing, stale or no longer
            generated (a part left from larger output, which a run without --check removes).

            OPTIONS:
              --format text|json      Output style (default text). diff json: {"changes": [...], "summary": {...}};
                                      validate json: as keel schema validate.
              --fail-on breaking|warning
                                      diff: the lowest severity that fails the command (default breaking).
              --verbose               diff: list every place of a grouped finding.
              --group                 diff --format json: one object per root cause instead of per occurrence.
              --schema <#/pointer>    validate: the schema, as a fragment of the contract.
              --format-assertion      validate: treat "format" as an assertion.
              --output <dir>          generate: the directory for the generated files (created if missing).
              --check                 generate: compare with the files in <dir> instead of writing them.
              --access public|internal
                                      generate: access level of the declarations (default public).
              -h, --help              Show this help.

            EXIT STATUS:
              0  diff: nothing at or above the fail level; validate: every instance is valid
              1  diff: something at or above the fail level; validate: some instance is invalid;
                 generate --check: a generated file is missing, stale or no longer generated
              2  unreadable or invalid input (not YAML/JSON, no openapi field, unsupported version, dangling
                 $ref, no schema at --schema, a schema generate cannot handle): the message names the file
                 and the location

            """,
        run: run
    )

    static func run(_ raw: [String]) async throws -> Int32 {
        switch raw.first {
        case "diff": return try diff(Array(raw.dropFirst()))
        case "validate": return try validate(Array(raw.dropFirst()))
        case "generate": return try generate(Array(raw.dropFirst()))
        case let other?: throw UsageError("unknown contract subcommand '\(other)'")
        case nil: throw UsageError("missing subcommand: keel contract diff|validate|generate ...")
        }
    }

    static func validate(_ raw: [String]) throws -> Int32 {
        let arguments = try Arguments(raw, options: ["schema", "format"], flags: ["format-assertion"])
        guard let reference = arguments.value("schema") else {
            throw UsageError("missing --schema '#/components/schemas/NAME'")
        }
        guard arguments.positionals.count >= 2 else {
            throw UsageError("expected the contract and at least one instance file")
        }
        let json = try arguments.choice("format", default: "text", among: ["text", "json"]) == "json"
        let schema: ContractSchema
        do {
            schema = try OpenAPIDocument.load(from: URL(fileURLWithPath: arguments.positionals[0])).schema(
                at: reference)
        } catch {
            return fail("\(error)")
        }
        let formatAssertion = arguments.has("format-assertion")
        return try SchemaCommand.validateInstances(
            arguments.positionals.dropFirst(), schema: arguments.positionals[0] + reference, json: json
        ) {
            schema.validate($0, formatAssertion: formatAssertion)
        }
    }

    static func generate(_ raw: [String]) throws -> Int32 {
        let arguments = try Arguments(raw, options: ["output", "access"], flags: ["check"])
        guard arguments.positionals.count == 1 else { throw UsageError("expected one contract file") }
        guard let output = arguments.value("output") else { throw UsageError("missing --output <dir>") }
        let access = ContractGenerator.AccessLevel(
            rawValue: try arguments.choice("access", default: "public", among: ["public", "internal"]))!
        let generator = ContractGenerator(contract: URL(fileURLWithPath: arguments.positionals[0]), access: access)
        let files: [GeneratedFile]
        do {
            files = try generator.generateFiles()
        } catch {
            return fail("\(error)")
        }
        let directory = URL(fileURLWithPath: output, isDirectory: true)
        let command =
            "keel contract generate \(arguments.positionals[0]) --output \(output)"
            + (access == .public ? "" : " --access \(access.rawValue)")
        func contents(_ name: String) -> String? {
            FileManager.default.contents(atPath: directory.appendingPathComponent(name).path).map {
                String(decoding: $0, as: UTF8.self)
            }
        }
        // Parts a larger earlier output left behind: generated files (by their first line) that are no longer
        // part of the output. Anything else in the directory is not ours.
        var leftover: [String] = []
        for part in (files.count + 1)... {
            let name = generator.fileName(part: part)
            guard let text = contents(name) else { break }
            if text.hasPrefix(ContractGenerator.headerFirstLine) { leftover.append(name) }
        }
        if arguments.has("check") {
            var problems: [String] = []
            for file in files {
                let path = directory.appendingPathComponent(file.name).path
                switch contents(file.name) {
                case nil: problems.append("\(path) is missing")
                case file.text?: break
                default: problems.append("\(path) is stale")
                }
            }
            problems += leftover.map { "\(directory.appendingPathComponent($0).path) is no longer generated" }
            guard problems.isEmpty else {
                return fail(problems.joined(separator: "\n") + "\nrun \(command)", status: 1)
            }
            for file in files { say("\(directory.appendingPathComponent(file.name).path) is up to date") }
            return 0
        }
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        } catch {
            return fail("cannot create \(directory.path): \(error.localizedDescription)")
        }
        for file in files {
            let destination = directory.appendingPathComponent(file.name)
            // Unchanged output is not rewritten, so build systems do not recompile it.
            if contents(file.name) == file.text {
                say("\(destination.path) is up to date")
                continue
            }
            do {
                try Data(file.text.utf8).write(to: destination, options: .atomic)
            } catch {
                return fail("cannot write \(destination.path): \(error.localizedDescription)")
            }
            say("wrote \(destination.path)")
        }
        for name in leftover {
            let path = directory.appendingPathComponent(name).path
            do {
                try FileManager.default.removeItem(atPath: path)
            } catch {
                return fail("cannot remove \(path), which is no longer generated: \(error.localizedDescription)")
            }
            say("removed \(path) (no longer generated)")
        }
        return 0
    }

    static func diff(_ raw: [String]) throws -> Int32 {
        let arguments = try Arguments(raw, options: ["format", "fail-on"], flags: ["verbose", "group"])
        guard arguments.positionals.count == 2 else { throw UsageError("expected two files: BASE REVISION") }
        let json = try arguments.choice("format", default: "text", among: ["text", "json"]) == "json"
        if arguments.has("group"), !json { throw UsageError("--group is for --format json (text is grouped already)") }
        let threshold: ContractChange.Severity =
            try arguments.choice("fail-on", default: "breaking", among: ["breaking", "warning"]) == "warning"
            ? .warning : .breaking
        let changes: [ContractChange]
        do {
            let documents = try OpenAPIDocument.load(from: arguments.positionals.map { URL(fileURLWithPath: $0) })
            changes = try ContractDiff(base: documents[0], revision: documents[1]).changes()
        } catch {
            return fail("\(error)")
        }
        let counts = Dictionary(grouping: changes, by: \.severity).mapValues(\.count)
        let failing = changes.contains { $0.severity >= threshold }
        struct Summary: Encodable { var breaking: Int; var warning: Int; var info: Int; var failed: Bool }
        let summary = Summary(
            breaking: counts[.breaking] ?? 0, warning: counts[.warning] ?? 0, info: counts[.info] ?? 0,
            failed: failing)
        if json, arguments.has("group") {
            // One object per root cause, in the text report's order; its places the most direct first (all
            // with --verbose, else the first three).
            // Absent members are written as null, as in the per-occurrence report: a consumer finds every key.
            struct Place: Encodable {
                var method: String?; var path: String?; var status: String?; var pointer: String?
                enum CodingKeys: CodingKey { case method, path, status, pointer }
                func encode(to encoder: any Encoder) throws {
                    var container = encoder.container(keyedBy: CodingKeys.self)
                    try container.encode(method, forKey: .method)
                    try container.encode(path, forKey: .path)
                    try container.encode(status, forKey: .status)
                    try container.encode(pointer, forKey: .pointer)
                }
            }
            struct Group: Encodable {
                var rule: String
                var severity: ContractChange.Severity
                var origin: String?
                var message: String
                var operations: Int
                var occurrences: Int
                var places: [Place]
                enum CodingKeys: CodingKey { case rule, severity, origin, message, operations, occurrences, places }
                func encode(to encoder: any Encoder) throws {
                    var container = encoder.container(keyedBy: CodingKeys.self)
                    try container.encode(rule, forKey: .rule)
                    try container.encode(severity, forKey: .severity)
                    try container.encode(origin, forKey: .origin)
                    try container.encode(message, forKey: .message)
                    try container.encode(operations, forKey: .operations)
                    try container.encode(occurrences, forKey: .occurrences)
                    try container.encode(places, forKey: .places)
                }
            }
            struct Report: Encodable {
                var groups: [Group]
                var summary: Summary
            }
            let groups = ContractChangeGroup.grouping(changes).map { group in
                let direct = group.mostDirectFirst
                return Group(
                    rule: group.rule, severity: group.severity, origin: group.origin, message: direct[0].message,
                    operations: group.operations, occurrences: group.changes.count,
                    places: (arguments.has("verbose") ? direct : Array(direct.prefix(3))).compactMap {
                        // A finding about the whole document has no place: none is listed, not an empty one.
                        guard $0.method != nil || $0.path != nil || $0.status != nil || $0.pointer != nil else {
                            return nil
                        }
                        return Place(method: $0.method, path: $0.path, status: $0.status, pointer: $0.pointer)
                    })
            }
            try sayJSON(Report(groups: groups, summary: summary))
        } else if json {
            struct Report: Encodable {
                var changes: [ContractChange]
                var summary: Summary
            }
            try sayJSON(Report(changes: changes, summary: summary))
        } else {
            let groups = ContractChangeGroup.grouping(changes)
            for group in groups { say(group.text(verbose: arguments.has("verbose")), terminator: "") }
            say(
                "\(counts[.breaking] ?? 0) breaking, \(counts[.warning] ?? 0) warning, \(counts[.info] ?? 0) info"
                    + (groups.count < changes.count ? " (\(groups.count) root causes)" : "")
                    + (failing ? " — fails at --fail-on \(threshold.rawValue)" : ""))
        }
        return failing ? 1 : 0
    }
}
