import Foundation
import KeelCore
import KeelStore
import KeelStoreFixtures
import KeelTesting
import Testing

/// MOB-DATA-003 and MOB-DATA-001: an app update that changes a dataset's backup policy or sealing moves its
/// data with `Vault.moveToCurrentDeclaration(_:)` from a vault migration — all of it, readable afterwards, the
/// old copy gone from the old file — and a move cut short at any step finishes at the next open.
@Suite(.timeLimit(.minutes(2))) struct VaultDeclarationMoveTests {
    let fixture: VaultFixture
    let alice: AccountID
    init() throws {
        fixture = try VaultFixture("keel-vault-move")
        alice = try AccountID("alice@example.com")
    }

    static let records = 300  // more than one batch of the copy

    /// The fixture's inventory with `change` applied to dataset `name`.
    static func inventory(changing name: String, _ change: (inout Dataset) -> Void) throws -> Inventory {
        try VaultInventory.inventory(changing: name, change)
    }

    /// Vaults on the fixture's directories with `inventory` (opening moves what changed) and one migration
    /// that also asks for the move of `dataset` (a no-op once opening moved it). With `interruptAt`, the move
    /// stops at the first occurrence of that step, as a crash there would leave it: the vault still opens,
    /// with the dataset refused until the move is finished by a later open.
    func vaults(_ inventory: Inventory, moving dataset: String, interruptAt step: String? = nil, after: [String] = [])
        throws -> Vaults
    {
        struct Interrupted: Error {}
        var schema = VaultSchema()
        for earlier in after { schema.registerMigration(earlier) { _ in } }
        schema.registerMigration("v\(after.count + 2)-move-\(dataset)") { vault in
            if step == nil { try await vault.moveToCurrentDeclaration(dataset) }
        }
        let vaults = try Vaults(
            dataDirectory: fixture.data, keyStore: fixture.keyStore, inventory: inventory, schema: schema)
        if let step {
            vaults.moveStep.withLock { hook in hook = { reached in if reached == step { throw Interrupted() } } }
        }
        return vaults
    }

    func value(_ index: Int) -> Data { Data("draft \(index): half a poem".utf8) }

    var vaultDirectory: URL {
        fixture.data.appendingPathComponent("vaults").appendingPathComponent(VaultNamespace(alice).rawValue)
    }

    /// The tables of `file` in the vault directory (none when the file does not exist).
    func tables(in file: String) throws -> [String] {
        let path = vaultDirectory.appendingPathComponent(file).path
        guard FileManager.default.fileExists(atPath: path) else { return [] }
        let pool = try DatabasePool(path: path)
        defer { Task { await pool.close() } }
        return try pool.readSync { db in
            try db.rows("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").map {
                try $0.decode("name")
            }
        }
    }

    /// One draft's ciphertext damaged on disk (d5): it cannot be opened, so the drafts cannot be made plain.
    func damageDraft5() throws {
        let pool = try DatabasePool(path: vaultDirectory.appendingPathComponent("include.sqlite").path)
        defer { Task { await pool.close() } }
        try pool.writeSync { db in
            try db.execute(#"UPDATE "records.drafts" SET value = zeroblob(90) WHERE id = 'd5'"#)
        }
    }

    /// Drafts 0..<records written under the fixture's inventory (include.sqlite, sealed).
    func writeDrafts() async throws {
        let vault = try await fixture.vaults.open(alice)
        try await vault.write("drafts") { records in
            for index in 0..<Self.records { try records.put("d\(index)", value(index)) }
        }
        await fixture.vaults.close()
    }

    @Test func aChangedBackupPolicyMovesTheRecordsAndLeavesNoCopyInTheOldFile() async throws {
        try await writeDrafts()
        // The stored envelope of one draft, as it sits in include.sqlite now.
        let envelope = try {
            let pool = try DatabasePool(path: vaultDirectory.appendingPathComponent("include.sqlite").path)
            defer { Task { await pool.close() } }
            return try pool.readSync { db in
                try db.scalar(Data.self, #"SELECT value FROM "records.drafts" WHERE id = 'd7'"#)
            }
        }()
        let sealed = try #require(envelope)
        let deviceOnly = try Self.inventory(changing: "drafts") { $0.backup = .deviceOnly }
        let updated = try vaults(deviceOnly, moving: "drafts")
        let vault = try await updated.open(alice)
        for index in [0, 7, 255, 256, Self.records - 1] {
            #expect(try await vault.get("drafts", id: "d\(index)") == value(index))
        }
        #expect(try await vault.read("drafts") { try $0.ids() }.count == Self.records)
        try await vault.put("drafts", id: "new", Data("after the move".utf8))
        #expect(try updated.inspect().vaults.first?.state == .normal)
        await updated.close()
        #expect(try !tables(in: "include.sqlite").contains("records.drafts"))
        #expect(try tables(in: "deviceOnly.sqlite").contains("records.drafts"))
        // Its bytes are gone from the file that is backed up, not merely unreachable.
        for file in ["include.sqlite", "include.sqlite-wal"] {
            let bytes = FileManager.default.contents(atPath: vaultDirectory.appendingPathComponent(file).path) ?? Data()
            #expect(bytes.range(of: sealed) == nil, "\(file)")
        }
        let plan = try BackupPlan.compute(dataDirectory: fixture.data, inventory: deviceOnly)
        #expect(plan.items.first { $0.path.hasSuffix("/deviceOnly.sqlite") }?.datasets.contains("drafts") == true)
        #expect(!plan.items.contains { $0.path.hasSuffix(".move.lock") })  // Keel's own, not the app's
    }

    @Test func aChangedSealingConvertsRecordsAndFilesInPlaceBothWays() async throws {
        // feed-cache is internal (plain) in the fixture; the next version calls it personal (sealed).
        let secret = Data("plain-feed-entry-1234".utf8)
        let vault = try await fixture.vaults.open(alice)
        try await vault.put("feed-cache", id: "f1", secret)
        try await vault.writeFile("feed-cache", named: "page1.json", contents: secret)
        await fixture.vaults.close()
        let vaultFiles = { VaultFixture.files(under: vaultDirectory).filter { $0.bytes.range(of: secret) != nil } }
        #expect(!vaultFiles().isEmpty)  // plain, as declared

        let personal = try Self.inventory(changing: "feed-cache") { $0.classification = .personal }
        let sealedVaults = try vaults(personal, moving: "feed-cache")
        let sealedVault = try await sealedVaults.open(alice)
        #expect(try await sealedVault.get("feed-cache", id: "f1") == secret)
        #expect(try await sealedVault.readFile("feed-cache", named: "page1.json") == secret)
        await sealedVaults.close()
        #expect(vaultFiles().isEmpty, "\(vaultFiles().map(\.path))")  // nowhere in plaintext any more
        #expect(try !tables(in: "exclude.sqlite").contains("moving.feed-cache"))

        // And back: a later version makes it internal again.
        var back = VaultSchema()
        back.registerMigration("v2-move-feed-cache") { try await $0.moveToCurrentDeclaration("feed-cache") }
        back.registerMigration("v3-plain-again") { try await $0.moveToCurrentDeclaration("feed-cache") }
        let plainVaults = try Vaults(
            dataDirectory: fixture.data, keyStore: fixture.keyStore, inventory: VaultFixture.inventory, schema: back)
        let plainVault = try await plainVaults.open(alice)
        #expect(try await plainVault.get("feed-cache", id: "f1") == secret)
        #expect(try await plainVault.readFile("feed-cache", named: "page1.json") == secret)
        await plainVaults.close()
        #expect(!vaultFiles().isEmpty)
    }

    @Test(arguments: ["copied", "dropped"])
    func aMoveToAnotherFileCutShortFinishesAtTheNextOpen(step: String) async throws {
        try await writeDrafts()
        let deviceOnly = try Self.inventory(changing: "drafts") { $0.backup = .deviceOnly }
        let interrupted = try vaults(deviceOnly, moving: "drafts", interruptAt: step)
        _ = try await interrupted.open(alice)
        await interrupted.close()
        // Meanwhile the data is refused, never read as empty or as half of it.
        let inspected = try interrupted.inspect().vaults.first
        #expect(inspected?.datasets.first { $0.name == "drafts" }?.reason == .declarationChanged)

        let relaunched = try vaults(deviceOnly, moving: "drafts")
        let vault = try await relaunched.open(alice)
        #expect(try await vault.read("drafts") { try $0.ids() }.count == Self.records)
        for index in [0, 255, 256, Self.records - 1] {
            #expect(try await vault.get("drafts", id: "d\(index)") == value(index))
        }
        await relaunched.close()
        #expect(try !tables(in: "include.sqlite").contains("records.drafts"))
    }

    @Test(arguments: ["staged", "copied", "swapped", "file"])
    func aConversionInPlaceCutShortFinishesAtTheNextOpen(step: String) async throws {
        let vault = try await fixture.vaults.open(alice)
        try await vault.write("feed-cache") { records in
            for index in 0..<Self.records { try records.put("f\(index)", value(index)) }
        }
        for page in 1...3 { try await vault.writeFile("feed-cache", named: "page\(page).json", contents: value(page)) }
        await fixture.vaults.close()
        let personal = try Self.inventory(changing: "feed-cache") { $0.classification = .personal }
        let interrupted = try vaults(personal, moving: "feed-cache", interruptAt: step)
        _ = try await interrupted.open(alice)
        await interrupted.close()

        let relaunched = try vaults(personal, moving: "feed-cache")
        let reopened = try await relaunched.open(alice)
        #expect(try await reopened.read("feed-cache") { try $0.ids() }.count == Self.records)
        for index in [0, 255, 256, Self.records - 1] {
            #expect(try await reopened.get("feed-cache", id: "f\(index)") == value(index))
        }
        for page in 1...3 {
            #expect(try await reopened.readFile("feed-cache", named: "page\(page).json") == value(page))
        }
        await relaunched.close()
        #expect(try !tables(in: "exclude.sqlite").contains("moving.feed-cache"))
    }

    @Test func aRevocationDuringAnUnfinishedMoveLeavesNoCopyAnywhere() async throws {
        // session-token goes when access is revoked; a move of it to another file stopped after the copy.
        let vault = try await fixture.vaults.open(alice)
        try await vault.put("session-token", id: "t", Data("secret-token-5678".utf8))
        await fixture.vaults.close()
        let moved = try Self.inventory(changing: "session-token") { $0.backup = .exclude }
        let interrupted = try vaults(moved, moving: "session-token", interruptAt: "copied")
        _ = try await interrupted.open(alice)
        _ = try await interrupted.revokeAccess(alice)
        await interrupted.close()
        #expect(try !tables(in: "exclude.sqlite").contains("records.session-token"))
        #expect(try !tables(in: "deviceOnly.sqlite").contains("records.session-token"))
    }

    /// Drafts (kept across sign-out and revocation) and a feed cache entry written, then a release that moves
    /// the drafts to exclude.sqlite, where the feed cache lives, cut short after the drafts' original was
    /// deleted: exclude.sqlite holds their only copy, which the manifest does not list there yet. Returns that
    /// release's vaults, closed, and its inventory.
    func draftsMoveToExcludeCutShortAfterTheDrop() async throws -> (Vaults, Inventory) {
        try await writeDrafts()
        let vault = try await fixture.vaults.open(alice)
        try await vault.put("feed-cache", id: "f1", Data("feed".utf8))
        await fixture.vaults.close()
        let excluded = try Self.inventory(changing: "drafts") { $0.backup = .exclude }
        let interrupted = try vaults(excluded, moving: "drafts", interruptAt: "dropped")
        _ = try await interrupted.open(alice)
        await interrupted.close()
        return (interrupted, excluded)
    }

    @Test func aPurgeOfOtherDataKeepsTheOnlyCopyOfAMoveCutShortAfterItsOriginalWasDeleted() async throws {
        let (interrupted, excluded) = try await draftsMoveToExcludeCutShortAfterTheDrop()
        // The feed cache goes.
        _ = try await interrupted.revokeAccess(alice)
        let relaunched = try vaults(excluded, moving: "drafts")
        let reopened = try await relaunched.open(alice)
        #expect(try await reopened.read("drafts") { try $0.ids() }.count == Self.records)
        #expect(try await reopened.get("drafts", id: "d42") == value(42))
        await relaunched.close()
    }

    @Test func aPurgeKeepsTheFileAnUnfinishedMoveWasGoingToEvenWhenTheDeclarationChangedAgain() async throws {
        // Release 2's move of the drafts to exclude.sqlite is cut short after the original was deleted; release
        // 3 declares them device-only, and a revocation comes before it opens.
        _ = try await draftsMoveToExcludeCutShortAfterTheDrop()
        let deviceOnly = try Self.inventory(changing: "drafts") { $0.backup = .deviceOnly }
        let release3 = try vaults(deviceOnly, moving: "drafts", after: ["v2-move-drafts"])
        _ = try await release3.revokeAccess(alice)
        let reopened = try await release3.open(alice)
        #expect(try await reopened.read("drafts") { try $0.ids() }.count == Self.records)
        #expect(try await reopened.get("drafts", id: "d3") == value(3))
        await release3.close()
        #expect(try tables(in: "deviceOnly.sqlite").contains("records.drafts"))
    }

    @Test func nothingToMoveRecordsTheNewDeclarationAndUnreadableDataIsLeftInPlace() async throws {
        // A purpose that changed moves nothing, and is recorded.
        try await writeDrafts()
        let reworded = try Self.inventory(changing: "drafts") { $0.purpose = "Drafts, kept across sign-out" }
        let same = try vaults(reworded, moving: "drafts")
        #expect(try await same.open(alice).get("drafts", id: "d1") == value(1))
        await same.close()
        let manifest = try String(contentsOf: vaultDirectory.appendingPathComponent("vault.json"), encoding: .utf8)
        #expect(manifest.contains("Drafts, kept across sign-out"))
        // Records sealed with a key that is gone cannot be made plain: they stay where they are, untouched, and
        // the vault still opens (a restore onto another device must not lock the account out of its vault).
        for key in try FileManager.default.contentsOfDirectory(atPath: fixture.keys.path) where key.hasSuffix(".key") {
            try FileManager.default.removeItem(at: fixture.keys.appendingPathComponent(key))
        }
        let before = try Data(contentsOf: vaultDirectory.appendingPathComponent("include.sqlite"))
        let unsealed = try Self.inventory(changing: "drafts") { $0.classification = .internal }
        let plain = try vaults(unsealed, moving: "drafts", after: ["v2-move-drafts"])
        let opened = try await plain.open(alice)
        await #expect {
            _ = try await opened.get("drafts", id: "d1")
        } throws: { error in
            (error as? VaultError)?.code == .declarationChanged
        }
        try await opened.put("notes", id: "n1", Data("still usable".utf8))
        await plain.close()
        #expect(try Data(contentsOf: vaultDirectory.appendingPathComponent("include.sqlite")).count >= before.count)
        #expect(try tables(in: "include.sqlite").contains("records.drafts"))
        let inspected = try plain.inspect().vaults.first?.datasets.first { $0.name == "drafts" }
        #expect(inspected?.readable == false)
    }

    @Test func aDamagedRecordStopsAConversionAndEverythingIsPutBack() async throws {
        try await writeDrafts()
        // One draft's ciphertext damaged on disk: it cannot be opened, so the drafts cannot be made plain.
        try damageDraft5()
        let unsealed = try Self.inventory(changing: "drafts") { $0.classification = .internal }
        let plain = try vaults(unsealed, moving: "drafts")
        let opened = try await plain.open(alice)
        #expect(try await opened.moveToCurrentDeclaration("drafts") == false)
        await #expect {
            _ = try await opened.get("drafts", id: "d1")
        } throws: { error in
            (error as? VaultError)?.code == .declarationChanged
        }
        await plain.close()
        // Put back as it was: no staging table, no move recorded, the format an older build reads.
        #expect(try !tables(in: "include.sqlite").contains("moving.drafts"))
        let manifest = try String(contentsOf: vaultDirectory.appendingPathComponent("vault.json"), encoding: .utf8)
        #expect(manifest.contains(#""format" : 1"#) && !manifest.contains("moving"), "\(manifest)")
        // Under the declaration they were written with, every other draft reads as before.
        let original = try vaults(VaultFixture.inventory, moving: "drafts", after: ["v2-move-drafts"])
        let reopened = try await original.open(alice)
        #expect(try await reopened.get("drafts", id: "d1") == value(1))
        #expect(try await reopened.get("drafts", id: "d299") == value(299))
        await original.close()
    }

    /// A conversion that gave up (a damaged record) and was cut short while putting things back — a crash, a
    /// full disk, a manifest lock held too long — is never taken for a finished one: the sealed records are
    /// not read as plain afterwards (found in an outside audit: with the staging table dropped before the move
    /// was unrecorded, the next open took the swap for done and served the envelopes as plaintext).
    @Test func aConversionCutShortWhileGivingUpIsNeverTakenForDone() async throws {
        try await writeDrafts()
        try damageDraft5()
        let unsealed = try Self.inventory(changing: "drafts") { $0.classification = .internal }
        let cut = try vaults(unsealed, moving: "drafts", interruptAt: "gaveUp")
        _ = try await cut.open(alice)
        await cut.close()
        let again = try vaults(unsealed, moving: "drafts", after: ["v2-move-drafts"])
        let opened = try await again.open(alice)
        let read = try? await opened.get("drafts", id: "d1")
        #expect(read == nil, "a sealed record read as plain: \(read.map { Array($0.prefix(8)) } ?? [])")
        await #expect {
            _ = try await opened.get("drafts", id: "d1")
        } throws: { error in
            (error as? VaultError)?.code == .declarationChanged
        }
        await again.close()
        #expect(try !tables(in: "include.sqlite").contains("moving.drafts"))
        let original = try vaults(
            VaultFixture.inventory, moving: "drafts", after: ["v2-move-drafts", "v3-move-drafts"])
        let reopened = try await original.open(alice)
        #expect(try await reopened.get("drafts", id: "d1") == value(1))
        #expect(try await reopened.get("drafts", id: "d299") == value(299))
        await original.close()
    }

    @Test func anUpdateThatChangesTheDeclarationAgainBeforeAMoveFinishedEndsItThenMovesOn() async throws {
        // Release 2 seals the feed cache and is killed right after the swap; release 3 makes it plain again.
        try await writeDrafts()
        let vault = try await fixture.vaults.open(alice)
        try await vault.write("feed-cache") { records in
            for index in 0..<Self.records { try records.put("f\(index)", value(index)) }
        }
        try await vault.writeFile("feed-cache", named: "page.json", contents: value(1))
        await fixture.vaults.close()
        let personal = try Self.inventory(changing: "feed-cache") { $0.classification = .personal }
        let release2 = try vaults(personal, moving: "feed-cache", interruptAt: "swapped")
        _ = try await release2.open(alice)
        await release2.close()
        // Meanwhile an older build (format 1) would read the swapped table by the old declaration: refused.
        let manifest = try String(contentsOf: vaultDirectory.appendingPathComponent("vault.json"), encoding: .utf8)
        #expect(manifest.contains(#""format" : 2"#), "\(manifest)")
        let release3 = try vaults(VaultFixture.inventory, moving: "feed-cache")
        let reopened = try await release3.open(alice)
        #expect(try await reopened.read("feed-cache") { try $0.ids() }.count == Self.records)
        #expect(try await reopened.get("feed-cache", id: "f7") == value(7))
        #expect(try await reopened.readFile("feed-cache", named: "page.json") == value(1))
        await release3.close()
        let done = try String(contentsOf: vaultDirectory.appendingPathComponent("vault.json"), encoding: .utf8)
        #expect(done.contains(#""format" : 1"#))

        // Across files: release 4 moves drafts to deviceOnly and is killed after dropping the original; release
        // 5 puts them in exclude.
        let deviceOnly = try Self.inventory(changing: "drafts") { $0.backup = .deviceOnly }
        let cut = try vaults(deviceOnly, moving: "drafts", interruptAt: "dropped", after: ["v2-move-feed-cache"])
        _ = try await cut.open(alice)
        await cut.close()
        let excluded = try Self.inventory(changing: "drafts") { $0.backup = .exclude }
        let next = try vaults(excluded, moving: "drafts", after: ["v2-move-feed-cache"])
        let moved = try await next.open(alice)
        #expect(try await moved.read("drafts") { try $0.ids() }.count == Self.records)
        #expect(try await moved.get("drafts", id: "d9") == value(9))
        await next.close()
        #expect(try tables(in: "exclude.sqlite").contains("records.drafts"))
        #expect(try !tables(in: "deviceOnly.sqlite").contains("records.drafts"))
    }

    @Test func aRecordWithAnEmptyIdMovesToo() async throws {
        let vault = try await fixture.vaults.open(alice)
        try await vault.put("drafts", id: "", Data("untitled".utf8))
        try await vault.put("drafts", id: "a", Data("a".utf8))
        await fixture.vaults.close()
        let deviceOnly = try Self.inventory(changing: "drafts") { $0.backup = .deviceOnly }
        let updated = try vaults(deviceOnly, moving: "drafts")
        let moved = try await updated.open(alice)
        #expect(try await moved.get("drafts", id: "") == Data("untitled".utf8))
        #expect(try await moved.get("drafts", id: "a") == Data("a".utf8))
        await updated.close()
    }

    @Test func aDatabaseThatDidNotComeAlongHasNothingToMoveAndTheVaultOpens() async throws {
        // A restore onto another device: device-only data is not in the backup.
        let vault = try await fixture.vaults.open(alice)
        try await vault.put("session-token", id: "t", Data("old token".utf8))
        await fixture.vaults.close()
        for companion in ["", "-wal", "-shm"] {
            try? FileManager.default.removeItem(
                at: vaultDirectory.appendingPathComponent("deviceOnly.sqlite" + companion))
        }
        let excluded = try Self.inventory(changing: "session-token") { $0.backup = .exclude }
        let updated = try vaults(excluded, moving: "session-token")
        let opened = try await updated.open(alice)
        #expect(try await opened.get("session-token", id: "t") == nil)
        try await opened.put("session-token", id: "t", Data("signed in again".utf8))
        #expect(try await opened.get("session-token", id: "t") == Data("signed in again".utf8))
        await updated.close()
    }

    @Test func twoOpenersRunningTheMoveAtOnceTakeTurnsAndLoseNothing() async throws {
        try await writeDrafts()
        let personal = try Self.inventory(changing: "feed-cache") { $0.classification = .personal }
        let vault = try await fixture.vaults.open(alice)
        try await vault.write("feed-cache") { records in
            for index in 0..<Self.records { try records.put("f\(index)", value(index)) }
        }
        await fixture.vaults.close()
        // An app and its extension: two openers of one vault, each moving the changed dataset as it opens. The
        // movers are slowed after each batch so that the second one arrives while the first is under way.
        func opener() throws -> Vaults {
            let vaults = try Vaults(dataDirectory: fixture.data, keyStore: fixture.keyStore, inventory: personal)
            vaults.moveStep.withLock { hook in hook = { _ in usleep(2000) } }
            return vaults
        }
        let (app, extensionVaults) = (try opener(), try opener())
        async let first = app.open(alice)
        async let second = extensionVaults.open(alice)
        let (one, other) = try await (first, second)
        for opened in [one, other] {
            #expect(try await opened.read("feed-cache") { try $0.ids() }.count == Self.records)
            #expect(try await opened.get("feed-cache", id: "f255") == value(255))
        }
        await app.close()
        await extensionVaults.close()
    }

    /// A real process moving a dataset is killed with SIGKILL at each step of the move in turn: the staging
    /// or recording of the move, after each batch of records, after the swap or the drop, after a file. Every
    /// time the next open finishes the move, and every record and file reads back as written.
    @Test(arguments: [
        ["drafts", "--backup", "deviceOnly"], ["feed-cache", "--classification", "personal"],
    ])
    func aMoveKilledWithSIGKILLAtEveryStepFinishesAtTheNextOpen(change: [String]) async throws {
        let dataset = change[0]
        let inventory = try Self.inventory(changing: dataset) { declaration in
            if change[1] == "--backup" {
                declaration.backup = .deviceOnly
            } else {
                declaration.classification = .personal
            }
        }
        var moment = 1
        while true {
            let fixture = try VaultFixture("keel-vault-move-kill")
            let vault = try await fixture.vaults.open(alice)
            try await vault.write(dataset) { records in
                for index in 0..<Self.records { try records.put("r\(index)", value(index)) }
            }
            try await vault.writeFile(dataset, named: "page.json", contents: value(1))
            await fixture.vaults.close()

            let child = try ChildProcess.launch(
                product: "keel-fixtures",
                arguments: ["vault-move", "--data", fixture.data.path, "--keys", fixture.keys.path, "--dataset"]
                    + change
            )
            var steps: [String] = []
            var finished = false
            while steps.count < moment {
                guard let line = try await child.nextLine(timeout: .seconds(60)) else { break }
                if line == "moved" { finished = true }
                guard line.hasPrefix("step ") else { continue }
                steps.append(String(line.dropFirst(5)))
                if steps.count < moment { try child.writeLine("go") }
            }
            if finished || steps.count < moment {
                // Past the last step: the whole move ran; every kill point has been tried.
                child.closeInput()
                _ = try await child.waitForExit()
                #expect(moment > 3, "too few steps: \(steps); \(child.output(of: .standardError))")
                break
            }
            child.kill()
            #expect(try await child.waitForExit() == .signaled(ChildProcess.Signal.kill))

            var schema = VaultSchema()
            schema.registerMigration("v2-move") { try await $0.moveToCurrentDeclaration(dataset) }
            let relaunched = try Vaults(
                dataDirectory: fixture.data, keyStore: fixture.keyStore, inventory: inventory, schema: schema)
            let reopened = try await relaunched.open(alice)
            let ids = try await reopened.read(dataset) { try $0.ids() }
            #expect(ids.count == Self.records, "killed at \(steps.last ?? "-")")
            for index in [0, 255, 256, Self.records - 1] {
                #expect(
                    try await reopened.get(dataset, id: "r\(index)") == value(index), "killed at \(steps.last ?? "-")")
            }
            #expect(
                try await reopened.readFile(dataset, named: "page.json") == value(1), "killed at \(steps.last ?? "-")")
            await relaunched.close()
            moment += 1
        }
    }
}
