import Foundation
import KeelCore
import KeelStore
import KeelTesting
import Testing

/// MOB-DATA-001: inventory of stores, retention and purge, backup flags.
@Suite struct InventoryTests {
    static let notes = Dataset(
        name: "notes", purpose: "The user's notes", classification: .personal, isAccountBound: true,
        retention: .untilEvent,
        backup: .include, deletionTriggers: [.logout, .accountDeletion], role: .sourceOfTruth,
        storage: .init(table: "note")
    )
    static let feed = Dataset(
        name: "feed-cache", purpose: "Last page of the public feed, for a fast start", classification: .public,
        isAccountBound: false,
        retention: .duration(.seconds(86_400)), backup: .exclude,
        deletionTriggers: [.retentionExpiry, .appVersionChange],
        role: .cache(rebuiltFrom: "GET /feed"), storage: .init(table: "feed", timestampColumn: "fetched_at")
    )
    static let searches = Dataset(
        name: "recent-searches", purpose: "Suggestions while typing", classification: .personal, isAccountBound: true,
        retention: .duration(.seconds(30 * 86_400)), backup: .exclude,
        deletionTriggers: [.logout, .accountDeletion, .retentionExpiry],
        role: .sourceOfTruth, storage: .init(table: "search", timestampColumn: "at")
    )
    static let token = Dataset(
        name: "session-token", purpose: "Signs API calls", kind: .keyValue, classification: .credential,
        isAccountBound: true,
        retention: .untilEvent, backup: .deviceOnly, deletionTriggers: [.logout, .accountDeletion, .accessRevocation],
        role: .sourceOfTruth
    )

    @Test func aSoundInventoryIsAccepted() throws {
        let inventory = try Inventory([Self.notes, Self.feed, Self.searches, Self.token])
        #expect(try inventory.dataset("notes") == Self.notes)
        #expect(throws: InventoryError.self) { try inventory.dataset("photos") }
    }

    @Test func sensitiveOrCredentialDataInTransferableBackupsIsRefused() {
        var leaky = Self.token
        leaky.backup = .include
        #expect {
            _ = try Inventory([leaky])
        } throws: { error in
            (error as? InventoryError)?.problems.contains { $0.code == .sensitiveInBackup && $0.field == "backup" }
                == true
        }
    }

    @Test(arguments: [Dataset.Classification.personal, .sensitive, .credential])
    func personalDataWithoutRetentionIsRefused(classification: Dataset.Classification) {
        var forever = Self.notes
        forever.classification = classification
        forever.backup = .exclude
        forever.retention = nil
        #expect {
            _ = try Inventory([forever])
        } throws: { error in
            (error as? InventoryError)?.problems.contains { $0.code == .missingRetention && $0.field == "retention" }
                == true
        }
    }

    @Test func moreRulesRefuseIncompleteDeclarations() {
        var noDeletion = Self.notes
        noDeletion.deletionTriggers = [.logout]
        var noSource = Self.feed
        noSource.role = .cache(rebuiltFrom: " ")
        var noPurpose = Self.feed
        noPurpose.name = "other"
        noPurpose.purpose = ""
        #expect {
            _ = try Inventory([noDeletion, noSource, noPurpose, Self.feed])
        } throws: { error in
            guard let problems = (error as? InventoryError)?.problems else { return false }
            return problems.contains { $0.code == .notDeletedWithAccount }
                && problems.contains { $0.code == .cacheWithoutSource }
                && problems.contains { $0.code == .missingPurpose }
                && problems.contains { $0.code == .declaredTwice }
        }
    }

    /// Found in an outside audit: blanks made of line breaks passed as a name, a purpose or a cache's source;
    /// a name no vault can store a dataset under (`my notes`, `a/b`) passed and was refused at first use; and
    /// data kept "until an event" whose only event is retention expiry (which needs a duration) was sound,
    /// though it is never deleted.
    @Test func blankUnusableAndNeverDeletedDeclarationsAreRefused() {
        func codes(_ change: (inout Dataset) -> Void) -> [InventoryProblem.Code] {
            var dataset = Self.feed
            change(&dataset)
            return dataset.problems.map(\.code)
        }
        #expect(codes { $0.name = "\n" } == [.missingName])
        #expect(codes { $0.purpose = "\r\n" } == [.missingPurpose])
        #expect(codes { $0.role = .cache(rebuiltFrom: "\n") } == [.cacheWithoutSource])
        for name in ["my notes", "a/b", "a\u{0}b", ".hidden", String(repeating: "x", count: 129)] {
            #expect(codes { $0.name = name } == [.unusableName], "\(name.debugDescription)")
        }
        #expect(codes { $0.name = "feed-cache_v2.1" }.isEmpty)
        var never = Self.notes
        never.deletionTriggers = [.retentionExpiry]
        #expect(never.problems.map(\.code).contains(.missingDeletionTrigger))
    }

    @Test func accountBoundCredentialsAndSensitiveDataMustGoOnLogoutAndAccessRevocation() throws {
        func token(
            _ classification: Dataset.Classification, _ triggers: Set<Dataset.DeletionTrigger>, bound: Bool = true
        )
            -> Dataset
        {
            Dataset(
                name: "token", purpose: "Signs API calls", kind: .keyValue, classification: classification,
                isAccountBound: bound, retention: .untilEvent, backup: .deviceOnly, deletionTriggers: triggers,
                role: .sourceOfTruth)
        }
        // Kept through a sign-out, a credential would sign the next user's calls as this one.
        #expect(token(.credential, [.accountDeletion]).problems.map(\.code) == [.notDeletedOnSignOut])
        #expect(
            token(.sensitive, [.logout, .accountDeletion]).problems.first?.message.contains("accessRevocation") == true)
        #expect(token(.credential, [.logout, .accountDeletion, .accessRevocation]).problems.isEmpty)
        // Personal data and a device's own credential (not an account's) are not held to it.
        #expect(token(.personal, [.accountDeletion]).problems.isEmpty)
        #expect(token(.credential, [.accountDeletion], bound: false).problems.isEmpty)
    }

    /// MOB-API-005: an update never deletes credentials, drafts or uncertain operations because of the version
    /// alone; only a cache may be declared to go with it.
    @Test func onlyACacheMayBeDeletedBecauseTheAppVersionChanged() {
        func dataset(_ kind: Dataset.Kind, _ classification: Dataset.Classification, role: Dataset.Role) -> Dataset {
            Dataset(
                name: "data", purpose: "what the app keeps", kind: kind, classification: classification,
                isAccountBound: false, retention: .untilEvent, backup: .exclude,
                deletionTriggers: [.logout, .appVersionChange], role: role)
        }
        for (kind, classification) in [
            (Dataset.Kind.keyValue, Dataset.Classification.credential), (.draft, .personal), (.queue, .personal),
            (.table, .internal),
        ] {
            let problems = dataset(kind, classification, role: .sourceOfTruth).problems
            #expect(problems.map(\.code) == [.deletedByAppVersion], "\(kind) \(classification)")
            #expect(problems.first?.field == "deletionTriggers")
        }
        #expect(dataset(.cache, .internal, role: .cache(rebuiltFrom: "GET /feed")).problems.isEmpty)
        #expect(throws: InventoryError.self) {
            try Inventory([dataset(.draft, .personal, role: .sourceOfTruth)])
        }
    }

    @Test func theStoreRefusesUndeclaredDatasetsAndResetsOnlyCaches() async throws {
        let directory = try TemporaryDirectory()
        let pool = try DatabasePool(path: directory.url("app.sqlite").path)
        try await pool.write { db in
            try db.executeScript(
                "CREATE TABLE note (id INTEGER PRIMARY KEY, title TEXT); CREATE TABLE feed (id INTEGER PRIMARY KEY, fetched_at REAL);"
            )
            try db.execute("INSERT INTO note (title) VALUES ('keep me')")
            try db.execute("INSERT INTO feed (fetched_at) VALUES (1)")
        }
        let store = DataStore(pool: pool, inventory: try Inventory([Self.notes, Self.feed]))
        await #expect(throws: InventoryError.self) { try await store.write("photos") { _ in } }
        await #expect(throws: InventoryError.self) { try await store.read("photos") { _ in 0 } }

        await #expect {
            try await store.resetCache("notes")
        } throws: { error in
            (error as? InventoryError)?.code == .resetRefused
        }
        try await store.resetCache("feed-cache")
        #expect(try await store.read("notes") { try $0.scalar(Int.self, "SELECT count(*) FROM note") } == 1)
        #expect(try await store.read("feed-cache") { try $0.scalar(Int.self, "SELECT count(*) FROM feed") } == 0)
    }

    @Test func expiredPersonalDataIsSweptAndGoneFromTheFilesToo() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.url("app.sqlite").path
        let pool = try DatabasePool(path: path)
        let clock = ManualClock(wallClockOrigin: Date(timeIntervalSince1970: 1_800_000_000))
        let now = clock.wallClock.now().timeIntervalSince1970
        try await pool.write { db in
            // Whatever this SQLite build defaults to, the sweep itself must scrub deleted bytes.
            try db.execute("PRAGMA secure_delete = OFF")
            try db.execute("CREATE TABLE search (id INTEGER PRIMARY KEY, query TEXT, at REAL)")
            try db.execute(
                "INSERT INTO search (query, at) VALUES (?, ?)", arguments: ["EXPIRED-MARKER-7f3a", now - 31 * 86_400])
            try db.execute("INSERT INTO search (query, at) VALUES (?, ?)", arguments: ["recent query", now - 86_400])
        }
        let store = DataStore(pool: pool, inventory: try Inventory([Self.searches, Self.feed]))
        try await pool.write { db in try db.execute("CREATE TABLE feed (id INTEGER PRIMARY KEY, fetched_at REAL)") }

        let report = try await store.sweepExpired(now: clock.wallClock)
        #expect(report.deleted["recent-searches"] == 1)
        #expect(report.isScrubbed)
        let left = try await store.read("recent-searches") {
            try $0.rows("SELECT query FROM search").compactMap { $0.get("query", as: String.self) }
        }
        #expect(left == ["recent query"])
        // Not just unreachable: the bytes are gone from the database file and the WAL.
        for file in [path, path + "-wal"] where FileManager.default.fileExists(atPath: file) {
            let bytes = try Data(contentsOf: URL(fileURLWithPath: file))
            #expect(bytes.range(of: Data("EXPIRED-MARKER-7f3a".utf8)) == nil, "marker still in \(file)")
        }
        // A day later by the injected clock, the recent one expires too.
        clock.advance(by: .seconds(30 * 86_400))
        #expect(try await store.sweepExpired(now: clock.wallClock).deleted["recent-searches"] == 1)
    }

    /// One inventory for the whole app: a dataset kept in an account's vault (or not created yet) has no
    /// table in this database; the sweep goes on with the others instead of failing as a whole.
    @Test func aDatasetWithoutATableHereDoesNotStopTheSweep() async throws {
        let directory = try TemporaryDirectory()
        let pool = try DatabasePool(path: directory.url("app.sqlite").path)
        let clock = ManualClock(wallClockOrigin: Date(timeIntervalSince1970: 1_800_000_000))
        let now = clock.wallClock.now().timeIntervalSince1970
        try await pool.write { db in
            try db.execute("CREATE TABLE search (id INTEGER PRIMARY KEY, query TEXT, at REAL)")
            try db.execute("INSERT INTO search (query, at) VALUES (?, ?)", arguments: ["old", now - 31 * 86_400])
        }
        // feed-cache declares table `feed`, which this database does not have.
        let store = DataStore(pool: pool, inventory: try Inventory([Self.searches, Self.feed]))
        let report = try await store.sweepExpired(now: clock.wallClock)
        #expect(report.deleted["recent-searches"] == 1)
        #expect(report.deleted["feed-cache"] == nil)
    }

    @Test func aSweepBlockedByAReaderSaysTheBytesAreNotScrubbedYet() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.url("app.sqlite").path
        // A short busy timeout: the blocked checkpoint gives up quickly instead of waiting 5 s.
        let pool = try DatabasePool(path: path, configuration: DatabaseConfiguration(busyTimeout: .milliseconds(50)))
        let clock = ManualClock(wallClockOrigin: Date(timeIntervalSince1970: 1_800_000_000))
        try await pool.write { db in
            try db.executeScript(
                "CREATE TABLE search (id INTEGER PRIMARY KEY, query TEXT, at REAL); CREATE TABLE feed (id INTEGER PRIMARY KEY, fetched_at REAL);"
            )
            try db.execute("INSERT INTO search (query, at) VALUES ('old', 0)")
        }
        let store = DataStore(pool: pool, inventory: try Inventory([Self.searches, Self.feed]))
        // Another connection holds a read snapshot while the sweep runs.
        let other = try DatabasePool(path: path)
        let holding = Flag()
        let release = DispatchSemaphore(value: 0)
        let reader = Task.detached {
            try other.readSync { db in
                _ = try db.rows("SELECT count(*) FROM search")
                holding.set()
                release.wait()
            }
        }
        await holding.wait()
        let blocked = try await store.sweepExpired(now: clock.wallClock)
        #expect(blocked.deleted["recent-searches"] == 1)
        #expect(!blocked.isScrubbed)
        release.signal()
        try await reader.value
        #expect(try await store.sweepExpired(now: clock.wallClock).isScrubbed)
    }

    /// Retention durations nothing could sweep: data of no account that is not public (no vault and not the
    /// shared cache keeps it, so only a table could), files and media in a vault (its sweep reaches records
    /// only), and a declared table without its timestamp column (the ``DataStore``'s, which sweeps by it).
    @Test func retentionThatNothingCanSweepIsRefused() {
        var unbound = Self.searches
        unbound.name = "device-history"
        unbound.classification = .internal
        unbound.isAccountBound = false
        unbound.deletionTriggers = [.retentionExpiry]
        unbound.storage = nil
        var media = Self.searches
        media.name = "photos"
        media.kind = .mediaDirectory
        media.storage = nil
        var publicFiles = Self.feed
        publicFiles.kind = .file
        publicFiles.storage = nil
        var untimed = Self.searches
        untimed.storage = .init(table: "search")
        for dataset in [unbound, media, publicFiles, untimed] {
            #expect(
                dataset.problems.map(\.code) == [.retentionNotSweepable], "\(dataset.name) \(dataset.kind)")
            #expect {
                _ = try Inventory([dataset])
            } throws: { error in
                (error as? InventoryError)?.problems.contains {
                    $0.code == .retentionNotSweepable && $0.field == "storage"
                } == true
            }
        }
    }

    /// Found in an outside audit: a vault stamps each record it keeps (`updated_at`) and sweeps by that, whatever
    /// table is declared, yet the check asked an account-bound dataset with a retention duration for table
    /// storage with a timestamp column — a table made up to please the check. Records a vault or the shared
    /// cache keeps need no table.
    @Test(arguments: [Dataset.Kind.table, .keyValue, .cache, .draft, .queue, .snapshot])
    func retentionOfRecordsAVaultOrTheSharedCacheSweepsNeedsNoTable(kind: Dataset.Kind) throws {
        var searches = Self.searches
        searches.kind = kind
        searches.storage = nil
        var feed = Self.feed
        feed.kind = kind
        feed.storage = nil
        var publicOfAnAccount = Self.feed
        publicOfAnAccount.name = "followed-topics"
        publicOfAnAccount.kind = kind
        publicOfAnAccount.isAccountBound = true
        publicOfAnAccount.storage = nil
        let inventory = try Inventory([searches, feed, publicOfAnAccount])
        #expect(inventory.datasets.count == 3)
    }

    @Test func aCacheOutsideTheDatabaseIsNotReportedAsReset() async throws {
        let directory = try TemporaryDirectory()
        let pool = try DatabasePool(path: directory.url("app.sqlite").path)
        let thumbnails = Dataset(
            name: "thumbnails", purpose: "Scaled images", kind: .mediaDirectory, classification: .public,
            isAccountBound: false,
            retention: .untilEvent, backup: .exclude, deletionTriggers: [.appVersionChange],
            role: .cache(rebuiltFrom: "originals")
        )
        let store = DataStore(pool: pool, inventory: try Inventory([thumbnails]))
        await #expect { try await store.resetCache("thumbnails") } throws: {
            ($0 as? InventoryError)?.code == .resetRefused
        }
    }

    @Test func theInventoryExportsForReviewAndTheExportIsChecked() throws {
        let inventory = try Inventory([Self.notes, Self.feed, Self.token])
        let exported = try inventory.export()
        #expect(try inventory.export() == exported)  // stable bytes, for diffs in review
        let text = String(decoding: exported, as: UTF8.self)
        let entries = try #require(try JSONSerialization.jsonObject(with: exported) as? [[String: Any]])
        let token = try #require(entries.first { $0["name"] as? String == "session-token" })
        // sorted, not hash order
        #expect(token["deletionTriggers"] as? [String] == ["logout", "accountDeletion", "accessRevocation"])
        #expect(text.contains(#""retention" : 86400"#) && text.contains(#""role" : "sourceOfTruth""#))
        #expect(try Inventory.check(exported: exported).isEmpty)
        let table = Inventory.markdown(try JSONDecoder().decode([Dataset].self, from: exported))
        #expect(
            table.contains(
                "| session-token | Signs API calls | keyValue | credential | yes | until event | deviceOnly | logout, accountDeletion, accessRevocation | source of truth |"
            ))
        #expect(table.contains("| feed-cache |"))
        // Found in an outside audit: a purpose written over two lines broke the table there. A line break is a
        // space in a cell, and a `|` is escaped.
        var multiline = try JSONDecoder().decode([Dataset].self, from: exported)
        multiline[0].purpose = "Signs\nAPI calls | and more"
        let rows = Inventory.markdown(multiline).split(separator: "\n")
        #expect(rows.count == multiline.count + 2)
        #expect(rows.contains { $0.hasPrefix("| \(multiline[0].name) | Signs API calls \\| and more |") }, "\(rows)")
        // A hand-edited export with a sensitive dataset in backups fails the check.
        var edited = try JSONDecoder().decode([Dataset].self, from: exported)
        edited[edited.firstIndex { $0.name == "session-token" }!].backup = .include
        #expect(
            try Inventory.check(exported: try JSONEncoder().encode(edited)).contains {
                $0.code == .sensitiveInBackup && $0.dataset == "session-token"
            })
    }

    /// MOB-DATA-001/003: one table, two declarations — resetting the cache or sweeping it by its retention
    /// would delete the other's rows. Table names compare as SQLite compares them (ASCII case ignored).
    @Test func twoDatasetsCannotShareATable() {
        var copy = Self.feed
        copy.name = "feed-copy"
        copy.storage = .init(table: "NOTE", timestampColumn: "fetched_at")
        #expect {
            try Inventory([Self.notes, copy])
        } throws: { error in
            let problems = (error as? InventoryError)?.problems ?? []
            let shared = problems.filter { $0.code == .tableDeclaredTwice }
            return shared.map(\.dataset) == ["feed-copy"] && shared.map(\.field) == ["storage.table"]
        }
        #expect(throws: Never.self) { try Inventory([Self.notes, Self.feed]) }
    }

    /// Found in review: `Notes` and `notes` were two datasets, yet one vault table (SQLite ignores the case
    /// of table names) and, on Apple platforms, one files directory: each overwrote and purged the other.
    @Test func twoDatasetsCannotDifferOnlyInCase() {
        var shouting = Self.notes
        shouting.name = Self.notes.name.uppercased()
        shouting.storage = nil
        #expect {
            try Inventory([Self.notes, shouting])
        } throws: { error in
            let problems = (error as? InventoryError)?.problems ?? []
            return problems.contains { $0.code == .declaredTwice && $0.dataset == shouting.name && $0.field == "name" }
        }
    }
}
