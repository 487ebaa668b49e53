public import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// A shareable source of randomness, injected wherever logic needs it (jitter, ids).
///
/// ``system`` draws from the operating system's generator; ``seeded(_:)`` is deterministic for tests.
/// The source is safe to share between tasks: draws are serialized.
public final class RandomSource: Sendable {
    private enum Storage: Sendable {
        case system
        case seeded(Locked<SeededGenerator>)
    }

    private let storage: Storage

    private init(_ storage: Storage) { self.storage = storage }

    /// The operating system's generator (`SystemRandomNumberGenerator`; on Linux its bytes are fetched 4 KiB
    /// at a time rather than with a system call per draw).
    public static let system = RandomSource(.system)

    /// A deterministic source: the same seed gives the same sequence of draws.
    public static func seeded(_ seed: UInt64) -> RandomSource {
        RandomSource(.seeded(Locked(SeededGenerator(seed: seed))))
    }

    /// The generator handed to ``withGenerator(_:)``: the system generator or this source's seeded one.
    public struct Generator: RandomNumberGenerator {
        fileprivate var seeded: SeededGenerator?

        /// The next 64 random bits, from the seeded generator when there is one, otherwise from the system generator.
        public mutating func next() -> UInt64 {
            if seeded != nil { return seeded!.next() }
            #if canImport(Glibc) || canImport(Musl)
                return SystemEntropy.next()
            #else
                var system = SystemRandomNumberGenerator()
                return system.next()
            #endif
        }
    }

    /// Runs `body` with exclusive use of the underlying generator.
    public func withGenerator<Result>(_ body: (inout Generator) throws -> Result) rethrows -> Result {
        switch storage {
        case .system:
            var generator = Generator(seeded: nil)
            return try body(&generator)
        case .seeded(let locked):
            return try locked.withLock { seeded in
                var generator = Generator(seeded: seeded)
                defer { seeded = generator.seeded! }
                return try body(&generator)
            }
        }
    }

    /// The next 64 random bits.
    public func next() -> UInt64 {
        withGenerator { $0.next() }
    }

    /// The next 128 random bits as two words: what ``next()`` twice would give, in that order. From the
    /// system source they come from one call to the operating system instead of two (on Linux, from the
    /// buffer of its bytes): ids of 128 bits (correlation ids, trace ids, UUIDs) are drawn on every request
    /// and every queued change.
    public func nextPair() -> (UInt64, UInt64) {
        #if canImport(Glibc) || canImport(Musl)
            if case .system = storage { return SystemEntropy.nextPair() }
        #elseif canImport(Darwin)
            if case .system = storage {
                var words: (UInt64, UInt64) = (0, 0)
                let status = withUnsafeMutableBytes(of: &words) { getentropy($0.baseAddress, $0.count) }
                if status == 0 { return words }
                // getentropy cannot fail for 16 bytes on a working system; if it does, the stdlib's generator
                // (which traps rather than return weak bytes) decides.
            }
        #endif
        return withGenerator { generator in
            let first = generator.next()
            return (first, generator.next())
        }
    }

    /// A uniformly distributed value in `range`.
    public func next(in range: ClosedRange<Double>) -> Double {
        withGenerator { Double.random(in: range, using: &$0) }
    }

    /// A uniformly distributed value in `range`.
    public func next<T: FixedWidthInteger>(in range: ClosedRange<T>) -> T {
        withGenerator { T.random(in: range, using: &$0) }
    }
}

extension RandomSource {
    /// A version 4 UUID drawn from this source (deterministic with a seeded one), lowercase: ids of records
    /// an app makes offline (the reference app's notes), reproducible in tests.
    public func uuidString() -> String {
        var bytes = uuidBytes()
        bytes[6] = (bytes[6] & 0x0F) | 0x40
        return Self.uuidString(bytes)
    }

    /// A version 7 UUID (RFC 9562), lowercase: the milliseconds of `date` since 1970, big-endian, in its
    /// first 48 bits, the rest drawn from this source. Ids made later sort after ids made earlier, so records
    /// keyed by them are appended to their index instead of scattered over it (the sync engine's mutation ids:
    /// a settlement record keyed by one is written on every acknowledgement).
    public func uuidString(timeOrderedAt date: Date) -> String {
        var bytes = uuidBytes()
        let milliseconds = UInt64(max(0, (date.timeIntervalSince1970 * 1000).rounded(.down)))
        for index in 0..<6 { bytes[index] = UInt8(truncatingIfNeeded: milliseconds >> (40 - 8 * UInt64(index))) }
        bytes[6] = (bytes[6] & 0x0F) | 0x70
        return Self.uuidString(bytes)
    }

    /// 16 bytes from this source with the RFC 9562 variant set; the caller sets the version.
    private func uuidBytes() -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(16)
        let (first, second) = nextPair()
        for word in [first, second] { withUnsafeBytes(of: word) { bytes.append(contentsOf: $0) } }
        bytes[8] = (bytes[8] & 0x3F) | 0x80
        return bytes
    }

    /// The 36-character lowercase form, written straight into the string (`UUID.uuidString` and a
    /// lowercasing pass cost more than the draw: a queued change mints two of these ids).
    private static func uuidString(_ bytes: [UInt8]) -> String {
        String(unsafeUninitializedCapacity: 36) { text in
            var position = 0
            for (index, byte) in bytes.enumerated() {
                if index == 4 || index == 6 || index == 8 || index == 10 {
                    text[position] = UInt8(ascii: "-")
                    position += 1
                }
                text[position] = Hex.digits[Int(byte >> 4)]
                text[position + 1] = Hex.digits[Int(byte & 0x0F)]
                position += 2
            }
            return position
        }
    }
}
