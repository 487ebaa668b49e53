/// A JSON object that keeps its members in document order, with O(1) lookup by key.
///
/// Equality ignores order (two objects with the same members are equal, as JSON Schema's `const`,
/// `enum` and `uniqueItems` require); iteration and serialization keep it.
public struct JSONObject: Sendable, Hashable, Sequence, ExpressibleByDictionaryLiteral {
    /// The keys in document order.
    public private(set) var keys: [String] = []
    /// The values, parallel to `keys`, so iteration needs no hashing.
    private var values: [JSONValue] = []
    /// Where each key sits in `keys`/`values`.
    private var positions: [MemberName: Int] = [:]

    /// A member name compared by code points: JSON treats "é" and "e\u{301}" as different names, while
    /// Swift's `String` would merge them.
    private struct MemberName: Hashable {
        let name: String
        static func == (lhs: MemberName, rhs: MemberName) -> Bool {
            lhs.name.utf8.count == rhs.name.utf8.count && lhs.name.utf8.elementsEqual(rhs.name.utf8)
        }
        func hash(into hasher: inout Hasher) {
            // Member names are hashed on every lookup: hash the UTF-8 bytes in one call when they are
            // contiguous (native strings), byte by byte otherwise.
            let hashed: Void? = name.utf8.withContiguousStorageIfAvailable { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
            if hashed == nil { for byte in name.utf8 { hasher.combine(byte) } }
            hasher.combine(name.utf8.count)
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
        get { positions[MemberName(name: key)].map { values[$0] } }
        set {
            let name = MemberName(name: key)
            if let newValue {
                if let position = positions[name] {
                    values[position] = newValue
                } else {
                    positions[name] = keys.count
                    keys.append(key)
                    values.append(newValue)
                }
            } else if let position = positions.removeValue(forKey: name) {
                keys.remove(at: position)
                values.remove(at: position)
                for later in keys[position...] { positions[MemberName(name: later)]! -= 1 }
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
            return (object.keys[index], object.values[index])
        }
    }

    public func makeIterator() -> Iterator { Iterator(object: self) }

    /// Order-independent: the same members in any order are equal.
    public static func == (lhs: JSONObject, rhs: JSONObject) -> Bool {
        guard lhs.keys.count == rhs.keys.count else { return false }
        for (key, value) in zip(lhs.keys, lhs.values) where rhs[key] != value { return false }
        return true
    }

    /// Order-independent, consistent with `==`: the members' hashes are combined commutatively.
    public func hash(into hasher: inout Hasher) {
        var combined = 0
        for (key, value) in zip(keys, values) {
            var member = Hasher()
            member.combine(MemberName(name: key))
            member.combine(value)
            combined ^= member.finalize()
        }
        hasher.combine(keys.count)
        hasher.combine(combined)
    }
}
