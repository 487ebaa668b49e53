import Foundation
public import KeelCore

/// The app's routes, validated as a whole (MOB-PLAT-008): every route reachable back to the root through
/// declared parents, deep links that can only land where the user could also go back through, unsaved
/// input with one declared lifecycle, sensitive one-time routes never deep-linked.
///
/// ```swift
/// let contract = try NavigationContract([
///     Route("home", access: .public, isRoot: true),
///     Route("notes", parent: "home", access: .signedIn),
///     Route("note", parent: "notes", access: .account, parameters: ["noteID"],
///           deepLink: "keel-notes://note/{noteID}"),
///     Route("edit", parent: "note", access: .account, parameters: ["noteID"],
///           input: .init(policy: .confirmDiscard, onDeath: .save)),
/// ])
/// try contract.export().write(to: url)      // for `keel navigation check` in CI
/// ```
public struct NavigationContract: Sendable, Equatable {
    /// The routes, in declaration order.
    public let routes: [Route]
    /// The routes by id.
    public let byID: [String: Route]
    /// The root route.
    public let root: Route

    /// A contract of `routes`.
    ///
    /// - Throws: ``NavigationContractError`` `refused` with every ``NavigationProblem`` when the
    ///   declaration is unsound.
    public init(_ routes: [Route]) throws(NavigationContractError) {
        let problems = Self.problems(in: routes)
        guard problems.isEmpty else {
            throw NavigationContractError(
                code: .refused, problems: problems,
                message: "the navigation contract is refused: "
                    + problems.map(\.description).joined(separator: "; "))
        }
        self.routes = routes
        byID = Dictionary(uniqueKeysWithValues: routes.map { ($0.id, $0) })
        root = routes.first(where: \.isRoot)!
    }

    /// The route `id`.
    public func route(_ id: String) -> Route? { byID[id] }

    /// `id`'s ancestors from the root down to its parent (empty for the root and parentless modals).
    public func ancestors(of id: String) -> [Route] {
        var chain: [Route] = []
        var current = byID[id]?.parent
        while let parent = current, let route = byID[parent] {
            chain.insert(route, at: 0)
            current = route.parent
        }
        return chain
    }

    // MARK: - Validation

    /// Every rule `routes` break (empty when they make a sound contract).
    public static func problems(in routes: [Route]) -> [NavigationProblem] {
        var problems: [NavigationProblem] = []
        func problem(_ code: NavigationProblem.Code, _ route: String, _ message: String) {
            problems.append(NavigationProblem(code: code, route: route, message: message))
        }
        var byID: [String: Route] = [:]
        for route in routes {
            if route.id.isEmpty || route.id.contains(where: { $0.isWhitespace }) {
                problem(.invalidID, route.id, "a route id is a non-empty word without spaces")
            }
            if byID[route.id] != nil {
                problem(.declaredTwice, route.id, "route \(route.id) is declared twice")
            } else {
                byID[route.id] = route
            }
        }
        let roots = routes.filter(\.isRoot)
        if roots.isEmpty, !routes.isEmpty { problem(.noRoot, "", "no route is the root") }
        if routes.isEmpty { problem(.noRoot, "", "the contract declares no route") }
        if roots.count > 1 {
            for extra in roots.dropFirst() {
                problem(.twoRoots, extra.id, "\(extra.id) is a second root (\(roots[0].id) is the first)")
            }
        }
        var patterns: [String: String] = [:]
        for route in routes {
            if route.isRoot {
                // Sign-out and account switch land on the root, and launch restores at least the root.
                if route.access != .public {
                    problem(
                        .protectedRoot, route.id,
                        "the root is where signing out lands: it must be public, not \(route.access)")
                }
                if route.isSensitive {
                    problem(
                        .sensitiveRoot, route.id, "the root is always restored: it cannot be a sensitive one-time route"
                    )
                }
                if route.isModal {
                    problem(.modalRoot, route.id, "the root is the bottom of the stack: it cannot be modal")
                }
            }
            if let parent = route.parent, byID[parent]?.isModal == true {
                problem(
                    .modalParent, route.id,
                    "parent \(parent) is a modal, which holds one screen: \(route.id) could be neither opened over it nor rebuilt under it"
                )
            }
            if let parent = route.parent {
                if route.isRoot { problem(.rootWithParent, route.id, "the root has no parent") }
                if byID[parent] == nil {
                    problem(.unknownParent, route.id, "parent \(parent) is not a declared route")
                }
            } else if !route.isRoot && !route.isModal {
                problem(
                    .missingParent, route.id,
                    "\(route.id) has no parent and is neither the root nor modal: back would have nowhere to go")
            }
            if case .custom(let name) = route.access, name.isEmpty {
                problem(.invalidAccess, route.id, "a custom access check needs a name")
            }
            if Set(route.parameters).count != route.parameters.count {
                problem(.invalidParameters, route.id, "a parameter is listed twice")
            }
            if route.input?.policy == .confirmDiscard, route.input?.onDeath == nil {
                problem(
                    .missingDeathBehaviour, route.id,
                    "confirmDiscard cannot ask when the process dies: declare onDeath (save or drop)")
            }
            // onDeath only decides for confirmDiscard; elsewhere the policy decides, so a declaration that
            // says otherwise would be silently overruled: dropped input kept on disk, or saved input lost.
            switch (route.input?.policy, route.input?.onDeath) {
            case (.saveDraft?, .drop?):
                problem(
                    .contradictoryDeathBehaviour, route.id,
                    "saveDraft keeps the input on disk as it is typed, so process death cannot drop it: declare confirmDiscard with onDeath drop, or no onDeath"
                )
            case (.warnBeforeLoss?, .save?):
                problem(
                    .contradictoryDeathBehaviour, route.id,
                    "warnBeforeLoss never saves the input, so process death loses it: declare saveDraft, or confirmDiscard with onDeath save, or no onDeath"
                )
            default: break
            }
            if let link = route.deepLink {
                if route.isSensitive {
                    problem(.sensitiveDeepLink, route.id, "a sensitive one-time route cannot be opened by a deep link")
                }
                if let pattern = DeepLinkPattern(link) {
                    for name in pattern.parameterNames where !route.parameters.contains(name) {
                        problem(.invalidDeepLink, route.id, "deep link placeholder {\(name)} is not a parameter")
                    }
                    // Which of two values would be meant is anybody's guess (found in an outside audit: the last won).
                    var seen: Set<String> = []
                    for name in pattern.parameterNames where !seen.insert(name).inserted {
                        problem(.invalidDeepLink, route.id, "deep link placeholder {\(name)} appears more than once")
                    }
                    if let other = patterns[pattern.shape] {
                        problem(
                            .duplicateDeepLink, route.id, "deep link \(link) matches the same URLs as \(other)'s")
                    } else {
                        patterns[pattern.shape] = route.id
                    }
                } else {
                    problem(
                        .invalidDeepLink, route.id,
                        "deep link \(link) is not scheme://host/segment with {parameter} placeholders")
                }
            }
        }
        // Parent chains: no cycles, at most `maximumDepth` ancestors; deep-linkable routes never need less
        // access than their ancestors, and their ancestors' parameters come from their own. Each route's
        // chain is measured once (linear in the number of routes, however long the chains), so a hostile
        // contract cannot make the check quadratic.
        let chains = ParentChains(byID)
        for route in routes {
            if let entry = chains.cycleEntry(of: route.id) {
                problem(.cyclicParents, route.id, "the parents of \(route.id) form a cycle through \(entry)")
                continue
            }
            let depth = chains.depth(of: route.id)
            if depth > Self.maximumDepth {
                problem(
                    .tooDeep, route.id,
                    "\(route.id) has \(depth) ancestors; a back stack deeper than \(Self.maximumDepth) routes is refused"
                )
                continue
            }
            guard route.deepLink != nil else { continue }
            var ancestors: [Route] = []
            var current = route.parent
            while let parent = current, let ancestor = byID[parent] {
                ancestors.append(ancestor)
                current = ancestor.parent
            }
            for ancestor in ancestors where !route.access.covers(ancestor.access) {
                problem(
                    .ancestorNeedsMoreAccess, route.id,
                    "ancestor \(ancestor.id) needs \(ancestor.access) but \(route.id) only \(route.access): a deep link could land where back cannot go"
                )
            }
            for ancestor in ancestors where ancestor.isSensitive {
                problem(
                    .sensitiveAncestor, route.id,
                    "ancestor \(ancestor.id) is a sensitive one-time route: a deep link to \(route.id) would rebuild it under the target, where back would return to it"
                )
            }
            for ancestor in ancestors {
                for name in ancestor.parameters where !route.parameters.contains(name) {
                    problem(
                        .ancestorParameterMissing, route.id,
                        "ancestor \(ancestor.id) needs parameter \(name), which a deep link to \(route.id) does not carry"
                    )
                }
            }
        }
        return problems
    }
}

/// Why a navigation contract was refused.
public struct NavigationContractError: KeelError, Equatable {
    /// Codes of ``NavigationContractError``.
    public typealias Code = ErrorCode<NavigationContractError>

    /// What went wrong.
    public let code: Code
    /// For `refused`: every rule broken.
    public let problems: [NavigationProblem]
    /// A short explanation for developers.
    public let message: String

    /// An error of kind `code`.
    public init(code: Code, problems: [NavigationProblem] = [], message: String) {
        self.code = code
        self.problems = problems
        self.message = message
    }

    /// `navigation refused: ...`.
    public var description: String { "navigation \(code): \(message)" }
}

extension ErrorCode where Domain == NavigationContractError {
    /// The declaration breaks rules: see ``NavigationContractError/problems``.
    public static var refused: Self { Self("refused") }
    /// A contract file is not valid JSON of the contract's shape (an unknown member, a wrong type).
    public static var malformed: Self { Self("malformed") }
}

/// One rule a route declaration breaks. Tools and tests match ``code`` and ``route``, never the message.
public struct NavigationProblem: Sendable, Hashable, CustomStringConvertible {
    /// Codes of ``NavigationProblem``.
    public typealias Code = ErrorCode<NavigationProblem>

    /// The rule broken.
    public let code: Code
    /// The route at fault (empty for the contract as a whole).
    public let route: String
    /// A short explanation for review.
    public let message: String

    /// A problem of `route`.
    public init(code: Code, route: String, message: String) {
        self.code = code
        self.route = route
        self.message = message
    }

    /// `route: message`.
    public var description: String { route.isEmpty ? message : "\(route): \(message)" }
}

extension NavigationContract {
    /// The most ancestors a route may have: a back stack deeper than this is not a screen hierarchy.
    public static let maximumDepth = 64
}

/// How many ancestors each route has and which routes' parents loop, each route walked once.
struct ParentChains {
    private enum Chain {
        case depth(Int)
        /// The parents loop; `entry` is where the walk from this route first meets a route it has seen.
        case cyclic(entry: String)
    }

    private var chains: [String: Chain] = [:]

    init(_ byID: [String: Route]) {
        for id in byID.keys where chains[id] == nil {
            // Walk up until a route whose chain is known, a parentless route or an unknown parent, or a
            // route already on this walk (a cycle); then settle every route walked, from the top down.
            var path: [String] = []
            var position: [String: Int] = [:]
            var current = id
            var settled: Chain?
            while true {
                if let known = chains[current] {
                    settled = known
                    break
                }
                if let index = position[current] {
                    // A cycle: the routes on it loop through themselves; those leading to it, through it.
                    for onCycle in path[index...] { chains[onCycle] = .cyclic(entry: onCycle) }
                    path.removeSubrange(index...)
                    settled = .cyclic(entry: current)
                    break
                }
                position[current] = path.count
                path.append(current)
                guard let parent = byID[current]?.parent, byID[parent] != nil else { break }
                current = parent
            }
            var below: Chain =
                settled.map { chain in
                    if case .depth(let depth) = chain { return .depth(depth + 1) }
                    return chain
                } ?? .depth(0)
            for walked in path.reversed() {
                chains[walked] = below
                if case .depth(let depth) = below { below = .depth(depth + 1) }
            }
        }
    }

    /// Where `id`'s parents start to loop, or nil when they do not.
    func cycleEntry(of id: String) -> String? {
        if case .cyclic(let entry) = chains[id] { return entry }
        return nil
    }

    /// How many ancestors `id` has (0 for a parentless route or one whose parent is unknown).
    func depth(of id: String) -> Int {
        if case .depth(let depth) = chains[id] { return depth }
        return 0
    }
}

extension ErrorCode where Domain == NavigationProblem {
    /// A route with more than ``NavigationContract/maximumDepth`` ancestors.
    public static var tooDeep: Self { Self("tooDeep") }
    /// An empty id or one with spaces.
    public static var invalidID: Self { Self("invalidID") }
    /// Two routes share an id.
    public static var declaredTwice: Self { Self("declaredTwice") }
    /// No route is the root (or no route at all).
    public static var noRoot: Self { Self("noRoot") }
    /// More than one route is the root.
    public static var twoRoots: Self { Self("twoRoots") }
    /// The root declares a parent.
    public static var rootWithParent: Self { Self("rootWithParent") }
    /// A parent that is not a declared route.
    public static var unknownParent: Self { Self("unknownParent") }
    /// Parents that form a cycle.
    public static var cyclicParents: Self { Self("cyclicParents") }
    /// A route without a parent that is neither the root nor modal.
    public static var missingParent: Self { Self("missingParent") }
    /// A malformed access (an unnamed custom check).
    public static var invalidAccess: Self { Self("invalidAccess") }
    /// A parameter listed twice.
    public static var invalidParameters: Self { Self("invalidParameters") }
    /// `confirmDiscard` without a declared process-death behaviour.
    public static var missingDeathBehaviour: Self { Self("missingDeathBehaviour") }
    /// An `onDeath` the policy overrules: `drop` on `saveDraft` (kept on disk anyway), `save` on
    /// `warnBeforeLoss` (never saved).
    public static var contradictoryDeathBehaviour: Self { Self("contradictoryDeathBehaviour") }
    /// A sensitive one-time route with a deep link.
    public static var sensitiveDeepLink: Self { Self("sensitiveDeepLink") }
    /// A deep-linkable route with a sensitive one-time ancestor (the link would rebuild it).
    public static var sensitiveAncestor: Self { Self("sensitiveAncestor") }
    /// A root that is not public (sign-out lands on it).
    public static var protectedRoot: Self { Self("protectedRoot") }
    /// A sensitive one-time root (the root is always restored).
    public static var sensitiveRoot: Self { Self("sensitiveRoot") }
    /// A modal root (the root is the bottom of the stack, under every modal).
    public static var modalRoot: Self { Self("modalRoot") }
    /// A route whose parent is a modal (a modal holds one screen).
    public static var modalParent: Self { Self("modalParent") }
    /// A malformed deep-link pattern, or a placeholder that is not a parameter.
    public static var invalidDeepLink: Self { Self("invalidDeepLink") }
    /// Two deep-link patterns that match the same URLs.
    public static var duplicateDeepLink: Self { Self("duplicateDeepLink") }
    /// A deep-linkable route whose ancestor needs access the route does not.
    public static var ancestorNeedsMoreAccess: Self { Self("ancestorNeedsMoreAccess") }
    /// A deep-linkable route whose ancestor needs a parameter the route does not carry.
    public static var ancestorParameterMissing: Self { Self("ancestorParameterMissing") }
}
