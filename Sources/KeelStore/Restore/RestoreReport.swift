/// What the ``RestoreInspector`` found: one entry per vault on disk (MOB-DATA-007).
public struct RestoreReport: Sendable, Equatable, Codable {
    /// One entry per vault, by namespace; also one `freshInstall` entry per namespace that has keys in the
    /// key store but no data (left by an earlier installation; they are deleted when that account signs in).
    public var vaults: [VaultInspection]

    /// A report of these vaults.
    public init(vaults: [VaultInspection]) { self.vaults = vaults }

    /// Whether nothing of an earlier installation's data is on disk.
    public var isFreshInstall: Bool { vaults.allSatisfy { $0.state == .freshInstall } }

    /// Whether any vault needs a recovery path before its data is used: anything but `normal` and
    /// `freshInstall`.
    public var needsRecovery: Bool { vaults.contains { $0.state != .normal && $0.state != .freshInstall } }
}

/// The state of one vault at launch.
public enum RestoreState: String, Sendable, Codable, CaseIterable {
    /// No data of this namespace on disk (keys left by an earlier installation count as absent).
    case freshInstall
    /// Every dataset readable, schema current or migratable, permissions granted on this device.
    case normal
    /// Ciphertext is present but its key is absent (restored onto another device, or its keys were lost):
    /// the affected datasets are listed. The ciphertext is kept untouched.
    case restoredWithoutKeys
    /// Device-bound credentials are absent (they never travel in backups): sign in again.
    case credentialsMissing
    /// Permissions or enrollments were granted on another device: ask for them again.
    case permissionsToRequest
    /// A newer app (or a newer vault format) wrote the vault: update the app.
    case schemaTooNew
    /// The vault is older than this app's migrations support.
    case schemaTooOld
    /// Data the vault records is missing (files not in the backup, or lost).
    case partial
    /// Files are damaged: a database that is not SQLite, a damaged key or manifest, a file where a
    /// directory must be. Nothing was deleted.
    case damaged
    /// The key store is locked (a locked device): inspect again after unlock before reading.
    case locked

    /// Which state a vault is reported in when several apply: the most serious first.
    static let precedence: [RestoreState] = [
        .damaged, .schemaTooNew, .schemaTooOld, .locked, .restoredWithoutKeys, .partial, .credentialsMissing,
        .permissionsToRequest,
    ]
}

/// A way out of a state that is not `normal`, in the order an app should offer them.
public enum RecoveryPath: String, Sendable, Codable, CaseIterable {
    /// Keep the sealed data untouched: it opens again if its keys come back (a restore onto the original
    /// device). Never reset user data that cannot be read.
    case keepCiphertext
    /// Keep the vault's files untouched (a schema or damage problem): nothing is reset or deleted.
    case keepData
    /// Give the synced datasets new keys (``Vault/replaceUnavailableKey(_:)``) and download them again.
    case redownloadSyncedData
    /// Rebuild caches from their sources (the only data that may be reset).
    case rebuildCaches
    /// Unsynced drafts are still readable: export or send them before anything else.
    case exportUnsyncedDrafts
    /// Sign in again: credentials are device-bound.
    case signInAgain
    /// Ask again for the permissions and enrollments listed in ``VaultInspection/permissionsToRequest``.
    case requestPermissions
    /// Update the app: a newer version wrote this data.
    case updateApp
    /// Restore the damaged or missing files from a backup (or contact support); nothing was deleted.
    case restoreFromBackup
    /// Unlock the device and inspect again.
    case unlockDevice
}

/// One vault's state, its datasets and its recovery paths.
public struct VaultInspection: Sendable, Equatable, Codable {
    /// The vault's namespace (its directory name under `vaults/`).
    public var namespace: String
    /// The state, the most serious of ``conditions`` (`normal` when there are none).
    public var state: RestoreState
    /// Every state that applies, most serious first (empty for `normal` and `freshInstall`).
    public var conditions: [RestoreState]
    /// Every dataset the vault has held data of, by name.
    public var datasets: [DatasetInspection]
    /// What the app can do, in order.
    public var recovery: [RecoveryPath]
    /// Permissions and enrollments granted on another device (to request again).
    public var permissionsToRequest: [String]
    /// Migrations that opening the vault will run (the vault is older than the app, and migratable).
    public var pendingMigrations: [String]
    /// Why the vault as a whole is `damaged` or `schemaTooNew`, when it is (nil otherwise).
    public var problem: String?

    /// An inspection with these fields.
    public init(
        namespace: String, state: RestoreState, conditions: [RestoreState] = [], datasets: [DatasetInspection] = [],
        recovery: [RecoveryPath] = [], permissionsToRequest: [String] = [], pendingMigrations: [String] = [],
        problem: String? = nil
    ) {
        self.namespace = namespace
        self.state = state
        self.conditions = conditions
        self.datasets = datasets
        self.recovery = recovery
        self.permissionsToRequest = permissionsToRequest
        self.pendingMigrations = pendingMigrations
        self.problem = problem
    }

    private enum CodingKeys: String, CodingKey {
        case namespace, state, conditions, datasets, recovery, permissionsToRequest, pendingMigrations, problem
    }

    /// Writes every key, `problem` as `null` when there is none.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(namespace, forKey: .namespace)
        try container.encode(state, forKey: .state)
        try container.encode(conditions, forKey: .conditions)
        try container.encode(datasets, forKey: .datasets)
        try container.encode(recovery, forKey: .recovery)
        try container.encode(permissionsToRequest, forKey: .permissionsToRequest)
        try container.encode(pendingMigrations, forKey: .pendingMigrations)
        try container.encode(problem, forKey: .problem)
    }
}

/// Whether one dataset of a vault can be read, and if not, why.
public struct DatasetInspection: Sendable, Equatable, Codable {
    /// Why a dataset cannot be read.
    public enum Reason: String, Sendable, Codable, CaseIterable {
        /// Its ciphertext is present, its key is not in the key store (or belongs to another installation).
        case keyUnavailable
        /// The key store is locked.
        case keyStoreLocked
        /// Its key is in the key store but damaged (checksum, length).
        case keyDamaged
        /// The key store itself is gone or unusable (its directory deleted or replaced, a key file that
        /// cannot be read): never read as "no keys".
        case keyStoreUnavailable
        /// Its database or files are not on disk (not in the backup, or lost).
        case missing
        /// Its database file is not an SQLite database, or a file is where its directory must be.
        case damaged
        /// A deletion trigger (logout, revocation) started deleting it; opening the vault finishes that.
        case pendingDeletion
        /// Written under another declaration than the inventory's now (backup policy or sealing), and not
        /// moved yet (``Vault/moveToCurrentDeclaration(_:)``, from a vault migration): refused until it is.
        case declarationChanged
    }

    /// The dataset's name.
    public var name: String
    /// Whether its data can be read on this device now.
    public var readable: Bool
    /// Why not (nil when readable).
    public var reason: Reason?
    /// Whether it is a cache (rebuildable: missing or unreadable, it is rebuilt, not recovered).
    public var isCache: Bool
    /// Whether it holds unsynced drafts (its inventory kind is `draft`).
    public var isDraft: Bool
    /// Whether it holds credentials.
    public var isCredential: Bool

    /// An inspection with these fields.
    public init(
        name: String, readable: Bool, reason: Reason?, isCache: Bool = false, isDraft: Bool = false,
        isCredential: Bool = false
    ) {
        self.name = name
        self.readable = readable
        self.reason = reason
        self.isCache = isCache
        self.isDraft = isDraft
        self.isCredential = isCredential
    }

    private enum CodingKeys: String, CodingKey { case name, readable, reason, isCache, isDraft, isCredential }

    /// Writes every key, `reason` as `null` when the dataset is readable.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(name, forKey: .name)
        try container.encode(readable, forKey: .readable)
        try container.encode(reason, forKey: .reason)
        try container.encode(isCache, forKey: .isCache)
        try container.encode(isDraft, forKey: .isDraft)
        try container.encode(isCredential, forKey: .isCredential)
    }
}
