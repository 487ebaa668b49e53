import Foundation
public import KeelCore
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

    /// The record id of a draft: its route and sorted parameters, as `route key=value …` with space, `=`
    /// and `%` percent-escaped in names and values, so that no two drafts share an id (`a="1 b=2"` and
    /// `a=1, b=2` did). Ordinary drafts keep the id they always had.
    static func recordID(_ key: DraftKey) -> String {
        func escaped(_ text: String) -> String {
            var result = ""
            for character in text {
                switch character {
                case " ": result += "%20"
                case "=": result += "%3D"
                case "%": result += "%25"
                default: result.append(character)
                }
            }
            return result
        }
        return
            ([escaped(key.route)]
            + key.parameters.sorted { $0.key < $1.key }.map { escaped($0.key) + "=" + escaped($0.value) })
            .joined(separator: " ")
    }

    /// Applies the draft effects among `effects` in one transaction.
    ///
    /// A stored draft that cannot be read (written by a newer version of the app, say) is never written over
    /// or deleted: it is kept aside under `unreadable:` and its id before the new one takes its place.
    ///
    /// - Throws: ``VaultDraftsError`` `otherAccount`, writing nothing, when a draft effect belongs to another
    ///   account: leaving an account (`switchAccount`, `signOut`) saves its input as that account's drafts,
    ///   which must go to its vault before it closes — see ``NavigationEffect/draftAccount``.
    public func apply(_ effects: [NavigationEffect]) async throws {
        let account = vault.account
        let foreign = effects.compactMap(\.draftAccount).filter { $0 != account }
        if let other = foreign.first {
            throw VaultDraftsError(
                code: .otherAccount,
                message:
                    "\(foreign.count) draft effect(s) belong to account \(other), not \(account): apply them to that account's vault before it closes; nothing was written"
            )
        }
        var changes: [(String, Data?)] = []
        var legacyIDs: [String: String] = [:]
        for effect in effects {
            let key: DraftKey
            switch effect {
            case .saveDraft(let saved, let text):
                key = saved
                let stored = Stored(route: key.route, parameters: key.parameters, text: text)
                changes.append((Self.recordID(key), try JSONEncoder().encode(stored)))
            case .deleteDraft(let deleted):
                key = deleted
                changes.append((Self.recordID(key), nil))
            default: continue
            }
            legacyIDs[Self.recordID(key)] = Self.legacyID(key)
        }
        guard !changes.isEmpty else { return }
        let list = (changes: changes, legacyIDs: legacyIDs)
        try await vault.write(dataset) { records in
            for (id, value) in list.changes {
                if let existing = try records.get(id), (try? JSONDecoder().decode(Stored.self, from: existing)) == nil {
                    // Beside any copy kept aside before (a second round must not write over the first).
                    var aside = Self.unreadablePrefix + id
                    var round = 1
                    while let kept = try records.get(aside), kept != existing {
                        round += 1
                        aside = Self.unreadablePrefix + "\(round):" + id
                    }
                    try records.put(aside, existing)
                }
                if let value { try records.put(id, value) } else { try records.delete(id) }
                // The record of the same draft under the id it had before ids were escaped (`edit q=a b`): it
                // goes with any change of the draft, or a deleted draft would come back from it at the next load.
                if let legacy = list.legacyIDs[id], let old = try records.get(legacy),
                    let stored = try? JSONDecoder().decode(Stored.self, from: old),
                    Self.recordID(DraftKey(account: account, route: stored.route, parameters: stored.parameters)) == id
                {
                    try records.delete(legacy)
                }
            }
        }
    }

    /// The id a draft had before ids were escaped (its entry label), when it differs from its id now.
    static func legacyID(_ key: DraftKey) -> String? {
        let legacy = key.entryLabel
        return legacy == recordID(key) ? nil : legacy
    }

    /// Where drafts that cannot be read are kept aside.
    static let unreadablePrefix = "unreadable:"

    /// The ids of stored drafts that cannot be read (kept, never written over), for the app to report.
    public func unreadable() async throws -> [String] {
        try await vault.read(dataset) { records in
            try records.ids().filter { id in
                if id.hasPrefix(Self.unreadablePrefix) { return true }
                guard let data = try records.get(id) else { return false }
                return (try? JSONDecoder().decode(Stored.self, from: data)) == nil
            }
        }
    }

    /// Every draft of the account.
    public func load() async throws -> [DraftKey: String] {
        let account = vault.account
        return try await vault.read(dataset) { records in
            var drafts: [DraftKey: String] = [:]
            var legacy: [DraftKey: String] = [:]
            for id in try records.ids() where !id.hasPrefix(Self.unreadablePrefix) {
                // One that cannot be read is left where it is (see `unreadable()`); `apply` never writes over it.
                guard let data = try records.get(id), let stored = try? JSONDecoder().decode(Stored.self, from: data)
                else { continue }
                let key = DraftKey(account: account, route: stored.route, parameters: stored.parameters)
                // A record under the id the draft had before ids were escaped counts only when the draft has
                // none under its id now: that one is newer (whichever order the ids sort in).
                if id == Self.recordID(key) { drafts[key] = stored.text } else { legacy[key] = stored.text }
            }
            return drafts.merging(legacy) { current, _ in current }
        }
    }
}

/// Why draft effects could not be applied.
public struct VaultDraftsError: KeelError, Equatable {
    /// Codes of ``VaultDraftsError``.
    public typealias Code = ErrorCode<VaultDraftsError>

    /// What went wrong.
    public let code: Code
    /// A short explanation for developers.
    public let message: String

    /// An error with `code` and `message`.
    public init(code: Code, message: String) {
        self.code = code
        self.message = message
    }

    /// `code: message`.
    public var description: String { "drafts \(code): \(message)" }
}

extension ErrorCode where Domain == VaultDraftsError {
    /// A draft effect of another account than the vault's.
    public static var otherAccount: Self { Self("otherAccount") }
}

extension NavigationEffect {
    /// The account whose drafts a `saveDraft` or `deleteDraft` effect writes; nil for other effects.
    public var draftAccount: AccountID? {
        switch self {
        case .saveDraft(let key, _), .deleteDraft(let key): key.account
        default: nil
        }
    }
}
