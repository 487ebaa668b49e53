import Foundation

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
