import Foundation
import KeelContract
import KeelCore

/// A compiled regular expression shared between validations.
final class NSRegularExpressionBox: @unchecked Sendable {
    // @unchecked Sendable: NSRegularExpression is immutable after creation and documented thread-safe.
    let regex: NSRegularExpression?
    init(_ pattern: String) { regex = try? NSRegularExpression(pattern: pattern) }

    func matches(_ string: String) -> Bool {
        guard let regex else { return false }
        return regex.firstMatch(in: string, range: NSRange(string.startIndex..., in: string)) != nil
    }
}

/// Regular expressions compiled once per process, by their ICU pattern, up to a bound.
///
/// corelibs Foundation leaks 2 bytes per UTF-16 unit of every pattern longer than 256 units it compiles
/// (`_CFRegularExpressionCreate` copies it into a buffer it never frees; see `Fuzz/lsan.supp`). A registry
/// already compiles each of its patterns once, but an app that compiles the same schema again and again (per
/// request, per screen) would leak that much every time. Here a pattern is compiled once while the cache
/// keeps it: at most ``capacity`` patterns and ``maximumUnits`` UTF-16 units of them, the least recently used
/// forgotten first (a forgotten pattern is compiled again when it comes back). Patterns are told apart by
/// their exact bytes, as ICU compiles them: `é` and `e` + U+0301 are two patterns, though Swift's `==` would
/// call the two strings equal.
final class CompiledPatterns: Sendable {
    /// The cache of schema patterns (`pattern`, `patternProperties`).
    static let shared = CompiledPatterns()
    /// The cache of `format: regex` checks: their patterns are instance data, possibly a client's, so they
    /// live apart and cannot push the schemas' own patterns out.
    static let formats = CompiledPatterns(capacity: 64, maximumUnits: 64 << 10)

    /// Most patterns kept.
    let capacity: Int
    /// Most UTF-16 units of patterns kept (a hostile document cannot make the cache hold much text).
    let maximumUnits: Int

    private struct Entry {
        let box: NSRegularExpressionBox
        let units: Int
        /// When it was last asked for (a counter): the smallest is forgotten first.
        var used: UInt64
    }

    private struct State {
        /// By the pattern's exact UTF-8 bytes.
        var entries: [[UInt8]: Entry] = [:]
        var units = 0
        var uses: UInt64 = 0
        /// `NSRegularExpression`s made (valid or not).
        var compilations = 0
    }

    private let state = Locked(State())

    init(capacity: Int = 512, maximumUnits: Int = 1 << 20) {
        self.capacity = max(capacity, 1)
        self.maximumUnits = max(maximumUnits, 1)
    }

    /// How many patterns were compiled so far (each compiled pattern longer than 256 units is a leak).
    var compilations: Int { state.withLock { $0.compilations } }

    /// How many patterns are kept.
    var count: Int { state.withLock { $0.entries.count } }

    /// How many UTF-16 units the kept patterns have.
    var units: Int { state.withLock { $0.units } }

    /// Whether `pattern` is kept.
    func contains(_ pattern: String) -> Bool { state.withLock { $0.entries[Array(pattern.utf8)] != nil } }

    /// `pattern` compiled: the kept one, or a new one (kept unless it alone exceeds the unit bound).
    func box(for pattern: String) -> NSRegularExpressionBox {
        let key = Array(pattern.utf8)
        if let kept = state.withLock({ state in Self.use(key, in: &state) }) { return kept }
        // Compiled outside the lock: another thread may compile the same pattern at the same moment; the
        // first to store it wins and both get a working regex.
        let compiled = NSRegularExpressionBox(pattern)
        let units = pattern.utf16.count
        return state.withLock { state in
            state.compilations += 1
            if let kept = Self.use(key, in: &state) { return kept }
            guard units <= maximumUnits else { return compiled }
            state.uses += 1
            state.entries[key] = Entry(box: compiled, units: units, used: state.uses)
            state.units += units
            while state.entries.count > capacity || state.units > maximumUnits {
                // The least recently used; a scan, only when adding beyond the bounds (at most `capacity`).
                guard let oldest = state.entries.min(by: { $0.value.used < $1.value.used }) else { break }
                state.entries[oldest.key] = nil
                state.units -= oldest.value.units
            }
            return compiled
        }
    }

    /// The kept box for `key`, marked as just used.
    private static func use(_ key: [UInt8], in state: inout State) -> NSRegularExpressionBox? {
        guard let entry = state.entries[key] else { return nil }
        state.uses += 1
        state.entries[key]?.used = state.uses
        return entry.box
    }
}

/// Rewrites the ECMA-262 constructs whose meaning differs in ICU (the engine behind NSRegularExpression), so
/// that a schema's `pattern` matches what it matches in JavaScript (with the `u` flag, as JSON Schema reads
/// patterns). Syntax ICU accepts and ECMA-262 does not (inline flags such as `(?i)`) is left to ICU: many
/// published contracts carry patterns written for other engines, and refusing their schemas would help no one.
///
/// What differs, and what it becomes:
/// - `\d`, `\w`, `\s` and their negations are ASCII (and ECMA's own white space) classes, ICU's are
///   Unicode-wide; inside a class the negations become nested sets (`[a\D]` → `[a[^0-9]]`).
/// - `\b` and `\B` are boundaries between ASCII word characters (ICU's use Unicode letters); inside a class
///   `\b` is a backspace. `\v` is U+000B (ICU's is every vertical white space). `\u{…}` is a code point
///   and `\0` is U+0000.
/// - Inside a class, `[` and `&` are plain characters (ICU reads nested sets and `&&` intersections); `[]`
///   never matches and `[^]` matches anything.
/// - Outside a class, `$` matches only at the very end (ICU's also before a final line break) and `.`
///   excludes only line terminators (ICU's also excludes U+000B, U+000C and U+0085).
///
/// The pattern is read by Unicode scalar, never by `Character`: a combining mark after an escape or a
/// bracket is its own element in ECMA-262, as in ICU.
enum ECMAScriptPattern {
    /// ECMA-262 WhiteSpace and LineTerminator code points (ICU's \s lacks U+FEFF).
    private static let whitespace = "\\t\\n\\x{0B}\\f\\r \\x{A0}\\x{FEFF}\\p{Zs}\\x{2028}\\x{2029}"
    private static let word = "a-zA-Z0-9_"
    /// A position between an ASCII word character and anything else (or an end).
    private static let boundary = "(?:(?<=[\(word)])(?![\(word)])|(?<![\(word)])(?=[\(word)]))"
    private static let nonBoundary = "(?:(?<=[\(word)])(?=[\(word)])|(?<![\(word)])(?![\(word)]))"

    static func translate(_ pattern: String) -> String {
        let scalars = Array(pattern.unicodeScalars)
        var result = ""
        var index = 0
        var inClass = false
        /// Inside a class: whether the last element written can start a range (a single character; not the
        /// class's start, a class escape such as `\\d`, or a `-`). A `-` is a range only between two of those;
        /// anywhere else ECMA-262 reads it as itself, and ICU must be told so (`[\\w-.]`, `[+--]`).
        var rangeStart = false
        /// Inside a class: a range operator was just written; the next element ends the range (and cannot
        /// start another: in `[a-z-9]` the second `-` is itself).
        var rangeOpen = false
        func wrote(character: Bool) {
            rangeStart = character && !rangeOpen
            rangeOpen = false
        }
        func peek(_ offset: Int) -> Unicode.Scalar? {
            index + offset < scalars.count ? scalars[index + offset] : nil
        }
        func isClassEscape(at offset: Int) -> Bool {
            peek(offset) == "\\" && peek(offset + 1).map { "dDwWsS".unicodeScalars.contains($0) } == true
        }
        while index < scalars.count {
            let scalar = scalars[index]
            if scalar == "\\", let next = peek(1) {
                index += 2
                if inClass { wrote(character: !"dDwWsS".unicodeScalars.contains(next)) }
                switch next {
                case "s": result += inClass ? whitespace : "[" + whitespace + "]"
                case "S": result += "[^" + whitespace + "]"
                case "d": result += inClass ? "0-9" : "[0-9]"
                case "D": result += "[^0-9]"
                case "w": result += inClass ? word : "[" + word + "]"
                case "W": result += "[^" + word + "]"
                case "v": result += "\\x{0B}"
                case "b": result += inClass ? "\\x{08}" : boundary
                case "B" where !inClass: result += nonBoundary
                case "0" where !(peek(0).map { ("0"..."9").contains($0) } ?? false):
                    result += "\\x{00}"  // ECMA's NUL; ICU reads `\0` as the start of an octal escape
                case "u" where peek(0) == "{":
                    // `\u{1F600}`: ICU spells a code point `\x{…}`; anything else is left for ICU to refuse.
                    var end = index + 1
                    while end < scalars.count, scalars[end].properties.isASCIIHexDigit { end += 1 }
                    if end < scalars.count, scalars[end] == "}", end > index + 1 {
                        result += "\\x{" + String(String.UnicodeScalarView(scalars[(index + 1)..<end])) + "}"
                        index = end + 1
                    } else {
                        result += "\\u"
                    }
                default:
                    result += "\\"
                    result.unicodeScalars.append(next)
                }
                continue
            }
            index += 1
            if inClass {
                switch scalar {
                case "]": inClass = false
                case "[", "&":
                    result += "\\"
                    wrote(character: true)
                case "-":
                    // A range operator only between two characters (the end may be a `-` itself: `[+--]`);
                    // otherwise the character itself, which ICU must be told.
                    if !rangeOpen, rangeStart, peek(0) != nil, peek(0) != "]", !isClassEscape(at: 0) {
                        rangeStart = false
                        rangeOpen = true
                    } else {
                        result += "\\"
                        wrote(character: true)
                    }
                default: wrote(character: true)
                }
                result.unicodeScalars.append(scalar)
                continue
            }
            switch scalar {
            case "$": result += "\\z"
            case ".": result += "[^\\n\\r\\x{2028}\\x{2029}]"
            case "[" where peek(0) == "]":
                result += "(?!)"  // ECMA's empty class never matches; ICU has no empty class
                index += 1
            case "[" where peek(0) == "^" && peek(1) == "]":
                result += "[\\s\\S]"  // ECMA's negated empty class matches any character
                index += 2
            case "[":
                inClass = true
                rangeStart = false
                rangeOpen = false
                result += "["
                if peek(0) == "^" {
                    result += "^"
                    index += 1
                }
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result
    }
}
