public import Foundation
public import KeelCore

/// A string enum the contract declares **closed**: a value it does not declare is an incompatible
/// change, and decoding fails loudly instead of guessing (MOB-API-001).
///
/// ```swift
/// enum Visibility: String, ClosedEnum { case `private`, shared }
/// ```
///
/// The failure is a `DecodingError.dataCorrupted` whose underlying error is an
/// ``UndeclaredEnumValue`` naming the type and the value; ``ContractDecoder`` reports it as
/// ``ContractDecodingError/Code/undeclaredEnumValue`` with the coding path (`notes[3].visibility`).
/// Making the property optional does not soften it: `nil` means absent or `null`, never "unknown".
///
/// The decoding is Keel's, not the type's: a model's members of a closed enum type are read by Keel's
/// `KeyedDecodingContainer` overloads (the raw value, then the declared case), so an `init(from:)` written
/// in the enum itself is not used for them. A type that needs its own decoding is not a closed enum.
public protocol ClosedEnum: ClosedRawEnum where RawValue == String {}

/// What ``ClosedEnum`` and ``ClosedIntegerEnum`` share: decoding the raw value and refusing one that is not a
/// declared case (``UndeclaredEnumValue`` at the coding path), encoding the raw value as it is.
public protocol ClosedRawEnum: RawRepresentable, Codable, Sendable
where RawValue: Codable & CustomStringConvertible {}

extension ClosedRawEnum {
    /// Decodes the raw value and matches it to a declared case.
    ///
    /// - Throws: `DecodingError.dataCorrupted` with an ``UndeclaredEnumValue`` as its underlying error when the
    ///   value is not a declared raw value; a `DecodingError` when it is not of the raw type.
    @inlinable
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        // The concrete overloads for the two raw types contracts use: the generic `decode(RawValue.self)` makes
        // JSONDecoder try its special types and a protocol conformance before it reaches the string or the
        // number (a measurable share of decode.tolerant in keel-bench). Specialized, the checks fold away.
        let raw: RawValue
        if RawValue.self == String.self {
            raw = try container.decode(String.self) as! RawValue
        } else if RawValue.self == Int.self {
            let number = try container.decode(Decimal.self)
            // `Decimal` keeps 38 digits; the decoder's own `Int` must agree (Keel's reads the number's text).
            guard let integer = exactInteger(number), (try? container.decode(Int.self)) == integer else {
                throw undeclaredMarkerValue(number, of: String(describing: Self.self), codingPath: decoder.codingPath)
            }
            raw = integer as! RawValue
        } else {
            raw = try container.decode(RawValue.self)
        }
        guard let value = exactlyDeclared(Self.self, raw) else {
            throw undeclaredMarkerValue(raw, of: String(describing: Self.self), codingPath: decoder.codingPath)
        }
        self = value
    }

    /// Encodes the case as its raw value.
    @inlinable
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}

/// A closed enum received a value it does not declare.
public struct UndeclaredEnumValue: KeelError, Equatable {
    /// Codes of ``UndeclaredEnumValue`` (one: ``ErrorCode/undeclaredEnumValue``).
    public typealias Code = ErrorCode<UndeclaredEnumValue>

    /// Always ``ErrorCode/undeclaredEnumValue``.
    public var code: Code { .undeclaredEnumValue }
    /// The enum's type name.
    public let typeName: String
    /// The value received.
    public let value: String

    /// The problem of `value` arriving for the closed enum `typeName`.
    @inlinable
    public init(typeName: String, value: String) {
        self.typeName = typeName
        self.value = value
    }

    /// A developer-facing explanation naming the value and the enum type; not meant for users.
    public var description: String {
        "\(value.debugDescription) is not a declared value of the closed enum \(typeName)"
    }
}

extension ErrorCode where Domain == UndeclaredEnumValue {
    /// A closed enum received a value it does not declare (MOB-API-001: fail loudly, never guess).
    public static var undeclaredEnumValue: Self { Self("undeclaredEnumValue") }
}

/// An integer enum whose set of values is closed: a value the app does not know is an error
/// (``UndeclaredEnumValue`` at its path), never a silent default — ``ClosedEnum`` for `type: integer` enums.
///
/// ```swift
/// enum Priority: Int, ClosedIntegerEnum { case value1 = 1, value2 = 2, value3 = 3 }
/// ```
public protocol ClosedIntegerEnum: ClosedRawEnum where RawValue == Int {}

/// The error for a value a closed set does not declare, at `codingPath`: an undeclared value of a
/// ``ClosedEnum`` or ``ClosedIntegerEnum``, or a member that must hold one value (a marker such as
/// `deleted: {type: boolean, enum: [true]}`) holding another. ``ContractDecoder`` reports it as
/// `undeclaredEnumValue` with the path.
public func undeclaredMarkerValue(
    _ value: some CustomStringConvertible, of typeName: String, codingPath: [any CodingKey]
) -> DecodingError {
    let problem = UndeclaredEnumValue(typeName: typeName, value: value.description)
    return DecodingError.dataCorrupted(
        DecodingError.Context(codingPath: codingPath, debugDescription: problem.description, underlyingError: problem))
}

/// Whether a received raw value is exactly a declared one. Swift's `==` on strings is canonical
/// equivalence (`"O\u{212A}"`, with U+212A KELVIN SIGN, equals `"OK"`), so `init(rawValue:)` alone would map an
/// undeclared value to a declared case; contract values are compared code unit by code unit, as JSON
/// Schema's `enum` compares them.
@inlinable
func isExactly<Raw>(_ declared: Raw, _ received: Raw) -> Bool {
    if Raw.self == String.self {
        return (declared as! String).utf8.elementsEqual((received as! String).utf8)
    }
    return true  // `init(rawValue:)` matched it, and only strings have an equality looser than identity
}

/// The case of `T` whose raw value is exactly `raw` (see ``isExactly(_:_:)``), or nil. `init(rawValue:)` finds
/// the first case whose raw value Swift's `==` takes for `raw`: when a contract declares two values that are
/// canonically equivalent (`café` in NFC and in NFD, two values for JSON), the second is found among
/// `allCases` — on that path alone, which a value matching its case exactly never takes.
@inlinable
func exactlyDeclared<T: RawRepresentable>(_ type: T.Type, _ raw: T.RawValue) -> T? {
    // A case whose raw value has `raw`'s bytes is also one `==` takes for it: when `init(rawValue:)` finds
    // none (every unknown value of an extensible enum), there is none, and nothing more is looked at.
    guard let value = T(rawValue: raw) else { return nil }
    if isExactly(value.rawValue, raw) { return value }
    guard T.RawValue.self == String.self, let iterable = T.self as? any CaseIterable.Type else { return nil }
    return exactlyDeclared(among: iterable, raw, as: T.self)
}

@usableFromInline
func exactlyDeclared<C: CaseIterable, T: RawRepresentable>(among cases: C.Type, _ raw: T.RawValue, as type: T.Type)
    -> T?
{
    for candidate in C.allCases {
        if let value = candidate as? T, isExactly(value.rawValue, raw) { return value }
    }
    return nil
}

/// The integer a JSON number is, exactly, or nil. Foundation's `decode(Int.self)` reads a number that is not
/// a plain integer through `Double` and accepts it when that is whole: `1.0000000000000001` became 1, so a
/// closed integer enum took a value its contract forbids for a declared case. Read as `Decimal` (exact, from
/// the literal), a number is an integer only when it is one (`1.0` and `1e2` are; `2.5` is not) and fits `Int`.
@inlinable
func exactInteger(_ number: Decimal) -> Int? {
    var value = number
    var rounded = Decimal()
    NSDecimalRound(&rounded, &value, 0, .plain)
    guard rounded == number else { return nil }
    return Int(rounded.description)
}
