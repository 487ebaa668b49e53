public import Foundation
public import KeelCore

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
        guard problems.isEmpty else {
            throw InventoryError(
                code: .refused, dataset: nil, problems: problems,
                message: problems.map(\.description).joined(separator: "; "))
        }
        // No problems: in particular no name is declared twice.
        self.datasets = Dictionary(uniqueKeysWithValues: datasets.map { ($0.name, $0) })
    }

    /// The problems of `datasets` (the rules of registration: duplicate names, then each dataset's own
    /// problems, in order); empty when they make an acceptable inventory.
    public static func problems(in datasets: [Dataset]) -> [InventoryProblem] {
        var names: Set<String> = []
        var problems: [InventoryProblem] = []
        // SQLite compares table names without regard to ASCII case.
        var tables: [String: String] = [:]
        // So do vault tables (`records.<name>`) and, on Apple platforms, the file system a dataset's files
        // directory is on: `Notes` and `notes` would be one dataset, each overwriting and purging the other.
        var folded: [String: String] = [:]
        for dataset in datasets {
            if !names.insert(dataset.name).inserted {
                problems.append(
                    InventoryProblem(
                        code: .declaredTwice, dataset: dataset.name, field: "name", message: "declared twice"))
            } else if let other = folded[dataset.name.lowercased()] {
                problems.append(
                    InventoryProblem(
                        code: .declaredTwice, dataset: dataset.name, field: "name",
                        message: "\(dataset.name) and \(other) differ only in case: they would share storage"))
            } else {
                folded[dataset.name.lowercased()] = dataset.name
            }
            if let table = dataset.storage?.table {
                if let owner = tables[table.lowercased()], owner != dataset.name {
                    // One table, two declarations: resetting the one (a cache) or sweeping it by its retention
                    // would delete the other's rows, and table scopes could not keep them apart.
                    problems.append(
                        InventoryProblem(
                            code: .tableDeclaredTwice, dataset: dataset.name, field: "storage.table",
                            message: "table \(table) is also \(owner)'s; each dataset needs a table of its own"))
                } else {
                    tables[table.lowercased()] = dataset.name
                }
            }
            problems += dataset.problems
        }
        return problems
    }

    /// The declaration of `name`.
    ///
    /// - Throws: ``InventoryError`` `undeclared` — storing data nobody declared is an error.
    public func dataset(_ name: String) throws(InventoryError) -> Dataset {
        guard let dataset = datasets[name] else {
            throw InventoryError(
                code: .undeclared, dataset: name, problems: [], message: "\(name) is not declared in the data inventory"
            )
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
    public static func check(exported data: Data) throws -> [InventoryProblem] {
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
                dataset.isAccountBound ? "yes" : "no", dataset.retention.map(\.description) ?? "—",
                dataset.backup.rawValue,
                dataset.deletionTriggers.sorted().map(\.rawValue).joined(separator: ", "), role,
            ]
            lines.append(MarkdownTable.row(cells))
        }
        return lines.joined(separator: "\n") + "\n"
    }
}

/// Why the inventory refused something.
public struct InventoryError: KeelError, Equatable {
    /// Codes of ``InventoryError``.
    public typealias Code = ErrorCode<InventoryError>

    /// What was refused.
    public let code: Code
    /// The dataset concerned, when there is one.
    public let dataset: String?
    /// For ``ErrorCode/refused``: every rule the declarations break, each with its own code.
    public let problems: [InventoryProblem]
    /// A short explanation for developers.
    public let message: String

    /// A developer-facing explanation: the code and the message, e.g.
    /// `inventory undeclared: notes is not declared in the data inventory`.
    public var description: String { "inventory \(code): \(message)" }
}

/// One rule of registration that a dataset declaration breaks (MOB-DATA-001).
///
/// Tests and tools match ``code`` (and ``dataset``, ``field``), never the English ``message``.
public struct InventoryProblem: Sendable, Hashable, CustomStringConvertible {
    /// Codes of ``InventoryProblem``.
    public typealias Code = ErrorCode<InventoryProblem>

    /// The rule broken.
    public let code: Code
    /// The dataset's name as declared (may be empty: ``ErrorCode/missingName``).
    public let dataset: String
    /// The declaration field at fault (`backup`, `retention`, `deletionTriggers`, `storage`, `role`,
    /// `name`, `purpose`).
    public let field: String
    /// A short explanation for review.
    public let message: String

    /// A problem of `dataset`'s `field`.
    public init(code: Code, dataset: String, field: String, message: String) {
        self.code = code
        self.dataset = dataset
        self.field = field
        self.message = message
    }

    /// A developer-facing explanation: the message, prefixed with the dataset's name when it has one
    /// (`session-token: ...`); ``InventoryError`` joins these into its message.
    public var description: String { dataset.isEmpty ? message : "\(dataset): \(message)" }
}

extension ErrorCode where Domain == InventoryProblem {
    /// Two declarations share a name.
    public static var declaredTwice: Self { Self("declaredTwice") }
    /// Two datasets declare the same table.
    public static var tableDeclaredTwice: Self { Self("tableDeclaredTwice") }
    /// A dataset without a name.
    public static var missingName: Self { Self("missingName") }
    /// A name a vault cannot store the dataset under (a file and table name: `A–Z a–z 0–9 . _ -`, 1 to 128).
    public static var unusableName: Self { Self("unusableName") }
    /// The source of truth (credentials, drafts, queued or uncertain operations, user data) declared to be
    /// deleted when the app's version changes; only a cache may be (MOB-API-005, MOB-DATA-003).
    public static var deletedByAppVersion: Self { Self("deletedByAppVersion") }
    /// A dataset without a purpose.
    public static var missingPurpose: Self { Self("missingPurpose") }
    /// Sensitive data or credentials in transferable backups.
    public static var sensitiveInBackup: Self { Self("sensitiveInBackup") }
    /// Personal (or more sensitive) data without a retention.
    public static var missingRetention: Self { Self("missingRetention") }
    /// Account-bound personal data not deleted on account deletion.
    public static var notDeletedWithAccount: Self { Self("notDeletedWithAccount") }
    /// Account-bound sensitive data or credentials that sign-out or a revoked access would leave behind
    /// (MOB-DATA-002: logout, account deletion and access revocation delete them).
    public static var notDeletedOnSignOut: Self { Self("notDeletedOnSignOut") }
    /// Kept until an event, but no deletion trigger is declared.
    public static var missingDeletionTrigger: Self { Self("missingDeletionTrigger") }
    /// A retention duration that is zero or negative.
    public static var nonPositiveRetention: Self { Self("nonPositiveRetention") }
    /// A retention duration on data no sweep can reach: neither a table with a timestamp column nor records a
    /// vault or the shared cache stamps itself (see ``Dataset/retention``).
    public static var retentionNotSweepable: Self { Self("retentionNotSweepable") }
    /// A cache that does not say what rebuilds it.
    public static var cacheWithoutSource: Self { Self("cacheWithoutSource") }
}

extension ErrorCode where Domain == InventoryError {
    /// The declarations break the rules.
    public static var refused: Self { Self("refused") }
    /// The dataset is not declared.
    public static var undeclared: Self { Self("undeclared") }
    /// A statement run for a dataset touched a table the dataset does not declare (or changed the schema).
    public static var undeclaredTable: Self { Self("undeclaredTable") }
    /// A reset was asked for a source of truth.
    public static var resetRefused: Self { Self("resetRefused") }
    /// An app version that names nothing (blank, or longer than 256 bytes) was given to a version check.
    public static var invalidAppVersion: Self { Self("invalidAppVersion") }
}
