import Foundation
import KeelTesting
import Testing

/// `keel contract validate`, run as the built binary against the sample contract.
@Suite(.timeLimit(.minutes(3))) struct ContractValidateCommandTests {
    let directory: TemporaryDirectory
    init() throws { directory = try TemporaryDirectory(prefix: "keel-contract-validate") }

    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static let contract = repository.appendingPathComponent("contracts/notes-api.v1.yaml").path
    static let example = repository.appendingPathComponent("contracts/examples/note.json").path

    private func run(_ arguments: [String]) async throws -> (ChildProcess.Termination, String, String) {
        try await runKeel(["contract", "validate"] + arguments, in: directory.url)
    }

    @Test func theCommittedExampleNoteMatchesTheSampleContract() async throws {
        let (status, output, errors) = try await run([
            Self.contract, "--schema", "#/components/schemas/Note", "--format-assertion", Self.example,
        ])
        #expect(status == .exited(0), "\(output)\(errors)")
        #expect(output == "\(Self.example): valid\n")
    }

    @Test func anInvalidInstanceExitsOneAndNamesWhereInBothFormats() async throws {
        let note = try String(contentsOfFile: Self.example, encoding: .utf8)
        try Data(
            note.replacingOccurrences(of: "\"private\"", with: "\"public\"").replacingOccurrences(
                of: "\"version\": 3", with: "\"version\": 0"
            ).utf8
        )
        .write(to: directory.url("bad.json"))
        let (status, output, _) = try await run([Self.contract, "--schema", "#/components/schemas/Note", "bad.json"])
        #expect(status == .exited(1))
        #expect(output.hasPrefix("bad.json: invalid (2 errors)"), "\(output)")
        #expect(output.contains("#/visibility  #"))
        #expect(output.contains("#/version  #"))

        let (jsonStatus, json, _) = try await run([
            Self.contract, "--schema", "#/components/schemas/Note", "--format", "json", "bad.json", Self.example,
        ])
        #expect(jsonStatus == .exited(1))
        struct Report: Decodable {
            struct Instance: Decodable { var file: String; var valid: Bool; var errors: [Error] }
            struct Error: Decodable { var instanceLocation: String }
            var valid: Bool
            var instances: [Instance]
        }
        let report = try JSONDecoder().decode(Report.self, from: Data(json.utf8))
        #expect(!report.valid)
        #expect(report.instances.map(\.valid) == [false, true])
        #expect(report.instances[0].errors.map(\.instanceLocation).sorted() == ["/version", "/visibility"])
    }

    @Test func aSchemaThatIsNotThereOrABrokenInstanceExitsTwoWithTheLocation() async throws {
        let (status, _, errors) = try await run([Self.contract, "--schema", "#/components/schemas/Nope", Self.example])
        #expect(status == .exited(2))
        #expect(errors.contains("notes-api.v1.yaml") && errors.contains("#/components/schemas/Nope"), "\(errors)")

        // Something that is there but is no schema (a string, a list, a number) never passes everything.
        for location in ["#/openapi", "#/components/schemas/Note/required"] {
            let (notASchema, _, problem) = try await run([Self.contract, "--schema", location, Self.example])
            #expect(notASchema == .exited(2), "\(location): \(problem)")
            #expect(problem.contains("not a schema"), "\(problem)")
        }

        // Found in an outside audit: an object that is no schema (a response, the document's info, the map of
        // schemas itself) had no keyword a validator knows, and let every instance through.
        for location in ["#/components/responses/Error", "#/info", "#/components/schemas", "#/paths"] {
            let (notASchema, _, problem) = try await run([Self.contract, "--schema", location, Self.example])
            #expect(notASchema == .exited(2), "\(location): \(problem)")
            #expect(problem.contains("\(location) is not a schema"), "\(problem)")
        }

        try Data("{\"id\": ".utf8).write(to: directory.url("truncated.json"))
        let (truncated, _, message) = try await run([
            Self.contract, "--schema", "#/components/schemas/Note", "truncated.json",
        ])
        #expect(truncated == .exited(2))
        #expect(message.contains("truncated.json: not valid JSON"), "\(message)")
    }

    /// Found in an outside audit: `contract validate` did not check the schema as `schema validate` does (a
    /// misspelt type failed every instance, 3.0's boolean exclusiveMinimum in 3.1 passed them), and it read
    /// the members beside a 3.0 `$ref`, which OpenAPI 3.0 says to ignore (and the diff ignores).
    @Test func theSchemaIsCheckedInTheDialectOfItsDescription() async throws {
        let schemas31 = """
            openapi: 3.1.0
            info: {title: x, version: '1'}
            paths: {}
            components:
              schemas:
                Misspelt: {type: strnig}
                Exclusive: {type: integer, minimum: 0, exclusiveMinimum: true}
            """
        try Data(schemas31.utf8).write(to: directory.url("v31.yaml"))
        try Data("0".utf8).write(to: directory.url("zero.json"))
        for (name, location) in [("Misspelt", "/type"), ("Exclusive", "/exclusiveMinimum")] {
            let (status, _, errors) = try await run([
                "v31.yaml", "--schema", "#/components/schemas/\(name)", "zero.json",
            ])
            #expect(status == .exited(2), "\(name): \(errors)")
            #expect(errors.contains("#/components/schemas/\(name)\(location): not a valid schema"), "\(errors)")
        }
        let schemas30 = """
            openapi: 3.0.3
            info: {title: x, version: '1'}
            paths: {}
            components:
              schemas:
                Exclusive: {type: integer, minimum: 0, exclusiveMinimum: true}
                Beside: {$ref: '#/components/schemas/S', maxLength: 1}
                S: {type: string}
            """
        try Data(schemas30.utf8).write(to: directory.url("v30.yaml"))
        let (exclusive, output, errors) = try await run([
            "v30.yaml", "--schema", "#/components/schemas/Exclusive", "zero.json",
        ])
        #expect(exclusive == .exited(1), "\(output)\(errors)")  // 0 is not above an exclusive minimum of 0
        try Data(#""abc""#.utf8).write(to: directory.url("abc.json"))
        let (beside, besideOutput, _) = try await run([
            "v30.yaml", "--schema", "#/components/schemas/Beside", "abc.json",
        ])
        #expect(beside == .exited(0), "\(besideOutput)")
    }
}
