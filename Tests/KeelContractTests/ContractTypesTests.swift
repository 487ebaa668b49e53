import Foundation
import KeelContract
import Testing

@Suite struct ExtensibleEnumTests {
    enum Status: String, ExtensibleEnum { case draft, published }

    @Test func knownValuesDecodeToTheirCaseAndUnknownOnesKeepTheRawString() throws {
        let values = try JSONDecoder().decode(
            [Extensible<Status>].self, from: Data(#"["draft","archived","published",""]"#.utf8))
        #expect(values == [.known(.draft), .unknown("archived"), .known(.published), .unknown("")])
        #expect(values.map(\.rawValue) == ["draft", "archived", "published", ""])
        #expect(values.map(\.isUnknown) == [false, true, false, true])
    }

    @Test func unknownValuesRoundTripUnchanged() throws {
        let original = #"["Published","archived"]"#  // case matters: "Published" is not "published"
        let decoded = try JSONDecoder().decode([Extensible<Status>].self, from: Data(original.utf8))
        #expect(decoded.allSatisfy { $0.isUnknown })
        #expect(String(decoding: try JSONEncoder().encode(decoded), as: UTF8.self) == original)
    }

    @Test func aNonStringIsStillADecodingError() {
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(Extensible<Status>.self, from: Data("3".utf8)) }
    }
}

/// Synthesized models read Keel's enum members through the `KeyedDecodingContainer` overloads (a fast path);
/// these must decide exactly what the types' own `init(from:)` decides, with the same error at the same path.
/// MOB-API-001: an enum value is declared only when it is the declared value exactly. Swift's `String ==`
/// is canonical equivalence: "O\u{212A}" (KELVIN SIGN) equals "OK" there, and would decode as the declared
/// case; JSON and JSON Schema compare code points.
@Suite struct EnumValuesAreComparedExactlyTests {
    enum Signal: String, ClosedEnum { case ok = "OK", stop = "STOP" }
    enum Tag: String, ExtensibleEnum { case ok = "OK" }
    struct Model: Codable { var signal: Signal }

    @Test func aCanonicallyEquivalentValueIsNotADeclaredOne() throws {
        let kelvin = "O\u{212A}"
        #expect(kelvin == "OK")  // what Swift says, and why the check is needed
        #expect(throws: (any Error).self) {
            try ContractDecoder().decode(Model.self, from: Data(#"{"signal": "O\u212A"}"#.utf8))
        }
        #expect(throws: (any Error).self) {
            try ContractDecoder().decode(Signal.self, from: Data(#""O\u212A""#.utf8))
        }
        #expect(try ContractDecoder().decode(Model.self, from: Data(#"{"signal": "OK"}"#.utf8)).signal == .ok)
        // An extensible enum keeps it as received, and writes it back unchanged.
        let tag = try JSONDecoder().decode(Extensible<Tag>.self, from: Data(#""O\u212A""#.utf8))
        #expect(tag == .unknown(kelvin))
        #expect(String(decoding: try JSONEncoder().encode(tag), as: UTF8.self) == "\"\(kelvin)\"")
        #expect(Extensible<Tag>(rawValue: "OK") == .known(.ok))
    }
}

@Suite struct EnumMemberDecodingTests {
    enum Kind: String, ExtensibleEnum { case text, checklist }
    enum Visibility: String, ClosedEnum { case `private`, shared }
    enum Priority: Int, ClosedIntegerEnum { case low = 1, high = 2 }

    struct Required: Codable { var kind: Extensible<Kind>; var visibility: Visibility; var priority: Priority }
    struct Optional: Codable { var kind: Extensible<Kind>?; var visibility: Visibility?; var priority: Priority? }

    /// What decoding `json` as `T` gives: the value's description, or the error's code, path and value.
    static func outcome<T: Decodable>(_ type: T.Type, _ json: String) -> String {
        do {
            return "\(try ContractDecoder().decode(T.self, from: Data(json.utf8)))"
        } catch {
            return "\(error.code) at \(error.path.isEmpty ? "-" : error.path) value \(error.value ?? "-")"
        }
    }

    /// MOB-API-001: a closed integer enum takes a number only when it is exactly a declared value. Foundation
    /// read `1.0000000000000001` as 1 (through `Double`), and so as `.low`.
    @Test(arguments: [
        "1.0000000000000001", "9007199254740993.5", "1e-400", "2.5", "0.99999999999999999",
        "1.0000000000000000000000000000000000000001",  // beyond Decimal's 38 digits
    ])
    func aNumberThatIsNotExactlyADeclaredIntegerIsRefused(value: String) {
        let outcomes = [
            Self.outcome(Priority.self, value),
            Self.outcome(Required.self, #"{"kind": "text", "visibility": "shared", "priority": \#(value)}"#),
            Self.outcome(Optional.self, #"{"priority": \#(value)}"#),
        ]
        for outcome in outcomes {
            #expect(outcome.contains(" at "), "\(value) decoded: \(outcome)")
        }
        // Integers written otherwise are still integers.
        #expect(Self.outcome(Priority.self, "1.0") == "low")
        #expect(Self.outcome(Priority.self, "2e0") == "high")
    }

    @Test(arguments: [
        #""text""#, #""drawing""#, #""""#, #""private""#, #""team""#, "1", "2", "3", "2.5", "null", "true", "[]",
    ])
    func membersDecodeAsTheBareValueDoes(value: String) {
        // Each member alone, as a bare value (the type's init(from:)) and inside a model (the overloads).
        func expectSame<T: Decodable>(_: T.Type, member: String, in model: String) {
            let bare = Self.outcome(T.self, value)
            let required = Self.outcome(Required.self, model)
            let expected =
                bare.contains(" at ")
                ? bare.replacingOccurrences(of: " at - ", with: " at \(member) ") : nil
            if bare.hasPrefix("invalidValue at - ") {
                // A number that does not fit `Int` (2.5): Foundation on Linux reports it without a path,
                // wherever it sits (see ContractDecoder), so both say so the same way.
                #expect(required == bare, "\(member) = \(value)")
            } else if let expected {
                #expect(required == expected, "\(member) = \(value)")
            } else {
                #expect(!required.contains(" at "), "\(member) = \(value): \(required)")
            }
        }
        expectSame(
            Extensible<Kind>.self, member: "kind",
            in: #"{"kind": \#(value), "visibility": "private", "priority": 1}"#)
        expectSame(
            Visibility.self, member: "visibility", in: #"{"kind": "text", "visibility": \#(value), "priority": 1}"#)
        expectSame(
            Priority.self, member: "priority", in: #"{"kind": "text", "visibility": "private", "priority": \#(value)}"#)
    }

    @Test func decodedValuesAreTheCasesTheBareValuesGive() throws {
        let model = try ContractDecoder().decode(
            Required.self, from: Data(#"{"kind": "drawing", "visibility": "shared", "priority": 2}"#.utf8))
        #expect(model.kind == .unknown("drawing"))
        #expect(model.visibility == .shared)
        #expect(model.priority == .high)
        let known = try ContractDecoder().decode(
            Optional.self, from: Data(#"{"kind": "checklist", "visibility": "private", "priority": 1}"#.utf8))
        #expect(known.kind == .known(.checklist))
        #expect(known.visibility == .private)
        #expect(known.priority == .low)
    }

    @Test func optionalMembersAreNilOnlyWhenAbsentOrNull() throws {
        for json in ["{}", #"{"kind": null, "visibility": null, "priority": null}"#] {
            let model = try ContractDecoder().decode(Optional.self, from: Data(json.utf8))
            #expect(model.kind == nil && model.visibility == nil && model.priority == nil, "\(json)")
        }
        #expect(
            Self.outcome(Optional.self, #"{"visibility": "team"}"#) == "undeclaredEnumValue at visibility value team")
        #expect(Self.outcome(Optional.self, #"{"priority": 3}"#) == "undeclaredEnumValue at priority value 3")
        #expect(Self.outcome(Optional.self, #"{"kind": 3}"#) == "typeMismatch at kind value -")
        #expect(Self.outcome(Optional.self, #"{"kind": "voice"}"#).contains("unknown(voice)"))
        #expect(Self.outcome(Optional.self, #"{"priority": "1"}"#) == "typeMismatch at priority value -")
    }

    @Test func nestedMembersReportTheirWholePath() {
        struct Page: Codable { var items: [Required] }
        let json =
            #"{"items": [{"kind": "text", "visibility": "private", "priority": 1},"#
            + #"{"kind": "text", "visibility": "private", "priority": 7}]}"#
        #expect(Self.outcome(Page.self, json) == "undeclaredEnumValue at items[1].priority value 7")
    }
}

@Suite struct ContractVersionTests {
    @Test func parsesSemanticVersions() throws {
        let version = try ContractVersion("1.4.2-beta.3+build.7")
        #expect((version.major, version.minor, version.patch) == (1, 4, 2))
        #expect(version.prerelease == ["beta", "3"])
        #expect(version.build == ["build", "7"])
        #expect(version.description == "1.4.2-beta.3+build.7")
        #expect(version.header == ("API-Version", "1.4.2-beta.3+build.7"))
        #expect(try ContractVersion("2.0.0", headerName: "X-Contract").header.name == "X-Contract")
    }

    @Test(arguments: [
        "", "1", "1.2", "1.2.3.4", "01.2.3", "1.02.3", "v1.2.3", "1.2.3-", "1.2.3-01", "1.2.3+", "1.2.x", " 1.2.3",
        "1.2.3-beta..1", "99999999999999999999.0.0",
    ])
    func rejectsMalformedVersions(text: String) {
        #expect(throws: ContractVersionError.self) { try ContractVersion(text) }
    }

    @Test func rejectsAnInvalidHeaderName() {
        #expect(throws: ContractVersionError.self) { try ContractVersion("1.0.0", headerName: "API Version") }
        #expect(throws: ContractVersionError.self) { try ContractVersion("1.0.0", headerName: "") }
    }

    @Test func ordersBySemVerPrecedence() throws {
        let ordered = try [
            "1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta", "1.0.0-beta.2", "1.0.0-beta.11",
            "1.0.0-rc.1", "1.0.0", "1.0.1", "1.1.0", "2.0.0",
        ]
        .map { try ContractVersion($0) }
        #expect(ordered == ordered.shuffled().sorted())
        #expect(try ContractVersion("1.0.0+a") == ContractVersion("1.0.0+b"))
        // `-1` is alphanumeric (digits only are numeric), so it sorts after numeric identifiers; numeric
        // identifiers beyond Int still compare as numbers.
        #expect(try ContractVersion("1.0.0-0") < ContractVersion("1.0.0--1"))
        #expect(try !(ContractVersion("1.0.0--1") < ContractVersion("1.0.0-0")))
        #expect(try ContractVersion("1.0.0-99999999999999999999") < ContractVersion("1.0.0-100000000000000000000"))
        #expect(try ContractVersion("1.0.0-9") < ContractVersion("1.0.0-10"))
    }

    @Test func compatibilityFollowsTheMajorVersion() throws {
        let pinned = try ContractVersion("1.4.0")
        #expect(pinned.isCompatible(with: try ContractVersion("1.6.2")))
        #expect(!pinned.isCompatible(with: try ContractVersion("2.0.0")))
        #expect(!pinned.isCompatible(with: try ContractVersion("1.3.9")))
        #expect(!(try ContractVersion("0.3.0")).isCompatible(with: try ContractVersion("0.4.0")))
    }

    @Test func decodesFromJSONAndRejectsGarbage() throws {
        #expect(
            try JSONDecoder().decode(ContractVersion.self, from: Data(#""3.1.0""#.utf8)) == ContractVersion("3.1.0"))
        #expect(throws: DecodingError.self) {
            try JSONDecoder().decode(ContractVersion.self, from: Data(#""three""#.utf8))
        }
    }
}

@Suite struct ContractDecoderTests {
    struct Item: Codable { var id: Int; var name: String }

    @Test func reportsMissingMembersWrongTypesAndNullsWithPaths() {
        func failure(_ json: String) -> ContractDecodingError? {
            do {
                _ = try ContractDecoder().decode([Item].self, from: Data(json.utf8))
                return nil
            } catch {
                return error
            }
        }
        #expect(failure(#"[{"id": 1}]"#)?.code == .missingMember)
        #expect(failure(#"[{"id": 1}]"#)?.path == "[0].name")
        #expect(failure(#"[{"id": 1, "name": "a"}, {"id": "2", "name": "b"}]"#)?.code == .typeMismatch)
        #expect(failure(#"[{"id": 1, "name": "a"}, {"id": "2", "name": "b"}]"#)?.path == "[1].id")
        #expect(failure(#"[{"id": 1, "name": null}]"#)?.code == .unexpectedNull)
        #expect(failure(#"[{"id": 1,"#)?.code == .invalidJSON)
    }

    @Test func aNumberThatDoesNotFitItsMemberIsAnInvalidValueNotInvalidJSON() {
        for json in [#"[{"id": 1.5, "name": "a"}]"#, #"[{"id": 1e300, "name": "a"}]"#] {
            do {
                _ = try ContractDecoder().decode([Item].self, from: Data(json.utf8))
                Issue.record("decoded \(json)")
            } catch {
                #expect(error.code == .invalidValue, "\(json): \(error)")
            }
        }
    }

    @Test func theEncoderWritesRFC3339DatesAndSortedMembers() throws {
        struct Stamped: Codable, Equatable { var zeta: Int; var at: Date; var alpha: String }
        let whole = Stamped(zeta: 1, at: Date(timeIntervalSince1970: 1_796_025_600), alpha: "a")
        #expect(
            String(decoding: try ContractEncoder().encode(whole), as: UTF8.self)
                == #"{"alpha":"a","at":"2026-11-30T08:00:00Z","zeta":1}"#)
        let fraction = Stamped(zeta: 1, at: Date(timeIntervalSince1970: 1_796_025_600.25), alpha: "a")
        let encoded = try ContractEncoder().encode(fraction)
        #expect(String(decoding: encoded, as: UTF8.self).contains(#""at":"2026-11-30T08:00:00.250Z""#))
        #expect(try ContractDecoder().decode(Stamped.self, from: encoded) == fraction)
        // Rounded to milliseconds: no ".000" for a fraction that rounds away.
        let tiny = Stamped(zeta: 1, at: Date(timeIntervalSince1970: 1_796_025_600.0004), alpha: "a")
        #expect(
            String(decoding: try ContractEncoder().encode(tiny), as: UTF8.self).contains(
                #""at":"2026-11-30T08:00:00Z""#))
    }

    @Test func nullableKeepsNullApartFromAbsentBothWays() throws {
        // Codable synthesized by the compiler: its decodeIfPresent call must keep null apart from absent.
        struct Patch: Codable, Equatable {
            var due: Nullable<Int>?
        }
        for (json, expected) in [
            (#"{}"#, Patch(due: nil)), (#"{"due":null}"#, Patch(due: .null)), (#"{"due":3}"#, Patch(due: .value(3))),
        ] {
            let patch = try ContractDecoder().decode(Patch.self, from: Data(json.utf8))
            #expect(patch == expected)
            #expect(String(decoding: try ContractEncoder().encode(patch), as: UTF8.self) == json)
            // Any decoder: the overload is the container's.
            #expect(try JSONDecoder().decode(Patch.self, from: Data(json.utf8)) == expected)
        }
        #expect(Nullable<Int>.value(3).value == 3)
        #expect(Nullable<Int>.null.value == nil)
    }

    @Test func jsonValueThroughCodableKeepsIntegersUpToUInt64() throws {
        let json = #"[12345678901234567890,-9223372036854775808,0.5]"#
        let values = try JSONDecoder().decode([JSONValue].self, from: Data(json.utf8))
        #expect(values.map(\.description) == ["12345678901234567890", "-9223372036854775808", "0.5"])
        #expect(String(decoding: try JSONEncoder().encode(values), as: UTF8.self) == json)
    }

    @Test func aRootLevelFailureThatIsNotANumberKeepsItsOwnMessage() {
        do {
            _ = try ContractDecoder().decode(Date.self, from: Data(#""30/11/2026""#.utf8))
            Issue.record("decoded")
        } catch {
            #expect(error.message.contains("RFC 3339"), "\(error)")
        }
    }

    /// Found in an outside audit: dates were read with ISO8601DateFormatter, which took impossible dates for
    /// other instants (February 30th as March 1st, 24:00, an offset of +24:00), accepted garbage around them,
    /// refused a leap second and read years before 1582 on the Julian calendar (Go's zero time two days off).
    @Test func datesAreExactlyRFC3339OnTheProlepticGregorianCalendar() throws {
        func decoded(_ text: String) -> Double? {
            (try? ContractDecoder().decode(Date.self, from: Data("\"\(text)\"".utf8)))?.timeIntervalSince1970
        }
        for refused in [
            "2024-02-30T00:00:00Z", "2023-02-29T12:00:00Z", "2024-04-31T00:00:00Z", "2024-13-01T00:00:00Z",
            "2024-00-10T00:00:00Z", "2024-01-00T00:00:00Z", "2024-01-01T24:00:00Z", "2024-01-01T00:60:00Z",
            "2024-01-01T00:00:61Z", "2024-01-01T00:00:00+24:00", "2024-01-01T00:00:00+05:99",
            "2024-01-01T00:00:00Zjunk", " 2024-01-01T00:00:00Z", "2024-1-1T0:0:0Z", "2024-01-01T00:00:00",
            "2024-01-01T00:00:00.Z", "2024-01-01 00:00:00Z", "2024-01-01T00:00:00+0100", "20240101T000000Z",
            "2016-12-31T12:59:60Z", "+2024-01-01T00:00:00Z",
        ] {
            #expect(decoded(refused) == nil, "\(refused)")
        }
        #expect(decoded("2024-02-29T12:00:00Z") == 1_709_208_000)
        #expect(decoded("2000-02-29T00:00:00Z") == 951_782_400)  // a leap year by the 400 rule
        #expect(decoded("2024-01-01t00:00:00z") == 1_704_067_200)  // lower case is RFC 3339 too
        #expect(decoded("2024-01-01T01:30:00+01:30") == 1_704_067_200)
        #expect(decoded("2024-01-01T00:00:00-00:00") == 1_704_067_200)
        #expect(decoded("2023-12-31T23:00:00-01:00") == 1_704_067_200)
        // A leap second is the start of the next second; one at 23:59 UTC only.
        #expect(decoded("2016-12-31T23:59:60Z") == 1_483_228_800)
        #expect(decoded("2017-01-01T00:59:60+01:00") == 1_483_228_800)
        // Before the Gregorian reform, as RFC 3339 counts (proleptic Gregorian): Go's zero time.
        #expect(decoded("0001-01-01T00:00:00Z") == -62_135_596_800)
        #expect(decoded("1582-10-10T00:00:00Z") == -12_219_724_800)
        #expect(decoded("0000-03-01T00:00:00Z") == -62_162_035_200)
        #expect(decoded("2026-11-30T08:00:00.123456Z").map { abs($0 - 1_796_025_600.123456) < 1e-6 } == true)

        // Written back the same way, and refused beyond what RFC 3339 can write.
        struct Stamped: Codable, Equatable { var at: Date }
        for (text, seconds) in [
            ("0001-01-01T00:00:00Z", -62_135_596_800.0), ("1582-10-10T00:00:00Z", -12_219_724_800),
            ("9999-12-31T23:59:59.999Z", 253_402_300_799.999), ("1969-12-31T23:59:59.500Z", -0.5),
        ] {
            let encoded = try ContractEncoder().encode(Stamped(at: Date(timeIntervalSince1970: seconds)))
            #expect(String(decoding: encoded, as: UTF8.self) == #"{"at":"\#(text)"}"#, "\(text)")
        }
        #expect(throws: EncodingError.self) {
            try ContractEncoder().encode(Stamped(at: Date(timeIntervalSince1970: 253_402_300_800)))
        }
        #expect(throws: EncodingError.self) {
            try ContractEncoder().encode(Stamped(at: Date(timeIntervalSince1970: -62_167_219_201)))
        }
    }

    @Test func datesDecodeAndEncodeFromManyThreadsAtOnce() async throws {
        struct Stamped: Codable, Equatable { var at: Date }
        let json = Data(#"{"at": "2026-11-30T08:00:00.250Z"}"#.utf8)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<8 {
                group.addTask {
                    for _ in 0..<500 {
                        let value = try ContractDecoder().decode(Stamped.self, from: json)
                        _ = try ContractEncoder().encode(value)
                    }
                }
            }
            try await group.waitForAll()
        }
    }

    @Test func datesDecodeWithAndWithoutFractionalSeconds() throws {
        struct Stamped: Decodable { var at: Date }
        let plain = try ContractDecoder().decode(Stamped.self, from: Data(#"{"at": "2026-11-30T08:00:00Z"}"#.utf8))
        let fraction = try ContractDecoder().decode(
            Stamped.self, from: Data(#"{"at": "2026-11-30T08:00:00.250Z"}"#.utf8))
        let offset = try ContractDecoder().decode(
            Stamped.self, from: Data(#"{"at": "2026-11-30T09:00:00.250+01:00"}"#.utf8))
        #expect(fraction.at.timeIntervalSince(plain.at) == 0.25)
        #expect(offset.at == fraction.at)
        let lowercase = try ContractDecoder().decode(
            Stamped.self, from: Data(#"{"at": "2026-11-30t08:00:00.250z"}"#.utf8))
        #expect(lowercase.at == fraction.at)  // RFC 3339 §5.6 allows t and z
        #expect(throws: ContractDecodingError.self) {
            try ContractDecoder().decode(Stamped.self, from: Data(#"{"at": "30/11/2026"}"#.utf8))
        }
    }

    @Test func ignoresUnknownMembersAtEveryDepth() throws {
        struct Outer: Codable { var items: [Item] }
        let json =
            #"{"new": {"x": [1, {"y": 2}]}, "items": [{"id": 1, "name": "a", "extra": [{"deep": {"er": null}}]}]}"#
        let outer = try ContractDecoder().decode(Outer.self, from: Data(json.utf8))
        #expect(outer.items.map(\.id) == [1])
    }
}
