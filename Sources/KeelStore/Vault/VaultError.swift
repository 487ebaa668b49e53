public import KeelCore

/// Why a vault operation failed.
public struct VaultError: KeelError {
    /// Codes of ``VaultError``.
    public typealias Code = ErrorCode<VaultError>

    /// What went wrong.
    public let code: Code
    /// The vault's namespace, when one is concerned.
    public let namespace: String?
    /// The dataset concerned, when there is one.
    public let dataset: String?
    /// The record or file concerned, when there is one.
    public let recordID: String?
    /// A short explanation for developers (never key bytes or plaintext).
    public let message: String
    /// The key store's or the database's error behind this one, when there is one.
    public let underlying: (any Error & Sendable)?

    /// An error of kind `code`.
    public init(
        code: Code, namespace: String? = nil, dataset: String? = nil, recordID: String? = nil, message: String,
        underlying: (any Error & Sendable)? = nil
    ) {
        self.code = code
        self.namespace = namespace
        self.dataset = dataset
        self.recordID = recordID
        self.message = message
        self.underlying = underlying
    }

    /// `path` this process may not look at (permissions, a symlink loop: ``DurableFiles/FileKind/unreadable``):
    /// an I/O error, never a finding about the data — nothing there would be a fresh install, and a
    /// purge that cannot look would report itself done.
    static func cannotRead(_ path: String, namespace: String? = nil, outcome: String = "nothing was changed")
        -> VaultError
    {
        VaultError(
            code: .ioError, namespace: namespace, message: "\(path) cannot be read (check its permissions); \(outcome)")
    }

    /// A database failure as the vault reports it: `damaged` when the file is not a database (or is
    /// corrupt), `databaseFailed` otherwise.
    init(_ error: DatabaseError, namespace: String? = nil, dataset: String? = nil, message: String? = nil) {
        self.init(
            code: error.code == .notADatabase || error.code == .corrupt ? .damaged : .databaseFailed,
            namespace: namespace, dataset: dataset, message: message ?? error.description, underlying: error)
    }

    /// A developer-facing explanation: `vault cannotOpen: notes/n1: ...`.
    public var description: String {
        let subject = [dataset, recordID].compactMap { $0 }.joined(separator: "/")
        return "vault \(code): " + (subject.isEmpty ? "" : subject + ": ") + message
    }
}

extension ErrorCode where Domain == VaultError {
    /// A sealed record or file cannot be opened: wrong key, moved to another record, dataset or account,
    /// truncated, altered, or an unknown envelope version. Never garbage plaintext.
    public static var cannotOpen: Self { Self("cannotOpen") }
    /// The vault was closed (an account switch, logout): the handle, and anything still running on it, is
    /// dead. Nothing it does reaches another account's vault.
    public static var vaultClosed: Self { Self("vaultClosed") }
    /// Another account's vault is open: close it first (one active vault at a time).
    public static var anotherVaultOpen: Self { Self("anotherVaultOpen") }
    /// The key of data that exists is not in the key store (a restore onto a new device, a shredded key).
    /// The ciphertext is kept untouched; nothing is created over it.
    public static var keyUnavailable: Self { Self("keyUnavailable") }
    /// The key store is locked (a locked device): keys exist but cannot be read now.
    public static var locked: Self { Self("locked") }
    /// The key store failed (gone, damaged key file): see ``VaultError/underlying``.
    public static var keyStoreFailed: Self { Self("keyStoreFailed") }
    /// The vault's files are damaged or incomplete (a manifest that cannot be read, data without a
    /// manifest, a file where a directory must be). Nothing was deleted; the restore inspector reports it.
    public static var damaged: Self { Self("damaged") }
    /// The vault was written by a newer version of Keel's vault format than this app knows.
    public static var formatTooNew: Self { Self("formatTooNew") }
    /// The vault applied ``VaultSchema`` migrations this app does not know (a newer app wrote it): it is
    /// neither migrated nor reset. Update the app.
    public static var schemaTooNew: Self { Self("schemaTooNew") }
    /// The vault misses migrations this app no longer carries (``VaultSchema/retired``): it is older than
    /// this app can migrate. Nothing was changed.
    public static var schemaTooOld: Self { Self("schemaTooOld") }
    /// The app's ``VaultSchema`` registers migrations the vault has not applied before ones it has (a
    /// shipped list was reordered or inserted into): nothing was run. Fix the list and update the app.
    public static var schemaInconsistent: Self { Self("schemaInconsistent") }
    /// A ``VaultSchema`` migration threw (see ``VaultError/underlying``): the vault stays closed, what the
    /// migration committed stays, and the migration runs again at the next open.
    public static var migrationFailed: Self { Self("migrationFailed") }
    /// The dataset cannot be kept here: an account-bound dataset in the shared store, a dataset that is
    /// not account-bound in a vault, a name or file name that is not a safe path component.
    public static var misplaced: Self { Self("misplaced") }
    /// The dataset's data was written under another backup policy or classification than the inventory now
    /// declares (an app update changed it): it stays where it is, untouched, and the dataset is refused
    /// until the app moves it, rather than read as empty or deleted by a logout judged by the old
    /// declaration.
    public static var declarationChanged: Self { Self("declarationChanged") }
    /// The database under the vault failed: see ``VaultError/underlying``.
    public static var databaseFailed: Self { Self("databaseFailed") }
    /// Reading or writing a vault file failed.
    public static var ioError: Self { Self("ioError") }
    /// A value or file larger than a vault keeps in one piece (``Vault/maximumValueSize``): nothing was
    /// written.
    public static var tooLarge: Self { Self("tooLarge") }
    /// The store's caches are still to be reset for a change of the app's version (``Vaults/checkAppVersion(_:)``
    /// could not reset them), and could not be reset now either: the store is not opened, since what it cached
    /// was written by another version. See ``VaultError/underlying``; it is tried again at the next open and
    /// the next check.
    public static var appVersionResetUnfinished: Self { Self("appVersionResetUnfinished") }
}
