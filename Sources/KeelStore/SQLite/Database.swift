public import Foundation

/// Access to the database inside a ``DatabasePool/write(_:)`` or ``DatabasePool/read(_:)`` closure.
///
/// Valid only during the closure, on the thread that runs it: do not store it or send it elsewhere.
public final class Database {
    @usableFromInline let connection: SQLiteConnection
    private var savepointDepth = 0

    init(connection: SQLiteConnection) { self.connection = connection }

    /// Runs one statement, binding `arguments` to its `?` placeholders.
    ///
    /// - Throws: ``DatabaseError``.
    public func execute(_ sql: String, arguments: [any DatabaseValueConvertible] = []) throws(DatabaseError) {
        try connection.execute(sql, arguments)
    }

    /// Runs several statements separated by semicolons (no arguments), e.g. a schema script.
    public func executeScript(_ sql: String) throws(DatabaseError) {
        try connection.executeScript(sql)
    }

    /// Every row of a query.
    public func rows(_ sql: String, arguments: [any DatabaseValueConvertible] = []) throws(DatabaseError) -> [Row] {
        try connection.query(sql, arguments)
    }

    // Inlinable so that the app's call specializes for `T` (keel-bench store.read).
    /// The first column of the first row as `T`, or nil when there is no row (or it is NULL).
    ///
    /// - Throws: ``DatabaseError`` — `mismatch` when the value cannot be read as `T`.
    @inlinable
    public func scalar<T: DatabaseValueConvertible>(
        _ type: T.Type = T.self, _ sql: String, arguments: [any DatabaseValueConvertible] = []
    ) throws(DatabaseError) -> T? {
        let found =
            arguments.count == 1
            ? try connection.firstValue(sql, bound: arguments[0].databaseValue)
            : try connection.firstValue(sql, arguments)
        return try Self.converted(found, sql: sql)
    }

    /// ``scalar(_:_:arguments:)`` with exactly one argument — a point read by key, the most common query
    /// there is — without an argument array: nothing is allocated before SQLite steps.
    ///
    /// - Throws: as ``scalar(_:_:arguments:)``; `sqlError` when `sql` does not have exactly one placeholder.
    @inlinable
    public func scalar<T: DatabaseValueConvertible>(
        _ type: T.Type = T.self, _ sql: String, argument: some DatabaseValueConvertible
    ) throws(DatabaseError) -> T? {
        if T.self == Data.self {
            // Bytes straight from the row, not wrapped in a DatabaseValue first (specialized away for other types).
            return try connection.firstBlob(sql, bound: argument.databaseValue) as! T?
        }
        return try Self.converted(try connection.firstValue(sql, bound: argument.databaseValue), sql: sql)
    }

    /// A scalar read's value as `T`: nil for no row or NULL; `mismatch` when it is not a `T`.
    @inlinable
    static func converted<T: DatabaseValueConvertible>(_ found: DatabaseValue?, sql: String) throws(DatabaseError)
        -> T?
    {
        guard let value = found else { return nil }
        if case .null = value { return nil }
        guard let converted = T.fromDatabaseValue(value) else { throw mismatch(value, T.self, sql: sql) }
        return converted
    }

    /// The error of a value read as a type it is not.
    @usableFromInline
    static func mismatch(_ value: DatabaseValue, _ type: Any.Type, sql: String) -> DatabaseError {
        DatabaseError(code: .mismatch, message: "\(value) is not a \(type)", sql: sql)
    }

    /// Rows changed by the last statement.
    public var changes: Int { connection.changes }

    /// Where the database stands for this connection: see ``DatabaseChangeStamp``.
    package func changeStamp() throws(DatabaseError) -> DatabaseChangeStamp {
        try connection.changeStamp()
    }

    /// The rowid of the last insert.
    public var lastInsertRowID: Int64 { connection.lastInsertRowID }

    /// Runs `body` in a savepoint nested in the current transaction: when `body` throws, only its own
    /// changes are rolled back, and the error is rethrown.
    public func inSavepoint<T>(_ body: () throws -> T) throws -> T {
        savepointDepth += 1
        let name = "keel_savepoint_\(savepointDepth)"
        defer { savepointDepth -= 1 }
        try execute("SAVEPOINT \(name)")
        do {
            let result = try body()
            try requireOpenTransaction()
            try execute("RELEASE SAVEPOINT \(name)")
            return result
        } catch {
            if connection.isInTransaction {
                try execute("ROLLBACK TO SAVEPOINT \(name)")
                try execute("RELEASE SAVEPOINT \(name)")
            }
            throw error
        }
    }

    /// Whether a transaction is open.
    public var isInTransaction: Bool { connection.isInTransaction }

    /// Runs `body` with statements limited to `tables` (see ``DataStore``); returns what was denied.
    func restricted<T>(to tables: [String], scope: String, _ body: () throws -> T) -> (
        Result<T, any Error>, denied: [String]
    ) {
        let access = TableAccess(scope: scope, tables: tables)
        let result = connection.withTableAccess(access) { Result { try body() } }
        return (result, access.denials)
    }

    /// Runs `body` in a transaction of `kind`, committing when it returns and rolling back when it
    /// throws. For use inside ``DatabasePool/writeWithoutTransaction(_:)`` (migrations); ``DatabasePool/write(_:)``
    /// already runs in one.
    public func inTransaction<T>(_ kind: TransactionKind = .immediate, _ body: () throws -> T) throws -> T {
        try execute(kind == .immediate ? "BEGIN IMMEDIATE" : "BEGIN DEFERRED")
        // Statements of `body` run only inside this transaction (see SQLiteConnection.guardsTransaction).
        let guarded = connection.guardsTransaction
        connection.guardsTransaction = true
        do {
            let result = try body()
            try requireOpenTransaction()
            connection.guardsTransaction = guarded
            try execute("COMMIT")
            return result
        } catch {
            connection.guardsTransaction = guarded
            if connection.isInTransaction { try? execute("ROLLBACK") }
            throw error
        }
    }

    /// Throws when SQLite has rolled the current transaction back on its own (after a full disk, an I/O
    /// error, ...): the work so far is gone, and anything written after that point ran outside the
    /// transaction, so nothing that depends on the work (a migration record, a checkpoint) may follow.
    public func requireOpenTransaction() throws(DatabaseError) {
        guard connection.isInTransaction else {
            throw DatabaseError(
                code: .other,
                message: "the transaction was rolled back by SQLite (after an earlier error); its work is lost")
        }
    }
}

/// When a transaction takes the write lock.
public enum TransactionKind: Sendable {
    /// At the first write (reads first, then maybe `busy` when it upgrades).
    case deferred
    /// At the start: the transaction cannot be refused later for lock reasons.
    case immediate
}
