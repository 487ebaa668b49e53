import Foundation
import KeelCore
import KeelStore
import KeelTesting
import Testing

/// DataStore enforces the inventory with SQLite's authorizer: a dataset's statements touch only its
/// declared table (issue #10, MOB-DATA-001).
@Suite struct DataStoreTableAccessTests {
    static let notes = Dataset(
        name: "notes", purpose: "The user's notes", classification: .personal, isAccountBound: true,
        retention: .untilEvent, backup: .include, deletionTriggers: [.logout, .accountDeletion], role: .sourceOfTruth,
        storage: .init(table: "note"))
    static let drafts = Dataset(
        name: "drafts", purpose: "Unsent edits", classification: .personal, isAccountBound: true,
        retention: .untilEvent, backup: .exclude, deletionTriggers: [.logout, .accountDeletion], role: .sourceOfTruth,
        storage: .init(table: "draft"))

    let directory: TemporaryDirectory
    let store: DataStore

    init() async throws {
        directory = try TemporaryDirectory()
        let pool = try DatabasePool(path: directory.url("app.sqlite").path)
        try await pool.write { db in
            try db.executeScript(
                """
                CREATE TABLE note (id INTEGER PRIMARY KEY, title TEXT);
                CREATE TABLE draft (id INTEGER PRIMARY KEY, note_id INTEGER, text TEXT);
                INSERT INTO note VALUES (1, 'one'), (2, 'two');
                INSERT INTO draft VALUES (1, 1, 'secret draft');
                """)
        }
        store = DataStore(pool: pool, inventory: try Inventory([Self.notes, Self.drafts]))
    }

    private func expectUndeclaredTable(
        _ operation: () async throws -> Void, sourceLocation: SourceLocation = #_sourceLocation
    ) async {
        await #expect(sourceLocation: sourceLocation) {
            try await operation()
        } throws: { error in
            guard let error = error as? InventoryError else { return false }
            return error.code == .undeclaredTable && error.dataset == "notes"
        }
    }

    @Test func theDeclaredTableIsReadAndWritten() async throws {
        try await store.write("notes") { db in try db.execute("INSERT INTO note VALUES (3, 'three')") }
        let count = try await store.read("notes") { db in try db.scalar(Int.self, "SELECT count(*) FROM note") }
        #expect(count == 3)
        // The same SQL through another dataset is refused: the cache of prepared statements is per dataset.
        await #expect(throws: InventoryError.self) {
            try await store.read("drafts") { db in try db.scalar(Int.self, "SELECT count(*) FROM note") }
        }
        #expect(try await store.read("notes") { db in try db.scalar(Int.self, "SELECT count(*) FROM note") } == 3)
    }

    @Test func selectingAnotherTableIsRefused() async {
        await expectUndeclaredTable { _ = try await store.read("notes") { db in try db.rows("SELECT * FROM draft") } }
    }

    @Test func insertingUpdatingOrDeletingAnotherTableIsRefusedAndRolledBack() async throws {
        await expectUndeclaredTable {
            try await store.write("notes") { db in try db.execute("INSERT INTO draft VALUES (2, 1, 'x')") }
        }
        await expectUndeclaredTable {
            try await store.write("notes") { db in try db.execute("UPDATE draft SET text = 'gone'") }
        }
        await expectUndeclaredTable {
            try await store.write("notes") { db in
                try db.execute("UPDATE note SET title = 'changed' WHERE id = 1")
                try db.execute("DELETE FROM draft")
            }
        }
        // Nothing of the refused work happened, not even the allowed statement before it.
        let draft = try await store.read("drafts") { db in try db.rows("SELECT text FROM draft") }
        #expect(draft.map { $0.get("text", as: String.self) } == ["secret draft"])
        #expect(
            try await store.read("notes") { db in try db.scalar(String.self, "SELECT title FROM note WHERE id = 1") }
                == "one")
    }

    @Test func aJoinWithAnotherTableIsRefused() async {
        await expectUndeclaredTable {
            _ = try await store.read("notes") { db in
                try db.rows("SELECT note.title, draft.text FROM note JOIN draft ON draft.note_id = note.id")
            }
        }
    }

    @Test func aTriggerThatWritesAnotherTableIsRefused() async throws {
        try await store.pool.write { db in
            try db.execute(
                "CREATE TRIGGER copy_title AFTER INSERT ON note BEGIN INSERT INTO draft (note_id, text) VALUES (new.id, new.title); END"
            )
        }
        await expectUndeclaredTable {
            try await store.write("notes") { db in try db.execute("INSERT INTO note VALUES (4, 'four')") }
        }
        #expect(try await store.read("drafts") { db in try db.scalar(Int.self, "SELECT count(*) FROM draft") } == 1)
    }

    @Test func schemaChangesAndPragmasAreNotDatasetWork() async {
        await expectUndeclaredTable { try await store.write("notes") { db in try db.execute("DROP TABLE draft") } }
        await expectUndeclaredTable {
            try await store.write("notes") { db in try db.execute("CREATE TABLE other (x)") }
        }
        await expectUndeclaredTable {
            _ = try await store.read("notes") { db in try db.rows("PRAGMA table_info(draft)") }
        }
    }

    @Test func catchingTheDatabaseErrorDoesNotHideTheViolation() async {
        await expectUndeclaredTable {
            try await store.write("notes") { db in
                do { try db.execute("DELETE FROM draft") } catch { /* swallowed by the app */  }
            }
        }
    }
}
