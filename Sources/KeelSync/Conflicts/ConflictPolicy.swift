import Foundation
public import KeelContract

/// What happens when a local change meets a server that changed the same entity (MOB-DATA-005): declared
/// per entity type, optionally per field, each with the reason it is acceptable.
///
/// There is no default. A type without a policy cannot be synced, and `clientWins` — last write wins,
/// which loses the other side's value — exists only as a decision someone wrote down.
public struct ConflictPolicy: Sendable {
    /// How a conflicting field is settled.
    public enum Strategy: Sendable {
        /// The server's value stays; the local change of the field is dropped.
        case serverWins
        /// The local value is sent again against the server's version: last write wins. Only where losing the
        /// other value is acceptable (the standard's exception) — the rationale says why.
        case clientWins
        /// A function of the base, local and server values gives the value sent (see ``Merge``).
        case merge(Merge)
        /// A person decides: both versions are kept in a ``ConflictRecord`` until the app resolves it.
        case manual
    }

    /// A merge of one field: `(base, local, server) -> merged`. `base` is the value the local change was
    /// made against (nil when the field was absent, or the entity is new).
    ///
    /// A merge that does not apply to the values it meets (a counter that holds a string) throws
    /// ``Inapplicable``: the field then goes to a person, as under `manual` — never to one side's value,
    /// which would be last-write-wins nobody declared (MOB-DATA-005).
    public struct Merge: Sendable {
        /// A name for logs and the declaration (`setUnion`).
        public let name: String
        let merge: @Sendable (_ base: JSONValue?, _ local: JSONValue?, _ server: JSONValue?) throws -> JSONValue?

        /// The values are not of the kind the merge combines: the field is left to a person.
        public struct Inapplicable: Error, Sendable {
            /// Why, for logs.
            public let reason: String
            /// A refusal saying why.
            public init(_ reason: String) { self.reason = reason }
        }

        /// A merge named `name` computed by `merge`, which may throw ``Inapplicable``.
        public init(
            _ name: String,
            _ merge:
                @escaping @Sendable (_ base: JSONValue?, _ local: JSONValue?, _ server: JSONValue?)
                throws -> JSONValue?
        ) {
            self.name = name
            self.merge = merge
        }

        /// Arrays as sets (tags): each side's additions and removals since the base both apply — the server's
        /// elements without those the local side removed, then the elements the local side added. An element
        /// the server removed stays removed (found in review: every local element the server lacked came back,
        /// undoing a removal made on another device). An absent or null set is an empty one; anything else that
        /// is not an array, on any side or in the base, is ``Inapplicable`` (found in review: a local null
        /// dropped the local change, a server string kept the local one — each side winning without a word).
        public static let setUnion = Merge("setUnion") { base, local, server in
            func items(_ value: JSONValue?, _ side: String) throws -> [JSONValue] {
                switch value {
                case nil, .null?: return []
                case .array(let items)?: return items
                default: throw Inapplicable("setUnion: the \(side) value is not an array")
                }
            }
            let localItems = try items(local, "local")
            let serverItems = try items(server, "server")
            // A base that is not a set cannot say what either side removed (found in an outside audit: it was
            // read as empty, and every removal made on one side came back from the other).
            let baseItems = try items(base, "base")
            let removedLocally = baseItems.filter { !localItems.contains($0) }
            var merged = serverItems.filter { !removedLocally.contains($0) }
            for item in localItems where !merged.contains(item) && !baseItems.contains(item) { merged.append(item) }
            return .array(merged)
        }

        /// Counters: the server's value plus what the local side added since the base (an absent or null
        /// server or base value counts as 0). Whole numbers are added exactly, and a sum beyond 64 bits is
        /// ``Inapplicable``; so is a local value that is not a number, or a server or base value that is
        /// neither a number nor absent (found in review: the local value was sent instead, last-write-wins
        /// under another name).
        public static let additive = Merge("additive") { base, local, server in
            func number(_ value: JSONValue?, _ side: String, absentIsZero: Bool) throws -> JSONNumber {
                switch value {
                case .number(let number)?: return number
                case nil where absentIsZero, .null? where absentIsZero: return JSONNumber(Int64(0))
                default: throw Inapplicable("additive: the \(side) value is not a number")
                }
            }
            let localNumber = try number(local, "local", absentIsZero: false)
            let serverNumber = try number(server, "server", absentIsZero: true)
            // A base that is not a number cannot say what the local side added (found in an outside audit: a
            // base of "5" was read as 0, so 6 and 7 merged into 13).
            let baseNumber = try number(base, "base", absentIsZero: true)
            if localNumber.isInteger, serverNumber.isInteger, baseNumber.isInteger {
                // Whole counters add exactly or not at all: past Int64 a Double would round the count.
                guard let l = localNumber.int64, let s = serverNumber.int64, let b = baseNumber.int64 else {
                    throw Inapplicable("additive: a count beyond 64 bits cannot be added exactly")
                }
                let (delta, overflowA) = l.subtractingReportingOverflow(b)
                let (sum, overflowB) = s.addingReportingOverflow(delta)
                guard !overflowA, !overflowB else {
                    throw Inapplicable("additive: the sum is beyond what a 64-bit count holds")
                }
                return .number(JSONNumber(sum))
            }
            let sum = serverNumber.double + (localNumber.double - baseNumber.double)
            guard sum.isFinite else { throw Inapplicable("additive: the sum is beyond what a number holds") }
            return .number(JSONNumber(sum))
        }
    }

    /// How conflicts are settled.
    public let strategy: Strategy
    /// Why this is acceptable for this data (shown by ``ConflictPolicies/declaration``).
    public let rationale: String

    /// A policy. Prefer the static constructors.
    public init(_ strategy: Strategy, rationale: String) {
        self.strategy = strategy
        self.rationale = rationale
    }

    /// The server's value stays.
    public static func serverWins(because rationale: String) -> ConflictPolicy {
        .init(.serverWins, rationale: rationale)
    }
    /// Last write wins, declared.
    public static func clientWins(because rationale: String) -> ConflictPolicy {
        .init(.clientWins, rationale: rationale)
    }
    /// A merge function.
    public static func merge(_ merge: Merge, because rationale: String) -> ConflictPolicy {
        .init(.merge(merge), rationale: rationale)
    }
    /// A person decides.
    public static func manual(because rationale: String) -> ConflictPolicy { .init(.manual, rationale: rationale) }

    /// `serverWins`, `clientWins`, `merge(setUnion)` or `manual`.
    public var name: String {
        switch strategy {
        case .serverWins: "serverWins"
        case .clientWins: "clientWins"
        case .merge(let merge): "merge(\(merge.name))"
        case .manual: "manual"
        }
    }
}

/// The conflict policies of every synced entity type. Registering refuses a policy without a rationale;
/// the engine refuses changes of a type that has none.
public struct ConflictPolicies: Sendable {
    struct Entry: Sendable {
        var policy: ConflictPolicy
        var fields: [String: ConflictPolicy]
    }

    private(set) var entries: [String: Entry] = [:]

    /// No policies yet.
    public init() {}

    /// Declares how conflicts on entities of `type` are settled: `policy` for the whole entity (deletions,
    /// and fields without their own), `fields` for single fields.
    ///
    /// - Throws: ``SyncError`` `invalidDeclaration` for an empty type or one with a `/`, a policy without a
    ///   rationale, or a type declared twice.
    public mutating func register(_ type: String, _ policy: ConflictPolicy, fields: [String: ConflictPolicy] = [:])
        throws(SyncError)
    {
        guard !type.isEmpty else { throw SyncError(code: .invalidDeclaration, message: "an entity type needs a name") }
        // Records are stored as `type/id`: with a `/` in a type, ("a", "b/c") and ("a/b", "c") would share one.
        guard !type.contains("/") else {
            throw SyncError(
                code: .invalidDeclaration, subject: type,
                message: "an entity type cannot contain '/' (records are type/id)")
        }
        guard entries[type] == nil else {
            throw SyncError(code: .invalidDeclaration, subject: type, message: "the type already has a policy")
        }
        for (field, declared) in [("", policy)] + fields.sorted(by: { $0.key < $1.key })
        where declared.rationale.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty {
            throw SyncError(
                code: .invalidDeclaration, subject: field.isEmpty ? type : type + "." + field,
                message: "a conflict policy needs its rationale (why \(declared.name) is acceptable for this data)")
        }
        entries[type] = Entry(policy: policy, fields: fields)
    }

    /// The policy of `field` of `type` (the field's own, else the type's); nil when the type has none.
    public func policy(for type: String, field: String? = nil) -> ConflictPolicy? {
        guard let entry = entries[type] else { return nil }
        return field.flatMap { entry.fields[$0] } ?? entry.policy
    }

    /// The registered types, sorted.
    public var types: [String] { entries.keys.sorted() }

    /// One line per type and field: `note.tags: merge(setUnion) — tags from two devices are both kept`.
    public var declaration: [String] {
        types.flatMap { type -> [String] in
            let entry = entries[type]!
            return ["\(type): \(entry.policy.name) — \(entry.policy.rationale)"]
                + entry.fields.keys.sorted().map { field in
                    "\(type).\(field): \(entry.fields[field]!.name) — \(entry.fields[field]!.rationale)"
                }
        }
    }
}
