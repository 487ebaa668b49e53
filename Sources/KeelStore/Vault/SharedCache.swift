public import Foundation
public import KeelCore

/// The only storage outside the accounts' vaults: caches of data that belongs to no account (a public
/// catalog, app configuration), kept plain under `shared/` in the data directory (MOB-DATA-006).
///
/// There is no namespace for "no account": a dataset is admitted here only when the inventory classifies
/// it `public` and not account-bound, so a signed-out user's data can never land in a store the next
/// account reads (the "anonymous namespace" failure). Everything else belongs in a ``Vault``.
///
/// ```swift
/// try await vaults.shared.put("catalog", id: "p1", productJSON)
/// ```
///
/// When ``Vaults/checkAppVersion(_:)`` could not reset the shared cache for a change of the app's version,
/// its first use in the process (``put(_:id:_:)``, ``get(_:id:)``, ``reset(_:)``, ``sweepExpired(now:)``)
/// resets it before anything is read or written, or throws ``VaultError`` `appVersionResetUnfinished`.
public final class SharedCache: Sendable {
    /// The directory of the shared databases (`<data>/shared`).
    public let directory: URL
    /// The declarations every dataset is checked against.
    public let inventory: Inventory
    private let clock: WallClock
    private let pools = Locked<[Dataset.BackupPolicy: DatabasePool]>([:])
    /// `app-version.json` in the data directory (``Vaults/checkAppVersion(_:)``).
    private let appVersionPath: String
    /// Whether this process found nothing of a change of the app's version left to reset here (then the record
    /// is not read again: ``Vaults/checkAppVersion(_:)`` resets the shared cache itself).
    private let appVersionSettled = Locked(false)
    /// One first use at a time finishes a pending reset.
    private let appVersionTurnstile = Turnstile()

    /// The name of the shared directory inside a data directory.
    static let directoryName = "shared"

    init(dataDirectory: URL, inventory: Inventory, clock: WallClock) {
        directory = dataDirectory.appendingPathComponent(Self.directoryName)
        self.inventory = inventory
        self.clock = clock
        appVersionPath = VaultFiles.roots(of: dataDirectory).data + "/" + AppVersionRecord.fileName
    }

    /// At the first use in this process: when ``Vaults/checkAppVersion(_:)`` could not reset the shared cache
    /// for a change of the app's version (the record still lists it), resets it now and takes it off the list,
    /// so that nothing another version cached is read.
    ///
    /// - Throws: ``VaultError`` `appVersionResetUnfinished` when that fails (nothing is read or written; tried
    ///   again at the next use).
    private func finishAppVersionReset() async throws(VaultError) {
        if appVersionSettled.withLock({ $0 }) { return }
        await appVersionTurnstile.enter()
        defer { appVersionTurnstile.leave() }
        if appVersionSettled.withLock({ $0 }) { return }
        guard let record = AppVersionRecord.read(appVersionPath), record.pendingShared else {
            appVersionSettled.withLock { $0 = true }
            return
        }
        do { _ = try await resetForAppVersionChange() } catch {
            let cause = Vaults.vaultError(error, namespace: nil)
            throw VaultError(
                code: .appVersionResetUnfinished,
                message:
                    "the shared cache is still to be reset for app version \(record.version), and cannot be (\(cause)); nothing was read or written",
                underlying: cause)
        }
        // Not written (the directory is read-only?): the cache is reset again at the next launch's first use.
        try? AppVersionRecord.update(appVersionPath, version: record.version) { $0.pendingShared = false }
        appVersionSettled.withLock { $0 = true }
    }

    /// Makes the next use look at the record again (a check recorded a change the shared cache may still have
    /// to be reset for).
    func needsAppVersionCheck() {
        appVersionSettled.withLock { $0 = false }
    }

    /// Stores `value` as record `id` of `dataset` (replacing it).
    ///
    /// - Throws: ``VaultError`` `misplaced` unless `dataset` is declared `public` and not account-bound;
    ///   the inventory's `undeclared`; `databaseFailed`; `appVersionResetUnfinished` while a reset for a change
    ///   of the app's version is left to finish and cannot be (every call of the shared cache, as at its first
    ///   use in a process: see ``Vaults/checkAppVersion(_:)``).
    public func put(_ dataset: String, id: String, _ value: Data) async throws {
        let (pool, table) = try await prepareReset(dataset)
        let now = clock.now().timeIntervalSince1970
        try await pool.writeInline { db in
            try db.execute(
                "CREATE TABLE IF NOT EXISTS \(table) (id TEXT PRIMARY KEY NOT NULL, value BLOB NOT NULL, updated_at REAL NOT NULL)"
            )
            try db.execute(
                "INSERT OR REPLACE INTO \(table) (id, value, updated_at) VALUES (?, ?, ?)", arguments: [id, value, now])
        }
    }

    /// Record `id` of `dataset`, or nil when there is none.
    public func get(_ dataset: String, id: String) async throws -> Data? {
        let (pool, table) = try await prepareReset(dataset)
        return try await pool.read { db in
            guard try Self.exists(dataset, db) else { return nil }
            return try db.scalar(Data.self, "SELECT value FROM \(table) WHERE id = ?", argument: id)
        }
    }

    /// Deletes every record of `dataset` (a cache: its source rebuilds it).
    ///
    /// - Throws: ``InventoryError`` `resetRefused` when the inventory declares `dataset` a source of truth
    ///   (public, belonging to no account, and still not reproducible: onboarding state, local settings).
    public func reset(_ dataset: String) async throws {
        let declaration = try inventory.dataset(dataset)
        guard declaration.role.isCache else {
            throw InventoryError(
                code: .resetRefused, dataset: dataset, problems: [],
                message: "\(dataset) is a source of truth; only caches may be reset")
        }
        let (pool, table) = try await prepareReset(dataset)
        try await pool.write { db in try db.execute("DROP TABLE IF EXISTS \(table)") }
    }

    /// Drops every shared cache declaring the `appVersionChange` deletion trigger, in every file it may be in
    /// (the shared store does not record where it wrote: a dataset whose backup policy an update changed has
    /// older records in the file of the earlier one). Nothing else is touched. Run by
    /// ``Vaults/checkAppVersion(_:)``; dropping again what is gone does nothing, so an interrupted run is
    /// simply run again.
    ///
    /// - Returns: the caches that held a table (sorted).
    /// - Throws: ``VaultError`` `databaseFailed` or `damaged`.
    func resetForAppVersionChange() async throws -> [String] {
        let caches = inventory.datasets.values.filter {
            $0.classification == .public && !$0.isAccountBound && VaultFiles.isSafeComponent($0.name)
                && AppVersionCheck.resets($0)
        }.map(\.name).sorted()
        guard !caches.isEmpty else { return [] }
        var reset: Set<String> = []
        for policy in Dataset.BackupPolicy.allCases {
            // A database never written has nothing to reset; opening it here would create it.
            let file = directory.path + "/" + VaultFiles.database(policy)
            guard pools.withLock({ $0[policy] != nil }) || DurableFiles.kind(file) == .file else { continue }
            do {
                let pool = try pool(for: policy, dataset: caches[0])
                let dropped = try await pool.write { db -> [String] in
                    var dropped: [String] = []
                    for name in caches where try Self.exists(name, db) {
                        try db.execute("DROP TABLE \(DataStore.quoted(VaultFiles.table(name)))")
                        dropped.append(name)
                    }
                    return dropped
                }
                reset.formUnion(dropped)
            } catch let error as DatabaseError {
                throw VaultError(error, message: "\(file): \(error.description)")
            }
        }
        return reset.sorted()
    }

    /// Deletes the records of every shared dataset whose retention is a duration and that were last put
    /// longer ago than it — by `now` from `wallClock`, the store's own clock unless given — and scrubs them
    /// from the files (secure delete, WAL checkpoint), as ``Vault/sweepExpired(now:)`` does in a vault.
    ///
    /// - Throws: ``VaultError`` `databaseFailed` or `damaged`.
    @discardableResult
    public func sweepExpired(now wallClock: WallClock? = nil) async throws -> DataStore.SweepReport {
        try await finishAppVersionReset()
        let now = (wallClock ?? clock).now().timeIntervalSince1970
        var expiring: [RetentionSweep.Target] = []
        for dataset in inventory.datasets.values
        where dataset.classification == .public && !dataset.isAccountBound && VaultFiles.isSafeComponent(dataset.name) {
            guard case .duration(let retention) = dataset.retention else { continue }
            expiring.append(
                RetentionSweep.Target(
                    dataset: dataset.name, table: VaultFiles.table(dataset.name), column: "updated_at",
                    cutoff: now - retention.inSeconds))
        }
        // In every file: a dataset whose backup policy changed with an app update left its older records in
        // the file of the policy it had (the shared store does not record where it wrote).
        var targets: [Dataset.BackupPolicy: [RetentionSweep.Target]] = [:]
        if !expiring.isEmpty { for policy in Dataset.BackupPolicy.allCases { targets[policy] = expiring } }
        var deleted: [String: Int] = [:]
        var scrubbed = true
        for (policy, tables) in targets.sorted(by: { $0.key.rawValue < $1.key.rawValue }) {
            // A database never written has nothing to sweep; opening it here would create it.
            let file = directory.path + "/" + VaultFiles.database(policy)
            guard pools.withLock({ $0[policy] != nil }) || DurableFiles.kind(file) == .file else { continue }
            let result: (deleted: [String: Int], scrubbed: Bool)
            do {
                result = try await RetentionSweep.run(try pool(for: policy, dataset: tables[0].dataset), tables)
            } catch let error as DatabaseError {
                throw VaultError(error, message: "\(file): \(error.description)")
            }
            deleted.merge(result.deleted) { $0 + $1 }
            scrubbed = scrubbed && result.scrubbed
        }
        return DataStore.SweepReport(deleted: deleted, isScrubbed: scrubbed)
    }

    private static func exists(_ dataset: String, _ db: Database) throws -> Bool {
        try db.scalar(
            Int.self, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?",
            arguments: [VaultFiles.table(dataset)]) != nil
    }

    /// ``prepare(_:)`` once a reset left pending by a change of the app's version is finished (the dataset is
    /// checked first: a misplaced one is refused as such).
    private func prepareReset(_ dataset: String) async throws -> (DatabasePool, String) {
        _ = try declaration(dataset)
        try await finishAppVersionReset()
        return try prepare(dataset)
    }

    private func prepare(_ dataset: String) throws -> (DatabasePool, String) {
        let declaration = try declaration(dataset)
        return (try pool(for: declaration.backup, dataset: dataset), DataStore.quoted(VaultFiles.table(dataset)))
    }

    /// `dataset`'s declaration, when the shared cache may keep it.
    private func declaration(_ dataset: String) throws -> Dataset {
        let declaration = try inventory.dataset(dataset)
        guard VaultFiles.isSafeComponent(dataset) else {
            throw VaultError(
                code: .misplaced, dataset: dataset, message: "a dataset name is 1…128 characters of A-Z a-z 0-9 . _ -")
        }
        guard declaration.classification == .public, !declaration.isAccountBound else {
            throw VaultError(
                code: .misplaced, dataset: dataset,
                message:
                    "only public data that belongs to no account is kept outside a vault; \(dataset) is \(declaration.classification.rawValue)\(declaration.isAccountBound ? " and account-bound" : "")"
            )
        }
        return declaration
    }

    private func pool(for policy: Dataset.BackupPolicy, dataset: String) throws(VaultError) -> DatabasePool {
        try pools.withLock { pools throws(VaultError) -> DatabasePool in
            if let pool = pools[policy] { return pool }
            do throws(DurableFiles.Failure) { try DurableFiles.makeDirectory(directory.path, mode: 0o700) } catch {
                throw VaultError(code: .ioError, dataset: dataset, message: error.description)
            }
            let pool = try VaultFiles.openDatabase(in: directory.path, policy: policy)
            pools[policy] = pool
            return pool
        }
    }

    /// Closes the shared databases (a later call reopens them).
    public func close() async {
        let open = pools.withLock { pools in
            defer { pools.removeAll() }
            return Array(pools.values)
        }
        for pool in open { await pool.close() }
    }
}
