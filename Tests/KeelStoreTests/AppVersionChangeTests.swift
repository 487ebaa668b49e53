import Foundation
import KeelCore
import KeelStore
import KeelStoreFixtures
import KeelTesting
import Testing

/// The `appVersionChange` deletion trigger (MOB-DATA-001, MOB-DATA-003, MOB-API-005). Found in an outside
/// audit: the inventory let caches declare it, but nothing ever ran it. `checkAppVersion` runs it at launch:
/// caches declaring it are reset in every vault on the device (closed ones too), in the shared cache and in a
/// ``DataStore``; nothing else is touched, and a run cut short is finished by the next one.
@Suite(.timeLimit(.minutes(1))) struct AppVersionChangeTests {
    /// The vault tests' inventory, plus two account-bound caches that go with the version: a sealed one (it
    /// has a key to shred) and a plain one. `feed-cache` is a cache too, but does not declare the trigger;
    /// the shared `catalog` does.
    static let inventory: Inventory = {
        do {
            return try Inventory(
                Array(VaultInventory.inventory.datasets.values) + [
                    Dataset(
                        name: "suggestions", purpose: "Suggestions computed from the user's notes", kind: .cache,
                        classification: .personal, isAccountBound: true, retention: .untilEvent, backup: .exclude,
                        deletionTriggers: [.logout, .accountDeletion, .appVersionChange],
                        role: .cache(rebuiltFrom: "notes")),
                    Dataset(
                        name: "layout-cache", purpose: "Measured layouts of the account's screens", kind: .cache,
                        classification: .internal, isAccountBound: true, retention: .untilEvent, backup: .exclude,
                        deletionTriggers: [.logout, .appVersionChange], role: .cache(rebuiltFrom: "the screens")),
                ])
        } catch { preconditionFailure("the app version test inventory is refused: \(error)") }
    }()

    let root: TemporaryDirectory
    let keys: FileKeyStore
    let vaults: Vaults
    var data: URL { root.url("data") }

    init() throws {
        root = try TemporaryDirectory(prefix: "keel-app-version")
        keys = try FileKeyStore(directory: root.url("keys"), dataDirectories: [root.url("data")])
        vaults = try Vaults(dataDirectory: root.url("data"), keyStore: keys, inventory: Self.inventory)
    }

    /// Everything of `account`: what stays across a version change and what goes.
    func fill(_ account: AccountID) async throws {
        let vault = try await vaults.open(account)
        try await vault.put("notes", id: "n1", Data("note of \(account)".utf8))
        try await vault.put("drafts", id: "d1", Data("draft".utf8))
        try await vault.put("session-token", id: "token", Data("token".utf8))
        try await vault.writeFile("media", named: "p1.jpg", contents: Data("photo".utf8))
        try await vault.put("feed-cache", id: "f1", Data("feed".utf8))
        try await vault.put("suggestions", id: "s1", Data("stale suggestion".utf8))
        try await vault.writeFile("suggestions", named: "model.bin", contents: Data("stale model".utf8))
        try await vault.put("layout-cache", id: "home", Data("stale layout".utf8))
        await vaults.close()
    }

    /// Checks that only the version's caches of `account` are gone.
    func expectReset(_ account: AccountID, _ comment: Comment? = nil) async throws {
        let vault = try await vaults.open(account)
        #expect(try await vault.get("notes", id: "n1") == Data("note of \(account)".utf8), comment)
        #expect(try await vault.get("drafts", id: "d1") == Data("draft".utf8), comment)
        #expect(try await vault.get("session-token", id: "token") == Data("token".utf8), comment)
        #expect(try await vault.readFile("media", named: "p1.jpg") == Data("photo".utf8), comment)
        #expect(try await vault.get("feed-cache", id: "f1") == Data("feed".utf8), comment)  // no trigger
        #expect(try await vault.get("suggestions", id: "s1") == nil, comment)
        #expect(try await vault.fileNames("suggestions").isEmpty, comment)
        #expect(try await vault.get("layout-cache", id: "home") == nil, comment)
        // Rebuilt as a cache is: written again, it reads back.
        try await vault.put("suggestions", id: "s2", Data("fresh".utf8))
        #expect(try await vault.get("suggestions", id: "s2") == Data("fresh".utf8), comment)
        await vaults.close()
    }

    func filesWithBytes() -> [String: Data] {
        Dictionary(uniqueKeysWithValues: VaultFixture.files(under: data).map { ($0.path, $0.bytes) })
    }

    static func code(_ work: () async throws -> Void) async -> String? {
        do {
            try await work()
            return nil
        } catch let error as VaultError { return error.code.name } catch let error as InventoryError {
            return error.code.name
        } catch { return "\(error)" }
    }

    @Test func aNewVersionResetsTheCachesDeclaringItInEveryVaultAndTheSharedCacheAndNothingElse() async throws {
        let first = try await vaults.checkAppVersion("1.0")
        #expect(first.changed && first.previous == nil && first.version == "1.0")
        #expect(first.vaults.isEmpty && first.resetDatasets.isEmpty)
        try await fill(alice)
        try await fill(bob)
        try await vaults.shared.put("catalog", id: "p1", Data("old catalog".utf8))
        let keysBefore = try keys.listKeys().count

        let check = try await vaults.checkAppVersion("1.1")
        #expect(check.changed && check.previous == "1.0" && check.version == "1.1")
        #expect(check.resetDatasets == ["catalog"])
        #expect(
            Set(check.vaults.compactMap(\.namespace)) == [VaultNamespace(alice), VaultNamespace(bob)],
            "both vaults, neither of them open")
        for report in check.vaults {
            #expect(report.trigger == .appVersionChange)
            #expect(report.deletedDatasets == ["layout-cache", "suggestions"])
            #expect(report.shreddedKeys.count == 1)  // the sealed cache's; the plain one has none
            #expect(!report.keptDatasets.contains("suggestions") && report.keptDatasets.contains("feed-cache"))
        }
        #expect(try keys.listKeys().count == keysBefore - 2)
        #expect(try await vaults.shared.get("catalog", id: "p1") == nil)
        #expect(VaultFixture.files(under: data, containing: Data("stale layout".utf8)).isEmpty)
        try await expectReset(alice)
        try await expectReset(bob)
    }

    @Test func theSameVersionAgainChangesNothing() async throws {
        try await vaults.checkAppVersion("1.0")
        try await fill(alice)
        try await vaults.shared.put("catalog", id: "p1", Data("catalog".utf8))
        await vaults.shared.close()
        let before = filesWithBytes()
        let keysBefore = try keys.listKeys()
        let again = try await vaults.checkAppVersion("1.0")
        #expect(!again.changed && again.previous == "1.0" && again.vaults.isEmpty && again.resetDatasets.isEmpty)
        #expect(filesWithBytes() == before)
        #expect(try keys.listKeys() == keysBefore)
        let vault = try await vaults.open(alice)
        #expect(try await vault.get("suggestions", id: "s1") == Data("stale suggestion".utf8))
        #expect(try await vaults.shared.get("catalog", id: "p1") == Data("catalog".utf8))
    }

    /// An older build may not read what a newer one cached: going back is a change too.
    @Test func aDowngradeIsAChangeToo() async throws {
        try await vaults.checkAppVersion("2.0")
        try await fill(alice)
        let check = try await vaults.checkAppVersion("1.9")
        #expect(check.changed && check.previous == "2.0")
        #expect(check.vaults.map(\.deletedDatasets) == [["layout-cache", "suggestions"]])
        try await expectReset(alice)
    }

    /// Data written before versions were recorded: the version it was written by is unknown, so its caches go.
    @Test func noRecordedVersionIsAChange() async throws {
        try await fill(alice)
        let check = try await vaults.checkAppVersion("3.0")
        #expect(check.changed && check.previous == nil)
        try await expectReset(alice)
        #expect(try vaults.backupPlan().included.contains("app-version.json"))
    }

    /// The record's list of stores still to reset: (shared cache pending, vault namespaces pending).
    func pending() throws -> (shared: Bool, vaults: [String]) {
        let bytes = try Data(contentsOf: data.appendingPathComponent("app-version.json"))
        let record = try JSONSerialization.jsonObject(with: bytes) as? [String: Any] ?? [:]
        return (record["pendingShared"] as? Bool ?? true, record["pendingVaults"] as? [String] ?? ["?"])
    }

    /// Found in a review: a vault that could not be reset (its manifest gone: nothing in it can be told apart)
    /// made the check throw, and the caller lost that the version changed (the app's own caches were never
    /// cleared) — at every launch while it kept failing. The check returns: changed, that vault unfinished with
    /// its error; the other vault and the shared cache are reset and stay so; the next check — same version —
    /// resets that vault, and only it, then the one after has nothing left to do.
    @Test func aCheckThatFailsMidwaySaysItChangedAndWhatIsUnfinishedAndTheNextOneFinishesIt() async throws {
        try await vaults.checkAppVersion("1.0")
        try await fill(alice)
        try await fill(bob)
        try await vaults.shared.put("catalog", id: "p1", Data("old catalog".utf8))
        let manifest = data.appendingPathComponent("vaults/\(VaultNamespace(bob).rawValue)/vault.json")
        let saved = try Data(contentsOf: manifest)
        try FileManager.default.removeItem(at: manifest)

        let partial = try await vaults.checkAppVersion("2.0")
        #expect(partial.changed && partial.previous == "1.0" && !partial.isFinished)
        #expect(partial.unfinished.map(\.store) == [.vault(VaultNamespace(bob))])
        #expect(partial.unfinished.map(\.error.code) == [.damaged])
        #expect(partial.vaults.compactMap(\.namespace) == [VaultNamespace(alice)])
        #expect(partial.resetDatasets == ["catalog"])
        #expect(try pending().shared == false && pending().vaults == [VaultNamespace(bob).rawValue])
        try saved.write(to: manifest)
        try await expectReset(alice)
        #expect(try await vaults.shared.get("catalog", id: "p1") == nil)
        try await vaults.shared.put("catalog", id: "p2", Data("new catalog".utf8))

        let rerun = try await vaults.checkAppVersion("2.0")
        #expect(rerun.changed && rerun.previous == "1.0" && rerun.isFinished)
        #expect(rerun.vaults.compactMap(\.namespace) == [VaultNamespace(bob)])
        #expect(rerun.resetDatasets.isEmpty)  // done the first time: what was cached since stays
        #expect(try await vaults.shared.get("catalog", id: "p2") == Data("new catalog".utf8))
        try await expectReset(bob)
        #expect(!(try await vaults.checkAppVersion("2.0")).changed)
    }

    /// Found in a review: opening a vault never looked at the record, so a vault whose reset had failed opened
    /// with the old version's caches. It is reset when it opens (refused while it cannot be), and leaves the
    /// list; a check after that has nothing left to do.
    @Test func aVaultWhoseResetFailedIsResetWhenItOpens() async throws {
        try await vaults.checkAppVersion("1.0")
        try await fill(alice)
        try await fill(bob)
        let manifest = data.appendingPathComponent("vaults/\(VaultNamespace(bob).rawValue)/vault.json")
        let saved = try Data(contentsOf: manifest)
        try FileManager.default.removeItem(at: manifest)
        #expect(try await vaults.checkAppVersion("2.0").unfinished.map(\.store) == [.vault(VaultNamespace(bob))])
        #expect(await Self.code { _ = try await vaults.open(bob) } == "appVersionResetUnfinished")
        #expect(try pending().vaults == [VaultNamespace(bob).rawValue])

        try saved.write(to: manifest)
        try await expectReset(bob, "opening it reset its caches, and nothing else")
        #expect(try pending().shared == false && pending().vaults.isEmpty)
        let after = try await vaults.checkAppVersion("2.0")
        #expect(!after.changed && after.vaults.isEmpty && after.resetDatasets.isEmpty && after.isFinished)
    }

    /// The shared cache likewise: one whose reset failed (its database unreadable for the check) is reset at
    /// its next use, before anything is read, and leaves the list.
    @Test func theSharedCacheWhoseResetFailedIsResetAtItsNextUse() async throws {
        try await vaults.checkAppVersion("1.0")
        try await fill(alice)
        try await vaults.shared.put("catalog", id: "p1", Data("old catalog".utf8))
        await vaults.shared.close()
        let shared = data.appendingPathComponent("shared")
        let aside = root.url("shared-aside")
        try FileManager.default.copyItem(at: shared, to: aside)
        for name in try FileManager.default.contentsOfDirectory(atPath: shared.path) {
            let file = shared.appendingPathComponent(name)
            if name.hasSuffix(".sqlite") {
                try Data(repeating: 0x5A, count: 4096).write(to: file)
            } else {
                try FileManager.default.removeItem(at: file)
            }
        }

        let partial = try await vaults.checkAppVersion("2.0")
        #expect(partial.changed && partial.unfinished.map(\.store) == [.shared])
        #expect(partial.vaults.compactMap(\.namespace) == [VaultNamespace(alice)])
        #expect(try pending().shared == true && pending().vaults.isEmpty)
        #expect(await Self.code { _ = try await vaults.shared.get("catalog", id: "p1") } == "appVersionResetUnfinished")
        await vaults.shared.close()
        try FileManager.default.removeItem(at: shared)
        try FileManager.default.moveItem(at: aside, to: shared)

        #expect(try await vaults.shared.get("catalog", id: "p1") == nil, "reset before it was read")
        #expect(try pending().shared == false)
        try await vaults.shared.put("catalog", id: "p2", Data("new catalog".utf8))
        let after = try await vaults.checkAppVersion("2.0")
        #expect(!after.changed && after.isFinished)
        #expect(try await vaults.shared.get("catalog", id: "p2") == Data("new catalog".utf8))
        try await expectReset(alice)
    }

    /// The key store gone while a vault's sealed cache is reset (as a crash between recording the reset and
    /// shredding would leave it): the vault records the reset before anything goes, so opening it finishes
    /// the reset even before the app checks its version again — and the next check completes the rest.
    @Test func aResetInterruptedInsideAVaultIsFinishedWhenTheVaultOpensAndByTheNextCheck() async throws {
        try await vaults.checkAppVersion("1.0")
        try await fill(alice)
        try await fill(bob)
        let away = root.url("keys-away")
        try FileManager.default.moveItem(at: root.url("keys"), to: away)
        let partial = try await vaults.checkAppVersion("1.1")
        #expect(partial.changed && Set(partial.unfinished.map(\.error.code)) == [.keyStoreFailed])
        #expect(Set(partial.unfinished.map(\.store)) == [.vault(VaultNamespace(alice)), .vault(VaultNamespace(bob))])
        try FileManager.default.moveItem(at: away, to: root.url("keys"))
        try await expectReset(alice)  // opening finishes the recorded reset
        let rerun = try await vaults.checkAppVersion("1.1")
        #expect(rerun.changed && rerun.previous == "1.0" && rerun.isFinished)
        try await expectReset(bob)
        #expect(!(try await vaults.checkAppVersion("1.1")).changed)
    }

    /// Caches go whether or not their keys are here: a vault restored onto another device (its keys missing)
    /// has its caches reset, and its other data kept as ciphertext.
    @Test func cachesOfAVaultWithoutItsKeysAreResetToo() async throws {
        try await vaults.checkAppVersion("1.0")
        try await fill(alice)
        for listing in try keys.listKeys() { try keys.delete(listing.id) }
        let check = try await vaults.checkAppVersion("1.1")
        #expect(check.vaults.map(\.deletedDatasets) == [["layout-cache", "suggestions"]])
        let vault = try await vaults.open(alice)
        #expect(try await vault.get("suggestions", id: "s1") == nil)
        #expect(try await vault.get("feed-cache", id: "f1") == Data("feed".utf8))
        #expect(await Self.code { _ = try await vault.get("notes", id: "n1") } == "keyUnavailable")
    }

    @Test func refusedWhileAVaultIsOpenAndForABlankVersion() async throws {
        try await vaults.checkAppVersion("1.0")
        try await fill(alice)
        let vault = try await vaults.open(alice)
        #expect(await Self.code { try await vaults.checkAppVersion("1.1") } == "anotherVaultOpen")
        #expect(try await vault.get("suggestions", id: "s1") == Data("stale suggestion".utf8))
        await vaults.close()
        #expect(await Self.code { try await vaults.checkAppVersion(" ") } == "invalidAppVersion")
        // Refused without being recorded: 1.1 is still a change.
        #expect(try await vaults.checkAppVersion("1.1").changed)
    }

    // MARK: - DataStore

    static let storeInventory: Inventory = {
        do {
            return try Inventory([
                Dataset(
                    name: "notes", purpose: "The user's notes", classification: .personal, isAccountBound: true,
                    retention: .untilEvent, backup: .include, deletionTriggers: [.logout, .accountDeletion],
                    role: .sourceOfTruth, storage: .init(table: "note")),
                Dataset(
                    name: "feed", purpose: "The public feed", kind: .cache, classification: .public,
                    isAccountBound: false, retention: .untilEvent, backup: .exclude,
                    deletionTriggers: [.appVersionChange], role: .cache(rebuiltFrom: "GET /feed"),
                    storage: .init(table: "feed")),
                Dataset(
                    name: "rendered", purpose: "Rendered notes", kind: .cache, classification: .internal,
                    isAccountBound: false, retention: .untilEvent, backup: .exclude,
                    deletionTriggers: [.appVersionChange], role: .cache(rebuiltFrom: "notes"),
                    storage: .init(table: "rendered")),
                Dataset(
                    name: "avatars", purpose: "Avatars by user", kind: .cache, classification: .public,
                    isAccountBound: false, retention: .untilEvent, backup: .exclude, deletionTriggers: [.logout],
                    role: .cache(rebuiltFrom: "GET /avatars"), storage: .init(table: "avatar")),
            ])
        } catch { preconditionFailure("the data store test inventory is refused: \(error)") }
    }()

    func store() async throws -> DataStore {
        let store = DataStore(
            pool: try DatabasePool(path: root.url("app.sqlite").path), inventory: Self.storeInventory)
        try await addRows(store)
        return store
    }

    /// One more row in every table (caches filled again after a reset).
    func addRows(_ store: DataStore) async throws {
        try await store.pool.write { db in
            for table in ["note", "feed", "rendered", "avatar"] {
                try db.execute("CREATE TABLE IF NOT EXISTS \(table) (id INTEGER PRIMARY KEY, body TEXT)")
                try db.execute("INSERT INTO \(table) (body) VALUES ('x')")
            }
        }
    }

    func counts(_ store: DataStore) async throws -> [String: Int] {
        try await store.pool.read { db in
            var counts: [String: Int] = [:]
            for table in ["note", "feed", "rendered", "avatar"] {
                counts[table] = try db.scalar(Int.self, "SELECT count(*) FROM \(table)")
            }
            return counts
        }
    }

    @Test func dataStoreTableCachesDeclaringTheTriggerAreResetOnAChangeOnly() async throws {
        let store = try await store()
        let first = try await store.checkAppVersion("1.0")
        #expect(first.changed && first.previous == nil && first.resetDatasets == ["feed", "rendered"])
        #expect(try await counts(store) == ["note": 1, "feed": 0, "rendered": 0, "avatar": 1])
        try await addRows(store)  // cached again
        let same = try await store.checkAppVersion("1.0")
        #expect(!same.changed && same.resetDatasets.isEmpty)
        #expect(try await counts(store) == ["note": 2, "feed": 1, "rendered": 1, "avatar": 2])
        let upgrade = try await store.checkAppVersion("1.1")
        #expect(upgrade.changed && upgrade.previous == "1.0" && upgrade.resetDatasets == ["feed", "rendered"])
        #expect(try await counts(store) == ["note": 2, "feed": 0, "rendered": 0, "avatar": 2])
        try await addRows(store)
        let downgrade = try await store.checkAppVersion("1.0")
        #expect(downgrade.changed && downgrade.previous == "1.1")
        #expect(try await counts(store) == ["note": 3, "feed": 0, "rendered": 0, "avatar": 3])
        await #expect {
            try await store.checkAppVersion("")
        } throws: { ($0 as? InventoryError)?.code == .invalidAppVersion }
    }

    /// One transaction: an error after the first cache was emptied (here a trigger that refuses the second
    /// one's deletion, as a full disk would) leaves both caches and the recorded version as they were; the
    /// next check does it all.
    @Test func aDataStoreCheckThatFailsMidwayChangesNothingAndRunsAgain() async throws {
        let store = try await store()
        try await store.checkAppVersion("1.0")
        try await addRows(store)
        try await store.pool.write { db in
            try db.execute(
                "CREATE TRIGGER refuse BEFORE DELETE ON rendered BEGIN SELECT RAISE(ABORT, 'simulated failure'); END")
        }
        await #expect(throws: DatabaseError.self) { try await store.checkAppVersion("2.0") }
        #expect(try await counts(store) == ["note": 2, "feed": 1, "rendered": 1, "avatar": 2])
        try await store.pool.write { db in try db.execute("DROP TRIGGER refuse") }
        let rerun = try await store.checkAppVersion("2.0")
        #expect(rerun.changed && rerun.previous == "1.0" && rerun.resetDatasets == ["feed", "rendered"])
        #expect(try await counts(store) == ["note": 2, "feed": 0, "rendered": 0, "avatar": 2])
    }
}
