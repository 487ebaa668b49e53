public import Foundation
public import KeelCore
import KeelCrypto

/// The accounts' vaults under one data directory, and the one that is open (MOB-DATA-006).
///
/// ```swift
/// let vaults = try Vaults(dataDirectory: appSupport, keyStore: KeychainKeyStore(), inventory: inventory)
/// let vault = try await vaults.open(account)          // fails while another account's vault is open
/// try await vault.put("notes", id: note.id, body)
/// try await vaults.logout()                           // closes it, runs the `logout` deletion triggers
/// ```
///
/// - One vault is open at a time: ``open(_:)`` refuses while another is open; ``switchAccount(to:)``
///   closes the current one (interrupting anything still running on it) before opening the next.
/// - ``logout()``, ``deleteAccount(_:)`` and ``revokeAccess(_:)`` run the inventory's deletion triggers:
///   the keys of every dataset the trigger deletes are shredded first (so what a crash leaves behind is
///   unreadable), then the data. A dataset the trigger does not delete (drafts kept across logout) keeps
///   its data and its key. Account deletion erases the whole namespace and every key of it.
/// - A deletion interrupted by a crash or an unavailable key store is recorded in the vault and finished
///   before the vault is used again.
/// - ``checkAppVersion(_:)``, at launch, runs the `appVersionChange` trigger when the app's version changed:
///   caches declaring it are reset in every vault on the device and in the shared cache.
public actor Vaults {
    /// The data directory: vaults live under `vaults/`, one directory per ``VaultNamespace``.
    public nonisolated let dataDirectory: URL
    /// Where keys live (never inside the data directory).
    public nonisolated let keyStore: any KeyStore
    /// The declarations every dataset is checked against.
    public nonisolated let inventory: Inventory
    /// The migrations every vault is brought up to when it opens.
    public nonisolated let schema: VaultSchema
    /// The store of public data that belongs to no account (the only one outside the vaults).
    public nonisolated let shared: SharedCache
    private nonisolated let clock: WallClock
    private nonisolated let root: String

    /// The open vault, if any.
    public private(set) var active: Vault?
    private var epoch: UInt64 = 0
    /// One transition (open, switch, close, purge) at a time.
    private let turnstile = Turnstile()

    /// The vaults under `dataDirectory` (created with `0700` when missing).
    ///
    /// - Throws: ``VaultError`` `damaged` when `dataDirectory` or its `vaults` directory is a file;
    ///   ``KeyStoreError`` `insideDataDirectory` when `keyStore` is a ``FileKeyStore`` whose directory
    ///   overlaps the data directory.
    public init(
        dataDirectory: URL, keyStore: any KeyStore, inventory: Inventory, schema: VaultSchema = VaultSchema(),
        clock: WallClock = .system
    ) throws {
        self.dataDirectory = dataDirectory
        self.keyStore = keyStore
        self.inventory = inventory
        self.schema = schema
        shared = SharedCache(dataDirectory: dataDirectory, inventory: inventory, clock: clock)
        self.clock = clock
        let roots = VaultFiles.roots(of: dataDirectory)
        root = roots.vaults
        if let files = keyStore as? FileKeyStore,
            DurableFiles.isSameOrInside(files.directory.path, roots.data)
                || DurableFiles.isSameOrInside(roots.data, files.directory.path)
        {
            throw KeyStoreError(
                code: .insideDataDirectory, keyID: nil,
                message: "key directory \(files.directory.path) and data directory \(dataDirectory.path) overlap")
        }
        for directory in [roots.data, root] {
            do { try DurableFiles.makeDirectory(directory, mode: 0o700) } catch {
                throw VaultError(
                    code: error.errno == 20 ? .damaged : .ioError,
                    message: "\(directory) cannot be used as a data directory: \(error.description)")
            }
        }
        // What an account deletion that was cut short left (its keys are shredded already).
        for name in (try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []
        where name.hasPrefix(VaultFiles.tombstonePrefix) {
            try? FileManager.default.removeItem(atPath: root + "/" + name)
        }
    }

    /// Tests only: handed to every vault this opens, before it moves changed datasets (``Vault/moveStep``).
    package nonisolated let moveStep = Locked<(@Sendable (String) throws -> Void)?>(nil)

    /// How vault databases commit: `full` — every write that returned is on disk, across power loss as well
    /// as a crash (an outbox entry may be the only copy of what the user did). One sync of the WAL per
    /// transaction; batch writes into one transaction where there are many.
    public static let synchronous: DatabaseConfiguration.Synchronous = .full

    /// The namespaces of the vaults on disk (account ids are never stored, only their namespaces).
    ///
    /// - Throws: ``VaultError`` `ioError` when the `vaults` directory exists but cannot be listed.
    public nonisolated func namespaces() throws(VaultError) -> [VaultNamespace] {
        try VaultFiles.namespaces(under: root)
    }

    /// Inspects every vault under the data directory against this app's inventory and schema (see
    /// ``RestoreInspector``): run it at launch, before anything reads user data. Reads only.
    public nonisolated func inspect() throws(VaultError) -> RestoreReport {
        try RestoreInspector(
            dataDirectory: dataDirectory, keyStore: keyStore, inventory: inventory, schema: schema.summary
        )
        .inspect()
    }

    /// What a backup of the data directory carries now (see ``BackupPlan``).
    public nonisolated func backupPlan() throws(VaultError) -> BackupPlan {
        try BackupPlan.compute(dataDirectory: dataDirectory, inventory: inventory, keyStore: keyStore)
    }

    // MARK: - Opening and closing

    /// Opens `account`'s vault, creating it on first use, and makes it the active one.
    ///
    /// A vault directory that does not exist yet is new: any key left in the key store under its namespace
    /// (a Keychain item that outlived an uninstall) belongs to data that is gone and is deleted. A deletion
    /// that was interrupted is finished first.
    ///
    /// A vault still to be reset for a change of the app's version (``checkAppVersion(_:)`` could not reset it)
    /// has its caches reset first, and leaves the record's list: it never opens with what another version
    /// cached.
    ///
    /// - Throws: ``VaultError`` `anotherVaultOpen` while another account's vault is open (close it, or use
    ///   ``switchAccount(to:)``); `appVersionResetUnfinished` when its caches are still to be reset for a
    ///   change of the app's version and cannot be now (nothing else is changed; tried again at the next open);
    ///   `damaged` when the vault's files are inconsistent (nothing is deleted);
    ///   `formatTooNew`; `schemaTooNew` or `schemaTooOld` against ``schema`` (nothing is changed);
    ///   `migrationFailed` when a pending migration throws (the vault stays closed).
    public func open(_ account: AccountID) async throws -> Vault {
        await turnstile.enter()
        defer { turnstile.leave() }
        if let active {
            if active.account == account { return active }
            throw VaultError(
                code: .anotherVaultOpen, namespace: active.namespace.rawValue,
                message: "another account's vault is open; close it before opening another (one active vault at a time)"
            )
        }
        return try await openLocked(account)
    }

    /// Closes the active vault (if any), then opens `account`'s.
    public func switchAccount(to account: AccountID) async throws -> Vault {
        await turnstile.enter()
        defer { turnstile.leave() }
        if let active {
            if active.account == account { return active }
            await active.close()
            self.active = nil
        }
        return try await openLocked(account)
    }

    /// Closes the active vault: anything still running on it is interrupted and fails with `vaultClosed`.
    public func close() async {
        await turnstile.enter()
        defer { turnstile.leave() }
        await active?.close()
        active = nil
    }

    private func openLocked(_ account: AccountID) async throws -> Vault {
        let namespace = VaultNamespace(account)
        let directory = root + "/" + namespace.rawValue
        try await finishAppVersionReset(namespace)
        var manifest = try prepareDirectory(directory, namespace: namespace)
        if manifest.pendingPurge != nil {
            _ = try await purge(namespace: namespace, trigger: manifest.pendingPurge!.trigger, resuming: true)
            guard let finished = try VaultManifest.read(directory: directory) else {
                return try await openLocked(account)
            }
            manifest = finished
        }
        let pending: [String]
        switch schema.summary.state(ofApplied: manifest.migrations ?? []) {
        case .upToDate: pending = []
        case .pending(let names): pending = names
        case .tooNew(let unknown):
            throw VaultError(
                code: .schemaTooNew, namespace: namespace.rawValue,
                message:
                    "the vault applied migrations this app does not know (\(unknown.joined(separator: ", "))): a newer app wrote it; nothing was changed"
            )
        case .inconsistent(let outOfOrder):
            throw VaultError(
                code: .schemaInconsistent, namespace: namespace.rawValue,
                message:
                    "the app registers vault migrations before ones this vault already applied (\(outOfOrder.joined(separator: ", "))): they would run in another order than on a new install; nothing was changed"
            )
        case .tooOld(let missing):
            throw VaultError(
                code: .schemaTooOld, namespace: namespace.rawValue,
                message:
                    "the vault misses migrations this app no longer carries (\(missing.joined(separator: ", "))); nothing was changed"
            )
        }
        epoch += 1
        let vault = Vault(
            account: account, epoch: epoch, directory: URL(fileURLWithPath: directory), manifest: manifest,
            inventory: inventory, keyStore: keyStore, clock: clock)
        // Datasets whose declaration changed since they were written move to it before migrations read them;
        // one that cannot be moved here stays where it is (refused, and reported), and the vault opens.
        let step = moveStep.withLock { $0 }
        vault.moveStep.withLock { $0 = step }
        await vault.moveChangedDatasets()
        for step in schema.steps where pending.contains(step.name) {
            do {
                try await step.body(vault)
                try await vault.recordMigration(step.name)
            } catch {
                await vault.close()
                throw VaultError(
                    code: .migrationFailed, namespace: namespace.rawValue,
                    message: "the vault migration \(step.name) failed: \(error)", underlying: error)
            }
        }
        // A deletion trigger another process recorded meanwhile (it may have waited for a move of ours) is
        // finished before the vault is handed out; an account another process deleted meanwhile opens anew.
        let current: VaultManifest?
        do { current = try VaultManifest.read(directory: directory) } catch {
            await vault.close()
            throw error
        }
        if current == nil || current?.pendingPurge != nil {
            await vault.close()
            return try await openLocked(account)
        }
        active = vault
        return vault
    }

    /// Reads the vault's manifest, or creates the vault when its directory holds nothing.
    ///
    /// Creation happens under the directory's exclusive lock, the one every manifest change takes: an app and
    /// its extension opening a new account's vault at the same moment must not both create it. Unlocked, each
    /// wrote a manifest with its own entanglement marker, the last one won, and the keys the other process
    /// made (with its marker) were then refused as another installation's — its records sealed for good.
    private func prepareDirectory(_ directory: String, namespace: VaultNamespace) throws -> VaultManifest {
        switch DurableFiles.kind(directory) {
        case .directory: break
        case nil: break
        case .unreadable?:
            throw VaultError.cannotRead(directory, namespace: namespace.rawValue)
        default:
            throw VaultError(
                code: .damaged, namespace: namespace.rawValue,
                message: "\(directory) is not a directory; nothing was changed")
        }
        // Unlocked, data without a manifest may be a vault another opener is creating this very moment (its
        // manifest renamed into place between the read and the listing): judged again under the lock.
        if let manifest = try Self.existingManifest(directory, namespace: namespace, refusingDataWithout: false) {
            return manifest
        }
        // Made (or found) before it can be locked; an empty directory is a vault not created yet.
        do { try DurableFiles.makeDirectory(directory, mode: 0o700) } catch {
            throw VaultError(code: .ioError, namespace: namespace.rawValue, message: error.description)
        }
        let lock: ExclusiveFileLock
        do { lock = try ExclusiveFileLock(directory, .directory, waitingUpTo: .seconds(10)) } catch {
            throw VaultError(
                code: .ioError, namespace: namespace.rawValue,
                message: "cannot lock \(directory) to create the vault (another process held it, or it is gone)")
        }
        defer { lock.release() }
        // Another process (or another `Vaults` on this directory) may have created it while this one waited.
        if let manifest = try Self.existingManifest(directory, namespace: namespace) { return manifest }
        // A new vault. Keys under this namespace belong to an earlier installation whose data is gone: a
        // Keychain outlives an uninstall, and its keys are entangled with a marker that went with the data
        // (the vaults issue asks for them to be treated as absent and deleted). This is why a key store serves
        // one data directory: an app extension that opens vaults must open them in the same directory (the app
        // group's), or its first vault would take the app's keys for an earlier installation's. (An outside
        // audit proposed keeping them; a reinstall and another data directory cannot be told apart from here,
        // and the uninstall case is the one the standard's key hygiene is about.)
        do {
            for listing in try keyStore.listKeys() where listing.namespace == namespace.rawValue {
                try keyStore.delete(listing.id)
            }
        } catch {
            throw VaultError(
                code: .keyStoreFailed, namespace: namespace.rawValue, message: error.description, underlying: error)
        }
        let manifest = VaultManifest(
            format: VaultManifest.baseFormat, namespace: namespace.rawValue,
            entanglement: Hex.encode(AESGCM.randomBytes(16)), datasets: [:], permissions: nil, pendingPurge: nil,
            migrations: schema.summary.everything)
        try manifest.write(directory: directory)
        do { try DurableFiles.syncDirectory(root) } catch {
            throw VaultError(code: .ioError, namespace: namespace.rawValue, message: error.description)
        }
        return manifest
    }

    /// The manifest of the vault in `directory`; nil when there is none and the directory holds no data (a
    /// vault to create). Throws `damaged` for another namespace's manifest or, when `refusingDataWithout`, data
    /// without a manifest (only under the directory's lock is that settled: a creator holds it while it writes
    /// the manifest).
    private static func existingManifest(
        _ directory: String, namespace: VaultNamespace, refusingDataWithout: Bool = true
    ) throws -> VaultManifest? {
        if let manifest = try VaultManifest.read(directory: directory) {
            guard manifest.namespace == namespace.rawValue else {
                throw VaultError(
                    code: .damaged, namespace: namespace.rawValue,
                    message: "\(directory) holds the vault of namespace \(manifest.namespace); nothing was changed")
            }
            return manifest
        }
        if refusingDataWithout, try VaultFiles.holdsData(directory, namespace: namespace.rawValue) {
            throw VaultError(
                code: .damaged, namespace: namespace.rawValue,
                message:
                    "\(directory) holds data but no vault manifest; nothing was changed (see the restore inspector)")
        }
        return nil
    }

    // MARK: - Deletion triggers

    /// Signs the active account out: closes its vault, then deletes every dataset whose deletion triggers
    /// include `logout` (credentials, protected data, derived caches) and shreds their keys. Datasets the
    /// inventory keeps across logout keep their data and keys. Nothing to do without an active vault.
    @discardableResult
    public func logout() async throws -> PurgeReport {
        await turnstile.enter()
        defer { turnstile.leave() }
        guard let vault = active else { return PurgeReport(trigger: .logout, namespace: nil) }
        await vault.close()
        active = nil
        return try await purge(namespace: vault.namespace, trigger: .logout, resuming: false)
    }

    /// Signs `account` out whether or not its vault is open: as ``logout()``, by its namespace's manifest —
    /// for a vault that could not be opened (written by a newer version of the app, a migration that failed),
    /// whose credentials must still go. Closes the vault first when it is the active one.
    @discardableResult
    public func logout(_ account: AccountID) async throws -> PurgeReport {
        try await runTrigger(.logout, account)
    }

    /// Deletes everything of `account` on this device: every dataset, file and key of its namespace
    /// (closing its vault first when it is the active one).
    @discardableResult
    public func deleteAccount(_ account: AccountID) async throws -> PurgeReport {
        try await runTrigger(.accountDeletion, account)
    }

    /// Runs the `accessRevocation` deletion triggers for `account` (the server revoked its access): its
    /// vault is closed when active, and datasets with that trigger are deleted and their keys shredded.
    @discardableResult
    public func revokeAccess(_ account: AccountID) async throws -> PurgeReport {
        try await runTrigger(.accessRevocation, account)
    }

    private func runTrigger(_ trigger: Dataset.DeletionTrigger, _ account: AccountID) async throws -> PurgeReport {
        await turnstile.enter()
        defer { turnstile.leave() }
        if let vault = active, vault.account == account {
            await vault.close()
            active = nil
        }
        return try await purge(namespace: VaultNamespace(account), trigger: trigger, resuming: false)
    }

    private func purge(namespace: VaultNamespace, trigger: Dataset.DeletionTrigger, resuming: Bool) async throws
        -> PurgeReport
    {
        let directory = root + "/" + namespace.rawValue
        var report = PurgeReport(trigger: trigger, namespace: namespace)
        if trigger == .accountDeletion {
            // Everything of the account goes, so nothing needs the manifest (missing or damaged, it must not
            // keep the data): every key of the namespace is shredded, then the directory is renamed out of
            // the namespaces in one step and deleted. A crash leaves either a vault without keys (deleting the
            // account again finishes it) or a tombstone the next launch removes — never a half-deleted vault
            // that opens as damaged forever.
            report.deletedDatasets = (try? VaultManifest.read(directory: directory))?.datasets.keys.sorted() ?? []
            // Not while another process moves data of this vault (it could make a key after the shredding):
            // waited for up to 30 s, then the deletion goes ahead regardless.
            let moveLock =
                DurableFiles.kind(directory) == .directory
                ? try? ExclusiveFileLock(directory + "/" + VaultFiles.moveLock, .file, waitingUpTo: .seconds(30))
                : nil
            defer { moveLock?.release() }
            // Recorded first where the manifest can hold it: a key store that fails before the first key is
            // shredded leaves the deletion to be finished at the next open (as for the other triggers), never
            // a vault that opens as if its account had not been deleted.
            if (try? VaultManifest.read(directory: directory)) != nil {
                _ = try? VaultManifest.update(directory: directory, namespace: namespace.rawValue, fallback: nil) {
                    fresh throws(VaultError) in
                    fresh.pendingPurge = .init(trigger: .accountDeletion, datasets: fresh.datasets.keys.sorted())
                }
            }
            report.shreddedKeys = try shredAllKeys(of: namespace)
            if DurableFiles.kind(directory) != nil {
                let tombstone = root + "/" + VaultFiles.tombstonePrefix + namespace.rawValue + "-" + UUID().uuidString
                do {
                    try DurableFiles.move(directory, to: tombstone)
                    try DurableFiles.syncDirectory(root)
                } catch {
                    throw VaultError(code: .ioError, namespace: namespace.rawValue, message: error.description)
                }
                try removeTree(tombstone)
            }
            do { try DurableFiles.syncDirectory(root) } catch {
                throw VaultError(code: .ioError, namespace: namespace.rawValue, message: error.description)
            }
            return report
        }
        switch DurableFiles.kind(directory) {
        case .directory?: break
        // Not "nothing to delete": a logout that cannot look must not report its purge done.
        case .unreadable?:
            throw VaultError.cannotRead(directory, namespace: namespace.rawValue, outcome: "nothing was deleted")
        default: return report
        }
        guard var manifest = try VaultManifest.read(directory: directory) else {
            // Data whose manifest is gone cannot be told apart into what the trigger deletes and what it keeps:
            // signing out without deleting the credentials would be a lie, deleting everything a guess.
            guard try !VaultFiles.holdsData(directory, namespace: namespace.rawValue) else {
                throw VaultError(
                    code: .damaged, namespace: namespace.rawValue,
                    message:
                        "the vault's manifest is missing, so what \(trigger) must delete cannot be told from what it keeps: nothing was deleted (deleting the account removes everything)"
                )
            }
            return report
        }
        let affected: [String]
        if let pending = manifest.pendingPurge, resuming || pending.trigger == trigger {
            affected = pending.datasets
        } else {
            let triggered = manifest.datasets.keys.filter { name in
                let declaration = inventory.datasets[name] ?? manifest.datasets[name]!.declaration
                // A version change resets caches and nothing else, whatever a manifest's old declaration says.
                return trigger == .accountDeletion
                    || (declaration.deletionTriggers.contains(trigger)
                        && (trigger != .appVersionChange || AppVersionCheck.resets(declaration)))
            }
            // An unfinished purge of another trigger is finished with this one, never replaced by it: its
            // datasets may already have lost their keys.
            affected = Set(triggered + (manifest.pendingPurge?.datasets ?? [])).sorted()
            // On the manifest as it is on disk, under its lock (another process may have this vault open).
            (manifest, _) = try VaultManifest.update(directory: directory, namespace: namespace.rawValue, fallback: nil)
            { fresh throws(VaultError) in
                fresh.pendingPurge = .init(trigger: trigger, datasets: affected)
            }
        }
        // Not while another process moves data of this vault to a changed declaration: it would write copies
        // after the drops below (its move waits for this purge in turn, and finds the datasets gone).
        let moveLock: ExclusiveFileLock
        do {
            moveLock = try ExclusiveFileLock(directory + "/" + VaultFiles.moveLock, .file, waitingUpTo: .seconds(30))
        } catch {
            throw VaultError(
                code: .ioError, namespace: namespace.rawValue,
                message:
                    "another process has been moving data of this vault for 30 s; the deletion is recorded and finishes at the next open"
            )
        }
        defer { moveLock.release() }
        // As it is now: a move that held the lock may have made keys or moved records meanwhile.
        if let current = try VaultManifest.read(directory: directory) { manifest = current }
        // 1. Shred: without its key, whatever a crash leaves of the data below is unreadable.
        for name in affected {
            for id in manifest.datasets[name]?.allKeyIDs ?? [] {
                do { try keyStore.delete(id) } catch {
                    throw VaultError(
                        code: .keyStoreFailed, namespace: namespace.rawValue, dataset: name, message: error.description,
                        underlying: error)
                }
                report.shreddedKeys.append(id)
            }
        }
        // 2. Delete the data: records tables (secure delete, WAL emptied) and files. In every database file,
        // not only the one the manifest names: a move to another declaration cut short has copies in another
        // file (or in a staging table) — whose files a kept dataset's own move may be filling too; it copies
        // again from its intact original when it runs again.
        let names = affected.filter { manifest.datasets[$0]?.hasRecords == true }
        for policy in Dataset.BackupPolicy.allCases where !names.isEmpty {
            let file = directory + "/" + VaultFiles.database(policy)
            guard DurableFiles.kind(file) == .file else {
                // A purge cut short after the file went (below) leaves its log, which may hold the rows it
                // dropped: it goes now (found in an outside audit).
                for companion in VaultFiles.databaseCompanions.dropFirst()
                where DurableFiles.kind(file + companion) == .file {
                    try removeTree(file + companion)
                }
                continue
            }
            // Kept: datasets written here, and those the inventory now puts here — a move cut short after its
            // original was deleted has its only copy here, before the manifest says so.
            let remaining = manifest.datasets.filter {
                !affected.contains($0.key) && $0.value.hasRecords
                    && ($0.value.declaration.backup == policy || $0.value.moving?.backup == policy
                        || inventory.datasets[$0.key]?.backup == policy)
            }
            if remaining.isEmpty {
                // The log and the shared memory first, the database last: cut short, what is left is found by
                // the database file (or, gone, by the loop above), never a log without its database.
                for companion in VaultFiles.databaseCompanions.reversed() { try removeTree(file + companion) }
                continue
            }
            // Its drops committed as every vault write is (`synchronous = FULL`): the manifest records the purge
            // done right after, and a power cut must not bring the tables back without it.
            let pool: DatabasePool
            do {
                pool = try DatabasePool(
                    path: file,
                    configuration: DatabaseConfiguration(synchronous: Vaults.synchronous, secureDelete: true))
            } catch {
                throw VaultError(
                    code: .databaseFailed, namespace: namespace.rawValue, message: error.description, underlying: error)
            }
            let scrubbed = try await pool.writeWithoutTransaction { db -> Bool in
                try db.execute("PRAGMA secure_delete = ON")
                try db.inTransaction {
                    for name in names {
                        try db.execute("DROP TABLE IF EXISTS \(DataStore.quoted(VaultFiles.table(name)))")
                        try db.execute("DROP TABLE IF EXISTS \(DataStore.quoted(VaultFiles.stagingTable(name)))")
                    }
                }
                // The checkpoint does not throw when another process's reader blocks it: its row says (busy,
                // log, done). Blocked, the dropped pages' bytes may remain in the WAL until a later checkpoint;
                // the sign-out does not wait long for a reader that may read for minutes.
                try db.execute("PRAGMA busy_timeout = 1000")
                guard let row = try db.rows("PRAGMA wal_checkpoint(TRUNCATE)").first, row.values.count == 3 else {
                    return false
                }
                return row.values[0] == .integer(0) && row.values[1] == row.values[2]
            }
            if !scrubbed { report.isScrubbed = false }
            await pool.close()
        }
        for name in affected {
            try removeTree(directory + "/" + VaultFiles.filesDirectory + "/" + name)
        }
        (manifest, _) = try VaultManifest.update(directory: directory, namespace: namespace.rawValue, fallback: nil) {
            fresh throws(VaultError) in
            for name in affected { fresh.datasets.removeValue(forKey: name) }
            fresh.pendingPurge = nil
        }
        report.deletedDatasets = affected
        report.keptDatasets = manifest.datasets.keys.sorted()
        return report
    }

    // MARK: - The app's version

    /// Checks the app's version at launch, before a vault is opened: when it is not the version recorded last
    /// in the data directory (an upgrade, a downgrade, or none recorded yet), every dataset declaring the
    /// `appVersionChange` deletion trigger is reset — the shared cache's, and each account's in every vault on
    /// the device, open or not — and nothing else: the inventory allows the trigger on caches only, and a
    /// declaration only a vault's manifest still knows is reset only if it says cache too.
    ///
    /// Durable across a crash: the change is recorded (`app-version.json`, with the stores still to reset)
    /// before anything is deleted, and each store leaves the list once it is reset. Killed midway, the next
    /// check (with the same version or a newer one) finishes it. A store that cannot be reset (a vault whose
    /// manifest is gone, a database that cannot be written) does not make the check throw: the check returns,
    /// ``AppVersionCheck/changed`` true, with that store and its error in ``AppVersionCheck/unfinished``, and
    /// the others are done and stay done. The store stays on the list and is never used with the old
    /// version's caches: ``open(_:)`` resets a listed vault before opening it, and the shared cache resets
    /// itself at its first use in the process — each refusing with ``VaultError`` `appVersionResetUnfinished`
    /// while that fails — and the next check tries it again. In a vault the reset is its deletion trigger:
    /// recorded in the vault first (so opening it finishes the reset too), the caches' keys shredded — which
    /// needs no key to be readable: a vault restored without its keys, or a locked key store, is reset all
    /// the same — then their records and files deleted. A vault with another deletion (logout, account
    /// deletion) left unfinished by a crash has it finished first, as ``open(_:)`` would.
    ///
    /// Caches Keel does not keep (the app's own files) are the app's to clear when ``AppVersionCheck/changed``
    /// is true — also when something is ``AppVersionCheck/unfinished``, which the app reports; an app with a
    /// ``DataStore`` checks it too (``DataStore/checkAppVersion(_:)``).
    ///
    /// - Throws: ``InventoryError`` `invalidAppVersion` for a blank `version`; ``VaultError``
    ///   `anotherVaultOpen` while a vault is open (nothing is changed: check before opening one); `ioError`
    ///   when the record cannot be written (before anything is reset, nothing is; after, the next check does it
    ///   again). Never for a store that could not be reset: see ``AppVersionCheck/unfinished``.
    @discardableResult
    public func checkAppVersion(_ version: String) async throws -> AppVersionCheck {
        try AppVersionCheck.validate(version)
        await turnstile.enter()
        defer { turnstile.leave() }
        if let active {
            throw VaultError(
                code: .anotherVaultOpen, namespace: active.namespace.rawValue,
                message:
                    "check the app's version at launch, before a vault is opened (its caches may be reset); nothing was changed"
            )
        }
        let path = appVersionPath
        let recorded = AppVersionRecord.read(path)
        var record: AppVersionRecord
        if let recorded, recorded.version == version {
            guard !recorded.isFinished else {
                return AppVersionCheck(version: version, previous: recorded.version, changed: false)
            }
            record = recorded
        } else {
            // The fact first: from here on, a crash leaves it for the next check to finish.
            record = AppVersionRecord(
                version: version, previous: recorded?.version, pendingShared: true,
                pendingVaults: try namespaces().map(\.rawValue))
            try AppVersionRecord.serial.withLock { _ throws(VaultError) in try record.write(path) }
            shared.needsAppVersionCheck()
        }
        var check = AppVersionCheck(version: version, previous: record.previous, changed: true)
        var sharedDone = false
        if record.pendingShared {
            do {
                check.resetDatasets = try await shared.resetForAppVersionChange()
                sharedDone = true
            } catch {
                check.unfinished.append(.init(store: .shared, error: Self.vaultError(error, namespace: nil)))
            }
        }
        var done: Set<String> = []
        for name in record.pendingVaults {
            guard let namespace = VaultNamespace(rawValue: name) else {
                done.insert(name)  // not a vault's name: nothing to reset
                continue
            }
            do {
                if let report = try await resetForAppVersionChange(namespace) { check.vaults.append(report) }
                done.insert(name)
            } catch {
                check.unfinished.append(.init(store: .vault(namespace), error: Self.vaultError(error, namespace: name)))
            }
        }
        // On the record as it is now (the shared cache may have reset itself meanwhile): what was done leaves it.
        try AppVersionRecord.update(path, version: version) { record in
            if sharedDone { record.pendingShared = false }
            record.pendingVaults.removeAll { done.contains($0) }
        }
        return check
    }

    /// `app-version.json` in the data directory.
    private nonisolated var appVersionPath: String {
        VaultFiles.roots(of: dataDirectory).data + "/" + AppVersionRecord.fileName
    }

    /// `error` as a ``VaultError`` (a database's error as the vault reports it; any other kept as underlying).
    static func vaultError(_ error: any Error, namespace: String?) -> VaultError {
        if let error = error as? VaultError { return error }
        if let error = error as? DatabaseError { return VaultError(error, namespace: namespace) }
        return VaultError(code: .ioError, namespace: namespace, message: "\(error)", underlying: error)
    }

    /// Resets `namespace`'s caches when ``checkAppVersion(_:)`` left them to reset (they were written by
    /// another version of the app), and takes it off the record's list; refuses with
    /// `appVersionResetUnfinished` when that fails. A record that cannot be updated afterwards is left as it
    /// is: the vault opens, and its caches are reset again at its next open (they are caches).
    private func finishAppVersionReset(_ namespace: VaultNamespace) async throws(VaultError) {
        let path = appVersionPath
        guard let record = AppVersionRecord.read(path), record.pendingVaults.contains(namespace.rawValue) else {
            return
        }
        do { _ = try await resetForAppVersionChange(namespace) } catch {
            let cause = Self.vaultError(error, namespace: namespace.rawValue)
            throw VaultError(
                code: .appVersionResetUnfinished, namespace: namespace.rawValue,
                message:
                    "the vault's caches are still to be reset for app version \(record.version), and cannot be (\(cause)); it was not opened, nothing else was changed",
                underlying: cause)
        }
        try? AppVersionRecord.update(path, version: record.version) { record in
            record.pendingVaults.removeAll { $0 == namespace.rawValue }
        }
    }

    /// Resets the caches of one vault for a change of the app's version; nil when it had none to reset.
    private func resetForAppVersionChange(_ namespace: VaultNamespace) async throws -> PurgeReport? {
        let directory = root + "/" + namespace.rawValue
        guard DurableFiles.kind(directory) != nil else { return nil }  // deleted since the change was recorded
        guard var manifest = try VaultManifest.read(directory: directory) else {
            // Nothing written (nil), or data whose manifest is gone: the purge tells, and refuses the latter.
            let report = try await purge(namespace: namespace, trigger: .appVersionChange, resuming: false)
            return report.deletedDatasets.isEmpty ? nil : report
        }
        if let pending = manifest.pendingPurge, pending.trigger != .appVersionChange {
            // Finished by its own trigger (as opening the vault would), never merged into a reset of caches.
            _ = try await purge(namespace: namespace, trigger: pending.trigger, resuming: true)
            guard DurableFiles.kind(directory) == .directory, let after = try VaultManifest.read(directory: directory)
            else { return nil }
            manifest = after
        }
        let caches = manifest.datasets.filter {
            AppVersionCheck.resets(inventory.datasets[$0.key] ?? $0.value.declaration)
        }
        guard !caches.isEmpty || manifest.pendingPurge != nil else { return nil }
        return try await purge(namespace: namespace, trigger: .appVersionChange, resuming: false)
    }

    private func shredAllKeys(of namespace: VaultNamespace) throws -> [KeyID] {
        do {
            let ids = try keyStore.listKeys().filter { $0.namespace == namespace.rawValue }.map(\.id)
            for id in ids { try keyStore.delete(id) }
            return ids
        } catch {
            throw VaultError(
                code: .keyStoreFailed, namespace: namespace.rawValue, message: error.description, underlying: error)
        }
    }

    private func removeTree(_ path: String) throws {
        guard DurableFiles.kind(path) != nil else { return }
        do { try FileManager.default.removeItem(atPath: path) } catch {
            throw VaultError(code: .ioError, message: "\(path) cannot be deleted: \(error)")
        }
    }
}

/// What a deletion trigger did.
public struct PurgeReport: Sendable, Equatable {
    /// The trigger that ran.
    public let trigger: Dataset.DeletionTrigger
    /// The vault concerned (nil when there was no active vault to sign out of).
    public let namespace: VaultNamespace?
    /// The keys deleted: their ciphertext is unreadable from now on.
    public internal(set) var shreddedKeys: [KeyID] = []
    /// The datasets deleted.
    public internal(set) var deletedDatasets: [String] = []
    /// The datasets kept (their deletion triggers do not include this one).
    public internal(set) var keptDatasets: [String] = []
    /// Whether the deleted records' bytes are gone from the database files' write-ahead logs too. False when
    /// another process was reading a database file (an app extension): its WAL could not be emptied, the
    /// dropped records are unreachable and their keys shredded, and the next checkpoint finishes the job.
    public internal(set) var isScrubbed = true

    init(trigger: Dataset.DeletionTrigger, namespace: VaultNamespace?) {
        self.trigger = trigger
        self.namespace = namespace
    }
}

/// `app-version.json` in the data directory: the app version seen last, and what of the change to it is not
/// finished yet (``Vaults/checkAppVersion(_:)``). Written atomically and durably; no secret, no account id.
struct AppVersionRecord: Codable, Equatable {
    static let fileName = "app-version.json"

    /// The version recorded last.
    var version: String
    /// The version before it (nil: none recorded).
    var previous: String?
    /// Whether the shared cache is still to be reset for the change to ``version``.
    var pendingShared: Bool
    /// The vaults (namespaces) still to be reset for it.
    var pendingVaults: [String]

    var isFinished: Bool { !pendingShared && pendingVaults.isEmpty }

    /// The record at `path`; nil when there is none — or one that cannot be read: an unknown version is not
    /// known to be this one, and resetting caches again is always safe.
    static func read(_ path: String) -> AppVersionRecord? {
        guard let bytes = try? DurableFiles.read(path, limit: 1 << 20) else { return nil }
        return try? JSONDecoder().decode(AppVersionRecord.self, from: Data(bytes))
    }

    /// Held around every change of a record in this process: ``Vaults/checkAppVersion(_:)``, ``Vaults/open(_:)``
    /// and the shared cache's first use each change it, read and written again whole.
    static let serial = Locked(())

    /// Changes the record at `path` as it is now, when it is still the record of `version` (a newer check's
    /// record is left alone), and writes it back.
    static func update(_ path: String, version: String, _ change: (inout AppVersionRecord) -> Void)
        throws(VaultError)
    {
        try serial.withLock { _ throws(VaultError) in
            guard var record = read(path), record.version == version else { return }
            let before = record
            change(&record)
            if record != before { try record.write(path) }
        }
    }

    func write(_ path: String) throws(VaultError) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        do {
            let data = try encoder.encode(self)
            try DurableFiles.write([UInt8](data), to: path, mode: 0o600, exclusive: false)
        } catch {
            throw VaultError(code: .ioError, message: "\(path) cannot be written: \(error)")
        }
    }
}
