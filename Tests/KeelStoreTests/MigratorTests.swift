import Foundation
import KeelCore
import KeelStore
import KeelStoreFixtures
import KeelTesting
import Testing

/// MOB-DATA-003: migrations from every version, interruption (kill -9) and disk full, invariants.
@Suite(.timeLimit(.minutes(1))) struct MigratorTests {
    let directory: TemporaryDirectory
    init() throws { directory = try TemporaryDirectory(prefix: "keel-migrate") }

    private func pool(_ name: String) throws -> DatabasePool { try DatabasePool(path: directory.url(name).path) }

    private func fileBytes(_ name: String) throws -> Data { try Data(contentsOf: directory.url(name)) }

    private func scalar<T: DatabaseValueConvertible>(
        _ pool: DatabasePool, _ type: T.Type, _ sql: String, _ arguments: [any DatabaseValueConvertible] = []
    ) throws -> T? {
        try pool.readSync { try $0.scalar(type, sql, arguments: arguments) }
    }

    @Test(arguments: 0...NotesSchema.versions.count)
    func migratesFromEveryVersionKeepingAllData(version: Int) throws {
        let database = try pool("v\(version).sqlite")
        let rows = version == 0 ? 0 : 250
        try NotesSchema.seed(database, version: version, rows: rows)
        #expect(try NotesSchema.invariantViolations(database, rows: rows).isEmpty)

        let report = try NotesSchema.migrator(batchSize: 40).migrate(database)
        #expect(report.applied == Array(NotesSchema.versions.dropFirst(version)))
        #expect(try NotesSchema.migrator().state(of: database) == .upToDate)
        #expect(try NotesSchema.invariantViolations(database, rows: rows).isEmpty)
        #expect(try scalar(database, Int.self, "SELECT count(*) FROM note WHERE title_key IS NULL") == 0)
        #expect(try scalar(database, Int.self, "SELECT count(*) FROM note") == rows)
        if rows > 0 {
            #expect(try scalar(database, String.self, "SELECT title_key FROM note WHERE id = 7") == "note 7 äö")
        }
        #expect(try scalar(database, Int.self, "SELECT count(*) FROM pragma_table_info('tag')") == 2)
        // Migrating again does nothing.
        #expect(try NotesSchema.migrator().migrate(database).applied.isEmpty)
    }

    @Test func aFailingMigrationRollsBackAndLeavesThePreviousVersionUntouched() throws {
        struct Broken: Error {}
        let database = try pool("failing.sqlite")
        try NotesSchema.seed(database, version: 2, rows: 20)
        var migrator = NotesSchema.migrator(upTo: 2)
        migrator.registerMigration("v3-broken") { db in
            try db.execute("CREATE TABLE half (x INTEGER)")
            try db.execute("UPDATE note SET title = 'destroyed'")
            throw Broken()
        }
        #expect {
            try migrator.migrate(database)
        } throws: { error in
            (error as? MigrationError)?.code == .failed && (error as? MigrationError)?.migration == "v3-broken"
        }
        #expect(try migrator.state(of: database) == .pending(["v3-broken"], resumingFrom: nil))
        #expect(try NotesSchema.invariantViolations(database, rows: 20).isEmpty)
        #expect(try scalar(database, Int.self, "SELECT count(*) FROM sqlite_master WHERE name = 'half'") == 0)
    }

    @Test func aMigrationThatBreaksForeignKeysIsRefusedBeforeCommit() throws {
        let database = try pool("fk.sqlite")
        try NotesSchema.seed(database, version: 2, rows: 5)
        var migrator = NotesSchema.migrator(upTo: 2)
        migrator.registerMigration("v3-dangling") { db in try db.execute("UPDATE note SET folder_id = 99 WHERE id = 1")
        }
        #expect {
            try migrator.migrate(database)
        } throws: { error in
            (error as? MigrationError)?.underlying?.code == .constraint
        }
        #expect(try scalar(database, Int.self, "SELECT folder_id FROM note WHERE id = 1") == 2)
    }

    @Test func aDatabaseFromANewerAppIsSupersededAndNeverTouched() throws {
        let database = try pool("newer.sqlite")
        try NotesSchema.seed(database, version: 4, rows: 10)
        try database.writeSync { db in
            try db.execute("INSERT INTO keel_migration (name, position) VALUES ('v5-from-the-future', 4)")
        }
        try database.writeWithoutTransactionSync { db in try db.execute("PRAGMA wal_checkpoint(TRUNCATE)") }
        let before = try fileBytes("newer.sqlite")

        #expect(try NotesSchema.migrator().state(of: database) == .superseded(unknown: ["v5-from-the-future"]))
        #expect {
            try NotesSchema.migrator().migrate(database)
        } throws: { error in
            (error as? MigrationError)?.code == .superseded
        }
        try database.writeWithoutTransactionSync { db in try db.execute("PRAGMA wal_checkpoint(TRUNCATE)") }
        #expect(try fileBytes("newer.sqlite") == before)
        #expect(try NotesSchema.invariantViolations(database, rows: 10).isEmpty)
    }

    @Test func aBackfillLeftPartWayByANewerAppIsSuperseded() throws {
        let database = try pool("newer-backfill.sqlite")
        try NotesSchema.seed(database, version: 4, rows: 5)
        try database.writeSync { db in
            try db.execute("INSERT INTO keel_migration_progress (name, checkpoint) VALUES ('v5-future-backfill', 3)")
        }
        #expect(try NotesSchema.migrator().state(of: database) == .superseded(unknown: ["v5-future-backfill"]))
    }

    @Test func aBackfillWhoseCheckpointDoesNotAdvanceFailsInsteadOfLoopingForever() throws {
        let database = try pool("stuck.sqlite")
        try NotesSchema.seed(database, version: 2, rows: 10)
        var stuck = NotesSchema.migrator(upTo: 2)
        stuck.registerBackfill("v3-stuck", batchSize: 5) { _, _, _ in 1 }
        #expect { try stuck.migrate(database) } throws: {
            ($0 as? MigrationError)?.message.contains("did not advance") == true
        }
    }

    @Test func foreignKeysAreEnforcedAgainAfterEveryMigration() throws {
        let database = try pool("fk-after.sqlite")
        try NotesSchema.migrator().migrate(database)
        #expect(try database.writeWithoutTransactionSync { try $0.scalar(Int.self, "PRAGMA foreign_keys") } == 1)
        #expect(throws: DatabaseError.self) {
            try database.writeSync {
                try $0.execute("INSERT INTO note (id, title, body, folder_id) VALUES (1, 't', 'b', 99)")
            }
        }
    }

    @Test func aDanglingReferenceFromBeforeDoesNotBlockLaterMigrationsButANewOneFailsIt() throws {
        // Left by an older version or an import: one note in a folder that does not exist.
        let database = try pool("fk-before.sqlite")
        try NotesSchema.seed(database, version: 3, rows: 10)
        try database.writeWithoutTransactionSync { db in
            try db.execute("PRAGMA foreign_keys = OFF")
            try db.execute("UPDATE note SET folder_id = 42 WHERE id = 3")
            try db.execute("PRAGMA foreign_keys = ON")
        }
        // Migrations that do not touch it go through, and it is still there for the app to repair.
        let report = try NotesSchema.migrator().migrate(database)
        #expect(report.applied == Array(NotesSchema.versions.dropFirst(3)))
        #expect(try scalar(database, Int.self, "SELECT folder_id FROM note WHERE id = 3") == 42)
        // A migration that adds one of its own fails and rolls back.
        var adding = NotesSchema.migrator()
        adding.registerMigration("v9-orphans") { db in
            try db.execute("UPDATE note SET folder_id = 77 WHERE id = 4")
        }
        #expect {
            try adding.migrate(database)
        } throws: { error in
            let migration = error as? MigrationError
            return migration?.migration == "v9-orphans"
                && migration?.message.contains("new foreign-key violations: 1 from note to folder") == true
        }
        #expect(try scalar(database, Int.self, "SELECT folder_id FROM note WHERE id = 4") != 77)
        #expect(try adding.state(of: database) == .pending(["v9-orphans"], resumingFrom: nil))
    }

    @Test func checkingTheStateNeverWrites() throws {
        let database = try pool("fresh.sqlite")
        #expect(try NotesSchema.migrator().state(of: database) == .pending(NotesSchema.versions, resumingFrom: nil))
        #expect(try database.readSync { try $0.scalar(Int.self, "SELECT count(*) FROM sqlite_master") } == 0)
    }

    @Test func aReorderedMigrationListIsRefused() throws {
        let database = try pool("reordered.sqlite")
        try NotesSchema.seed(database, version: 2, rows: 3)
        var reordered = Migrator()
        reordered.registerMigration("v2-folders") { _ in }
        reordered.registerMigration("v1-notes") { _ in }
        #expect { try reordered.migrate(database) } throws: { ($0 as? MigrationError)?.code == .inconsistent }
    }

    @Test func aBackfillResumesFromItsCheckpointAfterAFailure() throws {
        struct Crash: Error {}
        let database = try pool("resume.sqlite")
        try NotesSchema.seed(database, version: 2, rows: 1000)
        let batches = Locked(0)
        var failing = NotesSchema.migrator(upTo: 2)
        failing.registerBackfill("v3-title-key-backfill", batchSize: 100) { db, checkpoint, size in
            let done = batches.withLock {
                $0 += 1; return $0
            }
            if done == 4 { throw Crash() }
            return try NotesSchema.titleKeyBatch(db, checkpoint, size)
        }
        #expect(throws: MigrationError.self) { try failing.migrate(database) }
        let state = try NotesSchema.migrator().state(of: database)
        #expect(
            state
                == .pending(
                    ["v3-title-key-backfill", "v4-tags"],
                    resumingFrom: MigrationState.Resume(migration: "v3-title-key-backfill", checkpoint: 300)))
        #expect(try NotesSchema.invariantViolations(database, rows: 1000).isEmpty)
        // The rerun starts at row 301: 7 more batches of 100, plus the one that finds nothing left.
        let report = try NotesSchema.migrator(batchSize: 100).migrate(database)
        #expect(report.batches == 8)
        #expect(try NotesSchema.invariantViolations(database, rows: 1000).isEmpty)
        #expect(try scalar(database, Int.self, "SELECT count(*) FROM note WHERE title_key IS NULL") == 0)
    }

    @Test func runningOutOfSpaceFailsTypedLeavesTheOldVersionAndSucceedsLater() throws {
        let database = try pool("full.sqlite")
        try NotesSchema.seed(database, version: 2, rows: 3000)
        let pages = try database.readSync { try $0.scalar(Int.self, "PRAGMA page_count") } ?? 0
        // Room for a little more: the backfill (which grows every row) commits some batches, then runs out.
        try database.writeWithoutTransactionSync { db in try db.execute("PRAGMA max_page_count = \(pages + 6)") }
        #expect {
            try NotesSchema.migrator(batchSize: 100).migrate(database)
        } throws: { error in
            (error as? MigrationError)?.underlying?.code == .full
        }
        #expect(try NotesSchema.invariantViolations(database, rows: 3000).isEmpty)
        if case .pending(let names, let resume) = try NotesSchema.migrator().state(of: database) {
            #expect(names.first == "v3-title-key-backfill")
            #expect((resume?.checkpoint ?? 0) > 0, "some batches committed before the disk filled up")
            #expect((resume?.checkpoint ?? 0) < 3000)
        } else {
            Issue.record("expected pending migrations")
        }
        try database.writeWithoutTransactionSync { db in try db.execute("PRAGMA max_page_count = 1073741823") }
        try NotesSchema.migrator(batchSize: 500).migrate(database)
        #expect(try NotesSchema.migrator().state(of: database) == .upToDate)
        #expect(try NotesSchema.invariantViolations(database, rows: 3000).isEmpty)
    }

    /// Found in review: two processes migrating one database at launch (an app and its extension) — the one
    /// that got the lock second had read its pending list before the first finished, found the backfill's
    /// checkpoint gone (the first removes it when done) and started the finished backfill over, failing a
    /// healthy database. Each step checks, in its own transaction, that it is not applied already.
    @Test func twoProcessesMigratingAtOnceNeverRunAStepTwice() async throws {
        let path = directory.url("shared.sqlite").path
        let seed = try ChildProcess.launch(
            product: "keel-fixtures", arguments: ["seed", "--db", path, "--version", "2", "--rows", "300"])
        #expect(try await seed.waitForExit(timeout: .seconds(120)) == .exited(0))
        // The first stops inside its first batch, holding the write lock.
        let first = try ChildProcess.launch(
            product: "keel-fixtures", arguments: ["migrate", "--db", path, "--batch-size", "50", "--lockstep"])
        _ = try await first.waitForLine { $0.hasPrefix("batch ") }
        // The second reads its pending list meanwhile and waits for the lock.
        let second = try ChildProcess.launch(
            product: "keel-fixtures", arguments: ["migrate", "--db", path, "--batch-size", "50"])
        try await Task.sleep(for: .milliseconds(500))
        try first.writeLine("go")
        while let line = try await first.nextLine(timeout: .seconds(60)) {
            if line.hasPrefix("batch ") { try first.writeLine("go") }
            if line.hasPrefix("done") { break }
        }
        #expect(try await first.waitForExit(timeout: .seconds(60)) == .exited(0))
        let ended = try await second.waitForExit(timeout: .seconds(60))
        #expect(ended == .exited(0), "\(second.output(of: .standardError))")
        #expect(!second.output(of: .standardOutput).contains("batch "), "the finished backfill ran again")
        let database = try DatabasePool(path: path)
        #expect(try NotesSchema.invariantViolations(database, rows: 300).isEmpty)
        #expect(try await NotesSchema.migrator().state(of: database) == .upToDate)
    }

    /// A child process runs the backfill and is killed with SIGKILL at 30 different moments; after every
    /// kill the database holds all data and consistent progress, and the last run completes.
    @Test func surviveSIGKILLAtThirtyMomentsDuringAMigration() async throws {
        let path = directory.url("killed.sqlite").path
        let rows = 12_000
        let seed = try ChildProcess.launch(
            product: "keel-fixtures", arguments: ["seed", "--db", path, "--version", "2", "--rows", "\(rows)"])
        #expect(try await seed.waitForExit(timeout: .seconds(120)) == .exited(0))

        var checkpoints: [Int64] = []
        for kill in 0..<30 {
            // Lockstep: the child stops before committing each batch until told to go on, so the kill
            // lands exactly where chosen: inside batch 1…4's open transaction, or (every third kill)
            // just after letting it commit, while the next batch is under way.
            // Every fifth kill is timed instead (no lockstep, a few milliseconds into the run), so it can
            // also land in a COMMIT, a WAL write or an automatic checkpoint.
            let timed = kill % 5 == 4
            let child = try ChildProcess.launch(
                product: "keel-fixtures",
                arguments: ["migrate", "--db", path, "--batch-size", "50"] + (timed ? [] : ["--lockstep"]))
            if timed {
                _ = try await child.waitForLine { $0.hasPrefix("batch ") }
                try await Task.sleep(for: .milliseconds(kill % 3 + 1))
            } else {
                let wanted = kill % 4 + 1
                var seen = 0
                while seen < wanted {
                    guard let line = try await child.nextLine(timeout: .seconds(60)) else { break }
                    guard line.hasPrefix("batch ") else { continue }
                    seen += 1
                    if seen < wanted || kill % 3 == 0 { try child.writeLine("go") }
                }
            }
            child.kill()
            let ended = try await child.waitForExit()
            #expect(
                ended == .signaled(ChildProcess.Signal.kill),
                "kill \(kill): \(ended); stdout: \(child.output(of: .standardOutput).suffix(200)); stderr: \(child.output(of: .standardError))"
            )

            let database = try DatabasePool(path: path)
            let problems = try NotesSchema.invariantViolations(database, rows: rows)
            #expect(problems.isEmpty, "after kill \(kill): \(problems)")
            if case .pending(_, let resume) = try await NotesSchema.migrator().state(of: database),
                let checkpoint = resume?.checkpoint
            {
                checkpoints.append(checkpoint)
                // Everything up to the checkpoint is migrated; nothing beyond it is half-written.
                #expect(
                    try scalar(
                        database, Int.self, "SELECT count(*) FROM note WHERE id <= ? AND title_key IS NULL",
                        [checkpoint]) == 0)
                #expect(
                    try scalar(
                        database, Int.self, "SELECT count(*) FROM note WHERE id > ? AND title_key IS NOT NULL",
                        [checkpoint]) == 0)
            }
        }
        #expect(checkpoints == checkpoints.sorted())  // progress only moves forward
        #expect(Set(checkpoints).count > 10)  // the kills really landed at different moments

        let finish = try ChildProcess.launch(
            product: "keel-fixtures", arguments: ["migrate", "--db", path, "--batch-size", "50"])
        #expect(try await finish.waitForExit(timeout: .seconds(120)) == .exited(0))
        let database = try DatabasePool(path: path)
        #expect(try await NotesSchema.migrator().state(of: database) == .upToDate)
        #expect(try NotesSchema.invariantViolations(database, rows: rows).isEmpty)
        #expect(try scalar(database, Int.self, "SELECT count(*) FROM note WHERE title_key IS NULL") == 0)
    }

    /// MOB-DATA-003: a first run killed (or out of disk) between the two bookkeeping tables of an earlier
    /// version left only the first; migrating must still work, and now both are made in one transaction.
    @Test func aHalfMadeBookkeepingDoesNotBlockMigrationForever() throws {
        let database = try pool("half.sqlite")
        try database.writeWithoutTransactionSync {
            try $0.execute("CREATE TABLE keel_migration (name TEXT PRIMARY KEY NOT NULL, position INTEGER NOT NULL)")
        }
        let migrator = NotesSchema.migrator(batchSize: 40)
        _ = try migrator.migrate(database)
        #expect(try migrator.migrate(database).applied.isEmpty)
        #expect(try scalar(database, Int.self, "SELECT count(*) FROM keel_migration") == NotesSchema.versions.count)
    }
}
