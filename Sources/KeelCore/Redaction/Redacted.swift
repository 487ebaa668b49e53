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

    /// Always ``placeholder`` (`<redacted>`), never the wrapped value.
    public var description: String { Self.placeholder }
    /// Always ``placeholder`` (`<redacted>`), never the wrapped value.
    public var debugDescription: String { Self.placeholder }
    /// A mirror with no children, so `dump` and reflection never reach the wrapped value.
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
    /// Decodes the wrapped value as `Value` would decode itself, with no wrapper in the encoded form.
    ///
    /// - Throws: whatever decoding `Value` throws.
    public init(from decoder: any Decoder) throws {
        self.init(try Value(from: decoder))
    }

    /// Encodes the wrapped value itself, unredacted: encoding is for persisting and sending, not for display.
    public func encode(to encoder: any Encoder) throws {
        try unredacted.encode(to: encoder)
    }
}
