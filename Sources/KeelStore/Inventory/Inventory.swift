public import Foundation

/// Every dataset the app persists, declared once (MOB-DATA-001). Printable for review; checked at
/// registration; required by the store before any read or write.
public struct Inventory: Sendable {
    /// The datasets, by name.
    public let datasets: [String: Dataset]

    /// An inventory of `datasets`.
    ///
    /// - Throws: ``InventoryError`` with every problem (a sensitive dataset in backups, personal data
    ///   without retention, duplicate names, ...): such an inventory is refused, not warned about.
    public init(_ datasets: [Dataset]) throws(InventoryError) {
        let problems = Self.problems(in: datasets)
        guard problems.isEmpty else { throw InventoryError(code: .refused, dataset: nil, problems: problems) }
        // No problems: in particular no name is declared twice.
        self.datasets = Dictionary(uniqueKeysWithValues: datasets.map { ($0.name, $0) })
    }

    /// The problems of `datasets` (the rules of registration: duplicate names, then each dataset's own
    /// problems, in order); empty when they make an acceptable inventory.
    public static func problems(in datasets: [Dataset]) -> [String] {
        var names: Set<String> = []
        var problems: [String] = []
        for dataset in datasets {
            if !names.insert(dataset.name).inserted { problems.append("\(dataset.name): declared twice") }
            problems += dataset.problems
        }
        return problems
    }

    /// The declaration of `name`.
    ///
    /// - Throws: ``InventoryError`` `undeclared` — storing data nobody declared is an error.
    public func dataset(_ name: String) throws(InventoryError) -> Dataset {
        guard let dataset = datasets[name] else {
            throw InventoryError(code: .undeclared, dataset: name, problems: ["\(name) is not declared in the data inventory"])
        }
        return dataset
    }

    // MARK: - Review

    /// The inventory as JSON, for `keel inventory` (which cannot read Swift code).
    public func export() throws -> Data {
        try Self.export(Array(datasets.values))
    }

    /// `datasets` as JSON, sorted by name: what ``export()`` writes for an inventory of them.
    public static func export(_ datasets: [Dataset]) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        return try encoder.encode(datasets.sorted { $0.name < $1.name })
    }

    /// The problems in an exported inventory (same rules as registration); empty when it is acceptable.
    public static func check(exported data: Data) throws -> [String] {
        problems(in: try JSONDecoder().decode([Dataset].self, from: data))
    }

    /// A Markdown table for review (one row per dataset).
    public static func markdown(_ datasets: [Dataset]) -> String {
        var lines = [
            "| dataset | purpose | kind | classification | account-bound | retention | backup | deleted on | role |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for dataset in datasets.sorted(by: { $0.name < $1.name }) {
            let role: String
            switch dataset.role {
            case .sourceOfTruth: role = "source of truth"
            case .cache(let source): role = "cache (rebuilt from \(source))"
            }
            let cells = [
                dataset.name, dataset.purpose, dataset.kind.rawValue, dataset.classification.rawValue,
                dataset.isAccountBound ? "yes" : "no", dataset.retention.map(\.description) ?? "—", dataset.backup.rawValue,
                dataset.deletionTriggers.sorted().map(\.rawValue).joined(separator: ", "), role,
            ]
            lines.append("| " + cells.map { $0.replacingOccurrences(of: "|", with: "\\|") }.joined(separator: " | ") + " |")
        }
        return lines.joined(separator: "\n") + "\n"
    }
}

/// An inventory problem.
public struct InventoryError: Error, Sendable, Equatable, CustomStringConvertible {
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }
        public var description: String { name }

        /// The declarations break the rules.
        public static let refused = Code("refused")
        /// The dataset is not declared.
        public static let undeclared = Code("undeclared")
        /// A reset was asked for a source of truth.
        public static let resetRefused = Code("resetRefused")
    }

    public let code: Code
    public let dataset: String?
    public let problems: [String]

    public var description: String { "inventory \(code): " + problems.joined(separator: "; ") }
}
