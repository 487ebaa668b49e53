import Foundation
import KeelCore

/// `Decoder` over a ``JSONValue`` that Keel's own parser produced: what ``ContractDecoder`` decodes with.
///
/// Foundation's `JSONDecoder` was the engine before, and three of its habits broke the contract: it keeps
/// one of two duplicate members (which one depends on the platform), it reads numbers through `Double` (so
/// `1.0000000000000001` decodes as the `Int` 1 and a 17-digit id loses its last digit), and it compares
/// member names as Swift strings (canonically equivalent names match). Here the parser refuses duplicates,
/// integers are read exactly from the number's text (`1`, `1.0` and `1e2` are integers; `1.5` and
/// `1.0000000000000001` are not), and names match by their UTF-8 bytes.
///
/// Everything else is what `JSONDecoder` does, so that models behave the same: absent members and `null`
/// make `decodeIfPresent` return nil, unknown members are ignored, `Date` follows the date strategy, `Data`
/// is Base64, `URL` a string; failures are `DecodingError`s with the coding path.
final class ValueDecoder: Decoder {
    let value: JSONValue
    let codingPath: [any CodingKey]
    let options: Options
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    struct Options {
        let dateDecodingStrategy: JSONDecoder.DateDecodingStrategy
    }

    init(_ value: JSONValue, at codingPath: [any CodingKey], options: Options) {
        self.value = value
        self.codingPath = codingPath
        self.options = options
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        switch value {
        case .object(let object):
            return KeyedDecodingContainer(KeyedContainer<Key>(object: object, decoder: self))
        case .null:
            throw DecodingError.valueNotFound(
                KeyedDecodingContainer<Key>.self,
                .init(
                    codingPath: codingPath,
                    debugDescription: "Cannot get keyed decoding container -- found null value instead"))
        default:
            throw Self.mismatch([String: Any].self, value, codingPath)
        }
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        switch value {
        case .array(let elements):
            return UnkeyedContainer(elements: elements, decoder: self)
        case .null:
            throw DecodingError.valueNotFound(
                [Any].self,
                .init(
                    codingPath: codingPath,
                    debugDescription: "Cannot get unkeyed decoding container -- found null value instead"))
        default:
            throw Self.mismatch([Any].self, value, codingPath)
        }
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer { SingleValueContainer(decoder: self) }

    // MARK: - Values

    /// `type` from `value`, found at `path()` (built only when something fails).
    func decode<T: Decodable>(_ type: T.Type, from value: JSONValue, at path: @autoclosure () -> [any CodingKey])
        throws -> T
    {
        // The types JSONDecoder gives a meaning of its own, then everything else through its own init(from:).
        if T.self == String.self { return try Self.string(value, path()) as! T }
        if T.self == Int.self { return try Self.integer(Int.self, value, path()) as! T }
        if T.self == Bool.self { return try Self.bool(value, path()) as! T }
        if T.self == Double.self { return try Self.floatingPoint(Double.self, value, path()) as! T }
        if T.self == Date.self { return try date(from: value, at: path()) as! T }
        if T.self == Decimal.self { return try Self.decimal(value, path()) as! T }
        if T.self == Data.self { return try Self.data(value, path()) as! T }
        if T.self == URL.self { return try Self.url(value, path()) as! T }
        if T.self == JSONValue.self { return value as! T }  // as parsed: exact numbers, members in order
        // A model that nests (replies, folders) decodes level by level, each level several frames deep: a
        // reply nested within the parser's limit can still be more than a small stack holds.
        if codingPath.count >= 32, codingPath.count % 8 == 0, ThreadStack.current.isNearlyExhausted() {
            throw DecodingError.dataCorrupted(
                .init(
                    codingPath: path(),
                    debugDescription: "nested \(codingPath.count) levels deep: more than this thread's stack holds"))
        }
        return try T(from: ValueDecoder(value, at: path(), options: options))
    }

    private func date(from value: JSONValue, at path: [any CodingKey]) throws -> Date {
        switch options.dateDecodingStrategy {
        case .deferredToDate:
            return try Date(from: ValueDecoder(value, at: path, options: options))
        case .secondsSince1970:
            return Date(timeIntervalSince1970: try Self.floatingPoint(Double.self, value, path))
        case .millisecondsSince1970:
            return Date(timeIntervalSince1970: try Self.floatingPoint(Double.self, value, path) / 1000)
        case .iso8601:
            let text = try Self.string(value, path)
            guard let date = RFC3339.iso8601Date(from: text) else {
                throw DecodingError.dataCorrupted(
                    .init(codingPath: path, debugDescription: "Expected date string to be ISO8601-formatted."))
            }
            return date
        case .custom(let closure):  // also `.formatted(_:)` where Foundation builds it on `.custom` (Linux)
            return try closure(ValueDecoder(value, at: path, options: options))
        #if canImport(Darwin)
            case .formatted(let formatter):
                let text = try Self.string(value, path)
                guard let date = formatter.date(from: text) else {
                    throw DecodingError.dataCorrupted(
                        .init(codingPath: path, debugDescription: "Date string does not match the formatter's format."))
                }
                return date
        #endif
        @unknown default:
            throw DecodingError.dataCorrupted(
                .init(codingPath: path, debugDescription: "This date decoding strategy is not supported here."))
        }
    }

    static func string(_ value: JSONValue, _ path: @autoclosure () -> [any CodingKey]) throws -> String {
        guard case .string(let string) = value else { throw failure(String.self, value, path()) }
        return string
    }

    static func bool(_ value: JSONValue, _ path: @autoclosure () -> [any CodingKey]) throws -> Bool {
        guard case .bool(let bool) = value else { throw failure(Bool.self, value, path()) }
        return bool
    }

    /// An integer exactly as written: plain digits directly; `1.0`, `1e2` or `2.50e1` from the number's own
    /// digits and exponent, when it is a whole number in `T`'s range. Anything else is refused, never rounded
    /// (whatever its number of digits: no detour through `Double` or `Decimal`).
    static func integer<T: FixedWidthInteger>(
        _ type: T.Type, _ value: JSONValue, _ path: @autoclosure () -> [any CodingKey]
    ) throws -> T {
        guard case .number(let number) = value else { throw failure(T.self, value, path()) }
        if let integer = T(number.literal, radix: 10) ?? number.exactInteger(T.self) {
            return integer
        }
        throw DecodingError.dataCorrupted(
            .init(codingPath: path(), debugDescription: "Number \(number.literal) is not an exact \(T.self)."))
    }

    static func floatingPoint<T: BinaryFloatingPoint & LosslessStringConvertible>(
        _ type: T.Type, _ value: JSONValue, _ path: @autoclosure () -> [any CodingKey]
    ) throws -> T {
        guard case .number(let number) = value else { throw failure(T.self, value, path()) }
        guard let result = T(number.literal), result.isFinite else {
            throw DecodingError.dataCorrupted(
                .init(codingPath: path(), debugDescription: "Number \(number.literal) does not fit in \(T.self)."))
        }
        // Underflow: a number the server sent as non-zero must not become 0 (found in an outside audit: `1e-400`
        // decoded as 0.0, and was sent back as 0).
        if result == 0,
            number.literal.utf8.prefix(while: { $0 != UInt8(ascii: "e") && $0 != UInt8(ascii: "E") })
                .contains(where: { (49...57).contains($0) })
        {
            throw DecodingError.dataCorrupted(
                .init(
                    codingPath: path(),
                    debugDescription: "Number \(number.literal) is too small for \(T.self): it would become 0."))
        }
        return result
    }

    static func decimal(_ value: JSONValue, _ path: @autoclosure () -> [any CodingKey]) throws -> Decimal {
        guard case .number(let number) = value else { throw failure(Decimal.self, value, path()) }
        // `Decimal(string:)` drops the digits beyond its 38 without a word; a price is kept exactly or refused.
        guard number.fitsFoundationDecimal else {
            throw DecodingError.dataCorrupted(
                .init(
                    codingPath: path(),
                    debugDescription:
                        "Number \(number.literal) does not fit in Decimal exactly (it keeps 38 significant digits)."))
        }
        guard let decimal = Decimal(string: number.literal), decimal.isFinite else {
            throw DecodingError.dataCorrupted(
                .init(codingPath: path(), debugDescription: "Number \(number.literal) does not fit in Decimal."))
        }
        return decimal
    }

    static func data(_ value: JSONValue, _ path: @autoclosure () -> [any CodingKey]) throws -> Data {
        try parsed(value, path(), by: { Data(base64Encoded: $0) }, else: "Encountered Data is not valid Base64.")
    }

    static func url(_ value: JSONValue, _ path: @autoclosure () -> [any CodingKey]) throws -> URL {
        try parsed(value, path(), by: { URL(string: $0) }, else: "Invalid URL string.")
    }

    /// A string member read as something else (`Data` from Base64, a `URL`); `problem` when it does not read.
    private static func parsed<T>(
        _ value: JSONValue, _ path: @autoclosure () -> [any CodingKey], by parse: (String) -> T?, else problem: String
    ) throws -> T {
        guard let result = parse(try string(value, path())) else {
            throw DecodingError.dataCorrupted(.init(codingPath: path(), debugDescription: problem))
        }
        return result
    }

    /// `null` where a value of `type` was required, or a value of another kind.
    static func failure(_ type: Any.Type, _ value: JSONValue, _ path: [any CodingKey]) -> DecodingError {
        if value == .null {
            return DecodingError.valueNotFound(
                type, .init(codingPath: path, debugDescription: "Expected \(type) value but found null instead."))
        }
        return mismatch(type, value, path)
    }

    static func mismatch(_ type: Any.Type, _ value: JSONValue, _ path: [any CodingKey]) -> DecodingError {
        DecodingError.typeMismatch(
            type,
            .init(codingPath: path, debugDescription: "Expected to decode \(type) but found \(value.kind) instead."))
    }
}

// MARK: - Containers

private struct KeyedContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let object: JSONObject
    let decoder: ValueDecoder

    var codingPath: [any CodingKey] { decoder.codingPath }

    /// The members' names — and, when two of them are one `String` to Swift (canonically equivalent, as
    /// `café` in NFC and in NFD, which JSON tells apart by their bytes), one more key that no member has:
    /// whoever collects members by `key.stringValue` (`[String: V]`'s own `init(from:)`) would keep one of
    /// the two and drop the other without a word, so reading that key fails, naming both.
    var allKeys: [Key] {
        let names = object.keys
        var keys = names.compactMap { Key(stringValue: $0) }
        if Set(names).count != names.count, let marker = Key(stringValue: Self.ambiguousMembers) {
            keys.append(marker)
        }
        return keys
    }

    /// `name` quoted, with every non-ASCII scalar spelled out (`"cafe\u{301}"`), so that two names that print
    /// alike read apart.
    private static func escaped(_ name: String) -> String {
        "\"" + name.unicodeScalars.map { $0.isASCII ? String($0) : "\\u{\(String($0.value, radix: 16))}" }.joined()
            + "\""
    }

    /// The name of the key ``allKeys`` adds for members Swift's `String` cannot tell apart.
    private static var ambiguousMembers: String { "\u{0}keel: members that are one String to Swift" }

    func contains(_ key: Key) -> Bool { object[key.stringValue] != nil }

    private func member(_ key: Key) throws -> JSONValue {
        guard let value = object[key.stringValue] else {
            if key.stringValue == Self.ambiguousMembers {
                var seen: [String: String] = [:]
                let pair = object.keys.lazy.compactMap { name in
                    defer { seen[name] = seen[name] ?? name }
                    return seen[name].map { ($0, name) }
                }.first
                throw DecodingError.dataCorrupted(
                    .init(
                        codingPath: codingPath,
                        debugDescription:
                            "members \(pair.map { "\(Self.escaped($0.0)) and \(Self.escaped($0.1))" } ?? "") are two names in JSON but one String in Swift: a dictionary would keep one of them"
                    ))
            }
            throw DecodingError.keyNotFound(
                key,
                .init(
                    codingPath: codingPath,
                    debugDescription: "No value associated with key \(key.stringValue.debugDescription)."))
        }
        return value
    }

    func decodeNil(forKey key: Key) throws -> Bool { try member(key) == .null }

    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool {
        try ValueDecoder.bool(member(key), codingPath + [key])
    }
    func decode(_ type: String.Type, forKey key: Key) throws -> String {
        try ValueDecoder.string(member(key), codingPath + [key])
    }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double {
        try ValueDecoder.floatingPoint(Double.self, member(key), codingPath + [key])
    }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float {
        try ValueDecoder.floatingPoint(Float.self, member(key), codingPath + [key])
    }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try integer(key) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try integer(key) }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try integer(key) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try integer(key) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try integer(key) }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try integer(key) }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try integer(key) }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try integer(key) }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try integer(key) }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try integer(key) }

    private func integer<T: FixedWidthInteger>(_ key: Key) throws -> T {
        try ValueDecoder.integer(T.self, member(key), codingPath + [key])
    }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        try decoder.decode(T.self, from: member(key), at: codingPath + [key])
    }

    // Absent or null: nil, as JSONDecoder does.
    func decodeIfPresent(_ type: String.Type, forKey key: Key) throws -> String? {
        guard let value = object[key.stringValue], value != .null else { return nil }
        return try ValueDecoder.string(value, codingPath + [key])
    }
    func decodeIfPresent(_ type: Bool.Type, forKey key: Key) throws -> Bool? {
        guard let value = object[key.stringValue], value != .null else { return nil }
        return try ValueDecoder.bool(value, codingPath + [key])
    }
    func decodeIfPresent(_ type: Int.Type, forKey key: Key) throws -> Int? {
        guard let value = object[key.stringValue], value != .null else { return nil }
        return try ValueDecoder.integer(Int.self, value, codingPath + [key])
    }
    func decodeIfPresent(_ type: Double.Type, forKey key: Key) throws -> Double? {
        guard let value = object[key.stringValue], value != .null else { return nil }
        return try ValueDecoder.floatingPoint(Double.self, value, codingPath + [key])
    }
    func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
        guard let value = object[key.stringValue], value != .null else { return nil }
        return try decoder.decode(T.self, from: value, at: codingPath + [key])
    }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws
        -> KeyedDecodingContainer<NestedKey>
    {
        try ValueDecoder(member(key), at: codingPath + [key], options: decoder.options).container(keyedBy: type)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try ValueDecoder(member(key), at: codingPath + [key], options: decoder.options).unkeyedContainer()
    }

    func superDecoder() throws -> any Decoder {
        let key = SuperKey()
        return ValueDecoder(object["super"] ?? .null, at: codingPath + [key], options: decoder.options)
    }

    func superDecoder(forKey key: Key) throws -> any Decoder {
        ValueDecoder(object[key.stringValue] ?? .null, at: codingPath + [key], options: decoder.options)
    }
}

private struct SuperKey: CodingKey {
    var stringValue: String { "super" }
    var intValue: Int? { nil }
    init() {}
    init?(stringValue: String) { guard stringValue == "super" else { return nil } }
    init?(intValue: Int) { nil }
}

/// An index in an array, for coding paths (``ContractDecodingError/path`` tells an index from a member
/// named `42` by this type).
struct IndexKey: CodingKey {
    let intValue: Int?
    var stringValue: String { "Index \(intValue ?? 0)" }
    init(_ index: Int) { intValue = index }
    init?(stringValue: String) { nil }
    init?(intValue: Int) { self.intValue = intValue }
}

private struct UnkeyedContainer: UnkeyedDecodingContainer {
    let elements: [JSONValue]
    let decoder: ValueDecoder
    private(set) var currentIndex = 0

    init(elements: [JSONValue], decoder: ValueDecoder) {
        self.elements = elements
        self.decoder = decoder
    }

    var codingPath: [any CodingKey] { decoder.codingPath }
    var count: Int? { elements.count }
    var isAtEnd: Bool { currentIndex >= elements.count }

    private func path() -> [any CodingKey] { codingPath + [IndexKey(currentIndex)] }

    private func next<T>(_ type: T.Type) throws -> JSONValue {
        guard !isAtEnd else {
            throw DecodingError.valueNotFound(
                type, .init(codingPath: path(), debugDescription: "Unkeyed container is at end."))
        }
        return elements[currentIndex]
    }

    mutating func decodeNil() throws -> Bool {
        guard try next(Never.self) == .null else { return false }
        currentIndex += 1
        return true
    }

    mutating func decode(_ type: String.Type) throws -> String {
        let value = try ValueDecoder.string(next(type), path())
        currentIndex += 1
        return value
    }
    mutating func decode(_ type: Bool.Type) throws -> Bool {
        let value = try ValueDecoder.bool(next(type), path())
        currentIndex += 1
        return value
    }
    mutating func decode(_ type: Double.Type) throws -> Double {
        let value = try ValueDecoder.floatingPoint(Double.self, next(type), path())
        currentIndex += 1
        return value
    }
    mutating func decode(_ type: Float.Type) throws -> Float {
        let value = try ValueDecoder.floatingPoint(Float.self, next(type), path())
        currentIndex += 1
        return value
    }
    mutating func decode(_ type: Int.Type) throws -> Int { try integer() }
    mutating func decode(_ type: Int8.Type) throws -> Int8 { try integer() }
    mutating func decode(_ type: Int16.Type) throws -> Int16 { try integer() }
    mutating func decode(_ type: Int32.Type) throws -> Int32 { try integer() }
    mutating func decode(_ type: Int64.Type) throws -> Int64 { try integer() }
    mutating func decode(_ type: UInt.Type) throws -> UInt { try integer() }
    mutating func decode(_ type: UInt8.Type) throws -> UInt8 { try integer() }
    mutating func decode(_ type: UInt16.Type) throws -> UInt16 { try integer() }
    mutating func decode(_ type: UInt32.Type) throws -> UInt32 { try integer() }
    mutating func decode(_ type: UInt64.Type) throws -> UInt64 { try integer() }

    private mutating func integer<T: FixedWidthInteger>() throws -> T {
        let value = try ValueDecoder.integer(T.self, next(T.self), path())
        currentIndex += 1
        return value
    }

    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
        let value = try decoder.decode(T.self, from: next(type), at: path())
        currentIndex += 1
        return value
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws
        -> KeyedDecodingContainer<NestedKey>
    {
        let container = try ValueDecoder(
            next(KeyedDecodingContainer<NestedKey>.self), at: path(), options: decoder.options
        )
        .container(keyedBy: type)
        currentIndex += 1
        return container
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        let container = try ValueDecoder(next([Any].self), at: path(), options: decoder.options).unkeyedContainer()
        currentIndex += 1
        return container
    }

    mutating func superDecoder() throws -> any Decoder {
        let decoder = ValueDecoder(try next((any Decoder).self), at: path(), options: self.decoder.options)
        currentIndex += 1
        return decoder
    }
}

private struct SingleValueContainer: SingleValueDecodingContainer {
    let decoder: ValueDecoder

    var codingPath: [any CodingKey] { decoder.codingPath }
    private var value: JSONValue { decoder.value }

    func decodeNil() -> Bool { value == .null }

    func decode(_ type: Bool.Type) throws -> Bool { try ValueDecoder.bool(value, codingPath) }
    func decode(_ type: String.Type) throws -> String { try ValueDecoder.string(value, codingPath) }
    func decode(_ type: Double.Type) throws -> Double { try ValueDecoder.floatingPoint(Double.self, value, codingPath) }
    func decode(_ type: Float.Type) throws -> Float { try ValueDecoder.floatingPoint(Float.self, value, codingPath) }
    func decode(_ type: Int.Type) throws -> Int { try ValueDecoder.integer(Int.self, value, codingPath) }
    func decode(_ type: Int8.Type) throws -> Int8 { try ValueDecoder.integer(Int8.self, value, codingPath) }
    func decode(_ type: Int16.Type) throws -> Int16 { try ValueDecoder.integer(Int16.self, value, codingPath) }
    func decode(_ type: Int32.Type) throws -> Int32 { try ValueDecoder.integer(Int32.self, value, codingPath) }
    func decode(_ type: Int64.Type) throws -> Int64 { try ValueDecoder.integer(Int64.self, value, codingPath) }
    func decode(_ type: UInt.Type) throws -> UInt { try ValueDecoder.integer(UInt.self, value, codingPath) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try ValueDecoder.integer(UInt8.self, value, codingPath) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try ValueDecoder.integer(UInt16.self, value, codingPath) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try ValueDecoder.integer(UInt32.self, value, codingPath) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try ValueDecoder.integer(UInt64.self, value, codingPath) }

    func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try decoder.decode(T.self, from: value, at: codingPath)
    }
}
