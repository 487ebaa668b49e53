public import KeelCore

/// A failed database operation: what kind of failure, the SQL, and SQLite's message.
///
/// Raw SQLite result codes never appear in the public API; ``code`` is an extensible set of named kinds.
public struct DatabaseError: KeelError, Equatable, CustomStringConvertible {
    /// The kind of failure. Extensible: switch with a `default`.
    public typealias Code = ErrorCode<DatabaseError>

    /// The kind of failure.
    public let code: Code
    /// SQLite's explanation.
    public let message: String
    /// The statement that failed, when there was one.
    public let sql: String?

    /// An error of kind `code` with SQLite's `message` and the statement that failed, when there was one.
    public init(code: Code, message: String, sql: String? = nil) {
        self.code = code
        self.message = message
        self.sql = sql
    }

    /// A developer-facing explanation: the code, SQLite's message and the statement when there was one,
    /// e.g. `database constraint: UNIQUE constraint failed: note.id — in: INSERT INTO note ...`.
    public var description: String {
        "database \(code): \(message)" + (sql.map { " — in: \($0)" } ?? "")
    }
}

extension ErrorCode where Domain == DatabaseError {
    /// Another connection holds a lock longer than the busy timeout.
    public static var busy: Self { Self("busy") }
    /// A table is locked within the same connection.
    public static var locked: Self { Self("locked") }
    /// A UNIQUE, NOT NULL, CHECK or FOREIGN KEY constraint failed.
    public static var constraint: Self { Self("constraint") }
    /// The disk (or `max_page_count`) is full.
    public static var full: Self { Self("full") }
    /// The file is corrupt.
    public static var corrupt: Self { Self("corrupt") }
    /// The file is not a database.
    public static var notADatabase: Self { Self("notADatabase") }
    /// An I/O error.
    public static var ioError: Self { Self("ioError") }
    /// The database or its directory is read-only.
    public static var readonly: Self { Self("readonly") }
    /// The file cannot be opened (missing directory, no permission).
    public static var cannotOpen: Self { Self("cannotOpen") }
    /// Access denied by the OS.
    public static var permission: Self { Self("permission") }
    /// The SQL is wrong (syntax, unknown table or column).
    public static var sqlError: Self { Self("sqlError") }
    /// A value did not fit (too big, or a stored value of another type than the Swift side asked for).
    public static var mismatch: Self { Self("mismatch") }
    /// A row has no column of the name asked for (``Row/decode(_:as:)``).
    public static var missingColumn: Self { Self("missingColumn") }
    /// A column is NULL where a non-optional value was asked for (``Row/decode(_:as:)``).
    public static var unexpectedNull: Self { Self("unexpectedNull") }
    /// The statement touches something its dataset does not declare (see ``DataStore``).
    public static var notAuthorized: Self { Self("notAuthorized") }
    /// The operation was interrupted.
    public static var interrupted: Self { Self("interrupted") }
    /// The pool was closed (``DatabasePool/close()``): nothing more runs on it.
    public static var closed: Self { Self("closed") }
    /// Anything else SQLite reported.
    public static var other: Self { Self("other") }

    static func fromSQLite(_ primary: Int32) -> Self {
        switch primary {
        case 5: .busy  // SQLITE_BUSY
        case 6: .locked  // SQLITE_LOCKED
        case 19: .constraint  // SQLITE_CONSTRAINT
        case 13: .full  // SQLITE_FULL
        case 11: .corrupt  // SQLITE_CORRUPT
        case 26: .notADatabase  // SQLITE_NOTADB
        case 10: .ioError  // SQLITE_IOERR
        case 8: .readonly  // SQLITE_READONLY
        case 14: .cannotOpen  // SQLITE_CANTOPEN
        case 3: .permission  // SQLITE_PERM
        case 1: .sqlError  // SQLITE_ERROR
        case 20, 18: .mismatch  // SQLITE_MISMATCH, SQLITE_TOOBIG
        case 9: .interrupted  // SQLITE_INTERRUPT
        case 23: .notAuthorized  // SQLITE_AUTH
        default: .other
        }
    }
}
