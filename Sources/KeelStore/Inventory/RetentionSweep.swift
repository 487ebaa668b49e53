/// Deleting records whose retention has expired from the tables of one database, and scrubbing the deleted
/// bytes from its files: what ``DataStore``, ``Vault`` and ``SharedCache`` sweeps have in common.
enum RetentionSweep {
    /// One dataset's table, and the records of it that have expired.
    struct Target {
        let dataset: String
        let table: String
        /// The column holding each record's time, in seconds since 1970.
        let column: String
        /// Records stamped before this are expired.
        let cutoff: Double
    }

    /// Deletes the expired records of `targets` in one transaction, with `secure_delete` on (the freed
    /// space is overwritten), then checkpoints and empties the WAL so that no copy of the deleted records
    /// stays in it. A target whose table does not exist in this database (not created yet, or kept
    /// elsewhere) is skipped. The connection's `secure_delete` setting is put back afterwards.
    ///
    /// - Returns: the records deleted per dataset (datasets with a table only), and whether the WAL was
    ///   emptied: false when a reader held an old snapshot — the records are deleted, and the next sweep
    ///   finishes the scrub.
    static func run(_ pool: DatabasePool, _ targets: [Target]) async throws -> (deleted: [String: Int], scrubbed: Bool)
    {
        try await pool.writeWithoutTransaction { db in
            let previous = try db.scalar(Int.self, "PRAGMA secure_delete") ?? 0
            try db.execute("PRAGMA secure_delete = ON")
            defer { _ = try? db.execute("PRAGMA secure_delete = \(min(max(previous, 0), 2))") }  // OFF, ON or FAST
            let deleted = try db.inTransaction { () throws -> [String: Int] in
                var counts: [String: Int] = [:]
                for target in targets {
                    guard
                        try db.scalar(
                            Int.self, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ? COLLATE NOCASE",
                            arguments: [target.table]) != nil
                    else { continue }
                    try db.execute(
                        "DELETE FROM \(DataStore.quoted(target.table)) WHERE \(DataStore.quoted(target.column)) < ?",
                        arguments: [target.cutoff])
                    counts[target.dataset, default: 0] += db.changes
                }
                return counts
            }
            // Move the deletions into the main file (overwritten there by secure_delete) and empty the WAL.
            // The checkpoint does not throw when a reader blocks it: its result row says (busy, log, done).
            guard let row = try db.rows("PRAGMA wal_checkpoint(TRUNCATE)").first, row.values.count == 3 else {
                return (deleted, false)
            }
            return (deleted, row.values[0] == .integer(0) && row.values[1] == row.values[2])
        }
    }
}
