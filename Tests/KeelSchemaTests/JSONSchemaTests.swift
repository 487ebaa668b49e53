import Foundation
import KeelContract
import KeelSchema
import Testing

/// Behaviour of the validator beyond the official suite: errors, references, options, hostile schemas.
@Suite struct JSONSchemaTests {
    @Test func anUnresolvableReferenceIsAnErrorNamingIt() {
        #expect {
            _ = try JSONSchema(["properties": ["a": ["$ref": "#/$defs/missing"]]])
        } throws: { error in
            guard let error = error as? SchemaError else { return false }
            return error.code == .unresolvableReference && error.message.contains("#/$defs/missing")
        }
        #expect {
            _ = try JSONSchema(["$ref": "https://example.com/none.json"])
        } throws: { error in
            (error as? SchemaError)?.message.contains("https://example.com/none.json") == true
        }
        #expect {
            _ = try JSONSchema(["$ref": "#nope"])
        } throws: { error in
            (error as? SchemaError)?.message.contains("no anchor \"nope\"") == true
        }
    }

    @Test func referenceCyclesTerminate() throws {
        // A cycle that consumes no instance depth never decides; it must end undecided, not hang.
        let loop = try JSONSchema([
            "$defs": ["a": ["$ref": "#/$defs/b"], "b": ["$ref": "#/$defs/a"]], "$ref": "#/$defs/a",
        ])
        let result = loop.validate(1)
        #expect(!result.isValid)
        #expect(result.undecided?.contains("circular reference") == true)
        // Found in an outside audit: the cycle failed as "invalid", so a `not` around it read as valid and the
        // schema accepted every instance. No answer holds, under a `not` too.
        let negated = try JSONSchema(["$defs": ["a": ["$ref": "#/$defs/a"]], "not": ["$ref": "#/$defs/a"]])
        let negatedResult = negated.validate(1)
        #expect(!negatedResult.isValid && negatedResult.undecided?.contains("circular reference") == true)
        // A recursive schema that walks down the instance is fine.
        let tree = try JSONSchema([
            "type": "object",
            "properties": ["children": ["type": "array", "items": ["$ref": "#"]]],
        ])
        let deep = try JSONValue(parsing: #"{"children": [{"children": [{"children": []}]}, {}]}"#)
        #expect(tree.validate(deep).isValid)
        #expect(!tree.validate(try JSONValue(parsing: #"{"children": [{"children": 3}]}"#)).isValid)
    }

    @Test func collectsEveryErrorWithInstanceAndKeywordLocations() throws {
        let schema = try JSONSchema([
            "type": "object",
            "properties": ["a": ["type": "string", "minLength": 3], "b": ["maximum": 10]],
            "required": ["c", "d"],
        ])
        let errors = schema.validate(["a": 5, "b": 11]).errors
        #expect(errors.count == 4)
        #expect(errors.map(\.instanceLocation).sorted() == ["", "", "/a", "/b"])
        #expect(Set(errors.map(\.keywordLocation)) == ["/properties/a/type", "/properties/b/maximum", "/required"])
    }

    @Test func formatIsAnAnnotationUnlessAsserted() throws {
        let schema = try JSONSchema(["format": "email"])
        #expect(schema.validate("not an email").isValid)
        #expect(!schema.validate("not an email", options: ValidationOptions(formatAssertion: true)).isValid)
        #expect(schema.validate("a@example.com", options: ValidationOptions(formatAssertion: true)).isValid)
        // formats apply to strings
        #expect(schema.validate(42, options: ValidationOptions(formatAssertion: true)).isValid)
    }

    /// Found in an outside audit: OpenAPI's `int32` and `int64` were not checked when formats are asserted,
    /// so a payload that passed held a member its generated `Int32` could not decode.
    @Test func integerFormatsAreCheckedWhenAsserted() throws {
        let asserted = ValidationOptions(formatAssertion: true)
        let int32 = try JSONSchema(["type": "integer", "format": "int32"])
        #expect(int32.validate(.number(JSONNumber(Int64(Int32.max))), options: asserted).isValid)
        #expect(!int32.validate(.number(JSONNumber(Int64(Int32.max) + 1)), options: asserted).isValid)
        #expect(!int32.validate(.number(JSONNumber(Int64(Int32.min) - 1)), options: asserted).isValid)
        #expect(int32.validate(.number(JSONNumber(Int64(Int32.max) + 1))).isValid)  // an annotation otherwise
        let int64 = try JSONSchema(["format": "int64"])
        #expect(int64.validate(.number(JSONNumber(Int64.max)), options: asserted).isValid)
        #expect(!int64.validate(.number(JSONNumber(literal: "9223372036854775808")!), options: asserted).isValid)
        #expect(!int64.validate(.number(JSONNumber(literal: "1.5")!), options: asserted).isValid)
        #expect(int64.validate("text", options: asserted).isValid)  // says nothing of strings
    }

    @Test func openAPINullableIsOptIn() throws {
        let schema = try JSONSchema(["type": "string", "nullable": true])
        #expect(!schema.validate(nil).isValid)
        #expect(schema.validate(nil, options: ValidationOptions(openAPINullable: true)).isValid)
        #expect(!schema.validate(3, options: ValidationOptions(openAPINullable: true)).isValid)
    }

    @Test func remoteDocumentsComeOnlyFromTheResolver() throws {
        let asked = LockedURIs()
        let schema = try JSONSchema(["$ref": "https://contracts.example.com/user.json"]) { uri in
            asked.append(uri)
            return uri == "https://contracts.example.com/user.json" ? ["type": "object", "required": ["name"]] : nil
        }
        #expect(asked.values == ["https://contracts.example.com/user.json"])
        #expect(schema.validate(["name": "x"]).isValid)
        #expect(!schema.validate([:]).isValid)
        #expect(asked.values.count == 1)  // resolved once, when compiled; validation never asks again
    }

    @Test func referencesInsideAPointerTargetAreResolvedAtCompileTime() throws {
        // An OpenAPI-style document: the schemas live under `components`, which the walk does not visit.
        let asked = LockedURIs()
        let document: JSONValue = [
            "components": [
                "schemas": [
                    "Note": ["type": "object", "properties": ["owner": ["$ref": "https://x.example/user.json"]]]
                ]
            ]
        ]
        let schema = try JSONSchema(["$ref": "https://x.example/api.json#/components/schemas/Note"]) { uri in
            asked.append(uri)
            switch uri {
            case "https://x.example/api.json": return document
            case "https://x.example/user.json": return ["type": "object", "required": ["name"]]
            default: return nil
            }
        }
        #expect(asked.values.sorted() == ["https://x.example/api.json", "https://x.example/user.json"])
        #expect(!schema.validate(["owner": [:]]).isValid)
        #expect(schema.validate(["owner": ["name": "a"]]).isValid)
        #expect(asked.values.count == 2)  // validation asked for nothing
        // And a missing one behind the pointer is a compile-time error, not a validation surprise.
        #expect(throws: SchemaError.self) {
            try JSONSchema(["$ref": "https://x.example/api.json#/components/schemas/Note"]) { uri in
                uri == "https://x.example/api.json" ? document : nil
            }
        }
    }

    @Test func aReferenceToSomethingThatIsNoSchemaIsAnInvalidSchema() throws {
        for (target, kind): (JSONValue, String) in [("text", "a string"), ([1, 2], "an array"), (3, "a number")] {
            #expect {
                // Under a keyword the metaschema does not know, so only the reference can tell.
                _ = try JSONSchema(["x-target": target, "$ref": "#/x-target"])
            } throws: { error in
                (error as? SchemaError)?.code == .invalidSchema
                    && (error as? SchemaError)?.message.contains("points at \(kind), not a schema") == true
            }
        }
        // Objects and booleans are schemas.
        #expect(try JSONSchema(["$defs": ["x": false], "$ref": "#/$defs/x"]).validate(1).isValid == false)
        #expect(try JSONSchema(["$defs": ["x": ["type": "integer"]], "$ref": "#/$defs/x"]).validate(1).isValid)
    }

    @Test func anInvalidRegularExpressionIsAnInvalidSchema() {
        for schema: JSONValue in [["pattern": "(unclosed"], ["patternProperties": ["[a-": true]]] {
            #expect {
                _ = try JSONSchema(schema)
            } throws: { error in
                (error as? SchemaError)?.code == .invalidSchema
                    && (error as? SchemaError)?.message.contains("regular expression") == true
            }
        }
    }

    @Test func aResolverFailureIsATypedError() {
        struct Offline: Error {}
        #expect {
            _ = try JSONSchema(["$ref": "https://x.example/s.json"]) { _ in throw Offline() }
        } throws: { error in
            (error as? SchemaError)?.code == .resolverFailed
        }
    }

    @Test func aDocumentThatIsNotASchemaIsRejected() {
        for notSchema: JSONValue in [3, "string", [1, 2], ["type": 5], ["minimum": "3"], ["required": "id"]] {
            #expect(throws: SchemaError.self, "\(notSchema)") { try JSONSchema(notSchema) }
        }
    }

    @Test func validatesRawJSONAndReportsParseErrors() throws {
        let schema = try JSONSchema(["type": "array", "items": ["type": "integer"]])
        #expect(try schema.validate(json: Array("[1, 2, 3]".utf8)).isValid)
        #expect(try !schema.validate(json: Array("[1, 2.5]".utf8)).isValid)
        #expect(throws: JSONParseError.self) { try schema.validate(json: Array("[1, 2".utf8)) }
    }

    @Test func bigNumbersCompareExactly() throws {
        let schema = try JSONSchema(try JSONValue(parsing: #"{"maximum": 18446744073709551615}"#))
        #expect(schema.validate(try JSONValue(parsing: "18446744073709551615")).isValid)
        #expect(!schema.validate(try JSONValue(parsing: "18446744073709551616")).isValid)
        let integer = try JSONSchema(["type": "integer"])
        #expect(integer.validate(try JSONValue(parsing: "1.0")).isValid)
        #expect(integer.validate(try JSONValue(parsing: "1e40")).isValid)
        #expect(!integer.validate(try JSONValue(parsing: "1.5")).isValid)
    }
}

/// Collects strings from a resolver, which may be called from any thread.
final class LockedURIs: @unchecked Sendable {
    // @unchecked Sendable: `storage` is only touched under `lock`.
    private let lock = NSLock()
    private var storage: [String] = []
    func append(_ value: String) { lock.withLock { storage.append(value) } }
    var values: [String] { lock.withLock { storage } }
}

extension JSONSchemaTests {
    @Test func patternDollarMatchesOnlyAtTheVeryEndAndDotAsECMAScriptSays() throws {
        // ECMA-262 without the m flag: `$` is the end of input; ICU's `$` also matches before a final line
        // break. (The official suite's case uses a backslash and an n, not a newline.)
        let name = try JSONSchema(["pattern": "^[a-z]+$"])
        #expect(name.validate("abc").isValid)
        for text in ["abc\n", "abc\r\n", "abc\u{2028}", "abc\r"] {
            #expect(!name.validate(.string(text)).isValid, "\(text.debugDescription)")
        }
        // `.` excludes only \n, \r, U+2028 and U+2029 in ECMA-262; ICU also excluded \v, \f and U+0085.
        let any = try JSONSchema(["pattern": "^a.b$"])
        for text in ["a\u{0B}b", "a\u{0C}b", "a\u{85}b", "a-b"] {
            #expect(any.validate(.string(text)).isValid, "\(text.debugDescription)")
        }
        for text in ["a\nb", "a\rb", "a\u{2028}b"] {
            #expect(!any.validate(.string(text)).isValid, "\(text.debugDescription)")
        }
        // Inside a class and escaped, both keep their meaning.
        #expect(try JSONSchema(["pattern": "^[$.]+\\.$"]).validate("$..").isValid)
        #expect(!(try JSONSchema(["pattern": "^[$.]+\\.$"]).validate("$.x")).isValid)
    }

    /// Each construct whose meaning differs between ECMA-262 (what a schema's `pattern` is) and ICU (what
    /// NSRegularExpression runs): every pair below is decided the JavaScript way (`new RegExp(p, "u")`).
    @Test func patternsMatchAsJavaScriptDoesWhereICUWouldDiffer() throws {
        func matches(_ pattern: String, _ text: String) throws -> Bool {
            try JSONSchema(["pattern": .string(pattern)]).validate(.string(text)).isValid
        }
        // Class escapes inside a class keep ECMA's ASCII meaning: U+0663 ARABIC-INDIC DIGIT THREE is not a
        // \d, `é` is not a \w, U+FEFF is a \s.
        #expect(try matches("^[\\D]$", "\u{663}"))
        #expect(try !matches("^[^\\D]$", "\u{663}"))
        #expect(try matches("^[^\\D]$", "3"))
        #expect(try matches("^[\\W]$", "é"))
        #expect(try matches("^[x\\W]+$", "xé"))
        #expect(try !matches("^[\\S]$", "\u{FEFF}"))
        #expect(try matches("^[\\s]$", "\u{FEFF}"))
        // \b and \B look at ASCII word characters only.
        #expect(try matches("a\\b", "aé"))
        #expect(try !matches("a\\B", "aé"))
        #expect(try matches("^\\bcafé$", "café"))
        #expect(try !matches("^[a\\b]$", "b"))
        #expect(try matches("^[a\\b]$", "\u{8}"))
        // \v is U+000B alone; \0 is NUL; \u{…} is a code point.
        #expect(try matches("^\\v$", "\u{B}"))
        #expect(try !matches("^\\v$", "\n"))
        #expect(try matches("^a\\0b$", "a\u{0}b"))
        #expect(try matches("^\\u{1F600}$", "😀"))
        // Inside a class `[` and `&&` are characters, not ICU's nested sets and intersections.
        #expect(try matches("^[a&&b]$", "&"))
        #expect(try matches("^[a&&b]$", "a"))
        #expect(try matches("^[[a]$", "["))
        // ECMA's empty class never matches; its negation matches any character.
        #expect(try !matches("^a[]$", "a"))
        #expect(try matches("^a[^]$", "a\n"))
        // A `-` beside a class escape, at either end, or after a range is the character itself (review: ICU
        // read `[\w-.]` as a range from `_` to `.` and refused the schema); `[+--]` is the range + to -.
        #expect(try matches("^[\\w-.]+$", "a-b.c_d"))
        #expect(try !matches("^[\\w-.]+$", "a b"))
        #expect(try matches("^[\\s-x]+$", " -x"))
        #expect(try matches("^[+--]+$", "+,-"))
        #expect(try !matches("^[+--]$", "."))
        #expect(try matches("^[-a]+$", "-a") && matches("^[a-]+$", "a-"))
        #expect(try matches("^[a-c-e]+$", "ac-e") && !matches("^[a-c-e]$", "d"))
        #expect(try matches("^[\\d-9]+$", "1-9"))
        // The pattern is read by scalar: a combining mark after an escape is an element of its own.
        #expect(try matches("^\\d\u{301}$", "3\u{301}"))
        #expect(try !matches("^\\d\u{301}$", "\u{663}\u{301}"))
    }

    /// From the schema fuzzer: a pattern whose translation is longer than 256 UTF-16 units takes another road
    /// through corelibs Foundation's regex (which leaks its copy of such a pattern; Fuzz/lsan.supp). It must
    /// still compile and match as ECMA-262 says.
    @Test func aPatternLongerThanFoundationsStackBufferStillMatches() throws {
        let dots = try JSONSchema(["pattern": .string("^\\p{L}+" + String(repeating: ".", count: 38) + "$")])
        #expect(dots.validate(.string("é" + String(repeating: "x", count: 38))).isValid)
        #expect(!dots.validate("x!").isValid)
        let letters = try JSONSchema(["pattern": .string("^" + String(repeating: "a", count: 400) + "$")])
        #expect(letters.validate(.string(String(repeating: "a", count: 400))).isValid)
        #expect(!letters.validate(.string(String(repeating: "a", count: 399))).isValid)
    }

    @Test func propertyNamesAreComparedByCodePoints() throws {
        // "OK" and "O\u{212A}" are two properties; Swift's String == would count the second as evaluated.
        let instance = try JSONValue(parsing: #"{"OK": 1, "O\u212A": 2}"#)
        let additional = try JSONSchema(["properties": ["OK": true], "additionalProperties": false])
        #expect(!additional.validate(instance).isValid)
        let unevaluated = try JSONSchema(["properties": ["OK": true], "unevaluatedProperties": false])
        #expect(!unevaluated.validate(instance).isValid)
        #expect(additional.validate(try JSONValue(parsing: #"{"OK": 1}"#)).isValid)
    }

    @Test func hugeLimitsFailEverythingInsteadOfCrashingOrBeingIgnored() throws {
        // 2^61 × 4 overflowed Int (a trap); above Int64 the keyword was dropped and everything passed.
        #expect(!(try JSONSchema(["minLength": 2_305_843_009_213_693_952]).validate("a")).isValid)
        #expect(!(try JSONSchema(try JSONValue(parsing: #"{"minLength": 1e19}"#)).validate("a")).isValid)
        #expect(!(try JSONSchema(try JSONValue(parsing: #"{"minItems": 18446744073709551616}"#)).validate([1])).isValid)
        #expect(
            !(try JSONSchema(try JSONValue(parsing: #"{"contains": true, "minContains": 1e19}"#)).validate([1])).isValid
        )
        #expect(try JSONSchema(try JSONValue(parsing: #"{"maxLength": 1e19}"#)).validate("a").isValid)
    }

    @Test func aLongReferenceChainIsRefusedNotACrash() throws {
        // 50,000 schemas, each only a $ref to the next: compiling and evaluating follow the chain; both must
        // end without overflowing the stack (compiling recursed once per link; evaluation went ~1,900 levels
        // deep in a debug build before its 2,000-level limit and overflowed an 8 MiB stack).
        var definitions = JSONObject()
        let length = 50_000
        for index in 0..<length {
            definitions["d\(index)"] =
                index + 1 < length ? ["$ref": .string("#/$defs/d\(index + 1)")] : ["type": "string"]
        }
        let root: JSONValue = .object(["$defs": .object(definitions), "$ref": "#/$defs/d0"])
        let schema = try JSONSchema(root)
        // Evaluating it follows the chain: refused as too deep (by the level limit, or before that by what
        // is left of this thread's stack), with an error rather than a crash.
        let result = schema.validate("a")
        #expect(!result.isValid)
        #expect(result.undecided?.contains("deep") == true)
    }

    /// Found in review: the depth and stack limits were ordinary failures, so a `not` (or an `if`, an
    /// `anyOf`) around a branch that only stopped read it as "does not match" — and a hostile schema or a
    /// deeply nested instance turned an invalid instance valid. Now there is no answer at all.
    @Test func aBranchThatOnlyStoppedIsNeverReadAsAnAnswer() throws {
        var chain = JSONObject()
        for index in 0..<3000 {
            chain["d\(index)"] = index < 2999 ? ["$ref": .string("#/$defs/d\(index + 1)")] : ["type": "integer"]
        }
        let negated = try JSONSchema(.object(["not": ["$ref": "#/$defs/d0"], "$defs": .object(chain)]))
        let chained = negated.validate(1)
        #expect(!chained.isValid && chained.undecided != nil && chained.errors.isEmpty)
        // Driven by the instance: an array schema that refers to itself, under a `not`.
        let list = try JSONSchema(
            try JSONValue(
                parsing: #"""
                    {"not": {"$ref": "#/$defs/list"},
                     "$defs": {"list": {"type": "array", "items": {"allOf": [{"allOf": [{"$ref": "#/$defs/list"}]}]}}}}
                    """#))
        func nested(_ depth: Int) throws -> JSONValue {
            try JSONValue(
                parsing: Data((String(repeating: "[", count: depth) + String(repeating: "]", count: depth)).utf8))
        }
        let shallow = list.validate(try nested(100))
        #expect(!shallow.isValid && shallow.undecided == nil)  // the `not` decides: invalid
        let deep = list.validate(try nested(500))
        #expect(deep.undecided != nil && !deep.isValid)
    }

    /// Found in review: `$schema` with a dot segment (`…/2020-12/./schema`) skipped the metaschema check that
    /// the plain URI gets, though it names the same metaschema; `"type": 5` was accepted.
    @Test func aMetaschemaURIWithADotSegmentIsStillChecked() throws {
        for uri in ["https://json-schema.org/draft/2020-12/schema", "https://json-schema.org/draft/2020-12/./schema"] {
            #expect(throws: SchemaError.self, "\(uri)") {
                try JSONSchema(.object(["$schema": .string(uri), "type": 5]))
            }
        }
    }

    /// Found in review: each of 24 definitions referring twice to the next made 2^24 evaluations of a tiny
    /// instance (minutes, and hundreds of MB of errors for a string). The work is bounded by the instance.
    @Test func referencesThatFanOutStopWithoutAnAnswer() throws {
        var definitions = JSONObject()
        for index in 0..<24 {
            definitions["d\(index)"] =
                index < 23
                ? ["allOf": [["$ref": .string("#/$defs/d\(index + 1)")], ["$ref": .string("#/$defs/d\(index + 1)")]]]
                : ["type": "integer"]
        }
        let schema = try JSONSchema(.object(["$ref": "#/$defs/d0", "$defs": .object(definitions)]))
        let result = schema.validate("x")
        #expect(!result.isValid && result.undecided?.contains("steps") == true)
    }
}
