public import Foundation
public import KeelCore

/// Runs the real ``Navigator`` on the event language of `keel navigation simulate`, with the app's
/// persistence played by files in a directory: the snapshot (written on every `saveSnapshot` effect), the
/// drafts store (every `saveDraft`/`deleteDraft`), and the session (the token store). `kill` throws the
/// in-memory state away; `launch` restores from those files through ``Navigator/restore(_:drafts:session:migrations:)``.
/// `expire` and `revoke` also apply while the app is dead: the next launch finds the session expired or the
/// access gone, as a real relaunch would.
///
/// Event lines: `signin ACCOUNT` · `signout` · `switch ACCOUNT` · `open ROUTE [key=value]...` ·
/// `back systemBack|gesture|appButton|modalDismiss` · `link URL cold|warm` ·
/// `notify ROUTE [key=value]... cold|warm` · `type TEXT` · `confirm` · `cancel` · `background` · `kill` ·
/// `launch` · `expire` · `revoke ROUTE [key=value]...` · `grant ROUTE [key=value]...`. `ACCOUNT` is an
/// ``AccountID``: a line naming one that is not valid (`null`, `0`, an invisible character) is malformed.
public final class NavigationSimulator {
    /// One parsed event line.
    public enum Command: Sendable, Hashable {
        /// A navigator event.
        case event(NavigationEvent)
        /// Process death.
        case kill
        /// A cold start (restoring the snapshot, if any).
        case launch
        /// Access revoked by the server (the checker refuses it from now on), then the event.
        case revoke(route: String, parameters: [String: String])
        /// Access granted again.
        case grant(route: String, parameters: [String: String])
        /// The session expired on the server.
        case expire
    }

    /// A line that is not an event.
    public struct ScriptError: Error, CustomStringConvertible {
        /// Why.
        public let description: String
    }

    /// What one event did: the fields `simulate` prints.
    public struct Step: Sendable, Equatable {
        /// The line.
        public var event: String
        /// The signed-in account with a valid session (nil otherwise).
        public var account: AccountID?
        /// The stack's routes, root first (empty while the process is dead).
        public var stack: [String]
        /// The modal's route.
        public var modal: String?
        /// The waiting prompt.
        public var prompt: String?
        /// The effects, in their text form.
        public var effects: [String]
        /// Why the event was refused, when it was.
        public var error: String?

        /// One JSON object on one line, members in this order: event, account, stack, modal, prompt,
        /// effects (and error when there is one).
        public var json: String {
            func quote(_ text: String?) -> String {
                guard let text else { return "null" }
                let data = (try? JSONEncoder().encode([text])) ?? Data("[\"\"]".utf8)
                return String(String(decoding: data, as: UTF8.self).dropFirst().dropLast())
                    .replacingOccurrences(of: "\\/", with: "/")
            }
            var members = [
                "\"event\": \(quote(event))", "\"account\": \(quote(account?.rawValue))",
                "\"stack\": [\(stack.map { quote($0) }.joined(separator: ", "))]", "\"modal\": \(quote(modal))",
                "\"prompt\": \(quote(prompt))", "\"effects\": [\(effects.map { quote($0) }.joined(separator: ", "))]",
            ]
            if let error { members.append("\"error\": \(quote(error))") }
            return "{" + members.joined(separator: ", ") + "}"
        }
    }

    final class ServerAccess: AccessChecker, @unchecked Sendable {
        private let lock = NSLock()
        private var revoked: Set<String> = []
        func set(_ label: String, revoked isRevoked: Bool) {
            lock.withLock {
                if isRevoked { revoked.insert(label) } else { revoked.remove(label) }
            }
        }
        func allows(_ route: Route, parameters: [String: String], account: AccountID) -> Bool {
            let label = NavigationEntry.label(route: route.id, parameters: parameters)
            return lock.withLock { !revoked.contains(label) && !revoked.contains(route.id) }
        }
    }

    /// The navigator.
    public let navigator: Navigator
    private let directory: URL
    private let server: ServerAccess
    private var state: NavigationState?
    /// Whether any line ran yet: a script may start with `launch` (the cold start it describes) although the
    /// simulator starts with the app running.
    private var ranALine = false

    /// A simulator over `contract`, persisting into `directory` (created when missing). With `relaunch`,
    /// it starts the way a relaunched process does: restoring the snapshot, drafts and session already in
    /// `directory` (``launchStep`` says what that gave).
    public init(contract: NavigationContract, directory: URL, relaunch: Bool = false) throws {
        server = ServerAccess()
        navigator = Navigator(contract: contract, access: server)
        self.directory = directory
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        if relaunch {
            launchStep = run(.launch, line: "launch")
        } else {
            state = navigator.initialState
        }
    }

    /// What the launch of a relaunched simulator gave (nil otherwise).
    public private(set) var launchStep: Step?

    /// The entry on top (the modal, else the top of the stack), nil while the process is dead.
    public var top: NavigationEntry? { state?.top }

    // MARK: - Parsing

    /// Parses one event line.
    ///
    /// - Throws: ``ScriptError`` naming what is wrong.
    public static func parse(_ line: String) throws(ScriptError) -> Command {
        // Words are separated by spaces or tabs.
        let words = line.split(omittingEmptySubsequences: true) { $0 == " " || $0 == "\t" }.map(String.init)
        guard let verb = words.first else { throw ScriptError(description: "empty event") }
        let rest = Array(words.dropFirst())
        func pairs(_ items: [String]) throws(ScriptError) -> [String: String] {
            var values: [String: String] = [:]
            for item in items {
                guard let equals = item.firstIndex(of: "="), equals != item.startIndex else {
                    throw ScriptError(description: "expected key=value, got '\(item)'")
                }
                let key = String(item[..<equals])
                // Which of two values would be meant is anybody's guess: the line is refused, not read as
                // the last one.
                guard values.updateValue(String(item[item.index(after: equals)...]), forKey: key) == nil else {
                    throw ScriptError(description: "parameter '\(key)' is given twice")
                }
            }
            return values
        }
        func mode(_ text: String?) throws(ScriptError) -> EntryMode {
            guard let text, let mode = EntryMode(rawValue: text) else {
                throw ScriptError(description: "expected cold or warm at the end of '\(line)'")
            }
            return mode
        }
        func exactly(_ count: Int) throws(ScriptError) {
            guard rest.count == count else {
                throw ScriptError(description: "'\(verb)' takes \(count) argument(s), got \(rest.count)")
            }
        }
        // An id that is not an account (`null`, `0`, an invisible character) is never taken for one (MOB-DATA-006).
        func account(_ text: String) throws(ScriptError) -> AccountID {
            do { return try AccountID(text) } catch {
                throw ScriptError(description: "'\(verb)' needs an account id: \(error.description)")
            }
        }
        switch verb {
        case "signin":
            try exactly(1)
            return .event(.signIn(account: try account(rest[0])))
        case "signout":
            try exactly(0)
            return .event(.signOut)
        case "switch":
            try exactly(1)
            return .event(.switchAccount(try account(rest[0])))
        case "open":
            guard let route = rest.first else { throw ScriptError(description: "'open' needs a route") }
            return .event(.open(route: route, parameters: try pairs(Array(rest.dropFirst()))))
        case "back":
            try exactly(1)
            guard let trigger = BackTrigger(rawValue: rest[0]) else {
                throw ScriptError(description: "back takes systemBack, gesture, appButton or modalDismiss")
            }
            return .event(.back(trigger))
        case "link", "notify":
            // An optional `delivery=ID` after cold|warm: the intent's delivery id, so that a redelivered one is
            // recognised (`alreadyConsumed`).
            var words = rest
            var delivery: String?
            if let last = words.last, last.hasPrefix("delivery="), words.count >= 3 {
                delivery = String(last.dropFirst("delivery=".count))
                guard delivery?.isEmpty == false else { throw ScriptError(description: "delivery= needs an id") }
                words.removeLast()
            }
            if verb == "link" {
                guard words.count == 2 else {
                    throw ScriptError(description: "'link' takes a URL, cold|warm and optionally delivery=ID")
                }
                return .event(.deepLink(url: words[0], mode: try mode(words[1]), id: delivery))
            }
            guard words.count >= 2 else { throw ScriptError(description: "'notify' needs a route and cold|warm") }
            return .event(
                .notification(
                    route: words[0], parameters: try pairs(Array(words.dropFirst().dropLast())),
                    mode: try mode(words.last), id: delivery))
        case "type":
            // The text is the rest of the line after the verb and the one space or tab that ends it (words are
            // separated by either: found in an outside audit, `type<TAB>text` was refused).
            let verbEnd = line.drop { $0 == " " || $0 == "\t" }.dropFirst("type".count)
            guard let separator = verbEnd.first, separator == " " || separator == "\t" else {
                throw ScriptError(description: "'type' needs text")
            }
            return .event(.type(String(verbEnd.dropFirst())))
        case "confirm":
            try exactly(0)
            return .event(.confirm)
        case "cancel":
            try exactly(0)
            return .event(.cancel)
        case "background":
            try exactly(0)
            return .event(.background)
        case "kill":
            try exactly(0)
            return .kill
        case "launch":
            try exactly(0)
            return .launch
        case "expire":
            try exactly(0)
            return .expire
        case "revoke", "grant":
            guard let route = rest.first else { throw ScriptError(description: "'\(verb)' needs a route") }
            let parameters = try pairs(Array(rest.dropFirst()))
            return verb == "revoke"
                ? .revoke(route: route, parameters: parameters) : .grant(route: route, parameters: parameters)
        default:
            throw ScriptError(description: "unknown event '\(verb)'")
        }
    }

    // MARK: - Running

    /// Runs one parsed line.
    public func run(_ command: Command, line: String) -> Step {
        var effects: [NavigationEffect] = []
        var error: String?
        defer { ranALine = true }
        switch command {
        case .kill:
            guard state != nil else { return step(line, error: "the app is not running") }
            state = nil
            return step(line)
        case .launch:
            // The first line of a script may be the cold start itself (found in an outside audit: a script
            // beginning `launch` got "the app is running"); later, a running app must be killed first.
            if state != nil, !ranALine { state = nil }
            guard state == nil else { return step(line, error: "the app is running; kill it first") }
            effects = launch()
        case .event(let event):
            // A cold link or notification is a launch: the process starts, restores, then takes it.
            if state == nil, event.startsTheApp { effects = launch() }
            guard let current = state else { return step(line, error: "the app is not running (launch it)") }
            let result = navigator.reduce(current, event)
            state = result.state
            effects += result.effects
            error = result.error
            if error == nil { persistSession(after: event) }
        case .expire:
            guard let current = state else {
                // The session ran out while the app was not running (PLAT-005.3): the next launch finds it
                // expired, and restoration asks for sign-in with the target kept.
                if case .valid(let account) = loadSession() { saveSession(account: account, valid: false) }
                return step(line)
            }
            saveSession(account: current.account, valid: false)
            let result = navigator.reduce(current, .sessionExpired)
            state = result.state
            effects = result.effects
        case .revoke(let route, let parameters), .grant(let route, let parameters):
            let isRevoke: Bool
            if case .revoke = command { isRevoke = true } else { isRevoke = false }
            guard navigator.contract.route(route) != nil else { return step(line, error: "unknown route \(route)") }
            server.set(
                NavigationEntry.label(route: route, parameters: parameters), revoked: isRevoke)
            if let current = state {
                let result = navigator.reduce(
                    current,
                    isRevoke
                        ? .accessRevoked(route: route, parameters: parameters)
                        : .accessGranted(route: route, parameters: parameters))
                state = result.state
                effects = result.effects
            }
        }
        apply(effects)
        return step(line, effects: effects.map(\.description), error: error)
    }

    /// Starts the app the way a relaunched process does: restores from the snapshot, drafts and session files.
    private func launch() -> [NavigationEffect] {
        let snapshot = try? Data(contentsOf: file("snapshot.json"))
        let restored = navigator.restore(snapshot, drafts: loadDrafts(), session: loadSession())
        state = restored.result.state
        return restored.result.effects
    }

    private func step(_ line: String, effects: [String] = [], error: String? = nil) -> Step {
        guard let state else {
            return Step(event: line, account: nil, stack: [], modal: nil, prompt: nil, effects: effects, error: error)
        }
        return Step(
            event: line, account: state.sessionValid ? state.account : nil, stack: state.stack.map(\.route),
            modal: state.modal?.route, prompt: state.prompt?.kind.rawValue, effects: effects, error: error)
    }

    // MARK: - The app's persistence, played by files

    private func file(_ name: String) -> URL { directory.appendingPathComponent(name) }

    /// Plays the app's persistence for `effects`: the snapshot once per event that asks for it, and the
    /// drafts store (which the navigator's state mirrors) when a draft was saved or deleted, or an account's
    /// data was purged (its drafts go with its store).
    private func apply(_ effects: [NavigationEffect]) {
        guard let state else { return }
        if effects.contains(.saveSnapshot), let data = try? NavigationSnapshot(state).encoded() {
            try? data.write(to: file("snapshot.json"), options: .atomic)
        }
        let draftsChanged = effects.contains {
            switch $0 {
            case .saveDraft, .deleteDraft, .purgeAccount: return true
            default: return false
            }
        }
        if draftsChanged {
            let list =
                state.drafts.sorted { $0.key < $1.key }.map {
                    StoredDraft(
                        key: .init(
                            account: $0.key.account.rawValue, route: $0.key.route, parameters: $0.key.parameters),
                        text: $0.value)
                } + keptAside
            if let data = try? JSONEncoder().encode(list) { try? data.write(to: file("drafts.json"), options: .atomic) }
        }
    }

    /// A draft as the drafts file holds it (a ``DraftKey`` and its text), its account read as the string it is:
    /// one an earlier version wrote for an account id that is not valid fails neither the file nor the launch.
    private struct StoredDraft: Codable {
        struct Key: Codable {
            var account: String
            var route: String
            var parameters: [String: String]
        }
        var key: Key
        var text: String
    }

    /// Drafts in the drafts file whose account is not a valid ``AccountID``: restored into no account (an
    /// unknown account is never a shared one), and written back as they were whenever the file is rewritten,
    /// never deleted.
    private var keptAside: [StoredDraft] = []

    private struct Session: Codable {
        var account: AccountID?
        var valid: Bool
    }

    private func loadDrafts() -> [DraftKey: String] {
        guard let data = try? Data(contentsOf: file("drafts.json")),
            let list = try? JSONDecoder().decode([StoredDraft].self, from: data)
        else { return [:] }
        var drafts: [DraftKey: String] = [:]
        keptAside = []
        for stored in list {
            guard let account = try? AccountID(stored.key.account) else {
                keptAside.append(stored)
                continue
            }
            drafts[DraftKey(account: account, route: stored.key.route, parameters: stored.key.parameters)] = stored.text
        }
        return drafts
    }

    /// The session the token store holds; none (signed out) when its file is missing, unreadable or names an
    /// account id that is not valid.
    private func loadSession() -> SessionCheck {
        guard let data = try? Data(contentsOf: file("session.json")),
            let session = try? JSONDecoder().decode(Session.self, from: data), let account = session.account
        else { return .signedOut }
        return session.valid ? .valid(account: account) : .expired
    }

    private func saveSession(account: AccountID?, valid: Bool) {
        if let data = try? JSONEncoder().encode(Session(account: account, valid: valid)) {
            try? data.write(to: file("session.json"), options: .atomic)
        }
    }

    private func persistSession(after event: NavigationEvent) {
        switch event {
        case .signIn(let account), .switchAccount(let account): saveSession(account: account, valid: true)
        case .signOut: saveSession(account: nil, valid: false)
        default: break
        }
    }
}

extension NavigationEvent {
    /// Whether the event starts a process that was not running: a cold deep link or notification.
    fileprivate var startsTheApp: Bool {
        switch self {
        case .deepLink(_, .cold, _), .notification(_, _, .cold, _): true
        default: false
        }
    }
}
