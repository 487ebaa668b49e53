import Foundation
import KeelContract

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

/// Rewrites the ECMA-262 constructs whose meaning differs in ICU (the engine behind NSRegularExpression).
enum ECMAScriptPattern {
    /// ECMA-262 WhiteSpace and LineTerminator code points (ICU's \\s lacks U+FEFF).
    private static let whitespace = "\\t\\n\\x{0B}\\f\\r \\x{A0}\\x{FEFF}\\p{Zs}\\x{2028}\\x{2029}"

    static func translate(_ pattern: String) -> String {
        // ECMA-262 \d, \w and \s are ASCII/explicit classes; ICU's are Unicode-wide. `$` and `.` differ too.
        var result = ""
        var iterator = pattern.makeIterator()
        var inClass = false
        while let character = iterator.next() {
            if character == "\\", let next = iterator.next() {
                switch next {
                case "s": result += inClass ? whitespace : "[" + whitespace + "]"
                case "S": result += inClass ? "\\S" : "[^" + whitespace + "]"
                case "d": result += inClass ? "0-9" : "[0-9]"
                case "D": result += inClass ? "\\D" : "[^0-9]"
                case "w": result += inClass ? "a-zA-Z0-9_" : "[a-zA-Z0-9_]"
                case "W": result += inClass ? "\\W" : "[^a-zA-Z0-9_]"
                default: result += "\\" + String(next)
                }
                continue
            }
            if !inClass {
                // Without the `m` flag an ECMA-262 `$` matches only at the very end; ICU's also matches
                // before a final line break ("abc\n" would pass `^[a-z]+$`).
                if character == "$" {
                    result += "\\z"
                    continue
                }
                // An ECMA-262 `.` excludes only \n, \r, U+2028 and U+2029; ICU's also excludes \v, \f and
                // U+0085.
                if character == "." {
                    result += "[^\\n\\r\\x{2028}\\x{2029}]"
                    continue
                }
            }
            if character == "[" { inClass = true }
            if character == "]" { inClass = false }
            result.append(character)
        }
        return result
    }
}
