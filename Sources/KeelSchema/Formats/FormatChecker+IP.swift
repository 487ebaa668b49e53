import Foundation

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
