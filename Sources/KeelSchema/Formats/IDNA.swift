import Foundation

enum IDNA {
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
