import Foundation
import KeelTesting
import Testing

/// `keel contract diff`, run as the built binary.
@Suite(.timeLimit(.minutes(3))) struct ContractCommandTests {
    let directory: TemporaryDirectory
    init() throws { directory = try TemporaryDirectory(prefix: "keel-contract-cli") }

    static let base = """
        openapi: 3.1.0
        info: {title: Notes, version: 1.0.0}
        paths:
          /notes:
            get:
              responses:
                '200':
                  content:
                    application/json:
                      schema:
                        type: object
                        properties:
                          kind: {type: string, enum: [text], x-extensible-enum: true}
                          title: {type: string}
        """

    private func write(_ name: String, _ text: String) throws { try Data(text.utf8).write(to: directory.url(name)) }

    private func run(_ arguments: [String]) async throws -> (ChildProcess.Termination, String, String) {
        try await runKeel(["contract", "diff"] + arguments, in: directory.url)
    }

    /// Found in an outside audit: a chain of 20,000 schemas, each referring to the next, overflowed the stack
    /// while the finding at its end was being placed (SIGSEGV, exit 139). The finding is reported, with the
    /// whole way to it in its pointer.
    @Test func aChainOfReferencesTwentyThousandDeepIsDiffed() async throws {
        func description(lastType: String) throws -> String {
            var schemas: [String: Any] = ["A20000": ["type": lastType]]
            for index in 0..<20_000 {
                schemas["A\(index)"] = [
                    "type": "object", "required": ["next"],
                    "properties": ["next": ["$ref": "#/components/schemas/A\(index + 1)"]],
                ]
            }
            let answer: [String: Any] = [
                "description": "ok", "content": ["application/json": ["schema": ["$ref": "#/components/schemas/A0"]]],
            ]
            let document: [String: Any] = [
                "openapi": "3.1.0", "info": ["title": "chain", "version": lastType == "string" ? "1.0.0" : "2.0.0"],
                "paths": ["/x": ["get": ["responses": ["200": answer]]]], "components": ["schemas": schemas],
            ]
            return String(decoding: try JSONSerialization.data(withJSONObject: document), as: UTF8.self)
        }
        try write("chain-a.json", description(lastType: "string"))
        try write("chain-b.json", description(lastType: "integer"))
        let (status, output, error) = try await run(["chain-a.json", "chain-b.json", "--format", "json"])
        #expect(status == .exited(1), "\(error)")
        let report = try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [String: Any]
        let changes = try #require(report?["changes"] as? [[String: Any]])
        #expect(changes.map { $0["rule"] as? String } == ["response-property-type-changed"])
        #expect((changes.first?["pointer"] as? String) == String(repeating: "/properties/next", count: 20_000))
    }

    @Test func aCompatibleRevisionExitsZero() async throws {
        try write("base.yaml", Self.base)
        try write(
            "next.yaml",
            Self.base.replacingOccurrences(of: "enum: [text]", with: "enum: [text, drawing]").replacingOccurrences(
                of: "1.0.0", with: "1.1.0"))
        let (status, output, _) = try await run(["base.yaml", "next.yaml"])
        #expect(status == .exited(0))
        #expect(
            output.contains("INFO  response-property-extensible-enum-value-added  GET /notes → 200 /properties/kind"))
        #expect(output.contains("0 breaking, 0 warning, 1 info"))
    }

    @Test func aBreakingRevisionExitsOneAndJSONIsMachineReadable() async throws {
        try write("base.yaml", Self.base)
        let withoutTitle = Self.base.split(separator: "\n", omittingEmptySubsequences: false).filter {
            !$0.contains("title: {type: string}")
        }
        try write("broken.yaml", withoutTitle.joined(separator: "\n"))
        let (status, output, _) = try await run(["base.yaml", "broken.yaml", "--format", "json"])
        #expect(status == .exited(1))
        struct Report: Decodable {
            struct Change: Decodable { var rule: String; var severity: String; var path: String?; var pointer: String? }
            struct Summary: Decodable { var breaking: Int; var warning: Int; var failed: Bool }
            var changes: [Change]
            var summary: Summary
        }
        let report = try JSONDecoder().decode(Report.self, from: Data(output.utf8))
        #expect(
            report.changes.map(\.rule).sorted() == [
                "breaking-changes-without-major-version-bump", "response-property-removed",
            ])
        #expect(report.summary.breaking == 1 && report.summary.warning == 1 && report.summary.failed)
        #expect(report.changes.first { $0.rule == "response-property-removed" }?.pointer == "/properties/title")
        // Every member of every finding is there, null where it has none (the version rule has no place).
        let raw = try #require(try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [String: Any])
        let changes = try #require(raw["changes"] as? [[String: Any]])
        for change in changes {
            #expect(
                Set(change.keys) == ["rule", "severity", "path", "method", "status", "pointer", "message", "origin"])
        }
        let version = try #require(
            changes.first { $0["rule"] as? String == "breaking-changes-without-major-version-bump" })
        #expect(version["path"] is NSNull && version["origin"] is NSNull)
    }

    @Test func failOnWarningCountsWarnings() async throws {
        try write("base.yaml", Self.base)
        try write("same.yaml", Self.base)
        let (status, _, _) = try await run(["base.yaml", "same.yaml", "--fail-on", "warning"])
        #expect(status == .exited(0))
    }

    /// A new failure status is info: it passes the gate at either level. A new success is a warning: it
    /// passes the default gate and fails `--fail-on warning`.
    @Test func aNewStatusFailsTheGateAsItsSeverityDoes() async throws {
        try write("base.yaml", Self.base)
        func revision(adding status: String) -> String {
            Self.base.replacingOccurrences(
                of: "        '200':\n", with: "        '\(status)': {description: new}\n        '200':\n")
        }
        try write("failure.yaml", revision(adding: "503"))
        try write("success.yaml", revision(adding: "202"))
        for level in ["breaking", "warning"] {
            let (status, output, _) = try await run(["base.yaml", "failure.yaml", "--fail-on", level])
            #expect(status == .exited(0), "\(output)")
            #expect(output.contains("INFO  response-non-success-status-added  GET /notes → 503"), "\(output)")
            #expect(output.contains("0 breaking, 0 warning, 1 info"), "\(output)")
        }
        let (passing, _, _) = try await run(["base.yaml", "success.yaml"])
        #expect(passing == .exited(0))
        let (failing, output, _) = try await run(["base.yaml", "success.yaml", "--fail-on", "warning"])
        #expect(failing == .exited(1))
        #expect(output.contains("WARNING  response-success-status-added  GET /notes → 202"), "\(output)")
        #expect(output.contains("0 breaking, 1 warning, 0 info — fails at --fail-on warning"), "\(output)")
    }

    @Test(arguments: [
        ("nothing: here", "no `openapi` field"),
        (
            "openapi: 3.1.0\ninfo: {title: x, version: 1.0.0}\npaths:\n  /a:\n    get:\n      responses:\n        '200': {$ref: '#/nope'}",
            "dangling $ref #/nope"
        ),
        ("openapi: [1,", "not valid YAML"),
        ("openapi: 3.0.0\ninfo: {title: x, version: '1'}\npaths: 5", "#/paths: must be a mapping"),
    ])
    func invalidInputExitsTwoNamingTheFile(text: String, message: String) async throws {
        try write("base.yaml", Self.base)
        try write("bad.yaml", text)
        let (status, _, error) = try await run(["base.yaml", "bad.yaml"])
        #expect(status == .exited(2))
        #expect(error.contains("bad.yaml") && error.contains(message), "\(error)")
    }
}

/// The compatibility gate on the repository's own sample contract: this test is what CI runs.
@Suite(.timeLimit(.minutes(3))) struct SampleContractGateTests {
    static var contracts: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
            .appendingPathComponent("contracts")
    }

    /// `keel contract diff` from the sample contract `base` to `revision` with `--fail-on warning`, as CI
    /// runs the gate: expected to pass (exit 0, no breaking change, no warning); returns the report.
    func passesTheGate(_ base: String, _ revision: String) async throws -> String {
        let child = try ChildProcess.launch(
            product: "keel",
            arguments: [
                "contract", "diff", Self.contracts.appendingPathComponent(base).path,
                Self.contracts.appendingPathComponent(revision).path, "--fail-on", "warning",
            ])
        #expect(
            try await child.waitForExit() == .exited(0),
            "\(child.output(of: .standardOutput))\(child.output(of: .standardError))")
        let output = child.output(of: .standardOutput)
        #expect(output.contains("0 breaking, 0 warning"))
        return output
    }

    @Test func version1Point1IsCompatibleWithVersion1() async throws {
        let output = try await passesTheGate("notes-api.v1.yaml", "notes-api.v1.1.yaml")
        #expect(output.contains("response-property-extensible-enum-value-added"))
    }

    @Test func version1Point2IsCompatibleWithVersion1Point1() async throws {
        // The version policy revision: new optional request headers, a response header, 426/503 answers
        // and an optional error member — nothing an installed 1.1 client could trip over.
        _ = try await passesTheGate("notes-api.v1.1.yaml", "notes-api.v1.2.yaml")
    }

    @Test func version1Point3IsCompatibleWithVersion1Point2() async throws {
        // The sync revision (reference backend): sign-in, tags, per-mutation keys, an optional account header.
        let output = try await passesTheGate("notes-api.v1.2.yaml", "notes-api.v1.3.yaml")
        #expect(output.contains("api-path-added") && output.contains("/sessions"))
    }

    @Test func version1Point4IsCompatibleWithVersion1Point3() async throws {
        // Publishing (the reference app's irreversible operation) is a new path: compatible for installed clients.
        let output = try await passesTheGate("notes-api.v1.3.yaml", "notes-api.v1.4.yaml")
        #expect(output.contains("api-path-added") && output.contains("/notes/{id}/publish"))
    }

    @Test func version1Point5IsCompatibleWithVersion1Point4() async throws {
        // A 400 answer declared where an Idempotency-Key is required: a new failure status, compatible.
        _ = try await passesTheGate("notes-api.v1.4.yaml", "notes-api.v1.5.yaml")
    }

    @Test func version1Point6IsCompatibleWithVersion1Point5() async throws {
        // The 400 answers the backend gives for malformed version headers and client-config queries, declared.
        _ = try await passesTheGate("notes-api.v1.5.yaml", "notes-api.v1.6.yaml")
    }

    @Test func version1Point7IsCompatibleWithVersion1Point6() async throws {
        // The version answers pinned (426 update_required with its minimums, 503 maintenance): the same bodies,
        // now named by the contract, so a renamed code would be breaking.
        _ = try await passesTheGate("notes-api.v1.6.yaml", "notes-api.v1.7.yaml")
    }

    @Test func version1Point8IsCompatibleWithVersion1Point7() async throws {
        // Answers the reference backend already gave, declared: 503 maintenance on sign-in and operation status,
        // 413 on the operations that take a body — new failure statuses, nothing an installed client trips over.
        let output = try await passesTheGate("notes-api.v1.7.yaml", "notes-api.v1.8.yaml")
        // Reported, as info: the shared Maintenance answer is one entry for its two operations.
        #expect(
            output.contains(
                "INFO  response-non-success-status-added  notes-api.v1.8.yaml#/components/responses/Maintenance"),
            "\(output)")
        #expect(output.contains("response-non-success-status-added") && output.contains("→ 413"), "\(output)")
    }

    /// Every revision of the sample contract in `contracts/` against the one before it, found by listing the
    /// directory: a revision added later is gated without anyone writing a test for it (found in an outside
    /// audit: the pairs above are written by hand).
    @Test func everyRevisionOfTheSampleContractPassesTheGateAgainstThePreviousOne() async throws {
        let revisions = try FileManager.default.contentsOfDirectory(atPath: Self.contracts.path).compactMap {
            name -> (version: [Int], name: String)? in
            guard name.hasPrefix("notes-api.v"), name.hasSuffix(".yaml") else { return nil }
            let digits = name.dropFirst("notes-api.v".count).dropLast(".yaml".count).split(separator: ".")
            let version = digits.compactMap { Int($0) }
            guard version.count == digits.count, !version.isEmpty else {
                Issue.record("\(name) does not name a version")
                return nil
            }
            return (version + Array(repeating: 0, count: max(0, 3 - version.count)), name)
        }.sorted { $0.version.lexicographicallyPrecedes($1.version) }
        #expect(revisions.count >= 8, "\(revisions.map(\.name))")
        for (base, revision) in zip(revisions, revisions.dropFirst()) {
            _ = try await passesTheGate(base.name, revision.name)
        }
    }

    @Test func theCommittedModelsOfTheSampleContractAreCurrent() async throws {
        let child = try ChildProcess.launch(
            product: "keel",
            arguments: [
                "contract", "generate", Self.contracts.appendingPathComponent("notes-api.v1.yaml").path,
                "--output", Self.contracts.appendingPathComponent("generated").path, "--check",
            ])
        #expect(try await child.waitForExit() == .exited(0), "\(child.output(of: .standardError))")
        #expect(child.output(of: .standardOutput).hasSuffix("NotesApiV1Models.swift is up to date\n"))
    }

    @Test func goingBackFrom1Point1WouldBreakItsClients() async throws {
        let child = try ChildProcess.launch(
            product: "keel",
            arguments: [
                "contract", "diff", Self.contracts.appendingPathComponent("notes-api.v1.1.yaml").path,
                Self.contracts.appendingPathComponent("notes-api.v1.yaml").path,
            ])
        #expect(try await child.waitForExit() == .exited(1))
        #expect(child.output(of: .standardOutput).contains("response-property-removed"))
    }
}

/// The text report groups findings by root cause (issue #16).
@Suite(.timeLimit(.minutes(3))) struct ContractDiffGroupingTests {
    let directory: TemporaryDirectory
    init() throws { directory = try TemporaryDirectory(prefix: "keel-diff-groups") }

    /// Five operations whose responses (and a `default` error response) all reach one shared enum.
    static func contract(status: String, version: String, title: String = "title: {type: string}") -> String {
        var paths = ""
        for index in 1...5 {
            paths += """
                  /things\(index):
                    get:
                      responses:
                        '200':
                          description: ok
                          content:
                            application/json:
                              schema: {$ref: '#/components/schemas/Thing'}
                        default:
                          description: error
                          content:
                            application/json:
                              schema: {$ref: '#/components/schemas/Error'}

                """
        }
        return """
            openapi: 3.0.3
            info: {title: things, version: \(version)}
            paths:
            \(paths)
            components:
              schemas:
                Status: {type: string, enum: [\(status)]}
                Thing:
                  type: object
                  required: [status]
                  properties:
                    status: {$ref: '#/components/schemas/Status'}
                    \(title)
                Error:
                  type: object
                  properties:
                    status: {$ref: '#/components/schemas/Status'}
            """
    }

    @Test func oneChangeToASharedSchemaIsOneEntryWithItsReach() async throws {
        try Data(Self.contract(status: "open, closed", version: "1.0.0").utf8).write(to: directory.url("base.yaml"))
        try Data(Self.contract(status: "open, closed, archived", version: "2.0.0", title: "").utf8).write(
            to: directory.url("next.yaml"))
        let (status, output, _) = try await runKeel(["contract", "diff", "base.yaml", "next.yaml"], in: directory.url)
        #expect(status == .exited(1))
        let lines = output.split(separator: "\n").map(String.init)
        // One entry for the enum (10 places: 5 operations × 200 and default), one for the removed title.
        #expect(
            lines.contains(
                "BREAKING  response-property-enum-value-added  next.yaml#/components/schemas/Status  new value \"archived\" of a closed enum: old clients fail to decode it  (5 operations, 10 places)"
            ), "\(output)")
        #expect(
            lines.contains {
                $0.hasPrefix(
                    "BREAKING  response-property-removed  next.yaml#/components/schemas/Thing/properties/title")
            })
        #expect(lines.contains("    … 7 more (--verbose lists all)"))
        #expect(lines.last == "15 breaking, 0 warning, 0 info (2 root causes) — fails at --fail-on breaking")
        let (_, verbose, _) = try await runKeel(
            ["contract", "diff", "base.yaml", "next.yaml", "--verbose"], in: directory.url)
        #expect(verbose.contains("    GET /things5 → default /properties/status"))
        #expect(!verbose.contains("more (--verbose"))
        // JSON keeps one object per occurrence, each with its origin.
        let (_, json, _) = try await runKeel(
            ["contract", "diff", "base.yaml", "next.yaml", "--format", "json"], in: directory.url)
        struct Report: Decodable {
            struct Change: Decodable { var rule: String; var origin: String? }
            var changes: [Change]
        }
        let report = try JSONDecoder().decode(Report.self, from: Data(json.utf8))
        let enumChanges = report.changes.filter { $0.rule == "response-property-enum-value-added" }
        #expect(enumChanges.count == 10)
        #expect(enumChanges.allSatisfy { $0.origin == "next.yaml#/components/schemas/Status" })
    }

    @Test func jsonGroupedIsOneObjectPerRootCauseWithTheMostDirectPlacesFirst() async throws {
        try Data(Self.contract(status: "open, closed", version: "1.0.0").utf8).write(to: directory.url("base.yaml"))
        try Data(Self.contract(status: "open, closed, archived", version: "2.0.0", title: "").utf8).write(
            to: directory.url("next.yaml"))
        struct Report: Decodable {
            struct Group: Decodable {
                struct Place: Decodable, Equatable {
                    var method: String?; var path: String?; var status: String?; var pointer: String?
                }
                var rule: String
                var severity: String
                var origin: String?
                var message: String
                var operations: Int
                var occurrences: Int
                var places: [Place]
            }
            struct Summary: Decodable { var breaking: Int; var failed: Bool }
            var groups: [Group]
            var summary: Summary
        }
        let (status, json, _) = try await runKeel(
            ["contract", "diff", "base.yaml", "next.yaml", "--format", "json", "--group"], in: directory.url)
        #expect(status == .exited(1))
        let report = try JSONDecoder().decode(Report.self, from: Data(json.utf8))
        #expect(report.groups.map(\.rule) == ["response-property-enum-value-added", "response-property-removed"])
        let shared = try #require(report.groups.first)
        #expect(shared.severity == "breaking" && shared.origin == "next.yaml#/components/schemas/Status")
        #expect(shared.operations == 5 && shared.occurrences == 10 && shared.places.count == 3)
        #expect(
            shared.places[0] == .init(method: "GET", path: "/things1", status: "200", pointer: "/properties/status"))
        #expect(report.summary.breaking == 15 && report.summary.failed)
        let (_, verbose, _) = try await runKeel(
            ["contract", "diff", "base.yaml", "next.yaml", "--format", "json", "--group", "--verbose"],
            in: directory.url)
        #expect(try JSONDecoder().decode(Report.self, from: Data(verbose.utf8)).groups.first?.places.count == 10)
        // A finding about the whole document reaches no operation and has no place (not one empty place).
        try Data(Self.contract(status: "open, closed, archived", version: "1.1.0").utf8).write(
            to: directory.url("minor.yaml"))
        let (_, minor, _) = try await runKeel(
            ["contract", "diff", "base.yaml", "minor.yaml", "--format", "json", "--group"], in: directory.url)
        let bump = try #require(
            try JSONDecoder().decode(Report.self, from: Data(minor.utf8)).groups.first {
                $0.rule == "breaking-changes-without-major-version-bump"
            })
        #expect(bump.operations == 0 && bump.occurrences == 1 && bump.places.isEmpty)
        // Every key is there, absent values as null (as in the per-occurrence report): the bump has no origin.
        let raw = try #require(try JSONSerialization.jsonObject(with: Data(minor.utf8)) as? [String: Any])
        let groups = try #require(raw["groups"] as? [[String: Any]])
        let rawBump = try #require(
            groups.first { $0["rule"] as? String == "breaking-changes-without-major-version-bump" })
        #expect(rawBump["origin"] is NSNull)
        for group in groups {
            #expect(
                Set(group.keys) == ["rule", "severity", "origin", "message", "operations", "occurrences", "places"])
            for place in group["places"] as? [[String: Any]] ?? [] {
                #expect(Set(place.keys) == ["method", "path", "status", "pointer"])
            }
        }
        // Text is grouped already: --group there is a usage error.
        let (usage, _, errors) = try await runKeel(
            ["contract", "diff", "base.yaml", "next.yaml", "--group"], in: directory.url)
        #expect(usage == .exited(2))
        #expect(errors.contains("--group is for --format json"))
    }
}
