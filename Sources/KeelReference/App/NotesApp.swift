public import Foundation
public import KeelContract
public import KeelCore
public import KeelHTTP
public import KeelLifecycle
import KeelStore
import KeelSync

/// The reference notes app, as a model: accounts, notes with offline editing and sync, conflicts, drafts,
/// deep links and navigation restored after process death — built only on public Keel API. `keel-notes`
/// drives it one command line at a time; every command answers one JSON object.
///
/// The app's data lives in Keel's stores only: each account's vault (notes and outbox via ``SyncEngine``,
/// the session token, drafts, the navigation snapshot, the effect ledger of `publish`), plus `app-session.json`
/// in the data directory, which names the account to reopen at launch (declared in ``NotesSync/inventory`` as
/// `app-session`).
public actor NotesApp {
    /// How the app runs.
    public struct Configuration: Sendable {
        /// The data directory (vaults, `app-session.json`).
        public var data: URL
        /// The key directory (outside the data directory).
        public var keys: URL
        /// The backend's base URL.
        public var server: URL
        /// The host of published notes' public pages (another origin than ``server``: it gets neither the
        /// session token nor trace context). Nil: publishing does not check that the page is live.
        public var publicPages: URL?
        /// A name for this device in logs.
        public var device: String
        /// The app's version and platform (sent on every call; the version policy judges them).
        public var appVersion: AppVersion
        /// `ios` or `android`.
        public var platform: String
        /// Timeouts and retries of every call.
        public var policy: CallPolicy
        /// The wall clock (note dates, freshness).
        public var clock: WallClock
        /// Ids, keys, jitter.
        public var random: RandomSource

        /// A configuration; the defaults suit the command-line app.
        public init(
            data: URL, keys: URL, server: URL, publicPages: URL? = nil, device: String = "device",
            appVersion: AppVersion = AppVersion("1.0")!, platform: String = "ios",
            policy: CallPolicy = CallPolicy(attemptTimeout: .seconds(5), deadline: .seconds(12), maximumAttempts: 3),
            clock: WallClock = .system, random: RandomSource = .system
        ) {
            self.data = data
            self.keys = keys
            self.server = server
            self.publicPages = publicPages
            self.device = device
            self.appVersion = appVersion
            self.platform = platform
            self.policy = policy
            self.clock = clock
            self.random = random
        }
    }

    /// The app's navigation: home → notes → note → edit (text saved as a draft when the app goes away), a
    /// sign-in modal; `keel-notes://note/{noteID}` and a notification open a note above its declared
    /// parents (home, notes).
    public static let navigation: NavigationContract = {
        do {
            return try NavigationContract([
                Route("home", access: .public, isRoot: true),
                Route("notes", parent: "home", access: .signedIn),
                Route(
                    "note", parent: "notes", access: .account, parameters: ["noteID"],
                    deepLink: "keel-notes://note/{noteID}"),
                Route(
                    "edit", parent: "note", access: .account, parameters: ["noteID"],
                    input: .init(policy: .saveDraft, onDeath: .save)),
                Route("signIn", access: .public, isModal: true),
            ])
        } catch { preconditionFailure("the reference app's navigation contract is refused: \(error)") }
    }()

    /// The configuration.
    public let configuration: Configuration
    let vaults: Vaults
    let client: HTTPClient
    let pages: HTTPClient?
    let navigator: Navigator
    let accounts: SyncAccounts
    let tokens: Locked<[AccountID: String]>

    var engine: SyncEngine? {
        didSet { if engine !== oldValue { restartPeriodicSync() } }
    }
    /// Whether the platform last reported the network gone (`offline`), for whichever account is active.
    private var networkLost = false
    /// The engine's periodic sync (the offline scenario declares one): restarted with every engine, so that
    /// the declared condition is real, not only written down.
    private var periodic: Task<Void, Never>?

    private func restartPeriodicSync() {
        periodic?.cancel()
        periodic = engine.map { engine in Task { await engine.runPeriodically(clock: ContinuousClock()) } }
    }
    var state: NavigationState
    /// Why the account of the session file could not be reopened at launch (its vault did not open), until it
    /// is signed out of or another sign-in succeeds: commands that need it say so, with the way out, instead of
    /// "sign in first" (found in an outside audit: a missing key read as nobody signed in).
    private var launchProblem: LocalDataProblem?
    /// What ``launch()`` answered.
    private(set) var launched: JSONObject = ["ok": true, "launched": "notYet"]

    /// The app on its directories (nothing is opened until ``launch()``).
    ///
    /// - Throws: `VaultError`/`KeyStoreError` when the directories cannot be used.
    public init(_ configuration: Configuration) throws {
        self.configuration = configuration
        vaults = try Vaults(
            dataDirectory: configuration.data,
            keyStore: try FileKeyStore(directory: configuration.keys, dataDirectories: [configuration.data]),
            inventory: NotesSync.inventory, clock: configuration.clock)
        // Trace context goes to the backend's origin only: the public page host is not in the allowlist.
        let tracing = TraceContextMiddleware(
            allowlist: OriginAllowlist([configuration.server]), random: configuration.random)
        let client = HTTPClient(
            configuration: .init(
                baseURL: configuration.server, wallClock: configuration.clock, random: configuration.random,
                policy: configuration.policy, middleware: [tracing],
                versionPolicy: VersionPolicyContract(
                    appVersion: configuration.appVersion, platform: configuration.platform)))
        self.client = client
        pages = configuration.publicPages.map { pages in
            HTTPClient(
                configuration: .init(
                    baseURL: pages, wallClock: configuration.clock, random: configuration.random,
                    policy: configuration.policy, middleware: [tracing]))
        }
        navigator = Navigator(contract: Self.navigation, signInRoute: "signIn")
        state = navigator.initialState
        let tokens = Locked<[AccountID: String]>([:])
        self.tokens = tokens
        let random = configuration.random
        let clock = configuration.clock
        accounts = SyncAccounts(vaults: vaults) { vault in
            let stored = try await vault.get(Self.credentials, id: "bearer").map { String(decoding: $0, as: UTF8.self) }
            // A token this process got from a sign-in is the newest: it replaces the stored one (a session the
            // server ended is renewed by signing in again). Without one, the stored session is used — also
            // offline, after a relaunch.
            guard let token = tokens.withLock({ $0[vault.account] }) ?? stored else {
                throw NotesAppError(
                    kind: .authentication, message: "\(vault.account) is not signed in on this device",
                    notSignedIn: true)
            }
            if stored != token { try await vault.put(Self.credentials, id: "bearer", Data(token.utf8)) }
            return try SyncEngine(
                vault: vault, remote: NotesRemote(client: client, account: vault.account, token: token),
                policies: NotesSync.policies, offline: NotesSync.offline, clock: clock, random: random)
        }
    }

    static let credentials = "session-token"
    static let snapshots = "navigation"
    var sessionFile: URL { configuration.data.appendingPathComponent("app-session.json") }

    /// The dataset of the effect ledger of `publish` in each account's vault (declared as `effects`).
    static let effects = "effects"

    /// Where an earlier version kept `account`'s effect ledger: `effects/<namespace>.json` in the data
    /// directory (plaintext, outside the vault). Imported into the vault, then deleted, on first use.
    func legacyLedgerFile(_ account: AccountID) -> URL {
        configuration.data.appendingPathComponent("effects").appendingPathComponent(
            VaultNamespace(account).rawValue + ".json")
    }

    /// The effect ledger of the account whose vault `engine` has: records of the sealed `effects` dataset,
    /// which go with the account's data at sign-out and account deletion (the inventory's triggers). A ledger
    /// an earlier version kept in a file is moved in first, in one transaction, the file deleted only once it
    /// committed: an upgraded install keeps its started publications and their keys, and sends none twice.
    /// A file that is not a ledger is kept as it is and reported; nothing is published for this account until
    /// it is dealt with (which of its publications were started cannot be told).
    func effectLedger(_ engine: SyncEngine) async throws -> EffectLedger {
        let ledger = try EffectLedger(vault: engine.vault, dataset: Self.effects, clock: configuration.clock)
        let file = legacyLedgerFile(engine.vault.account)
        do {
            try await ledger.importFile(file)
        } catch let error as EffectLedgerError where error.code == .damaged {
            throw NotesAppError(
                kind: .technical,
                message:
                    "The record of this account's earlier publications on this device is damaged; nothing was sent.")
        }
        return ledger
    }

    /// Deletes a ledger file an earlier version left (the vault's own `effects` go with the vault's data).
    private func removeLegacyLedger(_ account: AccountID) {
        try? FileManager.default.removeItem(at: legacyLedgerFile(account))
        try? FileManager.default.removeItem(atPath: legacyLedgerFile(account).path + ".lock")
    }

    // MARK: - Launch

    /// Reopens the account that was active and restores its screen and drafts (after a kill as after a normal
    /// quit). Answers the screen.
    public func launch() async -> JSONObject {
        // Before any vault opens: a new app version resets the caches its inventory says go with the version
        // (none in this app's today; never its drafts, credentials or queued changes). A store that could not be
        // reset is reported with the launch: it is reset when it is next opened (refused until it can be), and
        // tried again at the next launch. A check that failed as a whole (its record not written) is reported
        // the same way; it keeps nothing from opening.
        var versionProblem: String?
        do {
            let check = try await vaults.checkAppVersion(configuration.appVersion.description)
            if !check.isFinished {
                versionProblem = check.unfinished.map(\.description).joined(separator: "; ")
            }
        } catch {
            versionProblem = "\(error)"
        }
        launched = await reopen()
        if let versionProblem { launched["appVersionCheck"] = .string(versionProblem) }
        return launched
    }

    private func reopen() async -> JSONObject {
        guard let (account, expired) = storedSession() else {
            return ["ok": true, "launched": "fresh", "screen": screen]
        }
        do {
            let engine = try await accounts.activate(account)
            self.engine = engine
            let snapshot = try await engine.vault.get(Self.snapshots, id: "snapshot")
            let drafts = try await VaultDrafts(vault: engine.vault, dataset: "drafts").load()
            // The session as it is now: one the server ended (a 401) asks for sign-in again before the
            // account's screens come back (MOB-PLAT-005).
            let check: SessionCheck = expired ? .expired : .valid(account: account)
            let restored = navigator.restore(snapshot, drafts: drafts, session: check)
            // What the restore did is done and said: a draft of a screen whose access was revoked is deleted
            // from the vault, a discarded snapshot or lost input is reported.
            var answer = try await finish(
                restored.result,
                drafts: restored.result.effects.filter { $0.draftAccount == account })
            answer["launched"] = "restored"
            answer["account"] = .string(account.rawValue)
            return answer
        } catch {
            // Data that exists and cannot be read (MOB-DATA-007: a key that is gone, a damaged vault) is an
            // explicit result with a way out, never read as an empty or signed-out state.
            let problem = LocalDataProblem(error, account: account)
            launchProblem = problem
            var answer = problem.answer
            answer["launched"] = "failed"
            answer["account"] = .string(account.rawValue)
            answer["screen"] = screen
            return answer
        }
    }

    /// The account the session file names (the one to reopen at launch), and whether the server ended its
    /// session, if there is one.
    private func storedSession() -> (account: AccountID, expired: Bool)? {
        guard let data = try? Data(contentsOf: sessionFile), let session = try? JSONValue(parsing: data),
            let name = session["account"]?.stringValue, let account = try? AccountID(name)
        else { return nil }
        return (account, session["expired"] == true)
    }

    /// Records `account` as the one to reopen at launch; `expired` when the server ended its session.
    private func storeSession(_ account: AccountID, expired: Bool = false) throws {
        var session: JSONObject = ["account": .string(account.rawValue)]
        if expired { session["expired"] = true }
        try Data(JSONValue.object(session).serialized()).write(to: sessionFile, options: .atomic)
    }

    /// The server ended the session (a 401): the navigator shows sign-in over the public screens, holding the
    /// one on top, and a relaunch before the next sign-in asks for it again (the session file says so).
    private func sessionEnded() async {
        guard let account = engine?.vault.account, state.sessionValid else { return }
        _ = try? await navigate(.sessionExpired)
        try? storeSession(account, expired: true)
    }

    // MARK: - Commands

    /// Runs one command line and answers one JSON object: `{"ok": true, ...}` or
    /// `{"ok": false, "error": {"kind", "outcome", "message"}}` (the message is user-facing text).
    public func perform(_ line: String) async -> JSONObject {
        let words = line.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: true).map(String.init)
        guard let command = words.first else { return Self.usage("an empty line") }
        let argument = words.count > 1 ? words[1] : nil
        let rest = words.count > 2 ? words[2] : nil
        // A command that takes fewer words than it was given is refused, not run on the first ones: `signin a b`
        // must not sign in to `a` (found in an outside audit: the extra words were silently dropped).
        if let arity = Self.arity[command], words.count - 1 > arity {
            return Self.usage(
                "\(command) takes \(arity == 0 ? "no argument" : "one argument") (got \(line.split(separator: " ").count - 1))"
            )
        }
        do {
            switch command {
            case "signin":
                guard let argument else { return Self.usage("signin ACCOUNT") }
                return try await signIn(try Self.account(argument))
            case "switch":
                guard let argument else { return Self.usage("switch ACCOUNT") }
                return try await signIn(try Self.account(argument), switching: true)
            case "signout": return try await signOut()
            case "delete-account": return try await deleteAccount()
            case "new":
                guard let argument else { return Self.usage("new TITLE") }
                let title = rest.map { argument + " " + $0 } ?? argument
                // What the contract refuses is refused here, at once — queued offline it would fail only at the
                // next sync, and every later change of the note would wait behind it (found in an outside test).
                if title.unicodeScalars.count > Self.maximumTitle {
                    return Self.refusal("validation", "A title is at most \(Self.maximumTitle) characters.")
                }
                let id = configuration.random.uuidString()
                try await requireEngine().create(
                    NotesRemote.entityType, id: id, fields: ["title": .string(title), "body": ""],
                    operation: "createNote")
                return ["ok": true, "id": .string(id)]
            case "edit":
                guard let argument, let rest else { return Self.usage("edit ID TEXT") }
                let engine = try requireEngine()
                // A note that is not here is `notFound`, as for tag and pin (not the engine's invalidChange).
                guard let note = try await engine.entity(NotesRemote.entityType, id: argument), !note.isDeleted else {
                    return Self.notFound(argument)
                }
                try await engine.update(
                    NotesRemote.entityType, id: argument, fields: ["body": .string(rest)], operation: "editNote")
                return ["ok": true, "id": .string(argument)]
            case "tag":
                guard let argument, let rest else { return Self.usage("tag ID TAG") }
                let engine = try requireEngine()
                guard let note = try await engine.entity(NotesRemote.entityType, id: argument), !note.isDeleted else {
                    return Self.notFound(argument)
                }
                if rest.unicodeScalars.count > Self.maximumTag {
                    return Self.refusal("validation", "A tag is at most \(Self.maximumTag) characters.")
                }
                var tags: [JSONValue] = if case .array(let items)? = note.fields["tags"] { items } else { [] }
                if !tags.contains(.string(rest)) { tags.append(.string(rest)) }
                try await engine.update(
                    NotesRemote.entityType, id: argument, fields: ["tags": .array(tags)], operation: "tagNote")
                return ["ok": true, "id": .string(argument), "tags": .array(tags)]
            case "pin":
                guard let argument else { return Self.usage("pin ID") }
                let engine = try requireEngine()
                guard let note = try await engine.entity(NotesRemote.entityType, id: argument), !note.isDeleted else {
                    return Self.notFound(argument)
                }
                let pinned = note.fields["pinned"] != .bool(true)
                try await engine.update(
                    NotesRemote.entityType, id: argument, fields: ["pinned": .bool(pinned)], operation: "pinNote")
                return ["ok": true, "id": .string(argument), "pinned": .bool(pinned)]
            case "list": return try await list()
            case "sync": return try await sync()
            // A failed change has a way out: sent again (`retry`: every failed change, as new changes where the
            // server refused them), or given up (`discard ID`: the note's failed changes; it shows the server's
            // version again). Found in an outside test: one refused change held every later change of its note
            // back, with no command to act on it.
            case "retry":
                let retried = try await requireEngine().retryFailed()
                return ["ok": true, "retried": .number(JSONNumber(Int64(retried)))]
            case "discard":
                guard let argument else { return Self.usage("discard ID") }
                let engine = try requireEngine()
                let failed = try await engine.outbox().filter {
                    $0.entity.id == argument && $0.entity.type == NotesRemote.entityType && $0.state == .failed
                }
                for change in failed.reversed() { try await engine.discard(change) }
                // A change that cannot be read back (damaged storage) keeps the note failed too: given up as well.
                let unreadable = try await engine.discardUnreadable(
                    of: EntityRef(type: NotesRemote.entityType, id: argument))
                guard failed.count + unreadable > 0 else {
                    return Self.refusal("notFound", "That note has no failed change.")
                }
                return [
                    "ok": true, "id": .string(argument),
                    "discarded": .number(JSONNumber(Int64(failed.count + unreadable))),
                ]
            // The conditions the offline scenario declares (MOB-DATA-004), as the platform would report them:
            // the network came back or went away, the app came to the foreground.
            case "online":
                let engine = try requireEngine()
                // The network is the device's, not the account's: an account switched to while offline learns
                // that it was (found in an outside test: its engine never knew, and regaining synced nothing).
                if networkLost {
                    networkLost = false
                    _ = await engine.connectivityChanged(reachable: false)
                }
                return try await syncedOn(await engine.connectivityChanged(reachable: true))
            case "offline":
                networkLost = true
                _ = try await requireEngine().connectivityChanged(reachable: false)
                return ["ok": true, "ran": false, "synced": false]
            case "foreground": return try await syncedOn(await requireEngine().handle(.foreground))
            case "conflicts": return try await conflicts()
            case "resolve":
                guard let argument, let rest else { return Self.usage("resolve ID mine|theirs|merged TEXT") }
                return try await resolve(argument, rest)
            case "open-link":
                guard let argument else { return Self.usage("open-link URL") }
                return try await navigate(.deepLink(url: argument, mode: .warm))
            case "back":
                guard let trigger = argument.flatMap(BackTrigger.init(rawValue:)) else {
                    return Self.usage("back systemBack|gesture|appButton|modalDismiss")
                }
                return try await navigate(.back(trigger))
            case "open":
                guard let argument else { return Self.usage("open ID") }
                return try await navigate(.open(route: "note", parameters: ["noteID": argument]))
            case "editor":
                guard let argument else { return Self.usage("editor ID") }
                return try await navigate(.open(route: "edit", parameters: ["noteID": argument]))
            case "type":
                var answer = try await navigate(.type(argument.map { $0 + (rest.map { " " + $0 } ?? "") } ?? ""))
                // Autosave: the text is kept as a draft at once (a kill gives no warning), as `background` does.
                if answer["ok"] == true { answer = try await navigate(.background) }
                return answer
            case "notification":
                guard let argument else { return Self.usage("notification ID") }
                return try await navigate(.notification(route: "note", parameters: ["noteID": argument], mode: .warm))
            case "publish":
                guard let argument else { return Self.usage("publish ID") }
                return try await publish(argument)
            case "version": return version()
            case "launch": return launched
            case "screen": return ["ok": true, "screen": screen]
            default:
                return Self.usage("unknown command \(command)")
            }
        } catch {
            if let failure = error as? HTTPFailure, failure.kind == .authentication { await sessionEnded() }
            return Self.failure(error)
        }
    }

    // MARK: - Accounts

    /// `signin` asks the server for a new session (its token replaces the stored one, and an engine holding
    /// the old token is replaced); `switch` uses the session the account has on this device — offline too,
    /// after a relaunch — and signs in only when it has none.
    private func signIn(_ account: AccountID, switching requested: Bool = false) async throws -> JSONObject {
        // A switch to the account whose session the server ended is a sign-in: its stored token is the dead one
        // (found in a review: the switch brought its screens back on it).
        let switching = requested && !(state.account == account && !state.sessionValid)
        if !switching {
            let token = try await NotesRemote.signIn(account, client: client)
            tokens.withLock { $0[account] = token }
            // The active engine of this account sends the old token (a 401 said the session ended). It is
            // stopped; the app holds no engine until the next one is made (a failure from here on leaves the
            // app signed out of it, never on a stopped engine).
            if engine?.vault.account == account {
                await accounts.deactivate()
                engine = nil
            }
        }
        let event: NavigationEvent = switching ? .switchAccount(account) : .signIn(account: account)
        // Leaving an account saves its open input as its drafts: they go to its vault before activating the
        // next account closes it (applied to the next account's vault they would be refused, and were lost).
        let result = navigator.reduce(state, event)
        let leaving = result.effects.filter { $0.draftAccount.map { $0 != account } ?? false }
        if !leaving.isEmpty, let engine, engine.vault.isOpen {
            try await VaultDrafts(vault: engine.vault, dataset: "drafts").apply(leaving)
        }
        let active = try await activateSigningInIfNeeded(account, returningTo: engine?.vault.account)
        engine = active
        launchProblem = nil
        try storeSession(account)
        // The account's drafts, from its vault (loaded at launch only for the account active then: another
        // account's were hidden, and the next save of one wrote over it), before the event is applied for good:
        // a target sign-in held opens with its draft. Drafts in memory are newer (typed while no vault was open).
        // The same event on the same state with more drafts of this account leaves the same effects for the
        // account left, applied above.
        var withDrafts = state
        for (key, text) in try await VaultDrafts(vault: active.vault, dataset: "drafts").load()
        where withDrafts.drafts[key] == nil {
            withDrafts.drafts[key] = text
        }
        let signedIn = navigator.reduce(withDrafts, event)
        var answer = try await finish(signedIn, drafts: signedIn.effects.filter { !leaving.contains($0) })
        // Changes refused because the session had ended go out with the new one. After the switch is complete:
        // failing to move them (they stay failed, shown so) never leaves the app half switched.
        if !switching { _ = try? await engine?.retryFailed(causedBy: [.authentication]) }
        if state.stack.last?.route == "home" { answer = try await navigate(.open(route: "notes")) }
        answer["account"] = .string(account.rawValue)
        return answer
    }

    /// Activates `account` on the session it has on this device; when it has none, signs it in first. If
    /// that sign-in fails (offline), `previous` is activated again, so that a failed switch leaves the app on
    /// the account it was on.
    private func activateSigningInIfNeeded(_ account: AccountID, returningTo previous: AccountID?) async throws
        -> SyncEngine
    {
        do {
            return try await accounts.activate(account)
        } catch let error as NotesAppError where error.notSignedIn {
            do {
                let token = try await NotesRemote.signIn(account, client: client)
                tokens.withLock { $0[account] = token }
            } catch {
                if let previous, previous != account { engine = try? await accounts.activate(previous) }
                throw error
            }
            return try await accounts.activate(account)
        }
    }

    private func signOut() async throws -> JSONObject {
        let outstanding = try await engine?.outstandingCount() ?? 0
        // The account of the session file when its vault did not open (a newer app wrote it, say): its
        // credentials still go.
        let account = engine?.vault.account ?? storedSession()?.account
        _ = try await navigate(.signOut)
        // The reference app signs out when asked and says how many changes were lost (its caller decided).
        let report = try await accounts.signOut(discardingUnsent: true, account: account)
        engine = nil
        launchProblem = nil
        // Its session goes with it: a later switch to the account must sign in again.
        if let account { tokens.withLock { $0[account] = nil } }
        try? FileManager.default.removeItem(at: sessionFile)
        // The effect ledger went with the vault's data (`effects`: deleted at logout); a ledger file an earlier
        // version left goes too.
        if let account { removeLegacyLedger(account) }
        return [
            "ok": true, "unsentChangesLost": .number(JSONNumber(Int64(outstanding))),
            "deleted": .array(report.deletedDatasets.map(JSONValue.string)), "screen": screen,
        ]
    }

    private func deleteAccount() async throws -> JSONObject {
        // The account of the session file when its vault did not open (damaged): deleting its data on this
        // device is the way out the launch named.
        guard let account = engine?.vault.account ?? storedSession()?.account else {
            throw NotesAppError(kind: .authentication, message: "nobody is signed in")
        }
        _ = try await navigate(.signOut)
        let report = try await accounts.deleteAccount(account)
        engine = nil
        launchProblem = nil
        tokens.withLock { $0[account] = nil }
        try? FileManager.default.removeItem(at: sessionFile)
        removeLegacyLedger(account)
        return ["ok": true, "deleted": .array(report.deletedDatasets.map(JSONValue.string)), "screen": screen]
    }

    private func requireEngine() throws -> SyncEngine {
        guard let engine else {
            if let launchProblem { throw launchProblem }
            throw NotesAppError(kind: .authentication, message: "sign in first")
        }
        return engine
    }

    // MARK: - Notes

    private func list() async throws -> JSONObject {
        let engine = try requireEngine()
        let notes = try await engine.entities(NotesRemote.entityType).filter { !$0.isDeleted }
        let freshness = try await engine.freshness(of: NotesRemote.entityType)
        return [
            "ok": true,
            "notes": .array(
                notes.map { note in
                    var object: JSONObject = [
                        "id": .string(note.ref.id), "title": note.fields["title"] ?? "",
                        "body": note.fields["body"] ?? "",
                        "tags": note.fields["tags"] ?? [], "pinned": note.fields["pinned"] ?? false,
                        "state": .string(note.state.rawValue),
                        "version": note.serverVersion.map { .number(JSONNumber(Int64($0))) } ?? .null,
                    ]
                    // A failed note says why and what the user can do (the one safe recovery action).
                    if note.state == .failed, let failure = note.failure {
                        // Shown only: its own random source, so that listing draws nothing from the app's (a
                        // seeded one would give later notes other ids depending on how often `list` ran).
                        let shown = failure.userFacing()
                        object["failure"] = [
                            "kind": .string(failure.kind.name), "outcome": .string(failure.outcome.description),
                            "message": .string(shown.message), "action": .string(shown.action.name),
                        ]
                    }
                    return .object(object)
                }),
            "stale": .bool(freshness.isStale), "updatedAgo": .string(freshness.description),
        ]
    }

    private func sync() async throws -> JSONObject {
        try await answer(to: await requireEngine().sync())
    }

    /// The answer to a condition that may have synced: `ran` false when it did not (not declared, or nothing
    /// changed), else what `sync` answers with `ran` true. `synced` says what Keel means by it — the backend
    /// confirmed every change: true only when the run left nothing outstanding, conflicted or rejected (found
    /// in an outside audit: a run that met a conflict, its change still outstanding, answered `synced: true`).
    private func syncedOn(_ report: SyncReport?) async throws -> JSONObject {
        guard let report else { return ["ok": true, "ran": false, "synced": false] }
        var answer = try await answer(to: report)
        guard answer["ok"] == true else { return answer }
        answer["ran"] = true
        answer["synced"] = .bool(
            report.conflicts == 0 && report.rejected == 0 && answer["outstanding"] == 0)
        return answer
    }

    /// What a sync run did (acknowledged, conflicts, rejected, pulled, and what is still outstanding), or its
    /// failure.
    private func answer(to report: SyncReport) async throws -> JSONObject {
        if let failure = report.failure {
            if failure.kind == .authentication { await sessionEnded() }
            return Self.failure(failure, correlationID: CorrelationID.make(using: configuration.random))
        }
        return [
            "ok": true, "acknowledged": .number(JSONNumber(Int64(report.acknowledged))),
            "conflicts": .number(JSONNumber(Int64(report.conflicts))),
            "rejected": .number(JSONNumber(Int64(report.rejected))),
            "pulled": .number(JSONNumber(Int64(report.pulled))),
            "outstanding": .number(JSONNumber(Int64(try await requireEngine().outstandingCount()))),
        ]
    }

    private func conflicts() async throws -> JSONObject {
        let records = try await requireEngine().conflicts()
        return [
            "ok": true,
            "conflicts": .array(
                records.map { conflict in
                    .object([
                        "id": .string(conflict.mutation.entity.id), "conflict": .string(conflict.id),
                        "fields": .array(conflict.unresolvedFields.map(JSONValue.string)),
                        "mine": .object(conflict.local), "theirs": .object(conflict.server.fields),
                        "theirsDeleted": .bool(conflict.server.isDeleted),
                    ])
                }),
        ]
    }

    private func resolve(_ noteID: String, _ rest: String) async throws -> JSONObject {
        let engine = try requireEngine()
        guard let conflict = try await engine.conflicts().first(where: { $0.mutation.entity.id == noteID }) else {
            return Self.notFound(noteID)
        }
        let parts = rest.split(separator: " ", maxSplits: 1).map(String.init)
        let resolution: ConflictRecord.Resolution
        switch parts.first {
        case "mine": resolution = .mine
        case "theirs": resolution = .theirs
        case "merged":
            guard parts.count == 2 else { return Self.usage("resolve ID merged TEXT") }
            // The merged text goes to the text fields the user was asked about.
            var fields = JSONObject()
            for name in conflict.unresolvedFields where name == "title" || name == "body" {
                fields[name] = .string(parts[1])
            }
            resolution = .merged(fields)
        default:
            return Self.usage("resolve ID mine|theirs|merged TEXT")
        }
        let replacement = try await engine.resolve(conflict.id, with: resolution)
        // `sent`: a change carrying the resolution is queued for the server (false: nothing to send, as for
        // `theirs`). It is not confirmed until a sync: `state` says where the note stands now (found in an
        // outside test: "sent" alone read as done while the backend was down).
        let state = try await engine.entity(NotesRemote.entityType, id: noteID)?.state.rawValue
        return [
            "ok": true, "id": .string(noteID), "sent": .bool(replacement != nil),
            "state": state.map(JSONValue.string) ?? .null,
        ]
    }

    // MARK: - Publishing

    /// Publishes a synced note once: the confirmation is recorded in the account's ``EffectLedger`` before
    /// the call, with the idempotency key the call carries. A confirmation already recorded is never run
    /// again: succeeded → its result, without a call; started and unsettled (the app died, or the outcome
    /// was unknown) → the same key again, so the backend answers the publication it made, or makes it once.
    private func publish(_ noteID: String) async throws -> JSONObject {
        let engine = try requireEngine()
        let account = engine.vault.account
        guard let note = try await engine.entity(NotesRemote.entityType, id: noteID), !note.isDeleted else {
            return Self.notFound(noteID)
        }
        guard note.serverVersion != nil, note.state == .synced else {
            throw NotesAppError(kind: .validation, message: "Sync this note before publishing it.")
        }
        // Publishing is online-only (no offline scenario declares it): offline it fails at once with
        // `offline`, instead of waiting out a call that cannot get through (found in an outside audit).
        try NotesSync.offline.requireOnline("publishNote", connectivity: await engine.connectivity)
        let ledger = try await effectLedger(engine)
        // A confirmation that failed for certain may be confirmed again: the next attempt is a new ledger entry,
        // sent under the same key (the backend keeps no answer for a key it did not apply).
        var attempt = 1
        while try await ledger.entry(Self.publication(noteID, attempt))?.state == .failed { attempt += 1 }
        let id = Self.publication(noteID, attempt)
        let key: String
        // The key says what is published — this note, which is published once — rather than being drawn at
        // random: a ledger that is gone (signed out and in again, a new install) derives the same key again,
        // and the backend answers the publication it made instead of making a second one.
        switch try await ledger.begin(
            id, action: "publish", reference: Self.publicationKey(noteID), account: account)
        {
        case .run:
            key = try await ledger.entry(id)?.reference ?? ""
        case .recorded(let entry):
            if entry.state == .succeeded, let path = entry.result {
                return ["ok": true, "id": .string(noteID), "path": .string(path), "alreadyPublished": true]
            }
            key = entry.reference ?? ""
        }
        // A recorded key that is not one (a damaged ledger) is never replaced by a new one: that could publish
        // twice. The user is told; nothing is sent. (128: the contract's longest Idempotency-Key.)
        guard let idempotencyKey = IdempotencyKey(validating: key), key.utf8.count <= 128 else {
            throw NotesAppError(
                kind: .technical, message: "This publication's record on this device is damaged; nothing was sent.")
        }
        let remote = NotesRemote(client: client, account: account, token: try await token(of: engine))
        let publication: NotesRemote.Publication
        do throws(HTTPFailure) {
            publication = try await remote.publish(noteID, key: idempotencyKey)
        } catch {
            // Failed for certain: recorded, so that confirming again starts a new attempt. Unknown (the key
            // may still be being applied): left started, so the next try sends the same key.
            if error.outcome != .unknown {
                try await ledger.complete(id, .failed, result: nil)
            }
            throw error
        }
        do {
            try await ledger.complete(id, .succeeded, result: publication.path)
        } catch let error as EffectLedgerError where error.code == .alreadySucceeded {
            // Another tap settled it meanwhile (the same key, so the same publication): its record stands.
        }
        var answer: JSONObject = [
            "ok": true, "id": .string(noteID), "path": .string(publication.path), "alreadyPublished": false,
            "version": .number(JSONNumber(Int64(publication.version))),
        ]
        if let pages {
            // The page is on another origin: this call carries no token and no trace context.
            let page = try? await pages.send(
                HTTPOperation(method: "GET", path: publication.path, idempotency: .idempotent, expectsJSON: false))
            answer["live"] = .bool(page.map { (200...299).contains($0.status) } ?? false)
        }
        return answer
    }

    static func publication(_ noteID: String, _ attempt: Int) -> String {
        EffectLedger.operationID(entry: "note/\(noteID)", action: "publish", attempt: attempt)
    }

    /// The idempotency key of publishing `noteID` (the backend scopes keys by account): a digest of the note
    /// id, so that any id gives a key of the contract's length (16…128) and characters (a short id gave a
    /// key the backend refused, a long or non-ASCII one an invalid key).
    static func publicationKey(_ noteID: String) -> String {
        IdempotencyKey.derived(from: noteID, namespace: "publish").rawValue
    }

    private func token(of engine: SyncEngine) async throws -> String {
        if let stored = try await engine.vault.get(Self.credentials, id: "bearer") {
            return String(decoding: stored, as: UTF8.self)
        }
        throw NotesAppError(kind: .authentication, message: "Sign in again.")
    }

    // MARK: - Version policy

    /// What the backend last said about this app version (`supported`, `updateAvailable`, `updateRequired`,
    /// `maintenance`, `blocked`).
    private func version() -> JSONObject {
        var answer: JSONObject = ["ok": true, "appVersion": .string(configuration.appVersion.description)]
        switch client.versionPolicy {
        case .supported: answer["policy"] = "supported"
        case .updateAvailable(let latest):
            answer["policy"] = "updateAvailable"
            answer["latest"] = .string(latest.description)
        case .updateRequired(let minimum):
            answer["policy"] = "updateRequired"
            answer["minimum"] = .string(minimum.description)
        case .maintenance: answer["policy"] = "maintenance"
        case .blocked(let minimum):
            answer["policy"] = "blocked"
            answer["minimum"] = minimum.map { .string($0.description) } ?? .null
        }
        return answer
    }

    // MARK: - Navigation

    private func navigate(_ event: NavigationEvent) async throws -> JSONObject {
        let result = navigator.reduce(state, event)
        return try await finish(result, drafts: result.effects)
    }

    /// Takes `result`'s state, writes the draft effects among `drafts` and the snapshot to the open vault,
    /// and answers.
    private func finish(_ result: NavigationResult, drafts: [NavigationEffect]) async throws -> JSONObject {
        state = result.state
        if let engine, engine.vault.isOpen {
            try await VaultDrafts(vault: engine.vault, dataset: "drafts").apply(drafts)
            try await engine.vault.put(Self.snapshots, id: "snapshot", NavigationSnapshot(state).encoded())
        }
        var answer: JSONObject = [
            "ok": .bool(result.error == nil), "screen": screen,
            "effects": .array(result.effects.map { .string($0.description) }),
        ]
        if let error = result.error {
            answer["error"] = .object(["kind": "navigation", "outcome": "notSent", "message": .string(error)])
        }
        return answer
    }

    /// The stack and modal, as labels (`note(noteID=7)`), the prompt and the text of the editor on top.
    var screen: JSONValue {
        var object: JSONObject = [
            "stack": .array(state.stack.map { .string($0.label) }),
            "modal": state.modal.map { .string($0.label) } ?? .null,
            "prompt": state.prompt.map { .string($0.kind.rawValue) } ?? .null,
        ]
        object["input"] = state.top?.input.map(JSONValue.string) ?? .null
        return .object(object)
    }

    // MARK: - Answers

    static func account(_ name: String) throws -> AccountID {
        do { return try AccountID(name) } catch {
            throw NotesAppError(kind: .validation, message: "'\(name)' is not an account name")
        }
    }

    /// The contract's limits on what a user types (code points, as the backend counts them).
    static let maximumTitle = 200
    static let maximumTag = 64

    /// `{"ok": false, "error": {"kind", "outcome", "message"}}`.
    static func refusal(_ kind: String, outcome: String = "notSent", _ message: String) -> JSONObject {
        ["ok": false, "error": ["kind": .string(kind), "outcome": .string(outcome), "message": .string(message)]]
    }

    static func usage(_ text: String) -> JSONObject { refusal("usage", "Usage: \(text)") }

    /// How many words the commands of a fixed number of arguments take; the others end in free text (a title,
    /// a body, a tag, typed input).
    static let arity: [String: Int] = [
        "signin": 1, "switch": 1, "pin": 1, "discard": 1, "open-link": 1, "back": 1, "open": 1, "editor": 1,
        "notification": 1, "publish": 1, "signout": 0, "delete-account": 0, "list": 0, "sync": 0, "retry": 0,
        "online": 0, "offline": 0, "foreground": 0, "conflicts": 0, "version": 0, "launch": 0, "screen": 0,
    ]

    static func notFound(_ id: String) -> JSONObject { refusal("notFound", "That note is not here.") }

    static func failure(_ failure: SyncFailure, correlationID: CorrelationID) -> JSONObject {
        refusal(
            failure.kind.name, outcome: failure.outcome.description,
            failure.userFacing(correlationID: correlationID).message)
    }

    static func failure(_ error: any Error) -> JSONObject {
        switch error {
        case let failure as HTTPFailure:
            // A call made directly (sign-in, publish): nothing of it waits in the outbox, so the text never says
            // it will be sent later.
            let shown = UserFacingOutcome(failure: failure, mutates: true, canQueue: false)
            return refusal(failure.kind.name, outcome: failure.outcome.description, shown.message)
        case let app as NotesAppError:
            return refusal(app.kind.name, app.message)
        case let sync as SyncError:
            return refusal(
                sync.code.name, sync.code == .offline ? "This needs a connection." : "That cannot be done now.")
        case let local as LocalDataProblem:
            return local.answer
        case is VaultError, is KeyStoreError:
            return LocalDataProblem(error, account: nil).answer
        default:
            return refusal("technical", "Something went wrong on this device.")
        }
    }
}

/// Why the reference app refused a command before any call was made.
public struct NotesAppError: Error, Sendable {
    /// KeelHTTP's failure kind it corresponds to (`authentication` when nobody is signed in).
    public let kind: HTTPFailure.Kind
    /// User-facing text.
    public let message: String
    /// The account has no session on this device (it must sign in).
    var notSignedIn = false
}

/// Why an account's data on this device cannot be used — its vault did not open — as a typed kind and the way
/// out (MOB-DATA-007: ciphertext without a key, a damaged or newer vault is an explicit result with a recovery
/// path, never "technical", an empty list or "sign in first"; found in an outside audit).
///
/// Kinds: `keyUnavailable` (the data's key is not on this device, or does not open it), `vaultDamaged`,
/// `vaultTooNew` (a newer app wrote it), `vaultIncompatible` (older than this app migrates, or declared
/// otherwise), `migrationFailed`, `locked` (the device's key store is locked), `keyStoreFailed` (the key store
/// itself is gone or damaged), `storage` (an I/O or database failure). The `action`, as a failed note's:
/// `signOut` (`signout` deletes what cannot be read; a new sign-in brings back what the backend has, and
/// changes not synced are lost), `deleteAccount` (`delete-account`: a damaged vault cannot be told apart into
/// what a sign-out deletes and keeps, so everything of the account on this device goes), `updateApp`, `retry`.
struct LocalDataProblem: Error, Sendable {
    let kind: String
    let action: String
    let message: String

    init(_ error: any Error, account: AccountID?) {
        let whose = account.map { "\($0.rawValue)'s notes" } ?? "This account's notes"
        let lost = "the notes the backend has come back; changes that were not synced cannot be recovered."
        let signOut = "Sign out to delete them from this device, then sign in again: " + lost
        func from(_ keys: KeyStoreError) -> (String, String, String) {
            switch keys.code {
            case .locked: ("locked", "retry", "The device is locked: unlock it, then try again.")
            case .corrupt, .wrongKeyLength:
                (
                    "keyUnavailable", "signOut",
                    "\(whose) on this device cannot be read: their key is damaged. \(signOut)"
                )
            case .unavailable, .insideDataDirectory:
                (
                    "keyStoreFailed", "signOut",
                    "\(whose) on this device cannot be read: the key store failed. \(signOut)"
                )
            default: ("storage", "retry", "\(whose) on this device cannot be read now. Try again.")
            }
        }
        let mapped: (String, String, String)
        switch error {
        case let vault as VaultError:
            switch vault.code {
            case .cannotOpen:
                // A record that does not open (one damaged on disk) is no missing key: advice to sign out would
                // lose the changes not synced yet for one bad record (found in a review).
                mapped = (
                    "storage", "retry",
                    "Some of \(whose.prefix(1).lowercased() + whose.dropFirst()) on this device cannot be read now. Try again."
                )
            case .keyUnavailable:
                mapped = (
                    "keyUnavailable", "signOut",
                    "\(whose) on this device cannot be read: their key is not on this device. \(signOut)"
                )
            case .damaged:
                mapped = (
                    "vaultDamaged", "deleteAccount",
                    "\(whose) on this device are damaged. Delete this account's data on this device, then sign in "
                        + "again: " + lost
                )
            case .formatTooNew, .schemaTooNew:
                mapped = (
                    "vaultTooNew", "updateApp",
                    "\(whose) on this device were written by a newer version of the app: update the app."
                )
            case .schemaTooOld, .schemaInconsistent, .declarationChanged, .misplaced:
                mapped = (
                    "vaultIncompatible", "signOut",
                    "\(whose) on this device cannot be read by this version of the app. \(signOut)"
                )
            case .migrationFailed:
                mapped = (
                    "migrationFailed", "retry",
                    "\(whose) on this device could not be brought up to date. Start the app again."
                )
            case .locked: mapped = ("locked", "retry", "The device is locked: unlock it, then try again.")
            case .keyStoreFailed:
                mapped =
                    (vault.underlying as? KeyStoreError).map(from)
                    ?? (
                        "keyStoreFailed", "signOut",
                        "\(whose) on this device cannot be read: the key store failed. \(signOut)"
                    )
            default: mapped = ("storage", "retry", "\(whose) on this device cannot be read now. Try again.")
            }
        case let keys as KeyStoreError: mapped = from(keys)
        default: mapped = ("storage", "retry", "\(whose) on this device cannot be read now. Try again.")
        }
        (kind, action, message) = mapped
    }

    /// `{"ok": false, "error": {"kind", "outcome": "notSent", "message", "action"}}`.
    var answer: JSONObject {
        [
            "ok": false,
            "error": [
                "kind": .string(kind), "outcome": "notSent", "message": .string(message), "action": .string(action),
            ],
        ]
    }
}
