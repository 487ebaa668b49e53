import Foundation
import KeelContractFixtures
import KeelContractTools
import KeelTesting
import Testing

/// The generator on a payments-API-shaped description at scale (#16): hundreds of schemas with expandable
/// fields everywhere (nested, in arrays, nullable, three-way with a deleted form), boolean markers, integer
/// enums and allOf with them — generated whole, with no diagnostic. (It compiles and round-trips:
/// `KeelCommandTests/ContractGenerateCommandTests/aPaymentsDescriptionAtScaleTypeChecks`, and at 42 schemas
/// `aPaymentsDescriptionBuildsAndRoundTrips`.)
@Suite struct PaymentsFixtureTests {
    @Test func threeHundredThirtySchemasGenerateWithoutADiagnostic() throws {
        let directory = try TemporaryDirectory(prefix: "keel-payments")
        let url = directory.url("payments.yaml")
        try Data(PaymentsAPI.yaml(resources: 110).utf8).write(to: url)
        let code = try ContractGenerator(contract: url).generate()
        // Every component schema is a top-level type (330), each expandable field an enum of its own.
        for index in [0, 57, 109] {
            #expect(code.contains("public struct Resource\(index): Codable, Hashable, Sendable {"))
            #expect(code.contains("public struct DeletedResource\(index): Codable, Hashable, Sendable {"))
            #expect(code.contains("public struct Resource\(index)Expanded: Codable, Hashable, Sendable {"))
        }
        #expect(code.components(separatedBy: "\npublic struct ").count - 1 == 331)  // 330 + the error model
        #expect(code.contains("case id(String)") && code.contains("case expanded(Resource1)"))
        #expect(code.contains("public enum Priority: Int, ClosedIntegerEnum, CaseIterable {"))
        // The three-way field: an id, the resource, or its deleted form told apart by `deleted`.
        #expect(code.contains("case deletedResource7(DeletedResource7)"))
        #expect(code.contains(#"present.contains("deleted")"#))
        // The boolean marker is a Bool that must be true.
        #expect(code.contains("public var deleted: Bool\n"))
        #expect(code.contains("if self.deleted != true {"))
    }

    @Test func theDescriptionIsDeterministicAndScales() {
        #expect(PaymentsAPI.yaml(resources: 5) == PaymentsAPI.yaml(resources: 5))
        let small = PaymentsAPI.yaml(resources: 10).utf8.count
        let large = PaymentsAPI.yaml(resources: 1000).utf8.count
        #expect(large > 90 * small && large < 110 * small)
    }
}
