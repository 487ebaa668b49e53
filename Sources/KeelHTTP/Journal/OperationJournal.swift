public import Foundation
public import KeelCore

/// One mutating operation as the journal keeps it: enough to tell, after the app was suspended or
/// killed, whether the server applied it (MOB-API-004).
public struct JournalEntry: Sendable, Equatable, Codable {
    /// Where the operation stands.
    public enum State: Sendable, Equatable, Codable {
        /// Recorded before the first byte left; no answer yet (after a relaunch: it may have been applied).
        case sending
        /// The server confirmed it.
        case succeeded
        /// It ended with a failure of this kind whose outcome says it was not applied.
        case failed(HTTPFailure.Kind)
        /// The server said, when asked after a relaunch, that it never applied it.
        case notApplied
        /// It may or may not have been applied; reconcile finds out.
        case unknown
    }

    /// Whether the operation is settled (``State/succeeded``, ``State/failed(_:)`` or ``State/notApplied``).
    public var isResolved: Bool {
        switch state {
        case .succeeded, .failed, .notApplied: true
        case .sending, .unknown: false
        }
    }

    /// The operation's id (the journal's key).
    public let operationID: String
    /// The idempotency key, for keyed operations (re-sending with it is safe).
    public let idempotencyKey: IdempotencyKey?
    /// The user operation's correlation id, reused by every attempt and by reconcile after a relaunch.
    public let correlationID: CorrelationID
    /// The method.
    public let method: String
    /// The path relative to the client's base URL.
    public let path: String
    /// SHA-256 of the body (lowercase hex), so a rebuilt operation can be checked against what was sent;
    /// nil without a body. The body itself is not kept here (the app's outbox owns it).
    public let bodyDigest: String?
    /// When it was recorded (the client's wall clock).
    public let createdAt: Date
    /// Where it stands.
    public var state: State
    /// The server's request id of the answer that decided it, when the server sent one (never invented).
    public var requestID: String?
    /// The trace the operation belonged to, so a reconcile continues it.
    public var trace: TraceContext?

    /// An entry.
    public init(
        operationID: String, idempotencyKey: IdempotencyKey?, correlationID: CorrelationID, method: String,
        path: String, bodyDigest: String?, createdAt: Date, state: State, requestID: String? = nil,
        trace: TraceContext? = nil
    ) {
        self.operationID = operationID
        self.idempotencyKey = idempotencyKey
        self.correlationID = correlationID
        self.method = method
        self.path = path
        self.bodyDigest = bodyDigest
        self.createdAt = createdAt
        self.state = state
        self.requestID = requestID
        self.trace = trace
    }
}

/// Durable memory of mutating operations in flight (MOB-API-004): the client records each one **before**
/// its first byte leaves and records how it ended, so that after a suspension or a kill the app can find
/// out what happened instead of guessing.
///
/// KeelHTTP declares the protocol; `SQLiteOperationJournal` in KeelSync keeps it in a real SQLite file.
/// A journal that cannot record (a full disk) stops the operation before anything is sent.
public protocol OperationJournal: Sendable {
    /// Records `entry` (state ``JournalEntry/State/sending``), replacing an entry with the same operation id
    /// (a re-send after a relaunch keeps one entry per operation). Must be durable when it returns.
    func record(_ entry: JournalEntry) async throws
    /// Moves entry `operationID` to `state` (with the request id of the deciding answer, when present).
    func complete(_ operationID: String, state: JournalEntry.State, requestID: String?) async throws
    /// Moves entry `operationID` to `state` only if it is still unresolved (`sending` or `unknown`), and says
    /// whether it did. ``HTTPClient/reconcile(rebuild:status:)`` settles with it: an entry its own call
    /// settled meanwhile (an answer that came in while the backend was asked about it) keeps that answer.
    /// The default reads the entry, then completes it; a journal that can do both in one step (a
    /// conditional `UPDATE`) should, as `SQLiteOperationJournal` does.
    func settleUnresolved(_ operationID: String, state: JournalEntry.State, requestID: String?) async throws -> Bool
    /// Every entry still `sending` or `unknown`, oldest first. An entry that cannot be read back (damaged, or
    /// written by a newer release) is not among them: it is listed by ``unreadable()``, so that one bad row
    /// does not keep every other operation from being reconciled.
    func unresolved() async throws -> [JournalEntry]
    /// The entry for `operationID`, if any.
    func entry(_ operationID: String) async throws -> JournalEntry?
    /// Entries the journal holds but cannot read back, with the reason. Nothing resolves or removes them:
    /// what became of their operations is for a person to find out (the default: none).
    func unreadable() async throws -> [UnreadableJournalEntry]
    /// Every entry of user operation `correlationID` (the calls one operation made), or nil when the
    /// journal cannot tell (the default). ``HTTPClient/reconcile(rebuild:status:)`` uses it to see when the
    /// backend's answer about a correlation id cannot be told apart between several calls.
    func entries(correlationID: CorrelationID) async throws -> [JournalEntry]?
}

extension OperationJournal {
    /// Reads entry `operationID` and completes it if it is unresolved: two steps, so an answer recorded
    /// between them can still be overwritten. Override it where the journal can check and write at once.
    public func settleUnresolved(_ operationID: String, state: JournalEntry.State, requestID: String?) async throws
        -> Bool
    {
        guard let current = try await entry(operationID), !current.isResolved else { return false }
        try await complete(operationID, state: state, requestID: requestID)
        return true
    }

    /// None: a journal that reads back everything it records.
    public func unreadable() async throws -> [UnreadableJournalEntry] { [] }

    /// Nil: this journal cannot list an operation's calls.
    public func entries(correlationID: CorrelationID) async throws -> [JournalEntry]? { nil }
}

/// An entry of an ``OperationJournal`` that cannot be read back (``OperationJournal/unreadable()``).
public struct UnreadableJournalEntry: Sendable, Equatable {
    /// The entry's operation id, as stored.
    public let operationID: String
    /// What cannot be read.
    public let reason: String

    /// An unreadable entry.
    public init(operationID: String, reason: String) {
        self.operationID = operationID
        self.reason = reason
    }
}
