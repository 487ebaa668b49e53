// keel-fixtures: runs scripted storage workloads in a separate process, so that crash tests can kill a
// real process (SIGKILL) at chosen moments. Not part of the library; used by KeelStoreTests.
//
//   keel-fixtures seed    --db PATH --version N --rows R
//   keel-fixtures migrate --db PATH [--batch-size B] [--lockstep]
//     prints "batch <checkpoint>" before each backfill batch commits, then "done <applied migrations>";
//     with --lockstep it then waits for a line on stdin before committing, so the parent chooses the
//     exact moment to kill it
//   keel-fixtures hold    --db PATH
//     inserts a row into table `t` inside a write transaction, prints "holding", and keeps the
//     transaction (and SQLite's write lock) open until a line arrives on stdin, then commits and
//     prints "released" — so tests can contend with a lock held by another process, or kill it
//   keel-fixtures lifecycle-app --dir DIR --contract FILE [--relaunch]
//     a small app on KeelLifecycle: navigation event lines (keel navigation simulate's language) from
//     stdin, persisted in DIR; `publish` begins an operation in the effect ledger for the screen on top
//     ("started <id>", then waits for a line before executing it once into DIR/server.log and printing
//     "completed <id>"), or prints "recorded <id> <state> <result>" when the ledger already has it;
//     `unsettled` lists started operations. --relaunch restores DIR first and prints the launch step and
//     "input <text>" of the screen on top
//   keel-fixtures vault-ledger --data DIR --keys DIR
//     an effect ledger in alice@example.com's vault (NotesSync's inventory, dataset `effects`), one command
//     per stdin line: `begin ID` → "run ID" | "recorded ID STATE"; `complete ID STATE RESULT` → "completed ID";
//     `entry ID` → "entry ID STATE RESULT" | "none ID"; `race N [reverse]` begins race-1 … race-N (or from
//     race-N down) with a pause of 0.5 ms after each, printing "run race-I" for each it was told to run, then "raced"; a failure prints "error CODE"
//   keel-fixtures vault-logout --data DIR --keys DIR
//     opens alice@example.com's vault (VaultInventory) and logs out, printing "shredded <key id>" after
//     each key it deletes and waiting for a line on stdin before going on; then "logged out <datasets>"
//   keel-fixtures vault-move --data DIR --keys DIR --dataset NAME (--backup POLICY | --classification C)
//     opens alice@example.com's vault with VaultInventory's declaration of NAME changed so (opening moves it:
//     Vault.moveToCurrentDeclaration); prints "step <name>" at each step of the move and waits for a line on
//     stdin before going on; then "moved"
//   keel-fixtures journal-send      --journal PATH --server URL --key KEY
//     sends a keyed POST /mutations (operation id "outbox-1") through a client with an SQLite operation
//     journal, printing "sending" once the entry is on disk; the test kills it while the server stalls
//   keel-fixtures journal-reconcile --journal PATH --server URL --key KEY
//     a relaunch: reconciles the journal (rebuilding the same operation) and prints
//     "<operation id> <state> <request id or ->" per entry, then "reconciled"
//   keel-fixtures sync-app --data DIR --keys DIR --server URL --token TOKEN --run NAME
//                          [--create N] [--edit M] [--batch B]
//     the reference app's sync as alice: creates N notes (`NAME-<i>`) and edits the first M notes it has,
//     through the outbox, prints "queued <outstanding>", then "syncing", syncs (batches of B) and prints
//     "synced <acknowledged> <complete|incomplete> <outstanding>"; the test kills it while it syncs
import Foundation
import KeelContract
import KeelCore
import KeelHTTP
import KeelLifecycle
import KeelReference
import KeelStore
import KeelStoreFixtures
import KeelSync

func value(_ name: String) -> String? {
    guard let index = CommandLine.arguments.firstIndex(of: "--" + name), index + 1 < CommandLine.arguments.count else {
        return nil
    }
    return CommandLine.arguments[index + 1]
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("keel-fixtures: \(message)\n".utf8))
    exit(2)
}

/// The operation both journal commands use: the same key and body, so a relaunch can rebuild it.
func journaledOperation(key: String) -> HTTPOperation {
    var operation = HTTPOperation.post(
        "/mutations", body: Data(#"{"mutations": [{"id": "m1"}]}"#.utf8), idempotency: .keyed(IdempotencyKey(key)))
    operation.operationID = "outbox-1"
    return operation
}

/// A journal that says so (on stdout) once an entry is durable, so the parent knows when to kill.
struct AnnouncingJournal: OperationJournal {
    let journal: SQLiteOperationJournal
    func record(_ entry: JournalEntry) async throws {
        try await journal.record(entry)
        FileHandle.standardOutput.write(Data("sending\n".utf8))
    }
    func complete(_ operationID: String, state: JournalEntry.State, requestID: String?) async throws {
        try await journal.complete(operationID, state: state, requestID: requestID)
    }
    func unresolved() async throws -> [JournalEntry] { try await journal.unresolved() }
    func entry(_ operationID: String) async throws -> JournalEntry? { try await journal.entry(operationID) }
}

/// A key store that stops after each key it deletes until a line arrives on stdin, having said which
/// (so a test can kill the process in the middle of a logout, between two shreds).
final class PausingKeyStore: KeyStore {
    let base: FileKeyStore
    init(_ base: FileKeyStore) { self.base = base }
    var isLocked: Bool { base.isLocked }
    func key(_ id: KeyID) throws(KeyStoreError) -> StoredKey? { try base.key(id) }
    func add(_ key: StoredKey) throws(KeyStoreError) { try base.add(key) }
    func listKeys() throws(KeyStoreError) -> [KeyListing] { try base.listKeys() }
    func deviceIdentity(create: Bool) throws(KeyStoreError) -> String? { try base.deviceIdentity(create: create) }
    func delete(_ id: KeyID) throws(KeyStoreError) {
        try base.delete(id)
        FileHandle.standardOutput.write(Data("shredded \(id)\n".utf8))
        _ = readLine()
    }
}

if CommandLine.arguments.count > 1, CommandLine.arguments[1] == "lifecycle-app" {
    guard let dir = value("dir"), let contractPath = value("contract") else {
        fail("usage: keel-fixtures lifecycle-app --dir DIR --contract FILE [--relaunch]")
    }
    do {
        let directory = URL(fileURLWithPath: dir)
        let contract = try NavigationContract(json: Data(contentsOf: URL(fileURLWithPath: contractPath)))
        let simulator = try NavigationSimulator(
            contract: contract, directory: directory, relaunch: CommandLine.arguments.contains("--relaunch"))
        let ledger = try EffectLedger(file: directory.appendingPathComponent("ledger.json"))
        func say(_ text: String) { FileHandle.standardOutput.write(Data((text + "\n").utf8)) }
        if let launch = simulator.launchStep {
            say(launch.json)
            say("input \(simulator.top?.input ?? "-")")
        }
        while let line = readLine() {
            switch line {
            case "publish":
                guard let entry = simulator.top else { fail("nothing on screen") }
                let id = EffectLedger.operationID(entry: entry.id, action: "publish")
                switch try await ledger.begin(id, action: "publish") {
                case .run:
                    say("started \(id)")
                    _ = readLine()  // the parent may kill here, while the operation is in flight
                    let log = directory.appendingPathComponent("server.log")
                    let executed = ((try? String(contentsOf: log, encoding: .utf8)) ?? "") + id + "\n"
                    try Data(executed.utf8).write(to: log)
                    try await ledger.complete(id, .succeeded, result: "published \(id)")
                    say("completed \(id)")
                case .recorded(let entry):
                    say("recorded \(entry.id) \(entry.state.rawValue) \(entry.result ?? "-")")
                }
            case "unsettled":
                say("unsettled " + (try await ledger.unsettled()).map(\.id).joined(separator: ","))
            default:
                let command = try NavigationSimulator.parse(line)
                say(simulator.run(command, line: line).json)
            }
        }
    } catch {
        fail("\(error)")
    }
    exit(0)
}

if CommandLine.arguments.count > 1, CommandLine.arguments[1] == "vault-ledger" {
    guard let data = value("data"), let keys = value("keys") else {
        fail("usage: keel-fixtures vault-ledger --data DIR --keys DIR")
    }
    func say(_ text: String) { FileHandle.standardOutput.write(Data((text + "\n").utf8)) }
    do {
        let dataURL = URL(fileURLWithPath: data)
        let store = try FileKeyStore(directory: URL(fileURLWithPath: keys), dataDirectories: [dataURL])
        let vaults = try Vaults(dataDirectory: dataURL, keyStore: store, inventory: NotesSync.inventory)
        let alice = try AccountID("alice@example.com")
        let ledger = try EffectLedger(vault: try await vaults.open(alice), dataset: "effects")
        while let line = readLine() {
            let words = line.split(separator: " ", maxSplits: 3).map(String.init)
            do {
                switch words.first {
                case "begin":
                    switch try await ledger.begin(words[1], action: "publish", account: alice) {
                    case .run: say("run \(words[1])")
                    case .recorded(let entry): say("recorded \(entry.id) \(entry.state.rawValue)")
                    }
                case "complete":
                    try await ledger.complete(words[1], EffectLedger.State(rawValue: words[2])!, result: words[3])
                    say("completed \(words[1])")
                case "entry":
                    if let entry = try await ledger.entry(words[1]) {
                        say("entry \(entry.id) \(entry.state.rawValue) \(entry.result ?? "-")")
                    } else {
                        say("none \(words[1])")
                    }
                case "race":
                    let count = Int(words[1])!
                    for index in words.count > 2 && words[2] == "reverse"
                        ? Array((1...count).reversed()) : Array(1...count)
                    {
                        if case .run = try await ledger.begin("race-\(index)", action: "publish") {
                            say("run race-\(index)")
                        }
                        usleep(500)  // the write lock free between two: the other process gets its turns, and they meet
                    }
                    say("raced")
                default: fail("unknown command \(line)")
                }
            } catch let error as EffectLedgerError {
                say("error \(error.code)")
            }
        }
        await vaults.close()
    } catch {
        fail("\(error)")
    }
    exit(0)
}

if CommandLine.arguments.count > 1, CommandLine.arguments[1] == "vault-logout" {
    guard let data = value("data"), let keys = value("keys") else {
        fail("usage: keel-fixtures vault-logout --data DIR --keys DIR")
    }
    do {
        let dataURL = URL(fileURLWithPath: data)
        let store = PausingKeyStore(
            try FileKeyStore(directory: URL(fileURLWithPath: keys), dataDirectories: [dataURL], create: false))
        let vaults = try Vaults(dataDirectory: dataURL, keyStore: store, inventory: VaultInventory.inventory)
        _ = try await vaults.open(try AccountID("alice@example.com"))
        let report = try await vaults.logout()
        print("logged out \(report.deletedDatasets.joined(separator: ","))")
    } catch {
        fail("\(error)")
    }
    exit(0)
}

if CommandLine.arguments.count > 1, CommandLine.arguments[1] == "vault-move" {
    guard let data = value("data"), let keys = value("keys"), let dataset = value("dataset") else {
        fail("usage: keel-fixtures vault-move --data DIR --keys DIR --dataset NAME (--backup P | --classification C)")
    }
    do {
        let inventory = try VaultInventory.inventory(changing: dataset) { declaration in
            if let backup = value("backup").flatMap(Dataset.BackupPolicy.init(rawValue:)) {
                declaration.backup = backup
            }
            if let classification = value("classification").flatMap(Dataset.Classification.init(rawValue:)) {
                declaration.classification = classification
            }
        }
        let dataURL = URL(fileURLWithPath: data)
        let store = try FileKeyStore(directory: URL(fileURLWithPath: keys), dataDirectories: [dataURL], create: false)
        let vaults = try Vaults(dataDirectory: dataURL, keyStore: store, inventory: inventory)
        vaults.moveStep.withLock { hook in
            hook = { step in
                FileHandle.standardOutput.write(Data("step \(step)\n".utf8))
                _ = readLine()
            }
        }
        _ = try await vaults.open(try AccountID("alice@example.com"))
        print("moved")
    } catch {
        fail("\(error)")
    }
    exit(0)
}

if CommandLine.arguments.count > 1, CommandLine.arguments[1] == "sync-app" {
    guard let data = value("data"), let keys = value("keys"), let server = value("server").flatMap(URL.init(string:)),
        let token = value("token"), let run = value("run")
    else { fail("usage: keel-fixtures sync-app --data DIR --keys DIR --server URL --token TOKEN --run NAME") }
    func say(_ text: String) { FileHandle.standardOutput.write(Data((text + "\n").utf8)) }
    do {
        let dataURL = URL(fileURLWithPath: data)
        let vaults = try Vaults(
            dataDirectory: dataURL,
            keyStore: try FileKeyStore(directory: URL(fileURLWithPath: keys), dataDirectories: [dataURL]),
            inventory: NotesSync.inventory)
        let account = try AccountID("alice")
        let vault = try await vaults.open(account)
        let client = HTTPClient(configuration: .init(baseURL: server, policy: CallPolicy(maximumAttempts: 1)))
        let engine = try SyncEngine(
            vault: vault, remote: NotesRemote(client: client, account: account, token: token),
            policies: NotesSync.policies, offline: NotesSync.offline, batchSize: Int(value("batch") ?? "100") ?? 100)
        for existing in try await engine.entities("note").prefix(Int(value("edit") ?? "0") ?? 0) {
            try await engine.update(
                "note", id: existing.ref.id, fields: ["body": .string("edited in \(run)")], operation: "editNote")
        }
        for index in 0..<(Int(value("create") ?? "0") ?? 0) {
            try await engine.create(
                "note", id: "\(run)-\(index)", fields: ["title": .string("\(run) #\(index)")], operation: "createNote")
        }
        say("queued \(try await engine.outstandingCount())")
        say("syncing")
        // An answer the killed process left held (keys still in progress: 409) makes a run stop early; the
        // app syncs again at its next trigger, as here.
        var report = await engine.sync()
        for _ in 0..<5 where !report.isComplete && run.hasPrefix("c") {
            try await Task.sleep(for: .milliseconds(200))
            report = await engine.sync()
        }
        say(
            "synced \(report.acknowledged) \(report.isComplete ? "complete" : "incomplete") \(try await engine.outstandingCount())"
        )
    } catch {
        fail("\(error)")
    }
    exit(0)
}

if CommandLine.arguments.count > 1, CommandLine.arguments[1].hasPrefix("journal-") {
    guard let path = value("journal"), let server = value("server").flatMap(URL.init(string:)), let key = value("key")
    else { fail("usage: keel-fixtures journal-send|journal-reconcile --journal PATH --server URL --key KEY") }
    do {
        let journal = try SQLiteOperationJournal(path: path)
        let client = HTTPClient(
            configuration: .init(
                baseURL: server, policy: CallPolicy(attemptTimeout: .seconds(600), maximumAttempts: 1),
                journal: AnnouncingJournal(journal: journal)))
        if CommandLine.arguments[1] == "journal-send" {
            _ = try? await client.send(journaledOperation(key: key))
            print("answered")  // not reached in the kill test: the server never answers
        } else {
            let operation = journaledOperation(key: key)
            for entry in try await client.reconcile(rebuild: { $0.operationID == "outbox-1" ? operation : nil }) {
                print("\(entry.operationID) \(SQLiteOperationJournal.text(entry.state)) \(entry.requestID ?? "-")")
            }
            print("reconciled")
        }
        exit(0)
    } catch {
        fail("\(error)")
    }
}

guard CommandLine.arguments.count > 1, let path = value("db") else {
    fail("usage: keel-fixtures seed|migrate|hold --db PATH ...")
}
do {
    let pool = try DatabasePool(path: path)
    switch CommandLine.arguments[1] {
    case "seed":
        try NotesSchema.seed(pool, version: Int(value("version") ?? "0") ?? 0, rows: Int(value("rows") ?? "0") ?? 0)
        print("seeded")
    case "migrate":
        let lockstep = CommandLine.arguments.contains("--lockstep")
        let migrator = NotesSchema.migrator(batchSize: Int(value("batch-size") ?? "100") ?? 100) { checkpoint in
            // Unbuffered, so the parent sees the line before this batch commits.
            FileHandle.standardOutput.write(Data("batch \(checkpoint)\n".utf8))
            if lockstep { _ = readLine() }
        }
        let report = try migrator.migrate(pool)
        print("done \(report.applied.joined(separator: ","))")
    case "hold":
        try pool.writeSync { db in
            try db.execute("INSERT INTO t VALUES ('from the holder')")
            FileHandle.standardOutput.write(Data("holding\n".utf8))
            _ = readLine()
        }
        print("released")
    default:
        fail("unknown command \(CommandLine.arguments[1])")
    }
} catch {
    fail("\(error)")
}
