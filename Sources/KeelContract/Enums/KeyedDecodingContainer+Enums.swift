public import Foundation

// Overloads that `Codable` synthesis picks for members of Keel's enum types. A synthesized `init(from:)`
// calls `container.decode(T.self, forKey:)` by name, so a more specific overload in scope wins over the
// generic `decode<T: Decodable>`. The generic one makes JSONDecoder test `T` against its special types
// and a marker protocol (a dynamic cast) and then call `T.init(from:)` through the unspecialized generic
// conformance; these read the string (or integer) with the concrete, fast overload and match it here,
// specialized for the app's enum (decode.tolerant in keel-bench). Behaviour, errors and coding paths are
// those of `init(from:)`.

extension KeyedDecodingContainer {
    /// Decodes an extensible enum member: `.known` when `Known` declares the string, otherwise `.unknown`.
    ///
    /// - Throws: `DecodingError` when the member is missing, null or not a string.
    @inlinable
    public func decode<Known>(_ type: Extensible<Known>.Type, forKey key: Key) throws -> Extensible<Known> {
        Extensible<Known>.requireNotClosed()
        return Extensible(rawValue: try decode(String.self, forKey: key))
    }

    /// Decodes an optional extensible enum member: nil when absent or null.
    ///
    /// - Throws: `DecodingError` when the member is present but not a string.
    @inlinable
    public func decodeIfPresent<Known>(_ type: Extensible<Known>.Type, forKey key: Key) throws -> Extensible<Known>? {
        Extensible<Known>.requireNotClosed()
        return try decodeIfPresent(String.self, forKey: key).map { Extensible(rawValue: $0) }
    }

    /// Decodes a closed enum member (``ClosedEnum``, ``ClosedIntegerEnum``); a value it does not declare
    /// fails with ``UndeclaredEnumValue``.
    ///
    /// - Throws: `DecodingError` — `dataCorrupted` with an ``UndeclaredEnumValue`` for an undeclared value.
    @inlinable
    public func decode<T: ClosedRawEnum>(_ type: T.Type, forKey key: Key) throws -> T {
        try Self.closed(T.self, try rawValue(T.RawValue.self, forKey: key, of: T.self), at: codingPath, key)
    }

    /// Decodes an optional closed enum member: nil when absent or null, an error when undeclared.
    @inlinable
    public func decodeIfPresent<T: ClosedRawEnum>(_ type: T.Type, forKey key: Key) throws -> T? {
        guard let raw = try rawValueIfPresent(T.RawValue.self, forKey: key, of: T.self) else { return nil }
        return try Self.closed(T.self, raw, at: codingPath, key)
    }

    /// A raw value through the concrete overload for the two raw types contracts use (the checks fold away
    /// once specialized), the generic one otherwise.
    /// An integer raw value is read exactly (see ``exactInteger(_:)``).
    @inlinable
    func rawValue<Raw: Decodable, T>(_ type: Raw.Type, forKey key: Key, of enumType: T.Type) throws -> Raw {
        if Raw.self == String.self { return try decode(String.self, forKey: key) as! Raw }
        if Raw.self == Int.self {
            let number = try decode(Decimal.self, forKey: key)
            // `Decimal` keeps 38 digits; the decoder's own `Int` must agree (Keel's reads the number's text).
            guard let integer = exactInteger(number), (try? decode(Int.self, forKey: key)) == integer else {
                throw undeclaredMarkerValue(number, of: String(describing: T.self), codingPath: codingPath + [key])
            }
            return integer as! Raw
        }
        return try decode(Raw.self, forKey: key)
    }

    /// ``rawValue(_:forKey:of:)`` for an optional member: nil when absent or null.
    @inlinable
    func rawValueIfPresent<Raw: Decodable, T>(_ type: Raw.Type, forKey key: Key, of enumType: T.Type) throws -> Raw? {
        if Raw.self == String.self { return try decodeIfPresent(String.self, forKey: key).map { $0 as! Raw } }
        if Raw.self == Int.self {
            guard let number = try decodeIfPresent(Decimal.self, forKey: key) else { return nil }
            guard let integer = exactInteger(number), (try? decode(Int.self, forKey: key)) == integer else {
                throw undeclaredMarkerValue(number, of: String(describing: T.self), codingPath: codingPath + [key])
            }
            return .some(integer as! Raw)
        }
        return try decodeIfPresent(Raw.self, forKey: key)
    }

    /// The declared case with `raw`, or the error `ClosedRawEnum.init(from:)` throws (at the member's path).
    @inlinable
    static func closed<T: ClosedRawEnum>(_ type: T.Type, _ raw: T.RawValue, at path: [any CodingKey], _ key: Key)
        throws -> T
    {
        guard let value = exactlyDeclared(T.self, raw) else {
            throw undeclaredMarkerValue(raw, of: String(describing: T.self), codingPath: path + [key])
        }
        return value
    }
}
