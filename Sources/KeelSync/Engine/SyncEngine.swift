public import Foundation
public import KeelContract
public import KeelCore
public import KeelHTTP
public import KeelStore
import KeelCrypto

/// An entity as the app shows it: the server's version with this device's outstanding changes on top, and
/// where those changes stand.
public struct SyncedEntity: Sendable, Hashable {
    /// Which entity.
    public let ref: EntityRef
    /// Its fields as the user sees them.
    public let fields: JSONObject
    /// Whether it is deleted (on this device or on the server).
    public let isDeleted: Bool
    /// The server's version of it; nil when the server has not confirmed it yet.
    public let serverVersion: Int?
    /// `synced` when no change of it is outstanding; otherwise the state of the change that most needs
    /// attention (conflicted, failed, sending, pending).
    public let state: ItemState
    /// Why its change failed, when ``state`` is `failed` (or why the last attempt did not get through).
    public let failure: SyncFailure?
    /// How many of its changes are outstanding.
    public let outstandingChanges: Int
    /// The conflict to resolve, when ``state`` is `conflicted`.
    public let conflictID: String?
}

/// What one sync run did.
public struct SyncReport: Sendable {
    /// Changes the server acknowledged (applied now or before).
    public internal(set) var acknowledged = 0
    /// Conflicts found: settled by a policy or kept for a person.
    public internal(set) var conflicts = 0
    /// Changes the server refused: answered `rejected` in a batch, or refused when sent alone (a batch refused
    /// as a whole is sent again in halves until that change is found). Each is `failed`.
    public internal(set) var rejected = 0
    /// Entities received from the changes feed.
    public internal(set) var pulled = 0
    /// Whether the run reached the end: everything sendable sent and the feed read to its end.
    public internal(set) var isComplete = false
    /// Why it stopped early, when a call failed.
    public internal(set) var failure: SyncFailure?
    /// Answers that arrived after the engine was stopped (its account was switched away) and were dropped.
    public internal(set) var droppedAnswers = 0
    /// The vault error that ended the run, when one did (``failure`` is then `technical`, `notSent`).
    public internal(set) var storageError: SyncError?
    /// Whether the server did not know the stored cursor (``SyncRemote/rejectsCursor(_:)``) and the feed was
    /// pulled again from its start.
    public internal(set) var restartedPull = false

    /// A report as a run would give it — for testing and previewing what an app makes of one; the engine's
    /// runs make the real ones.
    public init(
        acknowledged: Int = 0, conflicts: Int = 0, rejected: Int = 0, pulled: Int = 0, isComplete: Bool = false,
        failure: SyncFailure? = nil, droppedAnswers: Int = 0, storageError: SyncError? = nil,
        restartedPull: Bool = false
    ) {
        self.acknowledged = acknowledged
        self.conflicts = conflicts
        self.rejected = rejected
        self.pulled = pulled
        self.isComplete = isComplete
        self.failure = failure
        self.droppedAnswers = droppedAnswers
        self.storageError = storageError
        self.restartedPull = restartedPull
    }
}

/// One account's sync: a durable outbox, pushes with idempotency keys, a resumable pull, conflicts settled by
/// declared policies, freshness against the offline scenarios — all in the account's vault (MOB-DATA-004,
/// MOB-DATA-005, MOB-DATA-006).
///
/// - **Durable before it returns.** ``create(_:id:fields:operation:)``, ``update(_:id:fields:operation:)`` and
///   ``delete(_:id:operation:)`` commit the outbox entry before they return; the app can be killed right
///   after. Every read shows the change at once; the entity's stored record takes it with a later write
///   (the outbox tail, see the sync guide).
/// - **Honest states.** A change is `pending`, `sending`, `failed` or `conflicted` until the server
///   acknowledges it; only then is it `synced`.
/// - **Exactly once in effect.** Each change carries an idempotency key made once; after a relaunch,
///   changes left `sending` are sent again with the same key, and the server applies each key once.
/// - **In order per entity**, one change per entity per batch; a later change moves to the version the
///   earlier one produced.
/// - **Never silent last-write-wins.** A conflict is settled by the type's declared ``ConflictPolicy``;
///   `manual` keeps both versions in a ``ConflictRecord`` until ``resolve(_:with:)``.
/// - **Fenced by account.** ``stop()`` cancels the calls in flight and waits until the engine is idle;
///   answers that arrive for a stopped engine are written nowhere, and the vault itself refuses writes once
///   its account is switched away.
public actor SyncEngine {
    /// The account's vault.
    public nonisolated let vault: Vault
    /// The conflict policies.
    public nonisolated let policies: ConflictPolicies
    /// The offline scenarios.
    public nonisolated let offline: OfflineContract
    /// The vault datasets used.
    public nonisolated let storage: SyncStorage

    let remote: any SyncRemote
    let clock: WallClock
    let random: RandomSource
    let batchSize: Int
    let pullLimit: Int

    /// The changes of the batch on its way now: `sending`. The outbox entries are not rewritten for it; a
    /// small in-flight record (``markInFlight(_:)``) keeps the fact across a kill.
    private var inFlight: Set<String> = []
    /// The most changes the next batch of this run takes: ``batchSize``, halved each time the backend refuses a
    /// batch of several as a whole (``splitsOnRefusal(_:)``), doubled back after each acknowledged batch.
    private var pushLimit = 100
    private var stopped = false
    private var running: Task<SyncReport, Never>?
    /// The newest outbox tail this engine wrote or read (``OutboxTail``): used by a transaction only after it
    /// checked that the vault still holds exactly this tail, so another engine or process on the vault is no
    /// risk.
    private var tail: OutboxTail?
    /// What the engine knows about the network.
    public private(set) var connectivity: Connectivity = .unknown

    /// An engine for the account of `vault`.
    ///
    /// - Parameters:
    ///   - batchSize: at most this many changes per push (1...100).
    ///   - pullLimit: at most this many changes per pulled page.
    /// - Throws: ``SyncError`` `noConflictPolicy` when a scenario shows an entity type without a policy;
    ///   `invalidDeclaration` when a scenario names a queue other than this engine's outbox (its changes
    ///   would not wait where the declaration says).
    public init(
        vault: Vault, remote: any SyncRemote, policies: ConflictPolicies, offline: OfflineContract,
        storage: SyncStorage = .default, clock: WallClock = .system, random: RandomSource = .system,
        batchSize: Int = 100, pullLimit: Int = 200
    ) throws(SyncError) {
        for scenario in offline.scenarios {
            guard scenario.queue == storage.outbox else {
                throw SyncError(
                    code: .invalidDeclaration, subject: scenario.name,
                    message:
                        "scenario \(scenario.name) declares the queue \(scenario.queue), but this engine's outbox is \(storage.outbox)"
                )
            }
            if let type = scenario.entityTypes.sorted().first(where: { policies.policy(for: $0) == nil }) {
                throw SyncError(
                    code: .noConflictPolicy, subject: type,
                    message:
                        "scenario \(scenario.name) shows \(type), which has no conflict policy: it cannot be synced")
            }
        }
        self.vault = vault
        self.remote = remote
        self.policies = policies
        self.offline = offline
        self.storage = storage
        self.clock = clock
        self.random = random
        self.batchSize = min(max(batchSize, 1), 100)
        self.pullLimit = max(pullLimit, 1)
    }

    // MARK: - Local changes

    /// Creates entity `id` of `type` with `fields`, through the outbox.
    ///
    /// - Throws: ``SyncError``: `offline` / `notOfflineCapable` when no scenario declares `operation`,
    ///   `noConflictPolicy`, `invalidChange` when the entity exists here or `type` is not among the data of
    ///   the operation's scenario, `stopped`, `storage`.
    @discardableResult
    public func create(_ type: String, id: String, fields: JSONObject, operation: String) async throws(SyncError)
        -> PendingMutation
    {
        try await enqueue(.create, EntityRef(type: type, id: id), fields: fields, operation: operation)
    }

    /// Sets `fields` of entity `id` of `type`, through the outbox.
    ///
    /// - Throws: as ``create(_:id:fields:operation:)``; `invalidChange` when the entity does not exist here.
    @discardableResult
    public func update(_ type: String, id: String, fields: JSONObject, operation: String) async throws(SyncError)
        -> PendingMutation
    {
        try await enqueue(.update, EntityRef(type: type, id: id), fields: fields, operation: operation)
    }

    /// Deletes entity `id` of `type`, through the outbox.
    ///
    /// - Throws: as ``update(_:id:fields:operation:)``.
    @discardableResult
    public func delete(_ type: String, id: String, operation: String) async throws(SyncError) -> PendingMutation {
        try await enqueue(.delete, EntityRef(type: type, id: id), fields: [:], operation: operation)
    }

    private func enqueue(_ kind: MutationKind, _ ref: EntityRef, fields: JSONObject, operation: String)
        async throws(SyncError) -> PendingMutation
    {
        try await enqueue([LocalChange(kind: kind, entity: ref, fields: fields)], operation: operation)[0]
    }

    /// Puts several changes into the outbox in one transaction — all of them or none (an import, "delete
    /// these 20 notes") — and returns them in order.
    ///
    /// - Throws: as ``create(_:id:fields:operation:)``, for the first change that cannot be made; then
    ///   nothing is queued.
    @discardableResult
    public func enqueue(_ changes: [LocalChange], operation: String) async throws(SyncError) -> [PendingMutation] {
        try requireRunning()
        guard !changes.isEmpty else { return [] }
        // Nothing can address an entity without a type and an id (the backend refuses the whole batch).
        if let nameless = changes.first(where: { $0.entity.type.isEmpty || $0.entity.id.isEmpty }) {
            throw SyncError(
                code: .invalidChange, subject: nameless.entity.description, message: "an entity needs a type and an id")
        }
        let types = changes.count == 1 ? [changes[0].entity.type] : Set(changes.map(\.entity.type)).sorted()
        for type in types where policies.policy(for: type) == nil {
            throw SyncError(
                code: .noConflictPolicy, subject: type, message: "\(type) has no conflict policy: it cannot be synced")
        }
        guard let scenario = offline.scenario(for: operation) else {
            // Unless the engine knows it is online (a sync got through), the user is told the operation is not
            // available offline: at a launch without network nothing has failed yet, and it must not be queued.
            if connectivity != .online {
                throw SyncError(
                    code: .offline, subject: operation, message: "\(operation) is not available offline")
            }
            throw SyncError(
                code: .notOfflineCapable, subject: operation,
                message: "no offline scenario declares \(operation): send it with the HTTP client instead of the outbox"
            )
        }
        // The scenario says which data its operations change: a change of another type would sync data the
        // declaration does not show, with no staleness and no state display declared for it.
        if let stray = changes.first(where: { !scenario.entityTypes.contains($0.entity.type) }) {
            throw SyncError(
                code: .invalidChange, subject: stray.entity.description,
                message:
                    "\(operation) belongs to scenario \(scenario.name), which declares the data \(scenario.entityTypes.sorted().joined(separator: ", ")), not \(stray.entity.type)"
            )
        }
        let now = clock.now()
        let identities = changes.map { _ in
            (
                random.uuidString(timeOrderedAt: now), IdempotencyKey.make(using: random),
                CorrelationID.make(using: random)
            )
        }
        let storage = storage
        // The engine hands its tail over to this transaction: held nowhere else, the tail's entries are then
        // appended to in place instead of copied (up to `OutboxTail.limit` of them) on every enqueue. A call
        // that fails leaves the engine without a tail; the next one reads it from the vault.
        let handedOver = Locked(tail)
        tail = nil
        let (queued, written) = try await storageCall {
            try await self.vault.write(storage.all, inline: true) { transaction in
                let outbox = try transaction.records(storage.outbox)
                let entities = try transaction.records(storage.entities)
                let state = try transaction.records(storage.state)
                var tail = try OutboxTail.read(
                    outbox: outbox, entities: entities, state: state,
                    cached: handedOver.withLock { taken in
                        defer { taken = nil }
                        return taken
                    }, stamp: transaction.changeStamp())
                if tail.entries.count + changes.count > OutboxTail.limit {
                    tail = try OutboxTail.fold(tail, outbox: outbox, entities: entities, state: state)
                }
                // More changes than a tail holds (an import): they go into their records at once.
                let folding = changes.count > OutboxTail.limit
                // Numbers are taken inside the transaction (the writer is serialized): never twice, even for
                // enqueues that race. A number whose entry left may be handed out again once it is folded;
                // nothing refers to a settled entry by its number alone (states and settlements go by the
                // mutation's id).
                var sequence = tail.nextSequence
                var records: [EntityRef: EntityRecord] = [:]
                var queued: [PendingMutation] = []
                for (change, identity) in zip(changes, identities) {
                    let ref = change.entity
                    var record =
                        try records[ref]
                        ?? tail.overlay(
                            Self.entity(
                                ref, forWritingIn: entities, outbox: outbox, state: state, folded: tail.folded), ref)
                        ?? EntityRecord(ref: ref)
                    switch change.kind {
                    case .create where record.exists:
                        throw SyncError(code: .invalidChange, subject: ref.description, message: "it exists already")
                    case .update where !record.exists, .delete where !record.exists:
                        throw SyncError(
                            code: .invalidChange, subject: ref.description, message: "it does not exist here")
                    default: break
                    }
                    // Made against the newest version this device knows: nil on top of a create the server
                    // has not confirmed, the tombstone's version for a create over a known deletion.
                    // Acknowledging an earlier outstanding change moves this base along.
                    // A create over a deletion of this device not confirmed yet is made against the version
                    // that deletion is based on: acknowledging the deletion moves it to the tombstone's.
                    // Behind an earlier change of the entity still outstanding, a change is made against that
                    // change's base, not a newer server version a pull or a conflict answer brought meanwhile:
                    // its `previous` holds the earlier change's values, never that version's. If the earlier
                    // change leaves unapplied (discarded, resolved as theirs, dropped by serverWins), the server
                    // then answers with a conflict and the fields are judged against what the user saw — instead
                    // of an edit of another device being overwritten without a word. (Acknowledging the earlier
                    // change moves the base along, as for any change behind it.)
                    let baseVersion: Int? =
                        switch change.kind {
                        case .create:
                            record.server.flatMap { $0.isDeleted || record.visibleDeleted ? $0.version : nil }
                        case .update, .delete:
                            try record.outstanding.first.flatMap { record.base(of: $0) }
                                ?? Self.base(
                                    ofEarliest: record.outstanding.first, queued: queued, tail: tail.entries,
                                    outbox: outbox) ?? record.server?.version
                        }
                    // The values the change replaces, as this device saw them: the base of a three-way merge.
                    var previous = JSONObject()
                    for (name, _) in change.fields {
                        if let value = record.visible[name] { previous[name] = value }
                    }
                    let mutation = PendingMutation(
                        id: identity.0, idempotencyKey: identity.1, correlationID: identity.2, entity: ref,
                        kind: change.kind, baseVersion: baseVersion, fields: change.fields, previous: previous,
                        operation: operation, createdAt: now, sequence: sequence)
                    sequence += 1
                    try outbox.put(SyncRecords.outboxID(mutation.sequence), SyncRecords.encode(mutation))
                    record.add(mutation)
                    records[ref] = record
                    queued.append(mutation)
                }
                tail.last = sequence - 1
                if folding {
                    // The tail was folded above: these records are written whole and the mark moves past them.
                    for record in records.values {
                        try entities.put(record.recordID, SyncRecords.encode(record.json))
                    }
                    try OutboxTail.mark(tail.last, in: state)
                    return (
                        queued,
                        OutboxTail(
                            folded: tail.last, isStored: true, last: tail.last, entries: [],
                            stamp: try transaction.changeStamp())
                    )
                }
                // The common case: one row, the outbox entry; the records take it at the next fold.
                if !tail.isStored {
                    try OutboxTail.mark(tail.folded, in: state)
                    tail.isStored = true
                }
                tail.entries += queued
                // After the last write: the next enqueue finds this stamp unless something else wrote.
                tail.stamp = try transaction.changeStamp()
                return (queued, tail)
            }
        }
        remember(written)
        return queued
    }

    /// The base version of the outstanding change numbered `sequence` (from the changes of this call, the
    /// tail, or the outbox); `.none` when there is none (no change outstanding), `.some(nil)` for a change
    /// made against no version (a create).
    private static func base(
        ofEarliest sequence: UInt64?, queued: [PendingMutation], tail: [PendingMutation], outbox: VaultRecords
    ) throws -> Int?? {
        guard let sequence else { return .none }
        if let change = queued.first(where: { $0.sequence == sequence })
            ?? tail.first(where: { $0.sequence == sequence })
        {
            return .some(change.baseVersion)
        }
        guard let entry = try SyncRecords.outboxEntry(SyncRecords.outboxID(sequence), in: outbox) else { return .none }
        return .some(entry.baseVersion)
    }

    // MARK: - Reading

    /// Entity `id` of `type` as the user sees it, or nil when this device has never had it.
    public func entity(_ type: String, id: String) async throws(SyncError) -> SyncedEntity? {
        try await entity(type, id: id, repairing: true)
    }

    private func entity(_ type: String, id: String, repairing: Bool) async throws(SyncError) -> SyncedEntity? {
        try requireRunning()
        let storage = storage
        let sending = inFlight
        let cached = tail
        let ref = EntityRef(type: type, id: id)
        let (found, read, damaged) = try await storageCall {
            try await self.vault.read(storage.all) { transaction -> (SyncedEntity?, OutboxTail, Bool) in
                let outbox = try transaction.records(storage.outbox)
                let entities = try transaction.records(storage.entities)
                let state = try transaction.records(storage.state)
                let tail = try OutboxTail.read(outbox: outbox, entities: entities, state: state, cached: cached)
                let stored: EntityRecord?
                do { stored = try Self.entity(ref, in: entities) } catch  where repairing && Self.isDamage(error) {
                    return (nil, tail, true)
                }
                guard let record = tail.overlay(stored, ref), record.isKnown else { return (nil, tail, false) }
                // Changes a killed push left without an answer read `sending`, as in `entities(_:)`.
                let sending = try sending.union(Self.unconfirmed(in: state))
                return (try Self.synced(record, outbox: outbox, sending: sending), tail, false)
            }
        }
        remember(read)
        // A damaged record is set aside (as in `entities(_:)`) and the entity read again.
        if damaged {
            try await setAside([ref])
            return try await entity(type, id: id, repairing: false)
        }
        return found
    }

    /// The records found damaged on disk (they did not open, or opened to something that is not a record),
    /// sorted:
    /// - entity records set aside so that sync could go on, by the key their stored bytes are kept under
    ///   (`damaged:note/7`); the entities were rebuilt from their changes in the outbox and the server's copy;
    /// - outbox entries, left where they are (`damaged:outbox/00000000000000000012`): never sent, since their
    ///   content is unknown, and skipped by every read and write (sync of everything else goes on);
    /// - conflict records, left where they are (`damaged:conflict/<change id>`): ``conflicts()`` leaves them
    ///   out, and their changes stay `conflicted` until discarded;
    /// - a push's in-flight marker, set aside by the next push (`damaged:inflight:<key>`), which took every
    ///   entity's first change as sent without a known answer.
    ///
    /// A damaged pull cursor or freshness record is not listed: derived data, it is read as absent (the feed
    /// is read from the start; the data shows as never pulled) and written again by the next pull. Nothing
    /// was deleted.
    public func damagedRecords() async throws(SyncError) -> [String] {
        try requireRunning()
        let storage = storage
        return try await storageCall {
            try await self.vault.read([storage.state, storage.outbox, storage.conflicts]) { transaction in
                let state = try transaction.records(storage.state)
                var found: [String] = []
                var after = DamagedRecords.prefix
                while true {
                    let page = try state.ids(after: after, limit: 100)
                    let keys = page.prefix { $0.hasPrefix(DamagedRecords.prefix) }
                    found += keys
                    guard keys.count == 100, let last = keys.last else { break }
                    after = last
                }
                let outbox = try transaction.records(storage.outbox)
                for id in try outbox.ids() where try SyncRecords.outboxEntry(id, in: outbox) == nil {
                    // Listed, so present: it did not open or decode.
                    found.append(DamagedRecords.prefix + "outbox/" + id)
                }
                let conflicts = try transaction.records(storage.conflicts)
                for id in try conflicts.ids() {
                    let readable = try Self.undamaged {
                        try conflicts.get(id).map {
                            try ConflictRecord(json: SyncRecords.decode($0, "conflict record"))
                        }
                    }
                    if readable == nil { found.append(DamagedRecords.prefix + "conflict/" + id) }
                }
                return found.sorted()
            }
        }
    }

    /// Every entity of `type` this device has, deleted ones included (check ``SyncedEntity/isDeleted``),
    /// sorted by id. A record damaged on disk is set aside first (``damagedRecords()``): the entity shows
    /// what waits in the outbox for it, and comes back whole with the next pull.
    public func entities(_ type: String) async throws(SyncError) -> [SyncedEntity] {
        try await entities(type, repairing: true)
    }

    private func entities(_ type: String, repairing: Bool) async throws(SyncError) -> [SyncedEntity] {
        try requireRunning()
        let storage = storage
        let sending = inFlight
        let cached = tail
        let (found, read, damaged) = try await storageCall {
            try await self.vault.read(storage.all) { transaction -> ([SyncedEntity], OutboxTail, [EntityRef]) in
                let entities = try transaction.records(storage.entities)
                let outbox = try transaction.records(storage.outbox)
                let state = try transaction.records(storage.state)
                let tail = try OutboxTail.read(outbox: outbox, entities: entities, state: state, cached: cached)
                let sending = try sending.union(Self.unconfirmed(in: state))
                // The tail's changes of this type, by entity, in order.
                var changes: [EntityRef: [PendingMutation]] = [:]
                for entry in tail.entries where entry.entity.type == type {
                    changes[entry.entity, default: []].append(entry)
                }
                var result: [SyncedEntity] = []
                var damaged: [EntityRef] = []
                var after: String? = type + "/"
                paging: while true {
                    let ids = try entities.ids(after: after, limit: 500)
                    for id in ids {
                        guard id.hasPrefix(type + "/") else { break paging }
                        let record: EntityRecord
                        do {
                            guard let data = try entities.get(id) else { continue }
                            record = try EntityRecord(json: SyncRecords.decode(data, "entity"))
                        } catch  where Self.isDamage(error) {
                            // One damaged record does not hide every other entity: it is set aside below.
                            damaged.append(EntityRef(type: type, id: String(id.dropFirst(type.count + 1))))
                            continue
                        }
                        let shown = OutboxTail.overlay(record, changes.removeValue(forKey: record.ref) ?? [])
                        guard shown.isKnown else { continue }
                        result.append(try Self.synced(shown, outbox: outbox, sending: sending))
                    }
                    guard let last = ids.last, ids.count == 500 else { break }
                    after = last
                }
                // What is left are entities the tail creates: they have no record yet.
                guard !changes.isEmpty else { return (result, tail, damaged) }
                for (ref, created) in changes {
                    let record = OutboxTail.overlay(EntityRecord(ref: ref), created)
                    result.append(try Self.synced(record, outbox: outbox, sending: sending))
                }
                // In the records' order: their ids' UTF-8 bytes.
                return (result.sorted { $0.ref.id.utf8.lexicographicallyPrecedes($1.ref.id.utf8) }, tail, damaged)
            }
        }
        remember(read)
        // Damaged records are set aside (their bytes kept, the entities rebuilt from the outbox, the server's
        // copies asked for again by the next pull), and the list is read once more.
        if repairing, !damaged.isEmpty {
            try await setAside(damaged)
            return try await entities(type, repairing: false)
        }
        return found
    }

    /// Sets the damaged records of `refs` aside (``entity(_:forWritingIn:outbox:state:folded:)``).
    private func setAside(_ refs: [EntityRef]) async throws(SyncError) {
        let storage = storage
        let cached = tail
        try await storageCall {
            try await self.vault.write(storage.all, inline: true) { transaction in
                let (folded, outbox, entities, state) = try Self.folded(transaction, storage, cached: cached)
                for ref in refs {
                    _ = try Self.entity(ref, forWritingIn: entities, outbox: outbox, state: state, folded: folded)
                }
            }
        }
    }

    /// Keeps `read` as the tail to try first, when it is newer than the one kept.
    private func remember(_ read: OutboxTail) {
        if read.isStored, read.isNewer(than: tail) { tail = read }
    }

    /// Where `mutation` stands now: its outbox state, `synced` once the server applied it, or nil when it
    /// was settled otherwise (see ``settlement(of:)``) or is unknown.
    public func state(of mutation: PendingMutation) async throws(SyncError) -> ItemState? {
        try requireRunning()
        let storage = storage
        let (current, unconfirmed) = try await storageCall {
            try await self.vault.read([storage.outbox, storage.state]) { transaction in
                (
                    try SyncRecords.outboxEntry(
                        SyncRecords.outboxID(mutation.sequence), in: transaction.records(storage.outbox)),
                    try Self.unconfirmed(in: transaction.records(storage.state))
                )
            }
        }
        if let current, current.id == mutation.id {
            return inFlight.contains(current.id) || unconfirmed.contains(current.id) ? .sending : current.state
        }
        if case .applied? = try await settlement(of: mutation.id) { return .synced }
        return nil
    }

    /// What became of a mutation that left the outbox; nil while it is outstanding (or unknown).
    public func settlement(of mutationID: String) async throws(SyncError) -> Settlement? {
        try requireRunning()
        let storage = storage
        return try await storageCall {
            try await self.vault.read(storage.state) { state in
                guard let data = try state.get("settled:" + mutationID) else { return nil }
                return try SyncRecords.settlement(SyncRecords.decode(data, "settlement"))
            }
        }
    }

    /// Forgets the settlements of changes settled before `date` (``settlement(of:)`` then answers nil for
    /// them), so that the state dataset — one small record per change ever made — does not grow for ever. Call
    /// it with a date older than anything the app may still ask about (a week, say). A settlement that cannot
    /// be read is kept. Returns how many were forgotten.
    @discardableResult
    public func forgetSettlements(before date: Date) async throws(SyncError) -> Int {
        try requireRunning()
        let storage = storage
        let cutoff = date.timeIntervalSince1970
        return try await storageCall {
            try await self.vault.write(storage.state, inline: true) { state in
                var forgotten = 0
                var after = "settled:"
                while true {
                    let page = try state.ids(after: after, limit: 500)
                    for id in page where id.hasPrefix("settled:") {
                        guard let data = try? state.get(id), let json = try? SyncRecords.decode(data, "settlement"),
                            let at = json["at"]?.doubleValue, at < cutoff
                        else { continue }
                        try state.delete(id)
                        forgotten += 1
                    }
                    guard let last = page.last, last.hasPrefix("settled:"), page.count == 500 else { break }
                    after = last
                }
                return forgotten
            }
        }
    }

    /// The outstanding changes, oldest first (at most `limit`). A change that is out — in the batch being
    /// pushed, or in one a killed push left without an answer — reads `sending`, as in ``entity(_:id:)``.
    public func outbox(limit: Int = 1000) async throws(SyncError) -> [PendingMutation] {
        try requireRunning()
        let storage = storage
        let sending = inFlight
        return try await storageCall {
            try await self.vault.read([storage.outbox, storage.entities, storage.state]) { transaction in
                let outbox = try transaction.records(storage.outbox)
                let entities = try transaction.records(storage.entities)
                let sending = try sending.union(Self.unconfirmed(in: transaction.records(storage.state)))
                // Each entity's record, read once (nil: none, or damaged).
                var records: [EntityRef: EntityRecord?] = [:]
                func record(of ref: EntityRef) throws -> EntityRecord? {
                    if let known = records[ref] { return known }
                    let read = try Self.undamaged { try Self.entity(ref, in: entities) }
                    records[ref] = .some(read)
                    return read
                }
                return try outbox.ids(after: nil, limit: limit).compactMap { id in
                    try SyncRecords.outboxEntry(id, in: outbox).map { found in
                        var entry = found
                        if entry.state == .pending, sending.contains(entry.id) { entry.state = .sending }
                        // An unsent change goes against the base its entity's record holds (EntityRecord.changes).
                        if entry.attempts == 0,
                            case .some(let base) = try record(of: entry.entity)?.base(of: entry.sequence)
                        {
                            entry.baseVersion = base
                        }
                        return entry
                    }
                }
            }
        }
    }

    /// How many changes are outstanding (what a sign-out would lose).
    public func outstandingCount() async throws(SyncError) -> Int {
        try requireRunning()
        let storage = storage
        return try await storageCall { try await self.vault.read(storage.outbox) { try $0.count() } }
    }

    /// The conflicts waiting for a person, oldest first.
    public func conflicts() async throws(SyncError) -> [ConflictRecord] {
        try requireRunning()
        let storage = storage
        return try await storageCall {
            try await self.vault.read(storage.conflicts) { conflicts in
                // A damaged record is left out (and listed by `damagedRecords()`), not the reason no conflict
                // can be shown: its change stays `conflicted`, and can be discarded.
                try conflicts.ids().compactMap { id in
                    try Self.undamaged {
                        try conflicts.get(id).map {
                            try ConflictRecord(json: SyncRecords.decode($0, "conflict record"))
                        }
                    }
                }.sorted { $0.mutation.sequence < $1.mutation.sequence }
            }
        }
    }

    /// How fresh the data of `entityType` is, against the strictest scenario that shows it.
    public func freshness(of entityType: String) async throws(SyncError) -> Freshness {
        try requireRunning()
        let storage = storage
        let lastPull = try await storageCall {
            try await self.vault.read(storage.state) { state in
                // A damaged record says nothing of when the data was pulled: never, as far as the user is told
                // (stale), until the next pull writes it again.
                try Self.undamaged {
                    try state.get("pulled:" + entityType).flatMap { data -> Date? in
                        try SyncRecords.decode(data, "freshness")["at"]?.doubleValue.map {
                            Date(timeIntervalSince1970: $0)
                        }
                    }
                }
            }
        }
        let age = lastPull.map { Duration.seconds(clock.now().timeIntervalSince($0)) }
        return Freshness(lastPull: lastPull, age: age, maximumStaleness: offline.maximumStaleness(of: entityType))
    }

    // MARK: - Sync

    /// Pushes every sendable change, then pulls the changes feed to its end; stops at the first call that
    /// fails (the report says why). Runs one at a time: a call made while another runs waits for it.
    @discardableResult
    public func sync() async -> SyncReport { await perform(push: true, pull: true) }

    /// Pushes every sendable change (no pull).
    @discardableResult
    public func push() async -> SyncReport { await perform(push: true, pull: false) }

    /// Pulls the changes feed to its end (no push).
    @discardableResult
    public func pull() async -> SyncReport { await perform(push: false, pull: true) }

    /// Runs in a task of its own, so that ``stop()`` can cancel the calls in flight and wait for it.
    private func perform(push: Bool, pull: Bool) async -> SyncReport {
        while let running { _ = await running.value }
        guard !stopped else { return SyncReport() }
        let task = Task { await self.run(push: push, pull: pull) }
        running = task  // before the task can start: it needs this actor, which is busy until the await below
        return await task.value
    }

    /// Syncs when a scenario declares `condition`; returns nil when none does.
    @discardableResult
    public func handle(_ condition: SyncCondition) async -> SyncReport? {
        guard offline.syncs(on: condition) else { return nil }
        return await sync()
    }

    /// The app's report of the network: going from offline to reachable syncs when a scenario declares
    /// `connectivityRegained`.
    @discardableResult
    public func connectivityChanged(reachable: Bool) async -> SyncReport? {
        let was = connectivity
        connectivity = reachable ? (was == .online ? .online : .unknown) : .offline
        guard reachable, was == .offline else { return nil }
        return await handle(.connectivityRegained)
    }

    /// Syncs every ``OfflineContract/periodicInterval`` on `clock` until the engine stops or the task is
    /// cancelled. Returns at once when no scenario syncs periodically.
    public func runPeriodically(clock: any Clock<Duration>) async {
        guard let interval = offline.periodicInterval else { return }
        while !stopped, !Task.isCancelled {
            do { try await clock.sleep(for: interval, tolerance: nil) } catch { return }
            guard !stopped else { return }
            await sync()
        }
    }

    /// Stops the engine for good (its account is being switched away or signed out): cancels the calls in
    /// flight, waits until nothing runs, and refuses every later call with `stopped`. Answers that still
    /// arrive are dropped.
    public func stop() async {
        stopped = true
        running?.cancel()
        if let running { _ = await running.value }
    }

    /// Whether ``stop()`` was called.
    public var isStopped: Bool { stopped }

    /// Moves every failed change back to pending (after the user signed in again or fixed the cause) — with
    /// `kinds`, only those that failed for one of them (after a new sign-in, those refused with
    /// `authentication`: a change the server refused for its content would only be refused again). A change
    /// the server refused on its own (not with its whole batch) goes again as a new change with a new
    /// idempotency key — under the old key the backend would replay its refusal — and the old one is settled
    /// as ``Settlement/replaced(by:)``. Returns how many.
    @discardableResult
    public func retryFailed(causedBy kinds: Set<HTTPFailure.Kind>? = nil) async throws(SyncError) -> Int {
        try requireRunning()
        let storage = storage
        let now = clock.now()
        let random = random
        let cached = tail
        return try await storageCall {
            try await self.vault.write(storage.all, inline: true) { transaction in
                try OutboxTail.fold(in: transaction, storage, cached: cached)
                let outbox = try transaction.records(storage.outbox)
                var moved = 0
                for id in try outbox.ids() {
                    guard var entry = try SyncRecords.outboxEntry(id, in: outbox) else { continue }
                    guard entry.state == .failed else { continue }
                    if let kinds, !kinds.contains(entry.failure?.kind ?? .technical) { continue }
                    moved += 1
                    guard entry.failure?.outcome == .rejected, entry.failure?.status == 200 else {
                        // Refused for the batch as a whole (sign-in, access, app version): its key was never
                        // applied or answered, so it goes again as it is.
                        entry.state = .pending
                        try outbox.put(id, SyncRecords.encode(entry))
                        continue
                    }
                    // Refused on its own: the backend keeps that answer under its key, and sent again under it
                    // the refusal would only come back. A new change with a new key takes its place (same
                    // content, base and position); the refused one is settled as replaced by it.
                    let again = PendingMutation(
                        id: random.uuidString(timeOrderedAt: now), idempotencyKey: IdempotencyKey.make(using: random),
                        correlationID: entry.correlationID, entity: entry.entity, kind: entry.kind,
                        baseVersion: entry.baseVersion, fields: entry.fields, previous: entry.previous,
                        operation: entry.operation, createdAt: entry.createdAt, sequence: entry.sequence,
                        laterBases: entry.laterBases)
                    try self.replace(entry, with: again, settlement: .replaced(by: again.id), at: now, in: transaction)
                }
                return moved
            }
        }
    }

    /// Drops an outstanding change the user gives up (a failed one, typically); the entity shows the server's
    /// version again (with any later changes on top).
    ///
    /// - Throws: ``SyncError`` `invalidChange` for a change that was sent and whose answer is not known (it
    ///   may already be applied: sync first).
    public func discard(_ mutation: PendingMutation) async throws(SyncError) {
        try requireRunning()
        let storage = storage
        let now = clock.now()
        let sending = inFlight
        let cached = tail
        try await storageCall {
            try await self.vault.write(storage.all, inline: true) { transaction in
                try OutboxTail.fold(in: transaction, storage, cached: cached)
                let outbox = try transaction.records(storage.outbox)
                let outboxID = SyncRecords.outboxID(mutation.sequence)
                guard let entry = try SyncRecords.outboxEntry(outboxID, in: outbox), entry.id == mutation.id else {
                    return
                }
                // Sent without a known answer: the backend may have applied it. Discarding would be a lie.
                let markers = try InFlightMarker.markers(in: transaction.records(storage.state))
                let unconfirmed = Self.unconfirmed(markers)
                // A damaged marker may name it: it is known only at the next push (`takeBatch`).
                let unknown = markers.contains { $0.marker == .null }
                if entry.state == .sending || sending.contains(entry.id) || unconfirmed.contains(entry.id) || unknown {
                    throw SyncError(
                        code: .invalidChange, subject: entry.id,
                        message: "it was sent and its answer is not known yet: it may already be applied")
                }
                try outbox.delete(outboxID)
                try transaction.records(storage.conflicts).delete(mutation.id)
                try transaction.records(storage.state).put(
                    "settled:" + mutation.id, SyncRecords.encode(SyncRecords.json(of: .discarded, at: now)))
                let entities = try transaction.records(storage.entities)
                if let record = try Self.entity(mutation.entity, in: entities) {
                    try Self.store(record, without: [mutation.sequence], outbox: outbox, entities: entities)
                }
            }
        }
    }

    /// Gives up the changes of `ref` that its record still lists but whose outbox entries cannot be read
    /// (damaged on disk: never sent, and never sendable — see ``damagedRecords()``), which keep the entity
    /// `failed`. The entity shows the server's version again, with its readable changes on top. The damaged
    /// entries' bytes stay where they are, listed by ``damagedRecords()``: nothing is deleted. Returns how
    /// many were given up.
    @discardableResult
    public func discardUnreadable(of ref: EntityRef) async throws(SyncError) -> Int {
        try requireRunning()
        let storage = storage
        let cached = tail
        return try await storageCall {
            try await self.vault.write(storage.all, inline: true) { transaction in
                try OutboxTail.fold(in: transaction, storage, cached: cached)
                let outbox = try transaction.records(storage.outbox)
                let entities = try transaction.records(storage.entities)
                guard let record = try Self.entity(ref, in: entities) else { return 0 }
                let unreadable = try record.outstanding.filter { sequence in
                    try SyncRecords.outboxEntry(SyncRecords.outboxID(sequence), in: outbox) == nil
                }
                guard !unreadable.isEmpty else { return 0 }
                try Self.store(record, without: unreadable, outbox: outbox, entities: entities)
                return unreadable.count
            }
        }
    }

    /// Writes `record` back without the outstanding changes `sequences` (given up): what the user sees is
    /// rebuilt from the server's copy and the changes left. A record the server never had and with nothing left
    /// to show is deleted.
    private static func store(
        _ record: EntityRecord, without sequences: [UInt64], outbox: VaultRecords, entities: VaultRecords
    ) throws {
        var record = record
        for sequence in sequences { record.removeOutstanding(sequence) }
        try persistFirst(of: record, in: outbox)
        try record.rebuild(with: outstanding(record, in: outbox))
        if record.isKnown {
            try entities.put(record.recordID, SyncRecords.encode(record.json))
        } else {
            // Its only change is gone and the server never had it: nothing of it is left to show.
            try entities.delete(record.recordID)
        }
    }

    /// Settles a conflict: keep the local change (`mine`), the server's version (`theirs`), or send merged
    /// fields. `mine` and `merged` become a new change against the server's version — the fields the policies
    /// settled (``ConflictRecord/proposal``) plus the local or merged values of the unresolved ones — in the
    /// conflicted change's place in the outbox; the conflict record goes in the same transaction.
    ///
    /// - Returns: the new change, or nil for `theirs`.
    /// - Throws: ``SyncError`` `unknownConflict`, `stopped`, `storage`.
    @discardableResult
    public func resolve(_ conflictID: String, with resolution: ConflictRecord.Resolution) async throws(SyncError)
        -> PendingMutation?
    {
        try requireRunning()
        let storage = storage
        let now = clock.now()
        let replacementID = random.uuidString(timeOrderedAt: now)
        let key = IdempotencyKey.make(using: random)
        let correlation = CorrelationID.make(using: random)
        let cached = tail
        return try await storageCall {
            try await self.vault.write(storage.all, inline: true) { transaction in
                try OutboxTail.fold(in: transaction, storage, cached: cached)
                let conflicts = try transaction.records(storage.conflicts)
                guard let data = try conflicts.get(conflictID) else {
                    throw SyncError(code: .unknownConflict, subject: conflictID, message: "no such conflict")
                }
                let conflict = try ConflictRecord(json: SyncRecords.decode(data, "conflict record"))
                let original = conflict.mutation
                var replacement: PendingMutation?
                switch resolution {
                case .theirs: break
                case .mine, .merged:
                    // The policies' settlement of the other fields goes along; the resolution decides the rest.
                    // Against a server delete the note comes back whole: the local version is the starting point.
                    var fields = conflict.server.isDeleted ? conflict.local : conflict.proposal
                    if case .merged(let merged) = resolution {
                        for (name, value) in merged { fields[name] = value }
                    } else {
                        for name in conflict.unresolvedFields where name != "deleted" {
                            fields[name] = original.fields[name]
                        }
                    }
                    let deletes = original.kind == .delete && resolution == .mine
                    let sent: JSONObject = deletes ? [:] : fields
                    replacement = PendingMutation(
                        id: replacementID, idempotencyKey: key, correlationID: correlation, entity: original.entity,
                        kind: deletes ? .delete : (conflict.server.isDeleted ? .create : .update),
                        baseVersion: conflict.server.version, fields: sent,
                        previous: conflict.server.fields.filter(sent), operation: original.operation, createdAt: now,
                        sequence: original.sequence, replaces: original.id)
                }
                try conflicts.delete(conflictID)
                try self.replace(
                    original, with: replacement, settlement: replacement.map { .replaced(by: $0.id) } ?? .discarded,
                    at: now, in: transaction)
                if let shownThrough = conflict.shownThrough {
                    try self.resolveLaterChanges(
                        of: conflict, through: shownThrough, by: resolution, replacement: replacement, at: now,
                        in: transaction)
                }
                return replacement
            }
        }
    }

    // MARK: - The run

    private func run(push: Bool, pull: Bool) async -> SyncReport {
        defer { running = nil }
        var report = SyncReport()
        do {
            if push { guard try await pushAll(&report) else { return report } }
            if pull { guard try await pullAll(&report) else { return report } }
            report.isComplete = true
        } catch {
            // Storage failures end the run; the outbox is as durable as the last committed transaction.
            report.failure = SyncFailure(kind: .technical, outcome: .notSent)
            report.storageError = error
        }
        return report
    }

    private var fenced: Bool { stopped || Task.isCancelled || !vault.isOpen }

    private func context() -> SyncContext {
        SyncContext(account: vault.account, epoch: vault.epoch, correlationID: CorrelationID.make(using: random))
    }

    /// The context of a push of `batch`: its correlation id is the same for every attempt, retry and
    /// resumption after a relaunch (OBS-LOG-004) — the change's own, persisted when the user made it, for a
    /// batch of one; for several, one named by the batch's key, which the same batch always has.
    private func pushContext(_ batch: [PendingMutation], key: IdempotencyKey) -> SyncContext {
        SyncContext(
            account: vault.account, epoch: vault.epoch,
            correlationID: batch.count == 1 ? batch[0].correlationID : Self.batchCorrelation(key))
    }

    /// The correlation id of a push of several changes: 32 hex digits of their batch key's digest.
    static func batchCorrelation(_ key: IdempotencyKey) -> CorrelationID {
        let hex = String(SHA256Digest.hex(Array(("correlation\u{0}" + key.rawValue).utf8)).prefix(32))
        // 32 lowercase hex digits: always a valid correlation id.
        return (try? CorrelationID(validating: hex)) ?? CorrelationID.make(using: .system)
    }

    /// Pushes batches until nothing is sendable; false when the run must stop.
    private func pushAll(_ report: inout SyncReport) async throws(SyncError) -> Bool {
        pushLimit = batchSize
        // Changes refused alone by a refusal of the whole request, not recorded yet: that refusal may be about
        // them, or about every change (a client the backend no longer takes). They are recorded `failed` once
        // the backend acknowledges something after them, or when the run ends with fewer than three of them
        // in a row; three in a row with nothing acknowledged between stop the run, and then none of them is
        // recorded — they stay as they are stored, to be sent again by a later run (found in review: failing
        // three per run failed every change of a refused client within a few runs). Their entities are held
        // back for the rest of the run, so no later change of theirs goes before them.
        var refusedAlone: [(failure: HTTPFailure, change: PendingMutation, marker: String)] = []
        var refusedInARow = 0
        while true {
            guard !fenced else { return false }
            let (batch, taken, key) = try await takeBatch(
                limit: pushLimit, holdingBack: Set(refusedAlone.map(\.change.entity)))
            guard !batch.isEmpty else {
                try await recordRefusedAlone(&refusedAlone, into: &report)
                return true
            }
            inFlight = Set(batch.map(\.id))
            defer { inFlight = [] }
            let marker = InFlightMarker.key(key.rawValue)
            let context = pushContext(batch, key: key)
            let results: [PushResult]
            guard !fenced else { return false }  // stopped while the batch was prepared: nothing goes out
            do throws(HTTPFailure) {
                results = try await remote.push(batch, batchKey: key, context: context)
            } catch {
                if fenced {
                    report.droppedAnswers += 1
                    return false
                }
                // Refused as a whole — one change the backend cannot take (an id it refuses), or a body too
                // large — a batch of several is sent again in halves, so that the one change is found and only
                // it fails; the others go (found in review: one such change failed every change of its batch,
                // and a batch too large for the server was sent again, whole, on every sync, ahead of all the
                // rest). Nothing of it was applied: its marker goes, its changes stay as they are stored.
                if Self.splitsOnRefusal(error) {
                    try await storageCall {
                        try await self.vault.write(self.storage.state, inline: true) { state in
                            try state.delete(marker)
                        }
                    }
                    if batch.count > 1 {
                        pushLimit = max(1, batch.count / 2)
                        continue
                    }
                    refusedAlone.append((error, batch[0], marker))
                    refusedInARow += 1
                    if refusedInARow < 3 { continue }
                    report.failure = SyncFailure(error)
                    return false
                }
                try await recordFailure(error, for: batch, marker: marker)
                report.failure = SyncFailure(error)
                return false
            }
            guard !fenced else {
                report.droppedAnswers += 1
                return false
            }
            // An answer that does not fit the batch (a result too many or too few, an entity that is not the
            // mutation's) cannot be matched to the changes: what the backend did with them is not known.
            let misfit =
                results.count != batch.count
                ? "\(results.count) results for \(batch.count) mutations"
                : zip(batch, results).first { !Self.result($1, belongsTo: $0) }.map {
                    "the result for \($0.0.entity) names another entity"
                }
            if let misfit {
                let failure = HTTPFailure(
                    kind: .contractViolation, outcome: .unknown, correlationID: context.correlationID,
                    detail: Redacted(misfit))
                try await recordFailure(failure, for: batch, marker: marker)
                report.failure = SyncFailure(failure)
                return false
            }
            connectivity = .online
            try await apply(
                results, of: batch, taken: taken, marker: marker, correlationID: context.correlationID, into: &report)
            pushLimit = min(batchSize, pushLimit * 2)
            refusedInARow = 0
            // The backend takes changes: what it refused alone was about those changes.
            try await recordRefusedAlone(&refusedAlone, into: &report)
        }
    }

    /// Records each change in `refused` as refused on its own (`failed`, counted in ``SyncReport/rejected``),
    /// and empties the list.
    private func recordRefusedAlone(
        _ refused: inout [(failure: HTTPFailure, change: PendingMutation, marker: String)],
        into report: inout SyncReport
    ) async throws(SyncError) {
        for (failure, change, marker) in refused {
            try await recordFailure(failure, for: [change], marker: marker)
            report.rejected += 1
        }
        refused.removeAll()
    }

    /// Whether `failure` refuses a push as a whole, for something one of its changes may be alone in: the
    /// request's content (400, 422) or its size (413), certainly not applied. Sent alone, a change refused so
    /// is failed (``recordFailure(_:for:marker:)``).
    static func splitsOnRefusal(_ failure: HTTPFailure) -> Bool {
        failure.outcome == .rejected && (failure.kind == .validation || failure.status == 413)
    }

    /// Pulls pages until the feed's end; false when the run must stop.
    private func pullAll(_ report: inout SyncReport) async throws(SyncError) -> Bool {
        let storage = storage
        // The cursors this run was handed: a feed that says there is more but leads back to a position it
        // already gave would be read forever, holding every later sync behind this one.
        var cursors: Set<String> = []
        while true {
            guard !fenced else { return false }
            let (stored, resync) = try await storageCall {
                try await self.vault.read(storage.state) { state in
                    (
                        // A damaged cursor: the feed is read from the start (what is here already is skipped).
                        try Self.undamaged {
                            try state.get("cursor").flatMap {
                                try SyncRecords.decode($0, "cursor")["cursor"]?.stringValue
                            }
                        },
                        try state.storedBytes(DamagedRecords.resyncKey) != nil
                    )
                }
            }
            var cursor = stored
            // A damaged record was set aside since: read the feed from the start, so that the server's copy of
            // that entity comes back (what is here already is skipped: older or equal versions).
            if resync {
                try await storageCall {
                    try await self.vault.write(storage.state) { state in
                        try state.delete(DamagedRecords.resyncKey)
                        try state.delete("cursor")
                    }
                }
                cursor = nil
                cursors.removeAll()
            }
            let page: PullPage
            guard !fenced else { return false }
            do throws(HTTPFailure) {
                page = try await remote.pull(after: cursor, limit: pullLimit, context: context())
            } catch {
                if fenced {
                    report.droppedAnswers += 1
                    return false
                }
                if cursor != nil, !report.restartedPull, remote.rejectsCursor(error) {
                    // The server's feed no longer has this position (reset, restored): read it from the start.
                    // Pulling what is already here changes nothing (older or equal versions are skipped).
                    try await storageCall {
                        try await self.vault.write(storage.state) { state in try state.delete("cursor") }
                    }
                    report.restartedPull = true
                    cursors.removeAll()
                    continue
                }
                if [HTTPFailure.Kind.offline, .timeout, .captivePortal].contains(error.kind) {
                    connectivity = .offline
                }
                report.failure = SyncFailure(error)
                return false
            }
            guard !fenced else {
                report.droppedAnswers += 1
                return false
            }
            connectivity = .online
            let now = clock.now()
            let types = policies.types
            let cached = tail
            try await storageCall {
                try await self.vault.write(storage.all, inline: true) { transaction in
                    let (folded, outbox, entities, state) = try Self.folded(transaction, storage, cached: cached)
                    for change in page.changes {
                        var record =
                            try Self.entity(
                                change.ref, forWritingIn: entities, outbox: outbox, state: state, folded: folded)
                            ?? EntityRecord(ref: change.ref)
                        // Already as new (an acknowledgement brought it, or a page is read twice): nothing to do.
                        guard record.take(change) else { continue }
                        try record.rebuild(with: Self.outstanding(record, in: outbox))
                        try entities.put(record.recordID, SyncRecords.encode(record.json))
                    }
                    try state.put("cursor", SyncRecords.encode(["cursor": .string(page.cursor)]))
                    if !page.hasMore {
                        for type in types {
                            try state.put(
                                "pulled:" + type,
                                SyncRecords.encode(["at": .number(JSONNumber(now.timeIntervalSince1970))]))
                        }
                    }
                }
            }
            report.pulled += page.changes.count
            if !page.hasMore { return true }
            guard page.cursor != cursor, cursors.insert(page.cursor).inserted else {
                report.failure = SyncFailure(kind: .contractViolation, outcome: .rejected)
                return false
            }
        }
    }

    /// Whether `result` can be the answer for `mutation`: an entity it names is the mutation's.
    static func result(_ result: PushResult, belongsTo mutation: PendingMutation) -> Bool {
        switch result {
        case .applied(let entity), .conflict(let entity), .duplicate(let entity?): entity.ref == mutation.entity
        case .duplicate(nil), .rejected: true
        }
    }

    /// The changes a push wrote down as going out whose answer has not been recorded (every engine's push
    /// on this vault: an app and its extension may push at the same time).
    static func unconfirmed(in state: VaultRecords) throws -> Set<String> {
        unconfirmed(try InFlightMarker.markers(in: state))
    }

    /// The changes `markers` name (a damaged marker, `.null`, names none that can be known).
    static func unconfirmed(_ markers: [(key: String, marker: JSONValue)]) -> Set<String> {
        var unconfirmed: Set<String> = []
        for (_, marker) in markers {
            guard case .array(let ids)? = marker["ids"] else { continue }
            unconfirmed.formUnion(ids.compactMap(\.stringValue))
        }
        return unconfirmed
    }

    /// An outbox entry as a batch took it: decoded, and the bytes it was stored as. When they are still the
    /// stored bytes at the answer, the entry was not written since, and is not opened and decoded again.
    struct TakenEntry: Sendable {
        /// The entry as stored (before the batch marked it `sending`).
        var entry: PendingMutation
        /// Its stored bytes (``VaultRecords/getStored(_:)``).
        var stored: Data
        /// Its entity's record as read then, with its stored bytes: the answer's transaction takes it as it
        /// is when nothing wrote the record since (one point read, nothing opened).
        var record: (record: EntityRecord, stored: Data)?
    }

    /// The next batch — the oldest sendable change of each entity whose earlier changes are all settled — and
    /// the in-flight marker that says it is going out, in one transaction: a `discard` either ran before
    /// (the change is not in the batch) or sees the marker and refuses (it may be applied). Changes of an
    /// earlier marker whose answer never came (the app was killed while they were out) are marked
    /// `sending` first: sent without a known answer.
    private func takeBatch(limit: Int, holdingBack held: Set<EntityRef> = []) async throws(SyncError) -> (
        batch: [PendingMutation], taken: [TakenEntry], key: IdempotencyKey
    ) {
        let storage = storage
        let cached = tail
        return try await storageCall {
            try await self.vault.write(storage.all, inline: true) { transaction in
                // Every change goes into its record before any is sent (``OutboxTail``).
                try OutboxTail.fold(in: transaction, storage, cached: cached)
                let outbox = try transaction.records(storage.outbox)
                let state = try transaction.records(storage.state)
                // Another engine's batch may still be out (an app and its extension): its changes are marked
                // `sending` like a killed push's, and its marker goes only once they are (``InFlightMarker``).
                // Changes another push has out right now (or had when it was killed), marked `sending` below.
                var markedOut: Set<String> = []
                for (markerKey, marker) in try InFlightMarker.markers(in: state) {
                    if marker == .null {
                        // Damaged: the changes it named are not known, so every change that could have been
                        // out — each entity's first — is taken as sent without a known answer (its key makes a
                        // second send harmless). The bytes are set aside, listed by `damagedRecords()`.
                        try Self.markFirstChangesSending(in: outbox)
                        if let stored = try state.storedBytes(markerKey) {
                            try state.put(DamagedRecords.prefix + markerKey, stored)
                        }
                        try state.delete(markerKey)
                        continue
                    }
                    if case .array(let ids)? = marker["ids"], case .array(let sequences)? = marker["sequences"] {
                        for (id, sequence) in zip(ids.compactMap(\.stringValue), sequences.compactMap(\.intValue)) {
                            let key = SyncRecords.outboxID(UInt64(sequence))
                            guard var entry = try SyncRecords.outboxEntry(key, in: outbox), entry.id == id,
                                entry.state == .pending
                            else { continue }
                            entry.state = .sending
                            entry.attempts += 1
                            try outbox.put(key, SyncRecords.encode(entry))
                            markedOut.insert(id)
                        }
                    }
                    try state.delete(markerKey)
                }
                let entities = try transaction.records(storage.entities)
                var batch: [PendingMutation] = []
                var taken: [TakenEntry] = []
                // Entities held back (a change refused alone this run, not recorded yet) count as seen: none of
                // their changes goes.
                var seen: Set<EntityRef> = held
                // The later changes of the entities seen, by number: held back, so not even read (a long run of
                // edits of one entity would otherwise be read whole for every batch).
                var behind: Set<UInt64> = []
                var after: String?
                scanning: while batch.count < limit {
                    let ids = try outbox.ids(after: after, limit: 256)
                    for id in ids where !(UInt64(id).map(behind.contains) ?? false) {
                        // A damaged entry is never sent (its content is unknown): `damagedRecords()` lists it.
                        guard let (data, read) = try Self.undamaged({ try outbox.getStored(id) }),
                            var original = try Self.undamaged({
                                try PendingMutation(json: SyncRecords.decode(data, "outbox entry"))
                            })
                        else { continue }
                        var stored = read
                        var entry = original
                        // Only the first outstanding change of an entity may go; a failed or conflicted one
                        // holds the later ones back.
                        guard seen.insert(entry.entity).inserted else { continue }
                        // Its record (folded above) lists the later ones, and knows the version this one goes
                        // against (EntityRecord.changes). A damaged record is left for the writes that set it
                        // aside: the entry keeps its own base then.
                        let found = try Self.undamaged { try Self.entityAsStored(entry.entity, in: entities) }
                        let record = found?.record
                        for sequence in record?.outstanding ?? [] where sequence != entry.sequence {
                            behind.insert(sequence)
                        }
                        guard entry.state == .pending || entry.state == .sending else { continue }
                        if entry.attempts == 0, let base = record?.base(of: entry.sequence), base != entry.baseVersion {
                            // Written down before it goes: sent again after a kill, under the same key, it must
                            // carry the same base. (The first change's entry holds it already — persistFirst —
                            // unless that entry is unreadable and this, the next one, goes in its place.)
                            original.baseVersion = base
                            try outbox.put(id, SyncRecords.encode(original))
                            guard let written = try outbox.storedBytes(id) else {
                                throw SyncRecords.damaged("outbox entry")
                            }
                            (entry, stored) = (original, written)
                        }
                        entry.state = .sending
                        entry.attempts += 1
                        batch.append(entry)
                        taken.append(TakenEntry(entry: original, stored: stored, record: found))
                        if batch.count == limit { break scanning }
                    }
                    guard let last = ids.last, ids.count == 256 else { break }
                    after = last
                }
                // A batch whose answer was lost goes again as it was, before any other change joins it: the same
                // changes keep the same batch key and the same correlation id on every attempt (OBS-LOG-004;
                // found in an outside audit: a change sent alone, its answer lost, went again inside a larger
                // batch under another correlation id). Its changes are the ones stored `sending` by that push.
                // Those another push has out right now (an app extension's; or a killed run's, which cannot be
                // told apart) go along with this batch's, as before: holding them back would hold this
                // engine's own changes behind another's push.
                let unknown = taken.indices.filter {
                    taken[$0].entry.state == .sending && !markedOut.contains(taken[$0].entry.id)
                }
                if !unknown.isEmpty, unknown.count < batch.count {
                    batch = unknown.map { batch[$0] }
                    taken = unknown.map { taken[$0] }
                }
                // Named after the batch's key: two pushes with the same key carry the same changes, which the
                // later one marked `sending` before it went.
                let key = Self.batchKey(batch)
                let markerKey = InFlightMarker.key(key.rawValue)
                if !batch.isEmpty {
                    let marker: JSONValue = [
                        "ids": .array(batch.map { .string($0.id) }),
                        "sequences": .array(batch.map { .number(JSONNumber(Int64(bitPattern: $0.sequence))) }),
                    ]
                    try state.put(markerKey, SyncRecords.encode(marker))
                }
                return (batch, taken, key)
            }
        }
    }

    /// Marks the first outstanding change of every entity `sending` (sent without a known answer), if it is
    /// `pending`: what a push whose marker cannot be read may have sent.
    static func markFirstChangesSending(in outbox: VaultRecords) throws {
        var seen: Set<EntityRef> = []
        for id in try outbox.ids() {
            guard var entry = try SyncRecords.outboxEntry(id, in: outbox), seen.insert(entry.entity).inserted,
                entry.state == .pending
            else { continue }
            entry.state = .sending
            entry.attempts += 1
            try outbox.put(id, SyncRecords.encode(entry))
        }
    }

    /// A key for the batch made of its mutations' keys: the same batch (after a relaunch, say) gets the
    /// same key, a different composition a different one.
    static func batchKey(_ batch: [PendingMutation]) -> IdempotencyKey {
        let keys = batch.map(\.idempotencyKey.rawValue).joined(separator: "\n")
        return IdempotencyKey("batch-" + SHA256Digest.hex(Array(keys.utf8)).prefix(40))
    }

    /// Records why a push did not get through: not sent or refused → pending again (or failed when someone
    /// must act); unknown → still `sending`, to be sent again with the same key.
    private func recordFailure(_ failure: HTTPFailure, for batch: [PendingMutation], marker: String)
        async throws(SyncError)
    {
        if [HTTPFailure.Kind.offline, .timeout, .captivePortal].contains(failure.kind) { connectivity = .offline }
        let needsSomeone: Set<HTTPFailure.Kind> = [
            .authentication, .authorization, .validation, .updateRequired, .versionBlocked,
        ]
        let storage = storage
        let recorded = SyncFailure(failure)
        // 409: the backend is still applying one of these keys (an earlier attempt): the outcome is not known.
        let unknown = failure.outcome == .unknown || failure.status == 409
        // A validation refusal of a batch of one change refuses that change's content, which an earlier attempt
        // sent as well: it was not applied then either; so does a 413 (the change is too large to be taken).
        // Either fails it: sent again as it is, it would be refused again, ahead of every other change. A
        // batch of several refused so is sent again in halves (``splitsOnRefusal(_:)``) before it comes here.
        let refusesItAlone = Self.splitsOnRefusal(failure) && batch.count == 1
        try await storageCall {
            try await self.vault.write([storage.outbox, storage.state], inline: true) { transaction in
                let outbox = try transaction.records(storage.outbox)
                try transaction.records(storage.state).delete(marker)  // the outcome is written below
                for sent in batch {
                    let id = SyncRecords.outboxID(sent.sequence)
                    guard var entry = try SyncRecords.outboxEntry(id, in: outbox), entry.id == sent.id else { continue }
                    entry.failure = recorded
                    if unknown {
                        entry.state = .sending
                        entry.attempts += 1
                    } else if entry.state == .sending, !refusesItAlone {
                        // An earlier attempt's answer is still unknown (stored `sending`): this one did not
                        // get through, or was refused before the backend looked at its key (offline,
                        // sign-in, access, app version) or for the request as a whole, so it says nothing
                        // about the earlier one. It stays `sending` — sent again with the same key, never
                        // discardable as if it had not left.
                        if failure.outcome == .rejected { entry.attempts += 1 }
                    } else {
                        entry.state = needsSomeone.contains(failure.kind) || refusesItAlone ? .failed : .pending
                        if failure.outcome == .rejected { entry.attempts += 1 }
                    }
                    try outbox.put(id, SyncRecords.encode(entry))
                }
            }
        }
    }

    /// Applies the server's answers to the batch, in one transaction.
    private func apply(
        _ results: [PushResult], of batch: [PendingMutation], taken: [TakenEntry], marker: String,
        correlationID: CorrelationID, into report: inout SyncReport
    ) async throws(SyncError) {
        let storage = storage
        let policies = policies
        let now = clock.now()
        let random = random
        let cached = tail
        let counts = try await storageCall {
            try await self.vault.write(storage.all, inline: true) { transaction in
                // Changes queued while the batch was out go into their records first: acknowledging moves
                // their base versions along.
                let (folded, outbox, entities, state) = try Self.folded(transaction, storage, cached: cached)
                var counts = (acknowledged: 0, conflicts: 0, rejected: 0)
                try state.delete(marker)  // every answer of the batch is here
                for ((sent, result), taken) in zip(zip(batch, results), taken) {
                    // The entry as stored now: the one taken, unless it was written since (then read again). A
                    // damaged entry is an error (the transaction rolls back, the marker stays): skipping it
                    // would lose that it went out without a recorded answer.
                    let key = SyncRecords.outboxID(sent.sequence)
                    let current: PendingMutation?
                    if try outbox.isStored(key, as: taken.stored) {
                        current = taken.entry
                    } else {
                        current = try SyncRecords.outboxEntry(key, in: outbox)
                    }
                    guard var entry = current, entry.id == sent.id else {
                        // Gone meanwhile (never while it is marked in flight: `discard` refuses then). Should
                        // the backend still have applied it, that is what is recorded, not a discard.
                        let version: Int??
                        switch result {
                        case .applied(let server), .duplicate(let server?): version = server.version
                        case .duplicate(nil): version = .some(nil)
                        default: version = nil
                        }
                        if let version {
                            try transaction.records(storage.state).put(
                                "settled:" + sent.id,
                                SyncRecords.encode(SyncRecords.json(of: .applied(version: version), at: now)))
                        }
                        continue
                    }
                    var record: EntityRecord
                    if let (known, stored) = taken.record, try entities.isStored(sent.entity.description, as: stored) {
                        record = known
                    } else {
                        record =
                            try Self.entity(
                                sent.entity, forWritingIn: entities, outbox: outbox, state: state, folded: folded)
                            ?? EntityRecord(ref: sent.entity)
                    }
                    switch result {
                    case .applied(let server), .duplicate(let server?):
                        counts.acknowledged += 1
                        try self.acknowledge(entry, server: server, record: &record, at: now, in: transaction)
                    case .duplicate(nil):
                        counts.acknowledged += 1
                        try self.acknowledge(entry, server: nil, record: &record, at: now, in: transaction)
                    case .conflict(let server) where entry.baseVersion.map({ server.version <= $0 }) ?? false:
                        // A conflict with nothing newer than what the change was made against (a rule of the
                        // backend, not a concurrent edit): sending it again would loop. Someone must look.
                        counts.rejected += 1
                        entry.state = .failed
                        entry.attempts += 1
                        entry.failure = SyncFailure(
                            kind: .conflict, outcome: .rejected, status: 200, errorCode: "conflict_without_change",
                            correlationID: correlationID)
                        try outbox.put(SyncRecords.outboxID(entry.sequence), SyncRecords.encode(entry))
                    case .conflict(let answered):
                        counts.conflicts += 1
                        let local = record.visible
                        let shownThrough = record.outstanding.max()
                        _ = record.take(answered)
                        // A replayed answer (its first delivery was lost) shows the server as it was then; a
                        // newer copy the feed brought since is what the conflict is judged — and resolved —
                        // against. (A provisional copy is this device's guess, never the server's word.)
                        let server =
                            record.server.flatMap {
                                !record.serverIsProvisional && $0.version > answered.version ? $0 : nil
                            }
                            ?? answered
                        try entities.put(record.recordID, SyncRecords.encode(record.json))
                        // Each field is judged against what it held when the user changed it.
                        let (outcome, decisions) = ConflictResolver.resolve(
                            entry, base: entry.previous, server: server, policies: policies)
                        func replacement(_ kind: MutationKind, _ fields: JSONObject) -> PendingMutation {
                            PendingMutation(
                                id: random.uuidString(timeOrderedAt: now),
                                idempotencyKey: IdempotencyKey.make(using: random),
                                correlationID: CorrelationID.make(using: random), entity: entry.entity,
                                kind: kind, baseVersion: server.version, fields: fields,
                                previous: server.fields.filter(fields), operation: entry.operation, createdAt: now,
                                sequence: entry.sequence, replaces: entry.id)
                        }
                        let policyNames = decisions.keys.sorted().map { "\($0)=\(decisions[$0]!)" }.joined(
                            separator: ",")
                        switch outcome {
                        case .send(let fields):
                            let next = replacement(.update, fields)
                            try self.replace(
                                entry, with: next, settlement: .replaced(by: next.id), at: now, in: transaction)
                        case .sendDelete:
                            let next = replacement(.delete, [:])
                            try self.replace(
                                entry, with: next, settlement: .replaced(by: next.id), at: now, in: transaction)
                        case .drop:
                            try self.replace(
                                entry, with: nil, settlement: .superseded(policy: policyNames), at: now, in: transaction
                            )
                        case .manual(let unresolved, let proposal):
                            entry.state = .conflicted
                            entry.attempts += 1
                            entry.failure = SyncFailure(
                                kind: .conflict, outcome: .rejected, status: 200, correlationID: correlationID)
                            try outbox.put(SyncRecords.outboxID(entry.sequence), SyncRecords.encode(entry))
                            let conflict = ConflictRecord(
                                mutation: entry, local: local, server: server, unresolvedFields: unresolved,
                                proposal: proposal, detectedAt: now, shownThrough: shownThrough)
                            try transaction.records(storage.conflicts).put(entry.id, SyncRecords.encode(conflict.json))
                            try record.rebuild(with: Self.outstanding(record, in: outbox))
                            try entities.put(record.recordID, SyncRecords.encode(record.json))
                        }
                    case .rejected(let code):
                        counts.rejected += 1
                        entry.state = .failed
                        entry.attempts += 1
                        entry.failure = SyncFailure(
                            kind: code == "not_found" ? .conflict : .validation, outcome: .rejected, status: 200,
                            errorCode: code, correlationID: correlationID)
                        try outbox.put(SyncRecords.outboxID(entry.sequence), SyncRecords.encode(entry))
                    }
                }
                return counts
            }
        }
        report.acknowledged += counts.acknowledged
        report.conflicts += counts.conflicts
        report.rejected += counts.rejected
    }

    /// The server applied `entry`: it leaves the outbox, the entity takes the server's version, and later
    /// changes of the entity made against the same base move to the new version.
    nonisolated private func acknowledge(
        _ entry: PendingMutation, server: RemoteEntity?, record: inout EntityRecord, at now: Date,
        in transaction: VaultTransaction
    ) throws {
        let outbox = try transaction.records(storage.outbox)
        try record.loadChanges(from: outbox)  // a record from before they were kept: once
        try outbox.delete(SyncRecords.outboxID(entry.sequence))
        try transaction.records(storage.state).put(
            "settled:" + entry.id, SyncRecords.encode(SyncRecords.json(of: .applied(version: server?.version), at: now))
        )
        let wasFirst = record.outstanding.first == entry.sequence
        let before = record.server
        record.removeOutstanding(entry.sequence)
        // Applied before (a duplicate), without the entity. When the copy known here is the one the change was
        // made against, the server's copy is taken to be that one with the change applied, one version on — the
        // least the server can be at — and marked provisional: the server's own copy, at that version or later,
        // replaces it when the changes feed brings it, and later changes made against it are answered with a
        // conflict if the server moved further. When a newer copy is known (the feed brought one meanwhile), it
        // stays: it is the server's. Never the copy from before the change: that would show the change undone,
        // and a create as nothing at all.
        var server = server
        if server == nil, record.server?.version == entry.baseVersion {
            let known = record.server
            var fields = entry.kind == .create ? JSONObject() : (known?.fields ?? [:])
            if entry.kind != .delete {
                for (name, value) in entry.fields { fields[name] = value }
            }
            let provisional = RemoteEntity(
                ref: record.ref, version: (known?.version ?? 0) + 1, isDeleted: entry.kind == .delete, fields: fields)
            record.server = provisional
            record.serverIsProvisional = true
            server = provisional
        } else if let server {
            _ = record.take(server)
        }
        // Later changes made against the same base now go against the server's new version (in the record:
        // EntityRecord.changes).
        if let server { record.rebase(from: entry.baseVersion, to: server.version) }
        try Self.persistFirst(of: record, in: outbox)
        // The usual answer is the change applied as it was sent (perhaps with a timestamp of the server's):
        // the later changes need not be read back from the outbox to show what the user sees (each
        // acknowledgement of a long run of edits of one entity did).
        if !(wasFirst && record.settleFirst(entry, over: before)) {
            try record.rebuild(with: Self.outstanding(record, in: outbox))
        }
        try transaction.records(storage.entities).put(record.recordID, SyncRecords.encode(record.json))
    }

    /// The changes of the entity queued after a resolved conflict's change, up to the newest the conflict
    /// showed, under the user's decision. (Changes queued after the conflict was found were not shown with
    /// it: they stay as they are, and are judged when they are sent.)
    ///
    /// Found in an outside audit: only the conflicted change was resolved; the later ones went out against
    /// the version the conflict was about and raised it again (once per saved edit, each showing the same
    /// text), or wrote an older text over the user's merge. Now:
    /// - `theirs` drops them, as it drops the conflicted change: the local version the conflict showed is
    ///   given up;
    /// - `merged` takes the fields the user decided out of them (the merge replaces their values; a change
    ///   left with nothing is settled by it);
    /// - `mine` leaves their values: the user kept them.
    ///
    /// A change left whose every field is one the user decided (for `mine`, a field the conflict left to the
    /// user) or one the server had not changed from what this device saw goes against the server's version
    /// with the resolution, so that it follows the resolution without a new conflict. Any other keeps its
    /// base: the server changed a field of it that nobody decided (a tag, a counter), and it is judged by the
    /// declared policies when it is sent — never written over without a word.
    nonisolated private func resolveLaterChanges(
        of conflict: ConflictRecord, through shownThrough: UInt64, by resolution: ConflictRecord.Resolution,
        replacement: PendingMutation?, at now: Date, in transaction: VaultTransaction
    ) throws {
        let original = conflict.mutation
        let outbox = try transaction.records(storage.outbox)
        let entities = try transaction.records(storage.entities)
        guard let record = try Self.entity(original.entity, in: entities) else { return }
        let later = try Self.outstanding(record, in: outbox).filter {
            $0.sequence > original.sequence && $0.sequence <= shownThrough && $0.state == .pending
        }
        guard !later.isEmpty else { return }
        if resolution == .theirs {
            for change in later { try replace(change, with: nil, settlement: .discarded, at: now, in: transaction) }
            return
        }
        // The fields the user decided: those the conflict left to the user, and any the merge sets.
        var decided = Set(conflict.unresolvedFields)
        if case .merged(let merged) = resolution { decided.formUnion(merged.keys) }
        let trims = resolution != .mine
        var rebased: [UInt64] = []
        for change in later {
            guard change.kind == .update else { continue }
            var kept = change
            if trims, change.fields.keys.contains(where: decided.contains) {
                let fields = JSONObject(change.fields.filter { !decided.contains($0.key) }.map { ($0.key, $0.value) })
                guard !fields.isEmpty else {
                    try replace(
                        change, with: nil, settlement: replacement.map { .replaced(by: $0.id) } ?? .discarded,
                        at: now, in: transaction)
                    continue
                }
                kept = PendingMutation(
                    id: change.id, idempotencyKey: change.idempotencyKey, correlationID: change.correlationID,
                    entity: change.entity, kind: change.kind, baseVersion: change.baseVersion, fields: fields,
                    previous: change.previous.filter(fields), operation: change.operation,
                    createdAt: change.createdAt, attempts: change.attempts, state: change.state,
                    failure: change.failure, sequence: change.sequence, replaces: change.replaces,
                    laterBases: change.laterBases)
                try outbox.put(SyncRecords.outboxID(change.sequence), SyncRecords.encode(kept))
            }
            let followsTheResolution = kept.fields.keys.allSatisfy { name in
                decided.contains(name) || conflict.server.fields[name] == kept.previous[name]
            }
            if followsTheResolution { rebased.append(kept.sequence) }
        }
        guard var current = try Self.entity(original.entity, in: entities) else { return }
        for sequence in rebased { current.setBase(conflict.server.version, of: sequence) }
        try Self.persistFirst(of: current, in: outbox)
        try current.rebuild(with: Self.outstanding(current, in: outbox))
        try entities.put(current.recordID, SyncRecords.encode(current.json))
    }

    /// Takes `original` out of the outbox — or puts `replacement` in its place (same sequence, so the order
    /// per entity holds) — records its settlement and rebuilds the entity.
    nonisolated private func replace(
        _ original: PendingMutation, with replacement: PendingMutation?, settlement: Settlement, at now: Date,
        in transaction: VaultTransaction
    ) throws {
        let outbox = try transaction.records(storage.outbox)
        let id = SyncRecords.outboxID(original.sequence)
        if let replacement {
            try outbox.put(id, SyncRecords.encode(replacement))
        } else {
            try outbox.delete(id)
        }
        try transaction.records(storage.state).put(
            "settled:" + original.id, SyncRecords.encode(SyncRecords.json(of: settlement, at: now)))
        let entities = try transaction.records(storage.entities)
        guard var record = try Self.entity(original.entity, in: entities) else { return }
        if let replacement {
            record.replace(with: replacement)
        } else {
            record.removeOutstanding(original.sequence)
        }
        try Self.persistFirst(of: record, in: outbox)
        try record.rebuild(with: Self.outstanding(record, in: outbox))
        try entities.put(record.recordID, SyncRecords.encode(record.json))
    }

    // MARK: - Records

    static func entity(_ ref: EntityRef, in entities: VaultRecords) throws -> EntityRecord? {
        try entities.get(ref.description).map { try EntityRecord(json: SyncRecords.decode($0, "entity")) }
    }

    /// ``entity(_:in:)`` with the record's stored bytes (``VaultRecords/isStored(_:as:)`` tells later whether
    /// anything wrote it since).
    static func entityAsStored(_ ref: EntityRef, in entities: VaultRecords) throws -> (
        record: EntityRecord, stored: Data
    )? {
        try entities.getStored(ref.description).map { value, stored in
            (try EntityRecord(json: SyncRecords.decode(value, "entity")), stored)
        }
    }

    /// The tail folded into the records (every write that changes records does this first), and the
    /// datasets the write works on.
    static func folded(_ transaction: VaultTransaction, _ storage: SyncStorage, cached: OutboxTail?) throws -> (
        folded: UInt64, outbox: VaultRecords, entities: VaultRecords, state: VaultRecords
    ) {
        let folded = try OutboxTail.fold(in: transaction, storage, cached: cached).folded
        return (
            folded, try transaction.records(storage.outbox), try transaction.records(storage.entities),
            try transaction.records(storage.state)
        )
    }

    /// What `read` gives, or nil when it throws because the stored record is damaged (``isDamage(_:)``).
    static func undamaged<T>(_ read: () throws -> T?) throws -> T? {
        do { return try read() } catch  where isDamage(error) { return nil }
    }

    /// Whether `error` says a stored record is damaged — it does not open under its key, or opens to
    /// something that is not a record — rather than that the vault cannot be read now (a locked device, a
    /// missing key), which must stop the work instead.
    static func isDamage(_ error: any Error) -> Bool {
        if let vault = error as? VaultError { return vault.code == .cannotOpen }
        if let sync = error as? SyncError { return sync.code == .damagedRecord }
        return false
    }

    /// Entity `ref`'s record in a write transaction.
    ///
    /// A record damaged on disk would fail every sync that touches it, the same way on every retry — no
    /// acknowledgement, no pull, no fold would ever commit again. So it is set aside: its stored bytes are
    /// kept in the state dataset under `damaged:` and its id (nothing is deleted; ``damagedRecords()``
    /// lists them), and the record is rebuilt from the entity's changes still in the outbox up to `folded`
    /// (later ones are the tail's, put on top by the caller). The server's copy comes back with the next
    /// acknowledgement or pull.
    static func entity(
        _ ref: EntityRef, forWritingIn entities: VaultRecords, outbox: VaultRecords, state: VaultRecords,
        folded: UInt64
    ) throws -> EntityRecord? {
        do { return try entity(ref, in: entities) } catch  where isDamage(error) {
            guard let stored = try entities.storedBytes(ref.description) else { return nil }
            var aside = DamagedRecords.prefix + ref.description
            var round = 1
            while try state.storedBytes(aside) != nil {
                round += 1
                aside = DamagedRecords.prefix + "\(round):" + ref.description
            }
            try state.put(aside, stored)
            try state.put(DamagedRecords.resyncKey, SyncRecords.encode(["entity": .string(ref.description)]))
            var record: EntityRecord?
            var first: PendingMutation?
            for id in try outbox.ids() {
                guard let sequence = UInt64(id), sequence <= folded,
                    let data = try? outbox.get(id),
                    let entry = try? PendingMutation(json: SyncRecords.decode(data, "outbox entry")),
                    entry.entity == ref
                else { continue }
                var rebuilt = record ?? EntityRecord(ref: ref)
                rebuilt.add(entry)
                // The first change's entry holds its own base and the later ones' (persistFirst).
                if let first, entry.attempts == 0, case .some(let base) = first.laterBases.base(of: entry.sequence) {
                    rebuilt.setBase(base, of: entry.sequence)
                }
                first = first ?? entry
                record = rebuilt
            }
            if let record {
                try entities.put(record.recordID, SyncRecords.encode(record.json))
            } else {
                try entities.delete(ref.description)
            }
            return record
        }
    }

    /// Writes what the record keeps of the entity's outstanding changes into the first one's outbox entry when
    /// it holds something else: its own base (it moved while the change waited behind others; not once sent)
    /// and the later changes' bases (``PendingMutation/laterBases``), which is what a damaged record is rebuilt
    /// from. Bases move only when a change is acknowledged, and the first change changes only when one leaves
    /// or is replaced: called then. One entry read; a write when something moved.
    static func persistFirst(of record: EntityRecord, in outbox: VaultRecords) throws {
        guard let first = record.outstanding.first, case .some(let base) = record.base(of: first) else { return }
        let id = SyncRecords.outboxID(first)
        guard var entry = try undamaged({ try SyncRecords.outboxEntry(id, in: outbox) }) else { return }
        let later = record.laterBases
        let moved = entry.attempts == 0 && entry.baseVersion != base
        guard moved || entry.laterBases.ranges != later.ranges else { return }
        if moved { entry.baseVersion = base }
        entry.laterBases = later
        try outbox.put(id, SyncRecords.encode(entry))
    }

    static func outstanding(_ record: EntityRecord, in outbox: VaultRecords) throws -> [PendingMutation] {
        try record.outstanding.compactMap { sequence in
            try SyncRecords.outboxEntry(SyncRecords.outboxID(sequence), in: outbox)
        }
    }

    /// The failure of a change whose outbox entry cannot be read: never sent, so nothing was applied.
    static let unreadableChange = SyncFailure(kind: .technical, outcome: .notSent, errorCode: "damaged_record")

    static func synced(_ record: EntityRecord, outbox: VaultRecords, sending: Set<String>) throws -> SyncedEntity {
        let changes = try outstanding(record, in: outbox).map { change in
            var change = change
            if sending.contains(change.id) { change.state = .sending }
            return change
        }
        let worst = changes.max { $0.state.severity < $1.state.severity }
        var state = worst?.state ?? .synced
        var failure = changes.first(where: { $0.state == .failed })?.failure ?? worst?.failure
        // A change the record still lists whose outbox entry cannot be read (damaged on disk: never sent, see
        // ``damagedRecords()``) is not confirmed, and what the user sees holds it: the entity is `failed`, never
        // `synced` (found in review: it read `synced` with the unsent values).
        if changes.count < record.outstanding.count, state.severity < ItemState.failed.severity {
            state = .failed
            failure = Self.unreadableChange
        }
        return SyncedEntity(
            ref: record.ref, fields: record.visible, isDeleted: record.visibleDeleted,
            serverVersion: record.server?.version, state: state, failure: failure,
            outstandingChanges: record.outstanding.count,
            conflictID: changes.first(where: { $0.state == .conflicted })?.id)
    }

    // MARK: - Plumbing

    private func requireRunning() throws(SyncError) {
        guard !stopped else {
            throw SyncError(code: .stopped, message: "this account's sync was stopped (account switch or sign-out)")
        }
    }

    /// Runs a vault call, turning its errors into ``SyncError`` (a ``SyncError`` thrown inside passes as it is).
    private func storageCall<T>(_ body: () async throws -> T) async throws(SyncError) -> T {
        do { return try await body() } catch let error as SyncError {
            throw error
        } catch {
            throw SyncError(code: .storage, message: "\(error)", underlying: error)
        }
    }
}

extension JSONObject {
    /// The members of `self` whose names `fields` has.
    func filter(_ fields: JSONObject) -> JSONObject {
        JSONObject(fields.keys.compactMap { name in self[name].map { (name, $0) } })
    }
}

/// Entity records that were damaged on disk and set aside (``SyncEngine/damagedRecords()``): their stored
/// bytes, in the state dataset under `damaged:` and the entity (`damaged:2:` and on for a second time).
enum DamagedRecords {
    static let prefix = "damaged:"
    /// Written when a record is set aside: the next pull reads the feed from the start.
    static let resyncKey = "resync"
}

/// The state records that say a push went out whose answer is not recorded yet: one per push, `inflight:`
/// and its batch's key, written with the batch it marks and deleted with that batch's answer. Two engines
/// on one vault (an app and its extension) may push at the same time: an answer clears only its own push's
/// marker, and a push that finds another's marks those changes `sending` in storage before it clears it
/// (two pushes of the same batch share a key, and then all of their changes are stored `sending`). Either
/// way no change that is out looks unsent. `inflight` alone is the single marker engines wrote before; a
/// push still reads it (a vault from then may hold one).
enum InFlightMarker {
    static let legacy = "inflight"
    static let prefix = "inflight:"

    /// The marker of the push `id`.
    static func key(_ id: String) -> String { prefix + id }

    /// Every marker in `state`, read: its key and its record. One scan of the ids from `inflighs` on (ids
    /// sort by their bytes: `inflight`, then every `inflight:…`, come right after it; the state dataset's
    /// other ids are the engine's own and none starts with `inflighs`), so a vault without markers costs one
    /// query: entity reads ask for the unconfirmed changes every time.
    static func markers(in state: VaultRecords) throws -> [(key: String, marker: JSONValue)] {
        var markers: [(key: String, marker: JSONValue)] = []
        var after = "inflighs"
        while true {
            let page = try state.ids(after: after, limit: 64)
            let keys = page.prefix { $0 == legacy || $0.hasPrefix(prefix) }
            for key in keys {
                // A damaged marker is `.null`: which changes it names is not known (see `takeBatch`).
                do {
                    guard let data = try state.get(key) else { continue }
                    markers.append((key, try SyncRecords.decode(data, "in-flight marker")))
                } catch  where SyncEngine.isDamage(error) {
                    markers.append((key, .null))
                }
            }
            guard keys.count == 64, let last = keys.last else { return markers }
            after = last
        }
    }
}
