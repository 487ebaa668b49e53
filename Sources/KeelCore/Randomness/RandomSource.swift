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

    /// The system generator (`SystemRandomNumberGenerator`).
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
            var system = SystemRandomNumberGenerator()
            return system.next()
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

    /// A uniformly distributed value in `range`.
    public func next(in range: ClosedRange<Double>) -> Double {
        withGenerator { Double.random(in: range, using: &$0) }
    }

    /// A uniformly distributed value in `range`.
    public func next<T: FixedWidthInteger>(in range: ClosedRange<T>) -> T {
        withGenerator { T.random(in: range, using: &$0) }
    }
}
