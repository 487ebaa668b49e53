/// How a ``DatabasePool`` opens and uses its file.
public struct DatabaseConfiguration: Sendable {
    /// The journal mode. WAL (the default) lets readers work while one writer writes.
    public enum JournalMode: Sendable { case wal, delete }

    /// How hard SQLite syncs to disk.
    ///
    /// `normal` (the default) is durable across application crashes and, in WAL mode, never corrupts
    /// the database on power loss; the last transactions before a power loss may roll back. `full` syncs
    /// on every commit: durable across power loss, slower.
    public enum Synchronous: String, Sendable { case normal = "NORMAL", full = "FULL" }

    /// The journal mode: `wal` (the default) switches the file to WAL when the pool opens it, and opening
    /// fails if SQLite refuses; with `delete` the pool leaves the file's journal mode as it is.
    public var journalMode: JournalMode
    /// How hard SQLite syncs to disk (`normal` by default), set on the writer connection when the pool
    /// opens the file.
    public var synchronous: Synchronous
    /// Foreign-key enforcement (on by default).
    public var foreignKeys: Bool
    /// How long a statement waits for another connection's lock before failing with `busy`.
    public var busyTimeout: Duration
    /// How many read-only connections serve concurrent reads.
    public var maximumReaders: Int
    /// Whether SQLite overwrites what a write or delete frees with zeros (`PRAGMA secure_delete`): true for
    /// data that must be gone from the file once replaced or deleted; nil leaves SQLite's compiled-in default,
    /// which differs between builds (off upstream, on in Debian's).
    public var secureDelete: Bool?

    /// A configuration; the defaults are WAL, `normal` syncs, foreign keys on, a 5-second busy timeout,
    /// 4 readers and SQLite's own `secure_delete` default.
    ///
    /// - Precondition: `maximumReaders` is at least 1 and `busyTimeout` is not negative.
    public init(
        journalMode: JournalMode = .wal, synchronous: Synchronous = .normal, foreignKeys: Bool = true,
        busyTimeout: Duration = .seconds(5), maximumReaders: Int = 4, secureDelete: Bool? = nil
    ) {
        precondition(maximumReaders >= 1, "DatabaseConfiguration.maximumReaders must be at least 1")
        precondition(busyTimeout >= .zero, "DatabaseConfiguration.busyTimeout cannot be negative")
        self.journalMode = journalMode
        self.synchronous = synchronous
        self.foreignKeys = foreignKeys
        self.busyTimeout = busyTimeout
        self.maximumReaders = maximumReaders
        self.secureDelete = secureDelete
    }
}
