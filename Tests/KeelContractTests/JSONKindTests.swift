import Foundation
import KeelContract
import Testing

/// `JSONKind(of: decoder)` (how generated unions without a discriminator tell their variants apart) and
/// `ClosedIntegerEnum`.
@Suite struct JSONKindTests {
    /// Records the kind it was decoded from, and for objects which of two names are present.
    struct Probe: Decodable {
        let kind: JSONKind
        let present: Set<String>
        init(from decoder: any Decoder) throws {
            kind = try JSONKind(of: decoder)
            present = kind == .object ? try JSONKind.members(["a", "b"], presentIn: decoder) : []
        }
    }

    @Test(arguments: [
        ("null", JSONKind.null), ("true", .boolean), ("false", .boolean), ("0", .number), ("-1.5e3", .number),
        (#""text""#, .string), (#""""#, .string), ("[]", .array), ("[1, \"a\"]", .array), ("{}", .object),
        (#"{"a": null}"#, .object),
    ])
    func theKindOfEveryJSONValueIsFoundWithoutDecodingAModel(json: String, kind: JSONKind) throws {
        // Inside an array, so that every kind (also null) sits at a position a decoder can be asked about.
        let probes = try ContractDecoder().decode([Probe].self, from: Data("[\(json)]".utf8))
        #expect(probes.map(\.kind) == [kind])
        #expect(try JSONDecoder().decode([Probe].self, from: Data("[\(json)]".utf8)).map(\.kind) == [kind])
        #expect(JSONKind(of: try JSONValue(parsing: Data(json.utf8))) == kind)
    }

    @Test func membersPresentAreReportedAmongTheNamesAsked() throws {
        let probes = try ContractDecoder().decode(
            [Probe].self, from: Data(#"[{"a": 1}, {"b": null, "c": 2}, {"a": 1, "b": 2}, {}]"#.utf8))
        #expect(probes.map(\.present) == [["a"], ["b"], ["a", "b"], []])
    }

    enum Priority: Int, ClosedIntegerEnum, CaseIterable {
        case value1 = 1
        case value2 = 2
    }

    @Test func aClosedIntegerEnumRefusesAnUndeclaredValueWithItsPath() throws {
        struct Task: Codable, Equatable { var priority: Priority }
        let decoder = ContractDecoder()
        #expect(try decoder.decode(Task.self, from: Data(#"{"priority": 2}"#.utf8)) == Task(priority: .value2))
        #expect {
            _ = try decoder.decode(Task.self, from: Data(#"{"priority": 3}"#.utf8))
        } throws: { error in
            guard let error = error as? ContractDecodingError else { return false }
            return error.code == .undeclaredEnumValue && error.path == "priority" && error.value == "3"
        }
        #expect(throws: ContractDecodingError.self) {
            _ = try decoder.decode(Task.self, from: Data(#"{"priority": "2"}"#.utf8))
        }
        let encoded = try ContractEncoder().encode(Task(priority: .value1))
        #expect(String(decoding: encoded, as: UTF8.self) == #"{"priority":1}"#)
    }
}
