// The adapter over the CSQLite shim: the only file in KeelStore that calls SQLite's C API.
import CSQLite
public import Foundation
import KeelCore

/// One SQLite connection. Not thread-safe: ``DatabasePool`` confines each connection to one queue.
@usableFromInline
final class SQLiteConnection {
    private let handle: OpaquePointer
    // The mutable state below is never checked for exclusive access at run time
    // (`@exclusivity(unchecked)`): a connection is confined to one thread at a time (see the type's
    // comment), and these checks were a measurable share of a point read (keel-bench store.read).

    /// Prepared statements by SQL (bounded; see `prepare`).
    @exclusivity(unchecked) private var statements: [String: OpaquePointer] = [:]
    /// The statement used last, checked before the dictionary (loops of point reads and inserts).
    /// With its number of `?` placeholders (the same SQL keeps it, even re-prepared after a schema change).
    @exclusivity(unchecked) private var lastStatement: (sql: String, statement: OpaquePointer, parameters: Int)?
    /// Set while ``Database/inTransaction(_:_:)`` runs its body: every statement must then run inside that
    /// transaction. When SQLite has rolled it back on its own (an interrupt, a full disk, an I/O error), a
    /// caller that caught the error and went on would otherwise commit each later statement by itself — half
    /// of the work on disk while the caller is told the transaction failed.
    @exclusivity(unchecked) var guardsTransaction = false

    private func requireTransactionIfGuarded(_ sql: String) throws(DatabaseError) {
        guard guardsTransaction, sqlite3_get_autocommit(handle) != 0 else { return }
        throw DatabaseError(
            code: .other,
            message: "the transaction was rolled back by SQLite (after an earlier error); its work is lost, and "
                + "nothing more runs in it", sql: sql)
    }
    /// The tables statements may touch now (set by ``DataStore`` for one dataset's work); nil: any.
    /// Read by the authorizer SQLite calls while preparing each statement.
    @exclusivity(unchecked) private(set) var tableAccess: TableAccess?

    init(path: String, readOnly: Bool, configuration: DatabaseConfiguration) throws(DatabaseError) {
        var db: OpaquePointer?
        let flags =
            (readOnly ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE)) | SQLITE_OPEN_NOMUTEX
        let status = sqlite3_open_v2(path, &db, flags, nil)
        guard status == SQLITE_OK, let db else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            if let db { sqlite3_close_v2(db) }
            throw DatabaseError(code: .fromSQLite(status & 0xFF), message: "cannot open \(path): \(message)")
        }
        handle = db
        sqlite3_extended_result_codes(db, 1)
        // Installed once for the connection's life: changing an authorizer expires every prepared
        // statement, which would cost a re-prepare per dataset access. It allows everything until a
        // table scope is set.
        sqlite3_set_authorizer(db, Self.authorize, Unmanaged.passUnretained(self).toOpaque())
        if !readOnly, sqlite3_db_readonly(db, "main") == 1 {
            // SQLite silently falls back to read-only for a file it may not write: say so now.
            sqlite3_close_v2(db)
            throw DatabaseError(code: .readonly, message: "\(path) can only be opened read-only (no write permission)")
        }
        sqlite3_busy_timeout(db, Int32(clamping: configuration.busyTimeout.inMilliseconds))
        do throws(DatabaseError) {
            // Reading the schema first makes a file that is not a database fail here, before any write.
            _ = try query("SELECT count(*) FROM sqlite_master", [])
            if !readOnly {
                if configuration.journalMode == .wal {
                    let mode = try query("PRAGMA journal_mode = WAL", []).first?.values.first
                    guard mode == .text("wal") else {
                        throw DatabaseError(
                            code: .other,
                            message: "cannot switch \(path) to WAL (got \(mode?.description ?? "nothing"))")
                    }
                }
                try execute("PRAGMA synchronous = \(configuration.synchronous.rawValue)", [])
                if let secureDelete = configuration.secureDelete {
                    try execute("PRAGMA secure_delete = \(secureDelete ? "ON" : "OFF")", [])
                }
            }
            try execute("PRAGMA foreign_keys = \(configuration.foreignKeys ? "ON" : "OFF")", [])
        } catch {
            close()
            throw error
        }
    }

    deinit { close() }

    private var isClosed = false

    /// Makes the statement running on this connection (from another thread) stop with `interrupted`; its
    /// transaction rolls back. A no-op when nothing runs. Only while the connection is open.
    func interrupt() { sqlite3_interrupt(handle) }

    func close() {
        guard !isClosed else { return }
        isClosed = true
        finalizeAll()
        sqlite3_set_authorizer(handle, nil, nil)
        sqlite3_close_v2(handle)
    }

    // MARK: - Table scope

    /// Runs `body` with statements limited to `access`'s tables. Statements are cached per scope, so a
    /// statement authorized for one dataset (or for none) is never reused for another without SQLite
    /// authorizing it again.
    func withTableAccess<T>(_ access: TableAccess, _ body: () throws -> T) rethrows -> T {
        let previous = tableAccess
        tableAccess = access
        lastStatement = nil
        defer {
            tableAccess = previous
            lastStatement = nil
        }
        return try body()
    }

    /// SQLite's authorizer callback: consults the connection's current table scope.
    private static let authorize:
        @convention(c) (
            UnsafeMutableRawPointer?, Int32, UnsafePointer<CChar>?, UnsafePointer<CChar>?, UnsafePointer<CChar>?,
            UnsafePointer<CChar>?
        ) -> Int32 = { context, action, first, second, _, _ in
            guard let context else { return SQLITE_OK }
            let connection = Unmanaged<SQLiteConnection>.fromOpaque(context).takeUnretainedValue()
            guard let access = connection.tableAccess else { return SQLITE_OK }
            return access.authorize(
                action: action, first: first.map { String(cString: $0) }, second: second.map { String(cString: $0) })
                ? SQLITE_OK : SQLITE_DENY
        }

    /// Finalizes every cached statement and empties the cache.
    private func finalizeAll() {
        for statement in statements.values { sqlite3_finalize(statement) }
        statements.removeAll()
        lastStatement = nil
    }

    // MARK: - Statements

    /// A prepared statement for `sql`, from the cache when possible. Every use ends with `finish`, so a
    /// cached statement is always reset and unbound when it is handed out again.
    private func prepare(_ sql: String) throws(DatabaseError) -> OpaquePointer {
        try requireTransactionIfGuarded(sql)
        if let last = lastStatement, last.sql == sql { return last.statement }
        // Statements prepared under a table scope are cached under it (see withTableAccess).
        let key = tableAccess.map { "\u{0}\($0.scope)\u{0}" + sql } ?? sql
        if let cached = statements[key] {
            lastStatement = (sql, cached, Int(sqlite3_bind_parameter_count(cached)))
            return cached
        }
        if statements.count >= 256 {
            // Bounded: one-off statements (DDL, interpolated pragmas) must not accumulate forever.
            finalizeAll()
        }
        var statement: OpaquePointer?
        var rest = ""
        let status = sql.withCString { text -> Int32 in
            var tail: UnsafePointer<CChar>?
            let status = sqlite3_prepare_v3(handle, text, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, &tail)
            if let tail { rest = String(cString: tail) }
            return status
        }
        guard status == SQLITE_OK, let statement else { throw error(status, sql: sql) }
        guard rest.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty else {
            sqlite3_finalize(statement)
            throw DatabaseError(
                code: .sqlError, message: "more than one statement; use executeScript for scripts", sql: sql)
        }
        statements[key] = statement
        lastStatement = (sql, statement, Int(sqlite3_bind_parameter_count(statement)))
        return statement
    }

    /// Binds `arguments`; returns whether any was text or a blob (copied into SQLite's memory).
    @discardableResult
    private func bind(_ arguments: [any DatabaseValueConvertible], to statement: OpaquePointer, sql: String)
        throws(DatabaseError)
        -> Bool
    {
        var holdsCopies = false
        try requireArguments(arguments.count, for: statement, sql: sql)
        // Converted one at a time: no intermediate array per call (point reads in a loop feel it).
        for (offset, convertible) in arguments.enumerated() {
            if try bind(convertible, at: Int32(offset + 1), to: statement, sql: sql) { holdsCopies = true }
        }
        return holdsCopies
    }

    /// Throws unless `statement` has exactly `count` placeholders.
    private func requireArguments(_ count: Int, for statement: OpaquePointer, sql: String) throws(DatabaseError) {
        // `statement` is the one `prepare` just handed out, whose count it noted.
        let expected =
            lastStatement.flatMap { $0.statement == statement ? $0.parameters : nil }
            ?? Int(sqlite3_bind_parameter_count(statement))
        guard expected == count else {
            throw DatabaseError(code: .sqlError, message: "expected \(expected) argument(s), got \(count)", sql: sql)
        }
    }

    /// Binds one argument at `index` (1-based); returns whether it was text or a blob.
    private func bind(
        _ convertible: any DatabaseValueConvertible, at index: Int32, to statement: OpaquePointer, sql: String
    )
        throws(DatabaseError) -> Bool
    {
        try bind(convertible.databaseValue, at: index, to: statement, sql: sql)
    }

    /// Binds one value at `index` (1-based); returns whether it was text or a blob.
    private func bind(_ value: DatabaseValue, at index: Int32, to statement: OpaquePointer, sql: String)
        throws(DatabaseError) -> Bool
    {
        let status: Int32
        var holdsCopy = false
        switch value {
        case .null: status = sqlite3_bind_null(statement, index)
        case .integer(let value): status = sqlite3_bind_int64(statement, index, value)
        case .real(let value): status = sqlite3_bind_double(statement, index, value)
        case .text(let value):
            holdsCopy = true
            // Explicit length: text may contain NUL characters, which a C-string length would cut at.
            status = value.withCString {
                sqlite3_bind_text(statement, index, $0, Int32(value.utf8.count), keel_sqlite3_transient())
            }
        case .blob(let value):
            holdsCopy = true
            status = value.withUnsafeBytes { bytes in
                sqlite3_bind_blob64(
                    statement, index, bytes.baseAddress ?? UnsafeRawPointer(bitPattern: 1),
                    sqlite3_uint64(bytes.count), keel_sqlite3_transient())
            }
        }
        guard status == SQLITE_OK else { throw error(status, sql: sql) }
        return holdsCopy
    }

    /// Runs several statements without arguments (schema scripts).
    func executeScript(_ sql: String) throws(DatabaseError) {
        try requireTransactionIfGuarded(sql)
        var message: UnsafeMutablePointer<CChar>?
        let status = sqlite3_exec(handle, sql, nil, nil, &message)
        if status != SQLITE_OK {
            let text = message.map { String(cString: $0) } ?? String(cString: sqlite3_errmsg(handle))
            sqlite3_free(message)
            throw DatabaseError(code: .fromSQLite(status & 0xFF), message: text, sql: sql)
        }
    }

    /// Runs one statement with `arguments`.
    func execute(_ sql: String, _ arguments: [any DatabaseValueConvertible]) throws(DatabaseError) {
        let statement = try prepare(sql)
        var holdsCopies = false
        defer { finish(statement, clearing: holdsCopies) }
        holdsCopies = try bind(arguments, to: statement, sql: sql)
        while true {
            let status = sqlite3_step(statement)
            if status == SQLITE_DONE { return }
            if status != SQLITE_ROW { throw error(status, sql: sql) }
        }
    }

    /// Runs a query and returns every row.
    func query(_ sql: String, _ arguments: [any DatabaseValueConvertible]) throws(DatabaseError) -> [Row] {
        let statement = try prepare(sql)
        var holdsCopies = false
        defer { finish(statement, clearing: holdsCopies) }
        holdsCopies = try bind(arguments, to: statement, sql: sql)
        // Column names are read per query: a schema change re-prepares the statement (SELECT * may then
        // have other columns), so names cached at prepare time could be stale.
        let count = sqlite3_column_count(statement)
        let columns = (0..<count).map { String(cString: sqlite3_column_name(statement, $0)) }
        var rows: [Row] = []
        while true {
            let status = sqlite3_step(statement)
            if status == SQLITE_DONE { return rows }
            guard status == SQLITE_ROW else { throw error(status, sql: sql) }
            var values: [DatabaseValue] = []
            values.reserveCapacity(Int(count))
            for column in 0..<count { values.append(value(statement, column)) }
            rows.append(Row(columns: columns, values: values))
        }
    }

    /// The first column of the first row (nil when there is no row), without building rows.
    @usableFromInline
    func firstValue(_ sql: String, _ arguments: [any DatabaseValueConvertible]) throws(DatabaseError) -> DatabaseValue?
    {
        let statement = try prepare(sql)
        var holdsCopies = false
        defer { finish(statement, clearing: holdsCopies) }
        holdsCopies = try bind(arguments, to: statement, sql: sql)
        return try firstValue(of: statement, sql: sql)
    }

    /// ``firstValue(_:_:)`` with exactly one argument, passed as its value: no argument array reaches
    /// here, so the caller's can stay on its stack or never exist (a point read by key is the most common
    /// query there is; ``Database/scalar(_:_:argument:)``).
    @usableFromInline
    func firstValue(_ sql: String, bound argument: DatabaseValue) throws(DatabaseError) -> DatabaseValue? {
        try pointRead(sql, bound: argument) { statement in value(statement, 0) }
    }

    /// ``firstValue(_:bound:)`` read as bytes, copied from the row straight into the `Data` without passing
    /// through a ``DatabaseValue`` (keel-bench store.read: about 1 % of a point read). Nil when there is no
    /// row or the value is NULL.
    ///
    /// - Throws: `mismatch`, as the general path does, when the value is not a blob.
    @usableFromInline
    func firstBlob(_ sql: String, bound argument: DatabaseValue) throws(DatabaseError) -> Data? {
        let found = try pointRead(sql, bound: argument) { statement throws(DatabaseError) -> Data? in
            switch sqlite3_column_type(statement, 0) {
            case SQLITE_BLOB: return blob(statement, 0)
            case SQLITE_NULL:
                return nil
            default:
                throw Database.mismatch(value(statement, 0), Data.self, sql: sql)
            }
        }
        return found ?? nil
    }

    /// Prepares `sql`, which must take exactly one argument, binds `argument`, steps once and hands the row
    /// to `read`; nil when there is no row. The statement is reset (and unbound) before this returns.
    @inline(__always)
    private func pointRead<Read>(
        _ sql: String, bound argument: DatabaseValue, _ read: (OpaquePointer) throws(DatabaseError) -> Read
    ) throws(DatabaseError) -> Read? {
        let statement = try prepare(sql)
        var holdsCopies = false
        defer { finish(statement, clearing: holdsCopies) }
        try requireArguments(1, for: statement, sql: sql)
        holdsCopies = try bind(argument, at: 1, to: statement, sql: sql)
        return try stepsToRow(statement, sql: sql) ? try read(statement) : nil
    }

    /// Steps a bound statement once: its first column, or nil when there is no row (or no column).
    private func firstValue(of statement: OpaquePointer, sql: String) throws(DatabaseError) -> DatabaseValue? {
        try stepsToRow(statement, sql: sql) ? value(statement, 0) : nil
    }

    /// Steps a bound statement once: true at a row (which has at least one column), false when it is done.
    ///
    /// - Throws: the statement's error for anything else.
    private func stepsToRow(_ statement: OpaquePointer, sql: String) throws(DatabaseError) -> Bool {
        let status = sqlite3_step(statement)
        if status == SQLITE_DONE { return false }
        guard status == SQLITE_ROW else { throw error(status, sql: sql) }
        return true
    }

    /// Runs `sql` with one text argument and hands `body` the first column of the first row as SQLite's
    /// own bytes (valid only inside `body`; a NULL or empty value is an empty buffer): a point read that
    /// copies nothing before the caller transforms the bytes (the vault opens them straight into the
    /// plaintext). Nil when there is no row.
    func withFirstColumnBytes<R, Failure: Error>(
        _ sql: String, text argument: String, _ body: (UnsafeRawBufferPointer) throws(Failure) -> R
    ) throws -> R? {
        let statement = try prepare(sql)
        defer { finish(statement, clearing: true) }
        guard sqlite3_bind_parameter_count(statement) == 1 else {
            throw DatabaseError(code: .sqlError, message: "expected exactly one argument", sql: sql)
        }
        let bound = argument.withCString {
            sqlite3_bind_text(statement, 1, $0, Int32(argument.utf8.count), keel_sqlite3_transient())
        }
        guard bound == SQLITE_OK else { throw error(bound, sql: sql) }
        guard try stepsToRow(statement, sql: sql) else { return nil }
        let bytes = sqlite3_column_blob(statement, 0)
        let length = Int(sqlite3_column_bytes(statement, 0))
        return try body(UnsafeRawBufferPointer(start: length > 0 ? bytes : nil, count: length))
    }

    /// Resets a statement after use; when text or blobs were bound, drops them too, so no bound value
    /// (possibly sensitive, possibly large) stays in memory with the cached statement.
    private func finish(_ statement: OpaquePointer, clearing: Bool) {
        sqlite3_reset(statement)
        if clearing { sqlite3_clear_bindings(statement) }
    }

    private func value(_ statement: OpaquePointer, _ column: Int32) -> DatabaseValue {
        switch sqlite3_column_type(statement, column) {
        case SQLITE_INTEGER: return .integer(sqlite3_column_int64(statement, column))
        case SQLITE_FLOAT: return .real(sqlite3_column_double(statement, column))
        case SQLITE_TEXT:
            let text = sqlite3_column_text(statement, column)
            let length = Int(sqlite3_column_bytes(statement, column))
            return .text(
                text.map { String(decoding: UnsafeBufferPointer(start: $0, count: length), as: UTF8.self) } ?? "")
        case SQLITE_BLOB: return .blob(blob(statement, column))
        default: return .null
        }
    }

    /// The bytes of a blob column (an empty blob reads as a null pointer).
    private func blob(_ statement: OpaquePointer, _ column: Int32) -> Data {
        let length = Int(sqlite3_column_bytes(statement, column))
        return sqlite3_column_blob(statement, column).map { Data(bytes: $0, count: length) } ?? Data()
    }

    var changes: Int { Int(sqlite3_changes64(handle)) }

    /// Numbers connections for ``DatabaseChangeStamp``.
    private static let serials = Locked<UInt64>(0)
    /// This connection's number, unique in the process.
    private let serial = SQLiteConnection.serials.withLock { serial -> UInt64 in
        serial += 1
        return serial
    }

    /// Where the database stands for this connection (``DatabaseChangeStamp``).
    func changeStamp() throws(DatabaseError) -> DatabaseChangeStamp {
        guard case .integer(let version)? = try firstValue("PRAGMA data_version", []) else {
            throw DatabaseError(code: .other, message: "PRAGMA data_version returned no number", sql: nil)
        }
        return DatabaseChangeStamp(connection: serial, dataVersion: version, changes: sqlite3_total_changes64(handle))
    }

    var lastInsertRowID: Int64 { sqlite3_last_insert_rowid(handle) }
    var isInTransaction: Bool { sqlite3_get_autocommit(handle) == 0 }

    private func error(_ status: Int32, sql: String?) -> DatabaseError {
        DatabaseError(code: .fromSQLite(status & 0xFF), message: String(cString: sqlite3_errmsg(handle)), sql: sql)
    }
}
