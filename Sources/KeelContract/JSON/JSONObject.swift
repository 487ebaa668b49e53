import Foundation

/// A JSON object that keeps its members in document order, with fast lookup by key.
///
/// Equality ignores order (two objects with the same members are equal, as JSON Schema's `const`,
/// `enum` and `uniqueItems` require); iteration and serialization keep it.
///
/// Most objects in API descriptions and payloads have a handful of members: those are found by a
/// linear scan of the members (no hashing, one allocation per object). Objects that grow past
/// ``indexThreshold`` members get a hash index from name to position, so lookup stays O(1).
public struct JSONObject: Sendable, Hashable, Sequence, ExpressibleByDictionaryLiteral {
    /// One member: its name and value, stored together so an object is one array.
    fileprivate struct Member: Sendable {
        let key: String
        var value: JSONValue
    }

    /// The members in document order.
    private var members: [Member] = []
    /// Where each key sits in `members`; nil while the object has at most `indexThreshold` members.
    private var positions: [MemberName: Int]?

    /// Objects with more members than this get a hash index; smaller ones are scanned.
    package static let indexThreshold = 12

    /// A member name compared by code points: JSON treats "é" and "e\u{301}" as different names, while
    /// Swift's `String` would merge them.
    package struct MemberName: Hashable {
        package let name: String
        package init(name: String) { self.name = name }
        package static func == (lhs: MemberName, rhs: MemberName) -> Bool { sameName(lhs.name, rhs.name) }
        package func hash(into hasher: inout Hasher) {
            // Hash the UTF-8 bytes in one call when they are contiguous (native strings), byte by byte otherwise.
            let hashed: Void? = name.utf8.withContiguousStorageIfAvailable {
                hasher.combine(bytes: UnsafeRawBufferPointer($0))
            }
            if hashed == nil { for byte in name.utf8 { hasher.combine(byte) } }
            hasher.combine(name.utf8.count)
        }
    }

    /// Whether two member names have the same UTF-8 bytes (not Swift's canonical equivalence).
    @inline(__always)
    package static func sameName(_ lhs: String, _ rhs: String) -> Bool {
        let a = lhs.utf8
        let b = rhs.utf8
        let count = a.count
        guard count == b.count else { return false }
        if count == 0 { return true }
        let compared: Bool?? = a.withContiguousStorageIfAvailable { left in
            b.withContiguousStorageIfAvailable { right in
                memcmp(left.baseAddress!, right.baseAddress!, count) == 0
            }
        }
        if let compared, let compared { return compared }
        return a.elementsEqual(b)
    }

    /// An empty object.
    public init() {}

    /// The members in literal order; a repeated key keeps its first position and last value.
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        members.reserveCapacity(elements.count)
        for (key, value) in elements { self[key] = value }
    }

    /// The members, in order, from `pairs`; a repeated key keeps its first position and last value.
    public init(_ pairs: some Sequence<(String, JSONValue)>) {
        members.reserveCapacity(pairs.underestimatedCount)
        for (key, value) in pairs { self[key] = value }
    }

    /// The members `keys[i]: values[i]`, in order, moved out of the buffers (which are left
    /// uninitialized); the caller has checked that the keys are distinct. A caller that checked with a hash
    /// index of its own, from each key to its offset, hands it over as `positions` (used when the object is
    /// indexed at all: more than ``indexThreshold`` keys), so the keys are not hashed twice.
    package init(
        movingUniqueKeys keys: UnsafeMutableBufferPointer<String>, values: UnsafeMutableBufferPointer<JSONValue>,
        positions: consuming [MemberName: Int]? = nil
    ) {
        precondition(keys.count == values.count, "one value per key")
        let count = keys.count
        members = [Member](unsafeUninitializedCapacity: count) { buffer, initialized in
            for offset in 0..<count {
                (buffer.baseAddress! + offset).initialize(
                    to: Member(key: (keys.baseAddress! + offset).move(), value: (values.baseAddress! + offset).move()))
            }
            initialized = count
        }
        guard count > Self.indexThreshold else { return }
        if let positions, positions.count == count {
            self.positions = positions
        } else {
            buildIndex()
        }
    }

    private mutating func buildIndex() {
        var index: [MemberName: Int] = [:]
        index.reserveCapacity(members.count * 2)
        for (position, member) in members.enumerated() { index[MemberName(name: member.key)] = position }
        positions = index
    }

    /// The position of `key` in `members`.
    @inline(__always)
    private func position(of key: String) -> Int? {
        if let positions { return positions[MemberName(name: key)] }
        return members.firstIndex { Self.sameName($0.key, key) }
    }

    /// Whether the object has a member named `key`.
    package func contains(key: String) -> Bool { position(of: key) != nil }

    /// The value for `key`; setting nil removes the member.
    public subscript(key: String) -> JSONValue? {
        get { position(of: key).map { members[$0].value } }
        set {
            if let newValue {
                if let position = position(of: key) {
                    members[position].value = newValue
                } else {
                    append(newKey: key, newValue)
                }
            } else if let position = position(of: key) {
                members.remove(at: position)
                if members.count <= Self.indexThreshold {
                    positions = nil
                } else {
                    positions![MemberName(name: key)] = nil
                    for later in position..<members.count { positions![MemberName(name: members[later].key)]! -= 1 }
                }
            }
        }
    }

    /// Appends a member whose name the caller knows is not in the object yet (parsers, which check for
    /// duplicates when they read the name): no lookup.
    package mutating func append(newKey key: String, _ value: JSONValue) {
        members.append(Member(key: key, value: value))
        if positions != nil {
            positions![MemberName(name: key)] = members.count - 1
        } else if members.count > Self.indexThreshold {
            buildIndex()
        }
    }

    /// The keys in document order.
    public var keys: [String] { members.map(\.key) }

    /// The number of members.
    public var count: Int { members.count }

    /// Whether the object has no members.
    public var isEmpty: Bool { members.isEmpty }

    /// The number of members (exact, not an estimate).
    public var underestimatedCount: Int { members.count }

    /// Iterates the members in document order.
    public struct Iterator: IteratorProtocol {
        private let members: [Member]
        private var index = 0

        fileprivate init(members: [Member]) { self.members = members }

        /// The next member as a name and value, in document order; nil after the last one.
        public mutating func next() -> (key: String, value: JSONValue)? {
            guard index < members.count else { return nil }
            defer { index += 1 }
            let member = members[index]
            return (member.key, member.value)
        }
    }

    /// An iterator over the members in document order.
    public func makeIterator() -> Iterator { Iterator(members: members) }

    /// Calls `body` with each member's name and value in document order, lent rather than copied (no
    /// reference counting per member, as a `for` loop over the object has): for walks over large trees.
    package func forEachMember(_ body: (String, JSONValue) throws -> Void) rethrows {
        try members.withUnsafeBufferPointer { buffer in
            for index in buffer.indices { try body(buffer[index].key, buffer[index].value) }
        }
    }

    /// Order-independent: the same members in any order are equal.
    public static func == (lhs: JSONObject, rhs: JSONObject) -> Bool {
        guard lhs.members.count == rhs.members.count else { return false }
        for index in lhs.members.indices {
            let member = lhs.members[index]
            // Members usually come in the same order on both sides: compare in place, look up otherwise.
            let other = rhs.members[index]
            if sameName(member.key, other.key) {
                guard member.value == other.value else { return false }
            } else {
                guard let value = rhs[member.key], value == member.value else { return false }
            }
        }
        return true
    }

    /// Order-independent, consistent with `==`: the members' hashes are combined commutatively.
    public func hash(into hasher: inout Hasher) {
        var combined = 0
        for member in members {
            var one = Hasher()
            one.combine(MemberName(name: member.key))
            one.combine(member.value)
            combined ^= one.finalize()
        }
        hasher.combine(members.count)
        hasher.combine(combined)
    }
}

extension JSONObject {
    /// `self == other`, and neither has a member named `excluded` at any depth (false when unsure).
    package func isEqual(to other: JSONObject, withoutMember excluded: String) -> Bool {
        guard members.count == other.members.count else { return false }
        // Over both member buffers in place: indexing the arrays retained and released every key and value.
        let inOrder: Bool? = members.withUnsafeBufferPointer { mine in
            other.members.withUnsafeBufferPointer { theirs in
                for index in mine.indices {
                    guard !Self.sameName(mine[index].key, excluded) else { return false }
                    guard Self.sameName(mine[index].key, theirs[index].key) else { return nil }
                    guard mine[index].value.isEqual(to: theirs[index].value, withoutMember: excluded) else {
                        return false
                    }
                }
                return true
            }
        }
        // nil: the same members in another order, perhaps: plain equality, then a search for the name.
        return inOrder ?? (self == other && !JSONValue.object(self).hasMember(named: excluded))
    }
}

extension JSONValue {
    /// `self == other`, and neither has an object member named `excluded` at any depth (false when unsure).
    package func isEqual(to other: JSONValue, withoutMember excluded: String) -> Bool {
        switch self {
        case .object(let object):
            guard case .object(let otherObject) = other else { return false }
            return object.isEqual(to: otherObject, withoutMember: excluded)
        case .array(let elements):
            guard case .array(let otherElements) = other, elements.count == otherElements.count else { return false }
            for index in elements.indices
            where !elements[index].isEqual(to: otherElements[index], withoutMember: excluded) { return false }
            return true
        default:
            return self == other
        }
    }

    /// Whether some object in `self`, at any depth, has a member named `name`.
    package func hasMember(named name: String) -> Bool {
        switch self {
        case .object(let object):
            object.contains { JSONObject.sameName($0.key, name) || $0.value.hasMember(named: name) }
        case .array(let elements): elements.contains { $0.hasMember(named: name) }
        default: false
        }
    }
}
