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

/// RFC 3339 date-times (§5.6), read and written by Keel itself on the proleptic Gregorian calendar.
///
/// Not with ISO8601DateFormatter, which (in swift-corelibs-foundation, found in an outside audit) took
/// `2024-02-30` for March 1st, `24:00:00` and an offset of `+24:00` for other instants, accepted trailing
/// garbage and a leading space, refused a leap second, and read dates before 1582-10-15 on the Julian
/// calendar — a malformed or early timestamp became another, plausible date without an error.
enum RFC3339 {
    /// ISO8601DateFormatter is documented thread-safe on Apple platforms, but swift-corelibs-foundation's
    /// is not (concurrent use has crashed there): every use goes through the lock. Only for
    /// ``iso8601Date(from:)``, which is Foundation's `.iso8601` strategy on purpose.
    private struct Formatters: @unchecked Sendable {
        // @unchecked Sendable: only reachable inside `Locked.withLock`.
        let withoutFractions: ISO8601DateFormatter
    }

    private static let formatters: Locked<Formatters> = {
        let withoutFractions = ISO8601DateFormatter()
        withoutFractions.formatOptions = [.withInternetDateTime]
        return Locked(Formatters(withoutFractions: withoutFractions))
    }()

    /// The instant `text` names, or nil when it is not an RFC 3339 `date-time`: four-digit year, a month and
    /// day that exist (February 29th in leap years only), hour 00–23, minute 00–59, second 00–59 or a leap
    /// second (60, at 23:59 UTC), an optional fraction, and `Z` or an offset of ±00:00…±23:59; `T` and `Z`
    /// in either case; nothing before or after.
    static func date(from text: String) -> Date? {
        var utf8 = Array(text.utf8)[...]
        func digits(_ count: Int) -> Int? {
            guard utf8.count >= count else { return nil }
            var value = 0
            for byte in utf8.prefix(count) {
                guard (48...57).contains(byte) else { return nil }
                value = value * 10 + Int(byte - 48)
            }
            utf8 = utf8.dropFirst(count)
            return value
        }
        func expect(_ characters: String) -> Bool {
            guard let byte = utf8.first, characters.utf8.contains(byte) else { return false }
            utf8 = utf8.dropFirst()
            return true
        }
        guard let year = digits(4), expect("-"), let month = digits(2), expect("-"), let day = digits(2),
            expect("Tt"), let hour = digits(2), expect(":"), let minute = digits(2), expect(":"),
            let second = digits(2)
        else { return nil }
        var fraction = 0.0
        if expect(".") {
            var scale = 0.1
            var count = 0
            while let byte = utf8.first, (48...57).contains(byte) {
                fraction += Double(byte - 48) * scale
                scale /= 10
                count += 1
                utf8 = utf8.dropFirst()
            }
            guard count > 0 else { return nil }
        }
        var offset = 0
        if !expect("Zz") {
            guard let sign = utf8.first, sign == UInt8(ascii: "+") || sign == UInt8(ascii: "-") else { return nil }
            utf8 = utf8.dropFirst()
            guard let hours = digits(2), expect(":"), let minutes = digits(2), hours <= 23, minutes <= 59 else {
                return nil
            }
            offset = (hours * 60 + minutes) * 60 * (sign == UInt8(ascii: "-") ? -1 : 1)
        }
        guard utf8.isEmpty, (1...12).contains(month), day >= 1, day <= daysIn(month, of: year), hour <= 23,
            minute <= 59, second <= 60
        else { return nil }
        let local = (daysFromCivil(year, month, day) * 86_400) + hour * 3600 + minute * 60
        let utc = local - offset
        // A leap second ends a UTC day: 23:59:60 UTC (RFC 3339 §5.7). It is the instant of the next second's
        // start (a Date has no leap seconds).
        if second == 60, ((utc % 86_400) + 86_400) % 86_400 != 86_340 { return nil }
        return Date(timeIntervalSince1970: Double(utc + second) + fraction)
    }

    /// What `JSONDecoder`'s `.iso8601` strategy accepts: an internet date-time without fractional seconds.
    static func iso8601Date(from text: String) -> Date? {
        formatters.withLock { $0.withoutFractions.date(from: text) }
    }

    /// UTC, with milliseconds when the date, rounded to milliseconds, has a fractional second; nil for an
    /// instant outside the years 0000…9999, which RFC 3339 cannot write.
    static func string(from date: Date) -> String? {
        let milliseconds = (date.timeIntervalSince1970 * 1000).rounded()
        guard milliseconds.isFinite, abs(milliseconds) < 1e15 else { return nil }
        let total = Int(milliseconds)
        let (seconds, millisecond) = total.quotientAndRemainder(dividingBy: 1000)
        let adjusted = millisecond < 0 ? (seconds - 1, millisecond + 1000) : (seconds, millisecond)
        let (days, secondOfDay) = adjusted.0.quotientAndRemainder(dividingBy: 86_400)
        let (day, second) = secondOfDay < 0 ? (days - 1, secondOfDay + 86_400) : (days, secondOfDay)
        let (year, month, dayOfMonth) = civilFromDays(day)
        guard (0...9999).contains(year) else { return nil }
        func padded(_ value: Int, _ width: Int) -> String {
            let text = String(value)
            return String(repeating: "0", count: max(0, width - text.count)) + text
        }
        var result =
            "\(padded(year, 4))-\(padded(month, 2))-\(padded(dayOfMonth, 2))T\(padded(second / 3600, 2)):"
            + "\(padded(second / 60 % 60, 2)):\(padded(second % 60, 2))"
        if adjusted.1 != 0 { result += "." + padded(adjusted.1, 3) }
        return result + "Z"
    }

    /// The days in `month` of `year` (proleptic Gregorian).
    static func daysIn(_ month: Int, of year: Int) -> Int {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// Days from 1970-01-01 to `year`-`month`-`day` on the proleptic Gregorian calendar.
    static func daysFromCivil(_ year: Int, _ month: Int, _ day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * ((month + 9) % 12) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The date `days` after 1970-01-01 on the proleptic Gregorian calendar.
    static func civilFromDays(_ days: Int) -> (year: Int, month: Int, day: Int) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
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
