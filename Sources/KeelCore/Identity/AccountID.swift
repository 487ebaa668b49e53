/// The stable identifier of one signed-in account, validated so that it can name a namespace.
///
/// Everything account-bound in Keel (keys, stores, outbox, drafts, snapshots) is partitioned by an
/// `AccountID` (MOB-DATA-006). An id that could collapse two accounts into one namespace, or one that is
/// a placeholder for "no account", is rejected when the value is created, never later:
///
/// - empty, or only whitespace;
/// - leading or trailing whitespace (`"bob "` and `"bob"` would otherwise be two namespaces for one user);
/// - control characters (including NUL) or Unicode line/paragraph separators;
/// - invisible formatting characters (zero-width spaces and joiners, soft hyphen, byte-order mark,
///   bidirectional controls): `"bob\u{200B}"` would be a second namespace for the visible `bob`;
/// - longer than ``maximumUTF8Length`` bytes of UTF-8;
/// - a placeholder that backends and bridges emit for a missing value: `null`, `nil`, `undefined`,
///   `none`, `unknown`, `(null)`, `anonymous` (any letter case), `-1`, a string of only zeros (`0`),
///   or an all-zero UUID (with or without hyphens or braces).
///
/// `rawValue` is the backend's identifier, not a file name: never build a path or storage key from it
/// directly. Case-insensitive, normalization-insensitive file systems (APFS by default) would merge
/// `Bob` and `bob`; KeelStore derives each account's namespace from a hash of the id's bytes instead.
///
/// Two ids are equal only when their UTF-8 bytes are equal. Swift's `String` equality treats canonically
/// equivalent strings (`"é"` precomposed and decomposed) as equal, but file names and database keys do
/// not; comparing bytes keeps equality and the namespace in agreement.
///
/// ## Topics
/// - ``init(_:)``
/// - ``rawValue``
/// - ``AccountIDError``
public struct AccountID: Sendable, Hashable, Comparable, CustomStringConvertible, Codable {
    /// The longest accepted id, in UTF-8 bytes.
    public static let maximumUTF8Length = 255

    /// The id exactly as the backend issued it.
    public let rawValue: String

    /// Validates `rawValue` as an account id.
    ///
    /// - Throws: ``AccountIDError`` naming the rule the value breaks.
    public init(_ rawValue: String) throws(AccountIDError) {
        try Self.validate(rawValue)
        self.rawValue = rawValue
    }

    /// The id exactly as the backend issued it (``rawValue``); it is not redacted and may be personal data.
    public var description: String { rawValue }

    /// Whether the two ids have the same UTF-8 bytes (canonically equivalent but different strings are not equal).
    public static func == (lhs: AccountID, rhs: AccountID) -> Bool {
        lhs.rawValue.utf8.elementsEqual(rhs.rawValue.utf8)
    }

    /// Hashes the UTF-8 bytes of the id, consistently with `==`.
    public func hash(into hasher: inout Hasher) {
        for byte in rawValue.utf8 { hasher.combine(byte) }
    }

    /// Orders ids by their UTF-8 bytes, lexicographically.
    public static func < (lhs: AccountID, rhs: AccountID) -> Bool {
        lhs.rawValue.utf8.lexicographicallyPrecedes(rhs.rawValue.utf8)
    }

    /// Decodes an id from a string and validates it like ``init(_:)``.
    ///
    /// - Throws: `DecodingError.dataCorrupted` describing the broken rule when the string is not a valid id.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let raw = try container.decode(String.self)
        do {
            try self.init(raw)
        } catch {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: error.description)
        }
    }

    /// Encodes the id as its ``rawValue`` string.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }

    // MARK: - Validation

    private static let placeholders: Set<String> = [
        "null", "nil", "undefined", "none", "unknown", "(null)", "anonymous",
    ]

    private static func validate(_ raw: String) throws(AccountIDError) {
        if raw.unicodeScalars.allSatisfy(\.properties.isWhitespace) {
            throw AccountIDError(code: raw.isEmpty ? .empty : .whitespaceOnly, value: raw)
        }
        if raw.utf8.count > maximumUTF8Length {
            throw AccountIDError(code: .tooLong, value: raw)
        }
        if let first = raw.unicodeScalars.first, let last = raw.unicodeScalars.last,
            first.properties.isWhitespace || last.properties.isWhitespace
        {
            throw AccountIDError(code: .surroundingWhitespace, value: raw)
        }
        if raw.unicodeScalars.contains(where: isForbiddenScalar) {
            throw AccountIDError(code: .controlCharacter, value: raw)
        }
        if hasInvisibleFormatting(raw) {
            throw AccountIDError(code: .invisibleCharacter, value: raw)
        }
        if placeholders.contains(raw.lowercased()) || isZeroPlaceholder(raw) {
            throw AccountIDError(code: .placeholder, value: raw)
        }
    }

    private static func isForbiddenScalar(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.properties.generalCategory {
        case .control, .lineSeparator, .paragraphSeparator: return true
        default: return false
        }
    }

    /// Characters that show nothing though they are not format characters: Hangul fillers, the blank Braille
    /// pattern, the combining grapheme joiner, Khmer's invisible vowels, Mongolian free variation selectors.
    fileprivate static let invisibleLetters: Set<UInt32> = [
        0x115F, 0x1160, 0x3164, 0xFFA0, 0x2800, 0x034F, 0x17B4, 0x17B5, 0x180B, 0x180C, 0x180D, 0x180F,
    ]

    /// Whether `scalar` is a variation selector (it changes how the character before it is drawn, nothing else).
    private static func isVariationSelector(_ scalar: Unicode.Scalar) -> Bool {
        (0xFE00...0xFE0F).contains(scalar.value) || (0xE0100...0xE01EF).contains(scalar.value)
    }

    /// Format characters (category Cf) are invisible. Zero-width joiner and non-joiner are allowed between
    /// other characters, where emoji sequences (👩‍💻) and Indic scripts need them; nowhere else. Other
    /// invisible characters are refused too (`"bob\u{3164}"` would be a second namespace for the visible `bob`),
    /// and a variation selector is allowed only after an emoji (❤️ is U+2764 U+FE0F).
    private static func hasInvisibleFormatting(_ raw: String) -> Bool {
        let scalars = Array(raw.unicodeScalars)
        for (index, scalar) in scalars.enumerated() {
            if invisibleLetters.contains(scalar.value) { return true }
            if isVariationSelector(scalar), index == 0 || !scalars[index - 1].properties.isEmoji { return true }
        }
        for (index, scalar) in scalars.enumerated() where scalar.properties.generalCategory == .format {
            let isJoiner = scalar.value == 0x200D || scalar.value == 0x200C
            let isInside =
                index > 0 && index < scalars.count - 1
                && scalars[index - 1].properties.generalCategory != .format
                && scalars[index + 1].properties.generalCategory != .format
            if !(isJoiner && isInside) { return true }
        }
        return false
    }

    /// `0`, `000…`, `-1`, and the nil UUID in its usual spellings.
    private static func isZeroPlaceholder(_ raw: String) -> Bool {
        if raw == "-1" { return true }
        var digits = Substring(raw)
        if digits.hasPrefix("{"), digits.hasSuffix("}") { digits = digits.dropFirst().dropLast() }
        let zeros = digits.filter { $0 != "-" }
        guard !zeros.isEmpty, zeros.allSatisfy({ $0 == "0" }) else { return false }
        return !digits.contains("-") || (digits.count == 36 && zeros.count == 32)
    }
}

/// Why a string cannot be an ``AccountID``.
public struct AccountIDError: KeelError, Equatable, CustomStringConvertible {
    /// The rule that was broken.
    public typealias Code = ErrorCode<AccountIDError>

    /// The rule that was broken.
    public let code: Code
    /// The rejected value, for the developer. Do not show it to users; it may be personal data.
    public let value: String

    /// A developer-facing explanation of the broken rule; may quote up to 40 characters of the value, which may be
    /// personal data: never show it to users.
    public var description: String {
        let shown = TerminalText.quotedVisibly(
            value.count > 40 ? String(value.prefix(40)) + "…" : value,
            alsoHidden: { AccountID.invisibleLetters.contains($0.value) })
        switch code {
        case .empty: return "account id is empty"
        case .whitespaceOnly: return "account id contains only whitespace"
        case .surroundingWhitespace: return "account id \(shown) has leading or trailing whitespace"
        case .controlCharacter: return "account id \(shown) contains a control character"
        case .invisibleCharacter: return "account id \(shown) contains an invisible formatting character"
        case .tooLong:
            return "account id is \(value.utf8.count) bytes long; at most \(AccountID.maximumUTF8Length) allowed"
        default: return "account id \(shown) is a placeholder, not an account"
        }
    }
}

extension ErrorCode where Domain == AccountIDError {
    /// The id is the empty string.
    public static var empty: Self { Self("empty") }
    /// The id contains only whitespace.
    public static var whitespaceOnly: Self { Self("whitespaceOnly") }
    /// The id starts or ends with whitespace.
    public static var surroundingWhitespace: Self { Self("surroundingWhitespace") }
    /// The id contains a control character, NUL, or a line/paragraph separator.
    public static var controlCharacter: Self { Self("controlCharacter") }
    /// The id contains an invisible formatting character (zero-width space, byte-order mark, bidi control).
    public static var invisibleCharacter: Self { Self("invisibleCharacter") }
    /// The id is longer than ``AccountID/maximumUTF8Length`` bytes.
    public static var tooLong: Self { Self("tooLong") }
    /// The id is a placeholder for a missing value (`null`, `undefined`, an all-zero UUID, ...).
    public static var placeholder: Self { Self("placeholder") }
}

extension AccountID {
    /// Whether two account ids held as text (a request header, a token's claim) name the same account: the same
    /// UTF-8 bytes, as ``AccountID``'s `==` decides — never Swift's `==` on `String`, which
    /// takes a decomposed "é" for the precomposed one, two accounts with two vaults. Two nils are the same
    /// (no account); a nil and an account are not.
    public static func same(_ lhs: String?, _ rhs: String?) -> Bool {
        switch (lhs, rhs) {
        case (nil, nil): true
        case (let lhs?, let rhs?): lhs.utf8.elementsEqual(rhs.utf8)
        default: false
        }
    }
}
