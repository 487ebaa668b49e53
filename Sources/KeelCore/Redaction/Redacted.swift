/// A value that must never reach logs, crash reports or user-facing messages (tokens, personal data,
/// backend error text).
///
/// Every textual rendering — `description`, `debugDescription`, string interpolation, `dump`, `print`,
/// `Mirror` — shows `<redacted>`. The wrapped value is reachable only through ``unredacted``, so each
/// place that needs the secret says so in code review.
///
/// Encoding writes the wrapped value: a `Redacted` is meant to be persisted and sent where the
/// contract requires it, only not rendered as text.
public struct Redacted<Value>: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The wrapped value. Every use is a deliberate decision to handle the secret.
    public let unredacted: Value

    /// Wraps `value`.
    public init(_ value: Value) { self.unredacted = value }

    /// The placeholder every rendering shows.
    public static var placeholder: String { "<redacted>" }

    public var description: String { Self.placeholder }
    public var debugDescription: String { Self.placeholder }
    public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .struct) }

    /// Applies `transform` to the wrapped value, keeping the result redacted.
    public func map<T>(_ transform: (Value) throws -> T) rethrows -> Redacted<T> {
        Redacted<T>(try transform(unredacted))
    }
}

extension Redacted: Sendable where Value: Sendable {}
extension Redacted: Equatable where Value: Equatable {}
extension Redacted: Hashable where Value: Hashable {}

extension Redacted: Codable where Value: Codable {
    public init(from decoder: any Decoder) throws {
        self.init(try Value(from: decoder))
    }

    public func encode(to encoder: any Encoder) throws {
        try unredacted.encode(to: encoder)
    }
}
