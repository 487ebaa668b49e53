import Foundation
import KeelCore
import KeelStore
import KeelTesting
import Testing

/// `keel vault inspect`, run as the built binary on vaults written through the library.
@Suite(.timeLimit(.minutes(3))) struct VaultCommandTests {
    let directory: TemporaryDirectory
    init() throws { directory = try TemporaryDirectory(prefix: "keel-vault-cli") }

    var data: URL { directory.url("data") }
    var keys: URL { directory.url("keys") }

    static let inventory: Inventory = {
        do {
            return try Inventory([
                Dataset(
                    name: "notes", purpose: "The user's notes", classification: .personal, isAccountBound: true,
                    retention: .untilEvent, backup: .include, deletionTriggers: [.logout, .accountDeletion],
                    role: .sourceOfTruth),
                Dataset(
                    name: "drafts", purpose: "Unsynced drafts", kind: .draft, classification: .personal,
                    isAccountBound: true, retention: .untilEvent, backup: .include,
                    deletionTriggers: [.accountDeletion], role: .sourceOfTruth),
                Dataset(
                    name: "session-token", purpose: "Signs API calls", kind: .keyValue, classification: .credential,
                    isAccountBound: true, retention: .untilEvent, backup: .deviceOnly,
                    deletionTriggers: [.logout, .accountDeletion, .accessRevocation], role: .sourceOfTruth),
            ])
        } catch { preconditionFailure("the CLI test inventory is refused: \(error)") }
    }()

    /// A vault of `account` with a note, a draft, a token and a permission granted on this device.
    func fill(_ account: String, schema: VaultSchema = VaultSchema()) async throws {
        let store = try FileKeyStore(directory: keys, dataDirectories: [data])
        let vaults = try Vaults(dataDirectory: data, keyStore: store, inventory: Self.inventory, schema: schema)
        let vault = try await vaults.open(try AccountID(account))
        try await vault.put("notes", id: "n1", Data("note".utf8))
        try await vault.put("drafts", id: "d1", Data("draft".utf8))
        try await vault.put("session-token", id: "t", Data("token".utf8))
        try await vault.recordGrantedPermission("notifications")
        await vaults.close()
    }

    func inspect(_ extra: [String] = [], data: String = "data", keys: String = "keys") async throws -> (
        ChildProcess.Termination, String, String
    ) {
        try await runKeel(["vault", "inspect", "--data", data, "--keys", keys] + extra, in: directory.url)
    }

    /// Every file under the test directory with its bytes (nothing may be created, changed or deleted).
    func snapshot() -> [String: Data] {
        var files: [String: Data] = [:]
        guard let enumerator = FileManager.default.enumerator(atPath: directory.url.path) else { return files }
        for case let relative as String in enumerator {
            var isDirectory: ObjCBool = false
            let path = directory.url.path + "/" + relative
            if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue {
                files[relative] = FileManager.default.contents(atPath: path)
            } else {
                files[relative + "/"] = Data()
            }
        }
        return files
    }

    struct Output: Decodable {
        struct Vault: Decodable {
            struct DatasetState: Decodable {
                let name: String
                let readable: Bool
                let reason: String?
            }
            let namespace: String
            let state: String
            let datasets: [DatasetState]
            let recovery: [String]
        }
        let vaults: [Vault]
    }

    @Test func aNormalVaultExitsZeroAndAFreshInstallToo() async throws {
        try FileManager.default.createDirectory(at: data, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: keys, withIntermediateDirectories: true)
        let (fresh, freshOutput, _) = try await inspect()
        #expect(fresh == .exited(0))
        #expect(freshOutput.contains("fresh install"))
        let (freshJSON, json, _) = try await inspect(["--format", "json"])
        #expect(freshJSON == .exited(0))
        #expect(try JSONDecoder().decode(Output.self, from: Data(json.utf8)).vaults.isEmpty)

        try await fill("alice@example.com")
        let (status, output, errors) = try await inspect()
        #expect(status == .exited(0), "\(errors)")
        let namespace = VaultNamespace(try AccountID("alice@example.com")).rawValue
        #expect(output == "\(namespace)  normal\n")
    }

    /// Whether a directory can be made unlistable for the inspecting process: as a normal user, or as root
    /// by running the inspection as `nobody` (root itself ignores permissions).
    static let canTestPermissions = getuid() != 0 || FileManager.default.isExecutableFile(atPath: "/usr/sbin/runuser")

    /// Found in an outside audit: a key directory the inspection may not list reported every vault damaged,
    /// with "restore from backup" as the way out. It is bad input (exit 2), saying which directory.
    @Test(.enabled(if: canTestPermissions))
    func aKeyDirectoryThatCannotBeListedIsBadInputNotADamagedVault() async throws {
        try await fill("alice@example.com")
        for path in [directory.url.path, data.path, data.appendingPathComponent("vaults").path] {
            try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: path)
        }
        try FileManager.default.setAttributes(
            [.posixPermissions: getuid() == 0 ? 0o700 : 0o000], ofItemAtPath: keys.path)
        defer { try? FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: keys.path) }
        let keel = ChildProcess.productsDirectory.appendingPathComponent("keel").path
        let arguments = ["vault", "inspect", "--data", data.path, "--keys", keys.path]
        let child =
            getuid() != 0
            ? try ChildProcess.launch(executable: keel, arguments: arguments)
            : try ChildProcess.launch(
                executable: "/usr/sbin/runuser", arguments: ["-u", "nobody", "--", keel] + arguments)
        child.closeInput()
        #expect(try await child.waitForExit(timeout: .seconds(60)) == .exited(2))
        #expect(!child.output(of: .standardOutput).contains("damaged"))
        let errors = child.output(of: .standardError)
        #expect(errors.contains("--keys") && errors.contains("cannot be listed"), "\(errors)")
    }

    @Test(.enabled(if: canTestPermissions))
    func aVaultsDirectoryThatCannotBeListedIsAnErrorNeverAFreshInstall() async throws {
        try await fill("alice@example.com")
        let vaultsDirectory = data.appendingPathComponent("vaults").path
        for path in [directory.url.path, data.path, keys.path] {
            try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: path)
        }
        // Root's 0700 keeps nobody out; for a normal user, 0000 keeps the owner out too.
        try FileManager.default.setAttributes(
            [.posixPermissions: getuid() == 0 ? 0o700 : 0o000], ofItemAtPath: vaultsDirectory)
        defer { try? FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: vaultsDirectory) }
        let keel = ChildProcess.productsDirectory.appendingPathComponent("keel").path
        let arguments = ["vault", "inspect", "--data", data.path, "--keys", keys.path]
        for format in [[], ["--format", "json"]] {
            let child =
                getuid() != 0
                ? try ChildProcess.launch(executable: keel, arguments: arguments + format)
                : try ChildProcess.launch(
                    executable: "/usr/sbin/runuser", arguments: ["-u", "nobody", "--", keel] + arguments + format)
            child.closeInput()
            let status = try await child.waitForExit(timeout: .seconds(60))
            let output = child.output(of: .standardOutput)
            #expect(status == .exited(2), "\(output)")  // bad input: the directory cannot be read
            #expect(!output.contains("fresh install") && !output.contains(#""vaults":[]"#), "\(output)")
            #expect(child.output(of: .standardError).contains("cannot list"), "\(child.output(of: .standardError))")
        }
    }

    @Test func aRestoreOntoANewDeviceExitsOneWithTheStateAndRecoveryAndChangesNothing() async throws {
        try await fill("alice@example.com")
        try await fill("bob@example.com")
        // The new device: what the backup plan includes, and an empty key store.
        let plan = try BackupPlan.compute(dataDirectory: data, inventory: Self.inventory)
        try plan.copyIncluded(into: directory.url("restored"))
        try FileManager.default.createDirectory(at: directory.url("new-keys"), withIntermediateDirectories: true)

        let before = snapshot()
        let (status, output, errors) = try await inspect(["--format", "json"], data: "restored", keys: "new-keys")
        #expect(status == .exited(1), "\(errors)")
        let report = try JSONDecoder().decode(Output.self, from: Data(output.utf8))
        #expect(report.vaults.count == 2)
        for vault in report.vaults {
            #expect(vault.state == "restoredWithoutKeys")
            #expect(vault.recovery == ["keepCiphertext", "redownloadSyncedData", "signInAgain", "requestPermissions"])
            #expect(vault.datasets.map(\.name) == ["drafts", "notes", "session-token"])
            #expect(vault.datasets.map(\.readable) == [false, false, false])
            #expect(vault.datasets.map(\.reason) == ["keyUnavailable", "keyUnavailable", "missing"])
        }
        // "reason" is present (null) for a readable dataset, too: the shape is fixed.
        let (_, normal, _) = try await inspect(["--format", "json"])
        #expect(normal.contains("\"reason\" : null"))

        let (textStatus, text, _) = try await inspect(data: "restored", keys: "new-keys")
        #expect(textStatus == .exited(1))
        let lines = text.split(separator: "\n")
        #expect(lines.count == 2)
        #expect(
            lines.allSatisfy {
                $0.contains("  restoredWithoutKeys  recovery: keepCiphertext, redownloadSyncedData, signInAgain")
                    && $0.contains(
                        "unreadable: drafts (keyUnavailable), notes (keyUnavailable), session-token (missing)")
            })
        #expect(snapshot() == before)
    }

    @Test func schemasAreComparedWithTheAppsExportedSchema() async throws {
        var written = VaultSchema()
        written.registerMigration("v1") { _ in }
        written.registerMigration("v2") { _ in }
        try await fill("alice@example.com", schema: written)

        var older = VaultSchema()
        older.registerMigration("v1") { _ in }
        try older.export().write(to: directory.url("older.json"))
        let (tooNew, tooNewOutput, _) = try await inspect(["--schema", "older.json"])
        #expect(tooNew == .exited(1))
        #expect(tooNewOutput.contains("  schemaTooNew  recovery: updateApp, keepData"))

        var newer = VaultSchema(retired: ["v1", "v2"])
        newer.registerMigration("v3") { _ in }
        try newer.export().write(to: directory.url("newer.json"))
        let (migratable, migratableOutput, _) = try await inspect(["--schema", "newer.json"])
        #expect(migratable == .exited(0))
        #expect(migratableOutput.contains("  normal  pending migrations: v3"))

        var tooOld = VaultSchema(retired: ["v0"])
        tooOld.registerMigration("v1") { _ in }
        tooOld.registerMigration("v2") { _ in }
        try tooOld.export().write(to: directory.url("too-old.json"))
        let (old, oldOutput, _) = try await inspect(["--schema", "too-old.json"])
        #expect(old == .exited(1))
        #expect(oldOutput.contains("  schemaTooOld  recovery: keepData, redownloadSyncedData"))
    }

    @Test func badInputExitsTwo() async throws {
        try await fill("alice@example.com")
        let (missing, _, missingError) = try await inspect(data: "nowhere")
        #expect(missing == .exited(2))
        #expect(missingError.contains("no such directory"))
        try Data("x".utf8).write(to: directory.url("a-file"))
        let (file, _, fileError) = try await inspect(keys: "a-file")
        #expect(file == .exited(2))
        #expect(fileError.contains("not a directory"))
        // The key store inside the data directory, and a `vaults` that is a file.
        let (inside, _, _) = try await inspect(keys: "data/vaults")
        #expect(inside == .exited(2))
        try FileManager.default.createDirectory(at: directory.url("other"), withIntermediateDirectories: true)
        try Data("x".utf8).write(to: directory.url("other/vaults"))
        let (vaultsFile, _, _) = try await inspect(data: "other")
        #expect(vaultsFile == .exited(2))
        let (usage, _, _) = try await runKeel(["vault", "inspect", "--data", "data"], in: directory.url)
        #expect(usage == .exited(2))
        try Data("{not json".utf8).write(to: directory.url("schema.json"))
        let (badSchema, _, _) = try await inspect(["--schema", "schema.json"])
        #expect(badSchema == .exited(2))
        try Data(#"[{"name": "notes", "name": "other"}]"#.utf8).write(to: directory.url("repeated.json"))
        let (repeated, _, repeatedError) = try await inspect(["--inventory", "repeated.json"])
        #expect(repeated == .exited(2))
        #expect(repeatedError.contains(#"duplicate member "name""#), "\(repeatedError)")
    }

    /// Found in an outside audit: an exported schema with a member it does not have was read as if it were
    /// not there — a misspelt `retired` reads as none, and vaults are judged against another schema.
    @Test func aSchemaWithAnUnknownMemberIsRefusedNamingIt() async throws {
        try await fill("alice@example.com")
        try Data(#"{"migrations": [], "retierd": ["v1"]}"#.utf8).write(to: directory.url("schema.json"))
        let (status, _, errors) = try await inspect(["--schema", "schema.json"])
        #expect(status == .exited(2))
        #expect(errors.contains("unknown member \"retierd\""), "\(errors)")
        try Data(#"{"migrations": []}"#.utf8).write(to: directory.url("schema.json"))
        #expect(try await inspect(["--schema", "schema.json"]).0 == .exited(0))
    }

    @Test func aDamagedVaultExitsOne() async throws {
        try await fill("alice@example.com")
        let namespace = VaultNamespace(try AccountID("alice@example.com")).rawValue
        try Data("not sqlite".utf8).write(to: data.appendingPathComponent("vaults/\(namespace)/include.sqlite"))
        let (status, output, _) = try await inspect()
        #expect(status == .exited(1))
        #expect(output.contains("  damaged  recovery: keepData, restoreFromBackup"))
    }

    /// Found in an outside audit: a FIFO in place of the manifest, a key file or the device identity made the
    /// inspection wait forever in open(2) for a writer. Each is a file that cannot be read, reported at once:
    /// a vault without its manifest or a key is damaged; without the device's identity, the permissions granted
    /// on this device cannot be told from another device's, so they are to be asked for again. Nothing is
    /// touched.
    @Test(arguments: ["manifest", "key", "device identity"])
    func aFIFOInPlaceOfAFileIsReportedNeverWaitedOn(_ which: String) async throws {
        try await fill("alice@example.com")
        let namespace = VaultNamespace(try AccountID("alice@example.com")).rawValue
        let path: String
        switch which {
        case "manifest": path = data.appendingPathComponent("vaults/\(namespace)/vault.json").path
        case "key":
            let file = try #require(
                try FileManager.default.contentsOfDirectory(atPath: keys.path).first { $0.hasSuffix(".key") })
            path = keys.appendingPathComponent(file).path
        default: path = keys.appendingPathComponent("device-identity").path
        }
        try? FileManager.default.removeItem(atPath: path)
        #expect(mkfifo(path, 0o600) == 0)
        let before = snapshot()
        let (status, output, errors) = try await inspect()
        if which == "device identity" {
            #expect(status == .exited(1), "\(output)\(errors)")  // not normal: the user is asked again
            #expect(output.contains("permissionsToRequest  recovery: requestPermissions"), "\(output)\(errors)")
        } else {
            #expect(status == .exited(1), "\(output)\(errors)")
            #expect(output.contains("  damaged  recovery: keepData, restoreFromBackup"), "\(output)\(errors)")
        }
        #expect(snapshot() == before)
    }
}
