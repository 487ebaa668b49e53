import Foundation
import KeelContract
public import KeelStore

/// The datasets the sync engine keeps in the account's vault. Declare them in the app's inventory
/// (``datasets(classification:backup:)`` gives the declarations); they must share a backup policy, so that
/// an outbox entry and the local copy it changes are written in one transaction.
public struct SyncStorage: Sendable, Hashable {
    /// Changes waiting to be sent (the outbox), in order.
    public var outbox: String
    /// The local copy of every synced entity: the server's version and what the user sees.
    public var entities: String
    /// Conflicts waiting for a person.
    public var conflicts: String
    /// The pull cursor, freshness per entity type, and what became of settled changes.
    public var state: String

    /// Dataset names; the defaults are `sync-outbox`, `sync-entities`, `sync-conflicts` and `sync-state`.
    public init(
        outbox: String = "sync-outbox", entities: String = "sync-entities", conflicts: String = "sync-conflicts",
        state: String = "sync-state"
    ) {
        self.outbox = outbox
        self.entities = entities
        self.conflicts = conflicts
        self.state = state
    }

    /// The default names.
    public static let `default` = SyncStorage()

    var all: [String] { [outbox, entities, conflicts, state] }

    /// The inventory declarations of the four datasets: account-bound, sealed when `classification` is
    /// personal or above, kept until sign-out, account deletion or access revocation, backed up by `backup`
    /// (default `deviceOnly`: the keys that open them stay on this device).
    public func datasets(
        classification: Dataset.Classification = .personal, backup: Dataset.BackupPolicy = .deviceOnly
    ) -> [Dataset] {
        let triggers: Set<Dataset.DeletionTrigger> = [.logout, .accountDeletion, .accessRevocation]
        func dataset(_ name: String, _ purpose: String, _ kind: Dataset.Kind) -> Dataset {
            Dataset(
                name: name, purpose: purpose, kind: kind, classification: classification, isAccountBound: true,
                retention: .untilEvent, backup: backup, deletionTriggers: triggers, role: .sourceOfTruth)
        }
        return [
            dataset(outbox, "Changes made on this device that the server has not confirmed yet", .queue),
            dataset(
                entities, "The account's synced data as the server confirmed it, with local changes on top", .keyValue),
            dataset(conflicts, "Both versions of changes that conflict, until the user decides", .keyValue),
            dataset(state, "Where the next pull starts, when data was last updated, what became of changes", .keyValue),
        ]
    }
}

/// What became of a change that left the outbox.
public enum Settlement: Sendable, Hashable {
    /// The server applied it; the entity's version after it, when the server said.
    case applied(version: Int?)
    /// A declared policy settled a conflict without it (`serverWins`, or the server already had the value).
    case superseded(policy: String)
    /// A conflict resolution (or a policy) sent it again as another mutation.
    case replaced(by: String)
    /// The user discarded it.
    case discarded
}

/// Encoding of the engine's records (JSON, sealed by the vault where the dataset is).
enum SyncRecords {
    /// The outbox entry stored under `id`; nil when there is none — or when the row is damaged (it no longer
    /// opens under its key, or opens to something that is not an entry). A damaged entry is left where it
    /// is, never sent (its content is unknown) and listed by ``SyncEngine/damagedRecords()``; every read and
    /// write goes on without it, instead of failing on it for good.
    static func outboxEntry(_ id: String, in outbox: VaultRecords) throws -> PendingMutation? {
        try SyncEngine.undamaged { try outbox.get(id).map { try PendingMutation(json: decode($0, "outbox entry")) } }
    }

    static func damaged(_ what: String) -> SyncError {
        SyncError(code: .damagedRecord, message: "a stored \(what) cannot be read")
    }

    static func outboxID(_ sequence: UInt64) -> String {
        // Written digit by digit into one string (every enqueue, fold and push makes these).
        String(unsafeUninitializedCapacity: 20) { text in
            var rest = sequence
            for position in stride(from: 19, through: 0, by: -1) {
                text[position] = UInt8(ascii: "0") + UInt8(rest % 10)
                rest /= 10
            }
            return 20
        }
    }

    static func encode(_ value: JSONValue) -> Data { Data(value.serialized()) }

    /// An outbox entry as stored (``PendingMutation/encoded``: the bytes of its ``PendingMutation/json``).
    static func encode(_ mutation: PendingMutation) -> Data { Data(mutation.encoded) }

    static func decode(_ data: Data, _ what: String) throws(SyncError) -> JSONValue {
        do { return try JSONValue(parsing: data) } catch { throw damaged(what) }
    }

    static func json(of entity: RemoteEntity) -> JSONValue {
        [
            "type": .string(entity.ref.type), "id": .string(entity.ref.id),
            "version": .number(JSONNumber(Int64(entity.version))), "deleted": .bool(entity.isDeleted),
            "fields": .object(entity.fields),
        ]
    }

    static func remoteEntity(_ json: JSONValue) throws(SyncError) -> RemoteEntity {
        guard let type = json["type"]?.stringValue, let id = json["id"]?.stringValue,
            let version = json["version"]?.intValue,
            let deleted = json["deleted"]?.boolValue, let fields = json["fields"]?.objectValue
        else { throw damaged("server entity") }
        return RemoteEntity(ref: EntityRef(type: type, id: id), version: version, isDeleted: deleted, fields: fields)
    }

    static func json(of settlement: Settlement, at date: Date) -> JSONValue {
        var object: JSONObject = ["at": .number(JSONNumber(date.timeIntervalSince1970))]
        switch settlement {
        case .applied(let version):
            object["outcome"] = "applied"
            if let version { object["version"] = .number(JSONNumber(Int64(version))) }
        case .superseded(let policy):
            object["outcome"] = "superseded"
            object["policy"] = .string(policy)
        case .replaced(let id):
            object["outcome"] = "replaced"
            object["by"] = .string(id)
        case .discarded:
            object["outcome"] = "discarded"
        }
        return .object(object)
    }

    static func settlement(_ json: JSONValue) throws(SyncError) -> Settlement {
        switch json["outcome"]?.stringValue {
        case "applied": return .applied(version: json["version"]?.intValue)
        case "superseded": return .superseded(policy: json["policy"]?.stringValue ?? "")
        case "replaced": return .replaced(by: json["by"]?.stringValue ?? "")
        case "discarded": return .discarded
        default: throw damaged("settlement")
        }
    }
}

/// The local copy of one entity: the server's version (when it has one) and what the user sees — the
/// server's fields with every outstanding change on top.
struct EntityRecord {
    var ref: EntityRef
    var server: RemoteEntity?
    var visible: JSONObject
    var visibleDeleted: Bool
    /// Outbox sequence numbers of the changes of this entity not yet settled, in order.
    private(set) var outstanding: [UInt64]
    /// What this record knows of each outstanding change, in the order of ``outstanding``, without reading
    /// its outbox entry; nil when not known (a record written before they were kept here:
    /// ``loadChanges(from:)`` reads them from the entries).
    ///
    /// Where they are known, their bases are what counts, not the base an outbox entry holds: acknowledging a
    /// change moves the later changes made against its base on to the version the server gave it, and it does
    /// so here, in the one record, instead of rewriting every later entry of the entity in the outbox; and what
    /// the user sees afterwards is worked out from the fields the later changes set, instead of reading them
    /// all back. Both made a run of edits of one entity (an autosave) cost time quadratic in its length. An
    /// entry takes its base from here when it is sent (``SyncEngine`` `takeBatch`). Only the first
    /// outstanding change of an entity is ever sent, so every later one is unsent: the rule "later changes
    /// not sent yet move along" needs no look at the entries.
    private(set) var changes: [OutstandingChange]?

    /// One outstanding change as its entity's record keeps it.
    struct OutstandingChange: Equatable {
        /// The version it goes against.
        var base: Int?
        var kind: MutationKind
        /// The fields it sets.
        var names: [String]

        init(_ change: PendingMutation) {
            base = change.baseVersion
            kind = change.kind
            names = change.kind == .delete ? [] : change.fields.map(\.key)
        }

        init(base: Int?, kind: MutationKind, names: [String]) {
            self.base = base
            self.kind = kind
            self.names = names
        }

        var object: JSONObject {
            [
                "base": base.map { .number(JSONNumber(Int64($0))) } ?? .null, "kind": .string(kind.rawValue),
                "fields": .array(names.map(JSONValue.string)),
            ]
        }

        /// `changes` as runs of equal changes (`count` when more than one): a run of edits of the same fields
        /// (an autosave) keeps the record as small as one edit does.
        static func runs(_ changes: [OutstandingChange]) -> JSONValue {
            var runs: [JSONValue] = []
            var index = changes.startIndex
            while index < changes.endIndex {
                let change = changes[index]
                var end = index + 1
                while end < changes.endIndex, changes[end] == change { end += 1 }
                var run = change.object
                if end - index > 1 { run["count"] = .number(JSONNumber(Int64(end - index))) }
                runs.append(.object(run))
                index = end
            }
            return .array(runs)
        }

        /// The `expected` changes that `runs` wrote; a record whose runs do not add up to them is damaged.
        static func changes(fromRuns json: JSONValue, expected: Int) throws(SyncError) -> [OutstandingChange] {
            guard case .array(let runs) = json else { throw SyncRecords.damaged("entity") }
            var changes: [OutstandingChange] = []
            changes.reserveCapacity(expected)
            for run in runs {
                let change = try OutstandingChange(json: run)
                let count = try run["count"].map { value throws(SyncError) -> Int in
                    // Checked before anything is made of it: a damaged count must not ask for memory.
                    guard let count = value.intValue, count > 1, count <= expected - changes.count else {
                        throw SyncRecords.damaged("entity")
                    }
                    return count
                }
                guard changes.count < expected else { throw SyncRecords.damaged("entity") }
                changes.append(contentsOf: repeatElement(change, count: count ?? 1))
            }
            guard changes.count == expected else { throw SyncRecords.damaged("entity") }
            return changes
        }

        init(json: JSONValue) throws(SyncError) {
            guard let kind = json["kind"]?.stringValue.flatMap(MutationKind.init(rawValue:)),
                case .array(let names)? = json["fields"]
            else { throw SyncRecords.damaged("entity") }
            switch json["base"] {
            case .null?: base = nil
            case let value?:
                guard let version = value.intValue else { throw SyncRecords.damaged("entity") }
                base = version
            case nil: throw SyncRecords.damaged("entity")
            }
            self.kind = kind
            self.names = try names.map { name throws(SyncError) in
                guard let name = name.stringValue else { throw SyncRecords.damaged("entity") }
                return name
            }
        }
    }

    /// Whether ``server`` was made here, not sent by the server: a change acknowledged as applied before
    /// without the entity, applied to the copy it was made against, one version on. Any copy from the server
    /// at that version or later replaces it.
    var serverIsProvisional = false

    /// Takes `copy` from the server when it is newer than the one kept (or as new as a provisional one).
    mutating func take(_ copy: RemoteEntity) -> Bool {
        if let known = server, known.version > copy.version || (known.version == copy.version && !serverIsProvisional) {
            return false
        }
        server = copy
        serverIsProvisional = false
        return true
    }

    var exists: Bool { !visibleDeleted && (server != nil || !outstanding.isEmpty || !visible.isEmpty) }

    /// Whether there is anything of the entity to show: a server copy or a change of this device. A record
    /// with neither (a create discarded before the server had it) is no entity, never an empty "synced" one.
    var isKnown: Bool { server != nil || !outstanding.isEmpty }

    var recordID: String { ref.description }

    var json: JSONValue {
        var object: JSONObject = [
            "v": 1, "type": .string(ref.type), "id": .string(ref.id), "visibleDeleted": .bool(visibleDeleted),
            "outstanding": .array(outstanding.map { .number(JSONNumber(Int64(bitPattern: $0))) }),
        ]
        if let changes, !outstanding.isEmpty { object["changes"] = OutstandingChange.runs(changes) }
        if let server { object["server"] = SyncRecords.json(of: server) }
        if serverIsProvisional { object["provisional"] = true }
        // Most of the time nothing is outstanding and the user sees the server's fields: kept once.
        if !(outstanding.isEmpty && server?.fields == visible) { object["visible"] = .object(visible) }
        return .object(object)
    }

    init(ref: EntityRef) {
        self.ref = ref
        server = nil
        visible = [:]
        visibleDeleted = false
        outstanding = []
        changes = []
    }

    init(json: JSONValue) throws(SyncError) {
        guard json["v"]?.intValue == 1, let type = json["type"]?.stringValue, let id = json["id"]?.stringValue,
            let visibleDeleted = json["visibleDeleted"]?.boolValue, case .array(let outstanding)? = json["outstanding"]
        else { throw SyncRecords.damaged("entity") }
        ref = EntityRef(type: type, id: id)
        server = try json["server"].map { value throws(SyncError) in try SyncRecords.remoteEntity(value) }
        guard let visible = json["visible"]?.objectValue ?? server?.fields else { throw SyncRecords.damaged("entity") }
        self.visible = visible
        self.visibleDeleted = visibleDeleted
        self.outstanding = outstanding.compactMap { $0.intValue.map { UInt64(bitPattern: Int64($0)) } }
        serverIsProvisional = json["provisional"] == .bool(true)
        if self.outstanding.isEmpty {
            changes = []
        } else if let stored = json["changes"] {
            changes = try OutstandingChange.changes(fromRuns: stored, expected: self.outstanding.count)
        } else {
            changes = nil  // written before they were kept: read from the entries when needed
        }
    }

    /// The base the outstanding change `sequence` goes against, when this record knows it (`.none` when it
    /// does not: read the entry).
    func base(of sequence: UInt64) -> Int?? {
        guard let changes, let index = outstanding.firstIndex(of: sequence) else { return .none }
        return .some(changes[index].base)
    }

    /// Reads ``changes`` from the outbox entries when this record does not hold them (an older record). An
    /// entry missing from the outbox (which a consistent vault never has) counts as a create against no
    /// version: what the user sees is then always rebuilt.
    mutating func loadChanges(from outbox: VaultRecords) throws {
        guard changes == nil else { return }
        changes = try outstanding.map { sequence in
            try SyncRecords.outboxEntry(SyncRecords.outboxID(sequence), in: outbox).map(OutstandingChange.init)
                ?? OutstandingChange(base: nil, kind: .create, names: [])
        }
    }

    /// Takes the settled change `sequence` off the list.
    mutating func removeOutstanding(_ sequence: UInt64) {
        while let index = outstanding.firstIndex(of: sequence) {
            outstanding.remove(at: index)
            changes?.remove(at: index)
        }
        if outstanding.isEmpty { changes = [] }
    }

    /// Records `replacement` in the place of the change it replaces (same sequence number).
    mutating func replace(with replacement: PendingMutation) {
        guard let index = outstanding.firstIndex(of: replacement.sequence) else { return }
        changes?[index] = OutstandingChange(replacement)
    }

    /// The bases of the changes after the first, as ranges of their sequence numbers (what the first change's
    /// entry carries: ``PendingMutation/laterBases``); empty when not known.
    var laterBases: LaterBases {
        guard let changes, changes.count > 1 else { return LaterBases() }
        var ranges: [LaterBases.Range] = []
        for (sequence, change) in zip(outstanding, changes).dropFirst() {
            if let last = ranges.last, last.base == change.base {
                ranges[ranges.count - 1].last = sequence
            } else {
                ranges.append(LaterBases.Range(first: sequence, last: sequence, base: change.base))
            }
        }
        return LaterBases(ranges: ranges)
    }

    /// Records that the outstanding change `sequence` goes against `base`.
    mutating func setBase(_ base: Int?, of sequence: UInt64) {
        guard let index = outstanding.firstIndex(of: sequence) else { return }
        changes?[index].base = base
    }

    /// A change made against `old` was applied as version `new`: the outstanding changes made against `old`
    /// (all of them unsent: see ``changes``) now go against `new`.
    mutating func rebase(from old: Int?, to new: Int) {
        guard var changes else { return }
        for index in changes.indices where changes[index].base == old { changes[index].base = new }
        self.changes = changes
    }

    /// Recomputes what the user sees: the server's fields, then each outstanding change in order.
    mutating func rebuild(with changes: [PendingMutation]) {
        visible = server?.fields ?? [:]
        visibleDeleted = server?.isDeleted ?? false
        for change in changes { apply(change) }
    }

    /// Adds `change` as the newest outstanding change: listed, and on top of what the user sees.
    mutating func add(_ change: PendingMutation) {
        if outstanding.isEmpty { changes = [] }
        outstanding.append(change.sequence)
        changes?.append(OutstandingChange(change))
        apply(change)
    }

    /// Brings what the user sees up to date after `change`, the first outstanding change, left the list and
    /// the server's copy went from `before` to the one this record holds now — without reading the later
    /// changes back from the outbox, when that can be done exactly; false when it cannot (then rebuild).
    ///
    /// When the new copy is the old one with exactly that change applied, nothing changes. Otherwise, when
    /// the later changes are all updates (``changes``), the fields where the new copy differs from that are
    /// the server's own doing (a timestamp it keeps, a value it normalized): those no later change sets show
    /// the server's value; one that a later change sets means a rebuild.
    mutating func settleFirst(_ change: PendingMutation, over before: RemoteEntity?) -> Bool {
        var expected = EntityRecord(ref: ref)
        expected.server = before
        expected.rebuild(with: [change])
        let fields = server?.fields ?? [:]
        let deleted = server?.isDeleted ?? false
        if expected.visible == fields && expected.visibleDeleted == deleted { return true }
        guard let changes, changes.allSatisfy({ $0.kind == .update }) else { return false }
        var differing: [String] = []
        for (name, value) in fields where expected.visible[name] != value { differing.append(name) }
        for (name, _) in expected.visible where fields[name] == nil { differing.append(name) }
        let set = Set(changes.flatMap(\.names))
        guard !differing.contains(where: set.contains) else { return false }
        for name in differing { visible[name] = fields[name] }
        // Later edits still outstanding show over a deletion, as a rebuild shows them (``apply(_:)``).
        visibleDeleted = deleted && changes.isEmpty
        return true
    }

    /// Puts one more change on top of what the user sees.
    mutating func apply(_ change: PendingMutation) {
        switch change.kind {
        case .create:
            // A new entity: nothing of a deleted one under the same id shows through.
            visibleDeleted = false
            visible = change.fields
        case .update:
            // An edit still outstanding shows, even over a deletion the server made meanwhile: the user's
            // change is not hidden before it is sent, and the push tells the two apart (a conflict). Found in
            // review: a pulled tombstone hid a pending (or conflicted) edit until the user decided.
            visibleDeleted = false
            for (name, value) in change.fields { visible[name] = value }
        case .delete:
            visibleDeleted = true
        }
    }
}
