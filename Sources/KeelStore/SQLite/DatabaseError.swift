/// A failed database operation: what kind of failure, the SQL, and SQLite's message.
///
/// Raw SQLite result codes never appear in the public API; ``code`` is an extensible set of named kinds.
public struct DatabaseError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The kind of failure. Extensible: switch with a `default`.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }
        public var description: String { name }

        /// Another connection holds a lock longer than the busy timeout.
        public static let busy = Code("busy")
        /// A table is locked within the same connection.
        public static let locked = Code("locked")
        /// A UNIQUE, NOT NULL, CHECK or FOREIGN KEY constraint failed.
        public static let constraint = Code("constraint")
        /// The disk (or `max_page_count`) is full.
        public static let full = Code("full")
        /// The file is corrupt.
        public static let corrupt = Code("corrupt")
        /// The file is not a database.
        public static let notADatabase = Code("notADatabase")
        /// An I/O error.
        public static let ioError = Code("ioError")
        /// The database or its directory is read-only.
        public static let readonly = Code("readonly")
        /// The file cannot be opened (missing directory, no permission).
        public static let cannotOpen = Code("cannotOpen")
        /// Access denied by the OS.
        public static let permission = Code("permission")
        /// The SQL is wrong (syntax, unknown table or column).
        public static let sqlError = Code("sqlError")
        /// A value did not fit (too big, wrong type for the Swift side).
        public static let mismatch = Code("mismatch")
        /// The operation was interrupted.
        public static let interrupted = Code("interrupted")
        /// Anything else SQLite reported.
        public static let other = Code("other")

        static func fromSQLite(_ primary: Int32) -> Code {
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
            default: .other
            }
        }
    }

    /// The kind of failure.
    public let code: Code
    /// SQLite's explanation.
    public let message: String
    /// The statement that failed, when there was one.
    public let sql: String?

    public init(code: Code, message: String, sql: String? = nil) {
        self.code = code
        self.message = message
        self.sql = sql
    }

    public var description: String {
        "database \(code): \(message)" + (sql.map { " — in: \($0)" } ?? "")
    }
}
