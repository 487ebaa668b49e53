import Foundation
public import KeelContract
public import KeelCore
public import KeelHTTP

/// An entity as the server holds it.
public struct RemoteEntity: Sendable, Hashable {
    /// Which entity.
    public let ref: EntityRef
    /// The server's version of it (raised by every change the server applies).
    public let version: Int
    /// Whether the server deleted it (a tombstone).
    public let isDeleted: Bool
    /// Its fields.
    public let fields: JSONObject

    /// An entity.
    public init(ref: EntityRef, version: Int, isDeleted: Bool, fields: JSONObject) {
        self.ref = ref
        self.version = version
        self.isDeleted = isDeleted
        self.fields = fields
    }
}

/// The server's answer for one mutation of a pushed batch.
public enum PushResult: Sendable, Hashable {
    /// Applied now; the entity as it is after the change.
    case applied(RemoteEntity)
    /// Applied before (its idempotency key was seen); the entity as the first application left it, when the
    /// server says.
    case duplicate(RemoteEntity?)
    /// Not applied: the entity changed since the mutation's base version. The server's current entity.
    case conflict(RemoteEntity)
    /// Not applied, and sending it again will not help (invalid, not found): the contract's code. The change
    /// is `failed` with kind `conflict` when the code is `not_found` (the entity is gone on the server: the
    /// user decides between discarding the change and making the entity again), `validation` for any other
    /// code (its content is refused: the user fixes it). A refusal the user cannot act on by editing (access to
    /// one entity, say) is better thrown from ``SyncRemote/push(_:batchKey:context:)`` as the whole call's
    /// `HTTPFailure` when the backend refuses it so.
    case rejected(code: String)
}

/// A page of the server's changes feed.
public struct PullPage: Sendable, Hashable {
    /// Changed entities, oldest change first (deletions as tombstones).
    public let changes: [RemoteEntity]
    /// Where the next pull starts (opaque; stored after the page is applied).
    public let cursor: String
    /// Whether more changes wait after this page.
    public let hasMore: Bool

    /// A page.
    public init(changes: [RemoteEntity], cursor: String, hasMore: Bool) {
        self.changes = changes
        self.cursor = cursor
        self.hasMore = hasMore
    }
}

/// Who a sync call is made for: the account and the epoch of its vault. A remote uses the account's own
/// credentials (and may name the account to the server); the engine drops any answer that arrives after
/// its epoch ended.
public struct SyncContext: Sendable, Hashable {
    /// The account whose changes these are.
    public let account: AccountID
    /// The epoch of the account's vault (``KeelStore/Vault/epoch``).
    public let epoch: UInt64
    /// The correlation id of this push or pull. A push's is the same for every attempt of the same batch:
    /// its change's own for a batch of one, else one derived from the batch key.
    public let correlationID: CorrelationID

    /// A context (the engine makes one per call).
    public init(account: AccountID, epoch: UInt64, correlationID: CorrelationID) {
        self.account = account
        self.epoch = epoch
        self.correlationID = correlationID
    }
}

/// The backend side of sync, as the engine needs it: push a batch of mutations, pull a page of changes.
///
/// Keel's reference backend speaks it through `NotesRemote` (KeelReference); an app adapts its own API the
/// same way. Implementations send with ``KeelHTTP/HTTPClient`` (timeouts, retries, failure taxonomy) and
/// throw its ``KeelHTTP/HTTPFailure`` unchanged, so the engine can tell "not sent" from "unknown".
public protocol SyncRemote: Sendable {
    /// Sends `batch` (at most one mutation per entity, in outbox order) under `batchKey`, and returns one
    /// result per mutation, in order.
    ///
    /// A thrown failure answers for the whole batch. A backend without a batch endpoint (one request per
    /// change) cannot say "the first went through, the second was refused" that way: make its engine with
    /// `batchSize: 1`, so that each change has its own answer and none is shown failed after it was applied.
    /// Send each change's ``PendingMutation/idempotencyKey`` with it either way: after an unknown outcome the
    /// engine sends the change again under the same key.
    func push(_ batch: [PendingMutation], batchKey: IdempotencyKey, context: SyncContext) async throws(HTTPFailure)
        -> [PushResult]

    /// The changes after `cursor` (from the start when nil), at most `limit`.
    func pull(after cursor: String?, limit: Int, context: SyncContext) async throws(HTTPFailure) -> PullPage

    /// Whether `failure` (thrown by ``pull(after:limit:context:)`` for a cursor) says the server does not
    /// know that cursor: its data was reset or restored, or the cursor was never its own. The engine then
    /// forgets the cursor and pulls from the start, once per run (changes it already has are skipped),
    /// instead of failing every sync from then on. The default says no.
    func rejectsCursor(_ failure: HTTPFailure) -> Bool
}

extension SyncRemote {
    /// No failure is taken for an unknown cursor: every pull failure ends the run.
    public func rejectsCursor(_ failure: HTTPFailure) -> Bool { false }
}
