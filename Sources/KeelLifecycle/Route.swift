/// One screen or flow the app can show, declared once with everything navigation needs to decide back,
/// deep links, restoration and unsaved input without asking view code (MOB-PLAT-005, MOB-PLAT-008).
public struct Route: Sendable, Hashable {
    /// Who may see a route. Built-in levels are ordered `public` < `signedIn` < `account`; a named custom
    /// check (`custom:premium`) is an account-scoped check of the app's own on top of `account`.
    public enum Access: Sendable, Hashable, CustomStringConvertible {
        /// Anyone, signed in or not.
        case `public`
        /// Any signed-in user.
        case signedIn
        /// Data of the signed-in account: its entries belong to that account and are removed when it
        /// signs out or another account becomes active.
        case account
        /// An account-scoped check the app performs (`custom:NAME`), e.g. an entitlement or a role.
        case custom(String)

        /// The text form used in contract files: `public`, `signedIn`, `account`, `custom:NAME`.
        public var description: String {
            switch self {
            case .public: return "public"
            case .signedIn: return "signedIn"
            case .account: return "account"
            case .custom(let name): return "custom:" + name
            }
        }

        /// Reads the text form; nil for anything else (an empty custom name included).
        public init?(_ text: String) {
            switch text {
            case "public": self = .public
            case "signedIn": self = .signedIn
            case "account": self = .account
            default:
                guard text.hasPrefix("custom:"), text.count > "custom:".count else { return nil }
                self = .custom(String(text.dropFirst("custom:".count)))
            }
        }

        /// 0 public, 1 signed in, 2 account, 3 custom.
        var level: Int {
            switch self {
            case .public: return 0
            case .signedIn: return 1
            case .account: return 2
            case .custom: return 3
            }
        }

        /// Whether whoever passes `self` also passes `other` (a user who may see this route may see one
        /// that needs `other`).
        public func covers(_ other: Access) -> Bool {
            if case .custom(let mine) = self, case .custom(let theirs) = other { return mine == theirs }
            return level >= other.level
        }

        /// Whether entries with this access belong to the signed-in account.
        public var isAccountScoped: Bool { level >= 2 }
    }

    /// What a route that holds unsaved input does with it when the user leaves, the app goes to the
    /// background, or the process dies.
    public struct Input: Sendable, Hashable {
        /// The one lifecycle of the input.
        public enum Policy: String, Sendable, Hashable, CaseIterable {
            /// Typing, leaving or backgrounding saves a draft in the account's drafts (so a kill without
            /// warning loses nothing); it is restored on return.
            case saveDraft
            /// Leaving asks the user to confirm discarding; process death, which cannot ask, applies
            /// ``Input/onDeath``.
            case confirmDiscard
            /// Leaving shows an explicit warning before the input is lost.
            case warnBeforeLoss
        }

        /// What process death does with input that could not be confirmed or warned about.
        public enum DeathBehaviour: String, Sendable, Hashable, CaseIterable {
            /// Saved as a draft as it is typed (death gives no warning), offered again at the next launch.
            case save
            /// Dropped (declared, so the loss is a decision, not an accident).
            case drop
        }

        /// The policy.
        public var policy: Policy
        /// What process death does (required for `confirmDiscard`).
        public var onDeath: DeathBehaviour?

        /// An input lifecycle.
        public init(policy: Policy, onDeath: DeathBehaviour? = nil) {
            self.policy = policy
            self.onDeath = onDeath
        }
    }

    /// The route's id, unique in the contract.
    public var id: String
    /// The declared parent: where back leads, and the ancestors a deep link builds (nil for the root and
    /// for modals presented over whatever is current).
    public var parent: String?
    /// Who may see it.
    public var access: Access
    /// Whether it is presented modally.
    public var isModal: Bool
    /// Whether it is sensitive one-time state (OTP entry, payment confirmation): never restored, never
    /// deep-linked.
    public var isSensitive: Bool
    /// Whether it is the root (exactly one route is).
    public var isRoot: Bool
    /// The parameter names its entries carry (`noteID`).
    public var parameters: [String]
    /// The deep-link pattern (`keel-notes://note/{noteID}`), when it can be opened from outside.
    public var deepLink: String?
    /// The lifecycle of its unsaved input, when it holds any.
    public var input: Input?

    /// Declares a route. Nothing is checked here: a ``NavigationContract`` refuses an unsound
    /// declaration with every problem.
    public init(
        _ id: String, parent: String? = nil, access: Access, isModal: Bool = false, isSensitive: Bool = false,
        isRoot: Bool = false, parameters: [String] = [], deepLink: String? = nil, input: Input? = nil
    ) {
        self.id = id
        self.parent = parent
        self.access = access
        self.isModal = isModal
        self.isSensitive = isSensitive
        self.isRoot = isRoot
        self.parameters = parameters
        self.deepLink = deepLink
        self.input = input
    }
}
