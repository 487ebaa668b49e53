import Foundation
import KeelCore
import KeelStore
import KeelTesting
import Testing

/// MOB-DATA-001 in the vaults: a dataset whose retention is a duration loses its records once they are older
/// than it, in an account's vault and in the shared store alike, and the deleted bytes leave the files.
@Suite(.timeLimit(.minutes(1))) struct VaultRetentionTests {
    static let month = Dataset.Retention.duration(.seconds(30 * 86_400))

    static let inventory: Inventory = {
        do {
            return try Inventory([
                Dataset(
                    name: "search-history", purpose: "Recent searches, offered again while typing",
                    classification: .personal, isAccountBound: true, retention: month, backup: .deviceOnly,
                    deletionTriggers: [.logout, .accountDeletion], role: .sourceOfTruth,
                    storage: .init(table: "records.search-history", timestampColumn: "updated_at")),
                // Plain (internal): the sweep's scrub can be checked byte for byte.
                Dataset(
                    name: "lookups", purpose: "Recently looked-up places", classification: .internal,
                    isAccountBound: true, retention: month, backup: .deviceOnly, deletionTriggers: [.logout],
                    role: .cache(rebuiltFrom: "GET /places"),
                    storage: .init(table: "records.lookups", timestampColumn: "updated_at")),
                Dataset(
                    name: "notes", purpose: "The user's notes", classification: .personal, isAccountBound: true,
                    retention: .untilEvent, backup: .deviceOnly, deletionTriggers: [.logout, .accountDeletion],
                    role: .sourceOfTruth),
                Dataset(
                    name: "catalog", purpose: "Public product catalog", kind: .cache, classification: .public,
                    isAccountBound: false, retention: .duration(.seconds(7 * 86_400)), backup: .exclude,
                    deletionTriggers: [.appVersionChange], role: .cache(rebuiltFrom: "GET /catalog"),
                    storage: .init(table: "records.catalog", timestampColumn: "updated_at")),
            ])
        } catch { preconditionFailure("the retention test inventory is refused: \(error)") }
    }()

    let root: TemporaryDirectory
    let clock = ManualClock(wallClockOrigin: Date(timeIntervalSince1970: 1_800_000_000))
    let vaults: Vaults

    init() throws {
        root = try TemporaryDirectory(prefix: "keel-retention")
        let keys = try FileKeyStore(directory: root.url("keys"), dataDirectories: [root.url("data")])
        vaults = try Vaults(
            dataDirectory: root.url("data"), keyStore: keys, inventory: Self.inventory, clock: clock.wallClock)
    }

    @Test func expiredVaultRecordsAreSweptAndScrubbedWhileEverythingElseStays() async throws {
        let vault = try await vaults.open(try AccountID("alice@example.com"))
        let marker = Data("EXPIRED-LOOKUP-5d1c".utf8)
        try await vault.put("search-history", id: "old", Data("old search".utf8))
        try await vault.put("lookups", id: "old", marker)
        try await vault.put("notes", id: "n1", Data("kept until logout".utf8))
        clock.advance(by: .seconds(29 * 86_400))
        try await vault.put("search-history", id: "recent", Data("recent search".utf8))
        // Written again: its time is the last write, not the first.
        try await vault.put("notes", id: "n1", Data("still kept".utf8))
        clock.advance(by: .seconds(2 * 86_400))

        let report = try await vault.sweepExpired()
        #expect(report.deleted == ["search-history": 1, "lookups": 1])
        #expect(report.isScrubbed)
        #expect(try await vault.get("search-history", id: "old") == nil)
        #expect(try await vault.get("search-history", id: "recent") == Data("recent search".utf8))
        #expect(try await vault.get("lookups", id: "old") == nil)
        #expect(try await vault.get("notes", id: "n1") == Data("still kept".utf8))
        // Gone from the vault's files, not just unreachable.
        #expect(VaultFixture.files(under: root.url("data"), containing: marker).isEmpty)

        // By a clock the caller gives: a month later the recent one has expired too.
        let later = ManualClock(wallClockOrigin: Date(timeIntervalSince1970: 1_800_000_000 + 62 * 86_400))
        #expect(try await vault.sweepExpired(now: later.wallClock).deleted == ["search-history": 1, "lookups": 0])
        #expect(try await vault.get("search-history", id: "recent") == nil)
        #expect(try await vault.get("notes", id: "n1") != nil)
    }

    /// Found in an outside audit: the inventory check asked a vault dataset with a retention duration for table
    /// storage with a timestamp column, which the vault's sweep never looks at (it stamps records itself). The
    /// declarations here have no storage at all: accepted, and swept in a real vault and the shared cache by
    /// the injected clock.
    @Test func recordsDeclaredWithoutATableAreSweptByTheirStore() async throws {
        let inventory = try Inventory([
            Dataset(
                name: "recent-places", purpose: "Places the user looked at, offered again", kind: .keyValue,
                classification: .personal, isAccountBound: true, retention: .duration(.seconds(7 * 86_400)),
                backup: .deviceOnly, deletionTriggers: [.logout, .accountDeletion, .retentionExpiry],
                role: .sourceOfTruth),
            Dataset(
                name: "headlines", purpose: "Public headlines, for a fast start", kind: .cache, classification: .public,
                isAccountBound: false, retention: .duration(.seconds(3 * 86_400)), backup: .exclude,
                deletionTriggers: [.retentionExpiry], role: .cache(rebuiltFrom: "GET /headlines")),
        ])
        let keys = try FileKeyStore(directory: root.url("keys2"), dataDirectories: [root.url("data2")])
        let vaults = try Vaults(
            dataDirectory: root.url("data2"), keyStore: keys, inventory: inventory, clock: clock.wallClock)
        let vault = try await vaults.open(try AccountID("carol@example.com"))
        try await vault.put("recent-places", id: "old", Data("a café last month".utf8))
        try await vaults.shared.put("headlines", id: "old", Data("yesterday's news".utf8))
        clock.advance(by: .seconds(6 * 86_400))
        try await vault.put("recent-places", id: "recent", Data("the station".utf8))
        try await vaults.shared.put("headlines", id: "recent", Data("today's news".utf8))
        clock.advance(by: .seconds(2 * 86_400))

        #expect(try await vault.sweepExpired().deleted == ["recent-places": 1])
        #expect(try await vault.get("recent-places", id: "old") == nil)
        #expect(try await vault.get("recent-places", id: "recent") == Data("the station".utf8))
        #expect(try await vaults.shared.sweepExpired().deleted == ["headlines": 1])
        #expect(try await vaults.shared.get("headlines", id: "recent") == Data("today's news".utf8))
        // By a clock the caller gives: two weeks on, the recent ones have expired too.
        let later = ManualClock(wallClockOrigin: Date(timeIntervalSince1970: 1_800_000_000 + 22 * 86_400))
        #expect(try await vault.sweepExpired(now: later.wallClock).deleted == ["recent-places": 1])
        #expect(try await vault.get("recent-places", id: "recent") == nil)
        #expect(try await vaults.shared.sweepExpired(now: later.wallClock).deleted == ["headlines": 1])
        await vaults.close()
        await vaults.shared.close()
    }

    @Test func aSweepOfAFreshVaultDeletesNothingAndCreatesNoDatabase() async throws {
        let vault = try await vaults.open(try AccountID("bob@example.com"))
        let before = VaultFixture.files(under: root.url("data")).map(\.path)
        let report = try await vault.sweepExpired()
        #expect(report.deleted.isEmpty)
        #expect(report.isScrubbed)
        #expect(VaultFixture.files(under: root.url("data")).map(\.path) == before)
    }

    @Test func aClosedVaultRefusesToSweep() async throws {
        let vault = try await vaults.open(try AccountID("alice@example.com"))
        try await vault.put("search-history", id: "old", Data("old search".utf8))
        await vaults.close()
        await #expect {
            try await vault.sweepExpired()
        } throws: { error in
            (error as? VaultError)?.code == .vaultClosed
        }
    }

    @Test func expiredSharedRecordsAreSweptToo() async throws {
        #expect(try await vaults.shared.sweepExpired().deleted.isEmpty)  // nothing written yet
        try await vaults.shared.put("catalog", id: "p1", Data("old product".utf8))
        clock.advance(by: .seconds(6 * 86_400))
        try await vaults.shared.put("catalog", id: "p2", Data("new product".utf8))
        clock.advance(by: .seconds(2 * 86_400))
        let report = try await vaults.shared.sweepExpired()
        #expect(report.deleted == ["catalog": 1])
        #expect(report.isScrubbed)
        #expect(try await vaults.shared.get("catalog", id: "p1") == nil)
        #expect(try await vaults.shared.get("catalog", id: "p2") == Data("new product".utf8))
    }

    /// The shared store does not record where it wrote: after an app update moved a dataset to another backup
    /// policy (another file), its older records are still swept where they are.
    @Test func sharedRecordsLeftInTheFileOfAnEarlierBackupPolicyAreSweptToo() async throws {
        try await vaults.shared.put("catalog", id: "old", Data("written under backup exclude".utf8))
        await vaults.shared.close()
        var moved = try #require(Self.inventory.datasets["catalog"])
        moved.backup = .include
        let updated = try Inventory(Self.inventory.datasets.values.filter { $0.name != "catalog" } + [moved])
        let keys = try FileKeyStore(directory: root.url("keys"), dataDirectories: [root.url("data")])
        let after = try Vaults(
            dataDirectory: root.url("data"), keyStore: keys, inventory: updated, clock: clock.wallClock)
        clock.advance(by: .seconds(8 * 86_400))
        #expect(try await after.shared.sweepExpired().deleted == ["catalog": 1])
        await after.shared.close()
        let old = root.url("data/shared/exclude.sqlite").path
        let left = try DatabasePool(path: old)
        #expect(try await left.read { try $0.scalar(Int.self, #"SELECT count(*) FROM "records.catalog""#) } == 0)
    }
}
