public import Foundation

/// A value stored in or read from SQLite: one of its five storage classes.
public enum DatabaseValue: Sendable, Hashable, CustomStringConvertible {
    /// SQL NULL.
    case null
    /// A 64-bit signed integer.
    case integer(Int64)
    /// An IEEE 754 double.
    case real(Double)
    /// UTF-8 text.
    case text(String)
    /// Bytes, stored as given.
    case blob(Data)

    /// The SQLite storage class (`NULL`, `INTEGER`, `REAL`, `TEXT`, `BLOB`), for messages.
    public var storageClass: String {
        switch self {
        case .null: "NULL"
        case .integer: "INTEGER"
        case .real: "REAL"
        case .text: "TEXT"
        case .blob: "BLOB"
        }
    }

    /// The value as SQL would show it (text quoted, blobs by size only), for logs and test failures.
    public var description: String {
        switch self {
        case .null: "NULL"
        case .integer(let value): String(value)
        case .real(let value): String(value)
        case .text(let value): value.debugDescription
        case .blob(let value): "<\(value.count) bytes>"
        }
    }
}

extension DatabaseValue: ExpressibleByNilLiteral, ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral,
    ExpressibleByStringLiteral
{
    /// `nil` is NULL.
    public init(nilLiteral: ()) { self = .null }
    /// An integer literal is INTEGER.
    public init(integerLiteral value: Int64) { self = .integer(value) }
    /// A float literal is REAL.
    public init(floatLiteral value: Double) { self = .real(value) }
    /// A string literal is TEXT.
    public init(stringLiteral value: String) { self = .text(value) }
}

/// A Swift type that converts to and from a ``DatabaseValue``.
public protocol DatabaseValueConvertible: Sendable {
    /// The value to store.
    var databaseValue: DatabaseValue { get }
    /// The Swift value for a stored value, or nil when the stored value does not fit this type.
    static func fromDatabaseValue(_ value: DatabaseValue) -> Self?
}

extension DatabaseValue: DatabaseValueConvertible {
    /// The value as stored.
    public var databaseValue: DatabaseValue { self }
    /// The Swift value of a stored value; nil when it is not of this type.
    public static func fromDatabaseValue(_ value: DatabaseValue) -> DatabaseValue? { value }
}

extension Int64: DatabaseValueConvertible {
    /// The value as stored.
    public var databaseValue: DatabaseValue { .integer(self) }
    /// The Swift value of a stored value; nil when it is not of this type.
    public static func fromDatabaseValue(_ value: DatabaseValue) -> Int64? {
        if case .integer(let integer) = value { return integer }
        return nil
    }
}

extension Int: DatabaseValueConvertible {
    /// The value as stored.
    public var databaseValue: DatabaseValue { .integer(Int64(self)) }
    /// The Swift value of a stored value; nil when it is not of this type.
    public static func fromDatabaseValue(_ value: DatabaseValue) -> Int? {
        if case .integer(let integer) = value { return Int(exactly: integer) }
        return nil
    }
}

extension Bool: DatabaseValueConvertible {
    /// The value as stored.
    public var databaseValue: DatabaseValue { .integer(self ? 1 : 0) }
    /// The Swift value of a stored value; nil when it is not of this type.
    public static func fromDatabaseValue(_ value: DatabaseValue) -> Bool? {
        if case .integer(let integer) = value { return integer != 0 }
        return nil
    }
}

extension Double: DatabaseValueConvertible {
    /// The value as stored.
    public var databaseValue: DatabaseValue { .real(self) }
    /// The Swift value of a stored value; nil when it is not of this type.
    public static func fromDatabaseValue(_ value: DatabaseValue) -> Double? {
        switch value {
        case .real(let real): real
        case .integer(let integer): Double(integer)
        default: nil
        }
    }
}

extension String: DatabaseValueConvertible {
    /// The value as stored.
    public var databaseValue: DatabaseValue { .text(self) }
    /// The Swift value of a stored value; nil when it is not of this type.
    public static func fromDatabaseValue(_ value: DatabaseValue) -> String? {
        if case .text(let text) = value { return text }
        return nil
    }
}

extension Data: DatabaseValueConvertible {
    /// The value as stored.
    public var databaseValue: DatabaseValue { .blob(self) }
    /// The Swift value of a stored value; nil when it is not of this type.
    public static func fromDatabaseValue(_ value: DatabaseValue) -> Data? {
        if case .blob(let data) = value { return data }
        return nil
    }
}

/// Dates are stored as REAL seconds since 1970 (UTC), the form retention sweeps compare with the clock;
/// an INTEGER column of seconds reads back too.
extension Date: DatabaseValueConvertible {
    /// The value as stored.
    public var databaseValue: DatabaseValue { .real(timeIntervalSince1970) }
    /// The date of a REAL or INTEGER number of seconds since 1970; nil for other values.
    public static func fromDatabaseValue(_ value: DatabaseValue) -> Date? {
        switch value {
        case .real(let seconds): Date(timeIntervalSince1970: seconds)
        case .integer(let seconds): Date(timeIntervalSince1970: TimeInterval(seconds))
        default: nil
        }
    }
}

extension Optional: DatabaseValueConvertible where Wrapped: DatabaseValueConvertible {
    /// The value as stored.
    public var databaseValue: DatabaseValue { self?.databaseValue ?? .null }
    /// The Swift value of a stored value; nil when it is not of this type.
    public static func fromDatabaseValue(_ value: DatabaseValue) -> Wrapped?? {
        if case .null = value { return .some(nil) }
        return Wrapped.fromDatabaseValue(value).map { .some($0) }
    }
}
