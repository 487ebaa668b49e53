public import Foundation
public import KeelCore

/// A minimal, versioned snapshot of navigation (MOB-PLAT-005): the stack and modal (route, parameters,
/// owning account), the remembered target and consumed links — never view models, never unsaved input
/// (what must survive process death is saved as a draft, under the route's declared lifecycle), never
/// secrets, never a pending prompt.
public struct NavigationSnapshot: Sendable, Hashable, Codable {
    /// The format this version of Keel writes.
    public static let currentVersion = 1

    /// The format version.
    public var version: Int
    /// The state, without input, prompt or drafts.
    public var state: NavigationState
    /// Operations started from navigation and not yet settled (ids in the app's effect ledger), reattached
    /// after restore instead of being started again.
    public var inFlight: [String]

    /// A snapshot of `state`: unsaved input and the prompt are left out.
    public init(_ state: NavigationState, inFlight: [String] = []) {
        version = Self.currentVersion
        var state = state
        // Input no draft can keep (nobody signed in) is marked, never written: launch then says it was lost.
        let signedIn = state.account != nil
        func withoutInput(_ entry: NavigationEntry) -> NavigationEntry {
            var entry = entry
            if !(entry.input ?? "").isEmpty, entry.account == nil, !signedIn { entry.inputNotKept = true }
            entry.input = nil
            return entry
        }
        state.stack = state.stack.map(withoutInput)
        state.modal = state.modal.map(withoutInput)
        // The target sign-in holds carries the input typed there before the session expired: not written
        // either (kept only where its lifecycle saved it as a draft, in the account's vault).
        state.pendingTarget = state.pendingTarget.map(withoutInput)
        state.prompt = nil
        state.drafts = [:]
        self.state = state
        self.inFlight = inFlight
    }

    /// The snapshot as bytes.
    public func encoded() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return try encoder.encode(self)
    }
}

/// Whether the session is still valid when a snapshot is restored: the app asks its token store (or the
/// server) before anything protected is shown again.
public enum SessionCheck: Sendable, Hashable {
    /// Signed in as this account, with a valid session.
    case valid(account: AccountID)
    /// The session of the snapshot's account expired (or its credentials are gone).
    case expired
    /// Nobody is signed in.
    case signedOut
}

extension Navigator {
    /// Restores a snapshot, in this order: decode → version check (and migration of older formats) →
    /// re-check the session (expired → sign-in, the target and drafts kept) → re-check access of every
    /// entry (revoked → cut above it) → drop sensitive one-time entries → put drafts back into their
    /// entries. An unusable snapshot gives a fresh start with an explicit `snapshotDiscarded` effect;
    /// drafts are never touched. A snapshot naming an account that is not a valid ``AccountID`` (an empty or
    /// placeholder id an earlier version took as one) is unusable: nothing of it is restored, in any session
    /// (`snapshotDiscarded snapshot names an invalid account`) — an unknown account is never a shared one
    /// (MOB-DATA-006).
    ///
    /// - Parameters:
    ///   - data: the snapshot bytes (nil on a first launch).
    ///   - drafts: every draft in the drafts store.
    ///   - session: the session as the app knows it now.
    ///   - migrations: upgrades of older snapshot formats, by the version they upgrade from.
    public func restore(
        _ data: Data?, drafts: [DraftKey: String], session: SessionCheck,
        migrations: [Int: @Sendable (Data) throws -> Data] = [:]
    ) -> (result: NavigationResult, inFlight: [String]) {
        var fresh = initialState
        fresh.drafts = drafts
        if case .valid(let account) = session {
            fresh.account = account
            fresh.sessionValid = true
        }
        guard let data else { return (NavigationResult(state: fresh), []) }
        // The common case, a snapshot of the current format, is parsed once.
        let decoded: NavigationSnapshot
        if let current = try? JSONDecoder().decode(NavigationSnapshot.self, from: data),
            current.version == NavigationSnapshot.currentVersion
        {
            decoded = current
        } else {
            struct Version: Decodable { let version: Int }
            guard var version = try? JSONDecoder().decode(Version.self, from: data).version else {
                return (NavigationResult(state: fresh, effects: [.snapshotDiscarded("unreadable snapshot")]), [])
            }
            guard version <= NavigationSnapshot.currentVersion else {
                return (
                    NavigationResult(
                        state: fresh,
                        effects: [
                            .snapshotDiscarded(
                                "snapshot version \(version) is newer than \(NavigationSnapshot.currentVersion)")
                        ]), []
                )
            }
            var bytes = data
            while version < NavigationSnapshot.currentVersion {
                guard let migrate = migrations[version], let upgraded = try? migrate(bytes) else {
                    return (
                        NavigationResult(
                            state: fresh,
                            effects: [.snapshotDiscarded("no migration from snapshot version \(version)")]),
                        []
                    )
                }
                bytes = upgraded
                version += 1
            }
            let migrated: NavigationSnapshot
            do { migrated = try JSONDecoder().decode(NavigationSnapshot.self, from: bytes) } catch {
                return (NavigationResult(state: fresh, effects: [.snapshotDiscarded(Self.discardReason(error))]), [])
            }
            guard migrated.version == NavigationSnapshot.currentVersion else {
                return (NavigationResult(state: fresh, effects: [.snapshotDiscarded("damaged snapshot")]), [])
            }
            decoded = migrated
        }
        let snapshot = decoded
        guard !snapshot.state.stack.isEmpty,
            (snapshot.state.stack + [snapshot.state.modal].compactMap { $0 }).allSatisfy({
                contract.route($0.route) != nil
            })
        else {
            return (NavigationResult(state: fresh, effects: [.snapshotDiscarded("damaged snapshot")]), [])
        }

        var run = Run(navigator: self, state: snapshot.state)
        // Entries opened from now on get a lineage of their own: the snapshot may be older than entries opened
        // after it, in a dead process or in this one (a rebuild), whose numbers the counter hands out again.
        run.state.lineage = fresh.lineage
        run.state.drafts = drafts
        run.state.prompt = nil
        // The session, as it is now.
        let previous = snapshot.state.account
        switch session {
        case .valid(let account):
            run.state.account = account
            run.state.sessionValid = true
        case .expired:
            run.state.sessionValid = false
        case .signedOut:
            run.state.account = nil
            run.state.sessionValid = false
        }
        let target = run.state.top
        var entries = run.state.stack + [run.state.modal].compactMap { $0 }
        // Another account's entries never come back (a switch while the app was dead).
        let otherAccount: Bool
        if case .valid(let account) = session, let previous, previous != account {
            entries = entries.filter(run.isPublic)
            otherAccount = true
        } else {
            otherAccount = false
        }
        // Public entries that stay belong to no account when the session is not the snapshot's (another
        // account, or nobody): input typed there later is the next account's, as after a switch while running.
        if otherAccount || (session == .signedOut && previous != nil) {
            for index in entries.indices where run.isPublic(entries[index]) { entries[index].account = nil }
        }
        // The target sign-in was holding when the app died (a deep link opened while signed out), unless it
        // was another account's.
        var held = snapshot.state.pendingTarget
        if let entry = held,
            contract.route(entry.route)?.isSensitive == true || (otherAccount && !run.isPublic(entry))
        {
            held = nil
        }
        // A held target without a parameter its route declares now (an app update) can never be opened: it is
        // dropped saying so; its input and draft are kept or reported as its lifecycle says — an update revokes
        // nothing, and deletes no draft (MOB-API-005).
        if let entry = held, run.navigator.isOutdated(entry) {
            run.effects.append(.accessDenied(entry.label))
            if run.holdsInput(entry) { run.keepOrReport(entry) }
            held = nil
        }
        // Input typed while nobody was signed in could not be kept as a draft: the process died with it, and
        // the app says so (for a route whose lifecycle promised to keep it).
        for index in entries.indices where entries[index].inputNotKept == true {
            if let input = contract.route(entries[index].route)?.input, Run.keepsDrafts(input) {
                run.effects.append(.inputLost(entries[index].label))
            }
            entries[index].inputNotKept = nil
        }
        // Sensitive one-time entries are never restored.
        let sensitive = entries.filter { contract.route($0.route)?.isSensitive == true }
        for entry in sensitive { run.effects.append(.droppedSensitive(entry.label)) }
        entries.removeAll { contract.route($0.route)?.isSensitive == true }
        if entries.first?.route != contract.root.id { entries.insert(run.rootEntry(), at: 0) }
        // The root stays in the stack even where a contract declares it modal: the stack is never empty. Sign-in
        // is a modal wherever the navigator showed it (`signInEntry`), whatever its route declares.
        let modalEntry =
            entries.count > 1
            ? entries.last.flatMap {
                contract.route($0.route)?.isModal == true || $0.route == signInRoute ? $0 : nil
            } : nil
        let stack = modalEntry == nil ? entries : Array(entries.dropLast())
        let remembered =
            target.flatMap { contract.route($0.route)?.isSensitive == true ? nil : $0 } ?? stack.last!
        run.state.pendingTarget = nil
        let checked = run.checked(stack, modal: modalEntry, target: held ?? remembered)
        // Sign-in is what the user sees again: it still leads to the target it was holding.
        if run.state.pendingTarget == nil, let held, checked.modal?.route == signInRoute {
            run.state.pendingTarget = held
            run.state.pendingTargetPushed = snapshot.state.pendingTargetPushed
        }
        // Access revoked while the app was dead: as when it is revoked while running, the input of what is cut
        // is lost and its draft deleted (never kept for a screen the user cannot reach, to come back later);
        // the draft of a screen cut above it but accessible itself stays.
        run.cut(
            Array(checked.denied),
            denied: run.deniedIDs(checked.denied, resource: run.revokedResource(checked.denied)))
        run.state.stack = checked.stack.isEmpty ? [run.rootEntry()] : checked.stack
        run.state.modal = checked.modal
        // Sign-in saved on screen, and the session is valid now (a refresh at relaunch, or a sign-in while the
        // app was dead): it is done — the sign-in screen goes and the target it held opens, as a sign-in does.
        if case .valid(let account) = session, checked.modal?.route == signInRoute {
            run.signIn(account)
        }
        // Operations in flight belong to the account that started them: never reattached in another's session.
        let inFlight: [String]
        switch session {
        case .valid(let account) where previous != nil && previous != account: inFlight = []
        case .signedOut where previous != nil: inFlight = []
        default: inFlight = snapshot.inFlight
        }
        return (NavigationResult(state: run.state, effects: run.effects), inFlight)
    }

    /// Why a snapshot that does not decode is discarded: an account in it that is not a valid ``AccountID``
    /// (the state's, an entry's), or damage.
    static func discardReason(_ error: any Error) -> String {
        if case DecodingError.dataCorrupted(let context) = error, context.codingPath.last?.stringValue == "account" {
            return "snapshot names an invalid account"
        }
        return "damaged snapshot"
    }
}
