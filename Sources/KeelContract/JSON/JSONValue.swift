import Foundation

/// Any JSON value, without loss: integers stay integers, big numbers keep every digit, object members
/// keep their order.
///
/// Use it where the contract says "free form", to carry unknown content through unchanged, and as the
/// input of ``JSONSchema`` validation. Parse bytes with ``init(parsing:limits:)`` (strict RFC 8259, typed
/// errors with positions) and write them back with ``serialized()``.
///
/// Equality follows JSON Schema: numbers compare by value (`1 == 1.0`), objects ignore member order.
///
/// ## Topics
/// - ``init(parsing:limits:)``, ``serialized()``, ``JSONParseError``
/// - ``subscript(_:)-(String)``, ``subscript(_:)-(Int)``, ``kind``
public enum JSONValue: Sendable, Hashable, CustomStringConvertible {
    case null
    case bool(Bool)
    case number(JSONNumber)
    case string(String)
    case array([JSONValue])
    case object(JSONObject)

    /// The JSON type name: `null`, `boolean`, `number`, `string`, `array` or `object`.
    public var kind: String {
        switch self {
        case .null: "null"
        case .bool: "boolean"
        case .number: "number"
        case .string: "string"
        case .array: "array"
        case .object: "object"
        }
    }

    /// The member `key` of an object; nil for other values or a missing key.
    public subscript(key: String) -> JSONValue? {
        if case .object(let object) = self { return object[key] }
        return nil
    }

    /// The element at `index` of an array; nil for other values or an index out of range.
    public subscript(index: Int) -> JSONValue? {
        if case .array(let array) = self, array.indices.contains(index) { return array[index] }
        return nil
    }

    /// The string, if this is a string.
    public var stringValue: String? {
        if case .string(let string) = self { return string }
        return nil
    }

    /// The boolean, if this is one.
    public var boolValue: Bool? {
        if case .bool(let value) = self { return value }
        return nil
    }

    /// The number as an `Int`, if this is a number that is a whole number within `Int`'s range (exactly: `2.0`
    /// and `2e0` are 2, `2.5` and `1e30` are nil).
    public var intValue: Int? {
        if case .number(let number) = self { return number.int64.flatMap { Int(exactly: $0) } }
        return nil
    }

    /// The number as the nearest `Double`, if this is a number.
    public var doubleValue: Double? {
        if case .number(let number) = self { return number.double }
        return nil
    }

    /// The elements, if this is an array.
    public var arrayValue: [JSONValue]? {
        if case .array(let array) = self { return array }
        return nil
    }

    /// The members, if this is an object.
    public var objectValue: JSONObject? {
        if case .object(let object) = self { return object }
        return nil
    }

    /// Whether this is `null`.
    public var isNull: Bool {
        if case .null = self { return true }
        return false
    }

    /// The compact JSON text of this value.
    public var description: String { String(decoding: serialized(), as: UTF8.self) }

    /// JSON equality: strings compare by code points (not Swift's canonical equivalence, which would
    /// equate "é" and "e\u{301}"), numbers by value, objects without regard to member order.
    public static func == (lhs: JSONValue, rhs: JSONValue) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): true
        case (.bool(let a), .bool(let b)): a == b
        case (.number(let a), .number(let b)): a == b
        case (.string(let a), .string(let b)): JSONObject.sameName(a, b)
        case (.array(let a), .array(let b)): a == b
        case (.object(let a), .object(let b)): a == b
        default: false
        }
    }

    /// Hashes consistently with `==`: numbers by value, strings by UTF-8 bytes, objects regardless of member order.
    public func hash(into hasher: inout Hasher) {
        switch self {
        case .null: hasher.combine(0)
        case .bool(let value): hasher.combine(value)
        case .number(let number): hasher.combine(number)
        case .string(let string):
            hasher.combine(string.utf8.count)
            for byte in string.utf8 { hasher.combine(byte) }
        case .array(let elements): hasher.combine(elements)
        case .object(let object): hasher.combine(object)
        }
    }
}

extension JSONValue {
    /// What kind of value this is, for messages: "null", "a boolean", "a number", "a string", and "an array" /
    /// "an object" — or, for people reading YAML, "a list" / "a mapping".
    package func kindPhrase(yaml: Bool = false) -> String {
        switch self {
        case .null: kind
        case .array where yaml: "a list"
        case .object where yaml: "a mapping"
        case .array, .object: "an \(kind)"
        default: "a \(kind)"
        }
    }
}

extension JSONValue: ExpressibleByNilLiteral, ExpressibleByBooleanLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByFloatLiteral, ExpressibleByStringLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral
{
    /// The JSON `null` literal.
    public init(nilLiteral: ()) { self = .null }
    /// A JSON boolean from a `true` or `false` literal.
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    /// A JSON number from an integer literal.
    public init(integerLiteral value: Int64) { self = .number(JSONNumber(value)) }
    /// A JSON number from a floating-point literal, which must be finite.
    public init(floatLiteral value: Double) { self = .number(JSONNumber(value)) }
    /// A JSON string from a string literal.
    public init(stringLiteral value: String) { self = .string(value) }
    /// A JSON array of the literal's elements, in order.
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    /// A JSON object of the literal's members, in order; a repeated key keeps its first position and last value.
    public init(dictionaryLiteral elements: (String, JSONValue)...) { self = .object(JSONObject(elements)) }
}

extension JSONValue: Codable {
    /// Decodes any JSON value from a `Decoder`.
    ///
    /// Through `JSONDecoder`, numbers beyond `Double`'s precision and object member order are already lost
    /// before this initializer sees them; use ``init(parsing:limits:)`` on the raw bytes to keep them.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Int64.self) {
            self = .number(JSONNumber(value))
        } else if let value = try? container.decode(Double.self) {
            // An integer beyond Int64 (up to UInt64) is read exactly; only such values pay the second attempt.
            if value >= 0x1p63, value == value.rounded(), let unsigned = try? container.decode(UInt64.self) {
                self = .number(JSONNumber(literal: String(unsigned))!)
            } else {
                self = .number(JSONNumber(value))
            }
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSONValue].self) {
            self = .array(value)
        } else {
            let members = try container.decode([String: JSONValue].self)
            self = .object(JSONObject(members.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }))
        }
    }

    /// Encodes the value; numbers go out as `Int64` or `UInt64` when they are integers in range, otherwise as
    /// `Decimal`, which writes every one of their digits (up to its 38), or — beyond its exponents — as the
    /// `Double` whose shortest spelling is the same value (`1e-130`).
    ///
    /// - Throws: `EncodingError.invalidValue` for a number neither holds exactly (more than 38 significant
    ///   digits, far out of range), which an encoder could only write rounded; ``serialized()`` writes any
    ///   number exactly as it was read.
    public func encode(to encoder: any Encoder) throws {
        switch self {
        case .null:
            var container = encoder.singleValueContainer()
            try container.encodeNil()
        case .bool(let value):
            var container = encoder.singleValueContainer()
            try container.encode(value)
        case .number(let number):
            var container = encoder.singleValueContainer()
            if let integer = number.int64 {
                try container.encode(integer)
            } else if number.isInteger, let unsigned = UInt64(number.literal) {
                try container.encode(unsigned)
            } else if number.fitsFoundationDecimal, let decimal = Decimal(string: number.literal), decimal.isFinite {
                try container.encode(decimal)
            } else if number.double.isFinite, JSONNumber(number.double) == number {
                // Beyond Decimal's exponents (`1e-130`) but a Double whose shortest spelling is this very value.
                try container.encode(number.double)
            } else {
                throw EncodingError.invalidValue(
                    self,
                    .init(
                        codingPath: encoder.codingPath,
                        debugDescription:
                            "\(number.literal) cannot be encoded without losing digits (more than Decimal's 38, or an exponent out of its range); JSONValue.serialized() keeps them"
                    ))
            }
        case .string(let value):
            var container = encoder.singleValueContainer()
            try container.encode(value)
        case .array(let values):
            var container = encoder.unkeyedContainer()
            for value in values { try container.encode(value) }
        case .object(let object):
            var container = encoder.container(keyedBy: AnyCodingKey.self)
            for (key, value) in object { try container.encode(value, forKey: AnyCodingKey(key)) }
        }
    }
}

/// A coding key for arbitrary member names.
struct AnyCodingKey: CodingKey {
    var stringValue: String
    var intValue: Int?
    init(_ string: String) { stringValue = string }
    init?(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) {
        stringValue = String(intValue)
        self.intValue = intValue
    }
}
