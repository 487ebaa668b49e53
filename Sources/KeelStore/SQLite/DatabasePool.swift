import Dispatch
import Foundation
import KeelCore

/// A database file with one serialized writer and concurrent readers (WAL).
///
/// Concurrency model:
/// - every write runs on the single writer connection, one at a time — writes never interleave;
/// - reads run on up to ``DatabaseConfiguration/maximumReaders`` read-only connections at once, each in
///   its own read transaction, so a read sees one consistent snapshot and is not blocked by the writer;
/// - async writes and reads run on dispatch queues, and the caller suspends: the body never runs on, and
///   waiting for the writer or a reader slot never blocks, a thread of Swift's cooperative pool — a body may
///   take long (a migration) or wait for other work;
/// - ``writeInline(_:)`` is for short bodies that never wait: when the writer is idle it runs the body at
///   once on the calling thread, saving the hop to the writer queue and back (two thread switches, a third of
///   a small durable commit measured on a 2-core Linux VM).
public final class DatabasePool: Sendable {
    /// The file's path.
    public let path: String
    /// The configuration the pool's connections were opened with.
    public let configuration: DatabaseConfiguration
    private let writer: SQLiteConnection
    private let writerQueue: DispatchQueue
    /// Held by whoever uses the writer connection: a write running on its caller's thread, or on `writerQueue`.
    private let writerInUse = Locked(())
    private let readers: Locked<[SQLiteConnection]>
    private let readerSlots: DispatchSemaphore
    private let closed = Locked(false)

    /// Opens (creating if needed) the database at `path` and applies the configuration.
    ///
    /// - Throws: ``DatabaseError`` — a file that is not a database is `notADatabase` and is left as it was.
    public init(path: String, configuration: DatabaseConfiguration = DatabaseConfiguration()) throws(DatabaseError) {
        self.path = path
        self.configuration = configuration
        writer = try SQLiteConnection(path: path, readOnly: false, configuration: configuration)
        writerQueue = DispatchQueue(label: "keel.store.writer")
        readers = Locked([])
        readerSlots = DispatchSemaphore(value: configuration.maximumReaders)
    }

    // MARK: - Writing

    /// Runs `body` in an immediate transaction on the writer: committed when it returns, rolled back
    /// (and the error rethrown) when it throws. The body runs on the writer's queue, never on a thread of
    /// Swift's cooperative pool.
    public func write<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        try await onWriterQueue(
            writerTurn { database in try database.inTransaction(.immediate) { try body(database) } })
    }

    /// ``write(_:)`` for a short body that never waits for other work (a few rows, a durable record): when
    /// the writer is idle the transaction runs at once on the calling thread instead of on the writer queue,
    /// which saves two thread switches per call; when a write is running it waits on the writer queue as
    /// ``write(_:)`` does. The body must not block on anything another task would have to do — on the
    /// calling thread that task may never get to run.
    public func writeInline<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        let run = writerTurn { database in try database.inTransaction(.immediate) { try body(database) } }
        if let result = writerInUse.withLockIfAvailable(run) { return try result.get() }
        return try await onWriterQueue(run)
    }

    /// Runs `body` on the writer without opening a transaction (migrations manage their own), on the writer's
    /// queue.
    public func writeWithoutTransaction<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws
        -> T
    {
        try await onWriterQueue(writerTurn(body))
    }

    /// The blocking form of ``write(_:)``, for code that is not async (command-line tools, migrations
    /// in a child process). Never call it from the cooperative thread pool.
    public func writeSync<T>(_ body: (Database) throws -> T) throws -> T {
        try writeWithoutTransactionSync { database in try database.inTransaction(.immediate) { try body(database) } }
    }

    /// The blocking form of ``writeWithoutTransaction(_:)``.
    public func writeWithoutTransactionSync<T>(_ body: (Database) throws -> T) throws -> T {
        try writerInUse.withLock { _ in
            try requireOpen()
            return try body(Database(connection: writer))
        }
    }

    /// `body` as one turn on the writer connection, to run while holding `writerInUse`.
    private func writerTurn<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T)
        -> @Sendable (inout Void) -> Result<T, any Error>
    {
        let writer = self.writer
        return { [self] _ in
            Result {
                try requireOpen()
                return try body(Database(connection: writer))
            }
        }
    }

    private func onWriterQueue<T: Sendable>(_ turn: @escaping @Sendable (inout Void) -> Result<T, any Error>)
        async throws -> T
    {
        try await withCheckedThrowingContinuation { continuation in
            writerQueue.async { [self] in continuation.resume(with: writerInUse.withLock(turn)) }
        }
    }

    private func requireOpen() throws(DatabaseError) {
        guard !closed.withLock({ $0 }) else {
            throw DatabaseError(code: .closed, message: "the database at \(path) was closed")
        }
    }

    // MARK: - Closing

    /// Whether ``close()`` was called.
    public var isClosed: Bool { closed.withLock { $0 } }

    /// Closes the pool: a write that is running is interrupted (its transaction rolls back, and it throws
    /// `interrupted`), work that has not started throws `closed`, running reads finish, and then every
    /// connection is closed. Every later call throws ``DatabaseError`` `closed`. Returns when no
    /// connection is left open.
    public func close() async {
        guard
            closed.withLock({ closed in
                defer { closed = true }; return !closed
            })
        else { return }
        // Safe from this thread: the writer connection is closed only below, once no write uses it.
        writer.interrupt()
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            writerQueue.async { [self] in
                writerInUse.withLock { _ in closeConnections() }
                continuation.resume()
            }
        }
    }

    /// After the running write: waits until no read runs either (every slot free), closes the idle readers,
    /// then the writer, last. The slots are freed again so that later reads find the pool closed instead of
    /// blocking.
    private func closeConnections() {
        let slots = configuration.maximumReaders
        for _ in 0..<slots { readerSlots.wait() }
        readers.withLock { idle in
            for connection in idle { connection.close() }
            idle.removeAll()
        }
        for _ in 0..<slots { readerSlots.signal() }
        // Everything into the main file and an empty WAL: a closed pool leaves no committed content in a side
        // file (SQLite does not always remove the WAL on close). Best effort: a checkpoint that cannot run
        // leaves the WAL as valid as it was.
        _ = try? writer.query("PRAGMA wal_checkpoint(TRUNCATE)", [])
        writer.close()
    }

    // MARK: - Reading

    /// Runs `body` in a read transaction on a reader connection: it sees one consistent snapshot and
    /// runs concurrently with other reads and with the writer.
    public func read<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async { [self] in
                continuation.resume(with: Result { try readSync(body) })
            }
        }
    }

    /// The blocking form of ``read(_:)``.
    public func readSync<T>(_ body: (Database) throws -> T) throws -> T {
        readerSlots.wait()
        defer { readerSlots.signal() }
        try requireOpen()
        let connection =
            try readers.withLock { $0.popLast() }
            ?? SQLiteConnection(path: path, readOnly: true, configuration: configuration)
        defer {
            // A reader still inside a transaction (a failed rollback) would pin an old snapshot: drop it.
            if connection.isInTransaction { connection.close() } else { readers.withLock { $0.append(connection) } }
        }
        let database = Database(connection: connection)
        return try database.inTransaction(.deferred) { try body(database) }
    }
}

extension SQLiteConnection: @unchecked Sendable {}
// @unchecked Sendable: a connection is used by one thread at a time — the writer only while holding
// `writerInUse`, a reader only between taking it from and returning it to the pool's locked free list.
