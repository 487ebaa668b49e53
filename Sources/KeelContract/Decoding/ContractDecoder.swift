public import Foundation
public import KeelCore

/// Decodes contract models from JSON and reports failures with a readable coding path.
///
/// Unknown members are ignored at every depth (that is `Decodable`'s behaviour, and Keel relies on it:
/// a newer server may add fields). Failures that matter — an undeclared value of a ``ClosedEnum``, a
/// wrong type, a missing required member, invalid JSON — become a ``ContractDecodingError`` that names
/// the path (`notes[3].status`), the type and the value. There is no lenient mode that turns them into
/// `nil` or a default.
///
/// The bytes go through Keel's strict parser, not Foundation's `JSONDecoder`: a member repeated in an
/// object is an error (two readers could disagree on its value), an integer member takes only a number that
/// is exactly an integer in its range (`1e2` is 100; `1.0000000000000001` is refused, never rounded to 1),
/// and member names match by their bytes. Dates follow ``dateDecodingStrategy``; `Data` is Base64 and `URL`
/// a string, as with `JSONDecoder`.
public struct ContractDecoder: Sendable {
    /// How dates are decoded. Default: RFC 3339 with or without fractional seconds
    /// (``rfc3339DateDecodingStrategy``).
    public var dateDecodingStrategy: JSONDecoder.DateDecodingStrategy

    /// A decoder; dates default to RFC 3339, with or without fractional seconds.
    public init(dateDecodingStrategy: JSONDecoder.DateDecodingStrategy = ContractDecoder.rfc3339DateDecodingStrategy) {
        self.dateDecodingStrategy = dateDecodingStrategy
    }

    /// RFC 3339 timestamps with or without fractional seconds (`2026-11-30T08:00:00Z`,
    /// `2026-11-30T08:00:00.123+01:00`). Foundation's `.iso8601` rejects fractions on some OS versions
    /// and accepts them on others, which would break an installed app the day a server adds milliseconds.
    public static let rfc3339DateDecodingStrategy = JSONDecoder.DateDecodingStrategy.custom { decoder in
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        guard let date = RFC3339.date(from: text) else {
            throw DecodingError.dataCorruptedError(
                in: container, debugDescription: "\(text.debugDescription) is not an RFC 3339 date-time")
        }
        return date
    }

    /// Decodes `type` from `data`.
    ///
    /// The bytes are parsed by Keel's strict parser first (RFC 8259; a repeated member name is an error, as
    /// two readers could disagree on its value), then decoded from the parsed value: integers exactly as
    /// written (`1.0000000000000001` is not the `Int` 1), member names by their bytes. See ``ContractDecodingError``.
    ///
    /// - Throws: ``ContractDecodingError``.
    public func decode<T: Decodable>(_ type: T.Type, from data: Data) throws(ContractDecodingError) -> T {
        let value: JSONValue
        do { value = try JSONValue(parsing: data) } catch {
            // Where in the document it broke, as decoding failures say it (`notes[3].title`): a repeated member
            // deep in a minified response is otherwise "line 1, column 48213".
            throw ContractDecodingError(
                code: .invalidJSON, path: error.codingPath(in: data), typeName: String(describing: T.self),
                value: nil, message: "not valid JSON: \(error)")
        }
        return try decode(type, from: value)
    }

    /// Decodes `type` from a value parsed already (a member of a larger document, an event's payload).
    ///
    /// - Throws: ``ContractDecodingError``.
    public func decode<T: Decodable>(_ type: T.Type, from value: JSONValue) throws(ContractDecodingError) -> T {
        let decoder = ValueDecoder(value, at: [], options: .init(dateDecodingStrategy: dateDecodingStrategy))
        do {
            return try decoder.decode(T.self, from: value, at: [])
        } catch let error as DecodingError {
            throw ContractDecodingError(error, decoding: String(describing: T.self))
        } catch {
            throw ContractDecodingError(
                code: .invalidValue, path: "", typeName: String(describing: T.self), value: nil, message: "\(error)")
        }
    }
}

/// Why a contract model could not be decoded, and where.
public struct ContractDecodingError: KeelError, Equatable, CustomStringConvertible {
    /// The kind of failure.
    public typealias Code = ErrorCode<ContractDecodingError>

    /// The kind of failure.
    public let code: Code
    /// The coding path in dotted form with indices: `notes[3].status` (empty for the top level).
    public let path: String
    /// The type being decoded where it failed (the enum for ``Code/undeclaredEnumValue``).
    public let typeName: String
    /// The offending value, when known (the undeclared enum value).
    public let value: String?
    /// A short explanation.
    public let message: String

    /// A developer-facing explanation: the path (or "top level") and the message; may quote the offending value,
    /// so keep it out of user-facing text.
    public var description: String {
        let location = path.isEmpty ? "top level" : path
        return "\(location): \(message)"
    }

    init(code: Code, path: String, typeName: String, value: String?, message: String) {
        self.code = code
        self.path = path
        self.typeName = typeName
        self.value = value
        self.message = message
    }

    init(_ error: DecodingError, decoding rootType: String) {
        switch error {
        case .dataCorrupted(let context):
            if let undeclared = context.underlyingError as? UndeclaredEnumValue {
                self.init(
                    code: .undeclaredEnumValue, path: Self.path(context.codingPath), typeName: undeclared.typeName,
                    value: undeclared.value, message: undeclared.description)
            } else {
                self.init(
                    code: .invalidValue, path: Self.path(context.codingPath), typeName: rootType, value: nil,
                    message: context.debugDescription)
            }
        case .typeMismatch(let type, let context):
            self.init(
                code: .typeMismatch, path: Self.path(context.codingPath), typeName: String(describing: type),
                value: nil,
                message: "expected \(type)")
        case .valueNotFound(let type, let context):
            self.init(
                code: .unexpectedNull, path: Self.path(context.codingPath), typeName: String(describing: type),
                value: nil,
                message: "expected \(type), found null")
        case .keyNotFound(let key, let context):
            self.init(
                code: .missingMember, path: Self.path(context.codingPath + [key]), typeName: rootType, value: nil,
                message: "required member \(key.stringValue.debugDescription) is missing")
        @unknown default:
            self.init(code: .invalidValue, path: "", typeName: rootType, value: nil, message: "\(error)")
        }
    }

    /// `notes[3].status` from a coding path. An array index is `[3]`; a member whose name would read as
    /// something else — digits (a map keyed by id: `prices["42"]`), a `.`, brackets, a quote, nothing — is
    /// written `["name"]` (JSON string syntax), so that no two places print alike.
    static func path(_ codingPath: [any CodingKey]) -> String {
        var text = ""
        for key in codingPath {
            // An index only when the decoder made it one: a dictionary's coding key for the member "42" has an
            // intValue too.
            if key is IndexKey, let index = key.intValue {
                text += "[\(index)]"
            } else if needsQuoting(key.stringValue) {
                text += "[" + String(decoding: JSONValue.string(key.stringValue).serialized(), as: UTF8.self) + "]"
            } else {
                text += text.isEmpty ? key.stringValue : "." + key.stringValue
            }
        }
        return text
    }

    private static func needsQuoting(_ name: String) -> Bool {
        name.isEmpty || name.utf8.allSatisfy { (0x30...0x39).contains($0) }
            || name.utf8.contains {
                $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "[") || $0 == UInt8(ascii: "]")
                    || $0 == UInt8(ascii: "\"")
            }
    }
}

/// RFC 3339 parsing with thread-safe formatters.
enum RFC3339 {
    /// ISO8601DateFormatter is documented thread-safe on Apple platforms, but swift-corelibs-foundation's
    /// is not (concurrent use has crashed there): every use goes through the lock.
    private struct Formatters: @unchecked Sendable {
        // @unchecked Sendable: only reachable inside `Locked.withLock`.
        let withFractions: ISO8601DateFormatter
        let withoutFractions: ISO8601DateFormatter
    }

    private static let formatters: Locked<Formatters> = {
        let withFractions = ISO8601DateFormatter()
        withFractions.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        let withoutFractions = ISO8601DateFormatter()
        withoutFractions.formatOptions = [.withInternetDateTime]
        return Locked(Formatters(withFractions: withFractions, withoutFractions: withoutFractions))
    }()

    static func date(from text: String) -> Date? {
        // RFC 3339 allows a lowercase `t` and `z`; ISO8601DateFormatter does not.
        let text =
            text.utf8.contains(where: { $0 == UInt8(ascii: "t") || $0 == UInt8(ascii: "z") }) ? text.uppercased() : text
        return formatters.withLock { $0.withoutFractions.date(from: text) ?? $0.withFractions.date(from: text) }
    }

    /// What `JSONDecoder`'s `.iso8601` strategy accepts: an internet date-time without fractional seconds.
    static func iso8601Date(from text: String) -> Date? {
        formatters.withLock { $0.withoutFractions.date(from: text) }
    }

    /// UTC, with milliseconds when the date, rounded to milliseconds, has a fractional second.
    static func string(from date: Date) -> String {
        let milliseconds = (date.timeIntervalSince1970 * 1000).rounded()
        let rounded = Date(timeIntervalSince1970: milliseconds / 1000)
        return formatters.withLock {
            milliseconds.truncatingRemainder(dividingBy: 1000) == 0
                ? $0.withoutFractions.string(from: rounded) : $0.withFractions.string(from: rounded)
        }
    }
}

extension ErrorCode where Domain == ContractDecodingError {
    /// A closed enum received a value it does not declare.
    public static var undeclaredEnumValue: Self { Self("undeclaredEnumValue") }
    /// A value had the wrong JSON type.
    public static var typeMismatch: Self { Self("typeMismatch") }
    /// A required member was missing.
    public static var missingMember: Self { Self("missingMember") }
    /// A required value was `null`.
    public static var unexpectedNull: Self { Self("unexpectedNull") }
    /// A value was present but not acceptable (a bad date, a failed validation in `init(from:)`).
    public static var invalidValue: Self { Self("invalidValue") }
    /// The bytes are not JSON.
    public static var invalidJSON: Self { Self("invalidJSON") }
}
