import Foundation
import KeelCore
import Testing

private func draws(_ count: Int, from generator: inout SeededGenerator) -> [UInt64] {
    (0..<count).map { _ in generator.next() }
}

private func draws(_ count: Int, from source: RandomSource) -> [UInt64] {
    (0..<count).map { _ in source.next() }
}

@Suite struct RandomnessTests {
    // MARK: - SeededGenerator

    @Test func sameSeedGivesTheSameFirst100Values() {
        var first = SeededGenerator(seed: 12345)
        var second = SeededGenerator(seed: 12345)
        let values = draws(100, from: &first)
        #expect(values == draws(100, from: &second))
        #expect(Set(values).count == 100)  // a real sequence, not one value repeated
    }

    @Test func differentSeedsGiveDifferentValues() {
        var zero = SeededGenerator(seed: 0)
        var one = SeededGenerator(seed: 1)
        var large = SeededGenerator(seed: .max)
        let fromZero = draws(100, from: &zero)
        let fromOne = draws(100, from: &one)
        let fromLarge = draws(100, from: &large)
        #expect(fromZero != fromOne)
        #expect(fromOne != fromLarge)
        #expect(Set(fromZero).isDisjoint(with: fromOne))
    }

    @Test func seededGeneratorMatchesReferenceXoshiro256StarStar() {
        // Reference: SplitMix64 seeding and xoshiro256** as published by Blackman and Vigna.
        var zero = SeededGenerator(seed: 0)
        #expect(
            draws(4, from: &zero) == [
                0x99EC_5F36_CB75_F2B4, 0xBF6E_1F78_4956_452A, 0x1A5F_849D_4933_E6E0, 0x6AA5_94F1_262D_2D2C,
            ])
        var fortyTwo = SeededGenerator(seed: 42)
        #expect(
            draws(4, from: &fortyTwo) == [
                0x1578_0B2E_0C2E_C716, 0x6104_D986_6D11_3A7E, 0xAE17_5332_39E4_99A1, 0xECB8_AD47_03B3_60A1,
            ])
    }

    @Test func generatorsAreEqualOnlyWhileTheirStatesAgree() {
        var first = SeededGenerator(seed: 3)
        var second = SeededGenerator(seed: 3)
        #expect(first == second)
        #expect(SeededGenerator(seed: 3) != SeededGenerator(seed: 4))
        _ = first.next()
        #expect(first != second)
        _ = second.next()
        #expect(first == second)
    }

    // MARK: - RandomSource

    @Test func seededSourceIsDeterministic() {
        let first = RandomSource.seeded(77)
        let second = RandomSource.seeded(77)
        let values = draws(100, from: first)
        #expect(values == draws(100, from: second))
        #expect(Set(values).count == 100)
        #expect(draws(10, from: RandomSource.seeded(77)) != draws(10, from: RandomSource.seeded(78)))
    }

    @Test func seededSourceFollowsTheSeededGeneratorSequence() {
        var generator = SeededGenerator(seed: 77)
        let source = RandomSource.seeded(77)
        #expect(draws(50, from: source) == draws(50, from: &generator))
        // withGenerator hands out the same sequence and writes the advanced state back.
        let viaWithGenerator = source.withGenerator { generator in (0..<50).map { _ in generator.next() } }
        #expect(viaWithGenerator == draws(50, from: &generator))
        #expect(source.next() == generator.next())
    }

    @Test func integerDrawsStayInRangeAndCoverIt() {
        let source = RandomSource.seeded(5)
        let range: ClosedRange<Int> = -3...3
        var seen: Set<Int> = []
        for _ in 0..<10_000 {
            let value = source.next(in: range)
            #expect(range.contains(value))
            seen.insert(value)
        }
        #expect(seen == Set(range))

        for _ in 0..<1_000 {
            let byte = source.next(in: UInt8(200)...UInt8(255))
            #expect(byte >= 200)
        }
        #expect(source.next(in: Int(9)...9) == 9)
    }

    @Test func doubleDrawsStayInRangeAndSpreadOverIt() {
        let source = RandomSource.seeded(6)
        var lowest = Double.infinity
        var highest = -Double.infinity
        for _ in 0..<10_000 {
            let value = source.next(in: 0.25...0.75)
            #expect(value >= 0.25 && value <= 0.75)
            lowest = min(lowest, value)
            highest = max(highest, value)
        }
        #expect(lowest < 0.26)
        #expect(highest > 0.74)
        #expect(source.next(in: 1.5...1.5) == 1.5)
    }

    @Test func seededRangedDrawsAreDeterministic() {
        let first = RandomSource.seeded(8)
        let second = RandomSource.seeded(8)
        let a = (0..<100).map { _ in first.next(in: Int(0)...1_000_000) }
        let b = (0..<100).map { _ in second.next(in: Int(0)...1_000_000) }
        #expect(a == b)
        let c = (0..<100).map { _ in first.next(in: 0.0...1.0) }
        let d = (0..<100).map { _ in second.next(in: 0.0...1.0) }
        #expect(c == d)
    }

    @Test func systemSourceProducesVaryingValues() {
        let source = RandomSource.system
        let first = source.next()
        let second = source.next()
        // Two equal 64-bit draws happen once in 2^64 tries; equality means the generator is stuck.
        #expect(first != second)

        for _ in 0..<1_000 {
            let integer = source.next(in: Int(10)...20)
            #expect(integer >= 10 && integer <= 20)
            let value = source.next(in: -1.0...1.0)
            #expect(value >= -1.0 && value <= 1.0)
        }
    }

    @Test func pairsAreTwoDrawsInOrderFromASeededSourceAndVaryFromTheSystem() {
        let paired = RandomSource.seeded(99)
        let single = RandomSource.seeded(99)
        for _ in 0..<50 {
            let (first, second) = paired.nextPair()
            #expect([first, second] == draws(2, from: single))
        }
        // One call to the OS for both words: they must still be independent draws, not one word twice,
        // and successive pairs must differ (equal pairs happen once in 2^128 tries).
        let pairs = (0..<100).map { _ in RandomSource.system.nextPair() }
        #expect(Set(pairs.map { "\($0.0)-\($0.1)" }).count == 100)
        #expect(pairs.filter { $0.0 == $0.1 }.isEmpty)
        #expect(Set(pairs.flatMap { [$0.0, $0.1] }).count == 200)
    }

    /// On Linux the system source hands out the OS's bytes from a buffer refilled 512 words at a time: across
    /// many refills and many tasks at once, no word may be handed out twice and none may be a wiped (zero)
    /// or stale one.
    @Test func systemDrawsFromManyTasksAtOnceAreNeverHandedOutTwice() async {
        let tasks = 8
        let drawsPerTask = 1_000
        let collected = await withTaskGroup(of: [UInt64].self) { group in
            for task in 0..<tasks {
                group.addTask {
                    var words: [UInt64] = []
                    for draw in 0..<drawsPerTask {
                        if (draw + task).isMultiple(of: 3) {
                            let (first, second) = RandomSource.system.nextPair()
                            words += [first, second]
                        } else {
                            words.append(RandomSource.system.next())
                        }
                    }
                    return words
                }
            }
            var all: [UInt64] = []
            for await chunk in group { all += chunk }
            return all
        }
        #expect(collected.count > tasks * drawsPerTask)
        // Two equal 64-bit words among ~10,700 happen about once in 2^37 runs.
        #expect(Set(collected).count == collected.count)
        #expect(!collected.contains(0))
        // Half the bits set: ~685,000 bits, standard deviation ~414; a buffer handed out before it was
        // filled, or after it was wiped, would pull this far off.
        let bits = collected.count * 64
        let ones = collected.reduce(0) { $0 + $1.nonzeroBitCount }
        #expect(abs(ones - bits / 2) < 5_000)
    }

    @Test func concurrentDrawsFromOneSeededSourceLoseNothing() async {
        let source = RandomSource.seeded(2026)
        let tasks = 8
        let drawsPerTask = 1_000

        let collected = await withTaskGroup(of: [UInt64].self) { group in
            for _ in 0..<tasks {
                group.addTask {
                    (0..<drawsPerTask).map { _ in source.next() }
                }
            }
            var all: [UInt64] = []
            for await chunk in group { all += chunk }
            return all
        }

        let expected = draws(tasks * drawsPerTask, from: RandomSource.seeded(2026))
        #expect(collected.count == expected.count)
        // As multisets: every value of the sequential run was drawn exactly once, none twice.
        #expect(collected.sorted() == expected.sorted())
    }

    @Test func timeOrderedUUIDsCarryTheirMillisecondAndSortByIt() throws {
        let source = RandomSource.seeded(7)
        // Half way through a millisecond, so that binary fractions cannot round into the neighbouring one.
        func instant(_ milliseconds: Int64) -> Date { Date(timeIntervalSince1970: (Double(milliseconds) + 0.5) / 1000) }
        let start: Int64 = 1_764_676_800_123  // 2025-12-02 12:00:00.123 UTC
        let id = source.uuidString(timeOrderedAt: instant(start))
        let hex = id.replacingOccurrences(of: "-", with: "")
        #expect(hex.count == 32 && id == id.lowercased())
        #expect(UInt64(hex.prefix(12), radix: 16) == 1_764_676_800_123)
        #expect(Array(hex)[12] == "7")  // version 7
        #expect(["8", "9", "a", "b"].contains(Array(hex)[16]))  // RFC 9562 variant
        #expect(UUID(uuidString: id) != nil)
        // Later ids sort after earlier ones whatever their random bits; the same seed gives the same id.
        var previous = id
        for step in 1...50 {
            let next = source.uuidString(timeOrderedAt: instant(start + Int64(step)))
            #expect(next > previous)
            previous = next
        }
        #expect(RandomSource.seeded(7).uuidString(timeOrderedAt: instant(start)) == id)
        #expect(RandomSource.seeded(7).uuidString().prefix(12) != id.prefix(12))
        // Written by hand, the text is Foundation's canonical form of the same 16 bytes, lowercased.
        let many = RandomSource.seeded(11)
        for step in 0..<200 {
            for made in [many.uuidString(), many.uuidString(timeOrderedAt: instant(start + Int64(step)))] {
                #expect(UUID(uuidString: made)?.uuidString.lowercased() == made)
            }
        }
    }
}
