import CSQLite
import Foundation
import KeelContract
import KeelCore
import KeelHTTP
import KeelReference
import KeelStore
import KeelSync
import KeelTesting

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Benchmarks of KeelSync (issue #14): durable enqueues against raw single-row SQLite transactions, pushes
/// to the reference backend against the same batches POSTed with URLSession, and the memory of syncing
/// long queues.
enum SyncBenchmarks {
    static let enqueues = 5000

    /// An open vault of the reference app's inventory and an engine on it.
    static func makeEngine(_ directory: TemporaryDirectory, baseURL: URL, token: String = "none") async throws -> (
        Vaults, SyncEngine
    ) {
        let data = directory.url("data")
        let keys = try FileKeyStore(directory: directory.url("keys"), dataDirectories: [data])
        let vaults = try Vaults(dataDirectory: data, keyStore: keys, inventory: NotesSync.inventory)
        let account = try AccountID("bench-account")
        let vault = try await vaults.open(account)
        let client = HTTPClient(configuration: .init(baseURL: baseURL, policy: CallPolicy(maximumAttempts: 1)))
        let engine = try SyncEngine(
            vault: vault, remote: NotesRemote(client: client, account: account, token: token),
            policies: NotesSync.policies, offline: NotesSync.offline)
        return (vaults, engine)
    }

    static let noteFields: JSONObject = [
        "title": "Groceries for the weekend", "body": .string(String(repeating: "milk, eggs, bread; ", count: 8)),
    ]

    /// The baseline of the outbox benchmarks: `enqueues` raw single-row transactions of `row`, ids from `start`.
    static func rawSingleRowTransactions(
        _ raw: StoreBenchmarks.RawDatabase, _ statement: OpaquePointer, _ row: Data, from start: Int
    ) throws {
        for index in start..<(start + enqueues) {
            try raw.exec("BEGIN IMMEDIATE")
            sqlite3_reset(statement)
            sqlite3_bind_text(statement, 1, "entry-\(index)", -1, keel_sqlite3_transient())
            _ = row.withUnsafeBytes {
                sqlite3_bind_blob64(statement, 2, $0.baseAddress, sqlite3_uint64($0.count), keel_sqlite3_transient())
            }
            sqlite3_bind_double(statement, 3, Date().timeIntervalSince1970)
            guard sqlite3_step(statement) == SQLITE_DONE else { throw BenchError("insert failed") }
            try raw.exec("COMMIT")
        }
    }

    /// What both outbox benchmarks start from: an engine on a fresh vault with one note queued (the probe),
    /// and a raw database whose rows are as long as that note's sealed outbox entry (a longer row fills pages
    /// sooner, and costs more to write, whoever writes it), with its insert statement prepared.
    struct OutboxSetup {
        let directory: TemporaryDirectory
        let vaults: Vaults
        let engine: SyncEngine
        let raw: StoreBenchmarks.RawDatabase
        let entryBytes: Int
        let row: Data
        let statement: OpaquePointer

        init(prefix: String) throws {
            directory = try TemporaryDirectory(prefix: prefix)
            let directory = directory
            (vaults, engine) = try blockingAwait {
                try await makeEngine(directory, baseURL: URL(string: "http://127.0.0.1:9")!)
            }
            raw = try StoreBenchmarks.RawDatabase(
                path: directory.url("raw.sqlite").path, synchronous: Vaults.synchronous.rawValue)
            try raw.exec(VaultBenchmarks.createPlain)
            let engine = engine
            entryBytes = try blockingAwait {
                try await engine.create("note", id: "probe", fields: noteFields, operation: "createNote")
                return try sealedEntryBytes(under: directory.url("data"))
            }
            row = Data(repeating: 0x5A, count: entryBytes)
            statement = try raw.prepare("INSERT INTO plain (id, value, updated_at) VALUES (?, ?, ?)")
        }
    }

    static let enqueue = Benchmark(
        name: "outbox.enqueue",
        unit: "ms per 5k enqueues",
        goal:
            "ratio ≤ 1.1 (5k durable enqueues, one transaction each, vs raw sqlite3 single-row transactions, same pragmas)",
        operations: 1,
        prepare: {
            let setup = try OutboxSetup(prefix: "keel-bench-outbox")
            let (raw, statement, row, engine) = (setup.raw, setup.statement, setup.row, setup.engine)
            print("  outbox.enqueue: a sealed outbox entry is \(setup.entryBytes) bytes; the raw rows are as long")
            let rawNext = Counter()
            let engineNext = Counter()
            return Benchmark.Sides(
                baseline: {
                    try rawSingleRowTransactions(raw, statement, row, from: rawNext.take(enqueues))
                },
                candidate: {
                    let start = engineNext.take(enqueues)
                    for index in start..<(start + enqueues) {
                        try await engine.create(
                            "note", id: "note-\(index)", fields: noteFields, operation: "createNote")
                    }
                },
                teardown: {
                    sqlite3_finalize(statement)
                    _ = setup
                }
            )
        }
    )
}

extension SyncBenchmarks {
    /// `outbox.enqueue` without the engine: the same sealed row put into the outbox dataset in a vault
    /// transaction of its own, against the same raw rows — the share of the gap that is the vault itself.
    static let enqueueVault = Benchmark(
        name: "outbox.enqueue.vault",
        unit: "ms per 5k enqueues",
        goal:
            "none: one sealed outbox row per vault transaction vs raw sqlite3 single-row transactions — the vault's share of outbox.enqueue",
        operations: 1,
        prepare: {
            let setup = try OutboxSetup(prefix: "keel-bench-outbox-vault")
            let (raw, statement, row, vault) = (setup.raw, setup.statement, setup.row, setup.engine.vault)
            // A plaintext that seals to the entry's length (the envelope adds version, key id, nonce and tag).
            let value = Data(repeating: 0x41, count: setup.entryBytes - 45)
            let rawNext = Counter()
            let vaultNext = Counter()
            let storage = SyncStorage.default
            return Benchmark.Sides(
                baseline: {
                    try rawSingleRowTransactions(raw, statement, row, from: rawNext.take(enqueues))
                },
                candidate: {
                    let start = vaultNext.take(enqueues)
                    for index in start..<(start + enqueues) {
                        try await vault.write(
                            [storage.outbox, storage.entities, storage.conflicts, storage.state], inline: true
                        ) { transaction in
                            try transaction.records(storage.outbox).put("bench-\(index)", value)
                        }
                    }
                },
                teardown: {
                    sqlite3_finalize(statement)
                    _ = setup
                }
            )
        }
    )

    /// The stored size of the longest outbox entry in the vault files under `data`, read with SQLite
    /// itself (the envelope as it sits in the file: nonce, ciphertext and tag).
    static func sealedEntryBytes(under data: URL) throws -> Int {
        let files =
            FileManager.default.enumerator(atPath: data.path)?.compactMap { $0 as? String }
            .filter { $0.hasSuffix(".sqlite") } ?? []
        var longest = 0
        for file in files {
            let database = try StoreBenchmarks.RawDatabase(path: data.appendingPathComponent(file).path, readOnly: true)
            let tables = try database.texts("SELECT name FROM sqlite_master WHERE type = 'table'")
            for table in tables where table.contains("outbox") {
                let quoted = "\"" + table.replacingOccurrences(of: "\"", with: "\"\"") + "\""
                longest = max(longest, try database.integer("SELECT max(length(value)) FROM \(quoted)"))
            }
        }
        guard longest > 0 else { throw BenchError("no outbox entry found under \(data.path)") }
        return longest
    }

    static let pushed = 10_000

    /// `pushed` new notes, in outbox transactions of 1,000 (setup, not measured).
    static func queue(_ engine: SyncEngine, from start: Int, count: Int, prefix: String = "note") async throws {
        var index = start
        while index < start + count {
            let end = min(index + 1000, start + count)
            try await engine.enqueue(
                (index..<end).map { LocalChange.create("note", id: "\(prefix)-\($0)", fields: noteFields) },
                operation: "createNote")
            index = end
        }
    }

    /// The request bodies of `count` new notes in batches of 100, as the engine's remote writes them.
    static func bodies(from start: Int, count: Int, random: RandomSource) -> [(key: String, body: Data)] {
        stride(from: start, to: start + count, by: 100).map { first in
            let mutations = (first..<min(first + 100, start + count)).map { index -> JSONValue in
                var object: JSONObject = [
                    "id": .string(UUID().uuidString.lowercased()),
                    "idempotencyKey": .string(IdempotencyKey.make(using: random).rawValue), "type": "create",
                    "noteID": .string("raw-\(index)"),
                ]
                for (name, value) in noteFields { object[name] = value }
                return .object(object)
            }
            return (
                "batch-" + IdempotencyKey.make(using: random).rawValue,
                Data(JSONValue.object(["mutations": .array(mutations)]).serialized())
            )
        }
    }

    static let push = Benchmark(
        name: "sync.push",
        unit: "ms per 10k mutations",
        goal:
            "ratio ≤ 1.5 (10k queued mutations pushed to the reference backend vs the same batches POSTed with URLSession)",
        operations: 1,
        prepare: {
            let directory = try TemporaryDirectory(prefix: "keel-bench-push")
            let backend = try ReferenceBackend(configuration: .init(dataDirectory: directory.url("backend")))
            let token = try blockingAwait {
                try await NotesRemote.signIn(
                    try AccountID("bench-account"), client: HTTPClient(configuration: .init(baseURL: backend.baseURL)))
            }
            let (vaults, engine) = try blockingAwait {
                try await makeEngine(directory, baseURL: backend.baseURL, token: token)
            }
            let session = URLSession(configuration: .ephemeral)
            let random = RandomSource.system
            let next = Counter()
            let pending = Locked<[(key: String, body: Data)]>([])
            return Benchmark.Sides(
                baseline: {
                    for (key, body) in pending.withLock({ $0 }) {
                        var request = URLRequest(url: backend.baseURL.appendingPathComponent("mutations"))
                        request.httpMethod = "POST"
                        request.httpBody = body
                        for (name, value) in [
                            ("Authorization", "Bearer \(token)"), ("X-Account-ID", "bench-account"),
                            ("Content-Type", "application/json"), ("Idempotency-Key", key),
                        ] {
                            request.setValue(value, forHTTPHeaderField: name)
                        }
                        let (_, response) = try await session.data(for: request)
                        guard (response as? HTTPURLResponse)?.statusCode == 200 else {
                            throw BenchError("raw push refused")
                        }
                    }
                },
                candidate: {
                    let report = await engine.push()
                    guard report.isComplete, report.acknowledged == pushed else {
                        throw BenchError("push incomplete: \(report)")
                    }
                },
                teardown: {
                    session.invalidateAndCancel()
                    backend.shutdown()
                    _ = (directory, vaults)
                },
                beforeBaseline: {
                    pending.withLock { $0 = bodies(from: next.take(pushed), count: pushed, random: random) }
                },
                beforeCandidate: { try await queue(engine, from: next.take(pushed), count: pushed) }
            )
        }
    )

    static let memoryGoal =
        "ratio ≤ 1.25 (peak RSS of a process syncing 100k vs 10k queued mutations: flat) and ≤ 64 MiB at 100k"

    static let memory = Benchmark(
        name: "sync.memory",
        unit: "MiB peak RSS",
        goal: memoryGoal,
        operations: 1,
        prepare: { throw BenchError("sync.memory measures itself") },
        custom: {
            let directory = try TemporaryDirectory(prefix: "keel-bench-memory")
            let backend = try ReferenceBackend(configuration: .init(dataDirectory: directory.url("backend")))
            defer { backend.shutdown() }
            let token = try await NotesRemote.signIn(
                try AccountID("bench-account"), client: HTTPClient(configuration: .init(baseURL: backend.baseURL)))
            func child(_ count: Int) async throws -> Double {
                let process = try ChildProcess.launch(
                    executable: CommandLine.arguments[0],
                    arguments: [
                        "--child-sync-memory", String(count), "--server", backend.baseURL.absoluteString, "--token",
                        token,
                        "--dir", directory.url("child-\(count)").path,
                    ])
                guard case .exited(0) = try await process.waitForExit(timeout: .seconds(600)),
                    let line = process.output(of: .standardOutput).split(separator: "\n").last(where: {
                        $0.hasPrefix("peak ")
                    }),
                    let bytes = Double(line.dropFirst(5))
                else {
                    throw BenchError("sync.memory child failed: \(process.output(of: .standardError))")
                }
                return bytes / 1_048_576
            }
            let small = try await child(10_000)
            let large = try await child(100_000)
            var measurement = Measurement(
                name: "sync.memory", unit: "MiB peak RSS", baseline: small, candidate: large, ratio: large / small,
                goal: memoryGoal, goalRatio: 1.25, candidateMBPerSecond: nil)
            measurement.peakRSSMiB10k = small
            measurement.peakRSSMiB100k = large
            return measurement
        }
    )

    /// The child side of `sync.memory`: queue `count` notes (transactions of 1,000), sync them all, print
    /// `peak <bytes>`.
    static func runMemoryChild(count: Int, server: URL, token: String, directory: URL) async throws {
        let temporary = try TemporaryDirectory(prefix: "keel-bench-memory-child")
        _ = directory
        let (vaults, engine) = try await makeEngine(temporary, baseURL: server, token: token)
        try await queue(engine, from: 0, count: count, prefix: "memory-\(count)")
        let report = await engine.sync()
        guard report.isComplete, report.acknowledged == count else { throw BenchError("sync incomplete: \(report)") }
        print("peak \(try PeakMemory.peak())")
        _ = vaults
    }
}
