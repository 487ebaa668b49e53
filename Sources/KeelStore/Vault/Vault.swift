public import Foundation
public import KeelCore
import KeelCrypto

/// Everything of one account on this device: its records and files (sealed where the inventory's
/// classification asks), in a directory named by its ``VaultNamespace``, with keys in a ``KeyStore``
/// outside the data directory (MOB-DATA-002, MOB-DATA-006).
///
/// Get one from ``Vaults/open(_:)``. One vault is open at a time; once it is closed (an account switch,
/// logout), every call on it — and any write or read that was still running — fails with
/// ``VaultError`` `vaultClosed`, and nothing it does can reach the next account's vault, which lives in
/// other files under other keys.
///
/// Datasets must be declared in the inventory and account-bound. `personal`, `sensitive` and
/// `credential` datasets are sealed with AES-256-GCM under a key of their own for this account, created on
/// first use; `public` and `internal` ones are kept plain. Each record's associated data binds the account,
/// the dataset and the record id, so ciphertext moved to another record, dataset or account does not open.
public final class Vault: Sendable {
    /// The account whose data this is.
    public let account: AccountID
    /// The directory name of the vault.
    public let namespace: VaultNamespace
    /// Increases with every vault opened by the same ``Vaults``: work tagged with an older epoch belongs to
    /// an account that is no longer active.
    public let epoch: UInt64
    /// The vault's directory.
    public let directory: URL

    let path: String
    /// The declarations every dataset of this vault is checked against (the ``Vaults/inventory`` that opened
    /// it): what a store kept in a dataset of the vault reads to know how the vault treats it (its retention,
    /// its deletion triggers).
    public let inventory: Inventory
    let keyStore: any KeyStore
    let clock: WallClock
    private let state: Locked<State>
    /// Serializes file work and manifest updates; closing drains it.
    private let fileQueue = DispatchQueue(label: "keel.vault.files")
    /// Where moves to a changed declaration run (``moveToCurrentDeclaration(_:)``).
    private let moveQueue = DispatchQueue(label: "keel.vault.move")
    /// Tests only: runs when a write is about to make a dataset's first key, before it waits for the file
    /// queue (where a close() may overtake it).
    package let beforeFirstKey = Locked<(@Sendable () -> Void)?>(nil)
    /// Tests only: runs at each step of ``moveToCurrentDeclaration(_:)`` (`copied`, after each batch of
    /// records; `staged`; `swapped`; `dropped`; `file`, after each file), and stops the move there when it
    /// throws — as a crash would, with everything before it on disk.
    package let moveStep = Locked<(@Sendable (String) throws -> Void)?>(nil)

    struct State {
        var isOpen = true
        var manifest: VaultManifest
        var sealers: [KeyID: RecordSealer] = [:]
        var pools: [Dataset.BackupPolicy: DatabasePool] = [:]
        var tables: Set<String> = []
        /// Known tables whose dataset's manifest entry does not say yet that they were committed: the next
        /// committed write marks them. Empty on nearly every write, which then does no more than look.
        var unmarkedTables: Set<String> = []
        /// Prepared accesses for writing, per dataset (statements built once; the sealer of the current key).
        var accesses: [String: Access] = [:]
    }

    init(
        account: AccountID, epoch: UInt64, directory: URL, manifest: VaultManifest, inventory: Inventory,
        keyStore: any KeyStore, clock: WallClock
    ) {
        self.account = account
        namespace = VaultNamespace(account)
        self.epoch = epoch
        self.directory = directory
        path = directory.path
        self.inventory = inventory
        self.keyStore = keyStore
        self.clock = clock
        state = Locked(State(manifest: manifest))
    }

    /// Whether the vault is still the open one.
    public var isOpen: Bool { state.withLock { $0.isOpen } }

    /// The largest record value or file a vault stores, in bytes (just under 2 GiB: what a file read
    /// back whole, sealed, can hold). A larger one is refused with ``VaultError`` `tooLarge` before anything
    /// is written; keep media that large outside the vault, or split it. (A record in a dataset that is not
    /// sealed meets SQLite's own limit first, 1,000,000,000 bytes by default: `databaseFailed`.)
    public static let maximumValueSize = Int(Int32.max) - RecordSealer.overhead

    static func tooLarge(_ count: Int, dataset: String, recordID: String) -> VaultError {
        VaultError(
            code: .tooLarge, dataset: dataset, recordID: recordID,
            message:
                "\(count) bytes is more than a vault keeps in one piece (\(maximumValueSize) bytes): nothing was written"
        )
    }

    // MARK: - Records

    /// Writes records of `dataset` in one transaction: committed when `body` returns, rolled back when it
    /// throws.
    ///
    /// - Throws: ``VaultError`` — `vaultClosed` (also when the vault closes while `body` runs: the
    ///   transaction is interrupted and rolled back), `misplaced`, `locked`, `keyUnavailable`; the
    ///   inventory's `undeclared`; whatever `body` throws.
    public func write<T: Sendable>(_ dataset: String, _ body: @escaping @Sendable (VaultRecords) throws -> T)
        async throws -> T
    {
        try await write(dataset, inline: false, body)
    }

    /// ``write(_:_:)-(String,_)``, run on the calling thread when the database's writer is idle
    /// (``DatabasePool/writeInline(_:)``): for Keel's own short bodies that never wait for other work.
    package func write<T: Sendable>(
        _ dataset: String, inline: Bool, _ body: @escaping @Sendable (VaultRecords) throws -> T
    ) async throws -> T {
        let access = try prepare(dataset, writing: true)
        return try await run(access) {
            let (result, created) = try await access.pool.write(inline: inline) { db in
                try self.requireOpen()
                let created = try self.ensureTable(access, db)
                return (try body(VaultRecords(database: db, access: access, vault: self)), created)
            }
            // Committed: remembered, and marked committed in the manifest where it is not yet (a table an older
            // Keel made, first read and then written here).
            self.rememberTables([access], created: created)
            return result
        }
    }

    /// Reads records of `dataset` in one read transaction (a consistent snapshot).
    ///
    /// - Throws: as ``write(_:_:)``; a read still running when the vault closes throws `vaultClosed`
    ///   instead of returning.
    public func read<T: Sendable>(_ dataset: String, _ body: @escaping @Sendable (VaultRecords) throws -> T)
        async throws -> T
    {
        let access = try prepare(dataset, writing: false)
        return try await run(access) {
            let result = try await access.pool.read { db in
                try self.requireOpen()
                return try body(
                    VaultRecords(database: db, access: access, vault: self, exists: self.readableTable(access, db)))
            }
            try self.requireOpen()
            return result
        }
    }

    /// Writes records of several datasets in one transaction: all of it is committed when `body` returns,
    /// none of it when it throws (an outbox entry and the local copy it changes, say). The datasets must live
    /// in the same database file, which is the case when they share a backup policy.
    ///
    /// - Throws: as ``write(_:_:)``; ``VaultError`` `misplaced` when the datasets' backup policies differ.
    public func write<T: Sendable>(
        _ datasets: [String], _ body: @escaping @Sendable (VaultTransaction) throws -> T
    ) async throws -> T {
        try await write(datasets, inline: false, body)
    }

    /// ``write(_:_:)-([String],_)``, run on the calling thread when the database's writer is idle
    /// (``DatabasePool/writeInline(_:)``): for Keel's own short bodies that never wait for other work.
    package func write<T: Sendable>(
        _ datasets: [String], inline: Bool, _ body: @escaping @Sendable (VaultTransaction) throws -> T
    ) async throws -> T {
        let (first, accesses) = try prepare(datasets, writing: true)
        return try await run(first) {
            let (result, created) = try await first.pool.write(inline: inline) { db in
                try self.requireOpen()
                var records: [String: VaultRecords] = [:]
                var created: [Access] = []
                for access in accesses {
                    if try self.ensureTable(access, db) { created.append(access) }
                    records[access.dataset] = VaultRecords(database: db, access: access, vault: self)
                }
                return (try body(VaultTransaction(records: records, database: db)), created)
            }
            self.rememberTables(accesses, created: !created.isEmpty)
            return result
        }
    }

    /// Reads several datasets in one read transaction (one consistent snapshot of all of them); as
    /// ``write(_:_:)-([String],_)`` they must share a backup policy.
    public func read<T: Sendable>(
        _ datasets: [String], _ body: @escaping @Sendable (VaultTransaction) throws -> T
    ) async throws -> T {
        let (first, accesses) = try prepare(datasets, writing: false)
        return try await run(first) {
            let result = try await first.pool.read { db in
                try self.requireOpen()
                var records: [String: VaultRecords] = [:]
                for access in accesses {
                    records[access.dataset] = VaultRecords(
                        database: db, access: access, vault: self, exists: try self.readableTable(access, db))
                }
                return try body(VaultTransaction(records: records, database: db))
            }
            try self.requireOpen()
            return result
        }
    }

    /// The accesses of a transaction over several datasets, which must share one database file.
    private func prepare(_ datasets: [String], writing: Bool) throws -> (first: Access, all: [Access]) {
        let accesses = try datasets.map { try prepare($0, writing: writing) }
        guard let first = accesses.first else {
            throw VaultError(code: .misplaced, namespace: namespace.rawValue, message: "no dataset named")
        }
        if let other = accesses.first(where: { $0.pool !== first.pool }) {
            throw VaultError(
                code: .misplaced, namespace: namespace.rawValue, dataset: other.dataset,
                message:
                    "\(other.dataset) (backup \(other.declaration.backup)) and \(first.dataset) (backup \(first.declaration.backup)) live in different database files: one transaction cannot span them"
            )
        }
        return (first, accesses)
    }

    /// Stores `value` as record `id` of `dataset` (replacing it), in a transaction of its own.
    public func put(_ dataset: String, id: String, _ value: Data) async throws {
        try await write(dataset) { try $0.put(id, value) }
    }

    /// Record `id` of `dataset`, or nil when there is none.
    public func get(_ dataset: String, id: String) async throws -> Data? {
        try await read(dataset) { try $0.get(id) }
    }

    // MARK: - Files

    /// Stores a file of `dataset` (drafts, media, exports), sealed when the dataset is, atomically and
    /// durably; re-applies the platform's exclusion from backup after each write when the dataset's backup
    /// policy asks for it.
    ///
    /// - Throws: ``VaultError`` `misplaced` unless `name` is 1…128 characters of `A-Z a-z 0-9 . _ -` not
    ///   starting with a dot; otherwise as ``write(_:_:)``.
    public func writeFile(_ dataset: String, named name: String, contents: Data) async throws {
        let access = try prepare(dataset, writing: true, file: name)
        // Checked before anything is recorded: a file this large would not be read back (nor sealed).
        guard contents.count <= Self.maximumValueSize else {
            throw Self.tooLarge(contents.count, dataset: dataset, recordID: name)
        }
        try await onFileQueue {
            try self.requireOpen()
            let directory = try self.filesDirectory(access, create: true)
            let bytes = try access.stored(contents, recordID: Self.fileRecordID(name), kind: .file)
            // Recorded first: a file the manifest does not list would outlive a logout's purge (which goes by
            // the manifest) if the manifest could not be written after it (a full disk).
            try self.markWritten(access, files: true)
            do throws(DurableFiles.Failure) {
                try DurableFiles.write([UInt8](bytes), to: directory + "/" + name, mode: 0o600, exclusive: false)
            } catch {
                throw VaultError(code: .ioError, dataset: dataset, recordID: name, message: error.description)
            }
            try BackupExclusion.apply(to: directory + "/" + name, policy: access.declaration.backup)
            // The directory too: a backup that kept it, empty, without the files it excludes would make the
            // restore inspector take the dataset's files for present (found in an outside audit).
            try BackupExclusion.apply(to: directory, policy: access.declaration.backup)
        }
    }

    /// The file `name` of `dataset`, opened when sealed, or nil when there is none.
    public func readFile(_ dataset: String, named name: String) async throws -> Data? {
        let access = try prepare(dataset, writing: false, file: name)
        return try await onFileQueue {
            try self.requireOpen()
            let file = self.filePath(dataset, name)
            let bytes: [UInt8]
            do throws(DurableFiles.Failure) { bytes = try DurableFiles.read(file, limit: Int(Int32.max)) } catch {
                if error.isNotFound { return nil }
                throw VaultError(code: .ioError, dataset: dataset, recordID: name, message: error.description)
            }
            guard access.sealed else { return Data(bytes) }
            return try bytes.withUnsafeBytes { raw throws(VaultError) -> Data in
                try self.sealer(for: raw, access).open(
                    raw, recordID: Self.fileRecordID(name), dataset: dataset, kind: .file)
            }
        }
    }

    /// Deletes the file `name` of `dataset` (nothing when it is absent).
    public func removeFile(_ dataset: String, named name: String) async throws {
        _ = try prepare(dataset, writing: false, file: name)  // declared, account-bound, a safe name
        try await onFileQueue {
            try self.requireOpen()
            do throws(DurableFiles.Failure) {
                try DurableFiles.remove(self.filePath(dataset, name))
            } catch { throw VaultError(code: .ioError, dataset: dataset, recordID: name, message: error.description) }
        }
    }

    /// The names of `dataset`'s files, sorted.
    public func fileNames(_ dataset: String) async throws -> [String] {
        let access = try prepare(dataset, writing: false)
        return try await onFileQueue {
            try self.requireOpen()
            let directory = try self.filesDirectory(access, create: false)
            return try self.listedFiles(directory).sorted()
        }
    }

    // MARK: - Permissions bound to this device

    /// Records that a permission or enrollment (`notifications`, `biometricUnlock`, `camera`, ...) was
    /// granted for this account on this device. After a restore onto another device, the restore
    /// inspector reports these as `permissionsToRequest`.
    public func recordGrantedPermission(_ name: String) async throws {
        guard let identity = try deviceIdentity(create: true) else { return }
        try await onFileQueue {
            try self.requireOpen()
            try self.updateManifest { manifest in
                var grants = (manifest.permissions ?? []).filter { $0.name != name }
                grants.append(.init(name: name, deviceIdentity: identity))
                manifest.permissions = grants
            }
        }
    }

    /// Permissions and enrollments granted for this account on another device (the vault was restored or
    /// transferred): ask for them again. Empty when they were granted here, or never.
    public func permissionsToRequest() throws -> [String] {
        let manifest = state.withLock { $0.manifest }
        guard manifest.permissions?.isEmpty == false else { return [] }
        return manifest.permissionsToRequest(on: try deviceIdentity(create: false))
    }

    private func deviceIdentity(create: Bool) throws(VaultError) -> String? {
        do { return try keyStore.deviceIdentity(create: create) } catch {
            throw VaultError(
                code: .keyStoreFailed, namespace: namespace.rawValue, message: error.description, underlying: error)
        }
    }

    /// Records that the schema migration `name` completed (during ``Vaults/open(_:)``).
    func recordMigration(_ name: String) async throws {
        try await onFileQueue {
            try self.requireOpen()
            try self.updateManifest { manifest in
                if manifest.migrations?.contains(name) != true {
                    manifest.migrations = (manifest.migrations ?? []) + [name]
                }
            }
        }
    }

    // MARK: - Keys

    /// Gives `dataset` a new key when its key is unavailable (a restore without keys): records sealed with
    /// the old key are kept untouched — they keep failing with `keyUnavailable` and can be deleted — while
    /// new records (re-downloaded from the server) are sealed with the new key. The explicit recovery path
    /// for synced data; never done automatically.
    public func replaceUnavailableKey(_ dataset: String) async throws {
        let declaration = try declaration(of: dataset)
        try await onFileQueue {
            try self.requireOpen()
            guard let entry = self.state.withLock({ $0.manifest.datasets[dataset] }), let old = entry.keyID else {
                return
            }
            // Its records stay where they were written: a declaration that moved them to another file (or made
            // them plain) must not be recorded here, or the vault, its sweeps and logout would look elsewhere.
            if entry.declaration.backup != declaration.backup || !(declaration.classification >= .personal) {
                throw VaultError(
                    code: .declarationChanged, namespace: self.namespace.rawValue, dataset: dataset,
                    message:
                        "\(dataset) was written with backup \(entry.declaration.backup.rawValue), sealed; the inventory now says backup \(declaration.backup.rawValue)\(declaration.classification >= .personal ? "" : ", plain"). It is moved when the vault opens; its key is replaced after that"
                )
            }
            if try self.readKey(old) != nil {
                throw VaultError(
                    code: .misplaced, namespace: self.namespace.rawValue, dataset: dataset,
                    message: "the key of \(dataset) is available; it is not replaced")
            }
            let key = try self.createKey()
            try self.updateManifest { manifest in
                manifest.datasets[dataset]?.retiredKeyIDs.append(old)
                manifest.datasets[dataset]?.keyID = key.id
                manifest.datasets[dataset]?.declaration = declaration
            }
        }
    }

    // MARK: - A changed declaration

    /// Moves `dataset`'s records and files to where and how the inventory now declares them: into the
    /// database file of its new backup policy, sealed or plain as its new classification asks. An app update
    /// that changes either leaves the data where it was written, refused with `declarationChanged` until it is
    /// moved — which ``Vaults`` does for every such dataset when it opens the vault, before the vault's
    /// migrations run. Call it yourself to know the outcome, or to move a dataset again after the cause of a
    /// refusal is gone.
    ///
    /// - Safe to interrupt: records are copied before the old copy is deleted, and the manifest names the new
    ///   place only once they are all there; where it was going is recorded first (the vault's format says so
    ///   meanwhile, so an older app leaves it alone). A killed app moves it again at the next open and it
    ///   finishes — also when an update in between changed the declaration again: the unfinished move ends
    ///   where it was going, then the data moves on.
    /// - One process at a time: an app and its extension opening the vault together take turns (for up to
    ///   30 s; then this call throws `ioError`, and the next open tries again), and so do deletion triggers.
    /// - The old copy is deleted with its bytes overwritten (secure delete), so data moved out of a
    ///   backed-up file does not stay in it once the write-ahead log is checkpointed.
    /// - Sealed records that only change files move as they are: no key is needed.
    /// - Data that cannot be read here is left where it is, untouched, and the call returns false: records
    ///   or files sealed with a key that is not available (a restore onto another device) cannot be made
    ///   plain. The dataset stays refused (`declarationChanged`), the restore inspector reports why, and the
    ///   next open tries again. A database file that did not come along (device-only data after a restore)
    ///   has nothing to move: the dataset starts empty at its new place (the restore inspector, run before
    ///   the vault is opened, reported its records missing).
    ///
    /// Nothing to move (the declaration changed in other ways, or nothing was written yet) records the new
    /// declaration.
    ///
    /// - Returns: false when the data was left in place because it cannot be read here.
    /// - Throws: ``VaultError`` — `vaultClosed`, `locked`, `keyStoreFailed`, `damaged`, `databaseFailed`,
    ///   `ioError`; the inventory's `undeclared`.
    @discardableResult
    public func moveToCurrentDeclaration(_ dataset: String) async throws -> Bool {
        let declaration = try declaration(of: dataset)
        return try await run(dataset: dataset) {
            // On a queue of its own: a move waits for database writers, and a first write to a dataset waits
            // for the file queue while it holds the writer (the other order would deadlock).
            try await withCheckedThrowingContinuation { continuation in
                moveQueue.async { continuation.resume(with: Result { try self.lockedMove(dataset, to: declaration) }) }
            }
        }
    }

    /// Moves every dataset whose declaration changed since it was written (or whose move was cut short) —
    /// what `Vaults` does when it opens the vault. A dataset that cannot be moved here stays where it is:
    /// refused, reported by the restore inspector, tried again at the next open; the vault opens regardless.
    func moveChangedDatasets() async {
        let changed = state.withLock { state in
            state.manifest.datasets.filter { name, entry in
                guard entry.hasRecords || entry.hasFiles, let declared = inventory.datasets[name],
                    declared.isAccountBound
                else { return false }
                return entry.isWritten(otherwiseThan: declared)
            }.keys.sorted()
        }
        for dataset in changed { _ = try? await moveToCurrentDeclaration(dataset) }
    }

    private func lockedMove(_ dataset: String, to declaration: Dataset) throws -> Bool {
        try self.requireOpen()
        let lock: ExclusiveFileLock
        do {
            lock = try ExclusiveFileLock(
                self.path + "/" + VaultFiles.moveLock, .file, waitingUpTo: .seconds(30))
        } catch {
            throw VaultError(
                code: .ioError, namespace: self.namespace.rawValue, dataset: dataset,
                message: "another process has been moving data of this vault for 30 s; nothing was changed")
        }
        defer { lock.release() }
        // The manifest as it is on disk: another process may have moved it (or purged it) meanwhile.
        try self.withLockedManifest { _ in }
        // Being deleted by a deletion trigger (which finishes before the vault is handed out): not moved.
        if state.withLock({ $0.manifest.pendingPurge?.datasets.contains(dataset) ?? false }) { return true }
        return try self.move(dataset, to: declaration)
    }

    private func move(_ dataset: String, to declaration: Dataset) throws -> Bool {
        let wanted = VaultManifest.MoveTarget(
            backup: declaration.backup, sealed: declaration.classification >= .personal)
        // At most twice: an unfinished move to where it was going, then on to where the inventory says now.
        for _ in 0..<2 {
            guard let entry = state.withLock({ $0.manifest.datasets[dataset] }) else { return true }
            let target = entry.moving ?? wanted
            guard entry.moving != nil || target.backup != entry.declaration.backup || target.sealed != entry.sealed
            else {
                try updateManifest { $0.datasets[dataset]?.declaration = declaration }
                return true
            }
            guard try move(dataset, entry, to: target, declaration) else { return false }
        }
        return true
    }

    /// One move of `dataset` (recorded as `entry`) to `target`; false when it was left in place.
    private func move(
        _ dataset: String, _ entry: VaultManifest.Entry, to target: VaultManifest.MoveTarget, _ declaration: Dataset
    ) throws -> Bool {
        let from = entry.declaration.backup
        let converting = entry.sealed != target.sealed
        // Sealed → plain, a move not started yet: every key the data may be sealed with must be here, and every
        // file must open (files are converted in place, one by one, and cannot be put back); otherwise nothing
        // is touched — and nothing is decrypted and thrown away again at every launch. Records are converted
        // into a copy, which is thrown away when one of them still does not open (a damaged record). A move
        // already under way goes on: what it converted may be all that can be read now.
        if converting, entry.sealed, entry.moving == nil {
            for keyID in entry.allKeyIDs where try readKey(keyID) == nil { return false }
            if entry.hasFiles, try !filesOpen(of: dataset, entry) { return false }
        }
        var sealer: RecordSealer?
        if converting, target.sealed {
            // Stored and recorded before anything is sealed with it: a move cut short seals with the same key.
            let keyID = try withLockedManifest { manifest throws(VaultError) -> KeyID in
                if let existing = manifest.datasets[dataset]?.keyID { return existing }
                let key = try createKey()
                manifest.datasets[dataset]?.keyID = key.id
                return key.id
            }
            sealer = try self.sealer(keyID, dataset: dataset)
        }
        let table = VaultFiles.table(dataset)
        let staging = VaultFiles.stagingTable(dataset)
        let sourceFile = path + "/" + VaultFiles.database(from)
        let records = entry.hasRecords && DurableFiles.kind(sourceFile) != nil
        let source = records ? try pool(for: from) : nil
        if entry.moving == nil {
            // Within one file, the converted copy goes to a staging table, made before the move is recorded: a
            // run that finds the move recorded and no staging table knows the swap below was done.
            if let source, from == target.backup {
                try source.writeSync { db in
                    try db.execute("DROP TABLE IF EXISTS \(DataStore.quoted(staging))")
                    try db.execute(Self.createRecordsTable(staging))
                }
            }
            try updateManifest { $0.datasets[dataset]?.moving = target }
            try moveStep.withLock { $0 }?("staged")
        }
        /// A record's value as the target stores it: the same bytes when the sealing does not change.
        func converted(_ id: String, _ value: Data) throws -> Data {
            guard converting else { return value }
            if let sealer { return value.withUnsafeBytes { sealer.seal($0, recordID: id) } }
            return try value.withUnsafeBytes { raw throws(VaultError) -> Data in
                guard let keyID = RecordSealer.keyID(of: raw), entry.allKeyIDs.contains(keyID) else {
                    throw VaultError(
                        code: .cannotOpen, namespace: namespace.rawValue, dataset: dataset, recordID: id,
                        message: "not sealed with a key of this dataset; nothing was moved")
                }
                return try self.sealer(keyID, dataset: dataset).open(raw, recordID: id, dataset: dataset)
            }
        }
        // Into the other file's records table, then the old table goes (its absence means both were done); or,
        // within one file, into the staging table, which then replaces the records table (its absence means the
        // swap was done).
        let sameFile = from == target.backup
        let copy = sameFile ? staging : table
        if let source, try source.readSync({ db in try Self.tableExists(sameFile ? staging : table, db) }) {
            let destination = sameFile ? source : try pool(for: target.backup)
            do {
                try copyRecords(from: source, table: table, to: destination, table: copy, converted)
            } catch let error as VaultError where Self.unreadable(error) {
                // Left where it is: the partial copy goes (it is nothing but this move's), and the move is no
                // longer recorded. Within one file the record goes first: a run that found the move recorded
                // and the staging table gone would take the swap for done, and read the sealed records as plain
                // (found in an outside audit: a manifest that could not be written after the drop did that). A
                // staging table left by a failure in between is dropped when the move is tried again. Into
                // another file the copy goes first: the records table is still in the source, so a move still
                // recorded is tried again, not taken for done.
                if sameFile {
                    try updateManifest { $0.datasets[dataset]?.moving = nil }
                    try moveStep.withLock { $0 }?("gaveUp")
                    try dropScrubbing([copy], in: destination, renaming: nil)
                } else {
                    try dropScrubbing([copy], in: destination, renaming: nil)
                    try moveStep.withLock { $0 }?("gaveUp")
                    try updateManifest { $0.datasets[dataset]?.moving = nil }
                }
                return false
            }
            try dropScrubbing([table], in: source, renaming: sameFile ? (staging, table) : nil)
            try moveStep.withLock { $0 }?(sameFile ? "swapped" : "dropped")
        }
        if entry.hasFiles {
            try moveFiles(of: dataset, from: entry, to: target, sealer: sealer)
        }
        let targetFile = path + "/" + VaultFiles.database(target.backup)
        let targetHasTable =
            try source == nil && entry.hasRecords && DurableFiles.kind(targetFile) == .file
            && pool(for: target.backup).readSync { db in try Self.tableExists(table, db) }
        try updateManifest { manifest in
            guard var moved = manifest.datasets[dataset] else { return }
            // Where it went: the inventory's declaration, at the target's place (which an unfinished move of an
            // earlier release may have had elsewhere: the next round moves it on).
            var recorded = declaration
            recorded.backup = target.backup
            moved.declaration = recorded
            if !target.sealed, let key = moved.keyID {
                moved.retiredKeyIDs.append(key)
                moved.keyID = nil
            }
            moved.sealed = target.sealed
            moved.moving = nil
            // Its database file did not come along (device-only data restored onto another device): there were
            // no records to move, and at the new place there are none (the inspector reported them missing) —
            // unless a move cut short before the restore had copied some there.
            if source == nil, entry.hasRecords, !targetHasTable {
                moved.hasRecords = false
                moved.recordsCommitted = nil
            }
            manifest.datasets[dataset] = moved
        }
        state.withLock { state in
            state.tables.remove(table + "@" + from.rawValue)
            state.accesses[dataset] = nil
        }
        return true
    }

    /// Copies every record of `table` in `source` into `destination`'s `target` table (created when missing),
    /// through `convert`, in batches; again and again safely (a copy replaces what an earlier run wrote).
    private func copyRecords(
        from source: DatabasePool, table: String, to destination: DatabasePool, table target: String,
        _ convert: (String, Data) throws -> Data
    ) throws {
        try destination.writeSync { db in try db.execute(Self.createRecordsTable(target)) }
        let quoted = DataStore.quoted(table)
        var after: String?
        while true {
            let rows = try source.readSync { db -> [Row] in
                guard try Self.tableExists(table, db) else { return [] }
                // From the very first id (the empty string is one), then after the last one copied.
                return try after.map { last in
                    try db.rows(
                        "SELECT id, value, updated_at FROM \(quoted) WHERE id > ? ORDER BY id LIMIT 256",
                        arguments: [last])
                } ?? db.rows("SELECT id, value, updated_at FROM \(quoted) ORDER BY id LIMIT 256")
            }
            guard let last = rows.last else { return }
            let batch = try rows.map { row -> (String, Data, Double) in
                let id: String = try row.decode("id")
                return (id, try convert(id, try row.decode("value")), try row.decode("updated_at"))
            }
            try destination.writeSync { db in
                for (id, value, updated) in batch {
                    try db.execute(
                        "INSERT OR REPLACE INTO \(DataStore.quoted(target)) (id, value, updated_at) VALUES (?, ?, ?)",
                        arguments: [id, value, updated])
                }
            }
            after = try last.decode("id")
            try requireOpen()
            try moveStep.withLock { $0 }?("copied")
        }
    }

    /// Drops `tables` with their bytes overwritten (secure delete, then restored to what it was) and, in
    /// the same transaction, renames `renaming.from` to `renaming.to`; then checkpoints the write-ahead log.
    private func dropScrubbing(_ tables: [String], in pool: DatabasePool, renaming: (from: String, to: String)?)
        throws
    {
        try pool.writeWithoutTransactionSync { db in
            let secure = try db.scalar(Int.self, "PRAGMA secure_delete") ?? 0
            try db.execute("PRAGMA secure_delete = ON")
            defer { try? db.execute("PRAGMA secure_delete = \(secure)") }
            try db.inTransaction(.immediate) {
                for table in tables { try db.execute("DROP TABLE IF EXISTS \(DataStore.quoted(table))") }
                if let renaming {
                    try db.execute(
                        "ALTER TABLE \(DataStore.quoted(renaming.from)) RENAME TO \(DataStore.quoted(renaming.to))")
                }
            }
            _ = try db.rows("PRAGMA wal_checkpoint(TRUNCATE)")
        }
    }

    /// The files of `dataset` as `target` keeps them: sealed or plain (each file replaced atomically; a file
    /// already converted by a run cut short is recognized — plaintext never authenticates under a key), and
    /// excluded from platform backups or not as its policy says.
    private func moveFiles(
        of dataset: String, from entry: VaultManifest.Entry, to target: VaultManifest.MoveTarget,
        sealer: RecordSealer?
    ) throws {
        let directory = path + "/" + VaultFiles.filesDirectory + "/" + dataset
        let names = try listedFiles(directory)
        for name in names.sorted() {
            let file = directory + "/" + name
            if entry.sealed != target.sealed {
                let bytes: [UInt8]
                do throws(DurableFiles.Failure) { bytes = try DurableFiles.read(file, limit: Int(Int32.max)) } catch {
                    throw VaultError(code: .ioError, dataset: dataset, recordID: name, message: error.description)
                }
                let recordID = Self.fileRecordID(name)
                let replacement: Data?
                if let sealer {
                    // Plain → sealed; a file that opens under the key was sealed by an earlier run.
                    let done = bytes.withUnsafeBytes { raw in
                        (try? sealer.open(raw, recordID: recordID, dataset: dataset, kind: .file)) != nil
                    }
                    replacement =
                        done ? nil : bytes.withUnsafeBytes { sealer.seal($0, recordID: recordID, kind: .file) }
                } else {
                    // Sealed → plain (every key was found readable first); a file sealed with none of the
                    // dataset's keys was made plain by an earlier run.
                    replacement = try bytes.withUnsafeBytes { raw throws(VaultError) -> Data? in
                        guard let id = RecordSealer.keyID(of: raw), entry.allKeyIDs.contains(id) else { return nil }
                        let opener = try self.sealer(id, dataset: dataset)
                        // Checked to open before anything was converted (filesOpen); a plain file an earlier run
                        // wrote never authenticates.
                        return try? opener.open(raw, recordID: recordID, dataset: dataset, kind: .file)
                    }
                }
                if let replacement {
                    do throws(DurableFiles.Failure) {
                        try DurableFiles.write([UInt8](replacement), to: file, mode: 0o600, exclusive: false)
                    } catch {
                        throw VaultError(code: .ioError, dataset: dataset, recordID: name, message: error.description)
                    }
                }
            }
            try BackupExclusion.set(file, excluded: target.backup != .include)
            try requireOpen()
            try moveStep.withLock { $0 }?("file")
        }
    }

    /// The files in a dataset's `directory` (safe names only); none when it does not exist. A directory that
    /// cannot be listed throws: read as empty, a move would convert none of its files and record the dataset
    /// converted, and a listing would show the user nothing (found in an outside audit).
    private func listedFiles(_ directory: String) throws(VaultError) -> [String] {
        switch DurableFiles.kind(directory) {
        case nil: return []
        case .directory?:
            do {
                return try FileManager.default.contentsOfDirectory(atPath: directory).filter(VaultFiles.isSafeComponent)
            } catch { throw VaultError.cannotRead(directory, namespace: namespace.rawValue) }
        case .unreadable?: throw VaultError.cannotRead(directory, namespace: namespace.rawValue)
        default:
            throw VaultError(
                code: .damaged, namespace: namespace.rawValue,
                message: "\(directory) is not a directory; nothing was changed")
        }
    }

    /// Whether every file of `dataset` that is sealed with one of its keys opens (files a cut-short move
    /// already made plain open trivially).
    private func filesOpen(of dataset: String, _ entry: VaultManifest.Entry) throws -> Bool {
        let directory = path + "/" + VaultFiles.filesDirectory + "/" + dataset
        let names = try listedFiles(directory)
        for name in names {
            let bytes: [UInt8]
            do throws(DurableFiles.Failure) {
                bytes = try DurableFiles.read(directory + "/" + name, limit: Int(Int32.max))
            } catch {
                throw VaultError(code: .ioError, dataset: dataset, recordID: name, message: error.description)
            }
            let opens = bytes.withUnsafeBytes { raw -> Bool in
                guard let id = RecordSealer.keyID(of: raw), entry.allKeyIDs.contains(id) else { return true }
                guard let opener = try? self.sealer(id, dataset: dataset) else { return false }
                return (try? opener.open(raw, recordID: Self.fileRecordID(name), dataset: dataset, kind: .file)) != nil
            }
            if !opens { return false }
        }
        return true
    }

    /// Whether `error` says data cannot be read here (a key that is not available, an envelope that does
    /// not open), as opposed to a failure worth retrying.
    private static func unreadable(_ error: VaultError) -> Bool {
        error.code == .keyUnavailable || error.code == .cannotOpen
    }

    private static func createRecordsTable(_ table: String) -> String {
        "CREATE TABLE IF NOT EXISTS \(DataStore.quoted(table)) (id TEXT PRIMARY KEY NOT NULL, value BLOB NOT NULL, updated_at REAL NOT NULL) WITHOUT ROWID"
    }

    private static func tableExists(_ table: String, _ db: Database) throws -> Bool {
        try db.scalar(Int.self, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", arguments: [table])
            != nil
    }

    // MARK: - Retention

    /// Deletes the records of every dataset whose retention is a duration and that were last written longer
    /// ago than it — by `now` from `wallClock`, the vault's own clock unless given — then scrubs them from
    /// the files too (secure delete, WAL checkpoint), as ``DataStore/sweepExpired(now:)`` does for the app's
    /// own tables. A record's time is when it was last put. Run it at launch and now and then; the vault
    /// does not sweep on its own, so that no deletion happens while the app is not looking.
    ///
    /// A dataset is swept where its records are (the file of the backup policy it was written under), by the
    /// inventory's retention now. Datasets the inventory no longer declares are left alone, and files are
    /// not swept (a file dataset's retention is an event: logout, account deletion).
    ///
    /// - Throws: ``VaultError`` `vaultClosed`, `databaseFailed`, `damaged`.
    @discardableResult
    public func sweepExpired(now wallClock: WallClock? = nil) async throws -> DataStore.SweepReport {
        try requireOpen()
        let now = (wallClock ?? clock).now().timeIntervalSince1970
        let written = state.withLock { $0.manifest.datasets }
        var targets: [Dataset.BackupPolicy: [RetentionSweep.Target]] = [:]
        for (name, entry) in written where entry.hasRecords {
            guard let declaration = inventory.datasets[name], declaration.isAccountBound,
                case .duration(let retention) = declaration.retention
            else { continue }
            targets[entry.declaration.backup, default: []].append(
                RetentionSweep.Target(
                    dataset: name, table: VaultFiles.table(name), column: "updated_at",
                    cutoff: now - retention.inSeconds))
        }
        var deleted: [String: Int] = [:]
        var scrubbed = true
        for (policy, tables) in targets.sorted(by: { $0.key.rawValue < $1.key.rawValue }) {
            let pool = try pool(for: policy)
            let result = try await run(dataset: tables.count == 1 ? tables[0].dataset : nil) {
                try self.requireOpen()
                return try await RetentionSweep.run(pool, tables)
            }
            deleted.merge(result.deleted) { $0 + $1 }
            scrubbed = scrubbed && result.scrubbed
        }
        try requireOpen()
        return DataStore.SweepReport(deleted: deleted, isScrubbed: scrubbed)
    }

    // MARK: - Access to one dataset

    /// What a call needs for one dataset: its declaration, its database and, when sealed, its current sealer.
    /// A class: every transaction passes its accesses around, and a struct of a dozen strings costs a dozen
    /// reference counts per copy.
    final class Access: Sendable {
        let dataset: String
        let declaration: Dataset
        let pool: DatabasePool
        /// Whether the dataset's classification asks for sealing.
        let sealed: Bool
        /// The current key's sealer: always present for a write to a sealed dataset.
        let sealer: RecordSealer?
        let table: String
        /// The records statements, built once per access (quoting and interpolation per call would cost
        /// more than the seal).
        let insertSQL: String
        let selectSQL: String
        let deleteSQL: String
        let idsSQL: String
        let idsPageSQL: String
        let idsAfterSQL: String
        let lastIDSQL: String
        let countSQL: String
        /// The key under which the vault remembers that the table exists (one per table and backup policy).
        let tableKey: String

        init(
            dataset: String, declaration: Dataset, pool: DatabasePool, sealed: Bool, sealer: RecordSealer?,
            table: String
        ) {
            self.dataset = dataset
            self.declaration = declaration
            self.pool = pool
            self.sealed = sealed
            self.sealer = sealer
            self.table = table
            let quoted = DataStore.quoted(table)
            insertSQL = "INSERT OR REPLACE INTO \(quoted) (id, value, updated_at) VALUES (?, ?, ?)"
            selectSQL = "SELECT value FROM \(quoted) WHERE id = ?"
            deleteSQL = "DELETE FROM \(quoted) WHERE id = ?"
            idsSQL = "SELECT id FROM \(quoted) ORDER BY id"
            idsPageSQL = "SELECT id FROM \(quoted) ORDER BY id LIMIT ?"
            idsAfterSQL = "SELECT id FROM \(quoted) WHERE id > ? ORDER BY id LIMIT ?"
            lastIDSQL = "SELECT max(id) FROM \(quoted)"
            countSQL = "SELECT count(*) FROM \(quoted)"
            tableKey = table + "@" + declaration.backup.rawValue
        }

        /// `plaintext` as it is stored: sealed when the dataset is (never plain by accident).
        func stored(_ plaintext: Data, recordID: String, kind: RecordSealer.Kind = .record) throws(VaultError)
            -> Data
        {
            guard sealed else { return plaintext }
            guard plaintext.count <= Vault.maximumValueSize else {
                throw Vault.tooLarge(plaintext.count, dataset: dataset, recordID: recordID)
            }
            guard let sealer else {
                throw VaultError(
                    code: .keyUnavailable, dataset: dataset, recordID: recordID, message: "no key to seal with")
            }
            return plaintext.withUnsafeBytes { sealer.seal($0, recordID: recordID, kind: kind) }
        }
    }

    private func declaration(of dataset: String) throws -> Dataset {
        let declaration = try inventory.dataset(dataset)
        guard declaration.isAccountBound else {
            throw VaultError(
                code: .misplaced, namespace: namespace.rawValue, dataset: dataset,
                message: "\(dataset) is not account-bound: it belongs in the shared store, not in an account's vault")
        }
        guard VaultFiles.isSafeComponent(dataset) else {
            throw VaultError(
                code: .misplaced, dataset: dataset,
                message: "a vault dataset name is 1…128 characters of A-Z a-z 0-9 . _ -")
        }
        return declaration
    }

    private func prepare(_ dataset: String, writing: Bool, file: String? = nil) throws -> Access {
        try requireOpen()
        // The common case, once a dataset was written: its access, with the sealer of the key the manifest names.
        if file == nil,
            let cached = state.withLock({ state -> Access? in
                guard let access = state.accesses[dataset] else { return nil }
                return access.sealer?.keyID == state.manifest.datasets[dataset]?.keyID ? access : nil
            })
        {
            return cached
        }
        let access = try prepareUncached(dataset, writing: writing, file: file)
        if access.sealer != nil || !access.sealed { state.withLock { $0.accesses[dataset] = access } }
        return access
    }

    private func prepareUncached(_ dataset: String, writing: Bool, file: String?) throws -> Access {
        let declaration = try declaration(of: dataset)
        if let file, !VaultFiles.isSafeComponent(file) {
            throw VaultError(
                code: .misplaced, dataset: dataset, recordID: file,
                message: "a vault file name is 1…128 characters of A-Z a-z 0-9 . _ - and does not start with a dot")
        }
        let sealed = declaration.classification >= .personal
        // Written under another declaration (an app update changed its backup policy or classification):
        // its data is in another database file, sealed or not as it was then. Read here it would look empty
        // (or sealed bytes would pass for plaintext), and a logout would judge the files by the old
        // declaration while new records went to the new file. Refused until it is moved (opening the vault does).
        if let written = state.withLock({ $0.manifest.datasets[dataset] }), written.hasRecords || written.hasFiles,
            written.isWritten(otherwiseThan: declaration)
        {
            throw VaultError(
                code: .declarationChanged, namespace: namespace.rawValue, dataset: dataset,
                message:
                    "\(dataset) was written as \(written.sealed ? "sealed" : "plain") with backup \(written.declaration.backup.rawValue); the inventory now says \(sealed ? "sealed" : "plain") with backup \(declaration.backup.rawValue). Its data was left where it is, untouched (opening the vault moves it; this time it could not: see the restore inspector)"
            )
        }
        var sealer: RecordSealer?
        if sealed {
            if let keyID = state.withLock({ $0.manifest.datasets[dataset]?.keyID }) {
                do { sealer = try self.sealer(keyID, dataset: dataset) } catch {
                    // A read needs the key only for the records it opens: listing and counting still work,
                    // and each open reports the missing or locked key itself.
                    guard !writing, error.code == .keyUnavailable || error.code == .locked else { throw error }
                }
            } else if writing {
                beforeFirstKey.withLock { $0 }?()
                sealer = try fileQueue.sync { () throws -> RecordSealer in
                    // Checked again here, in line with close(): a vault closed since the check in `prepare`
                    // (a logout, a switch) makes no key and writes no manifest (its purge may be done).
                    try self.requireOpen()
                    if let keyID = state.withLock({ $0.manifest.datasets[dataset]?.keyID }) {
                        return try self.sealer(keyID, dataset: dataset)
                    }
                    // The key is stored durably and recorded in the manifest before anything is sealed with it.
                    // Decided on the manifest as it is on disk: another process with this vault open may
                    // have made the dataset's key first, and then that is its key.
                    let keyID = try withLockedManifest { manifest throws(VaultError) -> KeyID in
                        if let existing = manifest.datasets[dataset]?.keyID { return existing }
                        let key = try createKey()
                        var entry =
                            manifest.datasets[dataset]
                            ?? VaultManifest.Entry(
                                declaration: declaration, sealed: true, keyID: nil, retiredKeyIDs: [],
                                hasRecords: false, hasFiles: false)
                        entry.keyID = key.id
                        entry.sealed = true
                        entry.declaration = declaration
                        manifest.datasets[dataset] = entry
                        return key.id
                    }
                    return try self.sealer(keyID, dataset: dataset)
                }
            }
        }
        return Access(
            dataset: dataset, declaration: declaration, pool: try pool(for: declaration.backup), sealed: sealed,
            sealer: sealer, table: VaultFiles.table(dataset))
    }

    private func createKey() throws(VaultError) -> StoredKey {
        let marker = state.withLock { Hex.decode($0.manifest.entanglement) ?? [] }
        let key = StoredKey(
            id: .random(), namespace: namespace.rawValue, entanglement: marker, material: .random())
        do { try keyStore.add(key) } catch {
            throw keyFailure(error, dataset: nil)
        }
        return key
    }

    /// The sealer of key `keyID` for `dataset` (cached while the vault is open).
    func sealer(_ keyID: KeyID, dataset: String) throws(VaultError) -> RecordSealer {
        if let cached = state.withLock({ $0.sealers[keyID] }) { return cached }
        guard let key = try readKey(keyID) else {
            throw VaultError(
                code: .keyUnavailable, namespace: namespace.rawValue, dataset: dataset,
                message:
                    "the key of \(dataset) (\(keyID)) is not in the key store: its data stays sealed (restored onto another device, or shredded)"
            )
        }
        let sealer = RecordSealer(key: key, account: account, dataset: dataset)
        // Kept only while the vault is open: close() releases the cached keys, and none may come back after it.
        state.withLock { state in if state.isOpen { state.sealers[keyID] = sealer } }
        return sealer
    }

    /// The sealer that opens `envelope` (the current key or a retired one).
    func sealer(for envelope: UnsafeRawBufferPointer, _ access: Access) throws(VaultError) -> RecordSealer {
        if let current = access.sealer, current.sealed(envelope) { return current }
        func known(_ id: KeyID) -> Bool {
            state.withLock { $0.manifest.datasets[access.dataset]?.allKeyIDs.contains(id) ?? false }
        }
        // A key this process's copy of the manifest does not list may be one another process with this vault
        // open (an app and its extension) made since — the dataset's first key, or a rotation: the manifest
        // is read again from disk before the record is called unreadable (found with the effect ledger: an
        // extension that had not written yet could not read what the app had).
        if let id = RecordSealer.keyID(of: envelope), !known(id) {
            _ = try? withLockedManifest { _ throws(VaultError) in }
        }
        guard let id = RecordSealer.keyID(of: envelope), known(id) else {
            // Not an envelope of one of this dataset's keys: let the current sealer refuse it with the reason.
            if let current = access.sealer { return current }
            throw VaultError(
                code: .cannotOpen, namespace: namespace.rawValue, dataset: access.dataset,
                message: "not sealed with a key of this dataset")
        }
        return try sealer(id, dataset: access.dataset)
    }

    /// The key `id`, or nil when it is absent or belongs to another installation's vault.
    private func readKey(_ id: KeyID) throws(VaultError) -> StoredKey? {
        let key: StoredKey?
        do { key = try keyStore.key(id) } catch { throw keyFailure(error, dataset: nil) }
        guard let key else { return nil }
        let marker = state.withLock { $0.manifest.entanglement }
        // A key whose marker differs was made for another installation's vault: it never opens this data.
        return Hex.encode(key.entanglement) == marker && key.namespace == namespace.rawValue ? key : nil
    }

    private func keyFailure(_ error: KeyStoreError, dataset: String?) -> VaultError {
        VaultError(
            code: error.code == .locked ? .locked : .keyStoreFailed, namespace: namespace.rawValue, dataset: dataset,
            message: error.description, underlying: error)
    }

    private func pool(for policy: Dataset.BackupPolicy) throws -> DatabasePool {
        try state.withLock { state throws -> DatabasePool in
            // Checked under the lock `close()` takes: a database opened after it would never be closed.
            guard state.isOpen else { throw closedError }
            if let pool = state.pools[policy] { return pool }
            // A database the manifest says holds records, and that is gone (a partial restore, a file removed):
            // opening would create it empty, every read would find nothing, and the evidence of the loss would
            // be gone with the first read. Damaged instead; nothing is created.
            let file = path + "/" + VaultFiles.database(policy)
            if DurableFiles.kind(file) == nil,
                let dataset = state.manifest.datasets.first(where: {
                    $0.value.declaration.backup == policy && $0.value.hasRecords
                })?.key
            {
                throw VaultError(
                    code: .damaged, namespace: namespace.rawValue, dataset: dataset,
                    message:
                        "\(VaultFiles.database(policy)) is missing, though the manifest says \(dataset) has records: nothing was recreated"
                )
            }
            let pool = try VaultFiles.openDatabase(in: path, policy: policy, namespace: namespace.rawValue)
            state.pools[policy] = pool
            return pool
        }
    }

    private func tableExists(_ access: Access, _ db: Database) throws -> Bool {
        let key = access.tableKey
        if state.withLock({ $0.tables.contains(key) }) { return true }
        let exists =
            try db.scalar(
                Int.self, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", arguments: [access.table])
            != nil
        if exists { state.withLock { Self.remember(access, in: &$0) } }
        return exists
    }

    /// `access`'s table exists (committed): known from now on, and noted for marking when its manifest entry
    /// does not say so (``VaultManifest/Entry/recordsCommitted``).
    private static func remember(_ access: Access, in state: inout State) {
        guard state.tables.insert(access.tableKey).inserted,
            state.manifest.datasets[access.dataset].map({ $0.hasRecords && $0.recordsCommitted != true }) == true
        else { return }
        state.unmarkedTables.insert(access.tableKey)
    }

    /// Whether the dataset's records table exists, for a read: nil tables read as empty, but a table the
    /// manifest knows was committed and that is gone is damage (``VaultManifest/Entry/recordsCommitted``).
    private func readableTable(_ access: Access, _ db: Database) throws -> Bool {
        if try tableExists(access, db) { return true }
        try requireNotLost(access)
        return false
    }

    /// Throws `damaged` when the manifest says `access`'s records table was committed (it is missing).
    private func requireNotLost(_ access: Access) throws(VaultError) {
        guard
            state.withLock({ $0.manifest.datasets[access.dataset].map { $0.hasRecords && $0.recordsCommitted == true } }
            )
                == true
        else { return }
        throw VaultError(
            code: .damaged, namespace: namespace.rawValue, dataset: access.dataset,
            message:
                "the records of \(access.dataset) are missing from \(VaultFiles.database(access.declaration.backup)), though they were written (a database restored from an older copy, or its WAL lost): nothing was recreated"
        )
    }

    /// Creates the dataset's table in the write transaction when it may not exist yet. It is remembered as
    /// existing only once that transaction committed (``rememberTables(_:)``): a first write that rolls back
    /// takes its `CREATE TABLE` with it, and the next write must create it again. A table known committed and
    /// now missing is never created again: damaged (``requireNotLost(_:)``).
    private func ensureTable(_ access: Access, _ db: Database) throws -> Bool {
        let key = access.tableKey
        guard !state.withLock({ $0.tables.contains(key) }) else { return false }
        if try !tableExists(access, db) { try requireNotLost(access) }
        try db.execute(Self.createRecordsTable(access.table))
        if state.withLock({ $0.manifest.datasets[access.dataset]?.hasRecords }) != true {
            try fileQueue.sync { try markWritten(access, files: false) }
        }
        return true
    }

    /// The tables of `accesses` exist: their write transaction committed. The manifest records it once per
    /// dataset (``VaultManifest/Entry/recordsCommitted``); failing to is not an error (the loss of the table
    /// would then read as empty, as before).
    private func rememberTables(_ accesses: [Access], created: Bool = true) {
        let unmarked = state.withLock { state -> [Access] in
            if created { for access in accesses { Self.remember(access, in: &state) } }
            guard !state.unmarkedTables.isEmpty else { return [] }
            let found = accesses.filter { state.unmarkedTables.contains($0.tableKey) }
            // Tried once: a manifest that cannot be written is not written again on every later write.
            for access in found { state.unmarkedTables.remove(access.tableKey) }
            return found
        }
        guard !unmarked.isEmpty else { return }
        try? fileQueue.sync {
            try requireOpen()
            try updateManifest { manifest in
                for access in unmarked where manifest.datasets[access.dataset]?.hasRecords == true {
                    manifest.datasets[access.dataset]?.recordsCommitted = true
                }
            }
        }
    }

    private func markWritten(_ access: Access, files: Bool) throws(VaultError) {
        try updateManifest { manifest in
            var entry =
                manifest.datasets[access.dataset]
                ?? VaultManifest.Entry(
                    declaration: access.declaration, sealed: access.sealed, keyID: access.sealer?.keyID,
                    retiredKeyIDs: [], hasRecords: false, hasFiles: false)
            if files { entry.hasFiles = true } else { entry.hasRecords = true }
            entry.declaration = access.declaration
            // As the data is written now: an entry made under an earlier declaration (a key made for a write that
            // rolled back, then the dataset declared plain) must not go on saying "sealed" over plain records.
            entry.sealed = access.sealed
            manifest.datasets[access.dataset] = entry
        }
    }

    /// Applies `change` to the manifest and writes it durably (on the file queue, or during open/close).
    ///
    /// Another process with this vault open (an app and its extension; another `Vaults` of the data
    /// directory) writes the manifest too, and it is rewritten whole: a change is applied to the manifest
    /// as it is on disk, read again under a lock (``withLockedManifest(_:)``), never to this process's
    /// older copy, which would drop the other's datasets — their keys, and at a logout their files. A
    /// change this process's copy already has costs no I/O.
    func updateManifest(_ change: (inout VaultManifest) -> Void) throws(VaultError) {
        var copy = state.withLock { $0.manifest }
        let before = copy
        change(&copy)
        guard copy != before else { return }
        try withLockedManifest { manifest throws(VaultError) in change(&manifest) }
    }

    /// Runs `body` on the manifest as it is on disk, under an exclusive lock on the vault's directory (an
    /// advisory `flock` every Keel process takes before writing the manifest), writes it when `body`
    /// changed it, and keeps what was written as this process's copy.
    func withLockedManifest<R>(_ body: (inout VaultManifest) throws(VaultError) -> R) throws(VaultError) -> R {
        let (manifest, result) = try VaultManifest.update(
            directory: path, namespace: namespace.rawValue, fallback: state.withLock { $0.manifest }, body)
        state.withLock { $0.manifest = manifest }
        return result
    }

    var manifest: VaultManifest { state.withLock { $0.manifest } }

    private func filesDirectory(_ access: Access, create: Bool) throws(VaultError) -> String {
        let files = path + "/" + VaultFiles.filesDirectory
        let directory = files + "/" + access.dataset
        if create {
            do {
                try DurableFiles.makeDirectory(files, mode: 0o700)
                try DurableFiles.makeDirectory(directory, mode: 0o700)
            } catch {
                throw VaultError(
                    code: error.errno == 20 ? .damaged : .ioError, dataset: access.dataset, message: error.description)
            }
        }
        return directory
    }

    static func fileRecordID(_ name: String) -> String { "file:" + name }

    /// Where file `name` of `dataset` lives.
    private func filePath(_ dataset: String, _ name: String) -> String {
        path + "/" + VaultFiles.filesDirectory + "/" + dataset + "/" + name
    }

    // MARK: - Open and closed

    func requireOpen() throws(VaultError) {
        guard isOpen else { throw closedError }
    }

    /// What every call on a closed vault fails with.
    private var closedError: VaultError {
        VaultError(
            code: .vaultClosed, namespace: namespace.rawValue,
            message: "this vault was closed (account switch or sign-out); nothing more runs on it")
    }

    /// Runs `work`, turning the database's `closed`/`interrupted` into `vaultClosed` once the vault is closed.
    private func run<T>(_ access: Access, _ work: () async throws -> T) async throws -> T {
        try await run(dataset: access.dataset, work)
    }

    private func run<T>(dataset: String?, _ work: () async throws -> T) async throws -> T {
        do { return try await work() } catch let error as DatabaseError {
            if !isOpen, error.code == .closed || error.code == .interrupted { try requireOpen() }
            throw VaultError(error, namespace: namespace.rawValue, dataset: dataset)
        }
    }

    private func onFileQueue<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            fileQueue.async { continuation.resume(with: Result { try work() }) }
        }
    }

    /// Closes the vault: later calls and running work fail with `vaultClosed`, running writes roll back,
    /// the databases close, cached keys are released (and wiped). Returns when nothing runs on it any more.
    func close() async {
        let pools = state.withLock { state -> [DatabasePool] in
            state.isOpen = false
            return Array(state.pools.values)
        }
        for pool in pools { await pool.close() }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            fileQueue.async { continuation.resume() }
        }
        // A move under way stops at its next step (the vault is closed) and is finished at a later open.
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            moveQueue.async { continuation.resume() }
        }
        state.withLock { state in
            state.sealers.removeAll()
            state.pools.removeAll()
            state.accesses.removeAll()
        }
    }
}

/// The datasets of a transaction over several of them (``Vault/write(_:_:)-([String],_)``). Valid only
/// inside the closure.
public final class VaultTransaction {
    private let records: [String: VaultRecords]
    private let database: Database

    init(records: [String: VaultRecords], database: Database) {
        self.records = records
        self.database = database
    }

    /// Where the transaction's database file stands (``DatabaseChangeStamp``): taken after the last write,
    /// it tells a later transaction whether anything changed in between.
    package func changeStamp() throws(DatabaseError) -> DatabaseChangeStamp {
        try database.changeStamp()
    }

    /// The records of `dataset`, one of the datasets the transaction was opened with.
    ///
    /// - Throws: ``VaultError`` `misplaced` for a dataset the transaction does not cover.
    public func records(_ dataset: String) throws -> VaultRecords {
        guard let found = records[dataset] else {
            throw VaultError(
                code: .misplaced, dataset: dataset, message: "\(dataset) is not one of this transaction's datasets")
        }
        return found
    }
}

/// The records of one dataset inside ``Vault/write(_:_:)`` or ``Vault/read(_:_:)``: opened and sealed as
/// the dataset's classification asks. Valid only inside the closure.
public final class VaultRecords {
    private let database: Database
    private let access: Vault.Access
    private let vault: Vault
    private let exists: Bool

    init(database: Database, access: Vault.Access, vault: Vault, exists: Bool = true) {
        self.database = database
        self.access = access
        self.vault = vault
        self.exists = exists
    }

    /// Stores `value` as record `id`, replacing any record with that id.
    public func put(_ id: String, _ value: Data) throws {
        try vault.requireOpen()
        let stored = try access.stored(value, recordID: id)
        try database.execute(access.insertSQL, arguments: [id, stored, vault.clock.now().timeIntervalSince1970])
    }

    /// Record `id`, opened, or nil when there is none.
    ///
    /// - Throws: ``VaultError`` `cannotOpen` when the stored bytes are not a record sealed for this account,
    ///   dataset and id; `keyUnavailable` when its key is gone.
    public func get(_ id: String) throws -> Data? {
        guard exists else { return nil }
        guard access.sealed else { return try database.scalar(Data.self, access.selectSQL, argument: id) }
        // Opened straight from SQLite's buffer into the plaintext: the envelope is never copied.
        return try database.connection.withFirstColumnBytes(access.selectSQL, text: id) {
            raw throws(VaultError) -> Data in
            try vault.sealer(for: raw, access).open(raw, recordID: id, dataset: access.dataset)
        }
    }

    /// Record `id`, opened, with the bytes it is stored as (its sealed envelope; the plaintext itself in a
    /// dataset that is not sealed), or nil when there is none. ``isStored(_:as:)`` later tells whether the
    /// record was written again since, without opening it.
    ///
    /// - Throws: as ``get(_:)``.
    package func getStored(_ id: String) throws -> (value: Data, stored: Data)? {
        guard exists else { return nil }
        guard access.sealed else {
            return try database.scalar(Data.self, access.selectSQL, argument: id).map { ($0, $0) }
        }
        return try database.connection.withFirstColumnBytes(access.selectSQL, text: id) {
            raw throws(VaultError) -> (Data, Data) in
            (try vault.sealer(for: raw, access).open(raw, recordID: id, dataset: access.dataset), Data(raw))
        }
    }

    /// Record `id` exactly as it is stored (its sealed envelope in a sealed dataset), without opening it, or
    /// nil when there is none: the bytes of a record that does not open, to keep aside rather than lose.
    package func storedBytes(_ id: String) throws -> Data? {
        guard exists else { return nil }
        return try database.connection.withFirstColumnBytes(access.selectSQL, text: id) { raw in Data(raw) }
    }

    /// Whether record `id` is stored as exactly `stored` (bytes from ``getStored(_:)``): one point read,
    /// nothing opened. In a sealed dataset every write seals with a fresh nonce, so a record written again —
    /// even with the same value — is not stored as it was; in a plain one the stored bytes are the value, so
    /// the same value written again reads as unchanged (as it is).
    package func isStored(_ id: String, as stored: Data) throws -> Bool {
        guard exists else { return false }
        let same = try database.connection.withFirstColumnBytes(access.selectSQL, text: id) { raw -> Bool in
            guard raw.count == stored.count else { return false }
            return stored.withUnsafeBytes { $0.elementsEqual(raw) }
        }
        return same ?? false
    }

    /// Deletes record `id` (nothing when there is none).
    public func delete(_ id: String) throws {
        guard exists else { return }
        try vault.requireOpen()
        try database.execute(access.deleteSQL, arguments: [id])
    }

    /// Every record id, sorted.
    public func ids() throws -> [String] {
        guard exists else { return [] }
        return try database.rows(access.idsSQL).compactMap { row in
            if case .text(let id) = row.values.first { return id }
            return nil
        }
    }

    /// At most `limit` record ids greater than `after` (all when nil), sorted: pages through a large
    /// dataset in memory that does not grow with it.
    public func ids(after: String?, limit: Int) throws -> [String] {
        guard exists, limit > 0 else { return [] }
        let rows =
            try after.map { try database.rows(access.idsAfterSQL, arguments: [$0, limit]) }
            ?? database.rows(access.idsPageSQL, arguments: [limit])
        return rows.compactMap { row in
            if case .text(let id) = row.values.first { return id }
            return nil
        }
    }

    /// The greatest record id, or nil when there are none.
    public func lastID() throws -> String? {
        guard exists else { return nil }
        return try database.scalar(String.self, access.lastIDSQL)
    }

    /// How many records there are.
    public func count() throws -> Int {
        guard exists else { return 0 }
        return try database.scalar(Int.self, access.countSQL) ?? 0
    }
}

/// Keeps files out of platform backups when their dataset's policy says so. On Apple platforms it sets
/// `isExcludedFromBackup`, which a file replacement resets — hence applied after every write. Elsewhere
/// the backup plan (``BackupPlan``) is the record a backup tool follows.
enum BackupExclusion {
    /// Sets or clears the platform's exclusion from backup (a file whose dataset moved to `include` must be
    /// backed up again).
    static func set(_ path: String, excluded: Bool) throws(VaultError) {
        #if canImport(Darwin)
            var url = URL(fileURLWithPath: path)
            var values = URLResourceValues()
            values.isExcludedFromBackup = excluded
            do { try url.setResourceValues(values) } catch {
                throw VaultError(code: .ioError, message: "\(path) cannot be marked for backup: \(error)")
            }
        #endif
    }

    /// Excludes the file from backup when `policy` asks (leaves it alone otherwise).
    static func apply(to path: String, policy: Dataset.BackupPolicy) throws(VaultError) {
        guard policy != .include else { return }
        try set(path, excluded: true)
    }
}

extension DatabasePool {
    /// ``writeInline(_:)`` or ``write(_:)``.
    fileprivate func write<T: Sendable>(inline: Bool, _ body: @escaping @Sendable (Database) throws -> T)
        async throws -> T
    {
        inline ? try await writeInline(body) : try await write(body)
    }
}
