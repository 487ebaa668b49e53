/// A JSON object that keeps its members in document order, with O(1) lookup by key.
///
/// Equality ignores order (two objects with the same members are equal, as JSON Schema's `const`,
/// `enum` and `uniqueItems` require); iteration and serialization keep it.
public struct JSONObject: Sendable, Hashable, Sequence, ExpressibleByDictionaryLiteral {
    /// The keys in document order.
    public private(set) var keys: [String] = []
    private var storage: [MemberName: JSONValue] = [:]

    /// A member name compared by code points: JSON treats "é" and "e\u{301}" as different names, while
    /// Swift's `String` would merge them.
    private struct MemberName: Hashable {
        let name: String
        static func == (lhs: MemberName, rhs: MemberName) -> Bool { lhs.name.utf8.elementsEqual(rhs.name.utf8) }
        func hash(into hasher: inout Hasher) {
            hasher.combine(name.utf8.count)
            for byte in name.utf8 { hasher.combine(byte) }
        }
    }

    /// An empty object.
    public init() {}

    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        for (key, value) in elements { self[key] = value }
    }

    /// The members, in order, from `pairs`; a repeated key keeps its first position and last value.
    public init(_ pairs: some Sequence<(String, JSONValue)>) {
        for (key, value) in pairs { self[key] = value }
    }

    /// The value for `key`; setting nil removes the member.
    public subscript(key: String) -> JSONValue? {
        get { storage[MemberName(name: key)] }
        set {
            if let newValue {
                if storage.updateValue(newValue, forKey: MemberName(name: key)) == nil { keys.append(key) }
            } else if storage.removeValue(forKey: MemberName(name: key)) != nil {
                keys.removeAll { $0.utf8.elementsEqual(key.utf8) }
            }
        }
    }

    /// The number of members.
    public var count: Int { keys.count }

    /// Whether the object has no members.
    public var isEmpty: Bool { keys.isEmpty }

    /// Iterates the members in document order.
    public struct Iterator: IteratorProtocol {
        fileprivate let object: JSONObject
        fileprivate var index = 0

        public mutating func next() -> (key: String, value: JSONValue)? {
            guard index < object.keys.count else { return nil }
            defer { index += 1 }
            let key = object.keys[index]
            return (key, object.storage[MemberName(name: key)]!)
        }
    }

    public func makeIterator() -> Iterator { Iterator(object: self) }

    public static func == (lhs: JSONObject, rhs: JSONObject) -> Bool { lhs.storage == rhs.storage }

    public func hash(into hasher: inout Hasher) { hasher.combine(storage) }
}
