import Foundation

/// JSON Pointer (RFC 6901) helpers.
package enum JSONPointer {
    package static func escape(_ token: String) -> String {
        // Most member names need no escaping; the rest (paths, media types) are common enough in OpenAPI
        // pointers that this is a byte loop rather than Foundation's replacing.
        guard token.utf8.contains(where: { $0 == UInt8(ascii: "~") || $0 == UInt8(ascii: "/") }) else { return token }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(token.utf8.count + 4)
        for byte in token.utf8 {
            switch byte {
            case UInt8(ascii: "~"):
                bytes.append(UInt8(ascii: "~"))
                bytes.append(UInt8(ascii: "0"))
            case UInt8(ascii: "/"):
                bytes.append(UInt8(ascii: "~"))
                bytes.append(UInt8(ascii: "1"))
            default:
                bytes.append(byte)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// `fragment` with percent-encoding removed (as written when it cannot be decoded). Skips
    /// Foundation's decoding when there is nothing to decode (the usual case).
    package static func decodeFragment(_ fragment: String) -> String {
        guard fragment.utf8.contains(UInt8(ascii: "%")) else { return fragment }
        return fragment.removingPercentEncoding ?? fragment
    }

    /// The unescaped tokens of `pointer` (`""` → []), or nil if it is not a pointer.
    package static func tokens(_ pointer: String) -> [String]? {
        if pointer.isEmpty { return [] }
        guard pointer.hasPrefix("/") else { return nil }
        return pointer.dropFirst().split(separator: "/", omittingEmptySubsequences: false).map(unescape)
    }

    package static func unescape(_ token: Substring) -> String {
        guard token.utf8.contains(UInt8(ascii: "~")) else { return String(token) }
        return token.replacingOccurrences(of: "~1", with: "/").replacingOccurrences(of: "~0", with: "~")
    }
}
