import Foundation
import KeelContract
import Testing

/// What a contract model reads is what the server sent: ``ContractDecoder`` decodes from Keel's strict
/// parse, so a repeated member is refused (not settled by whichever copy the platform keeps), integers are
/// read exactly from their text, and member names match by their bytes (MOB-API-001).
@Suite struct ContractDecoderExactnessTests {
    struct Counter: Codable, Equatable { var count: Int }
    struct Wide: Codable, Equatable { var id: Int64; var small: UInt8; var ratio: Double }

    func failure<T: Decodable>(_ type: T.Type, _ json: String) -> ContractDecodingError? {
        do {
            _ = try ContractDecoder().decode(T.self, from: Data(json.utf8))
            return nil
        } catch {
            return error
        }
    }

    @Test func aRepeatedMemberIsRefusedNotSettledByWhicheverCopyIsKept() {
        let error = failure(Counter.self, #"{"count": 1, "count": 2}"#)
        #expect(error?.code == .invalidJSON)
        #expect(error?.message.contains("count") == true, "\(String(describing: error))")
        #expect(error?.path == "count")
        // Nested too, and under a member the model does not even read: named by its path, as decoding
        // failures are, not as the top level.
        let nested = failure(Counter.self, #"{"count": 1, "extra": {"list": [0, {"a": 1, "a": 1}]}}"#)
        #expect(nested?.code == .invalidJSON)
        #expect(nested?.path == "extra.list[1].a")
        #expect(failure(Counter.self, #"{"count": 1, "extra": [1, 2, tru]}"#)?.path == "extra[2]")
    }

    @Test(arguments: [
        "1.0000000000000001", "0.99999999999999999", "1.5", "1e-400", "9223372036854775808", "1e19", "1e400",
        // Beyond Decimal's 38 digits, where it would round to 1.
        "1.0000000000000000000000000000000000000001", "0.99999999999999999999999999999999999999999",
        "-9223372036854775809",
    ])
    func anIntegerMemberTakesOnlyAnExactIntegerInRange(_ literal: String) {
        let error = failure(Counter.self, #"{"count": \#(literal)}"#)
        #expect(error?.code == .invalidValue, "\(literal) was accepted")
        #expect(error?.path == "count")
    }

    @Test func wholeNumbersInAnyNotationAreIntegers() throws {
        for (literal, expected) in [
            ("7", 7), ("-0", 0), ("1.0", 1), ("1e2", 100), ("2.50e1", 25), ("-9E0", -9), ("0e200", 0),
            ("0.0e-999999999", 0), ("1.000000000000000000000000000000000000000000", 1),
            ("-9223372036854775808", Int.min), ("-9.223372036854775808e18", Int.min),
            ("922337203685477580.7e1", Int.max),
        ] {
            #expect(
                try ContractDecoder().decode(Counter.self, from: Data(#"{"count": \#(literal)}"#.utf8)).count
                    == expected)
        }
        // Beyond 2^53, where a detour through Double would change the last digits.
        let wide = try ContractDecoder().decode(
            Wide.self, from: Data(#"{"id": 9007199254740993, "small": 255, "ratio": 0.1}"#.utf8))
        #expect(wide == Wide(id: 9_007_199_254_740_993, small: 255, ratio: 0.1))
        #expect(failure(Wide.self, #"{"id": 1, "small": 256, "ratio": 0}"#)?.path == "small")
        #expect(failure(Wide.self, #"{"id": 1, "small": -1, "ratio": 0}"#)?.path == "small")
        #expect(failure(Wide.self, #"{"id": 1, "small": 1, "ratio": 1e400}"#)?.path == "ratio")
        // Too small is refused too (found in an outside audit: `1e-400` became 0.0, and was sent back as 0);
        // zero itself, written any way, is zero.
        for tiny in ["1e-400", "-1e-400", "0.0000000000000000000000000000000000000001e-300"] {
            #expect(failure(Wide.self, #"{"id": 1, "small": 1, "ratio": \#(tiny)}"#)?.path == "ratio", "\(tiny)")
        }
        for zero in ["0", "-0", "0.0", "0e-400", "0.000E+5"] {
            let decoded = try ContractDecoder().decode(
                Wide.self, from: Data(#"{"id": 1, "small": 1, "ratio": \#(zero)}"#.utf8))
            #expect(decoded.ratio == 0, "\(zero)")
        }
        struct Single: Decodable { var value: Float }
        #expect(failure(Single.self, #"{"value": 1e-50}"#)?.path == "value")
        // A subnormal Float is not zero: kept.
        #expect(try ContractDecoder().decode(Single.self, from: Data(#"{"value": 1e-40}"#.utf8)).value > 0)
    }

    @Test func memberNamesMatchByTheirBytesNotByCanonicalEquivalence() throws {
        struct Menu: Codable { var café: String }  // U+00E9, precomposed
        // "cafe" + U+0301 (combining acute): the same text to Swift's String ==, another name to JSON.
        let error = failure(Menu.self, #"{"cafe\u0301": "decomposed"}"#)
        #expect(error?.code == .missingMember)
        #expect(
            try ContractDecoder().decode(Menu.self, from: Data(#"{"caf\u00e9": "composed"}"#.utf8)).café == "composed")
    }

    @Test func mapKeysSwiftCannotTellApartAreRefusedNotMerged() throws {
        // "café" precomposed and decomposed: two members for JSON, one String key for a Swift dictionary.
        let error = failure([String: [String: Int]].self, #"{"m": {"caf\u00e9": 1, "cafe\u0301": 2}}"#)
        #expect(error?.code == .invalidValue, "\(String(describing: error))")
        #expect(error?.path == "m")
        #expect(
            error?.message.contains(#"members "caf\u{e9}" and "cafe\u{301}" are two names"#) == true,
            "\(String(describing: error))")
        // Names that differ in bytes and in Swift are two keys, as always.
        let fine = try ContractDecoder().decode([String: Int].self, from: Data(#"{"cafe": 1, "caf\u00e9": 2}"#.utf8))
        #expect(fine == ["cafe": 1, "café": 2])
    }

    @Test func pathsTellIndicesFromMembersNamedLikeThem() {
        // A map keyed by id: the member "42" is not element 42, and a name with a dot is one name.
        #expect(failure([String: [String: Int]].self, #"{"prices": {"42": "x"}}"#)?.path == #"prices["42"]"#)
        #expect(failure([String: Int].self, #"{"a.b": "x"}"#)?.path == #"["a.b"]"#)
        #expect(failure([[Int]].self, #"[[1], [2, "x"]]"#)?.path == "[1][1]")
        #expect(failure([String: [Int]].self, #"{"list": [1, "x"]}"#)?.path == "list[1]")
    }

    @Test func foundationsSpecialTypesKeepTheirMeaning() throws {
        struct Special: Codable, Equatable {
            var at: Date
            var blob: Data
            var link: URL
            var amount: Decimal
            var raw: JSONValue
            var tags: [String: [Int]]
        }
        let json = #"""
            {"at": "2026-11-30T08:00:00.250Z", "blob": "S2VlbA==", "link": "https://example.com/a?b=c",
             "amount": 12345678901234567890.125, "raw": {"z": 1, "a": 12345678901234567890123}, "tags": {"x": [1, 2]}}
            """#
        let special = try ContractDecoder().decode(Special.self, from: Data(json.utf8))
        #expect(special.at == Date(timeIntervalSince1970: 1_796_025_600.25))
        #expect(special.blob == Data("Keel".utf8))
        #expect(special.link.absoluteString == "https://example.com/a?b=c")
        #expect(special.amount == Decimal(string: "12345678901234567890.125"))
        // A JSONValue member is the value as parsed: members in document order, the number's own text.
        #expect(special.raw.serialized() == Array(#"{"z":1,"a":12345678901234567890123}"#.utf8))
        #expect(special.tags == ["x": [1, 2]])
        #expect(failure(Special.self, json.replacingOccurrences(of: "S2VlbA==", with: "not base64!"))?.path == "blob")
    }

    @Test func numbersBeyondWhatATypeHoldsAreRefusedNotRounded() throws {
        struct Price: Codable { var amount: Decimal }
        // 38 significant digits fit; a 39th would be dropped by Decimal(string:) without a word.
        let fits = "0.12345678901234567890123456789012345678"
        #expect(
            try ContractDecoder().decode(Price.self, from: Data(#"{"amount": \#(fits)}"#.utf8)).amount
                == Decimal(string: fits))
        for literal in [
            "0.123456789012345678901234567890123456789", "1234567890123456789012345678901234567891", "1e200",
        ] {
            let error = failure(Price.self, #"{"amount": \#(literal)}"#)
            #expect(error?.code == .invalidValue, "\(literal): \(String(describing: error))")
            #expect(error?.path == "amount")
        }
        // A JSONValue member sent back through Codable keeps its digits, or refuses: never a rounded Double.
        struct Meta: Codable { var raw: JSONValue }
        let meta = try ContractDecoder().decode(
            Meta.self, from: Data(#"{"raw": {"id": 12345678901234567890123, "ratio": 0.1}}"#.utf8))
        #expect(
            String(decoding: try ContractEncoder().encode(meta), as: UTF8.self)
                == #"{"raw":{"id":12345678901234567890123,"ratio":0.1}}"#)
        let long = try ContractDecoder().decode(
            Meta.self, from: Data(#"{"raw": 1.0000000000000000000000000000000000000001}"#.utf8))
        #expect(throws: EncodingError.self) { try ContractEncoder().encode(long) }
        // Beyond Decimal's exponents, but exactly a Double's shortest spelling: written, not refused.
        for literal in ["1e-130", "2.5e200", "1e130"] {
            let tiny = try ContractDecoder().decode(Meta.self, from: Data(#"{"raw": \#(literal)}"#.utf8))
            let written = try JSONValue(parsing: ContractEncoder().encode(tiny))
            #expect(written == JSONValue.object(["raw": .number(JSONNumber(literal: literal)!)]), "\(literal)")
        }
    }

    @Test func theOtherDateStrategiesStillWork() throws {
        struct Stamp: Codable { var at: Date }
        let seconds = ContractDecoder(dateDecodingStrategy: .secondsSince1970)
        #expect(
            try seconds.decode(Stamp.self, from: Data(#"{"at": 1796025600.5}"#.utf8)).at.timeIntervalSince1970
                == 1_796_025_600.5)
        let milliseconds = ContractDecoder(dateDecodingStrategy: .millisecondsSince1970)
        #expect(
            try milliseconds.decode(Stamp.self, from: Data(#"{"at": 1796025600500}"#.utf8)).at.timeIntervalSince1970
                == 1_796_025_600.5)
        let iso = ContractDecoder(dateDecodingStrategy: .iso8601)
        #expect(
            try iso.decode(Stamp.self, from: Data(#"{"at": "2026-11-30T08:00:00Z"}"#.utf8)).at.timeIntervalSince1970
                == 1_796_025_600)
        #expect(throws: ContractDecodingError.self) {
            try iso.decode(Stamp.self, from: Data(#"{"at": "yesterday"}"#.utf8))
        }
    }

    @Test func aParsedValueDecodesWithoutBeingSerializedAgain() throws {
        let value = try JSONValue(parsing: #"{"count": 3, "unknown": [1]}"#)
        #expect(try ContractDecoder().decode(Counter.self, from: value) == Counter(count: 3))
        #expect(throws: ContractDecodingError.self) { try ContractDecoder().decode(Counter.self, from: JSONValue.null) }
    }
}
