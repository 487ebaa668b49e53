import Foundation
public import KeelCore

/// Named, ordered, forward-only migrations of one database (MOB-DATA-003).
///
/// - Each schema migration runs in its own transaction, with foreign-key checks before commit; a failing
///   one rolls back and leaves the database exactly at the previous version.
/// - A backfill (a data migration over many rows) commits in batches with a checkpoint: an app killed in
///   the middle continues from the checkpoint when it restarts, never from scratch and never leaving rows
///   half-migrated.
/// - A database that has applied migrations this app does not know (written by a newer app, restored from
///   a newer device) is ``MigrationState/superseded(unknown:)``: Keel refuses to touch it. It never
///   migrates it, and never wipes it.
///
/// ```swift
/// var migrator = Migrator()
/// migrator.registerMigration("v1-notes") { db in try db.execute("CREATE TABLE note (id INTEGER PRIMARY KEY, title TEXT)") }
/// migrator.registerBackfill("v2-title-lower", batchSize: 500) { db, checkpoint, batchSize in ... }
/// try await migrator.migrate(pool)
/// ```
public struct Migrator: Sendable {
    /// One batch of a backfill: process rows after `checkpoint` (nil on the first batch) and return the
    /// new checkpoint, or nil when there is nothing left.
    public typealias BackfillStep =
        @Sendable (_ database: Database, _ checkpoint: Int64?, _ batchSize: Int) throws -> Int64?

    enum Work: Sendable {
        case schema(@Sendable (Database) throws -> Void)
        case backfill(batchSize: Int, step: BackfillStep)
    }

    struct Migration: Sendable {
        let name: String
        let work: Work
    }

    private(set) var migrations: [Migration] = []

    /// A migrator with no migrations; register them in the order they ship.
    public init() {}

    /// The registered names, in order.
    public var names: [String] { migrations.map(\.name) }

    /// Registers a schema migration. Names are unique and permanent: never rename or reorder a shipped one.
    public mutating func registerMigration(_ name: String, _ body: @escaping @Sendable (Database) throws -> Void) {
        register(Migration(name: name, work: .schema(body)))
    }

    /// Registers a resumable backfill that runs in batches of `batchSize`.
    public mutating func registerBackfill(_ name: String, batchSize: Int = 1000, _ step: @escaping BackfillStep) {
        precondition(batchSize > 0, "Migrator: batchSize must be positive")
        register(Migration(name: name, work: .backfill(batchSize: batchSize, step: step)))
    }

    private mutating func register(_ migration: Migration) {
        precondition(!migration.name.isEmpty, "Migrator: a migration needs a name")
        precondition(!names.contains(migration.name), "Migrator: migration \(migration.name) is registered twice")
        migrations.append(migration)
    }

    // MARK: - State

    /// Where `pool`'s database stands against this migrator (blocking; use from a background thread or a
    /// tool).
    ///
    /// - Throws: ``MigrationError`` `inconsistent` when the applied migrations are not a prefix of the
    ///   registered ones; ``DatabaseError`` when the database cannot be read.
    public func state(of pool: DatabasePool) throws -> MigrationState {
        try pool.writeWithoutTransactionSync { try state(in: $0) }
    }

    /// Where `pool`'s database stands against this migrator, off the cooperative thread pool.
    ///
    /// - Throws: as ``state(of:)-(DatabasePool)``.
    public func state(of pool: DatabasePool) async throws -> MigrationState {
        let migrator = self
        return try await pool.writeWithoutTransaction { database in try migrator.state(in: database) }
    }

    func state(in database: Database) throws -> MigrationState {
        // Read-only: checking the state never writes (the bookkeeping tables may not exist yet).
        let bookkept =
            try database.scalar(Int.self, "SELECT count(*) FROM sqlite_master WHERE name = 'keel_migration'") == 1
        guard bookkept else { return names.isEmpty ? .upToDate : .pending(names, resumingFrom: nil) }
        let applied = try database.rows("SELECT name FROM keel_migration ORDER BY position").compactMap {
            $0.get("name", as: String.self)
        }
        // Absent when an older app, or a first run killed between the two tables of an earlier version,
        // created only the first: nothing is in progress then.
        let progressKept =
            try database.scalar(
                Int.self, "SELECT count(*) FROM sqlite_master WHERE name = 'keel_migration_progress'") == 1
        let inProgress =
            progressKept ? try database.rows("SELECT name, checkpoint FROM keel_migration_progress") : []
        let known = Set(names)
        // A backfill this app does not know, even part-way, means a newer app changed the schema.
        let unknown =
            applied.filter { !known.contains($0) }
            + inProgress.compactMap { $0.get("name", as: String.self) }.filter { !known.contains($0) }
        if !unknown.isEmpty { return .superseded(unknown: unknown) }
        guard Array(names.prefix(applied.count)) == applied else {
            throw MigrationError(
                code: .inconsistent, migration: nil,
                message:
                    "applied migrations \(applied) are not a prefix of the registered ones \(names): the list was reordered or a shipped migration was removed"
            )
        }
        let pending = Array(names.dropFirst(applied.count))
        if pending.isEmpty { return .upToDate }
        let progress = inProgress.first { $0.get("name", as: String.self) == pending[0] }
        return .pending(
            pending,
            resumingFrom: progress.map {
                MigrationState.Resume(migration: pending[0], checkpoint: $0.get("checkpoint", as: Int64.self))
            })
    }

    /// Both bookkeeping tables, in one transaction: a full disk or a kill between them leaves neither.
    private static func createBookkeeping(_ database: Database) throws {
        try database.inTransaction(.immediate) {
            try database.execute(
                "CREATE TABLE IF NOT EXISTS keel_migration (name TEXT PRIMARY KEY NOT NULL, position INTEGER NOT NULL)")
            try database.execute(
                "CREATE TABLE IF NOT EXISTS keel_migration_progress (name TEXT PRIMARY KEY NOT NULL, checkpoint INTEGER)"
            )
        }
    }

    // MARK: - Migrating

    /// Applies every pending migration in order (blocking; use from a background thread or a tool).
    ///
    /// - Throws: ``MigrationError`` (`superseded`, `inconsistent`, or `failed` with the failing migration
    ///   and the underlying ``DatabaseError``, e.g. `full`). The database is then at the last migration
    ///   that completed (or the last committed backfill batch): nothing is lost, and a later call resumes.
    @discardableResult
    public func migrate(_ pool: DatabasePool) throws -> MigrationReport {
        try pool.writeWithoutTransactionSync { database in try migrate(database) }
    }

    /// Applies every pending migration in order, off the cooperative thread pool.
    @discardableResult
    public func migrate(_ pool: DatabasePool) async throws -> MigrationReport {
        let migrator = self
        return try await pool.writeWithoutTransaction { database in try migrator.migrate(database) }
    }

    func migrate(_ database: Database) throws -> MigrationReport {
        var report = MigrationReport()
        let state: MigrationState
        do {
            state = try self.state(in: database)
        } catch let error as MigrationError {
            throw error
        } catch {
            throw MigrationError(
                code: .failed, migration: nil, message: "cannot read the migration state: \(error)",
                underlying: error as? DatabaseError)
        }
        // The pending migrations are the registered list minus its applied prefix (checked by `state`).
        let applied: Int
        switch state {
        case .superseded(let unknown):
            throw MigrationError(
                code: .superseded, migration: nil,
                message:
                    "the database was written by a newer app (unknown migrations: \(unknown.joined(separator: ", "))); it is left untouched"
            )
        case .upToDate:
            return report
        case .pending(let pending, _):
            applied = names.count - pending.count
        }
        do {
            try Self.createBookkeeping(database)
        } catch {
            throw MigrationError(
                code: .failed, migration: nil, message: "cannot create the migration tables: \(error)",
                underlying: error as? DatabaseError)
        }
        for (position, migration) in migrations.enumerated() where position >= applied {
            do {
                switch migration.work {
                case .schema(let body):
                    try runSchemaMigration(migration.name, position: position, body, in: database)
                case .backfill(let batchSize, let step):
                    report.batches += try runBackfill(
                        migration.name, position: position, batchSize: batchSize, step, in: database)
                }
                report.applied.append(migration.name)
            } catch let error as MigrationError {
                throw error
            } catch {
                throw MigrationError(
                    code: .failed, migration: migration.name, message: "\(error)", underlying: error as? DatabaseError)
            }
        }
        return report
    }

    private func runSchemaMigration(
        _ name: String, position: Int, _ body: (Database) throws -> Void, in database: Database
    ) throws {
        // Foreign keys off while the schema changes (table rebuilds need it), checked before commit — when the
        // connection enforces them at all. Off, `ON DELETE CASCADE` and `SET NULL` do not fire either: a
        // migration that deletes parent rows deletes or updates their children itself, or the check fails.
        let foreignKeys = try database.scalar(Int.self, "PRAGMA foreign_keys") == 1
        if foreignKeys { try database.execute("PRAGMA foreign_keys = OFF") }
        let outcome = Result<Void, any Error> {
            try database.inTransaction(.immediate) {
                // Another process may have applied it since the pending list was read (the app and its extension
                // migrating at launch): then there is nothing to do, and doing it again would fail or double it.
                guard try !Self.isApplied(name, in: database) else { return }
                // Only what the migration adds is its fault: a dangling reference already there (an import, an
                // older version, a pool opened without foreign keys) must not fail every migration after it,
                // launch after launch, with no way forward.
                let before = foreignKeys ? try Self.foreignKeyViolations(in: database) : [:]
                try body(database)
                try database.requireOpenTransaction()
                if foreignKeys {
                    let added = try Self.foreignKeyViolations(in: database).compactMap { tables, count in
                        count > before[tables, default: 0]
                            ? "\(count - before[tables, default: 0]) from \(tables[0]) to \(tables[1])" : nil
                    }.sorted()
                    guard added.isEmpty else {
                        throw DatabaseError(
                            code: .constraint,
                            message:
                                "migration \(name) leaves new foreign-key violations: \(added.joined(separator: ", "))"
                        )
                    }
                }
                try database.execute(
                    "INSERT INTO keel_migration (name, position) VALUES (?, ?)", arguments: [name, position])
            }
        }
        if foreignKeys {
            // Restoring enforcement must really happen (the pragma is a silent no-op inside an open
            // transaction): a writer left without foreign keys would let bad data in later.
            try? database.execute("PRAGMA foreign_keys = ON")
            let restored = (try? database.scalar(Int.self, "PRAGMA foreign_keys")) == 1
            // A failed migration reports its own error (a full disk, a constraint), not this one's echo.
            if case .failure(let error) = outcome { throw error }
            guard restored else {
                throw DatabaseError(
                    code: .other,
                    message:
                        "migration \(name) was applied, but foreign keys could not be turned back on: this connection would let bad data in, so nothing more runs on it"
                )
            }
        }
        try outcome.get()
    }

    /// How many foreign-key violations there are from each table to each parent table
    /// (`PRAGMA foreign_key_check`). Counted per pair of tables, not per row: a migration that rebuilds a
    /// table (the usual way to change a column) may give its rows new rowids, and the constraints new
    /// numbers, without adding a violation.
    private static func foreignKeyViolations(in database: Database) throws -> [[String]: Int] {
        var found: [[String]: Int] = [:]
        for row in try database.rows("PRAGMA foreign_key_check") {
            let tables = [row.values[0], row.values[2]].map { value in
                if case .text(let name) = value { name } else { value.description }
            }
            found[tables, default: 0] += 1
        }
        return found
    }

    /// Whether migration `name` is recorded as applied (read in the caller's transaction).
    private static func isApplied(_ name: String, in database: Database) throws -> Bool {
        try database.scalar(Int.self, "SELECT count(*) FROM keel_migration WHERE name = ?", argument: name) ?? 0 > 0
    }

    /// Runs batches until the step reports completion; each batch and its checkpoint commit together.
    private func runBackfill(_ name: String, position: Int, batchSize: Int, _ step: BackfillStep, in database: Database)
        throws -> Int
    {
        var batches = 0
        while true {
            let finished = try database.inTransaction(.immediate) { () -> Bool in
                // Finished by another process meanwhile (which also removed the checkpoint): never started over.
                if try Self.isApplied(name, in: database) { return true }
                let progress = try database.rows(
                    "SELECT checkpoint FROM keel_migration_progress WHERE name = ?", arguments: [name]
                ).first
                let checkpoint = progress?.get("checkpoint", as: Int64.self)
                let next = try step(database, checkpoint, batchSize)
                // The batch's work must still be in this transaction before its checkpoint is recorded.
                try database.requireOpenTransaction()
                if let next {
                    if let checkpoint, next <= checkpoint {
                        throw MigrationError(
                            code: .failed, migration: name,
                            message:
                                "the backfill's checkpoint did not advance (\(checkpoint) → \(next)); it would never finish"
                        )
                    }
                    try database.execute(
                        "INSERT INTO keel_migration_progress (name, checkpoint) VALUES (?, ?) ON CONFLICT(name) DO UPDATE SET checkpoint = excluded.checkpoint",
                        arguments: [name, next])
                    return false
                }
                try database.execute("DELETE FROM keel_migration_progress WHERE name = ?", arguments: [name])
                try database.execute(
                    "INSERT INTO keel_migration (name, position) VALUES (?, ?)", arguments: [name, position])
                return true
            }
            batches += 1
            if finished { return batches }
        }
    }
}

/// Where a database stands against a ``Migrator``.
public enum MigrationState: Sendable, Equatable {
    /// Every registered migration is applied.
    case upToDate
    /// These migrations are pending, in order; a backfill may be part-way (resume point).
    case pending([String], resumingFrom: MigrationState.Resume?)
    /// The database has applied migrations this app does not know: a newer app wrote it. Keel will not
    /// migrate, reset or otherwise touch it; the app must show an explicit result (update the app, or
    /// restore/export) instead of an empty state.
    case superseded(unknown: [String])

    /// A backfill that stopped part-way, and its last committed checkpoint.
    public struct Resume: Sendable, Equatable {
        /// The backfill in progress.
        public let migration: String
        /// Its last committed checkpoint (nil when it stopped before its first batch committed).
        public let checkpoint: Int64?

        /// The resume point of `migration` after `checkpoint`.
        public init(migration: String, checkpoint: Int64?) {
            self.migration = migration
            self.checkpoint = checkpoint
        }
    }
}

/// What a ``Migrator/migrate(_:)`` call did.
public struct MigrationReport: Sendable, Equatable {
    /// The migrations completed by this call, in order.
    public var applied: [String] = []
    /// How many backfill batches this call committed.
    public var batches = 0
}

/// Why migrating stopped. The database is left at the last completed step.
public struct MigrationError: KeelError, CustomStringConvertible {
    /// The kind of stop.
    public typealias Code = ErrorCode<MigrationError>

    /// Why migrating stopped: `superseded`, `inconsistent` or `failed`.
    public let code: Code
    /// The migration that failed, when one did.
    public let migration: String?
    /// A developer-facing explanation of the stop (what was unknown, inconsistent or failed).
    public let message: String
    /// The database error behind a `failed` migration (e.g. `full` when the disk filled up).
    public let underlying: DatabaseError?

    /// An error of kind `code`, naming the failed `migration` when there is one and the database error
    /// behind it when there is one.
    public init(code: Code, migration: String?, message: String, underlying: DatabaseError? = nil) {
        self.code = code
        self.migration = migration
        self.message = message
        self.underlying = underlying
    }

    /// A developer-facing explanation: the code, the migration when there is one, and the message, e.g.
    /// `migration failed in v2-notes: ...`.
    public var description: String {
        "migration \(code)" + (migration.map { " in \($0)" } ?? "") + ": \(message)"
    }
}

extension ErrorCode where Domain == MigrationError {
    /// The database belongs to a newer app version; nothing was done.
    public static var superseded: Self { Self("superseded") }
    /// The applied migrations do not match the registered list (reordered or removed).
    public static var inconsistent: Self { Self("inconsistent") }
    /// A migration failed and was rolled back; see ``MigrationError/underlying``.
    public static var failed: Self { Self("failed") }
}
