import Foundation
import KeelCore
import KeelHTTP
import KeelStore
import KeelSync
import KeelTesting
import Testing

/// The journal's own schema is versioned (MOB-DATA-003): a journal an older Keel made — before the journal
/// had versions — is carried over with its `unknown` entries, and one a newer Keel wrote is refused, never
/// recreated (found in a conformance audit: `CREATE TABLE IF NOT EXISTS` and nothing else, so no later
/// change could be migrated, and a newer journal was read as if it were this one).
@Suite struct OperationJournalSchemaTests {
    let directory: TemporaryDirectory
    init() throws { directory = try TemporaryDirectory(prefix: "keel-journal-schema") }

    static func entry(_ id: String) -> JournalEntry {
        JournalEntry(
            operationID: id, idempotencyKey: IdempotencyKey("key-\(id)-000000000000"),
            correlationID: CorrelationID.make(using: .seeded(1)), method: "POST", path: "/mutations",
            bodyDigest: "d", createdAt: Date(timeIntervalSince1970: 1_790_000_000), state: .sending)
    }

    @Test func aJournalMadeBeforeVersionsIsCarriedOverWithItsEntries() async throws {
        let path = directory.url("journal.sqlite").path
        // As the first journal made it: the table alone, an operation whose outcome is unknown in it.
        let old = try DatabasePool(path: path)
        try old.writeSync { db in
            try db.executeScript(
                """
                CREATE TABLE keel_operation_journal (
                    operation_id TEXT PRIMARY KEY NOT NULL, idempotency_key TEXT, correlation_id TEXT NOT NULL,
                    method TEXT NOT NULL, path TEXT NOT NULL, body_digest TEXT, created_at REAL NOT NULL,
                    state TEXT NOT NULL, request_id TEXT, trace TEXT);
                INSERT INTO keel_operation_journal VALUES
                    ('pay-1', 'key-pay-1-000000000000', '0af7651916cd43dd8448eb211c80319c', 'POST', '/pay', 'd',
                     1790000000, 'unknown', NULL, NULL);
                """)
        }
        await old.close()
        let journal = try SQLiteOperationJournal(path: path)
        #expect(try await journal.unresolved().map(\.operationID) == ["pay-1"])
        #expect(try await journal.entry("pay-1")?.state == .unknown)
        try await journal.record(Self.entry("next"))
        #expect(try await journal.unresolved().map(\.operationID).sorted() == ["next", "pay-1"])
        // The step is recorded: opening again runs nothing.
        let reopened = try DatabasePool(path: path)
        let steps = try reopened.readSync { db in
            try db.rows("SELECT name FROM keel_migration").compactMap { $0.get("name", as: String.self) }
        }
        #expect(steps == ["v1-operation-journal"])
        await reopened.close()
    }

    @Test func aJournalANewerKeelWroteIsRefusedAndLeftAsItIs() async throws {
        let path = directory.url("journal.sqlite").path
        let journal = try SQLiteOperationJournal(path: path)
        try await journal.record(Self.entry("open-1"))
        let newer = try DatabasePool(path: path)
        try newer.writeSync { db in
            try db.execute("INSERT INTO keel_migration (name, position) VALUES ('v2-from-the-future', 1)")
        }
        await newer.close()
        #expect {
            _ = try SQLiteOperationJournal(path: path)
        } throws: { error in
            (error as? MigrationError)?.code == .superseded
        }
        let untouched = try DatabasePool(path: path)
        let rows = try untouched.readSync { db in
            try db.rows("SELECT operation_id, state FROM keel_operation_journal").map {
                "\($0.get("operation_id", as: String.self) ?? "?") \($0.get("state", as: String.self) ?? "?")"
            }
        }
        #expect(rows == ["open-1 sending"])
        await untouched.close()
    }
}
