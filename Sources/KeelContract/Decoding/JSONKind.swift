/// The kind of a JSON value — what a union without a discriminator is told apart by.
///
/// Generated models decode such a union (`anyOf: [{type: string}, {$ref: Account}]`, an id or the expanded
/// object) by looking at the kind of the value first, then decoding the one variant of that kind: no variant
/// is tried and thrown away.
public enum JSONKind: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// `null`.
    case null
    /// `true` or `false`.
    case boolean
    /// A number (integer or not: JSON does not tell them apart).
    case number
    /// A string.
    case string
    /// An array.
    case array
    /// An object.
    case object

    /// The kind of the value `decoder` is at, found by asking for containers, never by decoding a model:
    /// null, then an object or an array container, then a boolean or a string, and otherwise a number.
    ///
    /// - Throws: `DecodingError` when there is no value at all (a missing member).
    public init(of decoder: any Decoder) throws {
        let single = try decoder.singleValueContainer()
        if single.decodeNil() {
            self = .null
        } else if (try? decoder.container(keyedBy: AnyKey.self)) != nil {
            self = .object
        } else if (try? decoder.unkeyedContainer()) != nil {
            self = .array
        } else if (try? single.decode(Bool.self)) != nil {
            self = .boolean
        } else if (try? single.decode(String.self)) != nil {
            self = .string
        } else {
            self = .number
        }
    }

    /// The value's kind.
    public init(of value: JSONValue) {
        switch value {
        case .null: self = .null
        case .bool: self = .boolean
        case .number: self = .number
        case .string: self = .string
        case .array: self = .array
        case .object: self = .object
        }
    }

    /// `string`, `object`, ...
    public var description: String { rawValue }

    /// The error a union throws for a value of a kind none of its variants has, at the decoder's path.
    public static func mismatch(_ found: JSONKind, expected: [JSONKind], in type: Any.Type, decoder: any Decoder)
        -> DecodingError
    {
        DecodingError.typeMismatch(
            type,
            .init(
                codingPath: decoder.codingPath,
                debugDescription:
                    "expected \(expected.map(\.rawValue).joined(separator: " or ")) for \(type), found \(found.rawValue)"
            ))
    }

    /// Which of `names` the object `decoder` is at has as members: how a union of object variants with
    /// disjoint required members tells them apart.
    ///
    /// - Throws: `DecodingError` when the value is not an object.
    public static func members(_ names: [String], presentIn decoder: any Decoder) throws -> Set<String> {
        let container = try decoder.container(keyedBy: AnyKey.self)
        return Set(names.filter { name in AnyKey(stringValue: name).map(container.contains) ?? false })
    }

    private struct AnyKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init?(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }
}
