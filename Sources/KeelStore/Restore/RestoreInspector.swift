import CSQLite
public import Foundation
import KeelCore
import KeelCrypto

/// Reports, per vault, whether its data can be read on this device, before anything reads it
/// (MOB-DATA-007): ciphertext whose key did not come along, a schema this app cannot read, credentials and
/// permissions bound to another device, missing or damaged files. It never reports "empty and fine" when
/// user data exists but cannot be read.
///
/// ```swift
/// let report = try RestoreInspector(dataDirectory: dir, keyStore: keys, inventory: inventory,
///                                   schema: schema.summary).inspect()
/// for vault in report.vaults where vault.state != .normal { showRecovery(vault.recovery) }
/// ```
///
/// It only reads: no file, key or database is created, changed or deleted (not even SQLite's `-shm`), so
/// it is safe on a support copy of a device's data and in `keel vault inspect`. It reads manifests, key
/// store entries, the first bytes of database files and, where no write-ahead log lies beside one, its list of
/// tables (opened immutable: SQLite creates nothing); it does not decrypt records.
public struct RestoreInspector: Sendable {
    /// The data directory (`vaults/` below it).
    public let dataDirectory: URL
    /// The key store of this device.
    public let keyStore: any KeyStore
    /// The app's inventory, when known; otherwise each vault's recorded declarations are used.
    public let inventory: Inventory?
    /// The app's vault migrations, when known; otherwise schemas are not compared.
    public let schema: VaultSchema.Summary?

    /// An inspector of `dataDirectory` with `keyStore`.
    public init(
        dataDirectory: URL, keyStore: any KeyStore, inventory: Inventory? = nil, schema: VaultSchema.Summary? = nil
    ) {
        self.dataDirectory = dataDirectory
        self.keyStore = keyStore
        self.inventory = inventory
        self.schema = schema
    }

    /// Inspects every vault.
    ///
    /// - Throws: ``VaultError`` `damaged` when the data directory or its `vaults` directory is not a
    ///   directory; `ioError` when the `vaults` directory cannot be listed. A missing data directory is a
    ///   fresh install.
    public func inspect() throws(VaultError) -> RestoreReport {
        let (data, root) = VaultFiles.roots(of: dataDirectory)
        for directory in [data, root] {
            switch DurableFiles.kind(directory) {
            case nil, .directory: continue
            case .unreadable?: throw VaultError.cannotRead(directory)
            default:
                throw VaultError(code: .damaged, message: "\(directory) is not a directory; nothing was changed")
            }
        }
        let names = try VaultFiles.namespaces(under: root)
        // A vault directory this process may not enter says nothing of its data: never "damaged".
        if let closed = names.first(where: { DurableFiles.kind(root + "/" + $0.rawValue) == .unreadable }) {
            throw VaultError.cannotRead(root + "/" + closed.rawValue)
        }
        var keys: [String: Set<KeyID>] = [:]
        if let listing = try? keyStore.listKeys() {
            for key in listing { keys[key.namespace, default: []].insert(key.id) }
        }
        let identity = Result { () throws(KeyStoreError) in try keyStore.deviceIdentity(create: false) }
        var vaults = names.map { inspect(root + "/" + $0.rawValue, namespace: $0.rawValue, identity: identity) }
        // Keys without data: an earlier installation's (a Keychain item that outlived an uninstall).
        for namespace in keys.keys.sorted() where !names.contains(where: { $0.rawValue == namespace }) {
            vaults.append(VaultInspection(namespace: namespace, state: .freshInstall))
        }
        return RestoreReport(vaults: vaults.sorted { $0.namespace < $1.namespace })
    }

    // MARK: - One vault

    private func inspect(_ directory: String, namespace: String, identity: Result<String?, KeyStoreError>)
        -> VaultInspection
    {
        func whole(_ state: RestoreState, _ problem: String, _ recovery: [RecoveryPath]) -> VaultInspection {
            VaultInspection(
                namespace: namespace, state: state, conditions: [state], recovery: recovery, problem: problem)
        }
        guard DurableFiles.kind(directory) == .directory else {
            return whole(.damaged, "\(directory) is not a directory", [.keepData, .restoreFromBackup])
        }
        let manifest: VaultManifest
        do {
            guard let read = try VaultManifest.read(directory: directory) else {
                if try !VaultFiles.holdsData(directory, namespace: namespace) {
                    return VaultInspection(namespace: namespace, state: .freshInstall)
                }
                return whole(.damaged, "data without a vault manifest", [.keepData, .restoreFromBackup])
            }
            manifest = read
        } catch {
            if error.code == .formatTooNew { return whole(.schemaTooNew, error.message, [.updateApp, .keepData]) }
            return whole(.damaged, error.message, [.keepData, .restoreFromBackup])
        }
        guard manifest.namespace == namespace else {
            return whole(
                .damaged, "the directory holds the vault of namespace \(manifest.namespace)",
                [.keepData, .restoreFromBackup])
        }

        var conditions: Set<RestoreState> = []
        var pendingMigrations: [String] = []
        // What the schema says is wrong (found in an outside audit: a too-new schema gave no reason at all).
        var schemaProblem: String?
        if let schema {
            switch schema.state(ofApplied: manifest.migrations ?? []) {
            case .upToDate: break
            case .pending(let names): pendingMigrations = names
            // A migration list this vault cannot follow: as for a newer schema, only another build of the app
            // can open it, and the data is kept.
            case .tooNew(let unknown):
                conditions.insert(.schemaTooNew)
                schemaProblem = "migrations this app does not know were applied: \(unknown.joined(separator: ", "))"
            case .inconsistent(let outOfOrder):
                conditions.insert(.schemaTooNew)
                schemaProblem =
                    "migrations were applied in another order than this app's: \(outOfOrder.joined(separator: ", "))"
            case .tooOld(let missing):
                conditions.insert(.schemaTooOld)
                schemaProblem =
                    "migrations this app no longer has are needed first: \(missing.joined(separator: ", "))"
            }
        }

        let deleting = Set(manifest.pendingPurge?.datasets ?? [])
        var datasets: [DatasetInspection] = []
        for name in manifest.datasets.keys.sorted() {
            let entry = manifest.datasets[name]!
            let declaration = inventory?.datasets[name] ?? entry.declaration
            var inspection = DatasetInspection(
                name: name, readable: true, reason: nil, isCache: declaration.role.isCache,
                isDraft: declaration.kind == .draft, isCredential: declaration.classification == .credential)
            if deleting.contains(name) {
                inspection.readable = false
                inspection.reason = .pendingDeletion
            } else if let reason = problem(of: entry, name: name, directory: directory, manifest: manifest) {
                inspection.readable = false
                inspection.reason = reason
                switch reason {
                case .damaged, .keyDamaged, .keyStoreUnavailable: conditions.insert(.damaged)
                case .keyStoreLocked: conditions.insert(.locked)
                case .keyUnavailable:
                    conditions.insert(inspection.isCredential ? .credentialsMissing : .restoredWithoutKeys)
                case .missing:
                    if inspection.isCredential {
                        conditions.insert(.credentialsMissing)
                    } else if !inspection.isCache {
                        conditions.insert(.partial)
                    }
                case .pendingDeletion: break
                case .declarationChanged:
                    // Opening the vault moves it (``Vault/moveToCurrentDeclaration(_:)``); what could stop that
                    // (a missing key, a missing file) is reported as that reason instead.
                    break
                }
            }
            datasets.append(inspection)
        }

        var permissionsToRequest: [String] = []
        if manifest.permissions?.isEmpty == false {
            switch identity {
            case .success(let current): permissionsToRequest = manifest.permissionsToRequest(on: current)
            case .failure(let error):
                if error.code == .locked {
                    conditions.insert(.locked)
                } else {
                    permissionsToRequest = manifest.permissionsToRequest(on: nil)
                }
            }
            if !permissionsToRequest.isEmpty { conditions.insert(.permissionsToRequest) }
        }

        let ordered = RestoreState.precedence.filter(conditions.contains)
        return VaultInspection(
            namespace: namespace, state: ordered.first ?? .normal, conditions: ordered, datasets: datasets,
            recovery: Self.recovery(for: Set(ordered), datasets: datasets),
            permissionsToRequest: permissionsToRequest, pendingMigrations: pendingMigrations, problem: schemaProblem)
    }

    /// Why `entry`'s data cannot be read, or nil when it can.
    private func problem(of entry: VaultManifest.Entry, name: String, directory: String, manifest: VaultManifest)
        -> DatasetInspection.Reason?
    {
        if entry.hasRecords {
            let file = directory + "/" + VaultFiles.database(entry.declaration.backup)
            switch DurableFiles.kind(file) {
            case nil: return .missing
            case .file:
                guard let head = try? DurableFiles.head(file, count: 100) else { return .damaged }
                // An empty file is a database SQLite never wrote to: the records are not there.
                if head.isEmpty { return .missing }
                if !Self.isWholeDatabase(file, head: head) { return .damaged }
                // A records table the manifest knows was committed, gone from a database with no write-ahead
                // log that could hold it (restored from an older copy, or its WAL lost): what the vault reads
                // as damaged, never as empty (found in an outside audit: reported `normal`).
                // (Not while it is being moved: the move drops the old table before it records where it went.
                // A running app may have changed things while the table was looked for: the manifest and the
                // log are looked at again before the table is called lost.)
                if entry.recordsCommitted == true, entry.moving == nil, !Self.holdsLog(file),
                    Self.lacksTable(VaultFiles.table(name), in: file), Self.stillCommitted(name, in: directory),
                    !Self.holdsLog(file)
                {
                    return .damaged
                }
            default: return .damaged
            }
        }
        if entry.hasFiles {
            switch DurableFiles.kind(directory + "/" + VaultFiles.filesDirectory + "/" + name) {
            case nil: return .missing
            case .directory: break
            default: return .damaged
            }
        }
        // Missing, damaged or keyless data is reported as that first: what a move could do with it depends on it.
        // Then data written under another declaration than the inventory's now, not moved yet (or mid-move).
        let changed: Bool = {
            guard entry.hasRecords || entry.hasFiles, let declared = inventory?.datasets[name] else { return false }
            return entry.isWritten(otherwiseThan: declared)
        }()
        guard entry.sealed, entry.hasRecords || entry.hasFiles, let keyID = entry.keyID else {
            return changed ? .declarationChanged : nil
        }
        // To be made plain, data needs every key it may be sealed with, retired ones too.
        if changed, let declared = inventory?.datasets[name], declared.classification < .personal {
            for retired in entry.retiredKeyIDs where (try? holds(retired, manifest)) != true { return .keyUnavailable }
        }
        do {
            guard try holds(keyID, manifest) else { return .keyUnavailable }
            return changed ? .declarationChanged : nil
        } catch {
            switch error.code {
            case .locked: return .keyStoreLocked
            case .corrupt, .wrongKeyLength: return .keyDamaged
            // The key store could not be read (gone, an I/O error, permissions): the key may well be there.
            // Never "key unavailable", whose recovery (sign in again, re-download) gives the data up.
            default: return .keyStoreUnavailable
            }
        }
    }

    /// Whether the key store holds key `id` of this vault (of its namespace, made for this installation).
    private func holds(_ id: KeyID, _ manifest: VaultManifest) throws(KeyStoreError) -> Bool {
        guard let key = try keyStore.key(id) else { return false }
        return key.namespace == manifest.namespace && Hex.encode(key.entanglement) == manifest.entanglement
    }

    /// "SQLite format 3" and a NUL: the first 16 bytes of every SQLite database.
    private static let sqliteHeader: [UInt8] = Array("SQLite format 3\0".utf8)

    /// Whether the database file at `file`, whose first bytes are `head` (up to 100), is whole as far as its
    /// header tells, without opening it (opening could write): SQLite's 100-byte header with its magic and a
    /// valid page size, a length of whole pages and — unless a write-ahead log beside it still holds pages
    /// a checkpoint may not have copied yet — at least as many pages as the header counts. A file cut short
    /// (a failed copy, a full disk during a restore) is damaged, never "readable".
    static func isWholeDatabase(_ file: String, head: [UInt8]) -> Bool {
        guard head.count == 100, head.starts(with: sqliteHeader), let length = DurableFiles.size(file) else {
            return false
        }
        func integer(at offset: Int, bytes: Int) -> Int64 {
            head[offset..<(offset + bytes)].reduce(0) { $0 << 8 | Int64($1) }
        }
        let encoded = integer(at: 16, bytes: 2)
        let pageSize = encoded == 1 ? 65_536 : encoded
        guard (512...32_768).contains(pageSize) || pageSize == 65_536, pageSize & (pageSize - 1) == 0,
            length % pageSize == 0
        else { return false }
        // The header's page count is valid only when its "version valid for" equals the change counter.
        let pages = integer(at: 28, bytes: 4)
        guard pages > 0, integer(at: 92, bytes: 4) == integer(at: 24, bytes: 4) else { return true }
        if holdsLog(file) { return true }
        return length >= pages * pageSize
    }

    /// Whether a write-ahead log beside `file` may hold pages: longer than its 32-byte header, and the header
    /// starts with a WAL's magic number (found in an outside audit: 4 KiB of zeros passed for a log, and a
    /// database cut short beside it for whole).
    static func holdsLog(_ file: String) -> Bool {
        guard let length = DurableFiles.size(file + "-wal"), length > 32,
            let head = try? DurableFiles.head(file + "-wal", count: 4), head.count == 4
        else { return false }
        return head == [0x37, 0x7F, 0x06, 0x82] || head == [0x37, 0x7F, 0x06, 0x83]
    }

    /// Whether the manifest, read again, still says `name`'s records table was committed and is not being
    /// moved or purged: a running app may have dropped the table (a purge, a move) since the manifest was
    /// first read, and that is no damage (found in a review).
    static func stillCommitted(_ name: String, in directory: String) -> Bool {
        guard let manifest = try? VaultManifest.read(directory: directory), let entry = manifest.datasets[name]
        else { return false }
        return entry.recordsCommitted == true && entry.moving == nil
            && !(manifest.pendingPurge?.datasets.contains(name) ?? false)
    }

    /// Whether the database `file` (with no log beside it) provably has no table `table`. Opened immutable
    /// and read-only, so SQLite creates nothing beside it (no `-shm`, no `-wal`) and writes nothing; a file
    /// it cannot read says nothing (false): the header checks judge it.
    static func lacksTable(_ table: String, in file: String) -> Bool {
        var allowed = CharacterSet.urlPathAllowed
        allowed.remove(charactersIn: "?#%")
        guard let path = file.addingPercentEncoding(withAllowedCharacters: allowed) else { return false }
        var handle: OpaquePointer?
        defer { sqlite3_close_v2(handle) }
        guard
            sqlite3_open_v2("file:" + path + "?immutable=1", &handle, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, nil)
                == SQLITE_OK, let handle
        else { return false }
        var statement: OpaquePointer?
        defer { sqlite3_finalize(statement) }
        guard
            sqlite3_prepare_v2(
                handle, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?", -1, &statement, nil)
                == SQLITE_OK
        else { return false }
        sqlite3_bind_text(statement, 1, table, -1, keel_sqlite3_transient())
        guard sqlite3_step(statement) == SQLITE_ROW else { return false }
        return sqlite3_column_int64(statement, 0) == 0
    }

    /// The recovery paths of `conditions`, in the order an app should offer them.
    static func recovery(for conditions: Set<RestoreState>, datasets: [DatasetInspection]) -> [RecoveryPath] {
        var paths: [RecoveryPath] = []
        func add(_ path: RecoveryPath) { if !paths.contains(path) { paths.append(path) } }
        let unreadable = datasets.filter { !$0.readable && $0.reason != .pendingDeletion }
        if conditions.contains(.locked) { add(.unlockDevice) }
        if conditions.contains(.damaged) {
            add(.keepData)
            add(.restoreFromBackup)
        }
        if conditions.contains(.schemaTooNew) {
            add(.updateApp)
            add(.keepData)
        }
        if conditions.contains(.schemaTooOld) {
            add(.keepData)
            add(.redownloadSyncedData)
        }
        if conditions.contains(.restoredWithoutKeys) {
            add(.keepCiphertext)
            if unreadable.contains(where: { !$0.isCache && !$0.isDraft && !$0.isCredential }) {
                add(.redownloadSyncedData)
            }
            if unreadable.contains(where: \.isCache) { add(.rebuildCaches) }
            if datasets.contains(where: { $0.isDraft && $0.readable }) { add(.exportUnsyncedDrafts) }
            add(.signInAgain)
        }
        if conditions.contains(.partial) {
            add(.redownloadSyncedData)
            if datasets.contains(where: { $0.isDraft && $0.readable }) { add(.exportUnsyncedDrafts) }
            add(.restoreFromBackup)
        }
        if conditions.contains(.credentialsMissing) { add(.signInAgain) }
        if conditions.contains(.permissionsToRequest) { add(.requestPermissions) }
        // Caches that did not come along (or cannot be opened) are rebuilt from their sources, whatever the
        // state: the only data that may be reset.
        if unreadable.contains(where: \.isCache) { add(.rebuildCaches) }
        return paths
    }
}
