public import Foundation

/// When the engine syncs.
public enum SyncCondition: Sendable, Hashable, CustomStringConvertible {
    /// The network came back (the app reports it with ``SyncEngine/connectivityChanged(reachable:)``).
    case connectivityRegained
    /// The app came to the foreground.
    case foreground
    /// Every so often while the app runs (``SyncEngine/runPeriodically(clock:)``).
    case periodic(Duration)
    /// The user asked (pull to refresh, a sync button).
    case manual

    /// `connectivityRegained`, `foreground`, `periodic(900s)`, `manual`.
    public var description: String {
        switch self {
        case .connectivityRegained: "connectivityRegained"
        case .foreground: "foreground"
        case .periodic(let interval): "periodic(\(interval.components.seconds)s)"
        case .manual: "manual"
        }
    }
}

/// How the app shows the state of offline work.
public enum StateDisplay: String, Sendable, Hashable, CaseIterable {
    /// Each item carries its own badge (pending, sending, failed, conflicted) and the list says how fresh it is.
    case itemBadges
    /// One banner for the whole queue ("3 changes waiting to be sent", "updated 3 h ago").
    case banner
    /// Both.
    case itemBadgesAndBanner
}

/// One offline scenario the app declares (MOB-DATA-004): what works without network, how stale the data
/// shown may be, the queue the changes wait in, how their state is shown, and when sync runs.
public struct OfflineScenario: Sendable, Hashable {
    /// A name for the declaration and logs (`editNotes`).
    public let name: String
    /// The operations available offline (`createNote`, `editNote`): the outbox takes them. None: a read-only
    /// scenario — data the app shows offline with its staleness (server-owned lists, reference data) and
    /// changes nothing of.
    public let operations: Set<String>
    /// The entity types whose data the scenario shows.
    public let entityTypes: Set<String>
    /// How old the data shown may be before the app says it is stale.
    public let maximumStaleness: Duration
    /// The queue the changes wait in (the engine's outbox dataset).
    public let queue: String
    /// How the state is shown.
    public let display: StateDisplay
    /// When sync runs.
    public let conditions: Set<SyncCondition>

    /// A scenario. ``OfflineContract/init(_:)`` checks it.
    public init(
        name: String, operations: Set<String>, entityTypes: Set<String>, maximumStaleness: Duration,
        queue: String = SyncStorage.default.outbox, display: StateDisplay, conditions: Set<SyncCondition>
    ) {
        self.name = name
        self.operations = operations
        self.entityTypes = entityTypes
        self.maximumStaleness = maximumStaleness
        self.queue = queue
        self.display = display
        self.conditions = conditions
    }
}

/// The app's offline scenarios. An operation in none of them is online-only: the outbox refuses it, and
/// ``requireOnline(_:connectivity:)`` fails it fast while offline instead of letting it hang or queue.
public struct OfflineContract: Sendable, Hashable {
    /// The scenarios, in declaration order.
    public let scenarios: [OfflineScenario]

    /// A contract.
    ///
    /// - Throws: ``SyncError`` `invalidDeclaration` for two scenarios with one name, an operation in two
    ///   scenarios, a scenario without entity types or sync conditions, or a maximum staleness that is not
    ///   positive. A scenario without operations is read-only (found in an outside audit: data the app only
    ///   shows could not be given a staleness without inventing an operation).
    public init(_ scenarios: [OfflineScenario]) throws(SyncError) {
        var names: Set<String> = []
        var operations: Set<String> = []
        for scenario in scenarios {
            func refuse(_ message: String) -> SyncError {
                SyncError(code: .invalidDeclaration, subject: scenario.name, message: message)
            }
            guard !scenario.name.isEmpty, names.insert(scenario.name).inserted else {
                throw refuse("scenario names must be present and unique")
            }
            guard !scenario.entityTypes.isEmpty else { throw refuse("a scenario declares the data it shows") }
            guard !scenario.conditions.isEmpty else { throw refuse("a scenario declares when it syncs") }
            guard scenario.maximumStaleness > .zero else { throw refuse("the maximum staleness must be positive") }
            for case .periodic(let interval) in scenario.conditions where interval <= .zero {
                throw refuse("a periodic sync needs a positive interval")
            }
            if let shared = scenario.operations.first(where: operations.contains) {
                throw refuse("operation \(shared) is declared in two scenarios")
            }
            operations.formUnion(scenario.operations)
        }
        self.scenarios = scenarios
    }

    /// The scenario that makes `operation` available offline, or nil (online-only).
    public func scenario(for operation: String) -> OfflineScenario? {
        scenarios.first { $0.operations.contains(operation) }
    }

    /// The strictest maximum staleness of the scenarios that show `entityType`.
    public func maximumStaleness(of entityType: String) -> Duration? {
        scenarios.filter { $0.entityTypes.contains(entityType) }.map(\.maximumStaleness).min()
    }

    /// Whether any scenario syncs on `condition` (for `periodic`, any interval).
    public func syncs(on condition: SyncCondition) -> Bool {
        scenarios.contains { scenario in
            scenario.conditions.contains { declared in
                switch (declared, condition) {
                case (.periodic, .periodic): true
                default: declared == condition
                }
            }
        }
    }

    /// The shortest periodic interval declared, if any.
    public var periodicInterval: Duration? {
        scenarios.flatMap(\.conditions).compactMap { condition -> Duration? in
            if case .periodic(let interval) = condition { return interval }
            return nil
        }.min()
    }

    /// Fails fast with `offline` when `operation` is online-only and the app is offline; does nothing
    /// otherwise. Call it before an online-only HTTP call.
    public func requireOnline(_ operation: String, connectivity: Connectivity) throws(SyncError) {
        guard scenario(for: operation) == nil, connectivity == .offline else { return }
        throw SyncError(
            code: .offline, subject: operation,
            message: "\(operation) is not available offline (no offline scenario declares it)")
    }

    /// One line per scenario, for reviews: name, operations, data, staleness, queue, display, conditions.
    public var declaration: [String] {
        scenarios.map { scenario in
            "\(scenario.name): operations \(scenario.operations.sorted().joined(separator: ", ")); data "
                + "\(scenario.entityTypes.sorted().joined(separator: ", ")); stale after "
                + "\(scenario.maximumStaleness.components.seconds)s; queue \(scenario.queue); shown as "
                + "\(scenario.display.rawValue); syncs on "
                + scenario.conditions.map(\.description).sorted().joined(separator: ", ")
        }
    }
}

/// What the engine knows about the network, from its last calls and what the app reports.
public enum Connectivity: String, Sendable, Hashable {
    /// Nothing known yet.
    case unknown
    /// The last call reached the server.
    case online
    /// The last call did not get through (no network, a timeout, a captive portal), or the app said so.
    case offline
}

/// How fresh the data of one entity type is: when the last complete pull finished (MOB-DATA-004).
public struct Freshness: Sendable, Hashable, CustomStringConvertible {
    /// When the last complete pull finished; nil when it never did.
    public let lastPull: Date?
    /// How long ago, by the engine's wall clock.
    public let age: Duration?
    /// The scenario's maximum staleness for this data.
    public let maximumStaleness: Duration?
    /// Whether the data is older than allowed (or was never pulled, or its age cannot be known: a last pull
    /// "in the future" means the clock was set back, and the data may be any age).
    public var isStale: Bool {
        guard let age, age >= .zero else { return true }
        guard let maximumStaleness else { return false }
        return age > maximumStaleness
    }

    /// `updated just now`, `updated 5 min ago`, `updated 3 h ago`, `updated 2 d ago`, `never updated`, or
    /// `update time unknown` when the last pull is "in the future" (the clock was set back: the data may be
    /// any age, and ``isStale`` says so — found in review: it read "updated just now").
    public var description: String {
        guard let age else { return "never updated" }
        guard age >= .zero else { return "update time unknown" }
        let seconds = age.components.seconds
        switch seconds {
        case ..<60: return "updated just now"
        case ..<3600: return "updated \(seconds / 60) min ago"
        case ..<86_400: return "updated \(seconds / 3600) h ago"
        default: return "updated \(seconds / 86_400) d ago"
        }
    }
}
