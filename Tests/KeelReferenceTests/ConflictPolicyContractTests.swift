import Foundation
import KeelContract
import KeelContractTools
import KeelReference
import KeelSync
import Testing

/// MOB-DATA-005's exception: last-write-wins only for data whose losing of an intermediate value the contract
/// explicitly allows. The reference app's `clientWins` fields are exactly the note fields the sample contract
/// marks `x-last-write-wins: true`; every other field of a note has another declared policy.
@Suite struct ConflictPolicyContractTests {
    static let contract = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("contracts/notes-api.v1.8.yaml")

    @Test func lastWriteWinsIsDeclaredOnlyWhereTheContractAllowsIt() throws {
        let document = try OpenAPIDocument.load(from: Self.contract)
        guard case .object(let properties)? = document.root["components"]?["schemas"]?["Note"]?["properties"]
        else {
            Issue.record("no Note properties in \(Self.contract.lastPathComponent)")
            return
        }
        var allowed: Set<String> = []
        var clientWins: Set<String> = []
        for (name, schema) in properties {
            let field = name
            if schema["x-last-write-wins"] == true { allowed.insert(field) }
            let policy = try #require(NotesSync.policies.policy(for: NotesRemote.entityType, field: field))
            if case .clientWins = policy.strategy { clientWins.insert(field) }
        }
        #expect(!allowed.isEmpty, "the contract allows last-write-wins nowhere")
        #expect(
            clientWins == allowed, "clientWins \(clientWins.sorted()) vs allowed by the contract \(allowed.sorted())")
        // The entity's own policy (for fields the contract adds later) is never last-write-wins.
        let entity = try #require(NotesSync.policies.policy(for: NotesRemote.entityType))
        if case .clientWins = entity.strategy { Issue.record("a note's default policy is last-write-wins") }
    }
}
