/// Lowercase hex, read and written byte by byte: digests, key ids, vault namespaces and markers, correlation
/// ids, UUIDs and trace ids. Ids are minted for every request and every queued change, so writing them goes
/// straight into the string's storage (no `String(_:radix:)`, no padding, no lowercasing pass).
package enum Hex {
    package static let digits = Array("0123456789abcdef".utf8)

    package static func isLowercaseDigit(_ byte: UInt8) -> Bool {
        (0x30...0x39).contains(byte) || (0x61...0x66).contains(byte)
    }

    /// The value of one lowercase hex digit.
    package static func nibble(_ byte: UInt8) -> UInt8? {
        switch byte {
        case 0x30...0x39: byte - 0x30
        case 0x61...0x66: byte - 0x61 + 10
        default: nil
        }
    }

    /// The byte two lowercase hex digits spell.
    package static func byte(_ high: UInt8, _ low: UInt8) -> UInt8? {
        guard let high = nibble(high), let low = nibble(low) else { return nil }
        return high << 4 | low
    }

    /// The value of 1…16 lowercase hex digits.
    package static func value(_ bytes: some Collection<UInt8>) -> UInt64? {
        guard !bytes.isEmpty, bytes.count <= 16 else { return nil }
        var result: UInt64 = 0
        for byte in bytes {
            guard let digit = nibble(byte) else { return nil }
            result = result << 4 | UInt64(digit)
        }
        return result
    }

    /// Writes `value` as 16 lowercase hex digits (leading zeros included) into `buffer` from `offset`.
    package static func write(_ value: UInt64, into buffer: UnsafeMutableBufferPointer<UInt8>, at offset: Int) {
        precondition(offset >= 0 && offset + 16 <= buffer.count, "no room for 16 hex digits")
        let start = UnsafeMutableRawPointer(buffer.baseAddress.unsafelyUnwrapped + offset)
        start.storeBytes(of: eightDigits(UInt32(truncatingIfNeeded: value >> 32)).littleEndian, as: UInt64.self)
        (start + 8).storeBytes(of: eightDigits(UInt32(truncatingIfNeeded: value)).littleEndian, as: UInt64.self)
    }

    /// The 8 hex digits of `value` as ASCII, eight at once in one word, the first digit in the lowest byte: a
    /// traceparent writes 48 digits per attempt, and digit by digit (a table lookup or a branch each) they
    /// were a tenth of what trace context cost a call (keel-bench trace.overhead).
    static func eightDigits(_ value: UInt32) -> UInt64 {
        // Each nibble to a byte of its own: nibble k of `value` in byte k.
        var spread = UInt64(value)
        spread = (spread | spread << 16) & 0x0000_FFFF_0000_FFFF
        spread = (spread | spread << 8) & 0x00FF_00FF_00FF_00FF
        spread = (spread | spread << 4) & 0x0F0F_0F0F_0F0F_0F0F
        // The most significant digit first.
        spread = spread.byteSwapped
        // Per byte: 6 more carries into bit 4 exactly for 10…15, the letters; they get 39 more, '0' + 10 + 39
        // being 'a'. No byte overflows into the next.
        let letters = ((spread &+ 0x0606_0606_0606_0606) >> 4) & 0x0101_0101_0101_0101
        return spread &+ 0x3030_3030_3030_3030 &+ letters &* 39
    }

    /// `value` as 16 lowercase hex digits.
    package static func text(_ value: UInt64) -> String {
        String(unsafeUninitializedCapacity: 16) { buffer in
            write(value, into: buffer, at: 0)
            return 16
        }
    }

    /// `high` then `low`, as 32 lowercase hex digits.
    package static func text(_ high: UInt64, _ low: UInt64) -> String {
        String(unsafeUninitializedCapacity: 32) { buffer in
            write(high, into: buffer, at: 0)
            write(low, into: buffer, at: 16)
            return 32
        }
    }

    package static func encode(_ bytes: some Sequence<UInt8>) -> String {
        var text: [UInt8] = []
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// `byte` as a URL percent-escape, `%` and two uppercase digits (RFC 3986 §2.1 prefers uppercase).
    package static func percentEscape(_ byte: UInt8) -> String {
        let upper: [UInt8] = Array("0123456789ABCDEF".utf8)
        return String(decoding: [UInt8(ascii: "%"), upper[Int(byte >> 4)], upper[Int(byte & 0x0F)]], as: UTF8.self)
    }

    package static func decode(_ text: String) -> [UInt8]? {
        let utf8 = Array(text.utf8)
        guard utf8.count.isMultiple(of: 2) else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(utf8.count / 2)
        var index = 0
        while index < utf8.count {
            guard let byte = byte(utf8[index], utf8[index + 1]) else { return nil }
            bytes.append(byte)
            index += 2
        }
        return bytes
    }
}
