/// An ordered list of HTTP header fields with case-insensitive lookup, shared by the client and the test
/// server.
///
/// Order and repeated names are kept exactly as sent or received; lookups compare names ASCII
/// case-insensitively (RFC 9110 §5.1), without allocating. The subscript setter replaces every field of
/// that name; ``append(name:value:)`` adds another one.
///
/// ```swift
/// var headers: HeaderFields = ["Accept": "application/json"]
/// headers.append(name: "Cache-Control", value: "no-store")
/// headers["accept"]            // "application/json"
/// ```
///
/// ## Topics
/// - ``Field``
/// - ``subscript(_:)``
/// - ``values(for:)``
/// - ``append(name:value:)``
/// - ``removeAll(named:)``
/// - ``contains(_:)``
/// - ``tokens(for:)``
public struct HeaderFields: Sendable, Hashable, ExpressibleByDictionaryLiteral, RandomAccessCollection,
    CustomStringConvertible
{
    /// One field as it appeared on the wire.
    public struct Field: Sendable, Hashable {
        /// The field name as sent (lookups ignore case).
        public var name: String
        /// The field value, without surrounding whitespace.
        public var value: String

        /// A field.
        public init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    /// The fields in wire order.
    public private(set) var fields: [Field]

    /// Fields in the given order.
    public init(_ fields: [Field] = []) { self.fields = fields }

    /// Fields from `(name, value)` pairs, in order.
    public init(_ pairs: some Sequence<(String, String)>) {
        fields = pairs.map { Field(name: $0.0, value: $0.1) }
    }

    /// Fields from the literal's pairs, in order; repeated names are kept as separate fields.
    public init(dictionaryLiteral elements: (String, String)...) {
        self.init(elements)
    }

    // MARK: - Collection

    /// The position of the first field (fields are indexed in wire order).
    public var startIndex: Int { fields.startIndex }
    /// The position one past the last field.
    public var endIndex: Int { fields.endIndex }
    /// The field at `position`, in wire order.
    public subscript(position: Int) -> Field { fields[position] }

    // MARK: - Lookup

    /// The first value for `name` (case-insensitive), or nil. Setting replaces every field of that name
    /// with one field at the end (or removes them all when nil).
    public subscript(_ name: String) -> String? {
        get { firstIndex(named: name).map { fields[$0].value } }
        set {
            removeAll(named: name)
            if let newValue { fields.append(Field(name: name, value: newValue)) }
        }
    }

    /// Every value for `name`, in order.
    public func values(for name: String) -> [String] {
        var values: [String] = []
        let length = name.utf8.count
        for index in fields.indices where isField(index, named: name, length: length) {
            values.append(fields[index].value)
        }
        return values
    }

    /// The comma-separated tokens of every `name` field, lower-cased and trimmed, in order
    /// (`Connection: Keep-Alive, Upgrade` gives `["keep-alive", "upgrade"]`).
    public func tokens(for name: String) -> [String] {
        // ASCII lower-casing only: Unicode's would read `chun\u{212A}ed` (a Kelvin sign) as `chunked`, a coding
        // an intermediary would not recognize — two parties framing one message differently.
        values(for: name).flatMap { Self.asciiLowercased($0).split(separator: ",") }
            .map { $0.trimmingSpacesAndTabs() }
            .filter { !$0.isEmpty }
    }

    /// `text` with A–Z lower-cased and everything else as it is.
    static func asciiLowercased(_ text: String) -> String {
        guard text.utf8.contains(where: { (65...90).contains($0) }) else { return text }
        return String(decoding: text.utf8.map { (65...90).contains($0) ? $0 + 32 : $0 }, as: UTF8.self)
    }

    /// Whether any field is named `name`.
    public func contains(_ name: String) -> Bool {
        firstIndex(named: name) != nil
    }

    /// The position of the first field named `name`.
    ///
    /// By index, not through a closure: handing each field to a closure retained and released both of its
    /// strings, and a request's list is scanned by name about ten times per call (keel-bench trace.overhead).
    func firstIndex(named name: String) -> Int? {
        let length = name.utf8.count
        return fields.indices.first { isField($0, named: name, length: length) }
    }

    /// Whether the field at `index` is named `name` (whose UTF-8 length is `length`). Lengths first, here:
    /// most names differ in length, and then no comparison is called at all.
    @inline(__always)
    private func isField(_ index: Int, named name: String, length: Int) -> Bool {
        fields[index].name.utf8.count == length && Self.equalIgnoringCase(fields[index].name, name)
    }

    // MARK: - Changes

    /// Makes room for `minimumCapacity` fields, so that adding them one by one does not copy the list
    /// as it grows (a request's headers are built field by field on every call).
    package mutating func reserveCapacity(_ minimumCapacity: Int) {
        fields.reserveCapacity(minimumCapacity)
    }

    /// Appends a field, keeping any existing field of the same name.
    public mutating func append(name: String, value: String) {
        fields.append(Field(name: name, value: value))
    }

    /// Appends every field of `other`, in order.
    public mutating func append(contentsOf other: HeaderFields) {
        fields.append(contentsOf: other.fields)
    }

    /// Removes every field named `name`.
    public mutating func removeAll(named name: String) {
        // Usually there is none: then the list is left as it is (not even made unique).
        guard contains(name) else { return }
        fields.removeAll { Self.equalIgnoringCase($0.name, name) }
    }

    /// Every field as `name: value` on its own line, in wire order; values are not redacted, so do not log
    /// fields that carry credentials.
    public var description: String { fields.map { "\($0.name): \($0.value)" }.joined(separator: "\n") }

    /// ASCII case-insensitive comparison of two field names, without allocating.
    package static func equalIgnoringCase(_ lhs: String, _ rhs: String) -> Bool {
        let left = lhs.utf8
        let right = rhs.utf8
        guard left.count == right.count else { return false }
        // Native strings (every header name Keel makes or reads) compare as two byte buffers: iterating two
        // UTF-8 views in step costs several times more, and every request scans its fields by name a dozen
        // times (keel-bench trace.overhead).
        let compared = left.withContiguousStorageIfAvailable { left in
            right.withContiguousStorageIfAvailable { right in
                for index in 0..<left.count where !sameIgnoringCase(left[index], right[index]) { return false }
                return true
            }
        }
        if let compared, let compared { return compared }
        return zip(left, right).allSatisfy(sameIgnoringCase)
    }

    /// Whether two bytes are equal or the same ASCII letter in different cases.
    private static func sameIgnoringCase(_ a: UInt8, _ b: UInt8) -> Bool {
        a == b || (a ^ b == 0x20 && (a | 0x20) >= 0x61 && (a | 0x20) <= 0x7A)
    }

    /// Whether `bytes` is an RFC 9110 token (a method or a field name): one or more `tchar`s.
    ///
    /// Inlinable so that each caller's collection type gets its own specialization: the client checks
    /// every header name it sends and the test server every one it receives.
    @inlinable
    package static func isToken(_ bytes: some Collection<UInt8>) -> Bool {
        !bytes.isEmpty && bytes.allSatisfy(isTokenByte)
    }

    /// RFC 9110 `tchar` (its 15 symbols, digits and letters), by byte: a bit test against two constants, no
    /// table to load.
    @inlinable
    package static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case 0..<64: return (0x03FF_6CFA_0000_0000 as UInt64) >> UInt64(byte) & 1 == 1
        case 64..<128: return (0x57FF_FFFF_C7FF_FFFE as UInt64) >> UInt64(byte - 64) & 1 == 1
        default: return false
        }
    }
}

extension StringProtocol {
    /// The text without leading and trailing spaces and horizontal tabs (HTTP's optional whitespace).
    package func trimmingSpacesAndTabs() -> String {
        let isOWS: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        guard let first = firstIndex(where: { !isOWS($0) }), let last = lastIndex(where: { !isOWS($0) }) else {
            return ""
        }
        return String(self[first...last])
    }
}
