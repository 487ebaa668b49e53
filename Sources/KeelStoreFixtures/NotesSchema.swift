import Foundation
public import KeelStore

/// The schema history of a small notes app, v1…v4, for migration tests and crash tests: fixture
/// builders seed a database at any version with data, and the migrator brings it to the latest.
public enum NotesSchema {
    /// The shipped migrations, in order.
    public static let versions = ["v1-notes", "v2-folders", "v3-title-key-backfill", "v4-tags"]

    /// The migrator for the first `upTo` versions (all by default). `onBatch` sees each backfill batch
    /// right before it commits (crash tests print it, so a parent knows when to kill).
    public static func migrator(
        upTo count: Int = versions.count, batchSize: Int = 100,
        onBatch: (@Sendable (Int64) -> Void)? = nil
    ) -> Migrator {
        var migrator = Migrator()
        let all: [(Migrator) -> Migrator] = [
            {
                var m = $0;
                m.registerMigration("v1-notes") { db in
                    try db.execute(
                        "CREATE TABLE note (id INTEGER PRIMARY KEY, title TEXT NOT NULL, body TEXT NOT NULL)")
                }; return m
            },
            {
                var m = $0;
                m.registerMigration("v2-folders") { db in
                    try db.executeScript(
                        """
                        CREATE TABLE folder (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
                        INSERT INTO folder (id, name) VALUES (1, 'Inbox');
                        ALTER TABLE note ADD COLUMN folder_id INTEGER NOT NULL DEFAULT 1 REFERENCES folder(id);
                        """)
                }; return m
            },
            {
                var m = $0;
                m.registerBackfill("v3-title-key-backfill", batchSize: batchSize) { db, checkpoint, size in
                    let next = try titleKeyBatch(db, checkpoint, size)
                    if let next { onBatch?(next) }
                    return next
                }; return m
            },
            {
                var m = $0;
                m.registerMigration("v4-tags") { db in
                    try db.executeScript(
                        """
                        CREATE TABLE tag (note_id INTEGER NOT NULL REFERENCES note(id) ON DELETE CASCADE, name TEXT NOT NULL,
                                          PRIMARY KEY (note_id, name));
                        CREATE INDEX note_title_key ON note(title_key);
                        """)
                }; return m
            },
        ]
        for step in all.prefix(count) { migrator = step(migrator) }
        return migrator
    }

    /// One batch of the v3 backfill: lower-cased title keys for the next `size` notes after `checkpoint`.
    public static func titleKeyBatch(_ db: Database, _ checkpoint: Int64?, _ size: Int) throws -> Int64? {
        if checkpoint == nil {
            // Adding the column is safe across restarts: the first batch's transaction commits it
            // together with its checkpoint, or not at all.
            try db.execute("ALTER TABLE note ADD COLUMN title_key TEXT")
        }
        let rows = try db.rows(
            "SELECT id, title FROM note WHERE id > ? ORDER BY id LIMIT ?", arguments: [checkpoint ?? 0, size])
        guard let last = rows.last?.get("id", as: Int64.self) else { return nil }
        for row in rows {
            try db.execute(
                "UPDATE note SET title_key = ? WHERE id = ?",
                arguments: [row.get("title", as: String.self)!.lowercased(), row.get("id", as: Int64.self)!])
        }
        return last
    }

    /// Seeds `rows` notes into a database at version `version` (0 = empty), using only that version's schema.
    public static func seed(_ pool: DatabasePool, version: Int, rows: Int) throws {
        try migrator(upTo: version).migrate(pool)
        guard version >= 1 else { return }
        try pool.writeSync { db in
            if version >= 2 { try db.execute("INSERT INTO folder (id, name) VALUES (2, 'Work')") }
            for id in 1...max(rows, 1) where rows > 0 {
                let title = "Note \(id) ÄÖ"
                if version >= 2 {
                    try db.execute(
                        "INSERT INTO note (id, title, body, folder_id) VALUES (?, ?, ?, ?)",
                        arguments: [id, title, "body \(id)", id % 2 + 1])
                } else {
                    try db.execute(
                        "INSERT INTO note (id, title, body) VALUES (?, ?, ?)", arguments: [id, title, "body \(id)"])
                }
                // SQLite's lower() is ASCII-only; the key is Swift's lowercasing, as in the backfill.
                if version >= 3 {
                    try db.execute("UPDATE note SET title_key = ? WHERE id = ?", arguments: [title.lowercased(), id])
                }
                if version >= 4, id % 3 == 0 {
                    try db.execute("INSERT INTO tag (note_id, name) VALUES (?, 'x')", arguments: [id])
                }
            }
        }
    }

    /// What must hold at any moment for a database seeded with `rows` notes: every note is there with
    /// its data, every `title_key` present is right, foreign keys and integrity hold. Returns the problems.
    public static func invariantViolations(_ pool: DatabasePool, rows: Int) throws -> [String] {
        try pool.readSync { db in
            var problems: [String] = []
            let tables = Set(
                try db.rows("SELECT name FROM sqlite_master WHERE type = 'table'").compactMap {
                    $0.get("name", as: String.self)
                })
            if rows > 0, tables.contains("note") {
                if try db.scalar(Int.self, "SELECT count(*) FROM note") != rows {
                    problems.append("note count changed")
                }
                let wrongBody =
                    try db.scalar(
                        Int.self,
                        "SELECT count(*) FROM note WHERE body != 'body ' || id OR title != 'Note ' || id || ' ÄÖ'") ?? 0
                if wrongBody > 0 { problems.append("\(wrongBody) notes lost their title or body") }
                let columns = Set(try db.rows("PRAGMA table_info(note)").compactMap { $0.get("name", as: String.self) })
                if columns.contains("title_key") {
                    let wrongKey = try db.rows("SELECT id, title, title_key FROM note WHERE title_key IS NOT NULL")
                        .filter {
                            $0.get("title_key", as: String.self) != $0.get("title", as: String.self)!.lowercased()
                        }.count
                    if wrongKey > 0 { problems.append("\(wrongKey) wrong title keys") }
                }
            }
            if try !db.rows("PRAGMA foreign_key_check").isEmpty { problems.append("foreign-key violations") }
            if try db.scalar(String.self, "PRAGMA integrity_check") != "ok" {
                problems.append("integrity_check failed")
            }
            return problems
        }
    }
}
