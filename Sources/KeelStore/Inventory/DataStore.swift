import Foundation
public import KeelCore

/// A database whose every table access goes through the data inventory: undeclared datasets are
/// refused, caches can be reset and sources of truth cannot, expired records are swept.
public final class DataStore: Sendable {
    public let pool: DatabasePool
    public let inventory: Inventory

    public init(pool: DatabasePool, inventory: Inventory) {
        self.pool = pool
        self.inventory = inventory
    }

    /// Writes to `dataset` (which must be declared) in a transaction.
    public func write<T: Sendable>(_ dataset: String, _ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        _ = try inventory.dataset(dataset)
        return try await pool.write(body)
    }

    /// Reads `dataset` (which must be declared) in a read transaction.
    public func read<T: Sendable>(_ dataset: String, _ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        _ = try inventory.dataset(dataset)
        return try await pool.read(body)
    }

    /// Deletes every record of a cache dataset (it is rebuilt from its source). Refused for a source of
    /// truth: Keel never destroys user data to recover from a problem.
    public func resetCache(_ name: String) async throws {
        let dataset = try inventory.dataset(name)
        guard dataset.role.isCache else {
            throw InventoryError(code: .resetRefused, dataset: name,
                                 problems: ["\(name) is a source of truth; only caches may be reset"])
        }
        guard let table = dataset.storage?.table else { return }
        try await pool.write { db in try db.execute("DELETE FROM \(Self.quoted(table))") }
    }

    /// Deletes records whose retention has expired, by `now` from `wallClock`, then makes sure the
    /// deleted content is gone from disk too (secure delete, WAL checkpoint). Returns deleted counts.
    @discardableResult
    public func sweepExpired(now wallClock: WallClock) async throws -> [String: Int] {
        let now = wallClock.now().timeIntervalSince1970
        let targets: [(String, String, String, Int64)] = inventory.datasets.values.compactMap { dataset in
            guard case .seconds(let seconds) = dataset.retention, let storage = dataset.storage,
                let column = storage.timestampColumn
            else { return nil }
            return (dataset.name, storage.table, column, seconds)
        }
        let deleted = try await pool.write { db -> [String: Int] in
            try db.execute("PRAGMA secure_delete = ON")
            var counts: [String: Int] = [:]
            for (name, table, column, seconds) in targets {
                try db.execute("DELETE FROM \(Self.quoted(table)) WHERE \(Self.quoted(column)) < ?", arguments: [now - Double(seconds)])
                counts[name] = db.changes
            }
            return counts
        }
        // Move the deletions into the main file (overwritten there by secure_delete) and empty the WAL.
        _ = try await pool.writeWithoutTransaction { db in try db.rows("PRAGMA wal_checkpoint(TRUNCATE)") }
        return deleted
    }

    static func quoted(_ identifier: String) -> String {
        "\"" + identifier.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }
}
