import Foundation
import KeelContract
import KeelStore

/// The newest outbox entries, not yet folded into their entities' records.
///
/// An enqueue commits one row: the outbox entry. Writing the entity's local copy in the same transaction
/// would double what every enqueue writes and waits for on disk, so the entity records absorb new entries
/// later, a batch at a time ("folding"), in the transaction of the next write that needs them. Which
/// entries are folded is one number in the state dataset, `folded`: every entry with a sequence number up
/// to it is in its entity's record (its `outstanding` list and visible fields); every entry after it is in
/// the tail, and nowhere else. Readers put the tail on top of the records they read, in the same snapshot.
///
/// Why a kill cannot lose or double anything: an entry is durable when its enqueue commits, and a fold
/// writes the records it changes and the new `folded` number in one transaction, so after any kill every
/// entry is either in the tail or in its record — never both, never neither.
///
/// Why the tail stays well formed: only an enqueue adds to it (with numbers above every number in the
/// outbox and above `folded`), and every write that changes entity records, or sends, settles or removes
/// outbox entries, folds the tail first (retrying failed changes and recording a failed push touch only
/// entries a push took, which were folded before it took them). So a tail's entries are new, `pending`,
/// never sent — and two snapshots with the same `folded` number and the same last sequence number have the
/// same tail: the number only grows, and nothing leaves the tail without moving it. That is what lets the
/// engine keep a tail it read or wrote in memory and use it only after checking both numbers in the
/// transaction — or, for a tail an enqueue wrote, after finding the database's change stamp unchanged
/// (nothing at all was written since).
///
/// The mark is derived data: when it cannot be read, it is rebuilt from the records
/// (``recoveredMark(outbox:entities:)``). Engines before the tail did not know it: a vault this engine
/// wrote must not be opened by an older one (a downgrade), which would not see the tail.
struct OutboxTail: Sendable {
    /// The `folded` number: entries up to it are in their records.
    var folded: UInt64
    /// Whether `folded` is written down. A vault written before there was a tail has no number, and all of
    /// its entries are folded; the first enqueue writes it.
    var isStored: Bool
    /// The greatest sequence number in the outbox when read (0 when empty).
    var last: UInt64
    /// The entries after `folded`, in order.
    var entries: [PendingMutation]
    /// Where the database stood when this tail was written, taken after the last write of its transaction
    /// (set by enqueues, which write nothing after it): a transaction that finds the same stamp uses the
    /// tail without reading the mark and the last sequence number back. Nil: check those two.
    var stamp: DatabaseChangeStamp? = nil

    /// At most this many entries stay unfolded: the next enqueue beyond it folds them. Bounds what readers
    /// put on top, what a relaunch reads back, and the size of a fold's transaction.
    static let limit = 64

    static let key = "folded"

    /// The next sequence number to hand out: above every entry, and above every number already folded (the
    /// folded entries may have left the outbox since).
    var nextSequence: UInt64 { max(last, folded) + 1 }

    /// The version of the sync records' format this engine writes, kept with the mark; a mark of a later
    /// version (a newer Keel) is refused, never rewritten. 2: entity records keep their outstanding changes
    /// (their bases: ``EntityRecord/changes``), which an engine of format 1 would not read — it would send
    /// changes against the bases in their outbox entries, which acknowledgements no longer move. A mark of an
    /// earlier format is rewritten with this one at the next write, so that such an engine stops there.
    static let format = 2

    /// The tail as stored in a transaction — `cached` itself when it still describes it.
    ///
    /// A mark that cannot be read (a damaged record) is rebuilt from the records: it is derived data.
    static func read(
        outbox: VaultRecords, entities: VaultRecords, state: VaultRecords, cached: OutboxTail?,
        stamp: DatabaseChangeStamp? = nil
    ) throws -> OutboxTail {
        // Nothing was written to the database since `cached` was: it is the tail (DatabaseChangeStamp).
        if let stamp, let cached, cached.stamp == stamp { return cached }
        let last = try outbox.lastID().flatMap { UInt64($0) } ?? 0
        let folded: UInt64
        var isStored = true
        switch try storedMark(in: state) {
        case .absent: return OutboxTail(folded: last, isStored: false, last: last, entries: [])
        case .stored(let stored, let current):
            folded = stored
            isStored = current  // an earlier format: the next write stores the mark again, with this one
        case .unreadable:
            folded = try recoveredMark(outbox: outbox, entities: entities)
            isStored = false  // the next write stores it again
        }
        if isStored, let cached, cached.isStored, cached.folded == folded, cached.last == last { return cached }
        // At most `limit` entries, as long as the records match the outbox.
        let entries = try outbox.ids(after: SyncRecords.outboxID(folded), limit: .max).compactMap { id in
            try SyncRecords.outboxEntry(id, in: outbox)
        }
        return OutboxTail(folded: folded, isStored: isStored, last: last, entries: entries)
    }

    /// What the state dataset holds as the mark.
    private enum StoredMark {
        /// No mark: a vault from before the tail (everything folded).
        case absent
        /// The number, and whether it is of this engine's format (not an earlier one).
        case stored(UInt64, current: Bool)
        /// A record that cannot be opened or read as a mark.
        case unreadable
    }

    /// The stored mark.
    ///
    /// - Throws: ``SyncError`` `damagedRecord` for a mark a newer Keel wrote.
    private static func storedMark(in state: VaultRecords) throws -> StoredMark {
        let json: JSONValue
        do {
            guard let data = try state.get(key) else { return .absent }
            json = try SyncRecords.decode(data, "outbox fold mark")
        } catch {
            return .unreadable
        }
        if let version = json["format"]?.intValue, version > format {
            throw SyncError(
                code: .damagedRecord, subject: key,
                message: "the outbox was written by a newer version of Keel (format \(version)): update the app")
        }
        guard let through = json["through"]?.intValue.flatMap({ UInt64(exactly: $0) }) else { return .unreadable }
        return .stored(through, current: json["format"]?.intValue == format)
    }

    /// The mark rebuilt from the records: an outbox entry is folded exactly when its number is in its
    /// entity's `outstanding` list, and the unfolded entries are the newest (at most ``limit``). So the
    /// mark is the number of the newest entry that is folded.
    static func recoveredMark(outbox: VaultRecords, entities: VaultRecords) throws -> UInt64 {
        let newest = try outbox.ids().suffix(limit + 1)
        for id in newest.reversed() {
            guard let entry = try SyncRecords.outboxEntry(id, in: outbox) else { continue }
            if let record = try SyncEngine.entity(entry.entity, in: entities),
                record.outstanding.contains(entry.sequence)
            {
                return entry.sequence
            }
        }
        // Nothing folded among more entries than a tail holds: the records do not match the outbox.
        guard newest.count <= limit else { throw SyncRecords.damaged("outbox fold mark") }
        return 0  // every entry present is unfolded
    }

    /// Writes the `folded` number.
    static func mark(_ folded: UInt64, in state: VaultRecords) throws {
        try state.put(
            key,
            SyncRecords.encode([
                "through": .number(JSONNumber(Int64(bitPattern: folded))),
                "format": .number(JSONNumber(Int64(format))),
            ]))
    }

    /// `record` with the tail's entries of its entity on top.
    func overlay(_ record: EntityRecord) -> EntityRecord {
        Self.overlay(record, entries.lazy.filter { $0.entity == record.ref })
    }

    /// `record` with `changes` (the tail's entries of its entity, in order) on top.
    static func overlay(_ record: EntityRecord, _ changes: some Sequence<PendingMutation>) -> EntityRecord {
        var result = record
        for entry in changes { result.add(entry) }
        return result
    }

    /// `record`, or a new record when the tail creates the entity, with the tail's entries on top; nil when
    /// neither has it.
    func overlay(_ record: EntityRecord?, _ ref: EntityRef) -> EntityRecord? {
        if let record { return overlay(record) }
        guard entries.contains(where: { $0.entity == ref }) else { return nil }
        return overlay(EntityRecord(ref: ref))
    }

    /// Folds the tail into the entity records and moves `folded` past it; afterwards the tail is empty.
    /// Every write that changes records or sends, settles or removes entries calls this first (see the
    /// type's comment).
    @discardableResult
    static func fold(outbox: VaultRecords, entities: VaultRecords, state: VaultRecords, cached: OutboxTail?) throws
        -> OutboxTail
    {
        try fold(
            read(outbox: outbox, entities: entities, state: state, cached: cached), outbox: outbox, entities: entities,
            state: state)
    }

    /// Folds `tail`, which this transaction has read (``read(outbox:entities:state:cached:stamp:)``), so it is
    /// not checked against the vault again.
    static func fold(_ tail: OutboxTail, outbox: VaultRecords, entities: VaultRecords, state: VaultRecords) throws
        -> OutboxTail
    {
        var records: [EntityRef: EntityRecord] = [:]
        for entry in tail.entries {
            var record =
                try records[entry.entity]
                ?? SyncEngine.entity(
                    entry.entity, forWritingIn: entities, outbox: outbox, state: state, folded: tail.folded)
                ?? EntityRecord(ref: entry.entity)
            record.add(entry)
            records[entry.entity] = record
        }
        for record in records.values { try entities.put(record.recordID, SyncRecords.encode(record.json)) }
        let folded = max(tail.folded, tail.entries.last?.sequence ?? 0)
        if !tail.isStored || folded != tail.folded { try mark(folded, in: state) }
        return OutboxTail(folded: folded, isStored: true, last: tail.last, entries: [])
    }
}

extension OutboxTail {
    /// ``fold(outbox:entities:state:cached:)`` in a transaction over the engine's datasets.
    @discardableResult
    static func fold(in transaction: VaultTransaction, _ storage: SyncStorage, cached: OutboxTail?) throws
        -> OutboxTail
    {
        try fold(
            outbox: transaction.records(storage.outbox), entities: transaction.records(storage.entities),
            state: transaction.records(storage.state), cached: cached)
    }

    /// Whether `self` describes a later state than `other` (for keeping the newest tail in memory).
    func isNewer(than other: OutboxTail?) -> Bool {
        guard let other else { return true }
        return (folded, last) > (other.folded, other.last)
    }
}
