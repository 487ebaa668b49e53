import Foundation

/// Checks string formats of JSON Schema draft 2020-12 (RFC 3339, RFC 5321/5322 subset, RFC 4122, RFC 3986,
/// RFC 2673/4291, RFC 1123).
///
/// Every checker is a hand-written recogniser for the grammar the specification cites. None of them trims or
/// normalises its input: the vocabulary asserts on the exact string an instance holds, so a trailing newline
/// or a non-ASCII digit is a failure, not something to clean up.
///
/// Coverage notes:
/// - `hostname` accepts LDH labels (RFC 1123); a label starting with `xn--` must be a valid A-label, i.e.
///   decode as Punycode (RFC 3492), re-encode to itself and decode to a valid U-label.
/// - `idn-hostname` applies IDNA2008 (RFC 5890–5893). Foundation ships no IDNA tables, so the derived
///   property (RFC 5892 §2), the Bidi classes (RFC 5893) and the joining types used by the ZERO WIDTH
///   NON-JOINER rule are approximated from the Unicode properties the standard library exposes plus a few
///   script ranges. Unicode NFC is not enforced on U-labels.
/// - `regex` accepts ECMA-262 syntax (with the `u` flag's strictness): the pattern is first checked for
///   constructs ECMA-262 lacks (such as `(?i)` or `\a`), then translated to ICU syntax and compiled with
///   `NSRegularExpression`, which catches unbalanced groups, bad quantifiers and unknown back-references.
enum FormatChecker {
    /// The format names ``check(_:_:)`` recognises; any other name is an unknown format.
    static let supportedFormats: Set<String> = [
        "date-time", "date", "time", "duration", "email", "idn-email", "hostname", "idn-hostname", "ipv4", "ipv6",
        "uuid", "uri", "uri-reference", "iri", "iri-reference", "uri-template", "json-pointer",
        "relative-json-pointer", "regex",
    ]

    /// `nil` when `format` is unknown (unknown formats always pass), otherwise whether `value` conforms.
    static func check(_ format: String, _ value: String) -> Bool? {
        switch format {
        case "date-time": return isDateTime(value)
        case "date": return isDate(value)
        case "time": return isTime(value)
        case "duration": return isDuration(value)
        case "email": return isEmail(value, international: false)
        case "idn-email": return isEmail(value, international: true)
        case "hostname": return isHostname(value)
        case "idn-hostname": return isIDNHostname(value)
        case "ipv4": return isIPv4(Array(value.utf8)[...])
        case "ipv6": return isIPv6(Array(value.utf8)[...])
        case "uuid": return isUUID(value)
        case "uri": return isURIReference(value, iri: false, absolute: true)
        case "uri-reference": return isURIReference(value, iri: false, absolute: false)
        case "iri": return isURIReference(value, iri: true, absolute: true)
        case "iri-reference": return isURIReference(value, iri: true, absolute: false)
        case "uri-template": return isURITemplate(value)
        case "json-pointer": return isJSONPointer(Array(value.unicodeScalars)[...])
        case "relative-json-pointer": return isRelativeJSONPointer(value)
        case "regex": return isRegex(value)
        default: return nil
        }
    }
}

// MARK: - ASCII helpers

extension FormatChecker {
    /// Whether `byte` is an ASCII digit; non-ASCII digits (Bengali, full-width, ...) never count.
    fileprivate static func isDigit(_ byte: UInt8) -> Bool { byte >= 0x30 && byte <= 0x39 }

    /// Whether `byte` is an ASCII hexadecimal digit of either case.
    fileprivate static func isHex(_ byte: UInt8) -> Bool {
        isDigit(byte) || (byte >= 0x41 && byte <= 0x46) || (byte >= 0x61 && byte <= 0x66)
    }

    /// Whether `scalar` is an ASCII hexadecimal digit of either case.
    fileprivate static func isHex(_ scalar: Unicode.Scalar) -> Bool {
        scalar.isASCII && isHex(UInt8(scalar.value))
    }

    /// Whether `scalar` is an ASCII digit.
    fileprivate static func isDigit(_ scalar: Unicode.Scalar) -> Bool {
        scalar.isASCII && isDigit(UInt8(scalar.value))
    }

    /// Whether `scalar` is an ASCII letter.
    fileprivate static func isAlpha(_ scalar: Unicode.Scalar) -> Bool {
        ("a"..."z").contains(scalar) || ("A"..."Z").contains(scalar)
    }

    /// The decimal value of `count` ASCII digits at `start`, or `nil` when out of bounds or not digits.
    fileprivate static func number(_ bytes: [UInt8], _ start: Int, _ count: Int) -> Int? {
        guard start >= 0, start + count <= bytes.count else { return nil }
        var value = 0
        for byte in bytes[start..<(start + count)] {
            guard isDigit(byte) else { return nil }
            value = value * 10 + Int(byte - 0x30)
        }
        return value
    }
}

// MARK: - RFC 3339 date, time, date-time; RFC 3339 appendix A duration

extension FormatChecker {
    /// `full-date "T" full-time` (RFC 3339 §5.6); the `T` may be lower case (§5.6 note).
    static func isDateTime(_ value: String) -> Bool {
        let bytes = Array(value.utf8)
        guard bytes.count > 11, isFullDate(bytes, at: 0) else { return false }
        guard bytes[10] == UInt8(ascii: "T") || bytes[10] == UInt8(ascii: "t") else { return false }
        return isFullTime(bytes, at: 11)
    }

    /// `full-date` alone: exactly `YYYY-MM-DD`.
    static func isDate(_ value: String) -> Bool {
        let bytes = Array(value.utf8)
        return bytes.count == 10 && isFullDate(bytes, at: 0)
    }

    /// `full-time`: a partial time followed by a mandatory offset.
    static func isTime(_ value: String) -> Bool {
        isFullTime(Array(value.utf8), at: 0)
    }

    /// Whether the ten bytes at `start` form a real calendar date (proleptic Gregorian leap years).
    private static func isFullDate(_ bytes: [UInt8], at start: Int) -> Bool {
        guard bytes.count >= start + 10, bytes[start + 4] == UInt8(ascii: "-"), bytes[start + 7] == UInt8(ascii: "-"),
            let year = number(bytes, start, 4), let month = number(bytes, start + 5, 2),
            let day = number(bytes, start + 8, 2)
        else { return false }
        guard (1...12).contains(month), day >= 1 else { return false }
        let isLeapYear = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
        let daysInMonth = [31, isLeapYear ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
        return day <= daysInMonth[month - 1]
    }

    /// Whether `bytes[start...]` is exactly `time-hour ":" time-minute ":" time-second [time-secfrac] time-offset`.
    private static func isFullTime(_ bytes: [UInt8], at start: Int) -> Bool {
        let colon = UInt8(ascii: ":")
        guard bytes.count >= start + 9, bytes[start + 2] == colon, bytes[start + 5] == colon,
            let hour = number(bytes, start, 2), let minute = number(bytes, start + 3, 2),
            let second = number(bytes, start + 6, 2)
        else { return false }
        var index = start + 8
        if bytes[index] == UInt8(ascii: ".") {
            index += 1
            let digitsStart = index
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
            guard index > digitsStart, index < bytes.count else { return false }
        }
        // Minutes east of UTC; needed to place a leap second, which only exists at 23:59:60 UTC.
        var offsetMinutes = 0
        switch bytes[index] {
        case UInt8(ascii: "Z"), UInt8(ascii: "z"):
            index += 1
        case UInt8(ascii: "+"), UInt8(ascii: "-"):
            guard bytes.count >= index + 6, bytes[index + 3] == colon, let offsetHour = number(bytes, index + 1, 2),
                let offsetMinute = number(bytes, index + 4, 2), offsetHour <= 23, offsetMinute <= 59
            else { return false }
            offsetMinutes = (offsetHour * 60 + offsetMinute) * (bytes[index] == UInt8(ascii: "-") ? -1 : 1)
            index += 6
        default:
            return false
        }
        guard index == bytes.count, hour <= 23, minute <= 59, second <= 60 else { return false }
        if second == 60 {
            let utcMinuteOfDay = ((hour * 60 + minute - offsetMinutes) % 1440 + 1440) % 1440
            return utcMinuteOfDay == 23 * 60 + 59
        }
        return true
    }

    /// `duration` from RFC 3339 appendix A: `P` then weeks alone, or date units (a contiguous run of Y, M, D)
    /// optionally followed by `T` and a non-empty contiguous run of H, M, S; integers only.
    static func isDuration(_ value: String) -> Bool {
        let bytes = Array(value.utf8)
        guard bytes.count > 1, bytes[0] == UInt8(ascii: "P") else { return false }
        let body = bytes[1...]
        let timeMarker = body.firstIndex(of: UInt8(ascii: "T"))
        guard let dateUnits = durationUnits(body[..<(timeMarker ?? body.endIndex)]) else { return false }
        if dateUnits == [UInt8(ascii: "W")] { return timeMarker == nil }
        guard isContiguousRun(dateUnits, of: "YMD") else { return false }
        guard let timeMarker else { return !dateUnits.isEmpty }
        guard let timeUnits = durationUnits(body[(timeMarker + 1)...]), !timeUnits.isEmpty else { return false }
        return isContiguousRun(timeUnits, of: "HMS")
    }

    /// The unit letters of a sequence of `1*DIGIT unit` pairs, or `nil` when a unit lacks digits or vice versa.
    private static func durationUnits(_ part: ArraySlice<UInt8>) -> [UInt8]? {
        var units: [UInt8] = []
        var digitCount = 0
        for byte in part {
            if isDigit(byte) {
                digitCount += 1
            } else {
                guard digitCount > 0 else { return nil }
                units.append(byte)
                digitCount = 0
            }
        }
        return digitCount == 0 ? units : nil
    }

    /// Whether `units` appear in `order` without gaps or repeats (`YM`, `MD` but not `YD` or `DY`).
    private static func isContiguousRun(_ units: [UInt8], of order: String) -> Bool {
        let order = Array(order.utf8)
        var previous: Int?
        for unit in units {
            guard let position = order.firstIndex(of: unit) else { return false }
            if let previous, position != previous + 1 { return false }
            previous = position
        }
        return true
    }
}

// MARK: - RFC 4122 uuid

extension FormatChecker {
    /// `8-4-4-4-12` hexadecimal digits of any case; version and variant nibbles are not constrained.
    static func isUUID(_ value: String) -> Bool {
        let bytes = Array(value.utf8)
        guard bytes.count == 36 else { return false }
        for (index, byte) in bytes.enumerated() {
            let isHyphenPosition = index == 8 || index == 13 || index == 18 || index == 23
            guard isHyphenPosition ? byte == UInt8(ascii: "-") : isHex(byte) else { return false }
        }
        return true
    }
}

// MARK: - RFC 2673 ipv4, RFC 4291 ipv6

extension FormatChecker {
    /// A dotted quad of decimal octets 0–255 without leading zeros (which some parsers read as octal).
    static func isIPv4(_ bytes: ArraySlice<UInt8>) -> Bool {
        let parts = bytes.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard parts.count == 4 else { return false }
        for part in parts {
            guard (1...3).contains(part.count), part.allSatisfy(isDigit) else { return false }
            guard part.count == 1 || part.first != UInt8(ascii: "0") else { return false }
            guard part.reduce(0, { $0 * 10 + Int($1 - 0x30) }) <= 255 else { return false }
        }
        return true
    }

    /// RFC 4291 §2.2 text form: eight 1–4 digit hex groups, at most one `::` standing for one or more zero
    /// groups, and optionally a dotted-quad IPv4 tail counting as two groups. Zone ids and prefixes are not
    /// part of an address.
    static func isIPv6(_ bytes: ArraySlice<UInt8>) -> Bool {
        let text = Array(bytes)
        let colon = UInt8(ascii: ":")
        guard !text.isEmpty else { return false }
        var compression: Int?
        for index in 0..<(text.count - 1) where text[index] == colon && text[index + 1] == colon {
            // A second `::` (including the overlap inside `:::`) makes the group count ambiguous.
            guard compression == nil else { return false }
            compression = index
        }
        guard let compression else { return ipv6GroupCount(text[...], mayEndInIPv4: true) == 8 }
        guard let head = ipv6GroupCount(text[..<compression], mayEndInIPv4: false),
            let tail = ipv6GroupCount(text[(compression + 2)...], mayEndInIPv4: true)
        else { return false }
        return head + tail <= 7
    }

    /// The number of 16-bit groups in a colon-separated run, or `nil` when a group is malformed.
    private static func ipv6GroupCount(_ part: ArraySlice<UInt8>, mayEndInIPv4: Bool) -> Int? {
        guard !part.isEmpty else { return 0 }
        let groups = part.split(separator: UInt8(ascii: ":"), omittingEmptySubsequences: false)
        var count = 0
        for (index, group) in groups.enumerated() {
            if mayEndInIPv4, index == groups.count - 1, group.contains(UInt8(ascii: ".")) {
                guard isIPv4(group) else { return nil }
                count += 2
            } else {
                guard (1...4).contains(group.count), group.allSatisfy(isHex) else { return nil }
                count += 1
            }
        }
        return count
    }
}

// MARK: - RFC 1123 hostname, RFC 5890 idn-hostname

extension FormatChecker {
    /// An ASCII host name: dot-separated LDH labels of 1–63 octets, at most 253 octets, no trailing dot;
    /// `xn--` labels must be valid A-labels.
    static func isHostname(_ value: String) -> Bool {
        let scalars = Array(value.unicodeScalars)
        guard !scalars.isEmpty, scalars.count <= 253, scalars.allSatisfy(\.isASCII) else { return false }
        var labels: [[Unicode.Scalar]] = []
        for raw in scalars.split(separator: ".", omittingEmptySubsequences: false) {
            guard let label = IDNA.unicodeFormOfLDHLabel(raw) else { return false }
            labels.append(label)
        }
        return IDNA.satisfiesBidiRule(labels)
    }

    /// An internationalised host name: labels are LDH labels, A-labels or U-labels, separated by any of the
    /// four full stops IDNA2003 recognised (RFC 3490 §3.1); length limits apply to the A-label form.
    static func isIDNHostname(_ value: String) -> Bool {
        let scalars = Array(value.unicodeScalars)
        let rawLabels = scalars.split(omittingEmptySubsequences: false) { scalar in
            scalar == "." || scalar == "\u{3002}" || scalar == "\u{FF0E}" || scalar == "\u{FF61}"
        }
        var asciiLength = rawLabels.count - 1
        var labels: [[Unicode.Scalar]] = []
        for raw in rawLabels {
            if raw.allSatisfy(\.isASCII) {
                guard let label = IDNA.unicodeFormOfLDHLabel(raw) else { return false }
                asciiLength += raw.count
                labels.append(label)
            } else {
                let label = raw.map(IDNA.asciiLowercased)
                guard IDNA.isValidULabel(label), let encoded = Punycode.encode(label), encoded.count + 4 <= 63 else {
                    return false
                }
                asciiLength += encoded.count + 4
                labels.append(label)
            }
        }
        return asciiLength <= 253 && IDNA.satisfiesBidiRule(labels)
    }
}

/// IDNA2008 label rules (RFC 5891 §5.4, RFC 5892, RFC 5893), approximated where Unicode tables are missing.
private enum IDNA {
    /// RFC 5892 derived property values that matter for validation.
    enum Property { case pvalid, contextJ, contextO, disallowed }

    /// RFC 5893 Bidi classes that the Bidi rule distinguishes.
    enum BidiClass { case l, r, al, en, es, cs, et, an, nsm, bn, on }

    /// Joining types used by the ZERO WIDTH NON-JOINER rule (RFC 5892 appendix A.1).
    enum JoiningType { case dual, right, left, transparent, none }

    /// `scalar` with ASCII letters lowered; DNS compares ASCII case-insensitively, other scripts are exact.
    static func asciiLowercased(_ scalar: Unicode.Scalar) -> Unicode.Scalar {
        ("A"..."Z").contains(scalar) ? Unicode.Scalar(scalar.value + 32) ?? scalar : scalar
    }

    /// The U-label form of an ASCII label (itself, lowered, or the decoded A-label), or `nil` when the label is
    /// not a valid LDH label or its `xn--` form is not a valid A-label.
    static func unicodeFormOfLDHLabel(_ raw: ArraySlice<Unicode.Scalar>) -> [Unicode.Scalar]? {
        guard (1...63).contains(raw.count), raw.first != "-", raw.last != "-" else { return nil }
        guard raw.allSatisfy({ FormatChecker.isAlpha($0) || FormatChecker.isDigit($0) || $0 == "-" }) else {
            return nil
        }
        let label = raw.map(asciiLowercased)
        guard label.starts(with: ["x", "n", "-", "-"] as [Unicode.Scalar]) else { return label }
        // An A-label must decode, contain non-ASCII, be the canonical encoding and decode to a valid U-label.
        let encoded = Array(label.dropFirst(4))
        guard let decoded = Punycode.decode(encoded), !decoded.allSatisfy(\.isASCII),
            Punycode.encode(decoded) == encoded
        else { return nil }
        let unicodeLabel = decoded.map(asciiLowercased)
        return isValidULabel(unicodeLabel) ? unicodeLabel : nil
    }

    /// RFC 5891 §5.4 checks on a U-label whose ASCII letters are already lowered.
    static func isValidULabel(_ label: [Unicode.Scalar]) -> Bool {
        guard let first = label.first, first != "-", label.last != "-" else { return false }
        // Positions 3–4 `--` are reserved for tagged encodings such as `xn--` (RFC 5891 §4.2.3.1).
        if label.count >= 4, label[2] == "-", label[3] == "-" { return false }
        switch first.properties.generalCategory {
        case .nonspacingMark, .spacingMark, .enclosingMark: return false
        default: break
        }
        for index in label.indices {
            switch property(of: label[index]) {
            case .pvalid: continue
            case .contextJ: guard joinerIsAllowed(in: label, at: index) else { return false }
            case .contextO: guard otherContextIsAllowed(in: label, at: index) else { return false }
            case .disallowed: return false
            }
        }
        return true
    }

    /// The RFC 5892 §3 derived property, computed from the standard library's Unicode properties.
    static func property(of scalar: Unicode.Scalar) -> Property {
        let value = scalar.value
        // Exceptions (F) come first because several of them would otherwise fall into another category.
        switch value {
        case 0x00DF, 0x03C2, 0x06FD, 0x06FE, 0x0F0B, 0x3007: return .pvalid
        case 0x00B7, 0x0375, 0x05F3, 0x05F4, 0x30FB, 0x0660...0x0669, 0x06F0...0x06F9: return .contextO
        case 0x0640, 0x07FA, 0x302E, 0x302F, 0x3031...0x3035, 0x303B: return .disallowed
        default: break
        }
        let properties = scalar.properties
        if properties.generalCategory == .unassigned, !properties.isNoncharacterCodePoint { return .disallowed }
        if ("a"..."z").contains(scalar) || FormatChecker.isDigit(scalar) || scalar == "-" { return .pvalid }
        if value == 0x200C || value == 0x200D { return .contextJ }
        // Unstable (B): anything NFKC case folding would change cannot round-trip through lookup.
        if properties.changesWhenNFKCCaseFolded { return .disallowed }
        if properties.isDefaultIgnorableCodePoint || properties.isWhitespace || properties.isNoncharacterCodePoint {
            return .disallowed
        }
        // Ignorable blocks (D) and conjoining old Hangul jamo (I).
        switch value {
        case 0x20D0...0x20FF, 0x1D100...0x1D24F, 0x1100...0x11FF, 0xA960...0xA97F, 0xD7B0...0xD7FF:
            return .disallowed
        default: break
        }
        switch properties.generalCategory {
        case .lowercaseLetter, .uppercaseLetter, .otherLetter, .decimalNumber, .modifierLetter, .nonspacingMark,
            .spacingMark:
            return .pvalid
        default:
            return .disallowed
        }
    }

    /// RFC 5892 appendix A.1 (ZWNJ) and A.2 (ZWJ).
    private static func joinerIsAllowed(in label: [Unicode.Scalar], at index: Int) -> Bool {
        if index > 0, label[index - 1].properties.canonicalCombiningClass == .virama { return true }
        guard label[index].value == 0x200C else { return false }
        // ZWNJ may also sit between a left-/dual-joining and a right-/dual-joining letter, skipping
        // transparent marks on either side.
        var before = index - 1
        while before >= 0, joiningType(of: label[before]) == .transparent { before -= 1 }
        guard before >= 0, [.left, .dual].contains(joiningType(of: label[before])) else { return false }
        var after = index + 1
        while after < label.count, joiningType(of: label[after]) == .transparent { after += 1 }
        return after < label.count && [.right, .dual].contains(joiningType(of: label[after]))
    }

    /// RFC 5892 appendix A.3–A.9.
    private static func otherContextIsAllowed(in label: [Unicode.Scalar], at index: Int) -> Bool {
        let previous = index > 0 ? label[index - 1] : nil
        let next = index + 1 < label.count ? label[index + 1] : nil
        switch label[index].value {
        case 0x00B7: return previous == "l" && next == "l"
        case 0x0375: return next.map(isGreek) ?? false
        case 0x05F3, 0x05F4: return previous.map(isHebrew) ?? false
        case 0x30FB: return label.contains { $0.value != 0x30FB && isHiraganaKatakanaOrHan($0) }
        case 0x0660...0x0669: return !label.contains { (0x06F0...0x06F9).contains($0.value) }
        case 0x06F0...0x06F9: return !label.contains { (0x0660...0x0669).contains($0.value) }
        default: return false
        }
    }

    /// Greek script, approximated by the Greek blocks minus their Common and Coptic code points.
    private static func isGreek(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x0374, 0x0375, 0x037E, 0x0385, 0x0387, 0x03E2...0x03EF: return false
        case 0x0370...0x03FF, 0x1F00...0x1FFF, 0x10140...0x1018F, 0x1D200...0x1D24F: return true
        default: return false
        }
    }

    /// Hebrew script, approximated by the Hebrew block and the Hebrew presentation forms.
    private static func isHebrew(_ scalar: Unicode.Scalar) -> Bool {
        (0x0591...0x05F4).contains(scalar.value) || (0xFB1D...0xFB4F).contains(scalar.value)
    }

    /// Hiragana, Katakana or Han script, approximated by their blocks.
    private static func isHiraganaKatakanaOrHan(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x3041...0x309F, 0x1B001...0x1B11F: return true  // Hiragana
        case 0x30A0...0x30FF, 0x31F0...0x31FF, 0x32D0...0x32FE, 0x3300...0x3357, 0xFF66...0xFF9D, 0x1B000:
            return true  // Katakana
        case 0x2E80...0x2FDF, 0x3005, 0x3007, 0x3021...0x3029, 0x3038...0x303B, 0x3400...0x4DBF, 0x4E00...0x9FFF,
            0xF900...0xFAFF, 0x20000...0x3134F:
            return true  // Han
        default: return false
        }
    }

    /// Joining type, approximated: marks are transparent, letters of the cursive scripts dual-joining except
    /// the Arabic and Syriac letters that only join to the right; everything else does not join.
    private static func joiningType(of scalar: Unicode.Scalar) -> JoiningType {
        let value = scalar.value
        switch scalar.properties.generalCategory {
        case .nonspacingMark, .enclosingMark: return .transparent
        case .format where value != 0x200C && value != 0x200D: return .transparent
        default: break
        }
        switch value {
        case 0x0621, 0x0674, 0x06DD: return .none
        case 0x0622...0x0625, 0x0627, 0x0629, 0x062F...0x0632, 0x0648, 0x0671...0x0673, 0x0675...0x0677,
            0x0688...0x0699, 0x06C0, 0x06C3...0x06CB, 0x06CD, 0x06CF, 0x06D2, 0x06D3, 0x06D5, 0x06EE, 0x06EF,
            0x0759...0x075B, 0x076B, 0x076C, 0x0771, 0x0773, 0x0774, 0x0778, 0x0779,
            0x0710, 0x0715...0x0719, 0x071E, 0x0728, 0x072A, 0x072C, 0x072F, 0x074D:
            return .right
        case 0xA872: return .left
        case 0x0620...0x064A, 0x066E...0x06D5, 0x06FA...0x06FF, 0x0750...0x077F, 0x08A0...0x08C9, 0x0712...0x072F,
            0x074E, 0x074F, 0x07CA...0x07EA, 0x1820...0x1878, 0x1887...0x18A8, 0xA840...0xA871:
            return .dual
        default: return .none
        }
    }

    /// The Bidi class, approximated from general category and the right-to-left blocks.
    static func bidiClass(of scalar: Unicode.Scalar) -> BidiClass {
        let value = scalar.value
        let category = scalar.properties.generalCategory
        if category == .nonspacingMark || category == .enclosingMark { return .nsm }
        switch value {
        case 0x30...0x39, 0x06F0...0x06F9, 0xB2, 0xB3, 0xB9, 0x2070...0x2079, 0xFF10...0xFF19: return .en
        case 0x0600...0x0605, 0x0660...0x0669, 0x066B, 0x066C, 0x06DD, 0x08E2, 0x10E60...0x10E7E: return .an
        case 0x2B, 0x2D: return .es
        case 0x2C, 0x2E, 0x2F, 0x3A, 0xA0: return .cs
        case 0x23...0x25, 0xA2...0xA5, 0xB0, 0xB1: return .et
        case 0x0590...0x05FF, 0x07C0...0x085F, 0xFB1D...0xFB4F, 0x10800...0x10CFF, 0x10D40...0x10EBF,
            0x1E800...0x1EC6F:
            return .r
        case 0x0600...0x07BF, 0x0860...0x08FF, 0xFB50...0xFDFF, 0xFE70...0xFEFF, 0x10D00...0x10D3F,
            0x1EC70...0x1EFFF:
            return .al
        default: break
        }
        switch category {
        case .format, .control: return .bn
        case .uppercaseLetter, .lowercaseLetter, .titlecaseLetter, .modifierLetter, .otherLetter, .spacingMark,
            .decimalNumber, .letterNumber:
            return .l
        default: return .on
        }
    }

    /// RFC 5893 §2: when any label holds a right-to-left character, every label must satisfy the Bidi rule.
    static func satisfiesBidiRule(_ labels: [[Unicode.Scalar]]) -> Bool {
        let classes = labels.map { $0.map(bidiClass) }
        guard classes.contains(where: { $0.contains { [.r, .al, .an].contains($0) } }) else { return true }
        for label in classes {
            guard let first = label.first else { return false }
            let lastStrong = label.last { $0 != .nsm }
            switch first {
            case .r, .al:
                let allowed: Set<BidiClass> = [.r, .al, .an, .en, .es, .cs, .et, .on, .bn, .nsm]
                guard label.allSatisfy(allowed.contains) else { return false }
                guard let lastStrong, [.r, .al, .en, .an].contains(lastStrong) else { return false }
                if label.contains(.en), label.contains(.an) { return false }
            case .l:
                let allowed: Set<BidiClass> = [.l, .en, .es, .cs, .et, .on, .bn, .nsm]
                guard label.allSatisfy(allowed.contains) else { return false }
                guard let lastStrong, [.l, .en].contains(lastStrong) else { return false }
            default:
                return false
            }
        }
        return true
    }
}

/// Punycode (RFC 3492) with the IDNA parameters, over ASCII scalars.
private enum Punycode {
    private static let base = 36
    private static let tMin = 1
    private static let tMax = 26
    private static let skew = 38
    private static let damp = 700
    private static let initialBias = 72
    private static let initialN = 0x80
    /// Overflow bound; RFC 3492 §6.4 requires detecting overflow rather than wrapping.
    private static let limit = Int(Int32.max)

    /// The bias adaptation function of RFC 3492 §6.1.
    private static func adapt(_ delta: Int, _ pointCount: Int, _ isFirst: Bool) -> Int {
        var delta = isFirst ? delta / damp : delta / 2
        delta += delta / pointCount
        var k = 0
        while delta > ((base - tMin) * tMax) / 2 {
            delta /= base - tMin
            k += base
        }
        return k + (base - tMin + 1) * delta / (delta + skew)
    }

    /// The threshold for digit position `k`.
    private static func threshold(_ k: Int, _ bias: Int) -> Int {
        k <= bias ? tMin : (k >= bias + tMax ? tMax : k - bias)
    }

    /// The digit value of a Punycode character (letters are case-insensitive), or `nil`.
    private static func digitValue(_ scalar: Unicode.Scalar) -> Int? {
        switch scalar {
        case "a"..."z": return Int(scalar.value - 0x61)
        case "A"..."Z": return Int(scalar.value - 0x41)
        case "0"..."9": return Int(scalar.value - 0x30) + 26
        default: return nil
        }
    }

    /// The lower-case Punycode character for a digit value below 36.
    private static func digitScalar(_ digit: Int) -> Unicode.Scalar {
        let value = digit < 26 ? 0x61 + digit : 0x30 + digit - 26
        return Unicode.Scalar(UInt8(truncatingIfNeeded: value))
    }

    /// Decodes `input` (the part after `xn--`), or `nil` when it is malformed or overflows.
    static func decode(_ input: [Unicode.Scalar]) -> [Unicode.Scalar]? {
        var output: [Unicode.Scalar] = []
        var position = 0
        if let delimiter = input.lastIndex(of: "-") {
            output = Array(input[..<delimiter])
            guard output.allSatisfy(\.isASCII) else { return nil }
            position = delimiter + 1
        }
        var n = initialN
        var i = 0
        var bias = initialBias
        while position < input.count {
            let oldI = i
            var weight = 1
            var k = base
            while true {
                guard position < input.count, let digit = digitValue(input[position]) else { return nil }
                position += 1
                guard digit <= (limit - i) / weight else { return nil }
                i += digit * weight
                let t = threshold(k, bias)
                if digit < t { break }
                guard weight <= limit / (base - t) else { return nil }
                weight *= base - t
                k += base
            }
            let count = output.count + 1
            bias = adapt(i - oldI, count, oldI == 0)
            guard i / count <= limit - n else { return nil }
            n += i / count
            i %= count
            guard let scalar = Unicode.Scalar(UInt32(clamping: n)) else { return nil }
            output.insert(scalar, at: i)
            i += 1
        }
        return output
    }

    /// Encodes `input` to the Punycode string that follows `xn--`, or `nil` on overflow.
    static func encode(_ input: [Unicode.Scalar]) -> [Unicode.Scalar]? {
        var output = input.filter(\.isASCII)
        let basicCount = output.count
        var handled = basicCount
        if basicCount > 0 { output.append("-") }
        var n = initialN
        var delta = 0
        var bias = initialBias
        while handled < input.count {
            guard let next = input.lazy.map({ Int($0.value) }).filter({ $0 >= n }).min() else { return nil }
            guard next - n <= (limit - delta) / (handled + 1) else { return nil }
            delta += (next - n) * (handled + 1)
            n = next
            for scalar in input {
                let value = Int(scalar.value)
                if value < n {
                    delta += 1
                    guard delta <= limit else { return nil }
                }
                guard value == n else { continue }
                var q = delta
                var k = base
                while true {
                    let t = threshold(k, bias)
                    if q < t { break }
                    output.append(digitScalar(t + (q - t) % (base - t)))
                    q = (q - t) / (base - t)
                    k += base
                }
                output.append(digitScalar(q))
                bias = adapt(delta, handled + 1, handled == basicCount)
                delta = 0
                handled += 1
            }
            delta += 1
            n += 1
        }
        return output
    }
}

// MARK: - RFC 5321 email, RFC 6531 idn-email

extension FormatChecker {
    /// An RFC 5321 `Mailbox`: a dot-atom or quoted-string local part of at most 64 octets, `@`, then a host
    /// name or an address literal (`[192.0.2.1]`, `[IPv6:2001:db8::1]`). The international form (RFC 6531)
    /// also admits any non-ASCII character in the local part and an IDN host name.
    static func isEmail(_ value: String, international: Bool) -> Bool {
        let scalars = Array(value.unicodeScalars)
        guard let at = localPartEnd(scalars, international: international) else { return false }
        guard scalars[..<at].reduce(0, { $0 + UTF8.width($1) }) <= 64 else { return false }
        let domain = scalars[(at + 1)...]
        if domain.first == "[" {
            guard domain.count > 2, domain.last == "]", domain.allSatisfy(\.isASCII) else { return false }
            let literal = Array(String(String.UnicodeScalarView(domain.dropFirst().dropLast())).utf8)
            if literal.count > 5, String(decoding: literal[..<5], as: UTF8.self).lowercased() == "ipv6:" {
                return isIPv6(literal[5...])
            }
            return isIPv4(literal[...])
        }
        let host = String(String.UnicodeScalarView(domain))
        return international ? isIDNHostname(host) : isHostname(host)
    }

    /// The index of the `@` that ends a valid local part, or `nil` when the local part is malformed.
    private static func localPartEnd(_ scalars: [Unicode.Scalar], international: Bool) -> Int? {
        let isExtra = { (scalar: Unicode.Scalar) in international && !scalar.isASCII }
        if scalars.first == "\"" {
            var index = 1
            while index < scalars.count {
                let scalar = scalars[index]
                switch scalar.value {
                case 0x22:
                    return index + 1 < scalars.count && scalars[index + 1] == "@" ? index + 1 : nil
                case 0x5C:
                    guard index + 1 < scalars.count else { return nil }
                    let escaped = scalars[index + 1]
                    guard (0x20...0x7E).contains(escaped.value) || isExtra(escaped) else { return nil }
                    index += 2
                case 0x20, 0x21, 0x23...0x5B, 0x5D...0x7E:
                    index += 1
                default:
                    guard isExtra(scalar) else { return nil }
                    index += 1
                }
            }
            return nil
        }
        guard let at = scalars.firstIndex(of: "@"), at > 0 else { return nil }
        let atext = "!#$%&'*+-/=?^_`{|}~".unicodeScalars
        for atom in scalars[..<at].split(separator: ".", omittingEmptySubsequences: false) {
            guard !atom.isEmpty else { return nil }
            let isValidAtom = atom.allSatisfy { scalar in
                isAlpha(scalar) || isDigit(scalar) || atext.contains(scalar) || isExtra(scalar)
            }
            guard isValidAtom else { return nil }
        }
        return at
    }
}

// MARK: - RFC 3986 uri / uri-reference, RFC 3987 iri / iri-reference

extension FormatChecker {
    /// Parses `value` as a URI reference (RFC 3986 §4.1) or, with `iri`, an IRI reference (RFC 3987 §2.2);
    /// `absolute` demands a scheme. Host names are checked syntactically only (`reg-name`), as the RFC does.
    static func isURIReference(_ value: String, iri: Bool, absolute: Bool) -> Bool {
        let scalars = Array(value.unicodeScalars)
        let fragmentStart = scalars.firstIndex(of: "#")
        let queryEnd = fragmentStart ?? scalars.count
        let queryStart = scalars[..<queryEnd].firstIndex(of: "?")
        let hierarchyEnd = queryStart ?? queryEnd
        var pathStart = 0
        let firstDelimiter = scalars[..<hierarchyEnd].firstIndex { $0 == ":" || $0 == "/" }
        if let firstDelimiter, scalars[firstDelimiter] == ":" {
            // A colon before any slash can only end a scheme: a relative reference may not have one in its
            // first segment (`path-noscheme`).
            guard isScheme(scalars[..<firstDelimiter]) else { return false }
            pathStart = firstDelimiter + 1
        } else if absolute {
            return false
        }
        var path = scalars[pathStart..<hierarchyEnd]
        if path.starts(with: ["/", "/"] as [Unicode.Scalar]) {
            let authorityEnd = path.dropFirst(2).firstIndex(of: "/") ?? hierarchyEnd
            guard isAuthority(scalars[(pathStart + 2)..<authorityEnd], iri: iri) else { return false }
            path = scalars[authorityEnd..<hierarchyEnd]
        }
        guard isComponent(path, iri: iri, extra: ":@/") else { return false }
        if let queryStart {
            guard isComponent(scalars[(queryStart + 1)..<queryEnd], iri: iri, extra: ":@/?", privateUse: iri) else {
                return false
            }
        }
        if let fragmentStart {
            guard isComponent(scalars[(fragmentStart + 1)...], iri: iri, extra: ":@/?") else { return false }
        }
        return true
    }

    /// `scheme = ALPHA *( ALPHA / DIGIT / "+" / "-" / "." )`.
    private static func isScheme(_ scheme: ArraySlice<Unicode.Scalar>) -> Bool {
        guard let first = scheme.first, isAlpha(first) else { return false }
        return scheme.allSatisfy { isAlpha($0) || isDigit($0) || $0 == "+" || $0 == "-" || $0 == "." }
    }

    /// `authority = [ userinfo "@" ] host [ ":" port ]` with an IP-literal, IPv4 or reg-name host.
    private static func isAuthority(_ authority: ArraySlice<Unicode.Scalar>, iri: Bool) -> Bool {
        var hostAndPort = authority
        if let at = authority.firstIndex(of: "@") {
            guard isComponent(authority[..<at], iri: iri, extra: ":") else { return false }
            hostAndPort = authority[(at + 1)...]
        }
        var port: ArraySlice<Unicode.Scalar> = []
        if hostAndPort.first == "[" {
            guard let close = hostAndPort.firstIndex(of: "]"),
                isIPLiteral(hostAndPort[(hostAndPort.startIndex + 1)..<close])
            else { return false }
            let rest = hostAndPort[(close + 1)...]
            if let colon = rest.first {
                guard colon == ":" else { return false }
                port = rest.dropFirst()
            }
        } else {
            let colon = hostAndPort.firstIndex(of: ":")
            guard isComponent(hostAndPort[..<(colon ?? hostAndPort.endIndex)], iri: iri, extra: "") else {
                return false
            }
            if let colon { port = hostAndPort[(colon + 1)...] }
        }
        return port.allSatisfy(isDigit)
    }

    /// `IP-literal = "[" ( IPv6address / IPvFuture ) "]"`, given the text between the brackets.
    private static func isIPLiteral(_ literal: ArraySlice<Unicode.Scalar>) -> Bool {
        guard literal.allSatisfy(\.isASCII) else { return false }
        if literal.first == "v" || literal.first == "V" {
            let body = literal.dropFirst()
            guard let dot = body.firstIndex(of: "."), dot > body.startIndex, body[..<dot].allSatisfy(isHex) else {
                return false
            }
            let tail = body[(dot + 1)...]
            return !tail.isEmpty && tail.allSatisfy { isUnreserved($0) || isSubDelimiter($0) || $0 == ":" }
        }
        return isIPv6(ArraySlice(literal.map { UInt8(truncatingIfNeeded: $0.value) }))
    }

    /// Whether every character is unreserved, a sub-delimiter, a percent-encoding, in `extra`, or (for IRIs)
    /// a `ucschar`, plus `iprivate` where `privateUse` allows it (the query).
    private static func isComponent(
        _ component: ArraySlice<Unicode.Scalar>, iri: Bool, extra: String, privateUse: Bool = false
    ) -> Bool {
        var index = component.startIndex
        while index < component.endIndex {
            let scalar = component[index]
            if scalar == "%" {
                guard index + 2 < component.endIndex, isHex(component[index + 1]), isHex(component[index + 2]) else {
                    return false
                }
                index += 3
                continue
            }
            guard isUnreserved(scalar) || isSubDelimiter(scalar) || extra.unicodeScalars.contains(scalar)
                || (iri && isUCSChar(scalar)) || (privateUse && isPrivateUse(scalar))
            else { return false }
            index += 1
        }
        return true
    }

    /// `unreserved = ALPHA / DIGIT / "-" / "." / "_" / "~"`.
    fileprivate static func isUnreserved(_ scalar: Unicode.Scalar) -> Bool {
        isAlpha(scalar) || isDigit(scalar) || scalar == "-" || scalar == "." || scalar == "_" || scalar == "~"
    }

    /// `sub-delims = "!" / "$" / "&" / "'" / "(" / ")" / "*" / "+" / "," / ";" / "="`.
    private static func isSubDelimiter(_ scalar: Unicode.Scalar) -> Bool {
        "!$&'()*+,;=".unicodeScalars.contains(scalar)
    }

    /// RFC 3987 `ucschar`: non-ASCII characters outside controls, surrogates, specials and non-characters.
    fileprivate static func isUCSChar(_ scalar: Unicode.Scalar) -> Bool {
        let value = scalar.value
        switch value {
        case 0xA0...0xD7FF, 0xF900...0xFDCF, 0xFDF0...0xFFEF: return true
        case 0x10000...0xDFFFD: return value & 0xFFFF <= 0xFFFD
        case 0xE1000...0xEFFFD: return value & 0xFFFF <= 0xFFFD
        default: return false
        }
    }

    /// RFC 3987 `iprivate`: private-use characters, allowed only in queries.
    fileprivate static func isPrivateUse(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0xE000...0xF8FF, 0xF0000...0xFFFFD, 0x100000...0x10FFFD: return true
        default: return false
        }
    }
}

// MARK: - RFC 6570 uri-template

extension FormatChecker {
    /// RFC 6570 §2 syntax: literals (with the erratum admitting `'`) and `{operator varspec,...}` expressions.
    static func isURITemplate(_ value: String) -> Bool {
        let scalars = Array(value.unicodeScalars)
        var index = 0
        while index < scalars.count {
            let scalar = scalars[index]
            switch scalar.value {
            case 0x7B:  // "{"
                guard let close = scalars[index...].firstIndex(of: "}"),
                    isTemplateExpression(scalars[(index + 1)..<close])
                else { return false }
                index = close + 1
            case 0x25:  // "%"
                guard index + 2 < scalars.count, isHex(scalars[index + 1]), isHex(scalars[index + 2]) else {
                    return false
                }
                index += 3
            case 0x21, 0x23, 0x24, 0x26...0x3B, 0x3D, 0x3F...0x5B, 0x5D, 0x5F, 0x61...0x7A, 0x7E:
                index += 1
            default:
                guard isUCSChar(scalar) || isPrivateUse(scalar) else { return false }
                index += 1
            }
        }
        return true
    }

    /// `[ operator ] variable-list` between the braces.
    private static func isTemplateExpression(_ expression: ArraySlice<Unicode.Scalar>) -> Bool {
        var list = expression
        if let first = list.first, "+#./;?&=,!@|".unicodeScalars.contains(first) { list = list.dropFirst() }
        guard !list.isEmpty else { return false }
        return list.split(separator: ",", omittingEmptySubsequences: false).allSatisfy(isVarspec)
    }

    /// `varname [ ":" max-length / "*" ]`, where `varname = varchar *( ["."] varchar )`.
    private static func isVarspec(_ varspec: ArraySlice<Unicode.Scalar>) -> Bool {
        var index = varspec.startIndex
        var previousWasDot = true  // a name may not start with a dot
        var nameLength = 0
        scan: while index < varspec.endIndex {
            let scalar = varspec[index]
            switch scalar {
            case "%":
                guard index + 2 < varspec.endIndex, isHex(varspec[index + 1]), isHex(varspec[index + 2]) else {
                    return false
                }
                index += 3
                previousWasDot = false
            case ".":
                guard !previousWasDot else { return false }
                index += 1
                previousWasDot = true
            case "_":
                index += 1
                previousWasDot = false
            default:
                guard isAlpha(scalar) || isDigit(scalar) else { break scan }
                index += 1
                previousWasDot = false
            }
            nameLength += 1
        }
        guard nameLength > 0, !previousWasDot else { return false }
        let modifier = varspec[index...]
        if modifier.isEmpty || modifier.elementsEqual(["*"]) { return true }
        // `max-length = %x31-39 0*3DIGIT`: 1 to 9999 without leading zeros.
        guard modifier.first == ":" else { return false }
        let length = modifier.dropFirst()
        return (1...4).contains(length.count) && length.first != "0" && length.allSatisfy(isDigit)
    }
}

// MARK: - RFC 6901 json-pointer, relative-json-pointer

extension FormatChecker {
    /// Empty, or `/`-prefixed reference tokens in which every `~` is followed by `0` or `1`.
    static func isJSONPointer(_ pointer: ArraySlice<Unicode.Scalar>) -> Bool {
        guard let first = pointer.first else { return true }
        guard first == "/" else { return false }
        var index = pointer.startIndex
        while index < pointer.endIndex {
            if pointer[index] == "~" {
                guard index + 1 < pointer.endIndex, pointer[index + 1] == "0" || pointer[index + 1] == "1" else {
                    return false
                }
                index += 1
            }
            index += 1
        }
        return true
    }

    /// A non-negative integer without leading zeros, followed by `#` or a JSON pointer
    /// (draft-bhutton-relative-json-pointer-00 §3).
    static func isRelativeJSONPointer(_ value: String) -> Bool {
        let scalars = Array(value.unicodeScalars)
        let digitCount = scalars.prefix(while: isDigit).count
        guard digitCount > 0, digitCount == 1 || scalars[0] != "0" else { return false }
        let rest = scalars[digitCount...]
        return rest.elementsEqual(["#"]) || isJSONPointer(rest)
    }
}

// MARK: - ECMA-262 regex

extension FormatChecker {
    /// Whether `pattern` is an ECMA-262 regular expression: ECMA-only syntax is checked and translated here,
    /// the rest of the grammar is left to ICU via `NSRegularExpression`.
    static func isRegex(_ pattern: String) -> Bool {
        var translator = ECMARegexTranslator(pattern)
        guard let translated = translator.translate() else { return false }
        return (try? NSRegularExpression(pattern: translated)) != nil
    }
}

/// Rewrites an ECMA-262 pattern into ICU syntax with the same structure, rejecting what ECMA-262 (with the
/// `u` flag) forbids but ICU would accept: inline flag groups, comments, `(?P...)`, unknown escapes, lone
/// brackets and stacked quantifiers.
private struct ECMARegexTranslator {
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
            let isContinue = scalar.properties.isIDContinue || scalar == "$" || scalar == "\u{200C}"
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
            while let scalar = peek(offset), FormatChecker.isAlpha(scalar) || FormatChecker.isDigit(scalar)
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
