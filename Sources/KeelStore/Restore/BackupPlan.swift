public import Foundation

/// What a platform backup or a device-to-device transfer carries of a data directory, computed from the
/// inventory and the vaults' manifests (MOB-DATA-007): which files are transferred, which are recreated
/// (caches) and which are excluded (device-only data, data never backed up, and always the keys).
///
/// ```swift
/// let plan = try BackupPlan.compute(dataDirectory: dir, inventory: inventory, keyStore: keys)
/// try plan.apply()    // Apple: isExcludedFromBackup on every excluded file; everywhere: backup-plan.json
/// ```
///
/// Sealed data that is transferred travels as ciphertext: its keys never leave the device (Keychain
/// `ThisDeviceOnly`, a ``FileKeyStore`` outside the data directory), so it opens after a restore onto the
/// same device and is reported `restoredWithoutKeys` by the ``RestoreInspector`` on any other. The plan
/// says so per file (``Item/opensOnAnotherDevice``).
public struct BackupPlan: Sendable, Equatable, Codable {
    /// What a backup does with a file.
    public enum Disposition: String, Sendable, Codable, CaseIterable {
        /// Carried by platform backups and device transfers.
        case transferred
        /// Not carried: a cache, rebuilt from its source after a restore.
        case recreated
        /// Not carried: device-only data, data never backed up.
        case excluded
        /// A file Keel does not manage (the app decides; ``copyIncluded(into:)`` leaves it out).
        case unclassified
    }

    /// One file of the data directory.
    public struct Item: Sendable, Equatable, Codable {
        /// The path relative to the data directory.
        public var path: String
        /// What a backup does with it.
        public var disposition: Disposition
        /// The vault it belongs to, when it does.
        public var namespace: String?
        /// The datasets whose data it holds (empty for a vault manifest or an unclassified file).
        public var datasets: [String]
        /// Whether any of it is sealed.
        public var sealed: Bool
        /// Whether a restore onto another device can read it (transferred and not sealed).
        public var opensOnAnotherDevice: Bool
    }

    /// The data directory the plan is for.
    public var dataDirectory: String
    /// Every file under the data directory, by path.
    public var items: [Item]
    /// Where the keys are, and that they are never backed up.
    public var keys: String

    /// The paths a backup carries (relative to the data directory).
    public var included: [String] { items.filter { $0.disposition == .transferred }.map(\.path) }
    /// The paths a backup leaves out (recreated and excluded).
    public var excluded: [String] {
        items.filter { $0.disposition == .recreated || $0.disposition == .excluded }.map(\.path)
    }

    /// The name of the plan file ``apply()`` writes into the data directory.
    public static let fileName = "backup-plan.json"

    /// The plan for what is on disk under `dataDirectory` now. Declarations come from `inventory` when it
    /// declares a dataset, else from the vault's manifest.
    ///
    /// - Throws: ``VaultError`` `damaged` when `dataDirectory` or its `vaults` is not a directory, or a
    ///   vault manifest cannot be read; `ioError` when `vaults` cannot be listed.
    public static func compute(dataDirectory: URL, inventory: Inventory? = nil, keyStore: (any KeyStore)? = nil)
        throws(VaultError) -> BackupPlan
    {
        let (base, root) = VaultFiles.roots(of: dataDirectory)
        for directory in [base, root] where DurableFiles.kind(directory) == .unreadable {
            throw VaultError.cannotRead(directory)
        }
        guard DurableFiles.kind(base) == .directory else {
            throw VaultError(code: .damaged, message: "\(base) is not a directory")
        }
        var items: [Item] = []
        var owned: Set<String> = [fileName]
        if let kind = DurableFiles.kind(root), kind != .directory {
            throw VaultError(code: .damaged, message: "\(root) is not a directory")
        }
        let namespaces = try VaultFiles.namespaces(under: root)
        for namespace in namespaces {
            let directory = root + "/" + namespace.rawValue
            // A vault this process may not read is not silently left out of the backup.
            if DurableFiles.kind(directory) == .unreadable {
                throw VaultError.cannotRead(directory)
            }
            guard DurableFiles.kind(directory) == .directory,
                let manifest = try VaultManifest.read(directory: directory)
            else { continue }
            let prefix = "vaults/" + namespace.rawValue + "/"
            // A file's policy is the one it was written under: a database's is in its name
            // (`deviceOnly.sqlite`), a dataset file's is its recorded declaration's — not what the inventory
            // says now, which an app update may have changed while the records stayed where they were.
            func add(
                _ relative: String, _ datasets: [(name: String, entry: VaultManifest.Entry)],
                policy: Dataset.BackupPolicy
            ) {
                owned.insert(prefix + relative)
                let declarations = datasets.map { inventory?.datasets[$0.name] ?? $0.entry.declaration }
                let sealed = datasets.contains { $0.entry.sealed }
                let disposition: Disposition =
                    policy == .include
                    ? .transferred
                    : !declarations.isEmpty && declarations.allSatisfy(\.role.isCache) ? .recreated : .excluded
                items.append(
                    Item(
                        path: prefix + relative, disposition: disposition, namespace: namespace.rawValue,
                        datasets: datasets.map(\.name).sorted(), sealed: sealed,
                        opensOnAnotherDevice: disposition == .transferred && !sealed))
            }
            add(VaultManifest.fileName, [], policy: .include)
            owned.insert(prefix + VaultFiles.moveLock)  // an empty lock file: nothing to back up or restore
            let entries = manifest.datasets.map { (name: $0.key, entry: $0.value) }
            for policy in Dataset.BackupPolicy.allCases {
                let sharing = entries.filter { $0.entry.declaration.backup == policy && $0.entry.hasRecords }
                for companion in VaultFiles.databaseCompanions {
                    let relative = VaultFiles.database(policy) + companion
                    guard DurableFiles.kind(directory + "/" + relative) == .file else { continue }
                    add(relative, sharing, policy: policy)
                }
            }
            for entry in entries.sorted(by: { $0.name < $1.name }) {
                let files = VaultFiles.filesDirectory + "/" + entry.name
                let names = (try? FileManager.default.contentsOfDirectory(atPath: directory + "/" + files)) ?? []
                for name in names.sorted() where DurableFiles.kind(directory + "/" + files + "/" + name) == .file {
                    add(files + "/" + name, [entry], policy: entry.entry.declaration.backup)
                }
            }
        }
        // The shared cache: public data of no account, in one database per backup policy.
        for policy in Dataset.BackupPolicy.allCases {
            let declared = (inventory?.datasets.values.map { $0 } ?? []).filter {
                $0.classification == .public && !$0.isAccountBound && $0.backup == policy
            }
            let disposition: Disposition =
                policy == .include ? .transferred : declared.allSatisfy(\.role.isCache) ? .recreated : .excluded
            for companion in VaultFiles.databaseCompanions {
                let relative = SharedCache.directoryName + "/" + VaultFiles.database(policy) + companion
                guard DurableFiles.kind(base + "/" + relative) == .file else { continue }
                owned.insert(relative)
                items.append(
                    Item(
                        path: relative, disposition: disposition, namespace: nil,
                        datasets: declared.map(\.name).sorted(),
                        sealed: false, opensOnAnotherDevice: disposition == .transferred))
            }
        }
        // The app version seen last (``Vaults/checkAppVersion(_:)``): it travels with the data it describes, so
        // a restore into another version of the app resets the caches that came along; missing, the first
        // check resets them anyway.
        if DurableFiles.kind(base + "/" + AppVersionRecord.fileName) == .file {
            owned.insert(AppVersionRecord.fileName)
            items.append(
                Item(
                    path: AppVersionRecord.fileName, disposition: .transferred, namespace: nil, datasets: [],
                    sealed: false, opensOnAnotherDevice: true))
        }
        // Everything else under the data directory is the app's own.
        if let enumerator = FileManager.default.enumerator(atPath: base) {
            for case let relative as String in enumerator
            where !owned.contains(relative) && DurableFiles.kind(base + "/" + relative) == .file {
                items.append(
                    Item(
                        path: relative, disposition: .unclassified, namespace: nil, datasets: [], sealed: false,
                        opensOnAnotherDevice: false))
            }
        }
        let keys: String
        if let files = keyStore as? FileKeyStore {
            keys = "\(files.directory.path) (outside the data directory; never backed up)"
        } else if let keyStore {
            keys = "\(type(of: keyStore)) (this device only; never backed up)"
        } else {
            keys = "the app's key store (never backed up)"
        }
        // The directory as the caller named it (the plan compares and reads back the same way before and after).
        return BackupPlan(
            dataDirectory: dataDirectory.path, items: items.sorted { $0.path < $1.path }, keys: keys)
    }

    /// Applies the plan: on Apple platforms, sets `isExcludedFromBackup` on every recreated and excluded
    /// file (vault writes already do this after each write; this re-applies it, e.g. after a migration);
    /// on every platform, writes the plan as `backup-plan.json` into the data directory, for backup tools
    /// (and tests) that follow it.
    public func apply() throws(VaultError) {
        for item in items where item.disposition == .recreated || item.disposition == .excluded {
            try BackupExclusion.apply(to: dataDirectory + "/" + item.path, policy: .exclude)
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        let data: Data
        do { data = try encoder.encode(self) } catch {
            throw VaultError(code: .ioError, message: "the backup plan cannot be encoded: \(error)")
        }
        do throws(DurableFiles.Failure) {
            try DurableFiles.write(
                [UInt8](data), to: dataDirectory + "/" + Self.fileName, mode: 0o600, exclusive: false)
        } catch { throw VaultError(code: .ioError, message: error.description) }
    }

    /// Copies every transferred file into `destination` (a new data directory), as a platform restore
    /// would: the backup of a platform that has none (Linux), and the simulation tests use.
    ///
    /// - Throws: ``VaultError`` `ioError` when a file cannot be copied; `damaged` when `destination`
    ///   exists and is not an empty directory (nothing is overwritten).
    public func copyIncluded(into destination: URL) throws(VaultError) {
        let target = destination.path
        switch DurableFiles.kind(target) {
        case nil: break
        case .directory:
            guard ((try? FileManager.default.contentsOfDirectory(atPath: target)) ?? []).isEmpty else {
                throw VaultError(code: .damaged, message: "\(target) is not empty; nothing was copied")
            }
        default: throw VaultError(code: .damaged, message: "\(target) is not a directory; nothing was copied")
        }
        do throws(DurableFiles.Failure) {
            try DurableFiles.makeDirectory(target, mode: 0o700)
            for path in included {
                var directory = target
                for component in path.split(separator: "/").dropLast() {
                    directory += "/" + component
                    try DurableFiles.makeDirectory(directory, mode: 0o700)
                }
                let bytes = try DurableFiles.read(dataDirectory + "/" + path, limit: Int(Int32.max))
                try DurableFiles.write(bytes, to: target + "/" + path, mode: 0o600, exclusive: true)
            }
        } catch { throw VaultError(code: .ioError, message: error.description) }
    }
}
