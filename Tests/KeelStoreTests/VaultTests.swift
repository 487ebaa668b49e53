import Foundation
import KeelCore
import KeelCrypto
import KeelStore
import KeelStoreFixtures
import KeelTesting
import Testing

/// A data directory and a key directory beside it (never inside), and the inventory the vault tests use.
struct VaultFixture {
    let root: TemporaryDirectory
    let keyStore: FileKeyStore
    let vaults: Vaults

    var data: URL { root.url("data") }
    var keys: URL { root.url("keys") }

    static let inventory = VaultInventory.inventory

    init(_ prefix: String = "keel-vault") throws {
        root = try TemporaryDirectory(prefix: prefix)
        keyStore = try FileKeyStore(directory: root.url("keys"), dataDirectories: [root.url("data")])
        vaults = try Vaults(dataDirectory: root.url("data"), keyStore: keyStore, inventory: Self.inventory)
    }

    /// Every regular file under `directory`, with its bytes.
    static func files(under directory: URL) -> [(path: String, bytes: Data)] {
        guard let enumerator = FileManager.default.enumerator(atPath: directory.path) else { return [] }
        var result: [(String, Data)] = []
        for case let relative as String in enumerator {
            let path = directory.path + "/" + relative
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue,
                let bytes = FileManager.default.contents(atPath: path)
            else { continue }
            result.append((relative, bytes))
        }
        return result.sorted { $0.0 < $1.0 }
    }

    /// The files under `directory` that contain `needle` anywhere.
    static func files(under directory: URL, containing needle: Data) -> [String] {
        files(under: directory).filter { $0.bytes.range(of: needle) != nil }.map(\.path)
    }
}

let alice = account("alice@example.com")
let bob = account("bob@example.com")

func account(_ raw: String) -> AccountID {
    do { return try AccountID(raw) } catch { preconditionFailure("\(raw) is a valid account id: \(error)") }
}

@Suite(.timeLimit(.minutes(1))) struct VaultTests {
    let fixture: VaultFixture
    init() throws { fixture = try VaultFixture() }

    // MARK: - Sealing at rest

    @Test func sealedDatasetsLeaveNoPlaintextOnDiskAndPlainOnesStayPlain() async throws {
        let vault = try await fixture.vaults.open(alice)
        let secret = Data("meet at the old mill at dawn".utf8)
        let cached = Data("public feed entry 4711".utf8)
        try await vault.put("notes", id: "n1", secret)
        try await vault.put("feed-cache", id: "f1", cached)
        try await vault.writeFile("media", named: "photo.jpg", contents: secret)
        #expect(try await vault.get("notes", id: "n1") == secret)
        #expect(try await vault.readFile("media", named: "photo.jpg") == secret)
        await fixture.vaults.close()
        // Checkpointed and closed: nothing of the sealed plaintext anywhere in the data directory.
        #expect(VaultFixture.files(under: fixture.data, containing: secret).isEmpty)
        #expect(!VaultFixture.files(under: fixture.data, containing: cached).isEmpty)
        // No raw account id in any path or file.
        #expect(VaultFixture.files(under: fixture.data, containing: Data("alice@example.com".utf8)).isEmpty)
        #expect(!VaultFixture.files(under: fixture.data).contains { $0.path.contains("alice") })
    }

    /// Found in review: a value of 2 GiB or more reached the cipher's 32-bit length and trapped — the app
    /// crashed. It is refused with a typed error before anything is written, and what was there stays.
    @Test func aValueTooLargeForTheVaultIsRefusedNotACrash() async throws {
        let vault = try await fixture.vaults.open(alice)
        try await vault.put("notes", id: "n1", Data("kept".utf8))
        try await vault.writeFile("media", named: "p1.jpg", contents: Data("photo".utf8))
        // Zero pages, never touched: the refusal comes before the bytes are read.
        let huge = Data(count: Vault.maximumValueSize + 1)
        // A sealed record, a sealed file over an existing one, a new sealed file, a plain file.
        for target in ["notes/n1", "media/p1.jpg", "media/new.bin", "feed-cache/page"] {
            let parts = target.split(separator: "/").map(String.init)
            let error = await #expect(throws: VaultError.self, "\(target)") {
                if parts[0] == "notes" {
                    try await vault.put(parts[0], id: parts[1], huge)
                } else {
                    try await vault.writeFile(parts[0], named: parts[1], contents: huge)
                }
            }
            #expect(error?.code == .tooLarge, "\(target)")
        }
        #expect(try await vault.get("notes", id: "n1") == Data("kept".utf8))
        #expect(try await vault.readFile("media", named: "p1.jpg") == Data("photo".utf8))
        #expect(try await vault.fileNames("media") == ["p1.jpg"])
        #expect(try await vault.fileNames("feed-cache").isEmpty)
    }

    /// A dataset's files directory that cannot be listed is an error, never "no files" (found in an outside
    /// audit: a listing showed nothing, and a move converted nothing and recorded the dataset converted).
    @Test func aFilesDirectoryThatCannotBeListedIsAnErrorNotAnEmptyList() async throws {
        let vault = try await fixture.vaults.open(alice)
        try await vault.writeFile("media", named: "p1.jpg", contents: Data("photo".utf8))
        let directory = fixture.data.appendingPathComponent("vaults").appendingPathComponent(vault.namespace.rawValue)
            .appendingPathComponent("files").appendingPathComponent("media")
        let aside = directory.deletingLastPathComponent().appendingPathComponent("media-aside")
        try FileManager.default.moveItem(at: directory, to: aside)
        try Data("not a directory".utf8).write(to: directory)
        let error = await #expect(throws: VaultError.self) { _ = try await vault.fileNames("media") }
        #expect(error?.code == .damaged, "\(String(describing: error))")
        try FileManager.default.removeItem(at: directory)
        #expect(try await vault.fileNames("media") == [], "a directory that does not exist holds no files")
        try FileManager.default.moveItem(at: aside, to: directory)
        #expect(try await vault.fileNames("media") == ["p1.jpg"])
    }

    /// The stored form of a record tells whether it was written again since it was read, without opening it:
    /// in a sealed dataset any write changes it (even of the same value: a fresh nonce); in a plain one any
    /// write of another value.
    @Test func aRecordsStoredBytesTellWhetherItWasWrittenSince() async throws {
        let vault = try await fixture.vaults.open(alice)
        let value = Data("milk, eggs".utf8)
        for dataset in ["notes", "feed-cache"] {
            try await vault.put(dataset, id: "r1", value)
            let (read, stored) = try #require(try await vault.read(dataset) { try $0.getStored("r1") })
            #expect(read == value)
            #expect(try await vault.read(dataset) { try $0.isStored("r1", as: stored) })
            #expect(try await vault.read(dataset) { try $0.isStored("r2", as: stored) } == false)  // no such record
            try await vault.put(dataset, id: "r1", value)  // the same value again
            let rewritten = try await vault.read(dataset) { try $0.isStored("r1", as: stored) }
            #expect(rewritten == (dataset == "feed-cache"), "\(dataset)")  // plain bytes are the value itself
            try await vault.put(dataset, id: "r1", Data("bread".utf8))
            #expect(try await vault.read(dataset) { try $0.isStored("r1", as: stored) } == false)
            try await vault.write(dataset) { try $0.delete("r1") }
            #expect(try await vault.read(dataset) { try $0.isStored("r1", as: stored) } == false)
        }
    }

    @Test func eachSealedDatasetHasItsOwnKeyOutsideTheDataDirectory() async throws {
        let vault = try await fixture.vaults.open(alice)
        try await vault.put("notes", id: "n1", Data("a".utf8))
        try await vault.put("session-token", id: "t", Data("b".utf8))
        try await vault.put("feed-cache", id: "f", Data("c".utf8))
        let keys = try fixture.keyStore.listKeys()
        #expect(keys.count == 2)  // notes and session-token; the plain cache has none
        #expect(Set(keys.map(\.namespace)) == [vault.namespace.rawValue])
        #expect(vault.namespace == VaultNamespace(alice))
        #expect(vault.namespace != VaultNamespace(try AccountID("Alice@example.com")))
    }

    // MARK: - One active vault

    @Test func aSecondAccountCannotOpenWhileTheFirstIsOpen() async throws {
        let first = try await fixture.vaults.open(alice)
        await #expect(throws: VaultError.self) { _ = try await fixture.vaults.open(bob) }
        do { _ = try await fixture.vaults.open(bob) } catch let error as VaultError {
            #expect(error.code == .anotherVaultOpen)
        }
        #expect(try await fixture.vaults.open(alice) === first)
        let second = try await fixture.vaults.switchAccount(to: bob)
        #expect(second.epoch > first.epoch)
        #expect(!first.isOpen)
        #expect(await fixture.vaults.active === second)
    }

    @Test func aStaleHandleFailsWithVaultClosedAndNeverWritesIntoTheNextVault() async throws {
        let a = try await fixture.vaults.open(alice)
        try await a.put("notes", id: "n1", Data("alice's".utf8))
        let b = try await fixture.vaults.switchAccount(to: bob)
        for late in [
            { try await a.put("notes", id: "late", Data("late write".utf8)) },
            { _ = try await a.get("notes", id: "n1") },
            { try await a.writeFile("media", named: "late.jpg", contents: Data("late".utf8)) },
            { _ = try await a.readFile("media", named: "late.jpg") },
            { _ = try await a.fileNames("media") },
        ] as [@Sendable () async throws -> Void] {
            do {
                try await late()
                Issue.record("a closed vault answered")
            } catch let error as VaultError { #expect(error.code == .vaultClosed) }
        }
        #expect(try await b.read("notes") { try $0.ids() } == [])
        #expect(try await b.fileNames("media") == [])
        let a2 = try await fixture.vaults.switchAccount(to: alice)
        #expect(try await a2.read("notes") { try $0.ids() } == ["n1"])
    }

    @Test func aWriteInFlightWhenTheVaultClosesIsRolledBackAndReportsVaultClosed() async throws {
        let a = try await fixture.vaults.open(alice)
        let started = AsyncGate()
        let write = Task {
            try await a.write("notes") { records in
                try records.put("first", Data("1".utf8))
                started.open()
                // Keep the transaction busy until the close interrupts it.
                for index in 0..<5_000_000 {
                    try records.put("row-\(index % 100)", Data(count: 64))
                }
            }
        }
        await started.wait()
        _ = try await fixture.vaults.switchAccount(to: bob)
        do {
            try await write.value
            Issue.record("the interrupted write reported success")
        } catch let error as VaultError { #expect(error.code == .vaultClosed) }
        let a2 = try await fixture.vaults.switchAccount(to: alice)
        #expect(try await a2.get("notes", id: "first") == nil)
    }

    // MARK: - Records that moved do not open

    @Test func ciphertextMovedToAnotherRecordDatasetOrAccountFailsToOpen() async throws {
        let a = try await fixture.vaults.open(alice)
        try await a.put("notes", id: "n1", Data("one".utf8))
        try await a.put("notes", id: "n2", Data("two".utf8))
        try await a.put("drafts", id: "n1", Data("draft".utf8))
        let notes = fixture.data.appendingPathComponent("vaults/\(a.namespace)/include.sqlite")
        await fixture.vaults.close()
        // Swap n1's envelope into n2, and into drafts' n1, with raw SQL.
        let raw = try DatabasePool(path: notes.path)
        let envelope = try await raw.closedEnvelope(notes, id: "n1")
        try await raw.write { db in
            try db.execute(
                #"UPDATE "records.notes" SET value = (SELECT value FROM "records.notes" WHERE id = 'n1') WHERE id = 'n2'"#
            )
            try db.execute(
                #"UPDATE "records.drafts" SET value = (SELECT value FROM "records.notes" WHERE id = 'n1') WHERE id = 'n1'"#
            )
        }
        await raw.close()
        let a2 = try await fixture.vaults.open(alice)
        #expect(try await a2.get("notes", id: "n1") == Data("one".utf8))
        for (dataset, id) in [("notes", "n2"), ("drafts", "n1")] {
            do {
                _ = try await a2.get(dataset, id: id)
                Issue.record("moved ciphertext opened in \(dataset)/\(id)")
            } catch let error as VaultError { #expect(error.code == .cannotOpen) }
        }
        // Another account: alice's envelope stored as bob's record of the same dataset and id.
        _ = try await fixture.vaults.switchAccount(to: bob)
        let b = try #require(await fixture.vaults.active)
        try await b.put("notes", id: "n1", Data("bob's".utf8))
        let bobNotes = fixture.data.appendingPathComponent("vaults/\(b.namespace)/include.sqlite")
        await fixture.vaults.close()
        let bobRaw = try DatabasePool(path: bobNotes.path)
        try await bobRaw.write { db in
            try db.execute(#"UPDATE "records.notes" SET value = ? WHERE id = 'n1'"#, arguments: [envelope])
        }
        await bobRaw.close()
        let b2 = try await fixture.vaults.open(bob)
        do {
            _ = try await b2.get("notes", id: "n1")
            Issue.record("alice's ciphertext opened in bob's vault")
        } catch let error as VaultError { #expect(error.code == .cannotOpen) }
    }

    /// Found in review: a file `x` and a record with id `file:x` of the same dataset were sealed with the
    /// same associated data, so one's ciphertext, moved into the other, opened as it.
    @Test func aFilesCiphertextNeverOpensAsARecordNorARecordsAsAFile() async throws {
        let a = try await fixture.vaults.open(alice)
        try await a.writeFile("media", named: "p.jpg", contents: Data("the photo".utf8))
        try await a.put("media", id: "file:p.jpg", Data("a record".utf8))
        try await a.writeFile("media", named: "q.jpg", contents: Data("the other photo".utf8))
        try await a.put("media", id: "file:q.jpg", Data("another record".utf8))
        await fixture.vaults.close()
        let files = VaultFixture.files(under: fixture.data).map { fixture.data.path + "/" + $0.path }
        func path(_ name: String) throws -> String {
            let found = files.filter { $0.hasSuffix("/" + name) }
            return try #require(found.count == 1 ? found[0] : nil, "\(name): \(found)")
        }
        // The vault file that holds the dataset's records (which one depends on its backup policy).
        var holder: (String, DatabasePool)?
        for file in files where file.hasSuffix(".sqlite") {
            let pool = try DatabasePool(path: file)
            let tables = try await pool.read {
                try $0.scalar(Int.self, "SELECT count(*) FROM sqlite_master WHERE name = 'records.media'")
            }
            if tables == 1 { holder = (file, pool) } else { await pool.close() }
        }
        let (database, raw) = try #require(holder)
        // p.jpg's sealed bytes into record `file:p.jpg`; record `file:q.jpg`'s envelope into file q.jpg.
        let photo = try Data(contentsOf: URL(fileURLWithPath: try path("p.jpg")))
        let record = try await raw.closedEnvelope(
            URL(fileURLWithPath: database), id: "file:q.jpg", table: "records.media")
        try await raw.write { db in
            try db.execute(#"UPDATE "records.media" SET value = ? WHERE id = 'file:p.jpg'"#, arguments: [photo])
        }
        await raw.close()
        try record.write(to: URL(fileURLWithPath: try path("q.jpg")))
        let a2 = try await fixture.vaults.open(alice)
        await #expect(throws: VaultError.self, "a file opened as a record") {
            _ = try await a2.get("media", id: "file:p.jpg")
        }
        await #expect(throws: VaultError.self, "a record opened as a file") {
            _ = try await a2.readFile("media", named: "q.jpg")
        }
        #expect(try await a2.readFile("media", named: "p.jpg") == Data("the photo".utf8))
    }

    /// Records sealed before files got their own kind of associated data (envelope version 1) still open:
    /// a version 1 envelope made here by hand, as the sealing format documents it, reads back.
    @Test func aVersion1EnvelopeStillOpens() async throws {
        let a = try await fixture.vaults.open(alice)
        try await a.put("notes", id: "n1", Data("sealed today".utf8))
        let file = fixture.data.appendingPathComponent("vaults/\(a.namespace)/include.sqlite")
        await fixture.vaults.close()
        let raw = try DatabasePool(path: file.path)
        let current = try await raw.closedEnvelope(file, id: "n1")
        #expect(current[0] == 2)
        let keyIDBytes = [UInt8](current[1..<17])
        let keyID = try #require(KeyID(rawValue: keyIDBytes.map { String(format: "%02x", $0) }.joined()))
        let key = try #require(try fixture.keyStore.key(keyID))
        let cipher = AESGCM.cipher(key: key.withKeyBytes { KeyMaterial($0) })
        func lengthPrefixed(_ text: String) -> [UInt8] {
            let count = UInt32(text.utf8.count)
            return [UInt8(count >> 24), UInt8((count >> 16) & 0xFF), UInt8((count >> 8) & 0xFF), UInt8(count & 0xFF)]
                + Array(text.utf8)
        }
        // "keel.seal" 0x00 | version | key id | u32 length + account | u32 length + dataset | u32 length + record
        let aad =
            Array("keel.seal".utf8) + [0, 1] + keyIDBytes + lengthPrefixed(alice.rawValue) + lengthPrefixed("notes")
            + lengthPrefixed("n1")
        let plaintext = Array("sealed long ago".utf8)
        let nonce = AESGCM.randomBytes(AESGCM.nonceLength)
        var sealed = [UInt8](repeating: 0, count: plaintext.count + AESGCM.tagLength)
        plaintext.withUnsafeBytes { text in
            nonce.withUnsafeBytes { nonce in
                aad.withUnsafeBytes { aad in
                    sealed.withUnsafeMutableBytes { cipher.seal(text, nonce: nonce, aad: aad, into: $0) }
                }
            }
        }
        let envelope = Data([1] + keyIDBytes + nonce + sealed)
        try await raw.write { db in
            try db.execute(#"UPDATE "records.notes" SET value = ? WHERE id = 'n1'"#, arguments: [envelope])
        }
        await raw.close()
        let a2 = try await fixture.vaults.open(alice)
        #expect(try await a2.get("notes", id: "n1") == Data("sealed long ago".utf8))
    }

    /// Found in review: dataset names read from a vault's manifest were never checked, and a purge deletes
    /// `files/<dataset>`: a manifest that came back from a backup naming `../<another namespace>` could
    /// make a logout delete another account's vault.
    @Test func aManifestNamingAnUnsafeDatasetIsDamagedAndNothingIsDeleted() async throws {
        let a = try await fixture.vaults.open(alice)
        try await a.put("notes", id: "n1", Data("mine".utf8))
        let manifestURL = a.directory.appendingPathComponent("vault.json")
        await fixture.vaults.close()
        var manifest = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: manifestURL)) as? [String: Any])
        var datasets = try #require(manifest["datasets"] as? [String: Any])
        datasets["../elsewhere"] = datasets["notes"]
        manifest["datasets"] = datasets
        try JSONSerialization.data(withJSONObject: manifest).write(to: manifestURL)
        let before = VaultFixture.files(under: fixture.data).map(\.path)
        await #expect {
            _ = try await fixture.vaults.open(alice)
        } throws: { error in
            (error as? VaultError)?.code == .damaged
        }
        #expect(VaultFixture.files(under: fixture.data).map(\.path) == before)
    }

    /// Found in review: a vault's manifest was rewritten whole from the copy read at open, so two openers
    /// of one vault (an app and its extension; here two `Vaults` of one data directory) dropped each
    /// other's datasets: a dataset the other made first lost its entry (its records no longer opened, and a
    /// logout would judge its files without it), or got a second key that nothing recorded.
    @Test func twoOpenersOfOneVaultKeepEachOthersDatasetsAndKeys() async throws {
        let app = try await fixture.vaults.open(alice)
        try await app.put("notes", id: "n1", Data("app's note".utf8))
        let other = try Vaults(
            dataDirectory: fixture.data, keyStore: fixture.keyStore, inventory: VaultFixture.inventory)
        let widget = try await other.open(alice)
        // The widget makes `drafts` (its key, its manifest entry); the app, whose copy predates that, then
        // writes `drafts` and `media` for the first time itself.
        try await widget.put("drafts", id: "d1", Data("widget's draft".utf8))
        try await app.put("drafts", id: "d2", Data("app's draft".utf8))
        try await app.writeFile("media", named: "p.jpg", contents: Data("app's photo".utf8))
        try await widget.put("notes", id: "n2", Data("widget's note".utf8))
        await other.close()
        await fixture.vaults.close()
        let reopened = try await fixture.vaults.open(alice)
        #expect(try await reopened.get("drafts", id: "d1") == Data("widget's draft".utf8))
        #expect(try await reopened.get("drafts", id: "d2") == Data("app's draft".utf8))
        #expect(try await reopened.get("notes", id: "n2") == Data("widget's note".utf8))
        #expect(try await reopened.readFile("media", named: "p.jpg") == Data("app's photo".utf8))
    }

    /// Found in review: a new vault was created without the manifest lock, so an app and its extension opening
    /// a new account's vault at the same moment each wrote a manifest with its own entanglement marker. The
    /// last one stayed, and the other opener's key (made with its marker) was refused from then on as another
    /// installation's: its records sealed for good. Rounds of two openers racing, each then writing a record.
    @Test func twoOpenersCreatingOneVaultAtOnceBothKeepTheirRecords() async throws {
        for round in 0..<12 {
            let fixture = try VaultFixture("keel-vault-race")
            let other = try Vaults(
                dataDirectory: fixture.data,
                keyStore: try FileKeyStore(directory: fixture.keys, dataDirectories: [fixture.data]),
                inventory: VaultFixture.inventory)
            async let appOpened = fixture.vaults.open(alice)
            async let widgetOpened = other.open(alice)
            let (app, widget) = try await (appOpened, widgetOpened)
            try await app.put("notes", id: "app", Data("app's note".utf8))
            try await widget.put("drafts", id: "widget", Data("widget's draft".utf8))
            await fixture.vaults.close()
            await other.close()
            let later = try Vaults(
                dataDirectory: fixture.data, keyStore: fixture.keyStore, inventory: VaultFixture.inventory)
            let reopened = try await later.open(alice)
            #expect(try await reopened.get("notes", id: "app") == Data("app's note".utf8), "round \(round)")
            #expect(try await reopened.get("drafts", id: "widget") == Data("widget's draft".utf8), "round \(round)")
            await later.close()
        }
    }

    @Test func damagedEnvelopesAreTypedErrorsNeverGarbage() async throws {
        let a = try await fixture.vaults.open(alice)
        try await a.put("notes", id: "n1", Data(repeating: 0x41, count: 100))
        let file = fixture.data.appendingPathComponent("vaults/\(a.namespace)/include.sqlite")
        await fixture.vaults.close()
        let raw = try DatabasePool(path: file.path)
        let envelope = try await raw.closedEnvelope(file, id: "n1")
        var variants: [(String, Data)] = [
            ("truncated", envelope.prefix(20)), ("empty", Data()), ("tag cut", envelope.dropLast(1)),
        ]
        var version = envelope
        version[0] = 3
        variants.append(("unknown version", version))
        // The version is bound into the associated data: relabelled as the older format, it does not open.
        var older = envelope
        older[0] = 1
        variants.append(("relabelled version 1", older))
        for index in [0, 1, 17, 29, 60, envelope.count - 1] {
            var flipped = envelope
            flipped[index] ^= 0x04
            variants.append(("bit flipped at \(index)", flipped))
        }
        for (name, bytes) in variants {
            try await raw.write { db in
                try db.execute(#"UPDATE "records.notes" SET value = ? WHERE id = 'n1'"#, arguments: [bytes])
            }
            await fixture.vaults.close()
            let vault = try await fixture.vaults.open(alice)
            do {
                let opened = try await vault.get("notes", id: "n1")
                Issue.record("\(name): opened as \(String(describing: opened))")
            } catch let error as VaultError { #expect(error.code == .cannotOpen, "\(name)") }
        }
        await raw.close()
    }

    @Test func aRecordSealedUnderAnotherKeyOfTheSameAccountFailsToOpen() async throws {
        // The wrong key: seal under one key, then replace the dataset's key id with another key's.
        let a = try await fixture.vaults.open(alice)
        try await a.put("notes", id: "n1", Data("x".utf8))
        try await a.put("drafts", id: "d1", Data("y".utf8))
        let file = fixture.data.appendingPathComponent("vaults/\(a.namespace)/include.sqlite")
        await fixture.vaults.close()
        let raw = try DatabasePool(path: file.path)
        let draft = try await raw.closedEnvelope(file, id: "d1", table: "records.drafts")
        try await raw.write { db in
            try db.execute(#"UPDATE "records.notes" SET value = ? WHERE id = 'n1'"#, arguments: [draft])
        }
        await raw.close()
        let a2 = try await fixture.vaults.open(alice)
        do {
            _ = try await a2.get("notes", id: "n1")
            Issue.record("a record sealed under the drafts key opened as a note")
        } catch let error as VaultError { #expect(error.code == .cannotOpen) }
    }

    // MARK: - Misplaced data

    @Test func datasetsThatAreNotAccountBoundOrUndeclaredAreRefused() async throws {
        let a = try await fixture.vaults.open(alice)
        do {
            try await a.put("catalog", id: "x", Data())
            Issue.record("a public, shared dataset was stored in an account's vault")
        } catch let error as VaultError { #expect(error.code == .misplaced) }
        do {
            try await a.put("undeclared", id: "x", Data())
            Issue.record("an undeclared dataset was stored")
        } catch let error as InventoryError { #expect(error.code == .undeclared) }
        for name in ["../escape", ".hidden", "a/b", ""] {
            do {
                try await a.writeFile("media", named: name, contents: Data())
                Issue.record("file name \(name) accepted")
            } catch let error as VaultError { #expect(error.code == .misplaced) }
        }
    }

    /// MOB-DATA-006: a shared cache is reused only for data without account-bound fields *and* of a
    /// classification that allows it: an `internal` or `personal` dataset of no account is refused too (found
    /// in an outside audit: the fixture had none, so a check of `isAccountBound` alone passed).
    @Test func aSharedCacheTakesOnlyPublicDataEvenOfNoAccount() async throws {
        func cache(_ name: String, _ classification: Dataset.Classification) -> Dataset {
            Dataset(
                name: name, purpose: "what this device keeps", kind: .cache, classification: classification,
                isAccountBound: false, retention: classification >= .personal ? .untilEvent : nil, backup: .exclude,
                deletionTriggers: [.appVersionChange], role: .cache(rebuiltFrom: "the device"))
        }
        let vaults = try Vaults(
            dataDirectory: fixture.root.url("shared-only"), keyStore: fixture.keyStore,
            inventory: try Inventory([
                cache("catalog", .public), cache("diagnostics", .internal), cache("nearby-contacts", .personal),
            ]))
        try await vaults.shared.put("catalog", id: "p1", Data("public product".utf8))
        for dataset in ["diagnostics", "nearby-contacts"] {
            do {
                try await vaults.shared.put(dataset, id: "x", Data("not public".utf8))
                Issue.record("\(dataset) was kept in the shared cache")
            } catch let error as VaultError { #expect(error.code == .misplaced, "\(dataset)") }
        }
        await vaults.shared.close()
    }

    @Test func onlyPublicDataOfNoAccountIsKeptOutsideAVault() async throws {
        let shared = fixture.vaults.shared
        try await shared.put("catalog", id: "p1", Data("public product".utf8))
        #expect(try await shared.get("catalog", id: "p1") == Data("public product".utf8))
        // Every account-bound dataset, even an `internal` cache, is refused: there is no "no account" namespace.
        for dataset in ["notes", "drafts", "session-token", "media", "feed-cache"] {
            do {
                try await shared.put(dataset, id: "x", Data("leak".utf8))
                Issue.record("\(dataset) was stored outside the account's vault")
            } catch let error as VaultError { #expect(error.code == .misplaced) }
        }
        // The shared cache survives account switches and is the same for every account; a reset empties it.
        let a = try await fixture.vaults.open(alice)
        try await a.put("notes", id: "n1", Data("alice".utf8))
        _ = try await fixture.vaults.switchAccount(to: bob)
        #expect(try await shared.get("catalog", id: "p1") != nil)
        try await shared.reset("catalog")
        #expect(try await shared.get("catalog", id: "p1") == nil)
        // No account's bytes are in the shared files.
        await shared.close()
        #expect(
            VaultFixture.files(under: fixture.data.appendingPathComponent("shared"), containing: Data("alice".utf8))
                .isEmpty)
        let plan = try fixture.vaults.backupPlan()
        #expect(plan.items.first { $0.path == "shared/exclude.sqlite" }?.disposition == .recreated)
    }

    @Test func placeholderAccountIdsCannotNameAVault() {
        for placeholder in ["", " ", "null", "anonymous", "00000000-0000-0000-0000-000000000000"] {
            #expect(throws: AccountIDError.self) { try AccountID(placeholder) }
        }
    }

    // MARK: - Recovery (review of KeelStore)

    /// MOB-DATA-003/001: an update that changes a dataset's backup policy (or classification) must not make
    /// its records look empty, nor let a logout judged by the old declaration delete what should stay: opening
    /// the vault moves them to the new declaration, and back again.
    @Test func aDatasetWhoseDeclarationChangedIsMovedNotReadAsEmptyOrPurged() async throws {
        let draft = Data("half a poem".utf8)
        let vault = try await fixture.vaults.open(alice)
        try await vault.put("drafts", id: "d1", draft)
        await fixture.vaults.close()
        // The next version keeps drafts on this device only.
        let updated = try Vaults(
            dataDirectory: fixture.data, keyStore: fixture.keyStore,
            inventory: try VaultInventory.inventory(changing: "drafts") { $0.backup = .deviceOnly })
        let reopened = try await updated.open(alice)
        #expect(try await reopened.get("drafts", id: "d1") == draft)
        try await reopened.put("drafts", id: "d2", draft)
        try await reopened.put("session-token", id: "t", Data("token".utf8))
        _ = try await updated.logout()  // drafts are kept across logout
        await updated.close()
        // An older build's declaration again: moved back, all there.
        let original = try Vaults(
            dataDirectory: fixture.data, keyStore: fixture.keyStore, inventory: VaultFixture.inventory)
        let restored = try await original.open(alice)
        #expect(try await restored.get("drafts", id: "d1") == draft)
        #expect(try await restored.get("drafts", id: "d2") == draft)
        await original.close()
    }

    /// MOB-DATA-003: a first write that rolls back (a validation error, a full disk at commit) takes its
    /// `CREATE TABLE` with it; the dataset must stay usable, not fail with "no such table" until reopened.
    @Test func aFirstWriteThatRollsBackLeavesTheDatasetUsable() async throws {
        struct Refused: Error {}
        let vault = try await fixture.vaults.open(alice)
        await #expect(throws: Refused.self) {
            try await vault.write("notes") { records in
                try records.put("a", Data("x".utf8))
                throw Refused()
            }
        }
        #expect(try await vault.get("notes", id: "a") == nil)
        try await vault.put("notes", id: "b", Data("y".utf8))
        #expect(try await vault.get("notes", id: "b") == Data("y".utf8))
    }

    /// MOB-DATA-003: only a cache may be reset, in the shared store too.
    @Test func theSharedStoreRefusesToResetASourceOfTruth() async throws {
        let prefs = Dataset(
            name: "prefs", purpose: "Local settings", kind: .keyValue, classification: .public, isAccountBound: false,
            retention: nil, backup: .exclude, deletionTriggers: [], role: .sourceOfTruth)
        let catalog = try VaultFixture.inventory.dataset("catalog")
        let vaults = try Vaults(
            dataDirectory: fixture.root.url("shared-data"), keyStore: fixture.keyStore,
            inventory: try Inventory([prefs, catalog]))
        try await vaults.shared.put("prefs", id: "theme", Data("dark".utf8))
        await #expect {
            try await vaults.shared.reset("prefs")
        } throws: { error in
            (error as? InventoryError)?.code == .resetRefused
        }
        #expect(try await vaults.shared.get("prefs", id: "theme") == Data("dark".utf8))
        try await vaults.shared.put("catalog", id: "p1", Data("{}".utf8))
        try await vaults.shared.reset("catalog")
        #expect(try await vaults.shared.get("catalog", id: "p1") == nil)
    }
}

/// A one-shot signal between a task and the test.
final class AsyncGate: @unchecked Sendable {
    // @unchecked Sendable: `storage` is only touched under `lock`.
    private let lock = NSLock()
    private var storage: (open: Bool, waiters: [CheckedContinuation<Void, Never>]) = (false, [])

    private func withLock<R>(_ body: (inout (open: Bool, waiters: [CheckedContinuation<Void, Never>])) -> R) -> R {
        lock.lock()
        defer { lock.unlock() }
        return body(&storage)
    }

    func open() {
        let waiters = withLock { state -> [CheckedContinuation<Void, Never>] in
            state.open = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    func wait() async {
        await withCheckedContinuation { continuation in
            let resumeNow = withLock { state -> Bool in
                if state.open { return true }
                state.waiters.append(continuation)
                return false
            }
            if resumeNow { continuation.resume() }
        }
    }
}

extension DatabasePool {
    /// The stored envelope of record `id` (read with SQL, bypassing the vault).
    func closedEnvelope(_ file: URL, id: String, table: String = "records.notes") async throws -> Data {
        try await read { db in
            try #require(try db.scalar(Data.self, "SELECT value FROM \"\(table)\" WHERE id = ?", arguments: [id]))
        }
    }
}
