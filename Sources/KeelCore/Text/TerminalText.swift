/// Text from an input (a member name, a path, a pointer) on its way to one line of a text report.
package enum TerminalText {
    /// `text` with every control character written as an escape (`\n`, `\t`, `\r`, `\u{1B}`): one line of a
    /// report stays one line whatever the input named, and an escape sequence in a member name reaches the
    /// terminal as text instead of moving its cursor or faking another finding.
    package static func oneLine(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: isControl) else { return text }
        var result = ""
        for scalar in text.unicodeScalars {
            if isControl(scalar) { result += escaped(scalar) } else { result.unicodeScalars.append(scalar) }
        }
        return result
    }

    /// `text` in quotes, written so that every character of it can be seen: quotes and backslashes escaped,
    /// control characters as in ``oneLine(_:)``, and every other character that shows nothing or moves the
    /// text (format characters, separators other than the space, combining marks, variation selectors,
    /// unassigned and private-use code points, and those `alsoHidden` names) as `\u{…}`. For a message about
    /// a value that is wrong because of such a character: `"bob\u{200B}"`, not `"bob"`.
    package static func quotedVisibly(
        _ text: String, alsoHidden: (Unicode.Scalar) -> Bool = { _ in false }
    ) -> String {
        var result = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": result += "\\\""
            case "\\": result += "\\\\"
            case " ": result += " "
            case _ where isControl(scalar): result += escaped(scalar)
            default:
                let properties = scalar.properties
                let hidden: Bool
                switch properties.generalCategory {
                case .format, .spaceSeparator, .nonspacingMark, .enclosingMark, .unassigned, .privateUse, .surrogate:
                    hidden = true
                default: hidden = properties.isWhitespace || properties.isVariationSelector || alsoHidden(scalar)
                }
                if hidden { result += escaped(scalar) } else { result.unicodeScalars.append(scalar) }
            }
        }
        return result + "\""
    }

    /// A control character as an escape: `\n`, `\r`, `\t`, otherwise `\u{…}` (any scalar).
    private static func escaped(_ scalar: Unicode.Scalar) -> String {
        switch scalar {
        case "\n": return "\\n"
        case "\r": return "\\r"
        case "\t": return "\\t"
        default: return "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
        }
    }

    private static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.properties.generalCategory == .control || scalar == "\u{2028}" || scalar == "\u{2029}"
    }
}
