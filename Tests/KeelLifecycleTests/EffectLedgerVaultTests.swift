import Foundation
import KeelCore
import KeelLifecycle
import KeelStore
import KeelStoreFixtures
import KeelTesting
import Testing

/// The effect ledger kept in the account's vault (found in an outside security audit: the ledger was a
/// plaintext file outside the vault, holding account ids, note ids and publication paths that no key
/// shredding made unreadable). Real SQLite files, keys outside the data directory, real processes for two
/// ledgers on one vault.
@Suite(.timeLimit(.minutes(2))) struct EffectLedgerVaultTests {
    /// VaultInventory's datasets and the ledger's: personal (so sealed), account-bound, gone at logout.
    static func inventory() throws -> Inventory {
        let everything: Set<Dataset.DeletionTrigger> = [.logout, .accountDeletion, .accessRevocation]
        let effects = Dataset(
            name: "effects", purpose: "Irreversible operations already started", kind: .keyValue,
            classification: .personal, isAccountBound: true, retention: .untilEvent, backup: .deviceOnly,
            deletionTriggers: everything, role: .sourceOfTruth)
        return try Inventory(Array(VaultInventory.inventory.datasets.values) + [effects])
    }

    /// A data directory with alice's vaults (keys outside it), deleted with the value.
    struct Device {
        let root: TemporaryDirectory
        let keys: FileKeyStore
        let vaults: Vaults
        let alice: AccountID

        init() throws {
            root = try TemporaryDirectory(prefix: "keel-ledger-vault")
            keys = try FileKeyStore(directory: root.url("keys"), dataDirectories: [root.url("data")])
            vaults = try Vaults(
                dataDirectory: root.url("data"), keyStore: keys, inventory: try EffectLedgerVaultTests.inventory())
            alice = try AccountID("alice@example.com")
        }

        var data: URL { root.url("data") }

        /// A ledger on alice's vault, opened again (as a relaunch does).
        func ledger(clock: WallClock = .system) async throws -> EffectLedger {
            try EffectLedger(vault: try await vaults.open(alice), dataset: "effects", clock: clock)
        }

        /// Every file under the data directory, with its bytes.
        func files() -> [(String, Data)] {
            let enumerator = FileManager.default.enumerator(atPath: data.path)!
            return enumerator.compactMap { $0 as? String }.compactMap { name in
                FileManager.default.contents(atPath: data.path + "/" + name).map { (name, $0) }
            }
        }
    }

    static func code(_ body: () async throws -> Void) async -> String? {
        do {
            try await body()
            return nil
        } catch let error as EffectLedgerError { return "\(error.code)" } catch {
            return "\(type(of: error))"
        }
    }

    /// PLAT-008.5 on the vault: once begun, an operation is never begun again — not by a replayed
    /// confirmation, not by a ledger opened again after a relaunch — and its result comes from the ledger.
    @Test func anOperationIsBegunOnceAndItsResultComesFromTheVault() async throws {
        let device = try Device()
        let id = EffectLedger.operationID(entry: "e4", action: "pay")
        do {
            let ledger = try await device.ledger()
            #expect(ledger.file == nil && ledger.dataset == "effects")
            #expect(try await ledger.begin(id, action: "pay", reference: "journal-7", account: .alice) == .run)
            guard case .recorded(let entry) = try await ledger.begin(id, action: "pay", reference: "journal-8") else {
                Issue.record("a replayed confirmation would pay twice")
                return
            }
            // The recorded reference stays: a second begin never replaces it.
            #expect(entry.state == .started && entry.reference == "journal-7" && entry.account == .alice)
            #expect(try await ledger.unsettled().map(\.id) == [id])
            try await ledger.complete(id, .succeeded, result: "paid 12.00")
            await #expect(throws: EffectLedgerError.self) {
                try await ledger.complete("never-begun", .failed, result: nil)
            }
        }
        await device.vaults.close()  // the process ends; the next launch opens the vault again
        let reopened = try await device.ledger()
        #expect(try await reopened.entry(id)?.result == "paid 12.00")
        #expect(try await reopened.entry(id)?.reference == "journal-7")
        #expect(try await reopened.unsettled().isEmpty)
        guard case .recorded(let again) = try await reopened.begin(id, action: "pay") else {
            Issue.record("a relaunch would pay twice")
            return
        }
        #expect(again.state == .succeeded)
        #expect(try await reopened.allEntries().map(\.id) == [id])
    }

    /// The owner survives the vault: another account's operation in flight is never handed back in this
    /// account's session.
    @Test func unsettledOperationsAreHandedBackToTheirAccountOnly() async throws {
        let device = try Device()
        do {
            let ledger = try await device.ledger()
            #expect(try await ledger.begin("pay@e2-a#1", action: "pay", account: .alice) == .run)
            #expect(try await ledger.begin("pay@e3-b#1", action: "pay", account: .bob) == .run)
            #expect(try await ledger.begin("legacy@e4#1", action: "pay") == .run)
        }
        await device.vaults.close()
        let ledger = try await device.ledger()
        #expect(try await ledger.unsettled(account: .bob).map(\.id) == ["legacy@e4#1", "pay@e3-b#1"])
        #expect(try await ledger.unsettled(account: .alice).map(\.id) == ["legacy@e4#1", "pay@e2-a#1"])
        #expect(try await ledger.unsettled(account: nil).map(\.id) == ["legacy@e4#1"])
    }

    /// Found in a review: an account-bound dataset may declare a retention duration (the vault stamps and
    /// sweeps its records), and a ledger kept in one lost its record-id key to the first sweep (every later
    /// call `damaged`: nothing published again for the account) and its aged started operations (the next
    /// `begin` answered `.run`: run twice). Such a dataset is refused when the ledger is made; one kept until an
    /// event, as the reference app declares `effects`, is accepted, and a sweep long after leaves it whole.
    @Test func aDatasetKeptForADurationIsRefusedAndOneKeptUntilAnEventIsNotSwept() async throws {
        let root = try TemporaryDirectory(prefix: "keel-ledger-swept")
        let keys = try FileKeyStore(directory: root.url("keys"), dataDirectories: [root.url("data")])
        var swept = try Self.inventory().datasets["effects"]!
        swept.name = "swept-effects"
        swept.retention = .duration(.seconds(30 * 86_400))
        let inventory = try Inventory(Array(try Self.inventory().datasets.values) + [swept])
        let vaults = try Vaults(dataDirectory: root.url("data"), keyStore: keys, inventory: inventory)
        let vault = try await vaults.open(try AccountID("alice@example.com"))
        do {
            _ = try EffectLedger(vault: vault, dataset: "swept-effects")
            Issue.record("a ledger on a dataset the vault sweeps by age was made")
        } catch {
            #expect(error.code == .sweptByRetention)
            #expect(error.message.contains("removeSettled(before:)"))
        }

        // Accepted: `effects` is kept until an event. Nothing of it goes in a sweep a year later.
        let ledger = try EffectLedger(vault: vault, dataset: "effects")
        #expect(try await ledger.begin("publish@e1#1", action: "publish") == .run)
        let later = WallClock { Date().addingTimeInterval(365 * 86_400) }
        #expect(try await vault.sweepExpired(now: later).deleted["effects", default: 0] == 0)
        guard case .recorded(let entry) = try await ledger.begin("publish@e1#1", action: "publish") else {
            Issue.record("a started publication would run a second time after a sweep")
            return
        }
        #expect(entry.state == .started)
        await vaults.close()
    }

    /// A succeeded operation's record never changes (a late failure, a second success); a failed one may
    /// still succeed; settled ones go after the retention, the attempts of a confirmation together, a
    /// started one never.
    @Test func completionAndRetentionBehaveAsInTheFileLedger() async throws {
        let device = try Device()
        let now = Locked(Date(timeIntervalSince1970: 1_764_892_800))
        let clock = WallClock { now.withLock { $0 } }
        let settled = now.withLock { $0 }
        let ledger = try await device.ledger(clock: clock)
        #expect(try await ledger.begin("publish@e6#1", action: "publish") == .run)
        try await ledger.complete("publish@e6#1", .succeeded, result: "/p/1")
        now.withLock { $0 += 86_400 }
        for (late, result) in [(EffectLedger.State.failed, nil), (.started, nil), (.succeeded, "/p/2")] {
            await #expect {
                try await ledger.complete("publish@e6#1", late, result: result)
            } throws: { ($0 as? EffectLedgerError)?.code == .alreadySucceeded }
        }
        #expect(try await ledger.entry("publish@e6#1")?.result == "/p/1")
        #expect(try await ledger.entry("publish@e6#1")?.settledAt == settled)
        #expect(try await ledger.begin("publish@e7#1", action: "publish") == .run)
        try await ledger.complete("publish@e7#1", .failed, result: nil)
        try await ledger.complete("publish@e7#1", .succeeded, result: "/p/7")
        #expect(try await ledger.entry("publish@e7#1")?.result == "/p/7")

        // Retention: e8's first attempt failed long ago, its second succeeded just now; e9 is still open.
        #expect(try await ledger.begin("publish@e8#1", action: "publish") == .run)
        try await ledger.complete("publish@e8#1", .failed, result: nil)
        #expect(try await ledger.begin("publish@e9#1", action: "publish") == .run)
        now.withLock { $0 += 30 * 86_400 }
        #expect(try await ledger.begin("publish@e8#2", action: "publish") == .run)
        try await ledger.complete("publish@e8#2", .succeeded, result: "/p/8")
        // e6 and e7 are old; e8 is not, as a whole; e9 is started.
        #expect(try await ledger.removeSettled(before: now.withLock { $0 } - 7 * 86_400) == 2)
        #expect(try await ledger.allEntries().map(\.id) == ["publish@e8#1", "publish@e8#2", "publish@e9#1"])
        #expect(try await ledger.removeSettled(before: .distantFuture) == 2)
        #expect(try await ledger.unsettled().map(\.id) == ["publish@e9#1"])
        #expect(try await ledger.allEntries().map(\.id) == ["publish@e9#1"])
    }

    /// Nothing of an entry is in clear on disk: not the operation id (it names the note), not the account,
    /// the result or the key — record ids are keyed digests, values sealed.
    @Test func noEntryIsReadableOnDisk() async throws {
        let device = try Device()
        do {
            let ledger = try await device.ledger()
            let id = "publish@note/n-4711-secret#1"
            #expect(
                try await ledger.begin(id, action: "publish", reference: "key-of-n-4711", account: device.alice)
                    == .run)
            try await ledger.complete(id, .succeeded, result: "/p/published-path-4711")
        }
        await device.vaults.close()
        var scanned = 0
        for (name, bytes) in device.files() {
            scanned += 1
            for secret in ["n-4711", "alice@example.com", "published-path-4711", "key-of-n-4711", "publish@"] {
                #expect(bytes.range(of: Data(secret.utf8)) == nil, "\(secret) in \(name)")
            }
        }
        #expect(scanned >= 2, "the vault's files were scanned")
    }

    /// A record that does not read as an entry — sealed for another record, or not an entry at all — is
    /// `damaged` for every call that meets it, and is never replaced: it may hold the key of a call made.
    @Test func aDamagedRecordIsRefusedAndNeverReplaced() async throws {
        let device = try Device()
        do {
            let ledger = try await device.ledger()
            for id in ["pay@e1#1", "pay@e2#1", "pay@e3#1"] {
                #expect(try await ledger.begin(id, action: "pay") == .run)
            }
        }
        let vault = try await device.vaults.open(device.alice)
        let opIDs = try await vault.read("effects") { try $0.ids() }.filter { $0.hasPrefix("op:") }
        #expect(opIDs.count == 3)
        // One record becomes something that is not an entry (written by a newer app, say).
        try await vault.put("effects", id: opIDs[0], Data(#"{"format": 9}"#.utf8))
        await device.vaults.close()
        // Another record's ciphertext is copied over a third's, with raw SQL: it no longer opens.
        let database = try DatabasePool(
            path: device.data.appendingPathComponent(
                "vaults/\(VaultNamespace(device.alice).rawValue)/deviceOnly.sqlite"
            ).path)
        let (moved, target) = (opIDs[1], opIDs[2])
        try await database.write { db in
            try db.execute(
                #"UPDATE "records.effects" SET value = (SELECT value FROM "records.effects" WHERE id = ?) WHERE id = ?"#,
                arguments: [moved, target])
        }
        let before = try await database.read { db in
            try db.rows(#"SELECT id, value FROM "records.effects" ORDER BY id"#).map { try $0.decode("value") as Data }
        }
        await database.close()

        let ledger = try await device.ledger()
        var damaged: [String] = []
        for id in ["pay@e1#1", "pay@e2#1", "pay@e3#1"] {
            guard await Self.code({ _ = try await ledger.entry(id) }) == "damaged" else { continue }
            damaged.append(id)
            #expect(await Self.code { _ = try await ledger.begin(id, action: "pay") } == "damaged", "\(id)")
            #expect(await Self.code { try await ledger.complete(id, .failed, result: nil) } == "damaged", "\(id)")
        }
        #expect(damaged.count == 2, "\(damaged)")  // the one not an entry, and the one whose ciphertext moved
        #expect(await Self.code { _ = try await ledger.unsettled() } == "damaged")
        #expect(await Self.code { _ = try await ledger.removeSettled(before: .distantFuture) } == "damaged")
        // The intact one still works.
        let intact = try #require(Set(["pay@e1#1", "pay@e2#1", "pay@e3#1"]).subtracting(damaged).first)
        try await ledger.complete(intact, .failed, result: nil)
        await device.vaults.close()
        // Nothing was replaced: the damaged records are as they were.
        let after = try DatabasePool(
            path: device.data.appendingPathComponent(
                "vaults/\(VaultNamespace(device.alice).rawValue)/deviceOnly.sqlite"
            ).path)
        let stored = try await after.read { db in
            try db.rows(#"SELECT id, value FROM "records.effects" ORDER BY id"#).map { try $0.decode("value") as Data }
        }
        await after.close()
        #expect(stored.count == before.count)
        #expect(stored.filter { before.contains($0) }.count == before.count - 1, "only the intact record changed")
    }

    /// A ledger on a closed vault (the account switched, signed out) records nothing and says so.
    @Test func aLedgerOnAClosedVaultRecordsNothing() async throws {
        let device = try Device()
        let ledger = try await device.ledger()
        _ = try await device.vaults.switchAccount(to: try AccountID("bob@example.com"))
        await #expect(throws: VaultError.self) { try await ledger.begin("pay@e1#1", action: "pay") }
        _ = try await device.vaults.switchAccount(to: device.alice)
        #expect(try await device.ledger().entry("pay@e1#1") == nil)
    }

    // MARK: - Two processes on one vault

    func fixture(_ device: Device) throws -> ChildProcess {
        try ChildProcess.launch(
            product: "keel-fixtures",
            arguments: ["vault-ledger", "--data", device.data.path, "--keys", device.root.url("keys").path])
    }

    func say(_ line: String, to child: ChildProcess) async throws -> String {
        try child.writeLine(line)
        return try #require(try await child.nextLine(timeout: .seconds(30)), "no answer to \(line)")
    }

    /// An app and its extension, each with a ledger on the same vault: every operation both try to begin
    /// at the same moment runs in exactly one of them, and what one records the other reads.
    @Test func twoProcessesOnOneVaultNeverBothRunAnOperation() async throws {
        let device = try Device()
        let app = try fixture(device)
        let extensionProcess = try fixture(device)
        defer {
            app.kill()
            extensionProcess.kill()
        }
        // The extension has read the vault (nothing there: no key, no salt yet) when the app records the first
        // operation, making the dataset's key: the extension reads it at once.
        #expect(try await say("entry publish@e0#1", to: extensionProcess) == "none publish@e0#1")
        #expect(try await say("begin publish@e0#1", to: app) == "run publish@e0#1")
        #expect(try await say("entry publish@e0#1", to: extensionProcess) == "entry publish@e0#1 started -")
        // Both opened and written once (the dataset's key made), then both at once: one from race-1 up, the
        // other from race-300 down, so that they meet.
        #expect(try await say("begin warm-app", to: app) == "run warm-app")
        #expect(try await say("begin warm-extension", to: extensionProcess) == "run warm-extension")
        try app.writeLine("race 300")
        try extensionProcess.writeLine("race 300 reverse")
        func runs(_ child: ChildProcess) async throws -> [String] {
            var lines: [String] = []
            while let line = try await child.nextLine(timeout: .seconds(60)), line != "raced" {
                #expect(line.hasPrefix("run "), "\(line)")
                lines.append(String(line.dropFirst(4)))
            }
            return lines
        }
        let first = try await runs(app)
        let second = try await runs(extensionProcess)
        #expect(first.count + second.count == 300, "\(first.count) + \(second.count)")
        #expect(!first.isEmpty && !second.isEmpty, "\(first.count) + \(second.count): they did not meet")
        #expect(Set(first).isDisjoint(with: second))
        #expect(Set(first + second) == Set((1...300).map { "race-\($0)" }))

        // What the app records, the extension reads at once (nothing cached in either).
        #expect(try await say("begin publish@e1#1", to: app) == "run publish@e1#1")
        #expect(try await say("begin publish@e1#1", to: extensionProcess) == "recorded publish@e1#1 started")
        #expect(try await say("complete publish@e1#1 succeeded /p/1", to: app) == "completed publish@e1#1")
        #expect(try await say("entry publish@e1#1", to: extensionProcess) == "entry publish@e1#1 succeeded /p/1")
        #expect(
            try await say("complete publish@e1#1 failed -", to: extensionProcess) == "error alreadySucceeded")
        app.closeInput()
        extensionProcess.closeInput()
        #expect(try await app.waitForExit() == .exited(0))
        #expect(try await extensionProcess.waitForExit() == .exited(0))
    }

    // MARK: - Importing a file ledger

    /// An app that kept its ledger in a file moves it into the vault: every entry with its key, state and
    /// account; the file and its lock go once the import committed; a record already in the vault stays.
    @Test func aFileLedgerIsImportedWithItsKeysThenDeleted() async throws {
        let device = try Device()
        let file = device.root.url("effects.json")
        do {
            let old = try EffectLedger(file: file)
            #expect(
                try await old.begin("publish@n1#1", action: "publish", reference: "key-n1", account: .alice) == .run)
            #expect(try await old.begin("publish@n2#1", action: "publish", reference: "key-n2") == .run)
            try await old.complete("publish@n2#1", .succeeded, result: "/p/2")
            #expect(try await old.begin("publish@n3#1", action: "publish", reference: "file-key-n3") == .run)
        }
        #expect(FileManager.default.fileExists(atPath: file.path + ".lock"))
        let ledger = try await device.ledger()
        // Already in the vault (newer than the file): kept as it is.
        #expect(try await ledger.begin("publish@n3#1", action: "publish", reference: "vault-key-n3") == .run)
        #expect(try await ledger.importFile(file) == 2)
        #expect(!FileManager.default.fileExists(atPath: file.path))
        #expect(!FileManager.default.fileExists(atPath: file.path + ".lock"))
        guard case .recorded(let started) = try await ledger.begin("publish@n1#1", action: "publish", reference: "new")
        else {
            Issue.record("an imported start would run again under a new key")
            return
        }
        #expect(started.state == .started && started.reference == "key-n1" && started.account == .alice)
        #expect(try await ledger.entry("publish@n2#1")?.result == "/p/2")
        #expect(try await ledger.entry("publish@n3#1")?.reference == "vault-key-n3")
        // Nothing more to import: nothing happens.
        #expect(try await ledger.importFile(file) == 0)
        #expect(!FileManager.default.fileExists(atPath: file.path + ".lock"))
    }

    /// MOB-DATA-006: a file ledger's entry whose account is not a valid account id (written by an earlier version)
    /// is imported as it is — the import is not refused as damaged — and is handed back in no account's session.
    @Test func anOperationOfAnInvalidAccountIsImportedAsItIs() async throws {
        let device = try Device()
        let file = device.root.url("effects.json")
        try Data(
            (#"[{"account":"","action":"publish","id":"publish@n1#1","reference":"key-n1","state":"started"},"#
                + #"{"account":"alice@example.com","action":"publish","id":"publish@n2#1","state":"started"}]"#).utf8
        ).write(to: file)
        let ledger = try await device.ledger()
        #expect(try await ledger.importFile(file) == 2)
        #expect(!FileManager.default.fileExists(atPath: file.path))
        let imported = try #require(try await ledger.entry("publish@n1#1"))
        #expect(imported.account == nil && imported.invalidAccount == "" && imported.reference == "key-n1")
        #expect(try await ledger.unsettled(account: device.alice).map(\.id) == ["publish@n2#1"])
        try await ledger.complete("publish@n1#1", .failed, result: nil)
        #expect(try await ledger.entry("publish@n1#1")?.invalidAccount == "")
    }

    /// A file that is not a ledger is kept, untouched, and nothing is imported; an import that cannot commit
    /// (the vault closed under it) leaves the file where it was.
    @Test func aDamagedOrUncommittedImportKeepsTheFile() async throws {
        let device = try Device()
        let damaged = device.root.url("damaged.json")
        try Data("{ not a ledger".utf8).write(to: damaged)
        let ledger = try await device.ledger()
        #expect(await Self.code { try await ledger.importFile(damaged) } == "damaged")
        #expect(try Data(contentsOf: damaged) == Data("{ not a ledger".utf8))
        #expect(try await ledger.allEntries().isEmpty)

        let file = device.root.url("effects.json")
        do {
            let old = try EffectLedger(file: file)
            #expect(try await old.begin("publish@n1#1", action: "publish", reference: "key-n1") == .run)
        }
        let bytes = try Data(contentsOf: file)
        _ = try await device.vaults.switchAccount(to: try AccountID("bob@example.com"))  // alice's vault closes
        await #expect(throws: VaultError.self) { try await ledger.importFile(file) }
        #expect(try Data(contentsOf: file) == bytes)
        // Opened again: the import goes through, and the start is there.
        _ = try await device.vaults.switchAccount(to: device.alice)
        let reopened = try await device.ledger()
        #expect(try await reopened.importFile(file) == 1)
        #expect(try await reopened.entry("publish@n1#1")?.reference == "key-n1")
        // A ledger kept in a file imports nothing.
        let fileLedger = try EffectLedger(file: device.root.url("other.json"))
        #expect(await Self.code { try await fileLedger.importFile(file) } == "notInVault")
    }
}
