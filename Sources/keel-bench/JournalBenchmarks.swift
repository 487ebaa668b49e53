import CSQLite
import Foundation
import KeelCore
import KeelHTTP
import KeelSync
import KeelTesting

/// The cost of the operation journal (issue #11): what every mutating call adds before and after it is sent.
enum JournalBenchmarks {
    /// A raw connection with the journal's pragmas (WAL, synchronous=FULL).
    final class RawJournal {
        let handle: OpaquePointer
        let insert: OpaquePointer
        let update: OpaquePointer

        init(path: String) throws {
            var db: OpaquePointer?
            guard
                sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nil)
                    == SQLITE_OK, let db
            else { throw BenchError("cannot open \(path)") }
            handle = db
            for sql in [
                "PRAGMA journal_mode = WAL", "PRAGMA synchronous = FULL", "PRAGMA foreign_keys = ON",
                """
                CREATE TABLE journal (operation_id TEXT PRIMARY KEY NOT NULL, idempotency_key TEXT,
                correlation_id TEXT NOT NULL, method TEXT NOT NULL, path TEXT NOT NULL, body_digest TEXT,
                created_at REAL NOT NULL, state TEXT NOT NULL, request_id TEXT, trace TEXT)
                """,
            ] {
                guard sqlite3_exec(db, sql, nil, nil, nil) == SQLITE_OK else { throw BenchError("setup failed") }
            }
            var insert: OpaquePointer?
            var update: OpaquePointer?
            guard
                sqlite3_prepare_v2(
                    db,
                    "INSERT OR REPLACE INTO journal VALUES (?, ?, ?, 'POST', '/mutations', ?, ?, 'sending', NULL, NULL)",
                    -1, &insert, nil) == SQLITE_OK,
                sqlite3_prepare_v2(
                    db, "UPDATE journal SET state = 'succeeded', request_id = ? WHERE operation_id = ?", -1, &update,
                    nil) == SQLITE_OK, let insert, let update
            else { throw BenchError("prepare failed") }
            self.insert = insert
            self.update = update
        }

        deinit {
            sqlite3_finalize(insert)
            sqlite3_finalize(update)
            sqlite3_close_v2(handle)
        }

        func exec(_ sql: String) throws {
            guard sqlite3_exec(handle, sql, nil, nil, nil) == SQLITE_OK else { throw BenchError("exec failed") }
        }

        /// The same two durable transactions the journal makes: the record, then its completion.
        func recordAndComplete(_ index: Int) throws {
            let id = "op-\(index)"
            try exec("BEGIN IMMEDIATE")
            sqlite3_reset(insert)
            sqlite3_bind_text(insert, 1, id, -1, keel_sqlite3_transient())
            sqlite3_bind_text(insert, 2, "key-\(index)", -1, keel_sqlite3_transient())
            sqlite3_bind_text(insert, 3, "cid-\(index)", -1, keel_sqlite3_transient())
            sqlite3_bind_text(insert, 4, String(repeating: "a", count: 64), -1, keel_sqlite3_transient())
            sqlite3_bind_double(insert, 5, Date().timeIntervalSince1970)
            guard sqlite3_step(insert) == SQLITE_DONE else { throw BenchError("insert failed") }
            try exec("COMMIT")
            try exec("BEGIN IMMEDIATE")
            sqlite3_reset(update)
            sqlite3_bind_text(update, 1, "req-\(index)", -1, keel_sqlite3_transient())
            sqlite3_bind_text(update, 2, id, -1, keel_sqlite3_transient())
            guard sqlite3_step(update) == SQLITE_DONE else { throw BenchError("update failed") }
            try exec("COMMIT")
        }
    }

    static let write = Benchmark(
        name: "journal.write",
        unit: "ms per 200 journaled calls",
        goal: "ratio ≤ 1.2 (SQLiteOperationJournal record + completion vs the same two raw SQLite transactions)",
        operations: 1,
        prepare: {
            let directory = try TemporaryDirectory(prefix: "keel-bench-journal")
            let journal = try SQLiteOperationJournal(path: directory.url("keel.sqlite").path)
            let raw = try RawJournal(path: directory.url("raw.sqlite").path)
            let keelNext = Counter()
            let rawNext = Counter()
            let random = RandomSource.seeded(1)
            return Benchmark.Sides(
                baseline: {
                    let start = rawNext.take(200)
                    for index in start..<start + 200 { try raw.recordAndComplete(index) }
                },
                candidate: {
                    let start = keelNext.take(200)
                    for index in start..<start + 200 {
                        let entry = JournalEntry(
                            operationID: "op-\(index)", idempotencyKey: IdempotencyKey("key-\(index)"),
                            correlationID: CorrelationID.make(using: random), method: "POST", path: "/mutations",
                            bodyDigest: String(repeating: "a", count: 64), createdAt: Date(), state: .sending)
                        try await journal.record(entry)
                        try await journal.complete(entry.operationID, state: .succeeded, requestID: "req-\(index)")
                    }
                },
                teardown: { _ = directory }
            )
        }
    )
}
