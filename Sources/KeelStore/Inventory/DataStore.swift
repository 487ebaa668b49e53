import Foundation
public import KeelCore

/// A database whose every table access goes through the data inventory: undeclared datasets are
/// refused, caches can be reset and sources of truth cannot, expired records are swept.
public final class DataStore: Sendable {
    /// The database the datasets are stored in.
    public let pool: DatabasePool
    /// The declarations every read, write, cache reset and retention sweep is checked against.
    public let inventory: Inventory

    /// A store over `pool`'s database that admits only the datasets `inventory` declares.
    public init(pool: DatabasePool, inventory: Inventory) {
        self.pool = pool
        self.inventory = inventory
    }

    /// Writes to `dataset` (which must be declared) in a transaction.
    ///
    /// Statements in `body` may touch only the dataset's declared table (and SQLite's own); anything else
    /// (another table, directly or through a trigger; schema changes; pragmas) fails, and the call throws
    /// ``InventoryError`` `undeclaredTable` even if `body` caught the database error. The transaction is
    /// then rolled back.
    public func write<T: Sendable>(_ dataset: String, _ body: @escaping @Sendable (Database) throws -> T) async throws
        -> T
    {
        let declaration = try inventory.dataset(dataset)
        return try await pool.write { db in try Self.scoped(declaration, db, body) }
    }

    /// Reads `dataset` (which must be declared) in a read transaction, limited to its declared table as
    /// ``write(_:_:)`` is.
    public func read<T: Sendable>(_ dataset: String, _ body: @escaping @Sendable (Database) throws -> T) async throws
        -> T
    {
        let declaration = try inventory.dataset(dataset)
        return try await pool.read { db in try Self.scoped(declaration, db, body) }
    }

    /// Runs `body` limited to `dataset`'s tables; a denied access becomes `undeclaredTable`.
    private static func scoped<T>(_ dataset: Dataset, _ db: Database, _ body: (Database) throws -> T) throws -> T {
        let (result, denied) = db.restricted(to: dataset.storage.map { [$0.table] } ?? [], scope: dataset.name) {
            try body(db)
        }
        if let first = denied.first {
            throw InventoryError(
                code: .undeclaredTable, dataset: dataset.name, problems: [],
                message: "a statement for \(dataset.name) touched \(first), which \(dataset.name) does not declare")
        }
        return try result.get()
    }

    /// Deletes every record of a cache dataset kept in a table (readers then find it empty and rebuild it
    /// from its source). Refused for a source of truth: Keel never destroys user data to recover from a
    /// problem. A cache outside the database (files, media) is the app's to clear: refused here rather
    /// than reported as done.
    public func resetCache(_ name: String) async throws {
        let dataset = try inventory.dataset(name)
        guard dataset.role.isCache else {
            throw InventoryError(
                code: .resetRefused, dataset: name, problems: [],
                message: "\(name) is a source of truth; only caches may be reset")
        }
        guard let table = dataset.storage?.table else {
            throw InventoryError(
                code: .resetRefused, dataset: name, problems: [],
                message: "\(name) is not stored in a table; the app clears its \(dataset.kind.rawValue) itself")
        }
        try await pool.write { db in try db.execute("DELETE FROM \(Self.quoted(table))") }
    }

    /// Checks the app's version at launch, before anything reads a cache: when it is not the version this
    /// database recorded last (an upgrade, a downgrade, or none recorded), every table cache declaring the
    /// `appVersionChange` deletion trigger is emptied, and `version` recorded — in one transaction, so a crash
    /// or an error midway leaves every cache as it was and the old version recorded, and the next check does it
    /// all again. Nothing but such caches is touched (the inventory refuses the trigger on a source of truth).
    ///
    /// The version is kept in this database (table `keel_app_version`). Caches outside a table (files, media)
    /// are the app's: clear them when ``AppVersionCheck/changed`` is true, or before this call (the version is
    /// recorded last). Datasets in an account's vault or the shared cache are reset by
    /// ``Vaults/checkAppVersion(_:)``.
    ///
    /// - Throws: ``InventoryError`` `invalidAppVersion` for a blank `version`; `DatabaseError`.
    @discardableResult
    public func checkAppVersion(_ version: String) async throws -> AppVersionCheck {
        try AppVersionCheck.validate(version)
        let caches = inventory.datasets.values.filter(AppVersionCheck.resets).compactMap { dataset in
            dataset.storage.map { (name: dataset.name, table: $0.table) }
        }.sorted { $0.name < $1.name }
        return try await pool.write { db in
            try db.execute(
                "CREATE TABLE IF NOT EXISTS keel_app_version (id INTEGER PRIMARY KEY CHECK (id = 1), version TEXT NOT NULL)"
            )
            let previous = try db.scalar(String.self, "SELECT version FROM keel_app_version WHERE id = 1")
            guard previous != version else {
                return AppVersionCheck(version: version, previous: previous, changed: false)
            }
            var check = AppVersionCheck(version: version, previous: previous, changed: true)
            for cache in caches {
                // A table not created yet holds nothing to reset.
                guard
                    try db.scalar(
                        Int.self, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ? COLLATE NOCASE",
                        arguments: [cache.table]) != nil
                else { continue }
                try db.execute("DELETE FROM \(Self.quoted(cache.table))")
                check.resetDatasets.append(cache.name)
            }
            try db.execute(
                "INSERT OR REPLACE INTO keel_app_version (id, version) VALUES (1, ?)", arguments: [version])
            return check
        }
    }

    /// What a retention sweep did.
    public struct SweepReport: Sendable, Equatable {
        /// Records deleted, per dataset.
        public let deleted: [String: Int]
        /// Whether the WAL was emptied, so deleted bytes are gone from disk. False when a reader held an
        /// old snapshot; the deleted records are unreachable, and the next sweep finishes the job.
        public let isScrubbed: Bool
    }

    /// Deletes records whose retention has expired, by `now` from `wallClock`, then makes sure the
    /// deleted content is gone from disk too (secure delete, WAL checkpoint).
    @discardableResult
    public func sweepExpired(now wallClock: WallClock) async throws -> SweepReport {
        let now = wallClock.now().timeIntervalSince1970
        let targets = inventory.datasets.values.compactMap { dataset -> RetentionSweep.Target? in
            guard case .duration(let retention) = dataset.retention, let storage = dataset.storage,
                let column = storage.timestampColumn
            else { return nil }
            // A dataset kept elsewhere (an account's vault) or not created yet has no table here: nothing of
            // it to sweep, and the rest of the sweep still runs.
            return RetentionSweep.Target(
                dataset: dataset.name, table: storage.table, column: column, cutoff: now - retention.inSeconds)
        }
        let (deleted, scrubbed) = try await RetentionSweep.run(pool, targets)
        return SweepReport(deleted: deleted, isScrubbed: scrubbed)
    }

    static func quoted(_ identifier: String) -> String {
        "\"" + identifier.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }
}
