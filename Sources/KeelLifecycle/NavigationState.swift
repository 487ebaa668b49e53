public import KeelCore

/// One screen on the stack: a route with its parameters, the account it was opened under, and the input
/// typed into it that is not saved yet.
public struct NavigationEntry: Sendable, Hashable, Codable {
    /// Unique within a launch and across launches: `e<number>-<lineage>` (`e3-9f86d081884c7d65`), where the
    /// lineage is that of the state it was opened in (``NavigationState/lineage``), minted at random for each
    /// state ``Navigator/initialState`` or ``Navigator/restore(_:drafts:session:migrations:)`` gives. Effect
    /// ledgers key irreversible operations by it, so no two entries may ever share one. Entries restored from
    /// snapshots written before lineages existed keep `e<number>`.
    public var id: String
    /// The route's id.
    public var route: String
    /// Its parameters (`noteID` → `42`).
    public var parameters: [String: String]
    /// The account signed in when it was opened (nil when none was).
    public var account: AccountID?
    /// Unsaved input typed into it (nil when none).
    public var input: String?
    /// Set in a snapshot when the entry held input that no draft could keep (typed while nobody was signed
    /// in: drafts live in an account's store). Restoring it reports the input lost (`inputLost`) instead of
    /// losing it without a word. Nil otherwise.
    public var inputNotKept: Bool?

    /// An entry.
    public init(
        id: String, route: String, parameters: [String: String] = [:], account: AccountID? = nil, input: String? = nil
    ) {
        self.id = id
        self.route = route
        self.parameters = parameters
        self.account = account
        self.input = input
    }

    /// `note noteID=42` (parameters sorted): how effects and tools name an entry.
    public var label: String { Self.label(route: route, parameters: parameters) }

    /// `route key=value ...`, the parameters sorted by key.
    public static func label(route: String, parameters: [String: String]) -> String {
        ([route] + parameters.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }).joined(separator: " ")
    }
}

/// Where a draft is kept: per account, route and parameters. Two keys are the same draft when their accounts are
/// the same ``AccountID`` (the same bytes: two canonically equivalent account ids are two accounts, whose drafts
/// must never be taken for each other's) and their routes and parameters are equal.
public struct DraftKey: Sendable, Hashable, Codable, Comparable {
    /// The account whose draft it is.
    public var account: AccountID
    /// The route it was typed in.
    public var route: String
    /// The route's parameters.
    public var parameters: [String: String]

    /// A key.
    public init(account: AccountID, route: String, parameters: [String: String]) {
        self.account = account
        self.route = route
        self.parameters = parameters
    }

    /// Orders by account (its bytes, as ``AccountID`` orders them), then by route and sorted parameters.
    public static func < (lhs: DraftKey, rhs: DraftKey) -> Bool {
        guard lhs.account == rhs.account else { return lhs.account < rhs.account }
        return lhs.entryLabel < rhs.entryLabel
    }
}

/// A question the user must answer before navigation goes on.
public struct NavigationPrompt: Sendable, Hashable, Codable {
    /// Which question.
    public enum Kind: String, Sendable, Hashable, Codable {
        /// "Discard your changes?" (`confirmDiscard`).
        case confirmDiscard
        /// "Your changes will be lost" (`warnBeforeLoss`).
        case warnBeforeLoss
    }

    /// Which question.
    public var kind: Kind
    /// The entry whose input is at stake.
    public var entry: String
    /// What happens on `confirm`.
    public var pending: PendingAction
    /// Entries whose input the user already agreed to lose for the same ``pending`` replacement: a deep
    /// link over several screens holding input asks about each in turn, and nothing is discarded until the
    /// last one is confirmed (nil: this is the first question).
    public var confirmed: [String]?

    /// A question about `entry`'s input, holding back `pending`.
    public init(kind: Kind, entry: String, pending: PendingAction, confirmed: [String]? = nil) {
        self.kind = kind
        self.entry = entry
        self.pending = pending
        self.confirmed = confirmed
    }
}

/// What a prompt holds back until the user confirms.
public enum PendingAction: Sendable, Hashable, Codable {
    /// Back (pop the top entry or dismiss the modal).
    case back
    /// Replace the whole navigation with this stack (a deep link or notification into a stack with input).
    case replace(stack: [NavigationEntry], modal: NavigationEntry?)
}

/// The navigator's whole state: `Codable`, so a snapshot is this value (without drafts, which live in the
/// account's drafts store).
public struct NavigationState: Sendable, Hashable, Codable {
    /// The signed-in account (nil when signed out).
    public var account: AccountID?
    /// Whether the session is valid (false after it expired, until the user signs in again).
    public var sessionValid: Bool
    /// The stack, root first.
    public var stack: [NavigationEntry]
    /// The modal presented over the stack, if any.
    public var modal: NavigationEntry?
    /// A question waiting for `confirm` or `cancel`.
    public var prompt: NavigationPrompt?
    /// Where the user was going when sign-in interrupted (opened after sign-in, access re-checked).
    public var pendingTarget: NavigationEntry?
    /// Whether ``pendingTarget`` is a screen the user opened (`open`), not one a link, a notification or an
    /// expired session asked for: after sign-in it is pushed onto the stack as it is, the user's own history
    /// — the screens below it, and their input, stay — instead of being rebuilt over its declared ancestors
    /// (found in an outside audit: the rebuild destroyed a `warnBeforeLoss` screen below without its warning).
    public var pendingTargetPushed: Bool
    /// Ids of deep links and notifications already handled: a redelivery (an Android recreation, a
    /// restore) never replays them. The last 64 are kept.
    public var consumed: [String]
    /// Drafts by key (mirrors the drafts store; not part of a snapshot).
    public var drafts: [DraftKey: String]
    /// The next entry number.
    public var nextEntry: Int
    /// What makes the ids of the entries opened in this state its own: 16 random hex digits, minted for each
    /// state ``Navigator/initialState`` and ``Navigator/restore(_:drafts:session:migrations:)`` give (found in
    /// an outside audit: minted once per navigator, two windows of one launch — or a rebuild from a snapshot
    /// older than the state — handed the same id to two screens, and the effect ledger took one screen's
    /// publish for the other's). Entry numbers go on from ``nextEntry``; restored entries keep their ids.
    /// Empty in a state decoded from a snapshot written before states carried one: its entries then get the
    /// navigator's (``Navigator/lineage``). Take states from `initialState` and `restore`, never by decoding a
    /// snapshot yourself, and drive each state value alone (a copy driven beside it opens entries with the
    /// same ids).
    public var lineage: String

    /// The state of a fresh launch: the root alone, nobody signed in.
    ///
    /// - Parameters:
    ///   - root: the root route.
    ///   - lineage: the state's ``lineage``; by default 16 random hex digits from the system's generator.
    public init(root: String, lineage: String = NavigationState.newLineage(from: .system)) {
        self.lineage = lineage
        account = nil
        sessionValid = false
        stack = [NavigationEntry(id: Self.entryID(1, lineage: lineage), route: root)]
        modal = nil
        prompt = nil
        pendingTarget = nil
        pendingTargetPushed = false
        consumed = []
        drafts = [:]
        nextEntry = 2
    }

    /// The entry the user sees: the modal, else the top of the stack.
    public var top: NavigationEntry? { modal ?? stack.last }

    /// A new lineage: 16 hex digits (64 bits) from `random`.
    public static func newLineage(from random: RandomSource) -> String {
        let value = String(random.next(), radix: 16)
        return String(repeating: "0", count: 16 - value.count) + value
    }

    /// The id of entry `number` opened with `lineage` (an empty one gives the old `e<number>`).
    static func entryID(_ number: Int, lineage: String) -> String {
        lineage.isEmpty ? "e\(number)" : "e\(number)-\(lineage)"
    }

    private enum CodingKeys: String, CodingKey {
        case account, sessionValid, stack, modal, prompt, pendingTarget, pendingTargetPushed, consumed, nextEntry
        case lineage
    }

    /// Decodes a snapshot (drafts come from the drafts store, not from the snapshot).
    ///
    /// - Throws: `DecodingError.dataCorrupted` at the `account` key when an account (the state's or an entry's)
    ///   is not a valid ``AccountID`` — an empty or placeholder id an earlier version took as an account.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        account = try container.decodeIfPresent(AccountID.self, forKey: .account)
        sessionValid = try container.decode(Bool.self, forKey: .sessionValid)
        stack = try container.decode([NavigationEntry].self, forKey: .stack)
        modal = try container.decodeIfPresent(NavigationEntry.self, forKey: .modal)
        prompt = try container.decodeIfPresent(NavigationPrompt.self, forKey: .prompt)
        pendingTarget = try container.decodeIfPresent(NavigationEntry.self, forKey: .pendingTarget)
        pendingTargetPushed = try container.decodeIfPresent(Bool.self, forKey: .pendingTargetPushed) ?? false
        consumed = try container.decode([String].self, forKey: .consumed)
        nextEntry = try container.decode(Int.self, forKey: .nextEntry)
        lineage = try container.decodeIfPresent(String.self, forKey: .lineage) ?? ""
        drafts = [:]
    }

    /// Encodes everything but the drafts.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encodeIfPresent(account, forKey: .account)
        try container.encode(sessionValid, forKey: .sessionValid)
        try container.encode(stack, forKey: .stack)
        try container.encodeIfPresent(modal, forKey: .modal)
        try container.encodeIfPresent(prompt, forKey: .prompt)
        try container.encodeIfPresent(pendingTarget, forKey: .pendingTarget)
        if pendingTarget != nil, pendingTargetPushed { try container.encode(true, forKey: .pendingTargetPushed) }
        try container.encode(consumed, forKey: .consumed)
        try container.encode(nextEntry, forKey: .nextEntry)
        if !lineage.isEmpty { try container.encode(lineage, forKey: .lineage) }
    }
}
