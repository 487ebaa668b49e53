public import Foundation
public import KeelContract

/// A conflict a person must settle (a `manual` policy): both versions, kept in the account's vault until
/// ``SyncEngine/resolve(_:with:)`` — across relaunches too.
public struct ConflictRecord: Sendable, Hashable, Identifiable {
    /// The conflict's id: the id of the local mutation that met it.
    public var id: String { mutation.id }
    /// The local change, as it was made.
    public let mutation: PendingMutation
    /// The entity as this device showed it when the conflict was found: the local version.
    public let local: JSONObject
    /// What the changed fields held before the local change (``PendingMutation/previous``).
    public var base: JSONObject { mutation.previous }
    /// The server's entity when the conflict was found.
    public let server: RemoteEntity
    /// The fields no policy could settle (`deleted` stands for a delete on one side).
    public let unresolvedFields: [String]
    /// What the policies settled for the other fields: sent along with any resolution but ``Resolution/theirs``.
    public let proposal: JSONObject
    /// When it was found.
    public let detectedAt: Date
    /// The newest of the entity's queued changes that ``local`` shows (the changes after the conflicted one
    /// up to it are decided with it: ``SyncEngine/resolve(_:with:)``); nil in records of earlier releases,
    /// which decided the conflicted change alone.
    let shownThrough: UInt64?

    /// How the app settles a conflict.
    public enum Resolution: Sendable, Hashable {
        /// Keep the local change: it is sent again against the server's version.
        case mine
        /// Keep the server's version: the local change is dropped.
        case theirs
        /// Send these fields against the server's version.
        case merged(JSONObject)
    }

    var json: JSONValue {
        let object: JSONObject = [
            "v": 1, "mutation": mutation.json, "server": SyncRecords.json(of: server),
            "unresolved": .array(unresolvedFields.map(JSONValue.string)), "proposal": .object(proposal),
            "detectedAt": .number(JSONNumber(detectedAt.timeIntervalSince1970)), "local": .object(local),
        ]
        var result = object
        if let shownThrough { result["through"] = .number(JSONNumber(Int64(bitPattern: shownThrough))) }
        return .object(result)
    }

    init(
        mutation: PendingMutation, local: JSONObject, server: RemoteEntity, unresolvedFields: [String],
        proposal: JSONObject, detectedAt: Date, shownThrough: UInt64?
    ) {
        self.mutation = mutation
        self.local = local
        self.server = server
        self.unresolvedFields = unresolvedFields
        self.proposal = proposal
        self.detectedAt = detectedAt
        self.shownThrough = shownThrough
    }

    init(json: JSONValue) throws(SyncError) {
        guard json["v"]?.intValue == 1, let mutation = json["mutation"], let server = json["server"],
            case .array(let unresolved)? = json["unresolved"], let proposal = json["proposal"]?.objectValue,
            let detectedAt = json["detectedAt"]?.doubleValue, let local = json["local"]?.objectValue
        else { throw SyncRecords.damaged("conflict record") }
        self.init(
            mutation: try PendingMutation(json: mutation), local: local,
            server: try SyncRecords.remoteEntity(server), unresolvedFields: unresolved.compactMap(\.stringValue),
            proposal: proposal, detectedAt: Date(timeIntervalSince1970: detectedAt),
            shownThrough: json["through"]?.intValue.map { UInt64(bitPattern: Int64($0)) })
    }
}

/// Settles a conflict by the declared policies, field by field (a three-way comparison against the base).
enum ConflictResolver {
    enum Outcome: Equatable {
        /// Send these fields (an update) against the server's version.
        case send(JSONObject)
        /// Send the delete again against the server's version (declared `clientWins`).
        case sendDelete
        /// Nothing of the local change survives, or the server already has it: drop it.
        case drop
        /// A person decides.
        case manual(unresolved: [String], proposal: JSONObject)
    }

    /// The outcome, and the policy applied to each field (the recorded decision).
    static func resolve(
        _ mutation: PendingMutation, base: JSONObject, server: RemoteEntity, policies: ConflictPolicies
    ) -> (Outcome, decisions: [String: String]) {
        let type = mutation.entity.type
        guard let entityPolicy = policies.policy(for: type) else {
            return (.manual(unresolved: ["*"], proposal: [:]), [:])
        }
        // A delete on one side: the type's policy decides; a merge cannot combine "gone" with "changed".
        if mutation.kind == .delete || server.isDeleted {
            if mutation.kind == .delete && server.isDeleted { return (.drop, ["deleted": "bothDeleted"]) }
            switch entityPolicy.strategy {
            case .serverWins: return (.drop, ["deleted": entityPolicy.name])
            case .clientWins where mutation.kind == .delete: return (.sendDelete, ["deleted": entityPolicy.name])
            default: return (.manual(unresolved: ["deleted"], proposal: [:]), ["deleted": "manual"])
            }
        }
        var settled = JSONObject()
        var unresolved: [String] = []
        var decisions: [String: String] = [:]
        for (field, local) in mutation.fields {
            let serverValue = server.fields[field]
            let baseValue = base[field]
            if serverValue == baseValue {  // only this side changed the field: no conflict on it
                if local != serverValue { settled[field] = local }
                continue
            }
            // Only the server changed it: the change carries the field as the user saw it (a form that saves
            // every field), so the server's newer value stands — sending the old one back would undo the other
            // device's edit without a word, and asking a person about a field they never touched helps no one
            // (found in an outside audit: clientWins un-pinned a note the tablet had pinned).
            if local == baseValue { continue }
            let policy = policies.policy(for: type, field: field) ?? entityPolicy
            // Both sides changed it. The same value on both is agreement — except for a merge, where two
            // increments that happen to read the same are still two (5 → 6 here and there is 7).
            let merges: Bool = if case .merge = policy.strategy { true } else { false }
            if serverValue == local, !merges { continue }
            decisions[field] = policy.name
            switch policy.strategy {
            case .serverWins: break
            case .clientWins: settled[field] = local
            case .merge(let merge):
                // A merge that does not apply to these values leaves the field to a person.
                let merged: JSONValue?
                do { merged = try merge.merge(baseValue, local, serverValue) } catch {
                    unresolved.append(field)
                    continue
                }
                if merged != serverValue { settled[field] = merged ?? .null }
            case .manual: unresolved.append(field)
            }
        }
        if !unresolved.isEmpty { return (.manual(unresolved: unresolved, proposal: settled), decisions) }
        return (settled.isEmpty ? .drop : .send(settled), decisions)
    }
}
