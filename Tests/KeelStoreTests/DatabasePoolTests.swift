import KeelStoreFixtures
import Foundation
import KeelCore
import KeelStore
import KeelTesting
import Testing

/// The SQLite layer on real files.
@Suite(.timeLimit(.minutes(1))) struct DatabasePoolTests {
    let directory: TemporaryDirectory
    init() throws { directory = try TemporaryDirectory(prefix: "keel-store") }

    private func open(_ name: String = "app.sqlite", _ configuration: DatabaseConfiguration = DatabaseConfiguration())
        throws -> DatabasePool
    {
        try DatabasePool(path: directory.url(name).path, configuration: configuration)
    }

    @Test func opensInWALWithNormalSyncForeignKeysAndABusyTimeout() async throws {
        let pool = try open()
        let settings = try await pool.writeWithoutTransaction { db in
            (
                try db.scalar(String.self, "PRAGMA journal_mode"), try db.scalar(Int.self, "PRAGMA synchronous"),
                try db.scalar(Int.self, "PRAGMA foreign_keys"), try db.scalar(Int.self, "PRAGMA busy_timeout")
            )
        }
        #expect(settings.0 == "wal")
        #expect(settings.1 == 1)  // NORMAL
        #expect(settings.2 == 1)
        #expect(settings.3 == 5000)
        let full = try open("full.sqlite", DatabaseConfiguration(synchronous: .full))
        #expect(try await full.writeWithoutTransaction { try $0.scalar(Int.self, "PRAGMA synchronous") } == 2)
    }

    @Test func typedValuesRoundTripExactly() async throws {
        let pool = try open()
        let blob = Data([0, 1, 2, 0, 255])
        let stored = try await pool.write { db in
            try db.execute("CREATE TABLE t (i INTEGER, r REAL, s TEXT, b BLOB, n TEXT)")
            try db.execute(
                "INSERT INTO t VALUES (?, ?, ?, ?, ?)",
                arguments: [Int64.max, 0.1, "zoë 👩‍💻 \u{0}x", blob, Optional<String>.none])
            try db.execute("INSERT INTO t VALUES (?, ?, ?, ?, ?)", arguments: [Int64.min, -1e300, "", Data(), "n"])
            return try db.rows("SELECT * FROM t ORDER BY rowid")
        }
        #expect(stored[0].values == [.integer(.max), .real(0.1), .text("zoë 👩‍💻 \u{0}x"), .blob(blob), .null])
        #expect(stored[1].get("i", as: Int64.self) == .min)
        #expect(stored[1].get("r", as: Double.self) == -1e300)
        #expect(stored[1].get("b", as: Data.self) == Data())
        #expect(stored[0].get("n", as: String?.self) == .some(nil))
        #expect(stored[0].get("missing", as: Int.self) == nil)
    }

    /// Each statement is checked against its own number of placeholders, also when statements alternate
    /// (the connection notes the count of the statement it used last) and on the one-argument point-read path.
    @Test func anArgumentCountThatDoesNotMatchThePlaceholdersIsRefused() async throws {
        let pool = try open()
        try await pool.write { db in
            try db.execute("CREATE TABLE t (a INTEGER, b INTEGER)")
            try db.execute("INSERT INTO t VALUES (?, ?)", arguments: [1, 2])
        }
        let one = "SELECT b FROM t WHERE a = ?"
        let two = "SELECT b FROM t WHERE a = ? AND b = ?"
        let results = try await pool.read { db -> [Bool] in
            func refuses(_ body: () throws -> Void) -> Bool {
                do {
                    try body()
                    return false
                } catch let error as DatabaseError {
                    return error.code == .sqlError && error.message.contains("argument")
                } catch {
                    return false
                }
            }
            return [
                try db.scalar(Int.self, one, arguments: [1]) == 2,
                refuses { _ = try db.scalar(Int.self, two, arguments: [1]) },
                try db.scalar(Int.self, two, arguments: [1, 2]) == 2,
                refuses { _ = try db.scalar(Int.self, one, arguments: [1, 2]) },
                refuses { _ = try db.scalar(Int.self, one) },
                refuses { _ = try db.rows(two, arguments: [1]) },
                try db.scalar(Int.self, one, arguments: [1]) == 2,
            ]
        }
        #expect(results == [true, true, true, true, true, true, true])
    }

    @Test func aThrowingWriteRollsEverythingBack() async throws {
        struct Abort: Error {}
        let pool = try open()
        try await pool.write { try $0.execute("CREATE TABLE t (x INTEGER)") }
        await #expect(throws: Abort.self) {
            try await pool.write { db in
                try db.execute("INSERT INTO t VALUES (1)")
                throw Abort()
            }
        }
        #expect(try await pool.read { try $0.scalar(Int.self, "SELECT count(*) FROM t") } == 0)
    }

    @Test func aSavepointRollsBackOnlyItsOwnChanges() async throws {
        struct Abort: Error {}
        let pool = try open()
        let count = try await pool.write { db in
            try db.execute("CREATE TABLE t (x INTEGER)")
            try db.execute("INSERT INTO t VALUES (1)")
            _ = try? db.inSavepoint {
                try db.execute("INSERT INTO t VALUES (2)")
                throw Abort()
            }
            try db.inSavepoint { try db.execute("INSERT INTO t VALUES (3)") }
            return try db.rows("SELECT x FROM t ORDER BY x").compactMap { $0.get("x", as: Int.self) }
        }
        #expect(count == [1, 3])
    }

    @Test func constraintViolationsAreTypedWithTheSQLAndSQLitesMessage() async throws {
        let pool = try open()
        try await pool.write { db in
            try db.executeScript(
                """
                CREATE TABLE parent (id INTEGER PRIMARY KEY);
                CREATE TABLE child (id INTEGER PRIMARY KEY, parent INTEGER NOT NULL REFERENCES parent(id));
                INSERT INTO parent VALUES (1);
                """)
        }
        do {
            try await pool.write { try $0.execute("INSERT INTO child VALUES (1, 99)") }
            Issue.record("a dangling foreign key must fail")
        } catch let error as DatabaseError {
            #expect(error.code == .constraint)
            #expect(error.sql == "INSERT INTO child VALUES (1, 99)")
            #expect(error.message.contains("FOREIGN KEY"))
        }
        do {
            try await pool.write { try $0.execute("SELEKT 1") }
            Issue.record("bad SQL must fail")
        } catch let error as DatabaseError {
            #expect(error.code == .sqlError)
        }
    }

    @Test func aFileThatIsNotADatabaseIsRefusedAndLeftAsItWas() throws {
        let path = directory.url("notes.txt").path
        let content = Data(String(repeating: "these are my notes, not a database\n", count: 200).utf8)
        try content.write(to: URL(fileURLWithPath: path))
        #expect {
            _ = try DatabasePool(path: path)
        } throws: { error in
            (error as? DatabaseError)?.code == .notADatabase
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == content)
        #expect(!FileManager.default.fileExists(atPath: path + "-wal"))
    }

    @Test func aTruncatedDatabaseIsATypedErrorAndIsNotDeleted() async throws {
        let path = directory.url("truncated.sqlite").path
        do {
            let pool = try DatabasePool(path: path, configuration: DatabaseConfiguration(journalMode: .delete))
            try await pool.write { db in
                try db.execute("CREATE TABLE t (x BLOB)")
                for _ in 0..<50 {
                    try db.execute("INSERT INTO t VALUES (?)", arguments: [Data(repeating: 1, count: 4096)])
                }
            }
        }
        let whole = try Data(contentsOf: URL(fileURLWithPath: path))
        let truncated = whole.prefix(whole.count / 3)
        try truncated.write(to: URL(fileURLWithPath: path))
        var failed = false
        do {
            let pool = try DatabasePool(path: path, configuration: DatabaseConfiguration(journalMode: .delete))
            _ = try await pool.read { try $0.rows("SELECT count(*), sum(length(x)) FROM t") }
        } catch let error as DatabaseError {
            failed = true
            #expect([DatabaseError.Code.corrupt, .notADatabase].contains(error.code), "\(error)")
        }
        #expect(failed)
        #expect(FileManager.default.fileExists(atPath: path))
    }

    @Test func aLockHeldBeyondTheBusyTimeoutIsBusy() async throws {
        let path = directory.url("locked.sqlite").path
        let holder = try DatabasePool(path: path)
        try await holder.write { try $0.execute("CREATE TABLE t (x INTEGER)") }
        let other = try DatabasePool(path: path, configuration: DatabaseConfiguration(busyTimeout: .milliseconds(100)))
        // The holder keeps an immediate transaction open while the other pool tries to write.
        let started = Flag()
        let release = DispatchSemaphore(value: 0)
        let holding = Task {
            try await holder.write { db in
                try db.execute("INSERT INTO t VALUES (1)")
                started.set()
                release.wait()  // blocks the holder's writer queue, not a cooperative thread
            }
        }
        await started.wait()
        do {
            try await other.write { try $0.execute("INSERT INTO t VALUES (2)") }
            Issue.record("the write must time out as busy")
        } catch let error as DatabaseError {
            #expect(error.code == .busy)
        }
        release.signal()
        try await holding.value
        #expect(try await other.read { try $0.scalar(Int.self, "SELECT count(*) FROM t") } == 1)
    }

    /// The same contention with a real second process (SQLite's locks are file locks, shared across
    /// processes such as an app and its extension): its open write transaction makes our write busy but
    /// not our reads; killed mid-transaction it loses only its own uncommitted row; released, it commits.
    @Test func aWriteLockHeldByAnotherProcessIsBusyAndAKilledHolderLeavesOnlyCommittedRows() async throws {
        let path = directory.url("shared.sqlite").path
        let pool = try DatabasePool(path: path, configuration: DatabaseConfiguration(busyTimeout: .milliseconds(100)))
        try await pool.write { db in
            try db.execute("CREATE TABLE t (x TEXT NOT NULL)")
            try db.execute("INSERT INTO t VALUES ('committed')")
        }
        func contents() async throws -> String? {
            try await pool.read {
                try $0.scalar(String.self, "SELECT group_concat(x, ',') FROM (SELECT x FROM t ORDER BY rowid)")
            }
        }

        let killed = try ChildProcess.launch(product: "keel-fixtures", arguments: ["hold", "--db", path])
        #expect(
            try await killed.nextLine(timeout: .seconds(30)) == "holding",
            "stderr: \(killed.output(of: .standardError))")
        do {
            try await pool.write { try $0.execute("INSERT INTO t VALUES ('blocked')") }
            Issue.record("a write while another process holds the write lock must time out as busy")
        } catch let error as DatabaseError {
            #expect(error.code == .busy, "\(error)")
        }
        #expect(try await contents() == "committed")  // WAL: the other process's writer does not block reads
        killed.kill()
        #expect(try await killed.waitForExit() == .signaled(ChildProcess.Signal.kill))
        try await pool.write { try $0.execute("INSERT INTO t VALUES ('after the kill')") }
        #expect(try await contents() == "committed,after the kill")

        let released = try ChildProcess.launch(product: "keel-fixtures", arguments: ["hold", "--db", path])
        #expect(try await released.nextLine(timeout: .seconds(30)) == "holding")
        try released.writeLine("go")
        #expect(try await released.nextLine(timeout: .seconds(30)) == "released")
        #expect(try await released.waitForExit() == .exited(0))
        #expect(try await contents() == "committed,after the kill,from the holder")
    }

    @Test func readersSeeASnapshotAndAreNotBlockedByTheWriter() async throws {
        let pool = try open()
        try await pool.write { db in
            try db.execute("CREATE TABLE t (x INTEGER)")
            try db.execute("INSERT INTO t VALUES (1)")
        }
        let inside = Flag()
        let finish = DispatchSemaphore(value: 0)
        let writing = Task {
            try await pool.write { db in
                try db.execute("INSERT INTO t VALUES (2)")
                inside.set()
                finish.wait()  // the write transaction stays open (on the writer queue)
            }
        }
        await inside.wait()
        // While the writer holds its transaction, readers run and see the committed state.
        let counts = try await withThrowingTaskGroup(of: Int?.self) { group in
            for _ in 0..<4 {
                group.addTask { try await pool.read { try $0.scalar(Int.self, "SELECT count(*) FROM t") } }
            }
            return try await group.reduce(into: [Int?]()) { $0.append($1) }
        }
        #expect(counts == [1, 1, 1, 1])
        finish.signal()
        try await writing.value
        #expect(try await pool.read { try $0.scalar(Int.self, "SELECT count(*) FROM t") } == 2)
    }

    @Test func writesAreSerialized() async throws {
        let pool = try open()
        try await pool.write {
            try $0.execute("CREATE TABLE counter (n INTEGER)"); try $0.execute("INSERT INTO counter VALUES (0)")
        }
        // Read-modify-write without SQL atomicity: only serialization keeps every increment. `writeInline`
        // runs on its caller's thread when the writer is idle and on the writer queue when it is not, `write`
        // always on the queue; the blocking form from a plain thread at the same time must wait for both.
        @Sendable func increment(_ db: Database) throws {
            let n = try db.scalar(Int.self, "SELECT n FROM counter") ?? 0
            Thread.sleep(forTimeInterval: 0.0005)  // a window for another writer to interleave, were it let in
            try db.execute("UPDATE counter SET n = ?", arguments: [n + 1])
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                    DispatchQueue.global().async {
                        continuation.resume(with: Result { for _ in 0..<50 { try pool.writeSync(increment) } })
                    }
                }
            }
            for index in 0..<100 {
                group.addTask {
                    if index.isMultiple(of: 2) {
                        try await pool.writeInline(increment)
                    } else {
                        try await pool.write(increment)
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(try await pool.read { try $0.scalar(Int.self, "SELECT n FROM counter") } == 150)
    }

    /// A `write` body may wait for other work (here: for a task that starts only once every body runs):
    /// bodies run on writer queues, so more of them than Swift's cooperative pool has threads can wait at
    /// once and the releasing task still runs. Were a body run on a cooperative thread, they would fill the
    /// pool and time out.
    @Test func writeBodiesRunOffTheCooperativePool() async throws {
        let count = ProcessInfo.processInfo.activeProcessorCount + 1
        let pools = try (0..<count).map { index in
            try DatabasePool(path: directory.url("waiting-\(index).sqlite").path)
        }
        let entered = Locked(0)
        let release = DispatchSemaphore(value: 0)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for pool in pools {
                group.addTask {
                    try await pool.write { db in
                        try db.execute("CREATE TABLE t (x INTEGER)")
                        entered.withLock { $0 += 1 }
                        guard release.wait(timeout: .now() + 10) == .success else {
                            throw DatabaseError(code: .busy, message: "never released: the releasing task did not run")
                        }
                    }
                }
            }
            group.addTask {
                while entered.withLock({ $0 }) < count { try await Task.sleep(for: .milliseconds(5)) }
                for _ in 0..<count { release.signal() }
            }
            try await group.waitForAll()
        }
        for pool in pools { await pool.close() }
    }

    @Test func moreThanOneStatementNeedsExecuteScript() async throws {
        let pool = try open()
        await #expect(throws: DatabaseError.self) {
            try await pool.write { try $0.execute("CREATE TABLE a (x); CREATE TABLE b (y)") }
        }
        try await pool.write { try $0.executeScript("CREATE TABLE a (x); CREATE TABLE b (y);") }
        #expect(
            try await pool.read { try $0.scalar(Int.self, "SELECT count(*) FROM sqlite_master WHERE type = 'table'") }
                == 2)
    }

    @Test func argumentCountMismatchIsAnError() async throws {
        let pool = try open()
        try await pool.write { try $0.execute("CREATE TABLE t (x)") }
        await #expect(throws: DatabaseError.self) {
            try await pool.write { try $0.execute("INSERT INTO t VALUES (?)") }
        }
    }

    /// MOB-DATA-003: when SQLite rolls a transaction back on its own (an interrupt, a full disk), a caller
    /// that caught the error and went on must not commit the rest statement by statement.
    @Test func statementsAfterSQLiteRolledTheTransactionBackDoNotCommitOneByOne() throws {
        let pool = try open()
        try pool.writeSync { try $0.execute("CREATE TABLE t (x INTEGER)") }
        #expect(throws: DatabaseError.self) {
            try pool.writeSync { db in
                try db.execute("INSERT INTO t VALUES (1)")
                try? db.execute("ROLLBACK")  // what SQLite itself does after an interrupt or a full disk
                try db.execute("INSERT INTO t VALUES (2)")
            }
        }
        #expect(throws: DatabaseError.self) {
            try pool.writeSync { db in
                try db.execute("INSERT INTO t VALUES (3)")
                do {
                    try db.inSavepoint {
                        try db.execute("INSERT INTO t VALUES (4)")
                        try db.execute("ROLLBACK")
                    }
                } catch {}  // the pattern savepoints are for: skip a bad row, go on
                try db.execute("INSERT INTO t VALUES (5)")
            }
        }
        #expect(try pool.readSync { try $0.scalar(Int.self, "SELECT count(*) FROM t") } == 0)
        // The connection is sound afterwards.
        try pool.writeSync { try $0.execute("INSERT INTO t VALUES (6)") }
        #expect(try pool.readSync { try $0.scalar(Int.self, "SELECT count(*) FROM t") } == 1)
    }

    /// The stamp a cache of derived state is checked with (the sync engine's outbox tail): it stays put
    /// while nothing is written, and moves with a write on the same connection (even one rolled back) and
    /// with a commit by another connection to the file; two connections' stamps never match.
    @Test func aChangeStampMovesWithEveryWriteByAnyConnectionAndOnlyThen() async throws {
        let pool = try open()
        try await pool.write { try $0.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)") }
        let first = try await pool.write { try $0.changeStamp() }
        #expect(try await pool.write { try $0.changeStamp() } == first)
        _ = try await pool.read { try $0.rows("SELECT * FROM t") }
        #expect(try await pool.write { try $0.changeStamp() } == first)

        let afterInsert = try await pool.write { db in
            try db.execute("INSERT INTO t (v) VALUES ('a')")
            return try db.changeStamp()
        }
        #expect(afterInsert != first)
        #expect(try await pool.write { try $0.changeStamp() } == afterInsert)

        struct Abandon: Error {}
        await #expect(throws: Abandon.self) {
            try await pool.write { db in
                try db.execute("UPDATE t SET v = 'b'")
                throw Abandon()
            }
        }
        let afterRollback = try await pool.write { try $0.changeStamp() }
        #expect(afterRollback != afterInsert)  // errs towards "changed"

        // Another connection to the same file (another pool, as another process would have).
        let other = try open()
        try await other.write { try $0.execute("DELETE FROM t") }
        let afterOther = try await pool.write { try $0.changeStamp() }
        #expect(afterOther != afterRollback)
        #expect(try await pool.write { try $0.changeStamp() } == afterOther)
        #expect(try await other.write { try $0.changeStamp() } != afterOther)
        #expect(try await pool.read { try $0.changeStamp() } != afterOther)
    }
}

/// A one-way signal that async code can wait for without blocking a cooperative thread.
final class Flag: Sendable {
    private let state = Locked(false)
    func set() { state.withLock { $0 = true } }
    func wait() async {
        while !state.withLock({ $0 }) { try? await Task.sleep(for: .milliseconds(2)) }
    }

}

/// Opening where the process may not write: a typed error, and nothing created or changed.
@Suite struct DatabaseAccessTests {
    @Test func aMissingDirectoryIsCannotOpenAndCreatesNothing() throws {
        let directory = try TemporaryDirectory()
        let path = directory.url("missing/app.sqlite").path
        #expect {
            _ = try DatabasePool(path: path)
        } throws: { error in
            (error as? DatabaseError)?.code == .cannotOpen
        }
        #expect(!FileManager.default.fileExists(atPath: directory.url("missing").path))
    }

    /// Whether an unprivileged open can be tried: as a normal user, or as root through runuser (root
    /// itself ignores file permissions).
    static let canTestPermissions = getuid() != 0 || FileManager.default.isExecutableFile(atPath: "/usr/sbin/runuser")

    /// Runs `keel-fixtures seed` (which opens for writing and migrates; no rows, so nothing else can fail)
    /// as an unprivileged user.
    private func openAsUnprivilegedUser(_ path: String) async throws -> (ChildProcess.Termination, String) {
        let fixtures = ChildProcess.productsDirectory.appendingPathComponent("keel-fixtures").path
        let arguments = ["seed", "--db", path, "--version", "1", "--rows", "0"]
        let child =
            getuid() != 0
            ? try ChildProcess.launch(executable: fixtures, arguments: arguments)
            : try ChildProcess.launch(
                executable: "/usr/sbin/runuser", arguments: ["-u", "nobody", "--", fixtures] + arguments)
        return (try await child.waitForExit(), child.output(of: .standardError))
    }

    @Test(.enabled(if: canTestPermissions))
    func aDirectoryWithoutPermissionIsATypedErrorAndTheFileIsUntouched() async throws {
        let directory = try TemporaryDirectory()
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: directory.path)
        let privateDirectory = directory.url("private")
        try FileManager.default.createDirectory(at: privateDirectory, withIntermediateDirectories: true)
        let path = privateDirectory.appendingPathComponent("app.sqlite").path
        try NotesSchema.seed(try DatabasePool(path: path), version: 1, rows: 3)
        // Root's 0700 keeps nobody out; for a normal user, 0000 keeps the owner out too.
        try FileManager.default.setAttributes(
            [.posixPermissions: getuid() == 0 ? 0o700 : 0o000], ofItemAtPath: privateDirectory.path)
        defer {
            try? FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: privateDirectory.path)
        }
        let before = getuid() == 0 ? try Data(contentsOf: URL(fileURLWithPath: path)) : nil
        let (status, error) = try await openAsUnprivilegedUser(path)
        #expect(status == .exited(2))
        #expect(error.contains("database cannotOpen"), "\(error)")
        try FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: privateDirectory.path)
        if let before { #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before) }
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before)
    }

    @Test(.enabled(if: canTestPermissions))
    func aReadOnlyFileIsATypedErrorAndIsUntouched() async throws {
        let directory = try TemporaryDirectory()
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: directory.path)
        let path = directory.url("app.sqlite").path
        try NotesSchema.seed(
            try DatabasePool(path: path, configuration: DatabaseConfiguration(journalMode: .delete)), version: 1,
            rows: 3)
        // Readable by everyone, writable by no one but root (SQLite would silently open it read-only).
        try FileManager.default.setAttributes([.posixPermissions: 0o444], ofItemAtPath: path)
        let before = try Data(contentsOf: URL(fileURLWithPath: path))
        let (status, error) = try await openAsUnprivilegedUser(path)
        #expect(status == .exited(2))
        #expect(error.contains("database readonly"), "\(error)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before)
    }
}
