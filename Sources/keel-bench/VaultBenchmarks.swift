import CSQLite
import Foundation
import KeelCore
import KeelStore
import KeelTesting

/// Benchmarks of sealed vault records (issue #12): a `personal` dataset sealed with AES-256-GCM through
/// the vault's public API, against raw sqlite3 C calls storing the same rows in plaintext, in a table of
/// the same shape (`WITHOUT ROWID`, as the vault's) with the same pragmas.
enum VaultBenchmarks {
    static let rows = 100_000
    static let plaintext = Data((0..<1024).map { UInt8(truncatingIfNeeded: $0 &* 31) })
    static let createPlain =
        #"CREATE TABLE IF NOT EXISTS plain (id TEXT PRIMARY KEY NOT NULL, value BLOB NOT NULL, updated_at REAL NOT NULL) WITHOUT ROWID"#

    static let inventory: Inventory = {
        do {
            return try Inventory([
                Dataset(
                    name: "notes", purpose: "benchmark records", kind: .keyValue, classification: .personal,
                    isAccountBound: true, retention: .untilEvent, backup: .include,
                    deletionTriggers: [.logout, .accountDeletion], role: .sourceOfTruth)
            ])
        } catch { preconditionFailure("benchmark inventory refused: \(error)") }
    }()

    static func id(_ row: Int) -> String { "note-\(row)" }

    /// An open vault for a benchmark account, in a fresh data directory with keys beside it.
    static func makeVault(_ directory: TemporaryDirectory) async throws -> (Vaults, Vault) {
        let keys = try FileKeyStore(directory: directory.url("keys"), dataDirectories: [directory.url("data")])
        let vaults = try Vaults(dataDirectory: directory.url("data"), keyStore: keys, inventory: inventory)
        let vault = try await vaults.open(try AccountID("bench-account"))
        return (vaults, vault)
    }

    /// Raw plaintext inserts of `count` rows from `start`, 1,000 to a transaction.
    static func rawInsert(_ raw: StoreBenchmarks.RawDatabase, from start: Int, count: Int) throws {
        let statement = try raw.prepare("INSERT OR REPLACE INTO plain (id, value, updated_at) VALUES (?, ?, ?)")
        defer { sqlite3_finalize(statement) }
        var row = start
        while row < start + count {
            let end = min(row + 1000, start + count)
            try raw.exec("BEGIN IMMEDIATE")
            for current in row..<end {
                sqlite3_reset(statement)
                let id = id(current)
                sqlite3_bind_text(statement, 1, id, -1, keel_sqlite3_transient())
                _ = plaintext.withUnsafeBytes {
                    sqlite3_bind_blob64(
                        statement, 2, $0.baseAddress, sqlite3_uint64($0.count), keel_sqlite3_transient())
                }
                sqlite3_bind_double(statement, 3, Date().timeIntervalSince1970)
                guard sqlite3_step(statement) == SQLITE_DONE else { throw BenchError("insert failed") }
            }
            try raw.exec("COMMIT")
            row = end
        }
    }

    /// Sealed inserts through the vault, 1,000 to a transaction.
    static func vaultInsert(_ vault: Vault, from start: Int, count: Int) async throws {
        var row = start
        while row < start + count {
            let first = row
            let end = min(row + 1000, start + count)
            try await vault.write("notes") { records in
                for current in first..<end { try records.put(id(current), plaintext) }
            }
            row = end
        }
    }

    static let insert = Benchmark(
        name: "vault.insert",
        unit: "ms per 100k records",
        goal: "ratio ≤ 1.2 (sealed 1 KiB records, 1,000 per transaction: Vault vs raw sqlite3 plaintext inserts)",
        operations: 1,
        prepare: {
            let directory = try TemporaryDirectory(prefix: "keel-bench-vault")
            let (vaults, vault) = try blockingAwait { try await makeVault(directory) }
            // The same pragmas as the vault's databases (WAL, `Vaults.synchronous`).
            let raw = try StoreBenchmarks.RawDatabase(
                path: directory.url("raw.sqlite").path, synchronous: Vaults.synchronous.rawValue)
            try raw.exec(createPlain)
            let vaultNext = Counter()
            let rawNext = Counter()
            return Benchmark.Sides(
                baseline: { try rawInsert(raw, from: rawNext.take(rows), count: rows) },
                candidate: { try await vaultInsert(vault, from: vaultNext.take(rows), count: rows) },
                teardown: { _ = (directory, vaults) }
            )
        }
    )

    static let read = Benchmark(
        name: "vault.read",
        unit: "ms per 100k point reads",
        goal: "ratio ≤ 1.2 (sealed point reads through Vault vs raw sqlite3 plaintext point reads)",
        operations: 1,
        prepare: {
            let directory = try TemporaryDirectory(prefix: "keel-bench-vault-read")
            let (vaults, vault) = try blockingAwait { try await makeVault(directory) }
            try blockingAwait { try await vaultInsert(vault, from: 0, count: rows) }
            // The plaintext rows go into the same database file, so both sides read one file's pages.
            let file = vault.directory.appendingPathComponent("include.sqlite").path
            let writer = try StoreBenchmarks.RawDatabase(path: file, synchronous: Vaults.synchronous.rawValue)
            try writer.exec(createPlain)
            try rawInsert(writer, from: 0, count: rows)
            try writer.exec("PRAGMA wal_checkpoint(TRUNCATE)")
            let raw = try StoreBenchmarks.RawDatabase(path: file, readOnly: true)
            return Benchmark.Sides(
                baseline: {
                    let statement = try raw.prepare("SELECT value FROM plain WHERE id = ?")
                    defer { sqlite3_finalize(statement) }
                    try raw.exec("BEGIN")
                    for row in 0..<rows {
                        sqlite3_reset(statement)
                        sqlite3_bind_text(statement, 1, id((row &* 7919) % rows), -1, keel_sqlite3_transient())
                        guard sqlite3_step(statement) == SQLITE_ROW else { throw BenchError("missing row") }
                        let length = Int(sqlite3_column_bytes(statement, 0))
                        _ = Data(bytes: sqlite3_column_blob(statement, 0), count: length)
                    }
                    try raw.exec("COMMIT")
                },
                candidate: {
                    try await vault.read("notes") { records in
                        for row in 0..<rows {
                            guard try records.get(id((row &* 7919) % rows)) != nil else {
                                throw BenchError("missing row")
                            }
                        }
                    }
                },
                teardown: { _ = (directory, vaults, writer) }
            )
        }
    )
}

/// Runs async set-up work from a benchmark's synchronous `prepare`, on a thread outside the cooperative
/// pool's current task.
func blockingAwait<T: Sendable>(_ work: @escaping @Sendable () async throws -> T) throws -> T {
    let result = Locked<Result<T, any Error>?>(nil)
    let done = DispatchSemaphore(value: 0)
    Task.detached {
        let outcome: Result<T, any Error>
        do { outcome = .success(try await work()) } catch { outcome = .failure(error) }
        result.withLock { $0 = outcome }
        done.signal()
    }
    done.wait()
    return try result.withLock { $0! }.get()
}
