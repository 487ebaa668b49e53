import Foundation
import KeelCore
import Testing

/// A generator that plays back `values` in order and counts how many it has handed out.
private struct ScriptedGenerator: RandomNumberGenerator {
    var values: [UInt64]
    private(set) var drawn = 0

    init(_ values: [UInt64]) { self.values = values }

    mutating func next() -> UInt64 {
        precondition(drawn < values.count, "ScriptedGenerator ran out of values")
        defer { drawn += 1 }
        return values[drawn]
    }
}

private func isLowercaseHex(_ text: String) -> Bool {
    text.unicodeScalars.allSatisfy { ("0"..."9").contains($0) || ("a"..."f").contains($0) }
}

@Suite struct CorrelationIDTests {
    // MARK: - Minting

    @Test func sameSeedMintsTheSameID() {
        var first = SeededGenerator(seed: 42)
        var second = SeededGenerator(seed: 42)
        #expect(CorrelationID.make(using: &first) == CorrelationID.make(using: &second))
        #expect(CorrelationID.make(using: &first) == CorrelationID.make(using: &second))
    }

    @Test func differentSeedsMintDifferentIDs() {
        var one = SeededGenerator(seed: 1)
        var two = SeededGenerator(seed: 2)
        #expect(CorrelationID.make(using: &one) != CorrelationID.make(using: &two))
    }

    @Test func successiveIDsFromOneGeneratorDiffer() {
        var generator = SeededGenerator(seed: 7)
        let ids = (0..<100).map { _ in CorrelationID.make(using: &generator) }
        #expect(Set(ids).count == 100)
    }

    @Test func idIsTwoDrawsAsZeroPaddedLowercaseHex() {
        var generator = ScriptedGenerator([0xAB, 0x1])
        let id = CorrelationID.make(using: &generator)
        #expect(id.rawValue == "00000000000000ab0000000000000001")
        #expect(id.description == id.rawValue)
        #expect(generator.drawn == 2)

        // Reference value: xoshiro256** seeded through SplitMix64 with 7; first two outputs.
        var seeded = SeededGenerator(seed: 7)
        #expect(CorrelationID.make(using: &seeded).rawValue == "b358faf74ef9765a475c3d964f482cd2")
    }

    @Test func mintedIDIs32LowercaseHexDigits() throws {
        var generator = SeededGenerator(seed: 2024)
        for _ in 0..<200 {
            let id = CorrelationID.make(using: &generator)
            #expect(id.rawValue.utf8.count == 32)
            #expect(isLowercaseHex(id.rawValue), "\(id.rawValue) is not lowercase hex")
            // Whatever is minted must also be accepted when read back.
            #expect(try CorrelationID(validating: id.rawValue) == id)
        }
    }

    @Test func generatorReturningZerosFirstNeverYieldsTheAllZeroID() {
        var generator = ScriptedGenerator([0, 0, 0, 0, 0x5, 0, 0xDEAD_BEEF, 0xFF])
        let first = CorrelationID.make(using: &generator)
        #expect(first.rawValue == "00000000000000050000000000000000")
        #expect(first.rawValue != String(repeating: "0", count: 32))
        #expect(generator.drawn == 6)

        let second = CorrelationID.make(using: &generator)
        #expect(second.rawValue == "00000000deadbeef00000000000000ff")
        #expect(generator.drawn == 8)
    }

    @Test func equalSeededSourcesMintEqualIDs() {
        let first = RandomSource.seeded(1)
        let second = RandomSource.seeded(1)
        #expect(CorrelationID.make(using: first) == CorrelationID.make(using: second))
    }

    @Test func seededSourceMintsTheSameIDAsAGeneratorWithThatSeed() {
        var generator = SeededGenerator(seed: 1)
        #expect(CorrelationID.make(using: RandomSource.seeded(1)) == CorrelationID.make(using: &generator))
    }

    @Test func sourceAdvancesBetweenIDs() {
        let source = RandomSource.seeded(1)
        let first = CorrelationID.make(using: source)
        let second = CorrelationID.make(using: source)
        #expect(first != second)
    }

    @Test func systemSourceMintsWellFormedDistinctIDs() {
        let first = CorrelationID.make(using: RandomSource.system)
        let second = CorrelationID.make(using: RandomSource.system)
        #expect(first != second)
        #expect(first.rawValue.utf8.count == 32 && isLowercaseHex(first.rawValue))
    }

    // MARK: - Validating

    @Test func validatingAcceptsLowercaseHex() throws {
        let raw = "0123456789abcdef0123456789abcdef"
        #expect(try CorrelationID(validating: raw).rawValue == raw)
        #expect(
            try CorrelationID(validating: "00000000000000000000000000000001").rawValue
                == "00000000000000000000000000000001")
    }

    @Test(arguments: [
        "0123456789ABCDEF0123456789ABCDEF",  // uppercase
        "0123456789abcdef0123456789abcdeF",  // one uppercase digit
        "",  // empty
        "0123456789abcdef0123456789abcde",  // 31 digits
        "0123456789abcdef0123456789abcdef0",  // 33 digits
        "0123456789abcdef0123456789abcdeg",  // non-hex letter
        "0123456789abcdef-123456789abcdef",  // punctuation
        " 123456789abcdef0123456789abcdef",  // space
        "0123456789abcdef0123456789abcd\u{00E9}",  // 32 characters, 33 bytes
        "0123-4567-89ab-cdef-0123-4567-89ab-cdef",  // dashed
    ])
    func validatingRejectsMalformedText(raw: String) {
        #expect(throws: CorrelationIDError.self) { try CorrelationID(validating: raw) }
        do {
            _ = try CorrelationID(validating: raw)
        } catch {
            #expect(error.value == raw)
            #expect(error.reason.contains("32 lowercase hexadecimal digits"))
        }
    }

    @Test func validatingRejectsTheAllZeroID() {
        let zeros = String(repeating: "0", count: 32)
        do {
            _ = try CorrelationID(validating: zeros)
            Issue.record("the all-zero id was accepted")
        } catch {
            #expect(error.value == zeros)
            #expect(error.reason.contains("all-zero"))
            #expect(error.description.contains("invalid correlation id"))
        }
    }

    // MARK: - Codable

    @Test func codableRoundTripKeepsTheID() throws {
        var generator = SeededGenerator(seed: 99)
        let id = CorrelationID.make(using: &generator)
        let data = try JSONEncoder().encode(id)
        #expect(String(decoding: data, as: UTF8.self) == "\"\(id.rawValue)\"")
        #expect(try JSONDecoder().decode(CorrelationID.self, from: data) == id)
    }

    @Test(arguments: [
        "\"\"", "\"00000000000000000000000000000000\"", "\"0123456789ABCDEF0123456789ABCDEF\"", "\"abc\"",
    ])
    func decodingInvalidTextThrowsDecodingError(json: String) {
        #expect(throws: DecodingError.self) {
            try JSONDecoder().decode(CorrelationID.self, from: Data(json.utf8))
        }
    }
}
