import Foundation
import KeelCore
import Testing

@Suite struct HexTests {
    /// Every digit value in every position, and seeded random words: the eight-at-a-time writer must spell
    /// what `String(_:radix:)` spells, zero-padded to 16 digits.
    @Test func sixteenDigitsAreWhatRadixSixteenSpells() {
        var values: [UInt64] = [0, 1, .max, 0x0123_4567_89AB_CDEF, 0xFEDC_BA98_7654_3210, 0x0A0A_0A0A_0909_0909]
        for digit in UInt64(0)..<16 {
            for position in UInt64(0)..<16 { values.append(digit << (4 * position)) }
        }
        var generator = SeededGenerator(seed: 20_261_205)
        for _ in 0..<2000 { values.append(generator.next()) }
        for value in values {
            let expected = String(repeating: "0", count: 16 - String(value, radix: 16).count) + String(value, radix: 16)
            #expect(Hex.text(value) == expected)
        }
        #expect(Hex.text(0x0123_4567_89AB_CDEF, 0xFEDC_BA98_7654_3210) == "0123456789abcdeffedcba9876543210")
    }

    /// Written in the middle of a buffer, the digits touch only their own 16 bytes.
    @Test func digitsWrittenAtAnOffsetStayInTheirPlace() {
        var bytes = [UInt8](repeating: 0x2A, count: 40)
        bytes.withUnsafeMutableBufferPointer { Hex.write(0xDEAD_BEEF_0000_FFFF, into: $0, at: 7) }
        #expect(bytes[..<7].allSatisfy { $0 == 0x2A })
        #expect(String(decoding: bytes[7..<23], as: UTF8.self) == "deadbeef0000ffff")
        #expect(bytes[23...].allSatisfy { $0 == 0x2A })
    }
}
