public import KeelStore

/// The inventory of the vault tests and of `keel-fixtures vault-logout`: a synced note (personal), an
/// unsynced draft kept across logout (personal), a device-only session token (credential), photos (a
/// sensitive cache), a feed cache (internal) and a public catalog that belongs to no account.
public enum VaultInventory {
    /// The declarations.
    public static let inventory: Inventory = {
        let everything: Set<Dataset.DeletionTrigger> = [.logout, .accountDeletion, .accessRevocation]
        // A fixed, valid declaration list: a refusal here is a bug in the fixture itself.
        do {
            return try Inventory([
                Dataset(
                    name: "notes", purpose: "The user's notes", kind: .keyValue, classification: .personal,
                    isAccountBound: true, retention: .untilEvent, backup: .include,
                    deletionTriggers: [.logout, .accountDeletion], role: .sourceOfTruth),
                Dataset(
                    name: "drafts", purpose: "Unsynced drafts the user keeps across sign-out", kind: .draft,
                    classification: .personal, isAccountBound: true, retention: .untilEvent, backup: .include,
                    deletionTriggers: [.accountDeletion], role: .sourceOfTruth),
                Dataset(
                    name: "session-token", purpose: "Signs API calls", kind: .keyValue, classification: .credential,
                    isAccountBound: true, retention: .untilEvent, backup: .deviceOnly, deletionTriggers: everything,
                    role: .sourceOfTruth),
                Dataset(
                    name: "media", purpose: "Photos attached to notes", kind: .mediaDirectory,
                    classification: .sensitive,
                    isAccountBound: true, retention: .untilEvent, backup: .exclude, deletionTriggers: everything,
                    role: .cache(rebuiltFrom: "GET /media")),
                Dataset(
                    name: "feed-cache", purpose: "The account's feed, for offline reading", kind: .cache,
                    classification: .internal, isAccountBound: true, retention: .untilEvent, backup: .exclude,
                    deletionTriggers: everything, role: .cache(rebuiltFrom: "GET /feed")),
                Dataset(
                    name: "catalog", purpose: "Public product catalog", kind: .cache, classification: .public,
                    isAccountBound: false, retention: nil, backup: .exclude, deletionTriggers: [.appVersionChange],
                    role: .cache(rebuiltFrom: "GET /catalog")),
            ])
        } catch { preconditionFailure("the vault fixture inventory is refused: \(error)") }
    }()

    /// ``inventory`` with `change` applied to the declaration of `name` (an app update that changed it).
    ///
    /// - Throws: ``InventoryError`` when the changed declarations are refused.
    public static func inventory(changing name: String, _ change: (inout Dataset) -> Void) throws -> Inventory {
        try Inventory(
            inventory.datasets.values.map { dataset in
                var dataset = dataset
                if dataset.name == name { change(&dataset) }
                return dataset
            })
    }
}
