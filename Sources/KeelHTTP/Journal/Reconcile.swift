import Foundation
public import KeelCore
import KeelContract

/// How the backend answers "did you apply the operation with this correlation id?" (MOB-API-004).
///
/// The default matches Keel's sample contract (`GET /operations/{correlationID}` answering
/// `{"status": "applied" | "notApplied" | "inProgress"}`; a 404 whose error body has the code
/// `operation_not_found` means it never arrived).
///
/// A 404 is believed only with one of ``notFoundCodes`` in the backend's error body, a code that names the
/// operation (not a generic `not_found`): a gateway, a CDN, a captive portal, a backend without the endpoint
/// or one routing a mistyped path answers 404 too, often with a generic code, and reading any of those as
/// "never applied" would let the app offer to do a payment again that went through.
public struct OperationStatusQuery: Sendable {
    /// The path to ask, for an entry.
    public var path: @Sendable (JournalEntry) -> String
    /// The member of the JSON answer that holds the status.
    public var statusMember: String
    /// The value meaning "applied".
    public var applied: String
    /// The value meaning "never applied" (so the app may offer to do it again).
    public var notApplied: String
    /// Whether a 404 with one of ``notFoundCodes`` means "never arrived" (as in the sample contract).
    public var notFoundMeansNotApplied: Bool
    /// The error codes (``HTTPFailure/errorCode``, from the contract's error body) of the backend's own
    /// "no such operation"; a 404 without one of them leaves the entry unknown.
    public var notFoundCodes: Set<String>

    /// A query; the defaults are the sample contract's.
    public init(
        path: @escaping @Sendable (JournalEntry) -> String = {
            "/operations/" + HTTPOperation.pathSegment($0.correlationID.rawValue)
        },
        statusMember: String = "status", applied: String = "applied", notApplied: String = "notApplied",
        notFoundMeansNotApplied: Bool = true, notFoundCodes: Set<String> = ["operation_not_found"]
    ) {
        self.path = path
        self.statusMember = statusMember
        self.applied = applied
        self.notApplied = notApplied
        self.notFoundMeansNotApplied = notFoundMeansNotApplied
        self.notFoundCodes = notFoundCodes
    }
}

extension HTTPClient {
    /// Resolves every journal entry a suspension or a kill left `sending` or `unknown` (call it after a
    /// relaunch, before the app shows what it believes the server has), and returns the entries as they
    /// now stand.
    ///
    /// - A **keyed** operation is sent again with its idempotency key and correlation id (the backend
    ///   applies a key at most once), when `rebuild` gives the operation back from the app's own records
    ///   and its body is the one journaled (a different body under the same key is never sent).
    /// - Anything else is looked up with `status`, never re-sent blindly: `applied` settles it as
    ///   succeeded, `notApplied` (or the backend's own 404, see ``OperationStatusQuery``) as not applied.
    /// - A re-send that fails leaves the entry `unknown` (the first send may have been applied), whatever
    ///   this attempt's own outcome: offline, a 401 for an expired token, a 5xx.
    /// - An entry that cannot be resolved (no answer, no status endpoint, a malformed answer) stays
    ///   `unknown`, and visible to the app. So does one whose correlation id other calls share: the
    ///   backend's "applied" about the correlation id may be theirs ("not applied" holds for all of them).
    /// - An entry the journal cannot read back is not touched (``OperationJournal/unreadable()`` lists it);
    ///   the others are reconciled all the same.
    ///
    /// - Throws: the journal's error when it cannot be read.
    public func reconcile(
        rebuild: @Sendable (JournalEntry) async -> HTTPOperation? = { _ in nil },
        status: OperationStatusQuery? = OperationStatusQuery()
    ) async throws -> [JournalEntry] {
        guard let journal = configuration.journal else { return [] }
        var results: [JournalEntry] = []
        for entry in try await journal.unresolved() {
            // An entry this client is sending right now is not left over from a suspension or a kill: its own
            // call settles it (a status lookup racing it could read "never arrived" for a request still on its
            // way). While this one is resolved, no call for it starts (``HTTPClient/JournalTraffic``).
            let taken = journalTraffic.withLock { traffic in
                traffic.keys[entry.operationID] == nil && traffic.reconciling.insert(entry.operationID).inserted
            }
            guard taken else { continue }
            defer { journalTraffic.withLock { _ = $0.reconciling.remove(entry.operationID) } }
            // The list was read before: the entry's own call (this client's, or another client's on the same
            // journal) may have settled it since. A settled entry is not asked about again.
            guard let current = try await journal.entry(entry.operationID), !current.isResolved else { continue }
            results.append(try await reconcile(current, journal: journal, rebuild: rebuild, status: status))
        }
        return results
    }

    private func reconcile(
        _ entry: JournalEntry, journal: any OperationJournal, rebuild: @Sendable (JournalEntry) async -> HTTPOperation?,
        status: OperationStatusQuery?
    ) async throws -> JournalEntry {
        // Re-sent only when the app rebuilt the same request: the same key, method, path and body (found in
        // review: the same key and body to another endpoint was re-sent, where it may be applied as new).
        if let key = entry.idempotencyKey, var operation = await rebuild(entry), operation.idempotency == .keyed(key),
            operation.bodyDigest == entry.bodyDigest, operation.method == entry.method, operation.path == entry.path
        {
            operation.correlationID = entry.correlationID
            operation.operationID = entry.operationID
            operation.trace = entry.trace
            // The journal records the re-send and settles it like any call (a keyed re-send is safe: the entry
            // is handed back to calls for it).
            journalTraffic.withLock { _ = $0.reconciling.remove(entry.operationID) }
            _ = try? await send(operation)
            return try await journal.entry(entry.operationID) ?? entry
        }
        var settled: JournalEntry.State = .unknown
        var requestID: String?
        if let status {
            var query = HTTPOperation.get(status.path(entry))
            query.correlationID = entry.correlationID
            query.trace = entry.trace
            do {
                let reply = try await send(query)
                requestID = reply.requestID
                let answer = (try? JSONValue(parsing: reply.body))?[status.statusMember]?.stringValue
                if answer == status.applied {
                    settled = .succeeded
                } else if answer == status.notApplied {
                    settled = .notApplied
                }
            } catch {
                if error.status == 404, status.notFoundMeansNotApplied,
                    let code = error.errorCode, status.notFoundCodes.contains(code)
                {
                    settled = .notApplied
                    requestID = error.requestID
                }
            }
        }
        if settled == .succeeded {
            // The answer is about the correlation id: with several calls of the operation journaled (an order
            // and its payment), "applied" may be another call's, and this one stays unknown. (A journal that
            // cannot list them is taken at its word.)
            let calls = try await journal.entries(correlationID: entry.correlationID)
            if let calls, calls.contains(where: { $0.operationID != entry.operationID }) { settled = .unknown }
        }
        // Only while it is unresolved: another client on the same journal (a background task's) may have
        // had its answer meanwhile, and "not applied" must not be written over its "succeeded". The request
        // id stays the operation's own unless the status answer settled it (then it is the deciding one).
        _ = try await journal.settleUnresolved(
            entry.operationID, state: settled, requestID: settled == .unknown ? nil : requestID)
        return try await journal.entry(entry.operationID) ?? entry
    }
}
