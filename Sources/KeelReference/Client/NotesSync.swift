public import KeelStore
public import KeelSync

/// The reference app's sync declarations: its conflict policies, offline scenario and data inventory.
/// Only public API; an app with its own entities declares the same things for them.
public enum NotesSync {
    /// Notes: title and body are settled by the user (two people's words are never silently dropped), tags
    /// merge as a set union, and `pinned` is last-write-wins — declared, because a pin is a display
    /// preference whose intermediate values nobody needs, and allowed by the contract (`x-last-write-wins` on
    /// `Note.pinned` in `contracts/notes-api.v1.8.yaml`). A delete against an edit is the user's call too.
    public static let policies: ConflictPolicies = {
        var policies = ConflictPolicies()
        do {
            try policies.register(
                NotesRemote.entityType,
                .manual(
                    because:
                        "a note's text is the user's work: an edit or delete from elsewhere is shown, not overwritten"),
                fields: [
                    "tags": .merge(.setUnion, because: "tags added on two devices are both kept; removals apply"),
                    "pinned": .clientWins(
                        because:
                            "pinning is a display preference: the last change wins and losing an earlier value is acceptable"
                    ),
                    "kind": .serverWins(because: "the kind is set once, by whoever created the note"),
                    "visibility": .manual(because: "sharing decides who can read the note: the user confirms"),
                ])
        } catch { preconditionFailure("the reference app's policies are refused: \(error)") }
        return policies
    }()

    /// The operations the reference app offers offline.
    public static let offlineOperations: Set<String> = ["createNote", "editNote", "tagNote", "pinNote", "deleteNote"]

    /// One scenario: reading and editing notes works offline; notes may be six hours old before the list
    /// says they are stale; each note shows its own state and the list shows "updated … ago"; sync runs when
    /// the network returns, in the foreground, every 15 minutes and on request.
    public static let offline: OfflineContract = {
        do {
            return try OfflineContract([
                OfflineScenario(
                    name: "notesOffline", operations: offlineOperations, entityTypes: [NotesRemote.entityType],
                    maximumStaleness: .seconds(6 * 3600), display: .itemBadgesAndBanner,
                    conditions: [.connectivityRegained, .foreground, .periodic(.seconds(900)), .manual])
            ])
        } catch { preconditionFailure("the reference app's offline contract is refused: \(error)") }
    }()

    /// The reference app's inventory: the sync datasets (personal, sealed, device-only backup), drafts,
    /// attachments (sensitive media, rebuilt from the server), the navigation snapshot, the session token, the
    /// account to reopen at launch and the effect ledger of `publish`.
    public static let inventory: Inventory = {
        let everything: Set<Dataset.DeletionTrigger> = [.logout, .accountDeletion, .accessRevocation]
        do {
            return try Inventory(
                SyncStorage.default.datasets() + [
                    Dataset(
                        name: "drafts", purpose: "Text typed into the editor and not saved yet", kind: .draft,
                        classification: .personal, isAccountBound: true, retention: .untilEvent, backup: .deviceOnly,
                        deletionTriggers: everything, role: .sourceOfTruth),
                    Dataset(
                        name: "media", purpose: "Images attached to notes", kind: .mediaDirectory,
                        classification: .sensitive, isAccountBound: true, retention: .untilEvent, backup: .exclude,
                        deletionTriggers: everything, role: .cache(rebuiltFrom: "the backend")),
                    Dataset(
                        name: "navigation", purpose: "The screen stack to restore after the app was killed",
                        kind: .snapshot, classification: .personal, isAccountBound: true, retention: .untilEvent,
                        backup: .exclude, deletionTriggers: everything, role: .sourceOfTruth),
                    Dataset(
                        name: "session-token", purpose: "The account's bearer token for the backend", kind: .keyValue,
                        classification: .credential, isAccountBound: true, retention: .untilEvent, backup: .deviceOnly,
                        deletionTriggers: everything, role: .sourceOfTruth),
                    Dataset(
                        name: "app-session",
                        purpose: "Which signed-in account to reopen at launch (app-session.json in the data directory)",
                        kind: .file, classification: .internal, isAccountBound: false, retention: .untilEvent,
                        backup: .deviceOnly, deletionTriggers: [.logout, .accountDeletion], role: .sourceOfTruth),
                    Dataset(
                        name: "effects",
                        purpose:
                            "Irreversible operations already started (publish), so none runs twice "
                            + "(the EffectLedger's records, sealed in the account's vault)",
                        kind: .keyValue, classification: .personal, isAccountBound: true, retention: .untilEvent,
                        backup: .deviceOnly, deletionTriggers: everything, role: .sourceOfTruth),
                ])
        } catch { preconditionFailure("the reference app's inventory is refused: \(error)") }
    }()
}
