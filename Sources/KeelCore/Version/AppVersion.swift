/// A public app version: one to four dot-separated non-negative integers, compared numerically with
/// missing components as zero (`5.2` = `5.2.0`, `5.10.0` > `5.9.0`).
public struct AppVersion: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The components as written (one to four).
    public let components: [Int]

    /// The version written as `text`; nil for anything else (empty components, signs, letters, more than
    /// four components, components too large for `Int`).
    public init?(_ text: String) {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard (1...4).contains(parts.count) else { return nil }
        var components: [Int] = []
        for part in parts {
            guard !part.isEmpty, part.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }),
                let value = Int(part)
            else { return nil }
            components.append(value)
        }
        self.components = components
        description = components.map(String.init).joined(separator: ".")
    }

    private var padded: [Int] { components + Array(repeating: 0, count: 4 - components.count) }

    /// Equal when equal component by component, missing ones being zero.
    public static func == (lhs: AppVersion, rhs: AppVersion) -> Bool { lhs.padded == rhs.padded }

    /// Hashes the padded components (so `5.2` and `5.2.0` hash alike).
    public func hash(into hasher: inout Hasher) { hasher.combine(padded) }

    /// Numeric, component by component.
    public static func < (lhs: AppVersion, rhs: AppVersion) -> Bool {
        lhs.padded.lexicographicallyPrecedes(rhs.padded)
    }

    /// The components joined with dots (`05.1` reads as `5.1`); made once, as it goes on every request of a
    /// client with a version policy.
    public let description: String
}
