import Foundation

struct ECMARegexTranslator {
    /// What the previous token was, to reject stacked quantifiers such as ICU's possessive `a++`.
    private enum Previous { case other, quantifier, lazyQuantifier }

    private let scalars: [Unicode.Scalar]
    private var output = ""
    private var index = 0
    private var groupNames: Set<String> = []
    private var referencedNames: Set<String> = []

    /// Prepares to translate `pattern`.
    init(_ pattern: String) {
        scalars = Array(pattern.unicodeScalars)
    }

    /// The scalar `offset` places after the current one, if any.
    private func peek(_ offset: Int) -> Unicode.Scalar? {
        index + offset < scalars.count ? scalars[index + offset] : nil
    }

    /// The ICU pattern, or `nil` when the pattern is not ECMA-262 syntax.
    mutating func translate() -> String? {
        var inClass = false
        var previous = Previous.other
        while let scalar = peek(0) {
            if scalar == "\\" {
                guard translateEscape(inClass: inClass) else { return nil }
                previous = .other
                continue
            }
            if inClass {
                // ICU gives `[` (nested sets) and `&&` (intersection) meaning inside a class; ECMA does not.
                switch scalar {
                case "]": inClass = false; output += "]"
                case "[": output += "\\["
                case "&": output += "\\&"
                default: output.unicodeScalars.append(scalar)
                }
                index += 1
                continue
            }
            switch scalar {
            case "*", "+", "?", "{":
                var length = 1
                if scalar == "{" {
                    guard let braceLength = quantifierBraceLength() else { return nil }
                    length = braceLength
                }
                switch previous {
                case .quantifier where scalar == "?": previous = .lazyQuantifier
                case .quantifier, .lazyQuantifier: return nil
                case .other: previous = .quantifier
                }
                output.unicodeScalars.append(contentsOf: scalars[index..<(index + length)])
                index += length
                continue
            case "[":
                if peek(1) == "]" {
                    output += "(?!)"  // ECMA's empty class never matches; ICU has no empty class
                    index += 2
                } else if peek(1) == "^", peek(2) == "]" {
                    output += "[\\s\\S]"  // ECMA's negated empty class matches any character
                    index += 3
                } else {
                    inClass = true
                    output += "["
                    index += 1
                    if peek(0) == "^" {
                        output += "^"
                        index += 1
                    }
                }
            case "]", "}":
                return nil  // with the `u` flag a lone closing bracket is a syntax error
            case "(":
                guard translateGroupOpening() else { return nil }
            default:
                output.unicodeScalars.append(scalar)
                index += 1
            }
            previous = .other
        }
        guard !inClass, referencedNames.isSubset(of: groupNames) else { return nil }
        return output
    }

    /// The length of a `{n}`, `{n,}` or `{n,m}` quantifier at the current position, or `nil`.
    private func quantifierBraceLength() -> Int? {
        var offset = 1
        var sawDigit = false
        while let scalar = peek(offset), FormatChecker.isDigit(scalar) {
            sawDigit = true
            offset += 1
        }
        guard sawDigit else { return nil }
        if peek(offset) == "," {
            offset += 1
            while let scalar = peek(offset), FormatChecker.isDigit(scalar) { offset += 1 }
        }
        return peek(offset) == "}" ? offset + 1 : nil
    }

    /// Translates `(`, `(?:`, lookarounds, named groups and ES2025 modifier groups.
    private mutating func translateGroupOpening() -> Bool {
        guard peek(1) == "?" else {
            output += "("
            index += 1
            return true
        }
        switch peek(2) {
        case ":", "=", "!":
            output += "(?" + String(Character(peek(2) ?? ":"))
            index += 3
            return true
        case "<" where peek(3) == "=" || peek(3) == "!":
            // ECMA lookbehind may be unbounded, which ICU cannot compile; a non-capturing group keeps the
            // structure (and capture numbering) ICU is asked to verify.
            output += "(?:"
            index += 4
            return true
        case "<":
            index += 3
            guard let name = groupName(), groupNames.insert(name).inserted else { return false }
            // ECMA names may use `$` or non-ASCII letters, which ICU rejects; a plain capturing group keeps the
            // numbering and named references are checked here instead.
            output += "("
            return true
        default:
            // ES2025 modifiers `(?ims-ims:...)`; global inline flags like `(?i)` are not ECMA-262.
            var offset = 2
            var flags = ""
            while let scalar = peek(offset), "ims-".unicodeScalars.contains(scalar) {
                flags.unicodeScalars.append(scalar)
                offset += 1
            }
            guard peek(offset) == ":", flags != "", flags != "-" else { return false }
            output += "(?" + flags + ":"
            index += offset + 1
            return true
        }
    }

    /// Reads `name>` (the `<` already consumed) and returns the name, or `nil` when it is not an identifier.
    private mutating func groupName() -> String? {
        var name = ""
        while let scalar = peek(0), scalar != ">" {
            let isStart = scalar.properties.isIDStart || scalar == "$" || scalar == "_"
            let isContinue =
                scalar.properties.isIDContinue || scalar == "$" || scalar == "\u{200C}"
                || scalar == "\u{200D}"
            guard name.isEmpty ? isStart : isContinue else { return nil }
            name.unicodeScalars.append(scalar)
            index += 1
        }
        guard peek(0) == ">", !name.isEmpty else { return nil }
        index += 1
        return name
    }

    /// Translates the escape at the current position; `false` when ECMA-262 (`u` flag) does not define it.
    private mutating func translateEscape(inClass: Bool) -> Bool {
        guard let escaped = peek(1) else { return false }
        switch escaped {
        case "^", "$", "\\", ".", "*", "+", "?", "(", ")", "[", "]", "{", "}", "|", "/":
            output += "\\" + String(Character(escaped))
            index += 2
        case "-" where inClass:
            output += "\\-"
            index += 2
        case "d", "D", "w", "W", "s", "S", "f", "n", "r", "t":
            output += "\\" + String(Character(escaped))
            index += 2
        case "v":
            output += "\\x{0B}"  // ICU's `\v` is a class of vertical whitespace, ECMA's is U+000B
            index += 2
        case "b":
            output += inClass ? "\\x{08}" : "\\b"  // inside a class ECMA's `\b` is a backspace
            index += 2
        case "B" where !inClass:
            output += "\\B"
            index += 2
        case "0":
            guard !(peek(2).map(FormatChecker.isDigit) ?? false) else { return false }  // no octal with `u`
            output += "\\x{00}"
            index += 2
        case "1"..."9" where !inClass:
            var digits = ""
            index += 1
            while let scalar = peek(0), FormatChecker.isDigit(scalar) {
                digits.unicodeScalars.append(scalar)
                index += 1
            }
            output += "\\" + digits
        case "c":
            guard let letter = peek(2), FormatChecker.isAlpha(letter) else { return false }
            output += "\\c" + String(Character(letter))
            index += 3
        case "x":
            guard let high = peek(2), let low = peek(3), FormatChecker.isHex(high), FormatChecker.isHex(low) else {
                return false
            }
            output += "\\x{" + String(Character(high)) + String(Character(low)) + "}"
            index += 4
        case "u":
            return translateUnicodeEscape()
        case "p", "P":
            guard peek(2) == "{" else { return false }
            var offset = 3
            var body = ""
            while let scalar = peek(offset),
                FormatChecker.isAlpha(scalar) || FormatChecker.isDigit(scalar)
                    || scalar == "_" || scalar == "="
            {
                body.unicodeScalars.append(scalar)
                offset += 1
            }
            guard peek(offset) == "}", !body.isEmpty else { return false }
            output += "\\" + String(Character(escaped)) + "{" + body + "}"
            index += offset + 1
        case "k" where !inClass:
            guard peek(2) == "<" else { return false }
            index += 3
            guard let name = groupName() else { return false }
            referencedNames.insert(name)
            output += "(?:)"  // named groups become plain groups, so the reference is checked, not compiled
        default:
            return false
        }
        return true
    }

    /// Translates `\uHHHH` or `\u{H...}` into ICU's `\x{...}`.
    private mutating func translateUnicodeEscape() -> Bool {
        var digits = ""
        if peek(2) == "{" {
            var offset = 3
            while let scalar = peek(offset), FormatChecker.isHex(scalar) {
                digits.unicodeScalars.append(scalar)
                offset += 1
            }
            guard peek(offset) == "}", !digits.isEmpty, let value = UInt32(digits, radix: 16), value <= 0x10FFFF else {
                return false
            }
            index += offset + 1
        } else {
            for offset in 2...5 {
                guard let scalar = peek(offset), FormatChecker.isHex(scalar) else { return false }
                digits.unicodeScalars.append(scalar)
            }
            index += 6
        }
        output += "\\x{" + digits + "}"
        return true
    }
}
