import Foundation

/// HTTP header fields in the order they were sent, with case-insensitive lookup.
public struct HTTPFields: Sendable, Equatable, ExpressibleByDictionaryLiteral, Sequence, CustomStringConvertible {
    /// One field as it appeared on the wire.
    public struct Field: Sendable, Equatable {
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

    public init(dictionaryLiteral elements: (String, String)...) {
        fields = elements.map { Field(name: $0.0, value: $0.1) }
    }

    /// The first value for `name` (case-insensitive), or nil.
    public subscript(_ name: String) -> String? {
        get { fields.first(where: Self.named(name))?.value }
        set {
            fields.removeAll(where: Self.named(name))
            if let newValue { fields.append(Field(name: name, value: newValue)) }
        }
    }

    /// Every value for `name`, in order.
    public func values(for name: String) -> [String] {
        fields.filter(Self.named(name)).map(\.value)
    }

    /// The comma-separated tokens of every `name` field, lower-cased and trimmed, in order
    /// (`Connection: Keep-Alive, Upgrade` gives `["keep-alive", "upgrade"]`).
    func tokens(for name: String) -> [String] {
        values(for: name).flatMap { $0.lowercased().split(separator: ",") }
            .map { $0.trimmingCharacters(in: .whitespaces) }
    }

    /// Appends a field, keeping any existing field of the same name.
    public mutating func append(name: String, value: String) {
        fields.append(Field(name: name, value: value))
    }

    /// Whether any field is named `name`.
    public func contains(_ name: String) -> Bool { self[name] != nil }

    public func makeIterator() -> IndexingIterator<[Field]> { fields.makeIterator() }

    public var description: String { fields.map { "\($0.name): \($0.value)" }.joined(separator: "\n") }

    /// Matches fields named `name`, ignoring case; `name` is lower-cased once, not per field.
    private static func named(_ name: String) -> (Field) -> Bool {
        let name = name.lowercased()
        return { $0.name.lowercased() == name }
    }
}
