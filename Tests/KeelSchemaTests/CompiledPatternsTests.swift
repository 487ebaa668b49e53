import Foundation
import KeelContract
@testable import KeelSchema
import Testing

/// The process-wide cache of compiled patterns: corelibs Foundation leaks every pattern longer than 256
/// UTF-16 units it compiles, so a pattern is compiled once while the cache keeps it, within bounds.
@Suite struct CompiledPatternsTests {
    @Test func aPatternIsCompiledOnceWhileItIsKept() {
        let cache = CompiledPatterns(capacity: 4)
        let first = cache.box(for: "^a+$")
        #expect(cache.box(for: "^a+$") === first)
        #expect(cache.compilations == 1)
        #expect(first.matches("aaa") && !first.matches("b"))
        // An invalid pattern is remembered as invalid, not compiled again.
        let invalid = cache.box(for: "(")
        #expect(invalid.regex == nil)
        #expect(cache.box(for: "(") === invalid)
        #expect(cache.compilations == 2)
    }

    @Test func theOldestPatternsAreForgottenBeyondEitherBound() {
        let cache = CompiledPatterns(capacity: 3, maximumUnits: 100)
        for pattern in ["a", "b", "c", "d"] { _ = cache.box(for: pattern) }
        #expect(cache.count == 3 && !cache.contains("a") && cache.contains("d"))
        _ = cache.box(for: "d")
        #expect(cache.compilations == 4)  // kept: not compiled again
        _ = cache.box(for: "a")
        #expect(cache.compilations == 5)  // forgotten: compiled again
        // The unit bound: two patterns of 60 and 61 units cannot both stay within 100.
        let long = String(repeating: "x", count: 60)
        _ = cache.box(for: long)
        _ = cache.box(for: long + "y")
        #expect(cache.units <= 100 && cache.contains(long + "y") && !cache.contains(long))
        // A pattern above the bound by itself is compiled and works, but is not kept.
        let huge = String(repeating: "z", count: 101)
        let box = cache.box(for: huge)
        #expect(box.matches(huge))
        #expect(!cache.contains(huge) && cache.units <= 100)
    }

    @Test func theLeastRecentlyUsedPatternIsForgottenFirst() {
        let cache = CompiledPatterns(capacity: 2)
        let kept = cache.box(for: "x")
        _ = cache.box(for: "y")
        #expect(cache.box(for: "x") === kept)  // used again: now the newest
        _ = cache.box(for: "z")
        #expect(cache.contains("x") && !cache.contains("y") && cache.contains("z"))
    }

    /// ICU compiles code points as written: two canonically equivalent patterns are two regexes, which
    /// Swift's `==` (and so a `String` key) would take for one.
    @Test func canonicallyEquivalentPatternsAreKeptApart() throws {
        let cache = CompiledPatterns()
        let composed = cache.box(for: "^\u{E9}$")
        let decomposed = cache.box(for: "^e\u{301}$")
        #expect(composed !== decomposed)
        #expect(composed.matches("\u{E9}") && !composed.matches("e\u{301}"))
        #expect(decomposed.matches("e\u{301}") && !decomposed.matches("\u{E9}"))
        // Through schemas, in one process (one shared cache) and one after the other.
        let first = try JSONSchema(["pattern": "^\u{E9}$"])
        let second = try JSONSchema(["pattern": "^e\u{301}$"])
        #expect(first.validate("\u{E9}").isValid && !first.validate("e\u{301}").isValid)
        #expect(second.validate("e\u{301}").isValid && !second.validate("\u{E9}").isValid)
        let both = try JSONSchema([
            "patternProperties": ["^\u{E9}$": ["type": "string"], "^e\u{301}$": ["type": "number"]]
        ])
        #expect(both.validate(["\u{E9}": "a", "e\u{301}": 1]).isValid)
        #expect(!both.validate(["e\u{301}": "a"]).isValid)
    }

    @Test func tasksAskingForOnePatternAtOnceAllGetItAndOneIsKept() async {
        let cache = CompiledPatterns()
        let pattern = "^" + String(repeating: "q", count: 300) + "\\z"
        let boxes = await withTaskGroup(of: NSRegularExpressionBox.self) { group in
            for _ in 0..<16 { group.addTask { cache.box(for: pattern) } }
            var boxes: [NSRegularExpressionBox] = []
            for await box in group { boxes.append(box) }
            return boxes
        }
        #expect(boxes.allSatisfy { $0.matches(String(repeating: "q", count: 300)) })
        #expect(cache.count == 1)
        #expect(boxes.filter { $0 === cache.box(for: pattern) }.count >= 1)
    }

    /// Schemas compiled again and again go through the process-wide cache; `format: regex` values (instance
    /// data) through a cache of their own, so they cannot push the schemas' patterns out.
    @Test func schemasAndTheRegexFormatShareTheProcessCache() throws {
        let unique = UUID().uuidString.filter(\.isLetter).lowercased()
        let pattern = "^" + unique + String(repeating: "k", count: 300) + "$"
        for _ in 0..<5 {
            let schema = try JSONSchema(["pattern": .string(pattern)])
            #expect(schema.validate(.string(unique + String(repeating: "k", count: 300))).isValid)
        }
        #expect(CompiledPatterns.shared.contains(ECMAScriptPattern.translate(pattern)))
        let format = "^" + unique + "[0-9]{2}$"
        #expect(FormatChecker.isRegex(format))
        var translator = ECMARegexTranslator(format)
        let translated = translator.translate()
        #expect(translated.map(CompiledPatterns.formats.contains) == true)
        #expect(translated.map(CompiledPatterns.shared.contains) == false)
    }
}
