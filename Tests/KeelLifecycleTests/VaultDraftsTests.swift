import Foundation
import KeelCore
import KeelLifecycle
import KeelStore
import KeelStoreFixtures
import KeelTesting
import Testing

/// Drafts of `saveDraft` and `confirmDiscard`/`onDeath: save` routes kept in the account's vault (sealed,
/// on real SQLite files, keys outside the data directory).
@Suite(.timeLimit(.minutes(1))) struct VaultDraftsTests {
    @Test func draftsSurviveProcessDeathInTheAccountsVaultAndNeverReachAnotherAccount() async throws {
        let root = try TemporaryDirectory(prefix: "keel-lifecycle-drafts")
        let keys = try FileKeyStore(directory: root.url("keys"), dataDirectories: [root.url("data")])
        let vaults = try Vaults(dataDirectory: root.url("data"), keyStore: keys, inventory: VaultInventory.inventory)
        let alice = try AccountID("alice@example.com")
        let bob = try AccountID("bob@example.com")

        var h = try Harness()
        h.deepStack(alice.rawValue)
        h.send(.type("sealed draft text"))
        let vault = try await vaults.open(alice)
        let drafts = VaultDrafts(vault: vault, dataset: "drafts")
        try await drafts.apply(h.send(.background).effects)
        let snapshot = try NavigationSnapshot(h.state).encoded()
        // Sealed in the vault: the plaintext is nowhere on disk.
        await vaults.close()
        for file in FileManager.default.enumerator(atPath: root.url("data").path)!.compactMap({ $0 as? String }) {
            let bytes = FileManager.default.contents(atPath: root.url("data").path + "/" + file) ?? Data()
            #expect(bytes.range(of: Data("sealed draft text".utf8)) == nil, "\(file)")
        }

        // Process death; relaunch: the drafts come from the vault.
        let reopened = try await vaults.open(alice)
        let loaded = try await VaultDrafts(vault: reopened, dataset: "drafts").load()
        let restored = h.navigator.restore(snapshot, drafts: loaded, session: .valid(account: alice.rawValue))
        #expect(restored.result.state.top?.input == "sealed draft text")

        // Confirming the discard deletes it from the vault.
        var state = restored.result.state
        state = h.navigator.reduce(state, .back(.systemBack)).state
        let confirmed = h.navigator.reduce(state, .confirm)
        try await VaultDrafts(vault: reopened, dataset: "drafts").apply(confirmed.effects)
        #expect(try await VaultDrafts(vault: reopened, dataset: "drafts").load().isEmpty)

        // Another account's vault never holds alice's drafts, even when effects name them.
        let bobVault = try await vaults.switchAccount(to: bob)
        try await VaultDrafts(vault: bobVault, dataset: "drafts").apply(h.send(.background).effects)
        #expect(try await VaultDrafts(vault: bobVault, dataset: "drafts").load().isEmpty)
    }
}
