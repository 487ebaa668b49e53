public import KeelCore

/// The navigation state machine (MOB-PLAT-008): one pure function from a state and an event to a new
/// state and effects. It performs no I/O, so every rule below is a unit test away.
///
/// - **Back.** One decision for system Back, the gesture, the in-app button and modal dismissal: a
///   waiting prompt is cancelled; else the modal (or the top entry) is left under its input policy —
///   `saveDraft` saves and leaves, `confirmDiscard` and `warnBeforeLoss` ask first; at the root the app is
///   left. The trigger never changes the result.
/// - **Deep links and notifications** build the target and its declared ancestors only, each checked for
///   access at that moment: the stack is cut above the first entry that fails, or sign-in is shown with
///   the target remembered. A stack of another account is never kept.
/// - **Sign-out and account switch** remove every protected entry, and every entry holding input, in one
///   step: back can never reach them.
/// - **Unsaved input** has one lifecycle per route over leave, background and process death (see
///   ``Route/Input``).
public struct Navigator: Sendable {
    /// The routes.
    public let contract: NavigationContract
    /// The app's own access checks.
    public let access: any AccessChecker
    /// The modal shown when sign-in is needed (by default the route `signIn`, when the contract has one).
    public let signInRoute: String?
    /// 16 random hex digits minted when the navigator is made: the lineage of entries opened in a state that
    /// has none of its own (one decoded from a snapshot written before states carried one). Every state
    /// ``initialState`` and ``restore(_:drafts:session:migrations:)`` give mints its own
    /// (``NavigationState/lineage``): entry numbers are kept in the state, and a state can come back from a
    /// snapshot older than the last entries opened (a dead process's, or this process's own), or start over,
    /// so an entry number is handed out again; the lineage keeps an operation confirmed on `e6` from being
    /// answered "already done" (``EffectLedger``) for a different `e6`. Restored entries keep their ids.
    public let lineage: String
    /// Where the lineages of states come from.
    let random: RandomSource

    /// A navigator over `contract`.
    ///
    /// - Parameter random: where ``lineage`` comes from (seed it in tests).
    public init(
        contract: NavigationContract, access: any AccessChecker = AllowAllAccess(), signInRoute: String? = nil,
        random: RandomSource = .system
    ) {
        self.contract = contract
        self.access = access
        self.signInRoute = signInRoute ?? (contract.route("signIn") != nil ? "signIn" : nil)
        lineage = NavigationState.newLineage(from: random)
        self.random = random
    }

    /// The state of a fresh launch (or of another window), with a lineage of its own: no two states it gives
    /// open entries with the same ids.
    public var initialState: NavigationState {
        NavigationState(root: contract.root.id, lineage: NavigationState.newLineage(from: random))
    }

    // MARK: - Events

    /// The state after `event`, and what the app must do.
    public func reduce(_ state: NavigationState, _ event: NavigationEvent) -> NavigationResult {
        var run = Run(navigator: self, state: state)
        switch event {
        case .back: run.back()
        case .open(let route, let parameters): run.open(route, parameters)
        case .deepLink(let url, let mode, let id): run.deepLink(url, mode: mode, id: id)
        case .notification(let route, let parameters, let mode, let id):
            // A notification's payload comes from outside, as a link does: the parameters of its route, and of the
            // ancestors built from it, are held to the same (found in an outside audit: `noteID=../x` opened).
            let names = (contract.route(route)?.parameters ?? []) + contract.ancestors(of: route).flatMap(\.parameters)
            if let name = names.first(where: { parameters[$0].map { !DeepLinkPattern.isOneSegment($0) } ?? false }) {
                return NavigationResult(
                    state: state, effects: [],
                    error:
                        "the notification's \(name) is not one segment (empty, a path, a dot segment or control characters)"
                )
            }
            run.enter(route, parameters, mode: mode, id: id)
        case .signIn(let account): run.signIn(account)
        case .signOut: run.signOut()
        case .switchAccount(let account): run.switchAccount(account)
        case .type(let text): run.type(text)
        case .confirm: run.answer(confirmed: true)
        case .cancel: run.answer(confirmed: false)
        case .background, .willTerminate: run.background()
        case .sessionExpired: run.expire()
        case .accessRevoked(let route, let parameters): run.revoke(route, parameters)
        case .accessGranted: break
        }
        if run.error != nil { return NavigationResult(state: state, effects: [], error: run.error) }
        return NavigationResult(state: run.state, effects: run.effects)
    }

    // MARK: - Access

    enum Verdict: Equatable { case allowed, needsSignIn, denied }

    /// Whether `entry` was made by an earlier version of the app: its route is gone, or now declares a
    /// parameter the entry lacks. It cannot be shown, but nothing was revoked: its input and draft are kept or
    /// reported as its lifecycle says, never deleted because the app was updated (MOB-API-005; found in a
    /// review: a new parameter cut the screen as a revoked one, and the drafts above it with the same ids).
    func isOutdated(_ entry: NavigationEntry) -> Bool {
        guard let route = contract.route(entry.route) else { return true }
        return !route.parameters.allSatisfy { entry.parameters[$0] != nil }
    }

    /// Whether `entry` may be shown in `state` now. An entry without a parameter its route declares (restored
    /// from a snapshot of an earlier version of the app, whose route took fewer) cannot be: it is denied, and
    /// cut as a revoked one is (found in an outside audit: it came back, a screen the app cannot show).
    func verdict(_ entry: NavigationEntry, in state: NavigationState) -> Verdict {
        guard !isOutdated(entry), let route = contract.route(entry.route) else { return .denied }
        if case .public = route.access { return .allowed }
        guard let account = state.account, state.sessionValid else { return .needsSignIn }
        if route.access.isAccountScoped, let owner = entry.account, owner != account { return .denied }
        return access.allows(route, parameters: entry.parameters, account: account) ? .allowed : .denied
    }
}

/// One event being applied: the state so far, the effects so far, and a refusal.
struct Run {
    let navigator: Navigator
    var state: NavigationState
    var effects: [NavigationEffect] = []
    var error: String?

    var contract: NavigationContract { navigator.contract }

    init(navigator: Navigator, state: NavigationState) {
        self.navigator = navigator
        self.state = state
    }

    // MARK: Entries

    mutating func makeEntry(_ route: String, _ parameters: [String: String]) -> NavigationEntry? {
        guard let declared = contract.route(route) else {
            error = "unknown route \(route)"
            return nil
        }
        for name in declared.parameters where parameters[name] == nil {
            error = "missing parameter \(name) for route \(route)"
            return nil
        }
        return mint(route, Self.declared(parameters, of: declared), account: state.account)
    }

    /// `parameters` without those `route` does not declare.
    static func declared(_ parameters: [String: String], of route: Route) -> [String: String] {
        parameters.filter { route.parameters.contains($0.key) }
    }

    /// A new entry with the next entry id (`e2-<lineage>`, `e3-<lineage>`, ...) of the state's lineage.
    mutating func mint(_ route: String, _ parameters: [String: String] = [:], account: AccountID?) -> NavigationEntry {
        defer { state.nextEntry &+= 1 }  // a counter from disk is never trusted not to be at its limit
        let lineage = state.lineage.isEmpty ? navigator.lineage : state.lineage
        return NavigationEntry(
            id: NavigationState.entryID(state.nextEntry, lineage: lineage), route: route, parameters: parameters,
            account: account)
    }

    /// Whether `entry`'s route is declared `public`.
    func isPublic(_ entry: NavigationEntry) -> Bool {
        guard case .public = contract.route(entry.route)?.access else { return false }
        return true
    }

    func draftKey(_ entry: NavigationEntry) -> DraftKey? {
        guard let account = entry.account ?? state.account else { return nil }
        return DraftKey(account: account, route: entry.route, parameters: entry.parameters)
    }

    /// Puts a saved draft back into `entry` when its route keeps drafts.
    mutating func restoringDraft(_ entry: NavigationEntry) -> NavigationEntry {
        var entry = entry
        guard let input = contract.route(entry.route)?.input, Self.keepsDrafts(input), let key = draftKey(entry),
            let text = state.drafts[key]
        else { return entry }
        entry.input = text
        effects.append(.restoreDraft(key))
        return entry
    }

    static func keepsDrafts(_ input: Route.Input) -> Bool {
        input.policy == .saveDraft || (input.policy == .confirmDiscard && input.onDeath == .save)
    }

    /// The target and its declared ancestors, each with the parameters it declares.
    ///
    /// `rebuilding` (a target sign-in held, possibly across a relaunch and an app update): an ancestor that
    /// is a sensitive one-time route is left out — rebuilt, it would be a fresh payment confirmation under
    /// the receipt, whose operation the ledger would let run again — and so is one whose parameters the
    /// target does not carry (it was reached from the app's own flow); sign-in never fails for either.
    /// `payload`: the parameters a link or notification carries, from which each ancestor takes those it
    /// declares (found in an outside audit: ancestors were built from the target's own parameters only, and a
    /// notification carrying every parameter the stack needs was refused); the target's own by default.
    mutating func syntheticStack(
        for target: NavigationEntry, payload: [String: String]? = nil, rebuilding: Bool = false
    ) -> (stack: [NavigationEntry], modal: NavigationEntry?) {
        var stack: [NavigationEntry] = []
        let parameters = payload ?? target.parameters
        for ancestor in contract.ancestors(of: target.route) {
            if rebuilding,
                ancestor.isSensitive || !ancestor.parameters.allSatisfy({ parameters[$0] != nil })
            {
                continue
            }
            guard let entry = makeEntry(ancestor.id, parameters) else { return ([], nil) }
            stack.append(entry)
        }
        if stack.first?.route != contract.root.id, let root = makeEntry(contract.root.id, [:]) {
            stack.insert(root, at: 0)
        }
        if contract.route(target.route)?.isModal == true { return (stack, target) }
        return (stack + [target], nil)
    }

    /// `stack` (and `modal`) cut above the first entry that cannot be shown; sign-in is presented when the
    /// reason is sign-in, with `target` remembered. `denied` is the first entry access was denied to and
    /// those after it (in `stack` then `modal` order), when that is why it cut.
    mutating func checked(_ stack: [NavigationEntry], modal: NavigationEntry?, target: NavigationEntry)
        -> (stack: [NavigationEntry], modal: NavigationEntry?, denied: ArraySlice<NavigationEntry>)
    {
        var kept: [NavigationEntry] = []
        let ordered = stack + (modal.map { [$0] } ?? [])
        for (index, entry) in ordered.enumerated() {
            switch navigator.verdict(entry, in: state) {
            case .allowed:
                if entry == modal { return (kept, restoringDraft(entry), []) }
                kept.append(restoringDraft(entry))
            case .needsSignIn:
                effects.append(.signInRequired(target.label))
                state.pendingTarget = target
                state.pendingTargetPushed = false
                return (kept, signInEntry(), [])
            case .denied:
                effects.append(.accessDenied(entry.label))
                return (kept, nil, ordered[index...])
            }
        }
        return (kept, nil, [])
    }

    mutating func signInEntry() -> NavigationEntry? {
        guard let route = navigator.signInRoute else { return nil }
        return mint(route, account: nil)
    }

    // MARK: Back

    mutating func back() {
        if state.prompt != nil {
            state.prompt = nil  // back answers a prompt with "cancel"
            return
        }
        guard let top = state.top else { return }
        if let input = contract.route(top.route)?.input, let text = top.input, !text.isEmpty {
            switch input.policy {
            case .saveDraft where keepsInput(top):
                save(top, text)
            case .saveDraft:
                // Typed while nobody is signed in: no account's store can keep it, so leaving loses it — the
                // user is warned first, as `warnBeforeLoss` does (found in an outside audit: it went silently).
                state.prompt = NavigationPrompt(kind: .warnBeforeLoss, entry: top.id, pending: .back)
                return
            case .confirmDiscard:
                state.prompt = NavigationPrompt(kind: .confirmDiscard, entry: top.id, pending: .back)
                return
            case .warnBeforeLoss:
                state.prompt = NavigationPrompt(kind: .warnBeforeLoss, entry: top.id, pending: .back)
                return
            }
        }
        leaveTop()
    }

    /// Pops the top entry or dismisses the modal; at the root, leaves the app.
    mutating func leaveTop() {
        if let modal = state.modal {
            if modal.route == navigator.signInRoute, let target = state.pendingTarget {
                // The destination it held goes with it: its input is kept as a draft where its lifecycle
                // keeps drafts, reported lost otherwise (found in a review: dropped without a word).
                forget(target)
                state.pendingTarget = nil
            }
            state.modal = nil
        } else if state.stack.count > 1 {
            state.stack.removeLast()
        } else {
            effects.append(.leaveApp)
            return
        }
        effects.append(.saveSnapshot)
    }

    mutating func save(_ entry: NavigationEntry, _ text: String) {
        guard let key = draftKey(entry) else { return }
        state.drafts[key] = text
        effects.append(.saveDraft(key, text))
    }

    /// Whether `entry`'s input can be kept as a draft: its lifecycle keeps drafts, and there is an account
    /// whose drafts store can hold it (nobody signed in: there is none, and the input can only be lost).
    func keepsInput(_ entry: NavigationEntry) -> Bool {
        guard let input = contract.route(entry.route)?.input else { return false }
        return Self.keepsDrafts(input) && draftKey(entry) != nil
    }

    /// `entry`'s typed input, about to go with it without a question: kept as a draft where it can be,
    /// reported lost otherwise.
    mutating func keepOrReport(_ entry: NavigationEntry) {
        guard let text = entry.input, !text.isEmpty else { return }
        if keepsInput(entry) { save(entry, text) } else { effects.append(.inputLost(entry.label)) }
    }

    /// Entries cut from the stack above one that lost its access: those access is denied to (ids in `denied`,
    /// ``deniedIDs(_:resource:)``) lose their input with their draft (``lose(_:)``); the others are still the
    /// user's to open, and keep their input as a draft where it can be kept, or report it lost (found in an
    /// outside audit: every screen above lost its draft, an accessible `saveDraft` one too).
    mutating func cut(_ entries: [NavigationEntry], denied: Set<String>) {
        for entry in entries {
            if denied.contains(entry.id) {
                if holdsInput(entry) { lose(entry) }
            } else {
                keepOrReport(entry)
            }
        }
    }

    // MARK: Prompts

    mutating func answer(confirmed: Bool) {
        guard let prompt = state.prompt else {
            error = "no prompt is waiting"
            return
        }
        state.prompt = nil
        guard confirmed else { return }
        let all = state.stack + (state.modal.map { [$0] } ?? []) + (state.pendingTarget.map { [$0] } ?? [])
        switch prompt.pending {
        case .back:
            if let entry = all.first(where: { $0.id == prompt.entry }) { discard(entry, kind: prompt.kind) }
            if var top = state.top, top.id == prompt.entry {
                top.input = nil
                if state.modal != nil { state.modal = top } else { state.stack[state.stack.count - 1] = top }
            }
            leaveTop()
        case .replace(let stack, let modal):
            // Every other screen whose input the replacement would lose (one that keeps drafts is saved) is
            // asked about in turn: the answer about one is not taken for the others, and nothing is lost
            // before the last "yes".
            let agreed = (prompt.confirmed ?? []) + [prompt.entry]
            if let next = entryToAskAbout(excluding: agreed, losingInputOnly: true) {
                state.prompt = NavigationPrompt(
                    kind: promptKind(for: next), entry: next.id, pending: prompt.pending, confirmed: agreed)
                return
            }
            for entry in all where agreed.contains(entry.id) {
                discard(entry, kind: promptKind(for: entry))
            }
            replace(with: stack, modal: modal, discarding: Set(agreed))
        }
    }

    /// The topmost entry (the target sign-in holds, then the modal, then the stack from the top) holding input
    /// that a replacement must ask about — every input policy but `saveDraft` where a draft keeps it; with
    /// `losingInputOnly`, only those whose input would be lost (not kept as a draft) — other than `excluding`.
    /// The held target is asked about too: a replacement drops it (found in an outside audit: with its input,
    /// without a word).
    func entryToAskAbout(excluding: [String] = [], losingInputOnly: Bool = false) -> NavigationEntry? {
        let held = state.pendingTarget.flatMap { ($0.input ?? "").isEmpty ? nil : [$0] } ?? []
        return (inputEntries() + held).last { entry in
            guard !excluding.contains(entry.id), let input = contract.route(entry.route)?.input,
                input.policy != .saveDraft || !keepsInput(entry)
            else { return false }
            return !losingInputOnly || !keepsInput(entry)
        }
    }

    /// The question `entry`'s input policy asks before its input is lost (a `saveDraft` one no draft can keep
    /// is warned about).
    func promptKind(for entry: NavigationEntry) -> NavigationPrompt.Kind {
        contract.route(entry.route)?.input?.policy == .confirmDiscard ? .confirmDiscard : .warnBeforeLoss
    }

    /// The user agreed to lose `entry`'s input.
    mutating func discard(_ entry: NavigationEntry, kind: NavigationPrompt.Kind) {
        if let key = draftKey(entry), state.drafts[key] != nil || kind == .confirmDiscard {
            state.drafts[key] = nil
            effects.append(.deleteDraft(key))
        } else {
            effects.append(.inputLost(entry.label))
        }
    }

    // MARK: Opening

    mutating func open(_ route: String, _ parameters: [String: String]) {
        guard state.prompt == nil else {
            error = "a prompt is waiting: confirm or cancel first"
            return
        }
        // Opening what is already on top (a second tap before the first push showed) shows it once: the
        // screen is not pushed again over itself, and nothing changes.
        if let declared = contract.route(route), !declared.isModal, state.modal == nil, let top = state.stack.last,
            top.route == route, top.parameters == Self.declared(parameters, of: declared),
            declared.parameters.allSatisfy({ parameters[$0] != nil })
        {
            return
        }
        guard let entry = makeEntry(route, parameters) else { return }
        let isModal = contract.route(route)?.isModal == true
        if state.modal != nil, state.modal?.route != navigator.signInRoute || route != navigator.signInRoute {
            error = "a modal is presented: dismiss it first"
            return
        }
        switch navigator.verdict(entry, in: state) {
        case .needsSignIn:
            // The sign-in screen and the target it leads to are state like any other: saved, so that a kill
            // before the user signs in still brings both back (found in an outside audit: they were lost).
            state.pendingTarget = entry
            state.pendingTargetPushed = true
            effects.append(.signInRequired(entry.label))
            state.modal = signInEntry()
            effects.append(.saveSnapshot)
        case .denied:
            effects.append(.accessDenied(entry.label))
        case .allowed:
            let shown = restoringDraft(entry)
            if isModal { state.modal = shown } else { state.stack.append(shown) }
            effects.append(.saveSnapshot)
        }
    }

    mutating func deepLink(_ url: String, mode: EntryMode, id: String?) {
        // Where patterns overlap (`app://notes/new`, `app://notes/{id}`), the most specific one that matches
        // wins, whatever the order of declaration; patterns of the same shape are refused by the contract.
        var best: (route: String, pattern: DeepLinkPattern, values: [String: String])?
        for route in contract.routes {
            guard let link = route.deepLink, let pattern = DeepLinkPattern(link), let values = pattern.match(url)
            else { continue }
            if let current = best, !pattern.isMoreSpecific(than: current.pattern) { continue }
            best = (route.id, pattern, values)
        }
        guard let best else {
            error = "no route's deep link matches \(url)"
            return
        }
        // A parameter the route declares, given twice in the query with two values, says nothing certain.
        let ambiguous = DeepLinkPattern.ambiguousQueryItems(url)
        if let name = contract.route(best.route)?.parameters.first(where: ambiguous.contains) {
            error = "the deep link gives \(name) twice, with two values"
            return
        }
        // A parameter the route declares, taken from the query, is held to what a placeholder is: one segment.
        for name in contract.route(best.route)?.parameters ?? [] {
            if let value = best.values[name], !DeepLinkPattern.isOneSegment(value) {
                error =
                    "the deep link's \(name) is not one segment (empty, a path, a dot segment or control characters)"
                return
            }
        }
        enter(best.route, best.values, mode: mode, id: id)
    }

    /// A deep link or notification into `route`: the target and its declared ancestors, access-checked.
    mutating func enter(_ route: String, _ parameters: [String: String], mode: EntryMode, id: String?) {
        if let id, state.consumed.contains(id) {
            effects.append(.alreadyConsumed(id))
            return
        }
        guard state.prompt == nil else {
            error = "a prompt is waiting: confirm or cancel first"
            return
        }
        // A sensitive one-time screen (OTP entry, payment confirmation) is opened by the app's own flow only:
        // never by a notification or a link from outside, nor rebuilt under its target.
        if let declared = contract.route(route),
            declared.isSensitive || contract.ancestors(of: route).contains(where: \.isSensitive)
        {
            error = "\(route) is or lies under a sensitive one-time route: a link or notification cannot open it"
            return
        }
        guard let target = makeEntry(route, parameters) else { return }
        if let id {
            state.consumed.append(id)
            if state.consumed.count > 64 { state.consumed.removeFirst(state.consumed.count - 64) }
        }
        let (stack, modal) = syntheticStack(for: target, payload: parameters)
        guard error == nil else { return }
        // Input in the stack being replaced (a warm entry) is left under its route's lifecycle.
        if mode == .warm, let asking = entryToAskAbout() {
            state.prompt = NavigationPrompt(
                kind: promptKind(for: asking), entry: asking.id, pending: .replace(stack: stack, modal: modal))
            return
        }
        replace(with: stack, modal: modal, discarding: [], target: target)
    }

    /// Entries (stack, then modal) holding unsaved input.
    func inputEntries() -> [NavigationEntry] {
        (state.stack + (state.modal.map { [$0] } ?? [])).filter { !($0.input ?? "").isEmpty }
    }

    /// Replaces the stack and modal; `discarding` are the entries whose input the user agreed to lose (the
    /// confirmed prompts, each of which asked about one entry).
    mutating func replace(
        with stack: [NavigationEntry], modal: NavigationEntry?, discarding: Set<String>, target: NavigationEntry? = nil
    ) {
        keepOrReportInput(discarding: discarding)
        // The target sign-in held goes too: its input is kept or reported, unless a prompt already asked.
        if let held = state.pendingTarget, !discarding.contains(held.id) { forget(held) }
        state.pendingTarget = nil
        guard let target = target ?? modal ?? stack.last else {
            state.stack = [rootEntry()]
            state.modal = nil
            effects.append(.saveSnapshot)
            return
        }
        let checked = checked(stack, modal: modal, target: target)
        state.stack = checked.stack.isEmpty ? [rootEntry()] : checked.stack
        state.modal = checked.modal
        effects.append(.saveSnapshot)
    }

    /// The input of every entry about to be replaced: saved as a draft where its lifecycle keeps drafts, else
    /// reported lost — never dropped silently. `discarding` are the entries confirmed prompts asked about:
    /// their input was agreed to be lost (a `saveDraft` one is still saved).
    mutating func keepOrReportInput(discarding: Set<String> = []) {
        for entry in inputEntries() {
            guard let input = contract.route(entry.route)?.input else { continue }
            if discarding.contains(entry.id) {
                if input.policy == .saveDraft { save(entry, entry.input!) }
            } else {
                keepOrReport(entry)
            }
        }
    }

    mutating func rootEntry() -> NavigationEntry { mint(contract.root.id, account: state.account) }

    // MARK: Accounts

    mutating func signIn(_ account: AccountID) {
        if let current = state.account, current != account { removeProtected(purging: nil) }
        state.account = account
        state.sessionValid = true
        if state.modal?.route == navigator.signInRoute { state.modal = nil }
        if var target = state.pendingTarget {
            state.pendingTarget = nil
            if let owner = target.account, owner != account {
                // Another account's destination is not opened for this one: its input stays that account's
                // draft where its lifecycle keeps drafts, and is reported lost otherwise.
                forget(target)
            } else if state.pendingTargetPushed {
                // A screen the user opened: pushed onto the stack it was opened from, as `open` does once
                // signed in; the screens below it stay with their input (found in an outside audit: rebuilt over
                // its declared ancestors, a `warnBeforeLoss` screen below went with only an `inputLost`).
                target.account = account
                push(target)
            } else {
                target.account = account
                let (stack, modal) = syntheticStack(for: target, rebuilding: true)
                guard error == nil else { return }
                // The screens the target replaces (public ones the user typed into while signed out).
                keepOrReportInput()
                let checked = checked(stack, modal: modal, target: target)
                state.stack = checked.stack.isEmpty ? [rootEntry()] : checked.stack
                state.modal = checked.modal
                // Access revoked while sign-in held the target: its input is lost with it and its draft deleted,
                // as when access is revoked while it is shown (and as a restore does); a screen cut above one
                // denied but accessible itself keeps its input as its lifecycle says.
                cut(
                    Array(checked.denied),
                    denied: deniedIDs(checked.denied, resource: revokedResource(checked.denied)))
            }
        }
        state.pendingTargetPushed = false
        // Input typed while nobody was signed in, on screens that stay: an account's store can keep it now
        // (found in an outside audit: a kill after sign-in lost it without a word).
        saveUnsavedDrafts()
        effects.append(.saveSnapshot)
    }

    /// The ids of `entries` access is denied to now: those the checks refuse, and those about the resource
    /// access to was revoked — carrying all of `resource`'s parameters with the same values (the editor of a
    /// revoked note), when it has any.
    func deniedIDs(_ entries: some Sequence<NavigationEntry>, resource: [String: String]) -> Set<String> {
        Set(
            entries.filter { entry in
                !navigator.isOutdated(entry)
                    && (navigator.verdict(entry, in: state) != .allowed
                        || (!resource.isEmpty && resource.allSatisfy { entry.parameters[$0.key] == $0.value }))
            }.map(\.id))
    }

    /// The resource the first of `denied` was refused for — its parameters —, unless it was only outdated (an
    /// earlier app's entry, which revokes nothing).
    func revokedResource(_ denied: some Collection<NavigationEntry>) -> [String: String] {
        guard let first = denied.first, !navigator.isOutdated(first) else { return [:] }
        return first.parameters
    }

    /// Shows `entry` over the stack (presents it, for a modal) when access allows it; reports it otherwise.
    mutating func push(_ entry: NavigationEntry) {
        switch navigator.verdict(entry, in: state) {
        case .allowed:
            let shown = restoringDraft(entry)
            if contract.route(entry.route)?.isModal == true { state.modal = shown } else { state.stack.append(shown) }
        case .denied, .needsSignIn:
            effects.append(.accessDenied(entry.label))
            if holdsInput(entry) { lose(entry) }
        }
    }

    /// Saves the input of every entry whose lifecycle keeps drafts and whose draft is not what it holds (typed
    /// while nobody was signed in).
    mutating func saveUnsavedDrafts() {
        for entry in inputEntries() where keepsInput(entry) {
            guard let key = draftKey(entry), let text = entry.input, state.drafts[key] != text else { continue }
            save(entry, text)
        }
    }

    /// Whether `entry` holds input: typed text, or a saved draft.
    func holdsInput(_ entry: NavigationEntry) -> Bool {
        if !(entry.input ?? "").isEmpty { return true }
        guard let key = draftKey(entry) else { return false }
        return state.drafts[key] != nil
    }

    /// A remembered target that will not be opened (it was another account's): where its lifecycle keeps
    /// drafts, its input is already saved as its account's draft and comes back to that account; otherwise
    /// it is reported lost, never dropped without a word.
    mutating func forget(_ target: NavigationEntry) {
        guard let text = target.input, !text.isEmpty, contract.route(target.route)?.input != nil, !keepsInput(target)
        else { return }
        effects.append(.inputLost(target.label))
    }

    mutating func signOut() {
        guard let account = state.account else {
            error = "nobody is signed in"
            return
        }
        removeProtected(purging: account)
        state.account = nil
        state.sessionValid = false
        effects.append(.saveSnapshot)
    }

    mutating func switchAccount(_ account: AccountID) {
        guard state.account != account else {
            // The same account, signed in again after its session expired: what sign-in does (the sign-in
            // screen goes, the target it held opens).
            if !state.sessionValid { signIn(account) }
            return
        }
        guard state.account != nil else {
            // Nobody to switch from: a saved account chosen while signed out is a sign-in (the target it held
            // opens, and input typed meanwhile is saved to the account now that it has a store).
            signIn(account)
            return
        }
        removeProtected(purging: nil)
        state.account = account
        state.sessionValid = true
        effects.append(.saveSnapshot)
    }

    /// Removes, in one step, every entry that is not public or that holds input (saved as a draft first
    /// when its lifecycle keeps drafts), the prompt and any remembered target.
    mutating func removeProtected(purging account: AccountID?) {
        keepOrReportInput()
        func keeps(_ entry: NavigationEntry) -> Bool { isPublic(entry) && (entry.input ?? "").isEmpty }
        // What stays is public and belongs to no account now: input typed there later is the next account's
        // (a draft keyed to the previous one would be written into its store).
        func disowned(_ entry: NavigationEntry) -> NavigationEntry {
            var entry = entry
            entry.account = nil
            return entry
        }
        state.stack = state.stack.filter(keeps).map(disowned)
        if state.stack.first?.route != contract.root.id { state.stack.insert(rootEntry(), at: 0) }
        if let modal = state.modal, !keeps(modal) || modal.route == navigator.signInRoute { state.modal = nil }
        state.modal = state.modal.map(disowned)
        state.prompt = nil
        if let target = state.pendingTarget { forget(target) }
        state.pendingTarget = nil
        if let account {
            // The account's drafts go with its store: the copy the state keeps of them too (found in an outside
            // test: a draft purged from the store came back at the next sign-in, restored from that copy, and
            // was written to the new store).
            state.drafts = state.drafts.filter { $0.key.account != account }
            effects.append(.purgeAccount(account))
        }
    }

    // MARK: Input, background, session, access

    mutating func type(_ text: String) {
        guard state.prompt == nil else {
            error = "a prompt is waiting: confirm or cancel first"
            return
        }
        guard var top = state.top, contract.route(top.route)?.input != nil else {
            error = "the screen on top holds no input"
            return
        }
        top.input = text
        if state.modal != nil { state.modal = top } else { state.stack[state.stack.count - 1] = top }
        // Input whose lifecycle survives process death is saved as it is typed: a kill gives no warning, and
        // the app may never see `background` first.
        guard let input = contract.route(top.route)?.input, Self.keepsDrafts(input) else { return }
        guard draftKey(top) != nil else {
            // Nobody is signed in, so no account's drafts store can keep it: the snapshot marks the input
            // instead, and a launch after a kill reports it lost rather than dropping it without a word.
            effects.append(.saveSnapshot)
            return
        }
        // Everything erased: nothing to offer again.
        if text.isEmpty { dropDraft(of: top) } else { save(top, text) }
    }

    mutating func background() {
        saveKeptDrafts()
        effects.append(.saveSnapshot)
    }

    /// Saves the input of every entry whose lifecycle keeps drafts (what must survive a death that may
    /// follow without another event).
    mutating func saveKeptDrafts() {
        for entry in inputEntries() {
            guard let input = contract.route(entry.route)?.input, Self.keepsDrafts(input) else { continue }
            save(entry, entry.input!)
        }
    }

    mutating func expire() {
        guard state.account != nil else { return }
        let target = state.top.flatMap { contract.route($0.route)?.isSensitive == true ? nil : $0 }
        saveKeptDrafts()
        state.sessionValid = false
        state.prompt = nil
        let leaving = state.stack.filter { !isPublic($0) } + (state.modal.map { [$0] } ?? [])
        state.stack = state.stack.filter(isPublic)
        if state.stack.isEmpty { state.stack = [rootEntry()] }
        state.modal = nil
        if let target, navigator.verdict(target, in: state) == .needsSignIn {
            state.pendingTarget = target
            state.pendingTargetPushed = false
            effects.append(.signInRequired(target.label))
        }
        // The input of the screens that go (the protected ones, and the modal sign-in covers), other than the
        // target sign-in holds with its input: saved above where its lifecycle keeps drafts, reported lost
        // otherwise — never dropped without a word.
        for entry in leaving where entry.id != state.pendingTarget?.id && !(entry.input ?? "").isEmpty {
            guard contract.route(entry.route)?.input != nil, !keepsInput(entry) else { continue }
            effects.append(.inputLost(entry.label))
        }
        state.modal = signInEntry()
        effects.append(.saveSnapshot)
    }

    /// `entry`'s input is gone with the access to it: its draft (saved as it was typed) is deleted too,
    /// so that it neither stays behind for a resource the user cannot reach nor comes back later.
    mutating func lose(_ entry: NavigationEntry) {
        dropDraft(of: entry)
        effects.append(.inputLost(entry.label))
    }

    /// Deletes `entry`'s saved draft, if it has one.
    mutating func dropDraft(of entry: NavigationEntry) {
        guard let key = draftKey(entry), state.drafts[key] != nil else { return }
        state.drafts[key] = nil
        effects.append(.deleteDraft(key))
    }

    mutating func revoke(_ route: String, _ parameters: [String: String]) {
        func matches(_ entry: NavigationEntry) -> Bool {
            entry.route == route && parameters.allSatisfy { entry.parameters[$0.key] == $0.value }
        }
        if let modal = state.modal, matches(modal) {
            effects.append(.accessDenied(modal.label))
            if let text = modal.input, !text.isEmpty { lose(modal) }
            state.modal = nil
            // A prompt about it asks about nothing now; confirmed, it would act on the screen below.
            if state.prompt?.entry == modal.id { state.prompt = nil }
        }
        if let index = state.stack.firstIndex(where: matches) {
            effects.append(.accessDenied(state.stack[index].label))
            let cutOff = Array(state.stack[index...])
            cut(cutOff, denied: deniedIDs(cutOff, resource: parameters).union(cutOff.filter(matches).map(\.id)))
            state.stack.removeSubrange(index...)
            if state.stack.isEmpty { state.stack = [rootEntry()] }
            // A modal access went with the revoked screen is cut too, saying so (found in an outside audit: it
            // disappeared without an effect, and its draft stayed behind).
            if let modal = state.modal, navigator.verdict(modal, in: state) != .allowed {
                effects.append(.accessDenied(modal.label))
                if holdsInput(modal) { lose(modal) }
                state.modal = nil
            }
            state.prompt = nil
        }
        if let target = state.pendingTarget, matches(target) {
            // The destination sign-in holds (a session that expired over it, a link opened signed out): its
            // input goes with the access, and its draft with it, as for a screen that is shown.
            effects.append(.accessDenied(target.label))
            if holdsInput(target) { lose(target) }
            state.pendingTarget = nil
            // A prompt about it asks about nothing now.
            if state.prompt?.entry == target.id { state.prompt = nil }
        }
        effects.append(.saveSnapshot)
    }
}
