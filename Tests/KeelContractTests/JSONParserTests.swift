import Foundation
import KeelContract
import Testing

/// Strict JSON parsing: hostile input gets a typed error with a position, never a crash or a hang.
@Suite struct JSONParserTests {
    @Test(arguments: [
        ("{\"a\": [1, 2", JSONParseError.Code.unexpectedEnd),
        ("{\"a\": 1} x", .trailingContent),
        ("[1, 2,]", .unexpectedCharacter),
        ("{\"a\" 1}", .unexpectedCharacter),
        ("NaN", .invalidNumber),
        ("[Infinity]", .invalidNumber),
        ("-", .unexpectedEnd),
        ("01", .invalidNumber),
        ("1.", .invalidNumber),
        ("1e", .invalidNumber),
        ("\"tab\there\"", .controlCharacterInString),
        ("\"\\x\"", .invalidEscape),
        ("\"\\uD800\"", .invalidEscape),
        ("\"\\uDC00\"", .invalidEscape),
        ("\"\\uD800\\u0041\"", .invalidEscape),
        ("{\"a\": 1, \"a\": 2}", .duplicateKey),
        ("tru", .unexpectedEnd),
        ("nul", .unexpectedEnd),
        ("", .unexpectedEnd),
        ("   ", .unexpectedEnd),
        ("'single'", .unexpectedCharacter),
        ("{a: 1}", .unexpectedCharacter),
    ])
    func rejectsMalformedJSONWithATypedError(text: String, code: JSONParseError.Code) {
        #expect(throws: JSONParseError.self) { try JSONValue(parsing: text) }
        do {
            _ = try JSONValue(parsing: text)
        } catch {
            #expect(error.code == code, "\(text.debugDescription): \(error)")
        }
    }

    @Test func reportsLineAndColumnOfTheProblem() {
        do {
            _ = try JSONValue(parsing: "{\n  \"a\": 1,\n  \"b\": tru\n}")
            Issue.record("expected a parse error")
        } catch {
            #expect(error.line == 3)
            #expect(error.column == 8)
            #expect(error.description.hasPrefix("line 3, column 8:"))
        }
    }

    @Test(arguments: [
        [0xFF], [0x22, 0xC3, 0x28, 0x22], [0x22, 0xED, 0xA0, 0x80, 0x22], [0x22, 0xF0, 0x82, 0x82, 0xAC, 0x22],
        [0x22, 0xE2, 0x82],
    ])
    func rejectsInvalidUTF8(bytes: [UInt8]) {
        #expect(throws: JSONParseError.self) { try JSONValue(parsing: bytes) }
    }

    @Test func rejectsTenThousandLevelsOfNestingWithoutCrashing() {
        let deep = String(repeating: "[", count: 10_000) + String(repeating: "]", count: 10_000)
        do {
            _ = try JSONValue(parsing: deep)
            Issue.record("expected tooDeep")
        } catch {
            #expect(error.code == .tooDeep)
            #expect(error.offset == 512)
        }
        let objects = String(repeating: "{\"a\":", count: 10_000) + "1" + String(repeating: "}", count: 10_000)
        #expect(throws: JSONParseError.self) { try JSONValue(parsing: objects) }
        // Within the limit it parses.
        let fine = String(repeating: "[", count: 500) + String(repeating: "]", count: 500)
        #expect(throws: Never.self) { try JSONValue(parsing: fine) }
    }

    /// Found in review: nesting within the parser's limit (512) still overflowed a small thread stack (a
    /// background thread's 512 KiB on Apple platforms; a debug build's frames are large) and crashed the
    /// process. Parsed, and decoded into a recursive model, on a thread with a 256 KiB stack, it now ends
    /// with a typed error (or succeeds), never a crash.
    @Test func deepNestingOnASmallStackIsAnErrorNotACrash() async {
        struct Node: Decodable { let child: [Node]? }
        let arrays = String(repeating: "[", count: 500) + String(repeating: "]", count: 500)
        let nodes = String(repeating: #"{"child": ["#, count: 250) + String(repeating: "]}", count: 250)
        let outcomes = await withCheckedContinuation { (continuation: CheckedContinuation<[String], Never>) in
            let thread = Thread {
                var outcomes: [String] = []
                do {
                    _ = try JSONValue(parsing: arrays)
                    outcomes.append("parsed")
                } catch { outcomes.append((error as? JSONParseError)?.code == .tooDeep ? "tooDeep" : "\(error)") }
                do {
                    _ = try ContractDecoder().decode(Node.self, from: Data(nodes.utf8))
                    outcomes.append("decoded")
                } catch { outcomes.append(error is ContractDecodingError ? "refused" : "\(error)") }
                continuation.resume(returning: outcomes)
            }
            thread.stackSize = 256 << 10
            thread.start()
        }
        #expect(["parsed", "tooDeep"].contains(outcomes[0]), "\(outcomes[0])")
        #expect(["decoded", "refused"].contains(outcomes[1]), "\(outcomes[1])")
    }

    @Test func keepsIntegersBigNumbersAndMemberOrderWithoutLoss() throws {
        let text = #"{"z":1,"a":12345678901234567890123,"m":-0.000000000000000000001,"f":1.50,"e":1E400}"#
        let value = try JSONValue(parsing: text)
        guard case .object(let object) = value else { Issue.record("not an object"); return }
        #expect(object.keys == ["z", "a", "m", "f", "e"])
        #expect(String(decoding: value.serialized(), as: UTF8.self) == text)
        #expect(value["a"] != (try JSONValue(parsing: "12345678901234567890124")))
        #expect(value["z"] == 1.0)  // 1 and 1.0 are the same number
        #expect(value["f"] == (try JSONValue(parsing: "15e-1")))
        if case .number(let big) = value["a"] { #expect(big.int64 == nil && big.isInteger) }
        if case .number(let one) = value["z"] { #expect(one.int64 == 1) }
    }

    @Test func decodesEscapesIncludingSurrogatePairs() throws {
        let value = try JSONValue(parsing: #""a\"b\\c\/d\n\u00e9\ud83d\ude00""#)
        #expect(value == .string("a\"b\\c/d\né😀"))
        #expect(try JSONValue(parsing: "\u{FEFF}[1]") == [1])  // a leading BOM is tolerated
    }

    @Test func stringsCompareByCodePointsNotCanonicalEquivalence() throws {
        let composed = try JSONValue(parsing: #""\u00e9""#)
        let decomposed = try JSONValue(parsing: #""e\u0301""#)
        #expect(composed != decomposed)
        #expect(Set([composed, decomposed]).count == 2)
        let object = try JSONValue(parsing: #"{"\u00e9": 1, "e\u0301": 2}"#)
        if case .object(let members) = object { #expect(members.count == 2) }
    }

    @Test func duplicateKeysCanBeAllowedExplicitly() throws {
        let value = try JSONValue(parsing: #"{"a": 1, "a": 2}"#, limits: JSONParsingLimits(allowsDuplicateKeys: true))
        #expect(value["a"] == 2)
    }

    @Test func numbersCompareExactly() throws {
        func number(_ text: String) throws -> JSONNumber {
            guard case .number(let number) = try JSONValue(parsing: text) else { throw CancellationError() }
            return number
        }
        #expect(try number("0.1") < number("0.10000000000000001"))
        #expect(try number("-2") < number("-1.5"))
        #expect(try number("1e2") == number("100"))
        #expect(try number("-0") == number("0"))
        #expect(try number("10").isMultiple(of: number("2.5")))
        #expect(try number("0.0075").isMultiple(of: number("0.0001")))
        #expect(try !number("0.00751").isMultiple(of: number("0.0001")))
        #expect(try !number("7").isMultiple(of: number("2")))
        #expect(try number("1e308").isMultiple(of: number("1e300")))
        // Huge exponents are exact and fast (modular exponentiation, not a loop per power of ten).
        #expect(try number("1e999999999").isMultiple(of: number("3")) == false)
        #expect(try number("1e999999999").isMultiple(of: number("5")))
        #expect(try number("0.2469135780246913578").isMultiple(of: number("0.1234567890123456789")))
        // Found in review: a 19-digit divisor went through floating point, where these are multiples.
        #expect(try !number("1234567890123456788").isMultiple(of: number("1234567890123456789")))
        #expect(try !number("0.1234567890123456788").isMultiple(of: number("0.1234567890123456789")))
        #expect(try number("3703703670370370367").isMultiple(of: number("1234567890123456789")))
        #expect(try number("9999999999999999999").isMultiple(of: number("9999999999999999999")))
        #expect(try !number("9999999999999999998e3").isMultiple(of: number("9999999999999999999")))
        #expect(try number("1e999999999") != number("1e99999999"))
        #expect(throws: JSONParseError.self) { try JSONValue(parsing: "1e1000000000") }
    }

    /// A number stores only its literal; its value is read from it for every comparison, hash and integer
    /// read, so equal values must agree however they are written.
    @Test func numberValuesAgreeAcrossLiterals() throws {
        let spellings: [[String]] = [
            ["0", "-0", "0.0", "0e5", "-0.000E-3"],
            ["1", "1.0", "10e-1", "0.1e1", "100E-2", "1.000000000000000000000000000000"],
            ["-250", "-2.5e2", "-25E1", "-250.00"],
            ["0.0075", "75e-4", "7.5E-3", "0.00750"],
            ["12345678901234567890123", "1.2345678901234567890123e22"],
        ]
        var distinct = Set<JSONNumber>()
        for group in spellings {
            let numbers = group.map { JSONNumber(literal: $0)! }
            for number in numbers {
                #expect(number == numbers[0], "\(number) == \(numbers[0])")
                #expect(number.hashValue == numbers[0].hashValue, "hash of \(number)")
                #expect(!(number < numbers[0]) && !(numbers[0] < number))
            }
            #expect(numbers.map(\.literal) == group, "literals are kept as written")
            distinct.formUnion(numbers)
        }
        #expect(distinct.count == spellings.count)
        let sorted = distinct.sorted()
        #expect(sorted.map(\.literal) == ["-250", "0", "0.0075", "1", "12345678901234567890123"])

        #expect(JSONNumber(literal: "1.0")!.isInteger && JSONNumber(literal: "1e3")!.isInteger)
        #expect(!JSONNumber(literal: "1.5")!.isInteger && JSONNumber(literal: "15e-1")!.int64 == nil)
        #expect(JSONNumber(literal: "2.5e1")!.int64 == 25 && JSONNumber(literal: "-0.0")!.int64 == 0)
        #expect(JSONNumber(literal: "9223372036854775807")!.int64 == .max)
        #expect(JSONNumber(literal: "-9223372036854775808")!.int64 == .min)
        #expect(JSONNumber(literal: "9223372036854775808")!.int64 == nil)
        #expect(JSONNumber(literal: "922337203685477580.7e1")!.int64 == .max)
        #expect(JSONNumber(Int64.min).literal == "-9223372036854775808" && JSONNumber(0.5).literal == "0.5")
        // Doubles: Swift's shortest spelling, the exponent without its `+`, the value kept exactly.
        #expect(JSONNumber(1e20).literal == "1e20" && JSONNumber(-2.5e-7).literal == "-2.5e-07")
        #expect(JSONNumber(1_764_806_400.125).literal == "1764806400.125" && JSONNumber(1e20).double == 1e20)
        for invalid in ["", "-", "01", "1.", ".5", "1e", "1e+", "+1", "0x10", "1 ", "NaN", "1e1000000000"] {
            #expect(JSONNumber(literal: invalid) == nil, "\(invalid)")
        }
    }

    /// A parse error names where reading stopped as a JSON Pointer: the member or element being read, the
    /// container itself between values, a repeated member by its own name (escaped per RFC 6901).
    @Test(arguments: [
        (#"{"a": {"b": [1, 2, }]}}"#, "/a/b/2"),
        (#"{"a": 01}"#, "/a"),
        (#"{"a": tru}"#, "/a"),
        (#"{"a": 1 "b": 2}"#, ""),
        (#"{"a": {"x": 1, "x": 2}}"#, "/a/x"),
        (#"[{"a/b~c": 1, "a/b~c": 2}]"#, "/0/a~1b~0c"),
        (#"{"s\"}": "v", "s\"}": "w"}"#, "/s\"}"),
        // The text ends after a whole number or literal: the unterminated container is to blame, whether
        // whitespace follows or not; a number cut short is itself being read.
        (#"[1, [2, 3"#, "/1"),
        ("[1, [2, 3\n", "/1"),
        (#"{"a": true"#, ""),
        (#"{"a": "x""#, ""),
        (#"[1, 2e"#, "/1"),
        (#"[1x]"#, ""),
        (#"[1 x]"#, ""),
        (#"{"a": "\u12"}"#, "/a"),
        ("", ""),
        ("\u{FEFF}{\"k\": [true, nul]}", "/k/1"),
    ])
    func parseErrorsNameWhereReadingStopped(text: String, pointer: String) throws {
        let bytes = Array(text.utf8)
        let error = try #require(throws: JSONParseError.self) { try JSONValue(parsing: bytes) }
        #expect(error.pointer(in: bytes) == pointer, "\(error)")
    }
}
