import Foundation
import KeelCore

/// `vault.json`: what a vault holds, written atomically whenever that changes. It travels with the
/// vault's backed-up files, so a restore inspector on another device (or `keel vault inspect`, which has
/// no app code) knows which datasets existed, how they were declared, which keys sealed them and which
/// permissions were granted on which device. It holds no secret and no raw account id.
struct VaultManifest: Codable, Equatable {
    /// The newest format this app reads. Format 2 is written only while a dataset is being moved to a
    /// changed declaration (``Entry/moving``): an app that knows only format 1 would read its records by the
    /// old declaration, so it leaves such a vault alone (`formatTooNew`) until the move is done.
    static let currentFormat = 2
    /// The format of a manifest without a move under way.
    static let baseFormat = 1
    static let fileName = "vault.json"

    /// The vault format version (``currentFormat`` when this app wrote it).
    var format: Int
    /// The namespace, repeated so that a directory renamed or copied elsewhere is noticed.
    var namespace: String
    /// The random marker shared with this vault's keys (hex); see ``StoredKey/entanglement``.
    var entanglement: String
    /// Every dataset the vault has held data of, by name.
    var datasets: [String: Entry]
    /// Permissions and enrollments granted for this account, each with the device that granted it.
    var permissions: [Grant]?
    /// A deletion that started and has not finished (a crash or an unavailable key store interrupted it):
    /// finished before the vault is used again.
    var pendingPurge: PendingPurge?
    /// The ``VaultSchema`` migrations applied, in the order they ran (nil in a vault that never had one).
    var migrations: [String]?

    struct Entry: Codable, Equatable {
        /// The declaration when the dataset was last opened (for tools and for the restore inspector).
        var declaration: Dataset
        /// Whether its records and files are sealed.
        var sealed: Bool
        /// The key new records are sealed with (nil for plain datasets, or before the first write).
        var keyID: KeyID?
        /// Earlier keys whose ciphertext may remain (a key that was unavailable and replaced).
        var retiredKeyIDs: [KeyID]
        /// Whether records were ever written (a records table exists in its database).
        var hasRecords: Bool
        /// Whether files were ever written.
        var hasFiles: Bool
        /// Whether a transaction that created its records table is known to have committed (nil: not known —
        /// written by an older Keel, or no such commit yet). ``hasRecords`` is recorded before the first write,
        /// which may roll back and take its table with it; once this is true, a records table that is missing
        /// was lost (a database restored from an older copy, its WAL gone), and is reported damaged instead of
        /// read as empty and created again. An older Keel ignores it, and drops it when it rewrites the manifest.
        var recordsCommitted: Bool? = nil
        /// Where ``Vault/moveToCurrentDeclaration(_:)`` is moving it, while it does (recorded before any data
        /// is touched). Within one database file the converted copy is in the staging table
        /// (``VaultFiles/stagingTable(_:)``) until it replaces the records table.
        var moving: MoveTarget? = nil

        var allKeyIDs: [KeyID] { (keyID.map { [$0] } ?? []) + retiredKeyIDs }

        /// Whether its data sits elsewhere, or otherwise sealed, than `declaration` says (or is being moved):
        /// an app update changed the declaration, and the data has not been moved to it yet.
        func isWritten(otherwiseThan declaration: Dataset) -> Bool {
            moving != nil || declaration.backup != self.declaration.backup
                || (declaration.classification >= .personal) != sealed
        }
    }

    /// Where a dataset's data goes: the database file of a backup policy, sealed or plain.
    struct MoveTarget: Codable, Equatable {
        var backup: Dataset.BackupPolicy
        var sealed: Bool
    }

    struct Grant: Codable, Equatable {
        /// The permission or enrollment (`notifications`, `biometricUnlock`, ...).
        var name: String
        /// The key store's device identity when it was granted.
        var deviceIdentity: String
    }

    /// The granted permissions not granted on the device `identity` (all of them when it has none).
    func permissionsToRequest(on identity: String?) -> [String] {
        (permissions ?? []).filter { $0.deviceIdentity != identity }.map(\.name)
    }

    struct PendingPurge: Codable, Equatable {
        var trigger: Dataset.DeletionTrigger
        var datasets: [String]
    }

    static func read(directory: String) throws(VaultError) -> VaultManifest? {
        let path = directory + "/" + fileName
        let bytes: [UInt8]
        do { bytes = try DurableFiles.read(path, limit: 16 << 20) } catch {
            if error.isNotFound { return nil }
            throw VaultError(code: .damaged, message: "vault manifest \(path) cannot be read: \(error.description)")
        }
        struct Version: Decodable { let format: Int }
        guard let version = try? JSONDecoder().decode(Version.self, from: Data(bytes)) else {
            throw VaultError(code: .damaged, message: "vault manifest \(path) is not a vault manifest")
        }
        guard version.format <= currentFormat else {
            throw VaultError(
                code: .formatTooNew,
                message: "vault manifest \(path) has format \(version.format); this app knows up to \(currentFormat)")
        }
        let manifest: VaultManifest
        do { manifest = try JSONDecoder().decode(VaultManifest.self, from: Data(bytes)) } catch {
            // A dataset declaration with a value or a member this app does not know (a new kind, a new
            // deletion trigger) is what a newer app writes within the same format: update the app, keep the
            // data — not "damaged", whose way out is a backup (found in an outside audit).
            if case .dataCorrupted(let context) = error as? DecodingError,
                context.codingPath.first?.stringValue == "datasets",
                context.codingPath.contains(where: { $0.stringValue == "declaration" })
            {
                throw VaultError(
                    code: .formatTooNew,
                    message:
                        "vault manifest \(path) declares a dataset in a way this app does not know (written by a newer app): \(context.debugDescription)"
                )
            }
            throw VaultError(code: .damaged, message: "vault manifest \(path) is damaged: \(error)")
        }
        // Dataset names become paths (a dataset's files directory, deleted by a purge): a manifest that came
        // back from a backup, or was altered, must not name `../another-namespace`.
        let names = Array(manifest.datasets.keys) + (manifest.pendingPurge?.datasets ?? [])
        if let unsafe = names.first(where: { !VaultFiles.isSafeComponent($0) }) {
            throw VaultError(
                code: .damaged,
                message: "vault manifest \(path) names a dataset \(unsafe.debugDescription) that is not a safe name")
        }
        return manifest
    }

    /// Runs `body` on the manifest in `directory` as it is on disk (or `fallback` when there is none yet),
    /// under an exclusive lock on the directory, and writes it when `body` changed it. Every Keel process
    /// changes a manifest this way, so none writes back an older copy over another's change. The lock is
    /// waited for at most 10 s (a holder in a suspended app extension must not hang this one).
    static func update<R>(
        directory: String, namespace: String, fallback: VaultManifest?,
        _ body: (inout VaultManifest) throws(VaultError) -> R
    ) throws(VaultError) -> (VaultManifest, R) {
        let lock: ExclusiveFileLock
        do { lock = try ExclusiveFileLock(directory, .directory, waitingUpTo: .seconds(10)) } catch {
            switch error {
            case .held:
                throw VaultError(
                    code: .ioError, namespace: namespace,
                    message: "another process held the vault's manifest for 10 s; nothing was changed")
            case .failed(let code):
                throw VaultError(
                    code: code == ENOENT ? .vaultClosed : .ioError, namespace: namespace,
                    message: "cannot lock \(directory) to change its manifest: \(String(cString: strerror(code)))")
            }
        }
        defer { lock.release() }
        guard var manifest = try read(directory: directory) ?? fallback else {
            throw VaultError(code: .damaged, namespace: namespace, message: "\(directory) has no vault manifest")
        }
        let before = manifest
        let result = try body(&manifest)
        if manifest != before { try manifest.write(directory: directory) }
        return (manifest, result)
    }

    func write(directory: String) throws(VaultError) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        var written = self
        written.format = datasets.values.contains { $0.moving != nil } ? Self.currentFormat : Self.baseFormat
        let data: Data
        do { data = try encoder.encode(written) } catch {
            throw VaultError(code: .ioError, message: "vault manifest cannot be encoded: \(error)")
        }
        do {
            try DurableFiles.write([UInt8](data), to: directory + "/" + Self.fileName, mode: 0o600, exclusive: false)
        } catch {
            throw VaultError(code: .ioError, namespace: namespace, message: error.description, underlying: nil)
        }
    }
}

/// The database file of each backup policy inside a vault: datasets that share a policy share a file
/// (and can share a transaction); a platform backup copies whole files, so policies never mix in one.
enum VaultFiles {
    static func database(_ policy: Dataset.BackupPolicy) -> String { "\(policy.rawValue).sqlite" }
    /// Names of vault directories being deleted (never a namespace: those are 32 hex digits).
    static let tombstonePrefix = ".deleting-"
    static let filesDirectory = "files"
    /// The data directory (followed when it is a symlink to a directory: the path an app or a person names
    /// may lead through one) and its `vaults` directory, which is never followed (a platform backup would not
    /// follow it either).
    static func roots(of dataDirectory: URL) -> (data: String, vaults: String) {
        let data = DurableFiles.followingLinkToDirectory(dataDirectory.path)
        return (data, data + "/vaults")
    }
    /// The suffixes SQLite adds beside a database file.
    static let databaseCompanions = ["", "-wal", "-shm", "-journal"]

    /// The vault namespaces under `root` (the `vaults` directory), sorted; other names are ignored. None
    /// when `root` does not exist (a fresh install).
    ///
    /// - Throws: ``VaultError`` `ioError` when `root` exists but cannot be listed (permissions, I/O): that is
    ///   never "no vaults", which an inspection would report as a fresh install and a backup plan as nothing
    ///   to back up.
    static func namespaces(under root: String) throws(VaultError) -> [VaultNamespace] {
        guard DurableFiles.kind(root) != nil else { return [] }
        do {
            return try FileManager.default.contentsOfDirectory(atPath: root).compactMap(VaultNamespace.init(rawValue:))
                .sorted()
        } catch {
            throw VaultError(
                code: .ioError, message: "cannot list \(root): \(error.localizedDescription); nothing was changed")
        }
    }

    /// Whether `directory` holds anything but temporary files of an interrupted write (a vault directory
    /// without a manifest that holds data is damaged; an empty one is new). A directory that exists but
    /// cannot be listed is an error, never "empty": a new vault would delete the account's keys.
    static func holdsData(_ directory: String, namespace: String) throws(VaultError) -> Bool {
        guard DurableFiles.kind(directory) != nil else { return false }
        do {
            return try FileManager.default.contentsOfDirectory(atPath: directory).contains { !$0.hasPrefix(".tmp-") }
        } catch {
            throw VaultError(
                code: .ioError, namespace: namespace,
                message: "cannot list \(directory): \(error.localizedDescription); nothing was changed")
        }
    }

    /// Opens the database of `policy` in `directory` and keeps its files (and SQLite's companions) out of
    /// platform backups when the policy asks: the one way vaults and the shared cache open their databases.
    static func openDatabase(in directory: String, policy: Dataset.BackupPolicy, namespace: String? = nil)
        throws(VaultError) -> DatabasePool
    {
        let file = directory + "/" + database(policy)
        // Readable by its owner only, as the manifest and the keys are.
        DurableFiles.restrictDatabaseToOwner(file)
        let pool: DatabasePool
        do throws(DatabaseError) {
            // Secure delete whatever SQLite's build defaults to: a record replaced or deleted (a retention
            // sweep, a logout's drop) must not leave its earlier bytes in free pages, still under a live key.
            pool = try DatabasePool(
                path: file, configuration: DatabaseConfiguration(synchronous: Vaults.synchronous, secureDelete: true))
        } catch {
            throw VaultError(error, namespace: namespace, message: "\(file): \(error.description)")
        }
        for companion in databaseCompanions where DurableFiles.kind(file + companion) == .file {
            try BackupExclusion.apply(to: file + companion, policy: policy)
        }
        return pool
    }

    /// The records table of `dataset`.
    static func table(_ dataset: String) -> String { "records." + dataset }
    /// The table a dataset's records are converted into when its sealing changes (never a records table:
    /// those all start with `records.`).
    static func stagingTable(_ dataset: String) -> String { "moving." + dataset }
    /// The lock file a move to a changed declaration (and a purge) holds in a vault directory: one process at a
    /// time moves or deletes a vault's data.
    static let moveLock = ".move.lock"

    /// Whether `name` may be used as a path component: 1…128 characters of `A-Z a-z 0-9 . _ -`, not
    /// starting with a dot.
    static func isSafeComponent(_ name: String) -> Bool {
        guard (1...128).contains(name.utf8.count), name.utf8.first != 0x2E else { return false }
        return name.utf8.allSatisfy { byte in
            (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
                || byte == 0x2E || byte == 0x5F || byte == 0x2D
        }
    }
}
