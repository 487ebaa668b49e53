/// A value the contract allows to be `null`, for a member that may also be left out: as `Nullable<T>?`,
/// `nil` is "absent", `.null` an explicit `null`, `.value(x)` a value — three states a plain `T?` folds into
/// two. It matters in requests: `{"dueDate": null}` clears a due date, `{}` leaves it as it is.
///
/// ```swift
/// var change = NoteChange(title: "Groceries")
/// change.dueDate = .null        // sends "dueDate": null
/// if let due = note.dueDate?.value { ... }
/// ```
///
/// `keel contract generate` uses it for members that are nullable and not required.
public enum Nullable<Wrapped> {
    /// An explicit `null`.
    case null
    /// A value.
    case value(Wrapped)

    /// The value, or nil for `.null`.
    @inlinable
    public var value: Wrapped? {
        if case .value(let wrapped) = self { return wrapped }
        return nil
    }
}

extension Nullable: Sendable where Wrapped: Sendable {}
extension Nullable: Equatable where Wrapped: Equatable {}
extension Nullable: Hashable where Wrapped: Hashable {}

extension Nullable: Decodable where Wrapped: Decodable {
    /// Decodes `null` as ``null`` and anything else as ``value(_:)``.
    ///
    /// - Throws: whatever decoding `Wrapped` throws for a value that is not `null`.
    @inlinable
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        self = container.decodeNil() ? .null : .value(try container.decode(Wrapped.self))
    }
}

extension Nullable: Encodable where Wrapped: Encodable {
    /// Encodes ``null`` as an explicit JSON `null` and ``value(_:)`` as the wrapped value.
    @inlinable
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .value(let wrapped): try container.encode(wrapped)
        }
    }
}

extension KeyedDecodingContainer {
    /// Decodes a member that may be absent, `null` or a value, keeping the three apart: nil when absent,
    /// ``Nullable/null`` for `null`. The standard `decodeIfPresent` folds `null` into "absent", which would
    /// turn `{"dueDate": null}` ("clear it") into `{}` ("leave it") in a model whose `Codable` conformance
    /// the compiler synthesizes; this overload, more specific than the generic one, is the one synthesis
    /// picks for a `Nullable<T>?` member.
    ///
    /// - Throws: whatever decoding `Wrapped` throws for a value that is not `null`.
    @inlinable
    public func decodeIfPresent<Wrapped: Decodable>(_ type: Nullable<Wrapped>.Type, forKey key: Key) throws
        -> Nullable<Wrapped>?
    {
        guard contains(key) else { return nil }
        return try decode(type, forKey: key)
    }
}
