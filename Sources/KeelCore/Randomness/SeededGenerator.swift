/// A deterministic random number generator (xoshiro256**), seeded with one 64-bit value.
///
/// Use it in tests and in reproducible tools; production code takes ``RandomSource/system``.
/// Not cryptographically secure: never use it for keys, nonces or tokens.
public struct SeededGenerator: RandomNumberGenerator, Sendable, Equatable {
    private var state: (UInt64, UInt64, UInt64, UInt64)

    /// A generator whose whole sequence is determined by `seed`.
    public init(seed: UInt64) {
        // SplitMix64 spreads the seed over the 256-bit state; it never yields an all-zero state.
        var mixer = seed
        func splitMix() -> UInt64 {
            mixer &+= 0x9E37_79B9_7F4A_7C15
            var z = mixer
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        state = (splitMix(), splitMix(), splitMix(), splitMix())
    }

    /// The next 64 bits of the xoshiro256** sequence; advances the state.
    public mutating func next() -> UInt64 {
        let result = rotateLeft(state.1 &* 5, by: 7) &* 9
        let t = state.1 << 17
        state.2 ^= state.0
        state.3 ^= state.1
        state.1 ^= state.2
        state.0 ^= state.3
        state.2 ^= t
        state.3 = rotateLeft(state.3, by: 45)
        return result
    }

    /// Whether the two generators are in the same state, and so will produce the same sequence from here on.
    public static func == (lhs: SeededGenerator, rhs: SeededGenerator) -> Bool {
        lhs.state == rhs.state
    }

    private func rotateLeft(_ value: UInt64, by amount: UInt64) -> UInt64 {
        (value << amount) | (value >> (64 - amount))
    }
}
