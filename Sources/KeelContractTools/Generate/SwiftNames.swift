/// Swift identifiers for names from a contract: schema names become UpperCamelCase types, property names
/// and enum values lowerCamelCase members. The wire name is always kept separately (coding keys, raw
/// values), so the mapping only has to be deterministic and valid, never reversible.
import Foundation

enum SwiftNames {
    /// Keywords that need backticks as member names.
    static let keywords: Set<String> = [
        "associatedtype", "class", "deinit", "enum", "extension", "fileprivate", "func", "import", "init", "inout",
        "internal", "let", "open", "operator", "private", "precedencegroup", "protocol", "public", "rethrows",
        "static", "struct", "subscript", "typealias", "var", "break", "case", "catch", "continue", "default",
        "defer", "do", "else", "fallthrough", "for", "guard", "if", "in", "repeat", "return", "throw", "switch",
        "where", "while", "as", "false", "is", "nil", "super", "throws", "true", "try", "await", "any", "some",
        "consume", "borrowing", "consuming", "package", "_",
    ]

    /// Member names that cannot be used even with backticks (or mean something else after a dot).
    static let reservedMembers: Set<String> = [
        "self", "Self", "init", "deinit", "subscript", "Type", "Protocol", "super", "hashValue",
    ]

    /// Enum case names that would clash with what the enum's conformances declare (`CaseIterable`'s
    /// static `allCases`).
    static let reservedCases: Set<String> = ["allCases"]

    /// ``memberName(_:)`` for an enum case: also never a name the enum's conformances take.
    static func caseName(_ name: String) -> String {
        let result = memberName(name)
        return reservedCases.contains(result) ? result + "_" : result
    }

    /// Type names that cannot be declared (or would hide what generated code needs).
    static let reservedTypes: Set<String> = [
        "Self", "Type", "Protocol", "Any", "AnyObject", "Swift", "Foundation", "KeelContract",
    ]

    /// Standard library and Foundation types an app's code uses everywhere: a model with one of these names
    /// would hide it in the whole module (`catch let error as Error` would mean the contract's `Error`).
    static let shadowedTypes: Set<String> = [
        "Error", "Result", "Data", "Date", "URL", "UUID", "String", "Substring", "Character", "Int", "Int32", "Int64",
        "UInt",
        "Double", "Float", "Decimal", "Bool", "Array", "Dictionary", "Set", "Optional", "Never", "Void", "Codable",
        "Encoder",
        "Decoder", "Encodable", "Decodable", "Hashable", "Equatable", "Sendable", "Identifiable", "Task", "Duration",
        "Locale",
        "TimeZone", "Calendar", "Notification", "Operation", "Progress", "Bundle", "Timer", "Thread", "Process",
        "Range",
        "JSONValue", "Extensible", "ExtensibleEnum", "ClosedEnum", "Nullable", "CodingKeys", "DiscriminatorKey",
        "Comparable",
        "Collection", "Sequence",
        // SwiftUI types that app code names constantly.
        "View", "Text", "Image", "Color", "Font", "Button", "Label", "Shape",
    ]

    /// Splits `name` into words at non-alphanumerics and at case changes (`noteID` → note, ID;
    /// `URLString` → URL, String; `created_at` → created, at).
    static func words(_ name: String) -> [String] {
        var words: [String] = []
        // `+1` and `-1` (reactions, ratings) are different values: plus1, minus1.
        if let sign = name.first, sign == "+" || sign == "-", name.dropFirst().first?.isNumber == true {
            words.append(sign == "+" ? "plus" : "minus")
        }
        var current: [Character] = []
        // `Café` → Cafe; letters with no ASCII form (名前) are dropped, and the caller falls back to a
        // placeholder name (the wire name is kept either way).
        let characters = Array(name.folding(options: [.diacriticInsensitive, .widthInsensitive], locale: nil))
        func flush() {
            if !current.isEmpty { words.append(String(current)) }
            current = []
        }
        for (index, character) in characters.enumerated() {
            guard character.isLetter || character.isNumber, character.isASCII else {
                flush()
                continue
            }
            if let previous = current.last {
                let next = index + 1 < characters.count ? characters[index + 1] : nil
                let lowerToUpper = (previous.isLowercase || previous.isNumber) && character.isUppercase
                // The last capital of a run starts the next word when a lowercase letter follows: URLString.
                let runEnds = previous.isUppercase && character.isUppercase && (next?.isLowercase ?? false)
                if lowerToUpper || runEnds { flush() }
            }
            current.append(character)
        }
        flush()
        // SCREAMING_SNAKE_CASE: FIRST_TIMER → first, timer (not firstTIMER).
        if words.count > 1, !name.contains(where: \.isLowercase) { words = words.map { $0.lowercased() } }
        return words
    }

    /// The name of a top-level model: ``typeName(_:)``, with `Model` appended to a name in
    /// ``shadowedTypes`` (`Error` → `ErrorModel`).
    static func topLevelTypeName(_ name: String) -> String {
        let base = typeName(name)
        return shadowedTypes.contains(base) ? base + "Model" : base
    }

    /// `note_kind` → `NoteKind`, `client-config` → `ClientConfig`; never empty, never starts with a digit.
    static func typeName(_ name: String) -> String {
        var result = words(name).map(capitalized).joined()
        if result.isEmpty { result = "Unnamed" }
        // Types start with a capital letter, members never do: `2fa` is the type `Value2fa` and the member
        // `_2fa`, so the two can never be the same identifier.
        if result.first!.isNumber { result = "Value" + result }
        if reservedTypes.contains(result) { result += "Value" }
        return result
    }

    /// `created_at` → `createdAt`, `ETag` → `eTag`, `URLString` → `urlString`; keywords are returned as is
    /// (``member(_:)`` adds the backticks where they are used).
    static func memberName(_ name: String) -> String {
        let parts = words(name)
        guard let first = parts.first else { return "empty" }
        var result = first.lowercased() + parts.dropFirst().map(capitalized).joined()
        if result.first!.isNumber { result = "_" + result }
        // `none` as a case would make `value == .none` mean Optional's none or the case, depending.
        if reservedMembers.contains(result) || result == "none" { result += "_" }
        return result
    }

    /// `name` as written in a declaration or after a dot: keywords in backticks.
    static func member(_ name: String) -> String {
        keywords.contains(name) ? "`\(name)`" : name
    }

    private static func capitalized(_ word: String) -> String {
        word.prefix(1).uppercased() + word.dropFirst()
    }

    /// `base`, or `base2`, `base3`... — the first not in `taken`; inserts it.
    static func unique(_ base: String, in taken: inout Set<String>) -> String {
        var candidate = base
        var counter = 2
        while taken.contains(candidate) {
            candidate = base + String(counter)
            counter += 1
        }
        taken.insert(candidate)
        return candidate
    }

    /// `text` as the lines of a `//` comment: split at every kind of line break (`\r\n`, `\r`, U+2028, ...),
    /// since any of them would end the comment and turn the rest of the line into code; other control
    /// characters become spaces.
    static func commentLines(_ text: String) -> [String] {
        var lines: [String] = []
        var current = ""
        for character in text {
            if character.isNewline {
                lines.append(current)
                current = ""
            } else if character.unicodeScalars.contains(where: {
                $0.properties.generalCategory == .control
                    || $0.properties.generalCategory == .format && $0.value != 0x200D
            }) {
                current.append(" ")
            } else {
                current.append(character)
            }
        }
        lines.append(current)
        return lines.map { $0.trimmingCharacters(in: .whitespaces) }
    }

    /// `text` on one comment line.
    static func commentText(_ text: String) -> String {
        commentLines(text).filter { !$0.isEmpty }.joined(separator: " ")
    }

    /// A Swift string literal for `text`.
    static func literal(_ text: String) -> String {
        var result = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": result += "\\\""
            case "\\": result += "\\\\"
            case "\n": result += "\\n"
            case "\r": result += "\\r"
            case "\t": result += "\\t"
            case _
            where scalar.value < 0x20 || scalar.value == 0x7F
                || [.format, .lineSeparator, .paragraphSeparator, .control].contains(scalar.properties.generalCategory):
                // Invisible in source (a right-to-left override, a line separator): written as an escape.
                result += "\\u{\(String(scalar.value, radix: 16))}"
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result + "\""
    }
}
