public import Foundation
public import KeelCore
public import KeelHTTP
import KeelStore

/// The ``OperationJournal`` in a real SQLite file (MOB-API-004): an entry is committed with
/// `synchronous = FULL` before the client sends the operation, so neither a kill nor a power cut loses
/// the fact that it may have been sent.
///
/// The file holds operation metadata only (method, path, correlation id, idempotency key, body digest):
/// no bodies, no tokens. Keep it in the account's data directory; it goes with the account.
///
/// ```swift
/// let journal = try SQLiteOperationJournal(path: accountDirectory.appending(path: "journal.sqlite").path)
/// let client = HTTPClient(configuration: .init(baseURL: api, journal: journal))
/// let settled = try await client.reconcile(rebuild: { outbox.operation(for: $0.operationID) })
/// ```
public final class SQLiteOperationJournal: OperationJournal {
    private let pool: DatabasePool

    /// Opens (or creates) the journal at `path`, bringing its schema to this version's through a versioned
    /// ``Migrator`` (MOB-DATA-003): a later Keel that changes the table adds a migration, and a journal an older
    /// Keel made — before the journal had versions, too — is carried over, never recreated or emptied.
    ///
    /// - Throws: ``DatabaseError`` when the file cannot be opened or is not a database; ``MigrationError``
    ///   `superseded` when a newer Keel wrote it (its entries, `unknown` ones included, are left as they are:
    ///   update the app), `inconsistent` or `failed` as any migration.
    public init(path: String) throws {
        // Readable by its owner only (found in an outside audit: it was 0644 under the usual umask): it names
        // every mutating call with its path, keys and a digest of its body, which guessing could invert for a
        // short body.
        DurableFiles.restrictDatabaseToOwner(path)
        pool = try DatabasePool(path: path, configuration: DatabaseConfiguration(synchronous: .full))
        try Self.migrator.migrate(pool)
    }

    /// The journal's schema history: one step so far, the table as the first journal made it (`IF NOT
    /// EXISTS`: a journal made before versions keeps its rows and is recorded at this step).
    static var migrator: Migrator {
        var migrator = Migrator()
        migrator.registerMigration("v1-operation-journal") { db in
            try db.execute(
                """
                CREATE TABLE IF NOT EXISTS keel_operation_journal (
                    operation_id TEXT PRIMARY KEY NOT NULL,
                    idempotency_key TEXT,
                    correlation_id TEXT NOT NULL,
                    method TEXT NOT NULL,
                    path TEXT NOT NULL,
                    body_digest TEXT,
                    created_at REAL NOT NULL,
                    state TEXT NOT NULL,
                    request_id TEXT,
                    trace TEXT
                )
                """)
        }
        return migrator
    }

    /// Records `entry`, replacing one with the same operation id; committed (FULL sync) on return.
    public func record(_ entry: JournalEntry) async throws {
        let trace = try entry.trace.map { String(decoding: try JSONEncoder().encode($0), as: UTF8.self) }
        try await pool.writeInline { db in
            // REPLACE gives the row a new rowid: entries list in the order they were (last) recorded.
            try db.execute(
                """
                INSERT OR REPLACE INTO keel_operation_journal
                (operation_id, idempotency_key, correlation_id, method, path, body_digest, created_at, state,
                 request_id, trace)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """,
                arguments: [
                    entry.operationID, entry.idempotencyKey?.rawValue, entry.correlationID.rawValue, entry.method,
                    entry.path, entry.bodyDigest, entry.createdAt.timeIntervalSince1970, Self.text(entry.state),
                    entry.requestID, trace,
                ])
        }
    }

    /// Moves entry `operationID` to `state`; keeps its request id when `requestID` is nil.
    public func complete(_ operationID: String, state: JournalEntry.State, requestID: String?) async throws {
        try await pool.writeInline { db in
            try db.execute(
                "UPDATE keel_operation_journal SET state = ?, request_id = coalesce(?, request_id) WHERE operation_id = ?",
                arguments: [Self.text(state), requestID, operationID])
        }
    }

    /// Moves entry `operationID` to `state` if it is still `sending` or `unknown`, in one `UPDATE`: an
    /// entry settled meanwhile keeps its answer. Keeps its request id when `requestID` is nil.
    public func settleUnresolved(_ operationID: String, state: JournalEntry.State, requestID: String?) async throws
        -> Bool
    {
        try await pool.writeInline { db in
            try db.execute(
                """
                UPDATE keel_operation_journal SET state = ?, request_id = coalesce(?, request_id)
                WHERE operation_id = ? AND state IN ('sending', 'unknown')
                """,
                arguments: [Self.text(state), requestID, operationID])
            return db.changes > 0
        }
    }

    /// Entries still `sending` or `unknown`, oldest first; one that cannot be read is left out (see
    /// ``unreadable()``), so that it does not keep the others from being reconciled.
    public func unresolved() async throws -> [JournalEntry] {
        try await pool.read { db in
            try db.rows(
                "SELECT * FROM keel_operation_journal WHERE state IN ('sending', 'unknown') ORDER BY rowid"
            ).compactMap { try? Self.entry($0) }
        }
    }

    /// Entries that cannot be read back (a damaged row, or one a newer release wrote), oldest first, with
    /// the reason. They stay in the file, untouched: nothing resolves, replaces or removes them here.
    public func unreadable() async throws -> [UnreadableJournalEntry] {
        try await pool.read { db in
            try db.rows("SELECT * FROM keel_operation_journal ORDER BY rowid").compactMap { row in
                do {
                    _ = try Self.entry(row)
                    return nil
                } catch {
                    let id = row.get("operation_id", as: String.self) ?? "(no operation id)"
                    return UnreadableJournalEntry(operationID: id, reason: String(describing: error))
                }
            }
        }
    }

    /// The entry for `operationID`.
    public func entry(_ operationID: String) async throws -> JournalEntry? {
        try await pool.read { db in
            try db.rows("SELECT * FROM keel_operation_journal WHERE operation_id = ?", arguments: [operationID])
                .first.map(Self.entry)
        }
    }

    /// Every readable entry of user operation `correlationID`, oldest first.
    public func entries(correlationID: CorrelationID) async throws -> [JournalEntry]? {
        try await pool.read { db in
            try db.rows(
                "SELECT * FROM keel_operation_journal WHERE correlation_id = ? ORDER BY rowid",
                arguments: [correlationID.rawValue]
            ).compactMap { try? Self.entry($0) }
        }
    }

    /// Every entry, oldest first (for diagnostics and for the app's "what happened" screen); those that
    /// cannot be read are listed by ``unreadable()`` instead.
    public func all() async throws -> [JournalEntry] {
        try await pool.read { db in
            try db.rows("SELECT * FROM keel_operation_journal ORDER BY rowid").compactMap { try? Self.entry($0) }
        }
    }

    /// Deletes settled entries created before `date` (the app's retention for them); never an unresolved one.
    public func removeSettled(before date: Date) async throws {
        try await pool.write { db in
            try db.execute(
                "DELETE FROM keel_operation_journal WHERE state NOT IN ('sending', 'unknown') AND created_at < ?",
                arguments: [date.timeIntervalSince1970])
        }
    }

    // MARK: - Encoding

    /// How a state is stored (`sending`, `succeeded`, `failed:<kind>`, `notApplied`, `unknown`).
    public static func text(_ state: JournalEntry.State) -> String {
        switch state {
        case .sending: "sending"
        case .succeeded: "succeeded"
        case .failed(let kind): "failed:" + kind.name
        case .notApplied: "notApplied"
        case .unknown: "unknown"
        }
    }

    static func state(_ text: String) throws(JournalError) -> JournalEntry.State {
        switch text {
        case "sending": return .sending
        case "succeeded": return .succeeded
        case "notApplied": return .notApplied
        case "unknown": return .unknown
        case _ where text.hasPrefix("failed:") && text.count > 7:
            return .failed(HTTPFailure.Kind(String(text.dropFirst(7))))
        default:
            throw JournalError(code: .unreadableEntry, message: "unknown state \(text.debugDescription)")
        }
    }

    static func entry(_ row: Row) throws -> JournalEntry {
        // A trace that no longer decodes is dropped, not fatal: it only continues a trace.
        let trace = row.get("trace", as: String.self).flatMap {
            try? JSONDecoder().decode(TraceContext.self, from: Data($0.utf8))
        }
        let key = try row.get("idempotency_key", as: String.self).map { text in
            guard let key = IdempotencyKey(validating: text) else {
                throw JournalError(code: .unreadableEntry, message: "invalid idempotency key")
            }
            return key
        }
        let correlationID: CorrelationID
        do {
            correlationID = try CorrelationID(validating: try row.decode("correlation_id", as: String.self))
        } catch {
            throw JournalError(code: .unreadableEntry, message: "invalid correlation id: \(error)")
        }
        return JournalEntry(
            operationID: try row.decode("operation_id"), idempotencyKey: key, correlationID: correlationID,
            method: try row.decode("method"), path: try row.decode("path"),
            bodyDigest: row.get("body_digest", as: String.self),
            createdAt: Date(timeIntervalSince1970: try row.decode("created_at", as: Double.self)),
            state: try state(try row.decode("state", as: String.self)), requestID: row.get("request_id"),
            trace: trace)
    }
}

/// A journal file whose content Keel cannot read (written by a newer release, or damaged).
public struct JournalError: KeelError, Equatable {
    /// Codes of ``JournalError``.
    public typealias Code = ErrorCode<JournalError>

    /// What is wrong.
    public let code: Code
    /// A developer-facing explanation.
    public let message: String

    /// The explanation.
    public var description: String { message }
}

extension ErrorCode where Domain == JournalError {
    /// A row the journal cannot read back.
    public static var unreadableEntry: Self { Self("unreadableEntry") }
}
