public import KeelCore

/// Why a sync call failed (not the failures of the network calls themselves, which items carry as
/// ``SyncFailure``).
public struct SyncError: KeelError {
    /// Codes of ``SyncError``.
    public typealias Code = ErrorCode<SyncError>

    /// What went wrong.
    public let code: Code
    /// The entity type, operation, conflict or mutation concerned, when there is one.
    public let subject: String?
    /// A short explanation for developers.
    public let message: String
    /// The vault's or the network's error behind this one.
    public let underlying: (any Error & Sendable)?

    /// An error of kind `code`.
    public init(code: Code, subject: String? = nil, message: String, underlying: (any Error & Sendable)? = nil) {
        self.code = code
        self.subject = subject
        self.message = message
        self.underlying = underlying
    }

    /// `sync <code>: <subject>: <message>`.
    public var description: String {
        "sync \(code): " + (subject.map { $0 + ": " } ?? "") + message
    }
}

extension ErrorCode where Domain == SyncError {
    /// The operation is not declared available offline and the engine is not known to be online (offline,
    /// or no sync has got through yet): it fails fast instead of being queued (MOB-DATA-004).
    public static var offline: Self { Self("offline") }
    /// A sign-out would lose changes the server never confirmed, and the caller did not say they may go
    /// (``SyncAccounts/signOut(discardingUnsent:)``). Nothing was signed out.
    public static var unsentChanges: Self { Self("unsentChanges") }
    /// The operation is not declared in any offline scenario and the engine is online: the outbox does not
    /// take it (send it with the HTTP client).
    public static var notOfflineCapable: Self { Self("notOfflineCapable") }
    /// The entity type has no declared conflict policy: it cannot be synced.
    public static var noConflictPolicy: Self { Self("noConflictPolicy") }
    /// A policy or scenario declaration is incomplete (no rationale, no sync condition, a duplicate).
    public static var invalidDeclaration: Self { Self("invalidDeclaration") }
    /// The engine was stopped (its account is no longer active): nothing more runs on it.
    public static var stopped: Self { Self("stopped") }
    /// No such conflict, or it was already resolved.
    public static var unknownConflict: Self { Self("unknownConflict") }
    /// The change cannot apply to the entity as it stands locally (an update of an entity that does not
    /// exist or was deleted, a create of one that exists).
    public static var invalidChange: Self { Self("invalidChange") }
    /// Reading or writing the account's vault failed: see ``SyncError/underlying``.
    public static var storage: Self { Self("storage") }
    /// A stored outbox, entity or conflict record cannot be read (damaged or written by a newer Keel).
    public static var damagedRecord: Self { Self("damagedRecord") }
}
