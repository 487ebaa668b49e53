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
        #expect(output.contains("  #/visibility  #"))
        #expect(output.contains("  #/version  #"))

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

        try Data("{\"id\": ".utf8).write(to: directory.url("truncated.json"))
        let (truncated, _, message) = try await run([
            Self.contract, "--schema", "#/components/schemas/Note", "truncated.json",
        ])
        #expect(truncated == .exited(2))
        #expect(message.contains("truncated.json: not valid JSON"), "\(message)")
    }
}
