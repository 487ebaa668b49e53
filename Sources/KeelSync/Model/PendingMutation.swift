public import Foundation
public import KeelContract
public import KeelCore
public import KeelHTTP

/// One entity of a synced type: `note/7f3c…`.
public struct EntityRef: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The entity type (`note`), as registered with a ``ConflictPolicies`` entry.
    public let type: String
    /// The entity's id, unique within its type.
    public let id: String

    /// An entity reference.
    public init(type: String, id: String) {
        self.type = type
        self.id = id
    }

    /// `type/id`.
    public var description: String { type + "/" + id }

    /// Orders by type, then id.
    public static func < (lhs: EntityRef, rhs: EntityRef) -> Bool { (lhs.type, lhs.id) < (rhs.type, rhs.id) }
}

/// What a mutation does to its entity.
public enum MutationKind: String, Sendable, Hashable, CaseIterable {
    /// Creates the entity with the given fields.
    case create
    /// Sets the given fields of an existing entity.
    case update
    /// Deletes the entity.
    case delete
}

/// Where a change stands, as the app shows it (MOB-DATA-004). `synced` is only ever reported after the
/// backend acknowledged the change.
public enum ItemState: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// Saved on the device, waiting to be sent.
    case pending
    /// On its way, or sent without an answer (the outcome is unknown: the app was killed, the account
    /// switched, the connection dropped); sent again with the same idempotency key, and never discarded as if
    /// it had not left.
    case sending
    /// The backend confirmed it.
    case synced
    /// The backend refused it, or sending needs someone to act first; ``SyncFailure`` says why and what to do.
    /// Later changes of the same entity wait behind it.
    case failed
    /// The entity changed on the server too and the type's policy asks a person to decide; both versions
    /// are kept in a ``ConflictRecord``.
    case conflicted

    /// The raw value.
    public var description: String { rawValue }

    /// How much a state asks for attention, to summarize several changes of one entity.
    var severity: Int {
        switch self {
        case .synced: 0
        case .pending: 1
        case .sending: 2
        case .failed: 3
        case .conflicted: 4
        }
    }
}

/// Why a change could not be sent or was refused: KeelHTTP's failure kind and outcome, kept with the item
/// so the app can show a safe recovery action after a relaunch too.
public struct SyncFailure: Sendable, Hashable {
    /// KeelHTTP's failure kind (`offline`, `validation`, `authentication`, ...).
    public let kind: HTTPFailure.Kind
    /// Whether the server may have applied it.
    public let outcome: HTTPFailure.Outcome
    /// The HTTP status, when an answer arrived.
    public let status: Int?
    /// The contract's machine code (`validation`, `not_found`, ...), when the server gave one.
    public let errorCode: String?
    /// The server's request id, when it sent one.
    public let requestID: String?
    /// When the server said to try again.
    public let retryAt: Date?
    /// The correlation id of the call that failed (a push's: the change's own for a batch of one), when a call
    /// was made: what support searches the backend's logs for (OBS-LOG-004). Nil for a failure no call had
    /// (damaged storage) and for failures recorded before Keel kept it.
    public let correlationID: CorrelationID?

    /// A failure.
    public init(
        kind: HTTPFailure.Kind, outcome: HTTPFailure.Outcome, status: Int? = nil, errorCode: String? = nil,
        requestID: String? = nil, retryAt: Date? = nil, correlationID: CorrelationID? = nil
    ) {
        self.kind = kind
        self.outcome = outcome
        self.status = status
        self.errorCode = errorCode
        self.requestID = requestID
        self.retryAt = retryAt
        self.correlationID = correlationID
    }

    /// The failure of an HTTP call, with its correlation id.
    public init(_ failure: HTTPFailure) {
        self.init(
            kind: failure.kind, outcome: failure.outcome, status: failure.status, errorCode: failure.errorCode,
            requestID: failure.requestID, retryAt: failure.retryAt, correlationID: failure.correlationID)
    }

    /// What to show: the state and the one safe recovery action, never backend text.
    public func userFacing() -> UserFacingOutcome {
        userFacing(correlationID: correlationID ?? CorrelationID.make(using: .system))
    }

    /// ``userFacing()``; `correlationID` stands in when the failure has none of its own (the outcome shows no
    /// id: it goes with the failure into the app's logs).
    public func userFacing(correlationID: CorrelationID) -> UserFacingOutcome {
        UserFacingOutcome(
            failure: HTTPFailure(
                kind: kind, outcome: outcome, status: status, errorCode: errorCode, requestID: requestID,
                correlationID: self.correlationID ?? correlationID, retryAt: retryAt),
            mutates: true, canQueue: true)
    }

    var json: JSONValue {
        var object: JSONObject = ["kind": .string(kind.name), "outcome": .string(outcome.description)]
        if let status { object["status"] = .number(JSONNumber(Int64(status))) }
        if let errorCode { object["errorCode"] = .string(errorCode) }
        if let requestID { object["requestID"] = .string(requestID) }
        if let retryAt { object["retryAt"] = .number(JSONNumber(retryAt.timeIntervalSince1970)) }
        if let correlationID { object["correlationID"] = .string(correlationID.rawValue) }
        return .object(object)
    }

    init(json: JSONValue) throws(SyncError) {
        guard let kind = json["kind"]?.stringValue, let outcomeName = json["outcome"]?.stringValue,
            let outcome = HTTPFailure.Outcome.allCases.first(where: { $0.description == outcomeName })
        else { throw SyncRecords.damaged("failure") }
        self.init(
            kind: HTTPFailure.Kind(kind), outcome: outcome, status: json["status"]?.intValue,
            errorCode: json["errorCode"]?.stringValue,
            requestID: json["requestID"]?.stringValue,
            retryAt: json["retryAt"]?.doubleValue.map { Date(timeIntervalSince1970: $0) },
            // A stored id that is not one (damaged) is dropped, never shown as the call's.
            correlationID: json["correlationID"]?.stringValue.flatMap { try? CorrelationID(validating: $0) })
    }
}

/// One change in the outbox: made once on the device, sent until the backend answers, applied there at
/// most once (its ``idempotencyKey`` never changes, across relaunches too).
public struct PendingMutation: Sendable, Hashable, Identifiable {
    /// The mutation's id: a version 7 UUID, so ids made later sort later and the records keyed by them (what
    /// became of each change) are appended rather than scattered over their table.
    public let id: String
    /// Sent with it; the backend applies a key at most once.
    public let idempotencyKey: IdempotencyKey
    /// The user operation it belongs to (log correlation, operation status).
    public let correlationID: CorrelationID
    /// The entity it changes.
    public let entity: EntityRef
    /// What it does.
    public let kind: MutationKind
    /// The server version the change was made against; nil for a create. Later changes of the same entity
    /// move to the version the earlier one produced when the backend acknowledges it.
    public internal(set) var baseVersion: Int?
    /// The fields it sets (empty for a delete).
    public let fields: JSONObject
    /// What those fields held before it, as this device saw them (a field absent here was absent): the base
    /// a conflict is judged against, field by field.
    public let previous: JSONObject
    /// The operation of the offline scenario it was made by (`editNote`).
    public let operation: String
    /// When it was made (wall clock, to the millisecond).
    public let createdAt: Date
    /// How many times it was sent.
    public internal(set) var attempts: Int
    /// Where it stands.
    public internal(set) var state: ItemState
    /// Why it is failed (or why the last attempt did not get through, while it waits to be sent again).
    public internal(set) var failure: SyncFailure?
    /// Its place in the outbox: changes are sent in this order (per entity strictly).
    public let sequence: UInt64
    /// The mutation this one replaces (a conflict resolution that is sent as a new change), if any.
    public let replaces: String?
    /// On the first outstanding change of an entity: the bases of the later ones, as the entity's record keeps
    /// them (``EntityRecord/changes``) — what that record is rebuilt from when it is damaged, as the later
    /// entries are not rewritten when their bases move. Bookkeeping: not part of the change's identity.
    var laterBases: LaterBases

    init(
        id: String, idempotencyKey: IdempotencyKey, correlationID: CorrelationID, entity: EntityRef,
        kind: MutationKind, baseVersion: Int?, fields: JSONObject, previous: JSONObject, operation: String,
        createdAt: Date, attempts: Int = 0, state: ItemState = .pending, failure: SyncFailure? = nil,
        sequence: UInt64, replaces: String? = nil, laterBases: LaterBases = LaterBases()
    ) {
        self.id = id
        self.idempotencyKey = idempotencyKey
        self.correlationID = correlationID
        self.entity = entity
        self.kind = kind
        self.baseVersion = baseVersion
        self.fields = fields
        self.previous = previous
        self.operation = operation
        self.createdAt = createdAt
        self.attempts = attempts
        self.state = state
        self.failure = failure
        self.sequence = sequence
        self.replaces = replaces
        self.laterBases = laterBases
    }

    /// A change made by hand, as the engine would queue it — for testing a ``SyncRemote`` (what its push sends
    /// for it, what it makes of an answer) and for previews. An app queues real changes through
    /// ``SyncEngine``, which makes the ids and keys once and keeps them.
    public init(
        testing entity: EntityRef, kind: MutationKind, fields: JSONObject = [:], baseVersion: Int? = nil,
        operation: String = "test", id: String, idempotencyKey: IdempotencyKey, correlationID: CorrelationID,
        createdAt: Date = Date(timeIntervalSince1970: 0), sequence: UInt64 = 0
    ) {
        self.init(
            id: id, idempotencyKey: idempotencyKey, correlationID: correlationID, entity: entity, kind: kind,
            baseVersion: baseVersion, fields: fields, previous: [:], operation: operation, createdAt: createdAt,
            sequence: sequence)
    }

    /// A stored member's value: text and integers as they are, so that ``encoded`` writes them without
    /// making JSON values of them first.
    private enum StoredMember {
        case text(String)
        case integer(Int64)
        case value(JSONValue)
    }

    /// The stored members, in order: the one list ``json`` and ``encoded`` are both made from.
    private func storedMembers(_ each: (String, StoredMember) -> Void) {
        each("v", .integer(1))
        each("id", .text(id))
        each("key", .text(idempotencyKey.rawValue))
        each("correlation", .text(correlationID.rawValue))
        each("type", .text(entity.type))
        each("entity", .text(entity.id))
        each("kind", .text(kind.rawValue))
        each("fields", .value(.object(fields)))
        each("previous", .value(.object(previous)))
        each("operation", .text(operation))
        each("createdAt", .integer(Int64((createdAt.timeIntervalSince1970 * 1000).rounded())))
        each("attempts", .integer(Int64(attempts)))
        each("state", .text(state.rawValue))
        each("sequence", .integer(Int64(bitPattern: sequence)))
        if let baseVersion { each("base", .integer(Int64(baseVersion))) }
        if let failure { each("failure", .value(failure.json)) }
        if let replaces { each("replaces", .text(replaces)) }
        if !laterBases.ranges.isEmpty { each("later", .value(laterBases.json)) }
    }

    /// ``json`` as stored: the same bytes, written without building the object (an outbox entry is written
    /// on every queued change; its object, past twelve members, also hashed every name to index them).
    var encoded: [UInt8] {
        var writer = JSONObjectWriter(capacity: 512)
        storedMembers { name, member in
            switch member {
            case .text(let text): writer.member(name, string: text)
            case .integer(let integer): writer.member(name, integer: integer)
            case .value(let value): writer.member(name, value)
            }
        }
        return writer.finish()
    }

    var json: JSONValue {
        var object = JSONObject()
        storedMembers { name, member in
            object[name] =
                switch member {
                case .text(let text): .string(text)
                case .integer(let integer): .number(JSONNumber(integer))
                case .value(let value): value
                }
        }
        return .object(object)
    }

    init(json: JSONValue) throws(SyncError) {
        guard json["v"]?.intValue == 1 else { throw SyncRecords.damaged("outbox entry (unknown format)") }
        guard let id = json["id"]?.stringValue,
            let key = json["key"]?.stringValue.flatMap(IdempotencyKey.init(validating:)),
            let correlation = json["correlation"]?.stringValue,
            let correlationID = try? CorrelationID(validating: correlation),
            let type = json["type"]?.stringValue, let entity = json["entity"]?.stringValue,
            let kind = json["kind"]?.stringValue.flatMap(MutationKind.init(rawValue:)),
            case .object(let fields)? = json["fields"], case .object(let previous)? = json["previous"],
            let operation = json["operation"]?.stringValue,
            let createdAtMilliseconds = json["createdAt"]?.doubleValue, let attempts = json["attempts"]?.intValue,
            let state = json["state"]?.stringValue.flatMap(ItemState.init(rawValue:)),
            let sequence = json["sequence"]?.intValue
        else { throw SyncRecords.damaged("outbox entry") }
        self.init(
            id: id, idempotencyKey: key, correlationID: correlationID,
            entity: EntityRef(type: type, id: entity), kind: kind, baseVersion: json["base"]?.intValue, fields: fields,
            previous: previous, operation: operation,
            createdAt: Date(timeIntervalSince1970: createdAtMilliseconds / 1000),
            attempts: attempts, state: state,
            failure: try json["failure"].map { value throws(SyncError) in try SyncFailure(json: value) },
            sequence: UInt64(bitPattern: Int64(sequence)), replaces: json["replaces"]?.stringValue,
            laterBases: try json["later"].map { value throws(SyncError) in try LaterBases(json: value) } ?? LaterBases()
        )
    }
}

/// The bases of an entity's later outstanding changes, by ranges of sequence numbers (the entity's changes
/// in a range, not every number in it): a run of edits made against one base is one range.
struct LaterBases: Sendable, Hashable {
    struct Range: Sendable, Equatable {
        var first: UInt64
        var last: UInt64
        var base: Int?
    }

    var ranges: [Range] = []

    /// The base `sequence` has here, if a range holds it.
    func base(of sequence: UInt64) -> Int?? {
        guard let range = ranges.first(where: { $0.first <= sequence && sequence <= $0.last }) else { return .none }
        return .some(range.base)
    }

    var json: JSONValue {
        .array(
            ranges.map { range in
                [
                    .number(JSONNumber(Int64(bitPattern: range.first))),
                    .number(JSONNumber(Int64(bitPattern: range.last))),
                    range.base.map { .number(JSONNumber(Int64($0))) } ?? .null,
                ]
            })
    }

    init(ranges: [Range] = []) { self.ranges = ranges }

    init(json: JSONValue) throws(SyncError) {
        guard case .array(let items) = json else { throw SyncRecords.damaged("outbox entry") }
        ranges = try items.map { item throws(SyncError) -> Range in
            guard case .array(let parts) = item, parts.count == 3, let first = parts[0].intValue,
                let last = parts[1].intValue,
                first <= last
            else { throw SyncRecords.damaged("outbox entry") }
            let base: Int?
            if parts[2] == .null {
                base = nil
            } else if let version = parts[2].intValue {
                base = version
            } else {
                throw SyncRecords.damaged("outbox entry")
            }
            return Range(first: UInt64(bitPattern: Int64(first)), last: UInt64(bitPattern: Int64(last)), base: base)
        }
    }

    // Bookkeeping, not identity: two copies of a change are the same change whatever they carry here. So
    // `==` on this type says nothing: compare `ranges`.
    static func == (lhs: LaterBases, rhs: LaterBases) -> Bool { true }
    func hash(into hasher: inout Hasher) {}
}

/// One change for ``SyncEngine/enqueue(_:operation:)``.
public struct LocalChange: Sendable, Hashable {
    /// What it does.
    public let kind: MutationKind
    /// The entity it changes.
    public let entity: EntityRef
    /// The fields it sets (empty for a delete).
    public let fields: JSONObject

    init(kind: MutationKind, entity: EntityRef, fields: JSONObject) {
        self.kind = kind
        self.entity = entity
        self.fields = fields
    }

    /// Creates entity `id` of `type` with `fields`.
    public static func create(_ type: String, id: String, fields: JSONObject) -> LocalChange {
        LocalChange(kind: .create, entity: EntityRef(type: type, id: id), fields: fields)
    }

    /// Sets `fields` of entity `id` of `type`.
    public static func update(_ type: String, id: String, fields: JSONObject) -> LocalChange {
        LocalChange(kind: .update, entity: EntityRef(type: type, id: id), fields: fields)
    }

    /// Deletes entity `id` of `type`.
    public static func delete(_ type: String, id: String) -> LocalChange {
        LocalChange(kind: .delete, entity: EntityRef(type: type, id: id), fields: [:])
    }
}
