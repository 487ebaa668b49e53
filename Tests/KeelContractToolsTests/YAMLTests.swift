import KeelContract
import KeelContractTools
import Testing

/// The YAML reader behind OpenAPI loading (issue #4).
@Suite struct YAMLTests {
    @Test func readsBlockAndFlowCollectionsAndEveryScalarStyle() throws {
        let value = try YAML.parse(
            """
            # a comment
            openapi: 3.1.0
            info: {title: Notes, version: "1.4.0"}
            tags: [notes, 'sync', "drafts"]
            description: |
              Line one
              Line two
            summary: >
              folded
              text
            paths:
              /notes:
                get:
                  responses:
                    '200': {description: ok}
            """)
        #expect(value["openapi"] == "3.1.0")
        #expect(value["info"]?["version"] == "1.4.0")
        #expect(value["tags"] == ["notes", "sync", "drafts"])
        #expect(value["description"] == "Line one\nLine two\n")
        #expect(value["summary"] == "folded text\n")
        #expect(value["paths"]?["/notes"]?["get"]?["responses"]?["200"]?["description"] == "ok")
    }

    @Test func usesTheYAML12CoreSchemaNotYAML11Booleans() throws {
        let value = try YAML.parse(
            """
            a: on
            b: yes
            c: no
            d: true
            e: 1e3
            f: 0o17
            g: 0x1F
            h: 007
            i: -.5
            j: ~
            k:
            l: "123"
            m: 1.0
            n: Null
            """)
        #expect(value["a"] == "on")
        #expect(value["b"] == "yes")
        #expect(value["c"] == "no")
        #expect(value["d"] == true)
        #expect(value["e"] == 1000)
        #expect(value["f"] == 15)
        #expect(value["g"] == 31)
        #expect(value["h"] == 7)
        #expect(value["i"] == (try JSONValue(parsing: "-0.5")))
        #expect(value["j"] == .null)
        #expect(value["k"] == .null)
        #expect(value["l"] == "123")
        #expect(value["m"] == 1)
        #expect(value["n"] == .null)
    }

    /// Found in an outside audit: a byte that is not UTF-8 was reported at line 1, column 1 wherever it was
    /// (libyaml's reader gives an offset, not a mark).
    @Test func aByteThatIsNotUTF8IsReportedWhereItIs() throws {
        for (bytes, line, column) in [
            (Array("openapi: 3.1.0\nx-note: caf".utf8) + [0xE9] + Array("\n".utf8), 2, 12),
            (Array("a: 1\nbb: é x".utf8) + [0xFF], 2, 8),
        ] {
            #expect {
                _ = try YAML.parse(bytes)
            } throws: { error in
                guard let error = error as? YAMLError else { return false }
                return error.line == line && error.column == column && error.message.contains("UTF-8")
            }
        }
    }

    @Test func anchorsAndAliasesExpand() throws {
        let value = try YAML.parse(
            """
            base: &base {type: string, maxLength: 10}
            name: *base
            list: [*base, *base]
            """)
        #expect(value["name"] == value["base"])
        #expect(value["list"]?[1]?["maxLength"] == 10)
    }

    /// Found in review: a YAML 1.1 merge key (`<<: *common`) was read as a member named "<<", so the merged
    /// members were lost without a word (a property's schema silently gone). It is refused, with where it is;
    /// a quoted "<<" is an ordinary name, and `<<` as a value is a string.
    @Test func aMergeKeyIsRefusedNeverReadAsAMember() throws {
        let merged = """
            common: &common {id: {type: string}, created: {type: string}}
            properties:
              <<: *common
              title: {type: string}
            """
        #expect {
            _ = try YAML.parse(merged)
        } throws: { error in
            guard let error = error as? YAMLError else { return false }
            return error.code == .mergeKey && error.line == 3 && error.message.contains("merge keys")
        }
        #expect(throws: YAMLError.self) { _ = try YAML.parse("a: {<<: {b: 1}}") }
        let quoted = try YAML.parse("\"<<\": 1\nb: <<\nc: ['<<']\n")
        #expect(quoted["<<"] == 1 && quoted["b"] == "<<" && quoted["c"]?[0] == "<<")
    }

    @Test func aliasesCannotNestPastTheDepthLimit() throws {
        // Each alias adds its anchored tree where it stands: a chain of them nests deeper than any collection
        // in the text (which the depth limit alone checks).
        let limits = YAML.Limits(maximumDepth: 8)
        let chain = """
            a: &a [[[1]]]
            b: &b [[[*a]]]
            c: [[*b]]
            """
        #expect {
            _ = try YAML.parse(chain, limits: limits)
        } throws: { error in
            (error as? YAMLError)?.code == .tooDeep
        }
        // Up to the limit, aliases are fine.
        _ = try YAML.parse("a: &a [[[1]]]\nb: &b [[[*a]]]\nc: [*b]\n", limits: limits)
    }

    @Test func anAliasBombIsStoppedByTheNodeLimit() {
        let bomb = """
            a: &a ["x", "x", "x", "x", "x", "x", "x", "x", "x", "x"]
            b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]
            c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]
            d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]
            e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]
            f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]
            g: [*f, *f, *f, *f, *f, *f, *f, *f, *f, *f]
            """
        #expect {
            _ = try YAML.parse(bomb, limits: YAML.Limits(maximumNodes: 100_000))
        } throws: { error in
            (error as? YAMLError)?.message.contains("alias bomb") == true
        }
    }

    @Test func duplicateKeysInALargeMappingAreFound() {
        // Past twelve keys the reader checks new keys with a hash index (the one the object then keeps for its
        // lookups), still by code points.
        let keys = (0..<30).map { "k\($0): \($0)\n" }.joined()
        #expect {
            _ = try YAML.parse(keys + "k7: again\n")
        } throws: { error in
            (error as? YAMLError)?.message == #"duplicate key "k7""# && (error as? YAMLError)?.line == 31
        }
        let value = try? YAML.parse(keys + "\"\u{E9}\": 1\n\"e\u{301}\": 2\n")
        #expect(value?["\u{E9}"] == 1 && value?["e\u{301}"] == 2 && value?["k29"] == 29)
        // Every member is found where it is, whatever the size around the threshold.
        for count in [11, 12, 13, 14, 30] {
            let text = (0..<count).map { "k\($0): \($0)\n" }.joined()
            let mapping = try? YAML.parse(text)
            #expect((0..<count).allSatisfy { mapping?["k\($0)"] == .number(JSONNumber(Int64($0))) }, "\(count) keys")
            #expect(mapping?["k\(count)"] == nil)
            // The first key and the last one repeated, on either side of the threshold: the error names the key
            // and the line of the repeat.
            for repeated in [0, count - 1] {
                #expect("\(count) keys, k\(repeated) again") {
                    _ = try YAML.parse(text + "k\(repeated): again\n")
                } throws: { error in
                    guard let error = error as? YAMLError else { return false }
                    return error.code == .duplicateKey && error.message == "duplicate key \"k\(repeated)\""
                        && error.line == count + 1
                }
            }
        }
    }

    @Test func duplicateKeysAreAnErrorWithTheirPosition() {
        #expect {
            _ = try YAML.parse("a: 1\nb: 2\na: 3\n")
        } throws: { error in
            guard let error = error as? YAMLError else { return false }
            return error.message == #"duplicate key "a""# && error.line == 3
        }
    }

    @Test(arguments: [
        "a: [1, 2", "key: \"unterminated", "a:\n  - b\n c: d", "- a\nb: c", "--- 1\n--- 2\n", "a: *nowhere", "a: .inf",
        "? [1, 2]\n: x",
    ])
    func invalidYAMLIsATypedErrorWithAPosition(text: String) {
        #expect {
            _ = try YAML.parse(text)
        } throws: { error in
            guard let error = error as? YAMLError else { return false }
            return error.line >= 1 && error.column >= 1 && !error.message.isEmpty
        }
    }

    @Test func quotedScalarsStayStringsAndTagsAreHonoured() throws {
        let value = try YAML.parse(
            """
            a: 'true'
            b: !!str 12
            c: !!int "12"
            d: '1e3'
            """)
        #expect(value["a"] == "true")
        #expect(value["b"] == "12")
        #expect(value["c"] == 12)
        #expect(value["d"] == "1e3")
        #expect(throws: YAMLError.self) { try YAML.parse("a: !!int twelve") }
        #expect(throws: YAMLError.self) { try YAML.parse("a: !custom x") }
    }
}
