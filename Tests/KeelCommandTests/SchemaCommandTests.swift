import Foundation
import KeelTesting
import Testing

/// `keel schema validate`, run as the built binary: stdout, stderr and exit status.
@Suite(.timeLimit(.minutes(3))) struct SchemaCommandTests {
    struct Run {
        var status: ChildProcess.Termination
        var stdout: String
        var stderr: String
    }

    let directory: TemporaryDirectory

    init() throws {
        directory = try TemporaryDirectory(prefix: "keel-schema-cli")
        try write(
            "note.schema.json",
            #"""
            {"type": "object", "required": ["id", "title"],
             "properties": {"id": {"type": "integer", "minimum": 1}, "title": {"type": "string"},
                            "kind": {"$ref": "kinds.json#/$defs/kind"},
                            "owner": {"$ref": "https://contracts.example.com/v1/user.json"},
                            "created": {"type": "string", "format": "date-time"}}}
            """#)
        try write("kinds.json", #"{"$defs": {"kind": {"enum": ["text", "checklist"]}}}"#)
        try FileManager.default.createDirectory(at: directory.url("remote/v1"), withIntermediateDirectories: true)
        try write("remote/v1/user.json", #"{"type": "object", "required": ["name"]}"#)
        try write(
            "good.json",
            #"{"id": 1, "title": "a", "kind": "text", "owner": {"name": "x"}, "created": "2026-11-30T05:00:00Z"}"#)
        try write("bad.json", #"{"id": "1", "kind": "drawing", "owner": {}, "created": "yesterday"}"#)
    }

    private func write(_ name: String, _ text: String) throws {
        try Data(text.utf8).write(to: directory.url(name))
    }

    private func keel(_ arguments: [String]) async throws -> Run {
        let (status, stdout, stderr) = try await runKeel(arguments, in: directory.url)
        return Run(status: status, stdout: stdout, stderr: stderr)
    }

    private let remote = "--remote=https://contracts.example.com/=remote"

    @Test func validInstancesExitZero() async throws {
        let run = try await keel(["schema", "validate", "--schema", "note.schema.json", remote, "good.json"])
        #expect(run.status == .exited(0), "\(run.stderr)")
        #expect(run.stdout == "good.json: valid\n")
    }

    @Test func invalidInstancesExitOneAndPrintEveryErrorWithBothPaths() async throws {
        let run = try await keel([
            "schema", "validate", "--schema", "note.schema.json", remote, "good.json", "bad.json",
        ])
        #expect(run.status == .exited(1))
        let lines = run.stdout.split(separator: "\n").map(String.init)
        #expect(lines.first == "good.json: valid")
        #expect(lines.contains("bad.json: invalid (4 errors)"))
        #expect(lines.contains("#  #/required  missing required property \"title\""))
        #expect(lines.contains("#/id  #/properties/id/type  expected integer, found string"))
        #expect(lines.contains { $0.hasPrefix("#/kind  #/properties/kind/$ref/enum  must be one of") })
        #expect(lines.contains("#/owner  #/properties/owner/$ref/required  missing required property \"name\""))
        #expect(!run.stdout.contains("date-time"))  // format is an annotation unless asked
    }

    /// Found in an outside audit: a member name with an escape sequence or a line break reached the terminal
    /// raw in the instance path — recolouring it, or splitting the one-line-per-error format. It is escaped.
    @Test func controlCharactersInAnInstancePathAreEscaped() async throws {
        try write("strict.schema.json", #"{"additionalProperties": {"type": "integer"}}"#)
        try write("hostile.json", #"{"\u001b[31mred\nfake": "x"}"#)
        let run = try await keel(["schema", "validate", "--schema", "strict.schema.json", "hostile.json"])
        #expect(run.status == .exited(1))
        #expect(!run.stdout.contains("\u{1B}"))
        #expect(run.stdout.split(separator: "\n").count == 2, "\(run.stdout)")
        #expect(run.stdout.contains(#"#/\u{1B}[31mred\nfake  #/additionalProperties/type  expected integer"#))
    }

    @Test func formatAssertionMakesFormatsFail() async throws {
        let run = try await keel([
            "schema", "validate", "--schema", "note.schema.json", remote, "--format-assertion", "bad.json",
        ])
        #expect(run.status == .exited(1))
        #expect(run.stdout.contains("#/created  #/properties/created/format  not a valid date-time"))
    }

    @Test func jsonOutputIsMachineReadable() async throws {
        let run = try await keel([
            "schema", "validate", "--schema", "note.schema.json", remote, "--format", "json", "good.json", "bad.json",
        ])
        #expect(run.status == .exited(1))
        struct Report: Decodable {
            struct Instance: Decodable {
                struct Error: Decodable { var instanceLocation, keywordLocation, message: String }
                var file: String
                var valid: Bool
                var errors: [Error]
            }
            var valid: Bool
            var instances: [Instance]
        }
        let report = try JSONDecoder().decode(Report.self, from: Data(run.stdout.utf8))
        #expect(!report.valid)
        #expect(report.instances.map(\.file) == ["good.json", "bad.json"])
        #expect(report.instances.map(\.valid) == [true, false])
        #expect(
            report.instances[1].errors.contains {
                $0.instanceLocation == "/id" && $0.keywordLocation == "/properties/id/type"
            })
    }

    @Test func anUnresolvableReferenceIsExitTwoNamingTheReference() async throws {
        // Without --remote, the https reference cannot be resolved (and is never fetched from the network).
        let run = try await keel(["schema", "validate", "--schema", "note.schema.json", "good.json"])
        #expect(run.status == .exited(2))
        #expect(run.stderr.contains("note.schema.json: invalid schema"))
        #expect(run.stderr.contains("cannot resolve https://contracts.example.com/v1/user.json"))
        #expect(run.stdout.isEmpty)
    }

    /// Found in an outside audit: a file inside the schema's directory that was a symbolic link to a file
    /// outside it was read, and a `../` reference out of it was refused as "no such schema document". Both
    /// are refused naming why; a link that stays inside the tree is followed.
    @Test func referencesNeverLeaveTheSchemasDirectoryNotEvenThroughALink() async throws {
        let tree = directory.url("tree")
        try FileManager.default.createDirectory(at: tree, withIntermediateDirectories: true)
        try write("outside.json", #"{"type": "string"}"#)
        try write("tree/inside.json", #"{"type": "integer"}"#)
        try FileManager.default.createSymbolicLink(
            atPath: tree.appendingPathComponent("out-link.json").path,
            withDestinationPath: directory.url("outside.json").path)
        try FileManager.default.createSymbolicLink(
            atPath: tree.appendingPathComponent("in-link.json").path, withDestinationPath: "inside.json")
        try write("tree/via-link.json", #"{"$ref": "out-link.json"}"#)
        try write("tree/up.json", #"{"$ref": "../outside.json"}"#)
        try write("tree/inside-link.json", #"{"$ref": "in-link.json"}"#)
        try write("number.json", "5")
        for schema in ["tree/via-link.json", "tree/up.json"] {
            let run = try await keel(["schema", "validate", "--schema", schema, "number.json"])
            #expect(run.status == .exited(2), "\(schema): \(run.stdout)")
            #expect(run.stderr.contains("a file outside") && run.stderr.contains("/tree"), "\(run.stderr)")
        }
        let followed = try await keel(["schema", "validate", "--schema", "tree/inside-link.json", "number.json"])
        #expect(followed.status == .exited(0), "\(followed.stderr)")
    }

    /// Found in review: a `not` around a branch that only stopped (nested too deep) answered "valid", exit 0.
    /// An instance the validator cannot decide is exit 2, never 0 or 1.
    @Test func anInstanceThatCannotBeDecidedIsExitTwo() async throws {
        let definitions = (0..<3000).map { index in
            index < 2999 ? "\"d\(index)\": {\"$ref\": \"#/$defs/d\(index + 1)\"}" : "\"d2999\": {\"type\": \"integer\"}"
        }
        let schema = "{\"not\": {\"$ref\": \"#/$defs/d0\"}, \"$defs\": {" + definitions.joined(separator: ", ") + "}}"
        try write("deep.schema.json", schema)
        try write("one.json", "1")
        let run = try await keel(["schema", "validate", "--schema", "deep.schema.json", "one.json"])
        #expect(run.status == .exited(2))
        #expect(run.stderr.contains("one.json: cannot be decided"), "\(run.stderr)")
        #expect(run.stdout.isEmpty)
    }

    @Test func invalidJSONIsExitTwoWithFileLineAndColumn() async throws {
        try write("broken.json", "{\"id\": 1,\n  \"title\": }")
        let run = try await keel(["schema", "validate", "--schema", "note.schema.json", remote, "broken.json"])
        #expect(run.status == .exited(2))
        #expect(run.stderr.hasPrefix("error: broken.json: not valid JSON: line 2, column 12:"), "\(run.stderr)")
    }

    @Test func aSchemaThatIsNotASchemaIsExitTwoWithItsLocation() async throws {
        try write("wrong.schema.json", #"{"properties": {"id": {"type": "integr"}}}"#)
        let run = try await keel(["schema", "validate", "--schema", "wrong.schema.json", "good.json"])
        #expect(run.status == .exited(2))
        #expect(run.stderr.contains("wrong.schema.json: invalid schema: #/properties/id/type"), "\(run.stderr)")
    }

    @Test func anUnreadableFileIsExitTwoNamingIt() async throws {
        let run = try await keel(["schema", "validate", "--schema", "note.schema.json", remote, "missing.json"])
        #expect(run.status == .exited(2))
        #expect(run.stderr.contains("missing.json: cannot read the file"))
    }

    @Test(arguments: [
        (["schema"], "missing subcommand"),
        (["schema", "check"], "unknown schema subcommand 'check'"),
        (["schema", "validate", "good.json"], "missing --schema"),
        (["schema", "validate", "--schema", "note.schema.json"], "no instance files given"),
        (["schema", "validate", "--schema", "s", "--format", "xml", "x"], "--format must be text or json"),
        (["schema", "validate", "--schema", "s", "--remote", "nodir", "x"], "--remote needs <url-prefix>=<dir>"),
    ])
    func usageErrorsExitTwo(arguments: [String], message: String) async throws {
        let run = try await keel(arguments)
        #expect(run.status == .exited(2))
        #expect(run.stderr.hasPrefix("error: \(message)"), "\(run.stderr)")
        #expect(run.stderr.contains("USAGE: keel schema validate"))
    }
}
