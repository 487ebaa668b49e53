import Foundation
import KeelContract
import KeelCore
import KeelHTTP
import Testing

@testable import KeelSync

/// The field-by-field settlement of a conflict, for each strategy (a three-way comparison with the base).
@Suite struct ConflictResolverTests {
    func policies() throws -> ConflictPolicies {
        var policies = ConflictPolicies()
        try policies.register(
            "t", .serverWins(because: "server data"),
            fields: [
                "a": .clientWins(because: "a preference"), "n": .merge(.additive, because: "a counter"),
                "m": .manual(because: "text"), "s": .merge(.setUnion, because: "labels"),
            ])
        return policies
    }

    func mutation(_ fields: JSONObject) -> PendingMutation { mutation(.update, fields) }

    func mutation(_ kind: MutationKind, _ fields: JSONObject) -> PendingMutation {
        PendingMutation(
            id: "m1", idempotencyKey: IdempotencyKey("key-0000000000000001"),
            correlationID: CorrelationID.make(using: .seeded(1)), entity: EntityRef(type: "t", id: "1"), kind: kind,
            baseVersion: 3, fields: fields, previous: [:], operation: "edit", createdAt: Date(timeIntervalSince1970: 0),
            sequence: 1)
    }

    func server(_ fields: JSONObject, deleted: Bool = false) -> RemoteEntity {
        RemoteEntity(ref: EntityRef(type: "t", id: "1"), version: 4, isDeleted: deleted, fields: fields)
    }

    @Test func eachFieldFollowsItsPolicyAgainstTheBase() throws {
        let (outcome, decisions) = ConflictResolver.resolve(
            mutation(["a": 1, "n": 15, "s": ["x", "z"], "plain": "local", "same": 1, "mine": "changed"]),
            base: ["a": 0, "n": 10, "s": ["x", "y"], "plain": "base", "same": 0, "mine": "old"],
            server: server(["a": 2, "n": 12, "s": ["y", "w"], "plain": "server", "same": 1, "mine": "old"]),
            policies: try policies())
        // clientWins keeps 1; additive: 12 + (15 - 10) = 17; the union keeps the server's new w, drops y (removed
        // here since the base) and x (removed by the server since the base: found in review, it came back),
        // adds z; "mine" changed only here: no conflict; "plain" falls to the type's serverWins; "same" is equal
        // on both sides.
        #expect(outcome == .send(["a": 1, "n": 17, "s": ["w", "z"], "mine": "changed"]))
        #expect(decisions["plain"] == "serverWins" && decisions["a"] == "clientWins")
        #expect(decisions["n"] == "merge(additive)" && decisions["s"] == "merge(setUnion)")
        #expect(decisions["same"] == nil && decisions["mine"] == nil)
    }

    /// Two increments that read the same (5 → 6 here and on the server) are still two.
    @Test func aMergeIsAppliedEvenWhenBothSidesReadTheSame() throws {
        let (outcome, decisions) = ConflictResolver.resolve(
            mutation(["n": 6, "s": ["x"]]), base: ["n": 5, "s": []], server: server(["n": 6, "s": ["x"]]),
            policies: try policies())
        #expect(outcome == .send(["n": 7]))  // the union of equal sets changes nothing: not sent
        #expect(decisions["n"] == "merge(additive)")
    }

    /// Found in review: a merge that met values it does not combine fell back to one side — additive sent the
    /// local string over the server's, setUnion dropped a local null — last-write-wins nobody declared. Such a
    /// field goes to a person; an absent or null set is an empty one, and whole counters add exactly.
    @Test func aMergeThatDoesNotApplyLeavesTheFieldToAPerson() throws {
        let (mismatched, decisions) = ConflictResolver.resolve(
            mutation(["n": "eleven", "s": "x, y", "a": true]), base: ["n": 10, "s": ["x"], "a": false],
            server: server(["n": 12, "s": ["x", "w"], "a": false]), policies: try policies())
        #expect(mismatched == .manual(unresolved: ["n", "s"], proposal: ["a": true]))
        #expect(decisions["n"] == "merge(additive)")
        let (serverSide, _) = ConflictResolver.resolve(
            mutation(["n": 11]), base: ["n": 10], server: server(["n": "twelve"]), policies: try policies())
        #expect(serverSide == .manual(unresolved: ["n"], proposal: [:]))
        // A local null is an empty set: every element the base had is removed, the server's new one kept.
        let (cleared, _) = ConflictResolver.resolve(
            mutation(["s": .null]), base: ["s": ["x", "y"]], server: server(["s": ["x", "y", "w"]]),
            policies: try policies())
        #expect(cleared == .send(["s": ["w"]]))
        // Whole counters beyond 2^53 add exactly; a counter the server does not have starts at 0.
        let (large, _) = ConflictResolver.resolve(
            mutation(["n": 9_007_199_254_740_993]), base: ["n": 9_007_199_254_740_992],
            server: server(["n": 9_007_199_254_740_995]), policies: try policies())
        #expect(large == .send(["n": 9_007_199_254_740_996]))
        let (fresh, _) = ConflictResolver.resolve(
            mutation(["n": 3]), base: ["n": 1], server: server([:]), policies: try policies())
        #expect(fresh == .send(["n": 2]))
        // Found in an outside audit: a base that is not a number or a set was read as 0 or empty (base "5",
        // local 6, server 7 merged into 13), and a whole sum past 64 bits became a rounded Double.
        let (textBase, _) = ConflictResolver.resolve(
            mutation(["n": 6, "s": ["x"]]), base: ["n": "5", "s": "x"], server: server(["n": 7, "s": ["w"]]),
            policies: try policies())
        #expect(textBase == .manual(unresolved: ["n", "s"], proposal: [:]))
        let (overflow, _) = ConflictResolver.resolve(
            mutation(["n": .number(JSONNumber(Int64.max))]), base: ["n": 0],
            server: server(["n": .number(JSONNumber(Int64.max))]), policies: try policies())
        #expect(overflow == .manual(unresolved: ["n"], proposal: [:]))
        let (beyond, _) = ConflictResolver.resolve(
            mutation(["n": .number(JSONNumber(literal: "18446744073709551616")!)]), base: ["n": 0],
            server: server(["n": 1]), policies: try policies())
        #expect(beyond == .manual(unresolved: ["n"], proposal: [:]))
        let (fractions, _) = ConflictResolver.resolve(
            mutation(["n": 1.5]), base: ["n": 1], server: server(["n": 2]), policies: try policies())
        #expect(fractions == .send(["n": 2.5]))
    }

    @Test func aManualFieldKeepsTheConflictAndProposesTheRest() throws {
        let (outcome, _) = ConflictResolver.resolve(
            mutation(["m": "local text", "a": true]), base: ["m": "base", "a": false],
            server: server(["m": "server text", "a": false]), policies: try policies())
        #expect(outcome == .manual(unresolved: ["m"], proposal: ["a": true]))
    }

    @Test func serverWinsEverywhereDropsTheLocalChange() throws {
        let (outcome, _) = ConflictResolver.resolve(
            mutation(["plain": "local"]), base: ["plain": "base"], server: server(["plain": "server"]),
            policies: try policies())
        #expect(outcome == .drop)
    }

    @Test func deletesFollowTheTypesPolicy() throws {
        let policies = try policies()
        #expect(
            ConflictResolver.resolve(
                mutation(.delete, [:]), base: [:], server: server(["plain": "x"]), policies: policies
            )
            .0 == .drop)  // serverWins: the edit from elsewhere stays
        #expect(
            ConflictResolver.resolve(
                mutation(.delete, [:]), base: [:], server: server([:], deleted: true), policies: policies
            ).0 == .drop)  // deleted on both sides
        var lastWriteWins = ConflictPolicies()
        try lastWriteWins.register("t", .clientWins(because: "a scratch list"))
        #expect(
            ConflictResolver.resolve(
                mutation(.delete, [:]), base: [:], server: server(["plain": "x"]), policies: lastWriteWins
            )
            .0 == .sendDelete)
        var manual = ConflictPolicies()
        try manual.register("t", .manual(because: "the user's data"))
        #expect(
            ConflictResolver.resolve(
                mutation(["m": "edit"]), base: [:], server: server([:], deleted: true), policies: manual
            )
            .0 == .manual(unresolved: ["deleted"], proposal: [:]))
    }

    /// Found in review: records are stored as `type/id`, so a type with a `/` let ("a", "b/c") and
    /// ("a/b", "c") share one record. Such a type is refused where types are declared.
    @Test func aTypeWithASlashIsRefusedAtRegistration() {
        var policies = ConflictPolicies()
        #expect(throws: SyncError.self) { try policies.register("a/b", .serverWins(because: "a cache")) }
        #expect(policies.types.isEmpty)
    }
}
