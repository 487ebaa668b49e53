import Foundation
import KeelContract
import KeelCore
import KeelStore

/// The reference backend's SQLite database: sessions, notes with versions and a change sequence per
/// account, the idempotency records of mutations and batches, the operations it applied, and the version
/// policy. Everything the backend promises survives its own restart.
final class BackendStore: Sendable {
    let pool: DatabasePool

    static let migrator: Migrator = {
        var migrator = Migrator()
        migrator.registerMigration("reference backend v1") { db in
            try db.executeScript(
                """
                CREATE TABLE sessions (token TEXT PRIMARY KEY, account TEXT NOT NULL, created_at REAL NOT NULL);
                CREATE TABLE notes (
                    account TEXT NOT NULL, id TEXT NOT NULL, document TEXT NOT NULL, version INTEGER NOT NULL,
                    seq INTEGER NOT NULL, deleted INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (account, id));
                CREATE INDEX notes_by_seq ON notes (account, seq);
                CREATE TABLE sequences (account TEXT PRIMARY KEY, last INTEGER NOT NULL);
                CREATE TABLE mutation_keys (
                    account TEXT NOT NULL, key TEXT NOT NULL, payload_hash TEXT NOT NULL, result TEXT NOT NULL,
                    times_applied INTEGER NOT NULL, PRIMARY KEY (account, key));
                CREATE TABLE batch_keys (
                    account TEXT NOT NULL, key TEXT NOT NULL, body_hash TEXT NOT NULL, response TEXT NOT NULL,
                    PRIMARY KEY (account, key));
                CREATE TABLE operations (
                    account TEXT NOT NULL, correlation_id TEXT NOT NULL, status TEXT NOT NULL,
                    PRIMARY KEY (account, correlation_id));
                CREATE TABLE settings (name TEXT PRIMARY KEY, value TEXT NOT NULL);
                """)
        }
        migrator.registerMigration("reference backend v2: publications") { db in
            try db.executeScript(
                """
                CREATE TABLE publications (
                    account TEXT NOT NULL, key TEXT NOT NULL, note_id TEXT NOT NULL, id TEXT NOT NULL,
                    version INTEGER NOT NULL, published_at REAL NOT NULL, PRIMARY KEY (account, key));
                """)
        }
        migrator.registerMigration("reference backend v3: applications") { db in
            // One row per application of a mutation, so that a change applied twice — under two keys, which
            // key deduplication cannot see — is counted twice. Applied keys of v1/v2 are carried over.
            try db.executeScript(
                """
                CREATE TABLE applications (
                    account TEXT NOT NULL, mutation_id TEXT NOT NULL, key TEXT NOT NULL, PRIMARY KEY (account, key));
                CREATE INDEX applications_by_mutation ON applications (account, mutation_id);
                INSERT INTO applications (account, mutation_id, key)
                    SELECT account, json_extract(result, '$.id'), key FROM mutation_keys WHERE times_applied > 0;
                """)
        }
        migrator.registerMigration("reference backend v4: the note of each application") { db in
            // The same change is the same mutation id on the same note: two changes to two notes that a client
            // gave one id (a hand-written test's "m1") are two changes, each applied once. Rows of v3 keep no
            // note (NULL): they compare by mutation id, as before.
            try db.executeScript("ALTER TABLE applications ADD COLUMN note_id TEXT;")
        }
        return migrator
    }()

    /// The settings (version policy), read on every request: kept in memory, written through to the database.
    private let settings: Locked<[String: String]>

    init(directory: URL) throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        pool = try DatabasePool(path: directory.appendingPathComponent("backend.sqlite").path)
        _ = try Self.migrator.migrate(pool)
        let stored = try pool.readSync { db in
            try db.rows("SELECT name, value FROM settings").map {
                (try $0.decode("name") as String, try $0.decode("value") as String)
            }
        }
        settings = Locked(Dictionary(stored, uniquingKeysWith: { _, last in last }))
    }

    // MARK: - Sessions

    func createSession(account: String, token: String, at date: Date) throws {
        try pool.writeSync { db in
            try db.execute(
                "INSERT INTO sessions (token, account, created_at) VALUES (?, ?, ?)",
                arguments: [token, account, date.timeIntervalSince1970])
        }
    }

    func account(forToken token: String) throws -> String? {
        try pool.readSync { db in
            try db.scalar(String.self, "SELECT account FROM sessions WHERE token = ?", argument: token)
        }
    }

    // MARK: - Notes

    struct StoredNote {
        var document: JSONObject
        var version: Int
        var deleted: Bool
    }

    func note(_ id: String, account: String, in db: Database) throws -> StoredNote? {
        guard
            let row = try db.rows(
                "SELECT document, version, deleted FROM notes WHERE account = ? AND id = ?", arguments: [account, id]
            ).first
        else { return nil }
        return try Self.stored(row)
    }

    func note(_ id: String, account: String) throws -> StoredNote? {
        try pool.readSync { db in try self.note(id, account: account, in: db) }
    }

    private static func stored(_ row: Row) throws -> StoredNote {
        let text: String = try row.decode("document")
        guard case .object(let document) = try JSONValue(parsing: text) else {
            throw BackendFailure(status: 500, code: "corrupt_note", message: "a stored note is not an object")
        }
        return StoredNote(document: document, version: try row.decode("version"), deleted: try row.decode("deleted"))
    }

    /// Writes `document` as the note's new state and gives it the account's next change sequence number.
    func save(_ document: JSONObject, id: String, version: Int, deleted: Bool, account: String, in db: Database) throws
    {
        try db.execute(
            "INSERT INTO sequences (account, last) VALUES (?, 1) ON CONFLICT(account) DO UPDATE SET last = last + 1",
            arguments: [account])
        let seq = try db.scalar(Int64.self, "SELECT last FROM sequences WHERE account = ?", argument: account) ?? 1
        try db.execute(
            """
            INSERT INTO notes (account, id, document, version, seq, deleted) VALUES (?, ?, ?, ?, ?, ?)
            ON CONFLICT(account, id) DO UPDATE SET document = excluded.document, version = excluded.version,
                seq = excluded.seq, deleted = excluded.deleted
            """,
            arguments: [account, id, JSONValue.object(document).description, version, seq, deleted])
    }

    /// Notes of `account` changed after sequence number `after`, oldest change first, and the sequence
    /// number of the last one returned.
    /// Nil when `after` is past the account's last change: no cursor this backend issued points there (a
    /// forged one, or one from before the backend's data was reset or restored).
    func changes(account: String, after: Int64, limit: Int) throws -> (
        notes: [JSONObject], last: Int64, hasMore: Bool
    )? {
        try pool.readSync { db in
            let head =
                try db.scalar(Int64.self, "SELECT last FROM sequences WHERE account = ?", argument: account) ?? 0
            guard after <= head else { return nil }
            let rows = try db.rows(
                "SELECT document, version, deleted, seq FROM notes WHERE account = ? AND seq > ? ORDER BY seq LIMIT ?",
                arguments: [account, after, limit + 1])
            let page = rows.prefix(limit)
            let notes = try page.map { try Self.stored($0).document }
            let last: Int64 = try page.last.map { try $0.decode("seq") } ?? after
            return (notes, last, rows.count > limit)
        }
    }

    func liveNoteCount() throws -> Int {
        try pool.readSync { db in try db.scalar(Int.self, "SELECT count(*) FROM notes WHERE deleted = 0") ?? 0 }
    }

    // MARK: - Idempotency

    struct KeyRecord {
        var payloadHash: String
        var result: JSONObject
    }

    func mutationKey(_ key: String, account: String, in db: Database) throws -> KeyRecord? {
        guard
            let row = try db.rows(
                "SELECT payload_hash, result FROM mutation_keys WHERE account = ? AND key = ?",
                arguments: [account, key]
            ).first
        else { return nil }
        let text: String = try row.decode("result")
        guard case .object(let result) = try JSONValue(parsing: text) else {
            throw BackendFailure(status: 500, code: "corrupt_key", message: "a stored result is not an object")
        }
        return KeyRecord(payloadHash: try row.decode("payload_hash"), result: result)
    }

    func recordMutationKey(
        _ key: String, account: String, noteID: String, payloadHash: String, result: JSONObject, applied: Bool,
        in db: Database
    ) throws {
        try db.execute(
            "INSERT INTO mutation_keys (account, key, payload_hash, result, times_applied) VALUES (?, ?, ?, ?, ?)",
            arguments: [account, key, payloadHash, JSONValue.object(result).description, applied ? 1 : 0])
        if applied, let id = result["id"]?.stringValue {
            try db.execute(
                "INSERT INTO applications (account, mutation_id, key, note_id) VALUES (?, ?, ?, ?)",
                arguments: [account, id, key, noteID])
        }
    }

    func batchKey(_ key: String, account: String) throws -> (bodyHash: String, response: String)? {
        try pool.readSync { db in
            try db.rows(
                "SELECT body_hash, response FROM batch_keys WHERE account = ? AND key = ?", arguments: [account, key]
            ).first.map { (try $0.decode("body_hash"), try $0.decode("response")) }
        }
    }

    func recordBatchKey(_ key: String, account: String, bodyHash: String, response: String, in db: Database) throws {
        try db.execute(
            "INSERT OR REPLACE INTO batch_keys (account, key, body_hash, response) VALUES (?, ?, ?, ?)",
            arguments: [account, key, bodyHash, response])
    }

    /// A name compared by its UTF-8 bytes (as JSON member names are): two canonically equivalent account
    /// names (`josé` in NFC and in NFD) are two accounts here, as everywhere in the backend — Swift's `String`
    /// would fold them into one.
    typealias ExactName = JSONObject.MemberName

    /// Idempotency key → the most times the change sent under it was applied for any one account (under any
    /// key: a change — a mutation id on a note — sent again under a new key counts twice). Keys are scoped per
    /// account, so 2 is always a double application, never two accounts; 1 unless a client or this backend is
    /// broken. Names are compared by their bytes (``ExactName``).
    func appliedKeysMost() throws -> [ExactName: Int] {
        try appliedKeys().values.reduce(into: [:]) { result, keys in
            for (key, times) in keys { result[key] = max(result[key] ?? 0, times) }
        }
    }

    /// Account → idempotency key → how many times the change sent under it was applied (under any key).
    func appliedKeys() throws -> [ExactName: [ExactName: Int]] {
        try pool.readSync { db in
            var applied: [ExactName: [ExactName: Int]] = [:]
            let rows = try db.rows(
                """
                SELECT a.account AS account, a.key AS key, (SELECT count(*) FROM applications b
                    WHERE b.account = a.account AND b.mutation_id = a.mutation_id
                        AND (a.note_id IS NULL OR b.note_id IS NULL OR b.note_id = a.note_id)) AS times
                FROM applications a
                """)
            for row in rows {
                let account = ExactName(name: try row.decode("account"))
                let key = ExactName(name: try row.decode("key"))
                applied[account, default: [:]][key, default: 0] += try row.decode("times") as Int
            }
            return applied
        }
    }

    // MARK: - Publications

    /// The publication made under `key`, with the note it was made for.
    func publication(key: String, account: String) throws -> (noteID: String, answer: JSONObject)? {
        try pool.readSync { db in
            try db.rows(
                "SELECT note_id, id, version FROM publications WHERE account = ? AND key = ?",
                arguments: [account, key]
            ).first.map { row in
                let noteID: String = try row.decode("note_id")
                return (
                    noteID,
                    Self.publicationAnswer(noteID: noteID, id: try row.decode("id"), version: try row.decode("version"))
                )
            }
        }
    }

    /// Publishes the note's current version under `key` (one transaction: the key and the publication).
    /// Publishes `noteID`; the operation (`correlationID`, when the request carried one) is recorded
    /// `applied` in the same transaction, for `/operations`.
    func publish(noteID: String, key: String, id: String, account: String, at date: Date, correlationID: String?)
        throws -> JSONObject
    {
        try pool.writeSync { db in
            guard let note = try self.note(noteID, account: account, in: db), !note.deleted else {
                throw BackendFailure(status: 404, code: "not_found", message: "no such note")
            }
            try db.execute(
                "INSERT INTO publications (account, key, note_id, id, version, published_at) VALUES (?, ?, ?, ?, ?, ?)",
                arguments: [account, key, noteID, id, note.version, date.timeIntervalSince1970])
            if let correlationID { try recordOperation(correlationID, account: account, applied: true, in: db) }
            return Self.publicationAnswer(noteID: noteID, id: id, version: note.version)
        }
    }

    static func publicationAnswer(noteID: String, id: String, version: Int) -> JSONObject {
        [
            "noteID": .string(noteID), "publication": .string(id), "path": .string("/p/\(id)"),
            "version": .number(JSONNumber(Int64(version))),
        ]
    }

    /// How many publications each note has: of `account`'s notes, or of every account's together (two
    /// accounts' notes of one id add up).
    func publicationCounts(account: String? = nil) throws -> [String: Int] {
        try pool.readSync { db in
            var counts: [String: Int] = [:]
            let rows =
                try account.map {
                    try db.rows(
                        "SELECT note_id, count(*) AS n FROM publications WHERE account = ? GROUP BY note_id",
                        arguments: [$0])
                } ?? db.rows("SELECT note_id, count(*) AS n FROM publications GROUP BY note_id")
            for row in rows {
                counts[try row.decode("note_id") as String] = try row.decode("n") as Int
            }
            return counts
        }
    }

    /// Every note of every account (tombstones included), for inspection: its document with `account`,
    /// and `version` and `deleted` as the columns say.
    func documents() throws -> [JSONObject] {
        try pool.readSync { db in
            try db.rows("SELECT account, document, version, deleted FROM notes ORDER BY account, id").map { row in
                let stored = try Self.stored(row)
                var document = stored.document
                document["account"] = .string(try row.decode("account") as String)
                document["version"] = .number(JSONNumber(Int64(stored.version)))
                document["deleted"] = .bool(stored.deleted)
                return document
            }
        }
    }

    // MARK: - Operations and settings

    /// Records what became of the operation sent with `correlationID`: `applied` when it changed something,
    /// `notApplied` when the backend answered it without changing anything (every change refused or in
    /// conflict). An operation once recorded applied stays applied (a later request under the same id that
    /// changed nothing does not undo it).
    func recordOperation(_ correlationID: String, account: String, applied: Bool, in db: Database) throws {
        try db.execute(
            """
            INSERT INTO operations (account, correlation_id, status) VALUES (?, ?, ?)
            ON CONFLICT (account, correlation_id) DO UPDATE SET status = 'applied'
            WHERE excluded.status = 'applied'
            """,
            arguments: [account, correlationID, applied ? "applied" : "notApplied"])
    }

    func operationStatus(_ correlationID: String, account: String) throws -> String? {
        try pool.readSync { db in
            try db.scalar(
                String.self, "SELECT status FROM operations WHERE account = ? AND correlation_id = ?",
                arguments: [account, correlationID])
        }
    }

    func setting(_ name: String) -> String? { settings.withLock { $0[name] } }

    func setSetting(_ name: String, _ value: String?) throws {
        try pool.writeSync { db in
            if let value {
                try db.execute("INSERT OR REPLACE INTO settings (name, value) VALUES (?, ?)", arguments: [name, value])
            } else {
                try db.execute("DELETE FROM settings WHERE name = ?", arguments: [name])
            }
        }
        settings.withLock { $0[name] = value }
    }
}

/// A request the backend refuses: its HTTP status and the contract's error code.
struct BackendFailure: Error {
    var status: Int
    var code: String
    var message: String
    var errors: [(field: String, code: String)] = []
    var headers: HeaderFields = [:]
    var extra: JSONObject = [:]
}
