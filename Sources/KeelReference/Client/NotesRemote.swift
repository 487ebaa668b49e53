import Foundation
import KeelContract
public import KeelCore
public import KeelHTTP
public import KeelSync

/// The reference backend's sync API (`POST /mutations`, `GET /changes` of the notes contract 1.3 and later)
/// as a ``KeelSync/SyncRemote`` for the entity type `note`, over ``KeelHTTP/HTTPClient``: one account's token
/// and id on every call, the batch key as `Idempotency-Key`, each mutation's own key in the body. Also
/// publishing (`POST /notes/{id}/publish`, contract 1.4).
public struct NotesRemote: SyncRemote {
    /// The entity type this remote syncs.
    public static let entityType = "note"

    /// The client (its base URL is the backend's).
    public let client: HTTPClient
    /// The account the token belongs to; sent as `X-Account-ID`, so the backend refuses the token for any
    /// other account.
    public let account: AccountID
    /// The account's bearer token.
    public let token: String

    /// A remote for `account`, signed in with `token`.
    public init(client: HTTPClient, account: AccountID, token: String) {
        self.client = client
        self.account = account
        self.token = token
    }

    /// Signs `account` in (`POST /sessions`) and returns its token.
    public static func signIn(_ account: AccountID, client: HTTPClient) async throws(HTTPFailure) -> String {
        let body = JSONValue.object(["account": .string(account.rawValue)]).serialized()
        let reply = try await client.send(
            .post(
                "/sessions", body: Data(body), idempotency: .idempotent, headers: ["Content-Type": "application/json"]))
        guard let token = (try? JSONValue(parsing: reply.body))?["token"]?.stringValue else {
            throw HTTPFailure(
                kind: .contractViolation, outcome: .rejected, status: reply.status, correlationID: reply.correlationID,
                detail: Redacted("sign-in answer without a token"))
        }
        return token
    }

    /// A publication (contract 1.4): its id, its page's path on the public page host, the version published.
    public struct Publication: Sendable, Equatable {
        /// The publication's id.
        public let id: String
        /// The public page, relative to the public page host (`/p/...`).
        public let path: String
        /// The note version that was published.
        public let version: Int
    }

    /// Publishes the note (`POST /notes/{id}/publish`) under `key`: made at most once per key, the same
    /// publication answered on every replay.
    public func publish(_ noteID: String, key: IdempotencyKey, correlationID: CorrelationID? = nil)
        async throws(HTTPFailure) -> Publication
    {
        let reply = try await client.send(
            .post(
                "/notes/" + HTTPOperation.pathSegment(noteID) + "/publish", body: nil, idempotency: .keyed(key),
                headers: headers,
                correlationID: correlationID))
        guard let answer = try? JSONValue(parsing: reply.body), let id = answer["publication"]?.stringValue,
            let path = answer["path"]?.stringValue, case .number(let number)? = answer["version"],
            let version = number.int64
        else { throw violation(reply, "a publication without id, path or version", mutating: true) }
        return Publication(id: id, path: path, version: Int(version))
    }

    private var headers: HeaderFields {
        ["Authorization": "Bearer \(token)", "X-Account-ID": account.rawValue, "Content-Type": "application/json"]
    }

    /// Sends the batch; one result per mutation. A change that sets a member a note does not have (an app's
    /// typo, `titel`) is refused here with `unknown_field` and never sent: dropped from the request, it would
    /// come back applied, and the user's value would vanish under a "synced" note. Members only the server
    /// sets (`updatedAt`) are left out of the request.
    public func push(_ batch: [PendingMutation], batchKey: IdempotencyKey, context: SyncContext)
        async throws(HTTPFailure)
        -> [PushResult]
    {
        let refused = Set(
            batch.filter {
                $0.fields.keys.contains { !Self.mutableFields.contains($0) && !Self.serverFields.contains($0) }
            }
            .map(\.id))
        let sending = refused.isEmpty ? batch : batch.filter { !refused.contains($0.id) }
        var answers: [PushResult] = []
        if !sending.isEmpty { answers = try await send(sending, batchKey: batchKey, context: context) }
        var next = answers.makeIterator()
        return batch.map { refused.contains($0.id) ? .rejected(code: "unknown_field") : next.next()! }
    }

    /// Sends `batch` as one request; one result per mutation, in order.
    private func send(_ batch: [PendingMutation], batchKey: IdempotencyKey, context: SyncContext)
        async throws(HTTPFailure) -> [PushResult]
    {
        let mutations = batch.map { mutation -> JSONValue in
            var object: JSONObject = [
                "id": .string(mutation.id), "idempotencyKey": .string(mutation.idempotencyKey.rawValue),
                "type": .string(mutation.kind.rawValue), "noteID": .string(mutation.entity.id),
            ]
            if let base = mutation.baseVersion { object["baseVersion"] = .number(JSONNumber(Int64(base))) }
            // The server's own members (a note's `updatedAt`, carried by a change made from what the device
            // shows) are the server's to set: not sent.
            for (name, value) in mutation.fields where Self.mutableFields.contains(name) { object[name] = value }
            return .object(object)
        }
        var operation = HTTPOperation.post(
            "/mutations", body: Data(JSONValue.object(["mutations": .array(mutations)]).serialized()),
            idempotency: .keyed(batchKey), headers: headers, correlationID: context.correlationID)
        operation.operationID = batchKey.rawValue
        let reply = try await client.send(operation)
        guard case .array(let results)? = (try? JSONValue(parsing: reply.body))?["results"],
            results.count == batch.count
        else { throw violation(reply, "results missing or of the wrong length", mutating: true) }
        return try zip(batch, results).map { (mutation, result) throws(HTTPFailure) -> PushResult in
            guard result["id"]?.stringValue == mutation.id, let status = result["status"]?.stringValue else {
                throw violation(reply, "a result does not answer its mutation", mutating: true)
            }
            switch status {
            case "applied", "duplicate":
                let note = try result["note"].map { value throws(HTTPFailure) in try entity(value, reply) }
                if status == "applied" {
                    guard let note else { throw violation(reply, "applied without the note", mutating: true) }
                    return .applied(note)
                }
                return .duplicate(note)
            case "conflict":
                guard let server = result["serverVersion"] else {
                    throw violation(reply, "a conflict without the server's version", mutating: true)
                }
                return .conflict(try entity(server, reply))
            case "rejected":
                return .rejected(code: result["code"]?.stringValue ?? "rejected")
            default:
                throw violation(reply, "unknown result status", mutating: true)
            }
        }
    }

    /// A page of the changes feed.
    public func pull(after cursor: String?, limit: Int, context: SyncContext) async throws(HTTPFailure) -> PullPage {
        var query = [URLQueryItem(name: "limit", value: String(min(max(limit, 1), 500)))]
        if let cursor { query.append(URLQueryItem(name: "cursor", value: cursor)) }
        let reply = try await client.send(
            .get("/changes", query: query, headers: headers, correlationID: context.correlationID))
        guard let page = try? JSONValue(parsing: reply.body), case .array(let changes)? = page["changes"],
            let next = page["cursor"]?.stringValue
        else { throw violation(reply, "a changes page without changes or cursor", mutating: false) }
        return PullPage(
            changes: try changes.map { value throws(HTTPFailure) in try entity(value, reply) }, cursor: next,
            hasMore: page["hasMore"] == .bool(true))
    }

    /// The reference backend refuses a cursor past the end of the account's changes (its data was reset or
    /// restored) with 400 `invalid_cursor`.
    public func rejectsCursor(_ failure: HTTPFailure) -> Bool {
        failure.status == 400 && failure.errorCode == "invalid_cursor"
    }

    /// The note members a mutation may set.
    static let mutableFields: Set<String> = ["title", "body", "kind", "visibility", "pinned", "tags"]
    /// The note members only the server sets (a change made from what the device shows may carry them).
    static let serverFields: Set<String> = ["updatedAt"]

    private func entity(_ value: JSONValue, _ reply: HTTPClient.Reply) throws(HTTPFailure) -> RemoteEntity {
        guard case .object(var fields) = value, let id = fields["id"]?.stringValue,
            case .number(let number)? = fields["version"], let version = number.int64
        else { throw violation(reply, "a note without id or version", mutating: false) }
        let deleted = fields["deleted"] == .bool(true)
        for member in ["id", "version", "deleted"] { fields[member] = nil }
        return RemoteEntity(
            ref: EntityRef(type: Self.entityType, id: id), version: Int(version), isDeleted: deleted, fields: fields)
    }

    private func violation(_ reply: HTTPClient.Reply, _ detail: String, mutating: Bool) -> HTTPFailure {
        HTTPFailure(
            kind: .contractViolation, outcome: mutating ? .unknown : .rejected, status: reply.status,
            requestID: reply.requestID, correlationID: reply.correlationID, attempts: reply.attempts,
            detail: Redacted(detail))
    }
}
