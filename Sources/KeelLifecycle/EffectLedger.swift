public import Foundation
public import KeelCore
import KeelCrypto
public import KeelStore

/// The durable record of irreversible operations started from navigation — publish, pay, send
/// (MOB-PLAT-008, MOB-PLAT-005): an operation gets its id when the user confirms, is recorded here before
/// it runs, and back, restoration, a re-render replaying the same confirmation, and a relaunch never start
/// it again. Its result is read from here (and, for network operations, from the HTTP operation journal
/// named by ``Entry/reference``), never from view state.
///
/// ```swift
/// let ledger = try EffectLedger(vault: vault, dataset: "effects")          // in the account's vault
/// let id = EffectLedger.operationID(entry: entry.id, action: "publish")   // the same on every replay
/// switch try await ledger.begin(id, action: "publish") {
/// case .run: let result = try await publish(); try await ledger.complete(id, .succeeded, result: result)
/// case .recorded(let entry): show(entry)                                   // never run twice
/// }
/// ```
///
/// Two storages, one behaviour:
/// - **In the account's vault** (``init(vault:dataset:clock:)``): one record per operation in a dataset the
///   inventory declares — sealed when it is classified `personal` or above, as a ledger of what an account
///   did is — so its entries go with the account's data at logout and account deletion, and shredding the
///   account's keys makes them unreadable. The dataset is kept until an event (`untilEvent`), never for a
///   duration: the vault's retention sweep deletes by age and would take the ledger's record-id key and its
///   started operations with it (one would then run twice), so such a dataset is refused when the ledger is
///   made (`sweptByRetention`). Forget settled operations with ``removeSettled(before:)`` instead. Record ids are keyed digests of the operation ids (the key, a
///   random salt, is itself a sealed record): no note id, path or account name is written in clear. Every
///   call is one SQLite transaction on the vault, and nothing is cached in memory, so an app and its
///   extension may each have a ledger on the same vault at the same time: a second `begin` of the same id —
///   from either — answers `.recorded`.
/// - **In a file** (``init(file:clock:)``): one small JSON file, rewritten atomically and synced before each
///   call returns (the same durable write as vault manifests and key files). It is **not sealed**: every entry
///   (its id, result, reference and account) is plaintext on disk, outside any vault, and no key shredding
///   makes it unreadable. Keep it for operations whose records are not personal data; a ledger of what an
///   account did belongs in that account's vault (move an existing file there with ``importFile(_:)``).
public actor EffectLedger {
    /// Where an operation stands.
    public enum State: String, Sendable, Codable, Hashable {
        /// Recorded and started; its outcome is not known yet (or the process died before it was).
        case started
        /// It completed.
        case succeeded
        /// It failed for certain (nothing was done).
        case failed
    }

    /// One operation.
    public struct Entry: Sendable, Codable, Hashable {
        /// Its id.
        public var id: String
        /// What it does (`publish`).
        public var action: String
        /// Where it stands.
        public var state: State
        /// What the user is shown as its result (`published as #42`).
        public var result: String?
        /// The HTTP operation journal's id for it, when it is a network operation.
        public var reference: String?
        /// The account that started it (nil: not recorded — a ledger written before owners were, or an
        /// operation of nobody signed in —, or recorded as an id that is not a valid one: see
        /// ``invalidAccount``).
        public var account: AccountID?
        /// The account an earlier version recorded as having started it when that is not a valid ``AccountID``
        /// (`""`, `"null"`: navigation once took them as accounts), kept exactly as it was written; nil otherwise.
        /// Such an operation belongs to no account's session — ``unsettled(account:)`` never hands it back, as an
        /// unknown account is never a shared one (MOB-DATA-006) — and is otherwise an entry like any other:
        /// listed, completed and removed, never dropped or taken for damage.
        public internal(set) var invalidAccount: String?
        /// When it was settled (``complete(_:_:result:)``), by the ledger's clock; nil while it is not, and
        /// for entries a ledger wrote before it kept the time.
        public var settledAt: Date?

        init(
            id: String, action: String, state: State, result: String? = nil, reference: String? = nil,
            account: AccountID? = nil
        ) {
            self.id = id
            self.action = action
            self.state = state
            self.result = result
            self.reference = reference
            self.account = account
        }

        private enum CodingKeys: String, CodingKey {
            case id, action, state, result, reference, account, settledAt
        }

        /// Decodes an entry; an account that is not a valid ``AccountID`` is kept in ``invalidAccount`` (the
        /// entry is not damaged: it may be the record of a payment that must not run twice).
        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            id = try container.decode(String.self, forKey: .id)
            action = try container.decode(String.self, forKey: .action)
            state = try container.decode(State.self, forKey: .state)
            result = try container.decodeIfPresent(String.self, forKey: .result)
            reference = try container.decodeIfPresent(String.self, forKey: .reference)
            let recorded = try container.decodeIfPresent(String.self, forKey: .account)
            account = recorded.flatMap { try? AccountID($0) }
            invalidAccount = account == nil ? recorded : nil
            settledAt = try container.decodeIfPresent(Date.self, forKey: .settledAt)
        }

        /// Encodes the entry as ledgers always have: the account as its string (an ``invalidAccount`` as it was
        /// written), members without a value left out.
        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(id, forKey: .id)
            try container.encode(action, forKey: .action)
            try container.encode(state, forKey: .state)
            try container.encodeIfPresent(result, forKey: .result)
            try container.encodeIfPresent(reference, forKey: .reference)
            try container.encodeIfPresent(account?.rawValue ?? invalidAccount, forKey: .account)
            try container.encodeIfPresent(settledAt, forKey: .settledAt)
        }
    }

    /// What ``begin(_:action:reference:account:)`` decided.
    public enum Begin: Sendable, Hashable {
        /// Newly recorded: run it now.
        case run
        /// Already recorded (a replay, a restore, a relaunch): do not run it; this is what is known.
        case recorded(Entry)
    }

    /// The ledger file; nil for a ledger kept in a vault.
    public nonisolated let file: URL?
    /// The vault dataset that keeps the ledger; nil for a ledger kept in a file.
    public nonisolated let dataset: String?
    private let clock: WallClock
    private let storage: Storage
    /// A file ledger's entries, as its file holds them (a vault ledger keeps none in memory).
    private var entries: [String: Entry] = [:]

    private enum Storage {
        /// Held for the ledger's life on `<file>.lock`: the ledger is read once and rewritten whole, so a
        /// second ledger on the same file (an app extension, a second instance) would drop this one's
        /// entries and let an operation run twice.
        case file(lock: ExclusiveFileLock)
        case vault(VaultLedger)
    }

    /// The ledger kept as records of `dataset` in `vault`, the account's vault (see the type's discussion).
    /// Nothing is read until the first call; the dataset must be declared in the vault's inventory and
    /// account-bound (otherwise each call throws the vault's error), and kept until an event, never for a
    /// duration.
    ///
    /// - Throws: ``EffectLedgerError`` `sweptByRetention` when the vault's inventory declares `dataset` with a
    ///   retention duration: the vault's sweep (``Vault/sweepExpired(now:)``) deletes its records by age, which
    ///   would delete the ledger's record-id key — every later call `damaged`, nothing published again for the
    ///   account — and forget operations still started, so that the next `begin` answers `.run` and runs one a
    ///   second time. Declare it `untilEvent`, and forget settled operations with ``removeSettled(before:)``.
    public init(vault: Vault, dataset: String, clock: WallClock = .system) throws(EffectLedgerError) {
        if let declared = vault.inventory.datasets[dataset], case .duration(let duration) = declared.retention {
            throw EffectLedgerError(
                code: .sweptByRetention,
                message:
                    "\(dataset) declares a retention of \(Dataset.Retention.duration(duration)): the vault sweeps its records by age, which would delete the ledger's key and forget operations still started (run again); declare it untilEvent and prune settled operations with removeSettled(before:) instead"
            )
        }
        file = nil
        self.dataset = dataset
        self.clock = clock
        storage = .vault(VaultLedger(vault: vault, dataset: dataset, clock: clock))
    }

    /// The ledger in `file` (created on first write): **unsealed** plaintext outside any vault — only for
    /// operations whose records are not personal data (see the type's discussion).
    ///
    /// - Throws: ``EffectLedgerError`` `damaged` when the file exists but is not a ledger: it is never
    ///   replaced, since it is the only thing preventing a second payment; `inUse` while another ledger
    ///   (another process, or another instance in this one) has the same file.
    public init(file: URL, clock: WallClock = .system) throws {
        self.file = file
        dataset = nil
        self.clock = clock
        let lock: ExclusiveFileLock
        do { lock = try ExclusiveFileLock(file.path + ".lock", .file) } catch {
            switch error {
            case .held:
                throw EffectLedgerError(
                    code: .inUse, message: "\(file.path) is in use by another effect ledger (another process?)")
            case .failed(let code):
                throw EffectLedgerError(
                    code: .ioError, message: "cannot lock \(file.path).lock: \(String(cString: strerror(code)))")
            }
        }
        storage = .file(lock: lock)
        let bytes: [UInt8]
        do { bytes = try DurableFiles.read(file.path, limit: 64 << 20) } catch {
            // Only a ledger that does not exist is empty: one that cannot be read must not look empty.
            guard error.isNotFound else { throw EffectLedgerError(code: .ioError, message: error.description) }
            return
        }
        do {
            let list = try JSONDecoder().decode([Entry].self, from: Data(bytes))
            entries = Dictionary(list.map { ($0.id, $0) }, uniquingKeysWith: { _, last in last })
        } catch {
            throw EffectLedgerError(code: .damaged, message: "\(file.path) is not an effect ledger: \(error)")
        }
    }

    /// The id of `action` confirmed on navigation entry `entry`: the same every time that confirmation is
    /// replayed or restored (entry ids survive snapshots), different for another entry or `attempt`.
    public static func operationID(entry: String, action: String, attempt: Int = 1) -> String {
        "\(action)@\(entry)#\(attempt)"
    }

    /// Records `id` before it runs, or returns what is already known about it. In a vault, the look-up and
    /// the record are one transaction: of two callers — two processes on one vault — exactly one is told to
    /// run.
    ///
    /// - Parameter account: the account starting it; ``unsettled(account:)`` then hands it back only in that
    ///   account's session (one ledger for all accounts of the device).
    /// - Throws: ``EffectLedgerError`` `damaged`, recording nothing, when what is recorded under `id` cannot
    ///   be read (it is never replaced: it may hold the key of a call already made); `ioError` when the file
    ///   cannot be written; the vault's ``VaultError`` (`vaultClosed`, `keyUnavailable`, …) in a vault.
    public func begin(_ id: String, action: String, reference: String? = nil, account: AccountID? = nil) async throws
        -> Begin
    {
        let entry = Entry(id: id, action: action, state: .started, reference: reference, account: account)
        if case .vault(let vault) = storage { return try await vault.begin(entry) }
        if let existing = entries[id] { return .recorded(existing) }
        entries[id] = entry
        do { try persist() } catch {
            // Not recorded, so not run: the ledger must not remember a start it never wrote down (a retry
            // would be refused as already started, and only a relaunch would let it run).
            entries[id] = nil
            throw error
        }
        return .run
    }

    /// Records how `id` ended.
    ///
    /// - Throws: ``EffectLedgerError`` `unknownOperation` for an operation never begun; `alreadySucceeded`,
    ///   changing nothing, for one already recorded as succeeded — whatever it is now said to be: failed or
    ///   running (a late answer of a second caller), which would let the next confirmation run it again, or
    ///   succeeded again (a reattach racing the first caller), which would rewrite the result the user was
    ///   shown and when it settled (found in an outside audit). What is recorded stays: read it with
    ///   ``entry(_:)``. An operation recorded as failed may still be completed (a late answer that it did
    ///   succeed is recorded, so that the next confirmation does not run it again). `damaged`, changing
    ///   nothing, when its record cannot be read.
    public func complete(_ id: String, _ state: State, result: String?) async throws {
        if case .vault(let vault) = storage {
            try await vault.complete(id, state, result: result)
            return
        }
        guard let before = entries[id] else { throw Self.unknown(id) }
        let entry = try Self.completed(before, state, result: result, at: clock.now())
        entries[id] = entry
        do { try persist() } catch {
            entries[id] = before  // what is on disk
            throw error
        }
    }

    static func unknown(_ id: String) -> EffectLedgerError {
        EffectLedgerError(code: .unknownOperation, message: "\(id) was never begun")
    }

    /// `entry` settled as `state` at `now`, or `alreadySucceeded` when it is recorded as succeeded.
    static func completed(_ entry: Entry, _ state: State, result: String?, at now: Date) throws -> Entry {
        if entry.state == .succeeded {
            throw EffectLedgerError(
                code: .alreadySucceeded,
                message: "\(entry.id) is recorded as succeeded, with its result; it is not recorded again as \(state)")
        }
        var entry = entry
        entry.state = state
        entry.result = result
        entry.settledAt = state == .started ? nil : now
        return entry
    }

    /// What is known about `id`.
    ///
    /// - Throws: ``EffectLedgerError`` `damaged` when its record cannot be read (never "nothing known",
    ///   which would let it run again); the vault's errors in a vault.
    public func entry(_ id: String) async throws -> Entry? {
        if case .vault(let vault) = storage { return try await vault.entry(id) }
        return entries[id]
    }

    /// Every operation recorded, sorted by id: to review the ledger, or move it elsewhere.
    ///
    /// - Throws: as ``unsettled()``.
    public func allEntries() async throws -> [Entry] {
        if case .vault(let vault) = storage { return try await vault.all() }
        return entries.values.sorted { $0.id < $1.id }
    }

    /// Operations started and not settled: after a relaunch, reattach them (look their outcome up through
    /// ``Entry/reference``) instead of starting them again.
    ///
    /// - Throws: ``EffectLedgerError`` `damaged` when a record of the ledger cannot be read (it could be one
    ///   of them: left out, it would be started again); the vault's errors in a vault.
    public func unsettled() async throws -> [Entry] {
        try await allEntries().filter { $0.state == .started }
    }

    /// The unsettled operations `account` started (those begun without an account too): what a snapshot
    /// taken in `account`'s session lists as in flight. Another account's operation — started before a
    /// switch, still running when the app was killed — is never reattached in this one's session, nor one
    /// recorded with an ``Entry/invalidAccount`` (in nobody's: ``unsettled()`` lists it).
    public func unsettled(account: AccountID?) async throws -> [Entry] {
        try await unsettled().filter { $0.invalidAccount == nil && ($0.account == nil || $0.account == account) }
    }

    /// Forgets the operations settled before `date`, so that the ledger does not grow for ever (a file
    /// ledger is rewritten whole on every change). Call it with a date older than any confirmation that may
    /// still be replayed (a screen kept in a snapshot for weeks replays its confirmation on restore: keep at
    /// least that long). An operation still started (its outcome unknown) is never forgotten, nor one settled
    /// before the ledger kept the time. The attempts of one confirmation
    /// (``operationID(entry:action:attempt:)``) are forgotten together or not at all: a failed first attempt
    /// forgotten while a later one stays would be found missing, and run again, by an app that looks for the
    /// next attempt after the failed ones. Returns how many were removed.
    ///
    /// - Throws: ``EffectLedgerError`` `damaged`, removing nothing, when a record cannot be read (which
    ///   confirmation it belongs to cannot be told).
    @discardableResult
    public func removeSettled(before date: Date) async throws -> Int {
        if case .vault(let vault) = storage { return try await vault.removeSettled(before: date) }
        let old = Self.forgettable(Array(entries.values), before: date)
        guard !old.isEmpty else { return 0 }
        let before = entries
        for id in old { entries[id] = nil }
        do { try persist() } catch {
            entries = before  // what is on disk
            throw error
        }
        return old.count
    }

    /// The ids among `entries` that ``removeSettled(before:)`` forgets.
    static func forgettable(_ entries: [Entry], before date: Date) -> Set<String> {
        func isOld(_ entry: Entry) -> Bool { entry.state != .started && (entry.settledAt.map { $0 < date } ?? false) }
        let chains = Dictionary(grouping: entries) { confirmation(of: $0.id) }
        return Set(entries.filter { chains[confirmation(of: $0.id)]!.allSatisfy(isOld) }.map(\.id))
    }

    /// The confirmation an operation id belongs to: the id without its `#attempt` suffix (every attempt of a
    /// confirmation shares it), or the id itself when it has none.
    static func confirmation(of id: String) -> Substring {
        guard let mark = id.lastIndex(of: "#"), !id[id.index(after: mark)...].isEmpty,
            id[id.index(after: mark)...].utf8.allSatisfy({ (48...57).contains($0) })
        else { return id[...] }
        return id[..<mark]
    }

    /// Moves the entries of the file ledger `file` (one an earlier version of the app kept, say) into this
    /// ledger, kept in a vault, and then deletes the file: in one transaction, and the file and its lock go
    /// only once it committed. An entry already recorded here under the same id is kept as it is (never
    /// replaced: it is newer than the file, or a record this import made before a crash). Entries keep their
    /// key (``Entry/reference``), state and account, so a started operation is reattached, never started
    /// under a new key. Nothing happens when there is no file (a leftover lock file alone is removed). Call
    /// it before the ledger is used, each launch until it returns.
    ///
    /// - Returns: how many entries were added.
    /// - Throws: ``EffectLedgerError`` `damaged` when the file is not a ledger: it is kept, untouched, and
    ///   nothing is imported (report it: its operations cannot be told apart, so none may run again);
    ///   `inUse` while a file ledger on it is open; `ioError`; `notInVault` for a ledger kept in a file; the
    ///   vault's errors. Whenever it throws, the file is where it was.
    @discardableResult
    public func importFile(_ file: URL) async throws -> Int {
        guard case .vault(let vault) = storage else {
            throw EffectLedgerError(code: .notInVault, message: "only a ledger kept in a vault imports a file")
        }
        let lockPath = file.path + ".lock"
        guard DurableFiles.kind(file.path) != nil else {
            // A lock left without its ledger (the import was cut after the file went): removed while held.
            if DurableFiles.kind(lockPath) != nil, let lock = try? ExclusiveFileLock(lockPath, .file) {
                _ = try? DurableFiles.remove(lockPath)
                withExtendedLifetime(lock) {}
            }
            return 0
        }
        let old = try EffectLedger(file: file, clock: clock)
        let imported = try await vault.insert(try await old.allEntries())
        // Committed: the file goes, then its lock — removed while the old ledger still holds it, so a ledger
        // opened on it meanwhile elsewhere waits, and then finds no file (ExclusiveFileLock).
        do {
            try DurableFiles.remove(file.path)
            try? DurableFiles.syncDirectory(file.deletingLastPathComponent().path)
            try DurableFiles.remove(lockPath)
        } catch {
            throw EffectLedgerError(
                code: .ioError,
                message:
                    "\(file.path) was imported but cannot be removed (\(error.description)); importing it again is safe"
            )
        }
        withExtendedLifetime(old) {}
        return imported
    }

    /// Writes the file ledger atomically and durably (a temporary file synced, renamed, the directory synced).
    private func persist() throws {
        guard let file else { return }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let data = try encoder.encode(entries.values.sorted { $0.id < $1.id })
        do {
            try DurableFiles.write([UInt8](data), to: file.path, mode: 0o600, exclusive: false)
        } catch { throw EffectLedgerError(code: .ioError, message: "cannot write \(file.path): \(error.description)") }
    }
}

/// An effect ledger kept as records of a vault dataset: one record per operation, under a keyed digest of
/// its id (`op:` and 64 hex digits; the key is the 32 random bytes of record `salt`, sealed like the rest),
/// its value the entry as JSON. Every call is one transaction; nothing is kept in memory between calls.
struct VaultLedger: Sendable {
    let vault: Vault
    let dataset: String
    let clock: WallClock

    static let saltID = "salt"
    static let recordPrefix = "op:"

    func begin(_ entry: EffectLedger.Entry) async throws -> EffectLedger.Begin {
        try await vault.write(dataset) { records in
            let salt = try Self.salt(records, creating: true)!
            let recordID = Self.recordID(entry.id, salt: salt)
            if let existing = try Self.entry(records, recordID, id: entry.id) { return .recorded(existing) }
            try records.put(recordID, try Self.encoded(entry))
            return .run
        }
    }

    func complete(_ id: String, _ state: EffectLedger.State, result: String?) async throws {
        let now = clock.now()
        try await vault.write(dataset) { records in
            guard let salt = try Self.salt(records, creating: false) else { throw EffectLedger.unknown(id) }
            let recordID = Self.recordID(id, salt: salt)
            guard let before = try Self.entry(records, recordID, id: id) else { throw EffectLedger.unknown(id) }
            try records.put(recordID, try Self.encoded(EffectLedger.completed(before, state, result: result, at: now)))
        }
    }

    func entry(_ id: String) async throws -> EffectLedger.Entry? {
        try await vault.read(dataset) { records in
            guard let salt = try Self.salt(records, creating: false) else { return nil }
            return try Self.entry(records, Self.recordID(id, salt: salt), id: id)
        }
    }

    func all() async throws -> [EffectLedger.Entry] {
        try await vault.read(dataset) { records in try Self.all(records).map(\.entry) }
    }

    func removeSettled(before date: Date) async throws -> Int {
        try await vault.write(dataset) { records in
            let all = try Self.all(records)
            let old = EffectLedger.forgettable(all.map(\.entry), before: date)
            for (recordID, entry) in all where old.contains(entry.id) { try records.delete(recordID) }
            return old.count
        }
    }

    /// Records the entries not recorded yet, in one transaction; returns how many.
    func insert(_ entries: [EffectLedger.Entry]) async throws -> Int {
        try await vault.write(dataset) { records in
            let salt = try Self.salt(records, creating: true)!
            var added = 0
            for entry in entries {
                let recordID = Self.recordID(entry.id, salt: salt)
                // Whatever is recorded stays — a record that cannot be read too (never replaced).
                if try records.storedBytes(recordID) != nil { continue }
                try records.put(recordID, try Self.encoded(entry))
                added += 1
            }
            return added
        }
    }

    // MARK: - Records

    static func damaged(_ message: String) -> EffectLedgerError {
        EffectLedgerError(code: .damaged, message: message)
    }

    /// The salt of the record ids; made when `creating` and there is none. A ledger with records and no
    /// salt, or a salt that does not open, is damaged.
    static func salt(_ records: VaultRecords, creating: Bool) throws -> [UInt8]? {
        if let stored = try opened(records, saltID) {
            guard stored.count == 32 else {
                throw damaged("the ledger's record-id key is \(stored.count) bytes, not 32")
            }
            return [UInt8](stored)
        }
        if try records.ids(after: recordPrefix, limit: 1).first?.hasPrefix(recordPrefix) == true {
            throw damaged("the ledger has records but no record-id key: they cannot be found")
        }
        guard creating else { return nil }
        var salt: [UInt8] = []
        for _ in 0..<4 { withUnsafeBytes(of: RandomSource.system.next().littleEndian) { salt += $0 } }
        try records.put(saltID, Data(salt))
        return salt
    }

    /// `op:` and the hex SHA-256 of a domain tag, the salt and the operation id.
    static func recordID(_ id: String, salt: [UInt8]) -> String {
        recordPrefix + SHA256Digest.hex(Array("keel.effect-ledger.record.v1".utf8) + [0] + salt + Array(id.utf8))
    }

    /// Record `recordID`, opened; `damaged` when it does not open.
    static func opened(_ records: VaultRecords, _ recordID: String) throws -> Data? {
        do { return try records.get(recordID) } catch let error as VaultError where error.code == .cannotOpen {
            throw damaged("a record of the ledger does not open (\(error.message)); it is kept as it is")
        }
    }

    /// The entry recorded under `recordID`, which must be `id`'s (when given).
    static func entry(_ records: VaultRecords, _ recordID: String, id: String?) throws -> EffectLedger.Entry? {
        guard let data = try opened(records, recordID) else { return nil }
        guard let entry = try? JSONDecoder().decode(EffectLedger.Entry.self, from: data) else {
            throw damaged("a record of the ledger is not an entry; it is kept as it is")
        }
        if let id, entry.id != id { throw damaged("the record of \(id) holds \(entry.id); it is kept as it is") }
        return entry
    }

    /// Every entry with its record id, sorted by operation id.
    static func all(_ records: VaultRecords) throws -> [(recordID: String, entry: EffectLedger.Entry)] {
        guard let salt = try salt(records, creating: false) else { return [] }
        var found: [(recordID: String, entry: EffectLedger.Entry)] = []
        for recordID in try records.ids() where recordID.hasPrefix(recordPrefix) {
            guard let entry = try entry(records, recordID, id: nil) else { continue }
            guard self.recordID(entry.id, salt: salt) == recordID else {
                throw damaged("a record of the ledger holds another operation's entry; it is kept as it is")
            }
            found.append((recordID, entry))
        }
        return found.sorted { $0.entry.id < $1.entry.id }
    }

    static func encoded(_ entry: EffectLedger.Entry) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return try encoder.encode(entry)
    }
}

/// Why the effect ledger failed.
public struct EffectLedgerError: KeelError, Equatable {
    /// Codes of ``EffectLedgerError``.
    public typealias Code = ErrorCode<EffectLedgerError>
    /// What went wrong.
    public let code: Code
    /// A short explanation for developers.
    public let message: String

    /// An error of kind `code`.
    public init(code: Code, message: String) {
        self.code = code
        self.message = message
    }

    /// `effect ledger damaged: ...`.
    public var description: String { "effect ledger \(code): \(message)" }
}

extension ErrorCode where Domain == EffectLedgerError {
    /// The ledger file exists but is not a ledger, or a record of a ledger in a vault cannot be read (never
    /// replaced).
    public static var damaged: Self { Self("damaged") }
    /// Completing an operation that was never begun.
    public static var unknownOperation: Self { Self("unknownOperation") }
    /// The ledger could not be written (the operation must not run).
    public static var ioError: Self { Self("ioError") }
    /// Completing an operation already recorded as succeeded, with any outcome (nothing is changed).
    public static var alreadySucceeded: Self { Self("alreadySucceeded") }
    /// Another effect ledger (another process, or another instance in this one) has the same file: one at
    /// a time, or each would rewrite the file without the other's entries.
    public static var inUse: Self { Self("inUse") }
    /// ``EffectLedger/importFile(_:)`` on a ledger kept in a file (only one kept in a vault imports).
    public static var notInVault: Self { Self("notInVault") }
    /// ``EffectLedger/init(vault:dataset:clock:)`` on a dataset the vault's inventory keeps for a duration:
    /// the vault's retention sweep would delete the ledger's key and its started operations. Declare the
    /// dataset `untilEvent`; prune with ``EffectLedger/removeSettled(before:)``.
    public static var sweptByRetention: Self { Self("sweptByRetention") }
}
