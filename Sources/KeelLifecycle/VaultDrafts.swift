import Foundation
public import KeelStore

/// The navigator's drafts kept in the account's vault: `saveDraft` and `deleteDraft` effects applied to a
/// dataset the inventory declares (kind `draft`, sealed as personal data, kept or deleted on logout as the
/// inventory says), and loaded back at launch or sign-in for ``Navigator/restore(_:drafts:session:migrations:)``.
///
/// ```swift
/// let drafts = VaultDrafts(vault: vault, dataset: "drafts")
/// let result = navigator.reduce(state, event)
/// try await drafts.apply(result.effects)
/// ```
public struct VaultDrafts: Sendable {
    /// The account's vault.
    public let vault: Vault
    /// The drafts dataset.
    public let dataset: String

    /// Drafts of `vault`'s account in `dataset`.
    public init(vault: Vault, dataset: String) {
        self.vault = vault
        self.dataset = dataset
    }

    private struct Stored: Codable {
        var route: String
        var parameters: [String: String]
        var text: String
    }

    /// The record id of a draft: its route and sorted parameters.
    static func recordID(_ key: DraftKey) -> String { key.entryLabel }

    /// Applies the draft effects among `effects` (of this vault's account; others are ignored) in one
    /// transaction.
    public func apply(_ effects: [NavigationEffect]) async throws {
        let account = vault.account.rawValue
        var changes: [(String, Data?)] = []
        for effect in effects {
            switch effect {
            case .saveDraft(let key, let text) where key.account == account:
                let stored = Stored(route: key.route, parameters: key.parameters, text: text)
                changes.append((Self.recordID(key), try JSONEncoder().encode(stored)))
            case .deleteDraft(let key) where key.account == account:
                changes.append((Self.recordID(key), nil))
            default: continue
            }
        }
        guard !changes.isEmpty else { return }
        let list = changes
        try await vault.write(dataset) { records in
            for (id, value) in list {
                if let value { try records.put(id, value) } else { try records.delete(id) }
            }
        }
    }

    /// Every draft of the account.
    public func load() async throws -> [DraftKey: String] {
        let account = vault.account.rawValue
        return try await vault.read(dataset) { records in
            var drafts: [DraftKey: String] = [:]
            for id in try records.ids() {
                guard let data = try records.get(id), let stored = try? JSONDecoder().decode(Stored.self, from: data)
                else { continue }
                drafts[DraftKey(account: account, route: stored.route, parameters: stored.parameters)] = stored.text
            }
            return drafts
        }
    }
}
