/// Text from an input (a member name, a path, a pointer) on its way to one line of a text report.
package enum TerminalText {
    /// `text` with every control character written as an escape (`\n`, `\t`, `\r`, `\u{1B}`): one line of a
    /// report stays one line whatever the input named, and an escape sequence in a member name reaches the
    /// terminal as text instead of moving its cursor or faking another finding.
    package static func oneLine(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: isControl) else { return text }
        var result = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\n": result += "\\n"
            case "\r": result += "\\r"
            case "\t": result += "\\t"
            case _ where isControl(scalar):
                result += "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result
    }

    private static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.properties.generalCategory == .control || scalar == "\u{2028}" || scalar == "\u{2029}"
    }
}
