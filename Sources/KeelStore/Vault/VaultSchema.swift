public import Foundation
import KeelCore

/// The named, ordered migrations of the data an app keeps in its vaults (MOB-DATA-003, MOB-DATA-007).
///
/// A vault records the names of the migrations applied to it. ``Vaults/open(_:)`` runs the pending ones
/// (in order, each through the ``Vault`` API, before the vault is handed out) and refuses a vault that
/// this app cannot read:
/// - a vault that applied migrations this app does not know (restored from a newer app, or a newer app
///   was downgraded) is `schemaTooNew`: never migrated, never reset;
/// - a vault that has not applied a migration this app no longer carries (``retired``) is `schemaTooOld`.
///
/// ```swift
/// var schema = VaultSchema(retired: ["v1-notes-json"])          // shipped once, dropped since
/// schema.registerMigration("v2-notes-title") { vault in
///     try await vault.write("notes") { records in ... }           // idempotent: may run again after a crash
/// }
/// let vaults = try Vaults(dataDirectory: dir, keyStore: keys, inventory: inventory, schema: schema)
/// ```
///
/// A migration can span several transactions, so a crash can interrupt it: it is recorded as applied only
/// once it returns, and runs again at the next open. Write migrations that can run twice.
public struct VaultSchema: Sendable {
    /// The body of one migration: it reads and writes the vault before anything else can.
    public typealias Migration = @Sendable (Vault) async throws -> Void

    struct Step: Sendable {
        let name: String
        let body: Migration
    }

    private(set) var steps: [Step] = []

    /// Migrations this app shipped once and no longer carries: every vault it opens must have applied them.
    public let retired: [String]

    /// A schema with no migrations yet; `retired` names migrations an earlier version shipped and this one
    /// dropped.
    public init(retired: [String] = []) {
        precondition(Set(retired).count == retired.count, "retired vault migrations are listed twice")
        self.retired = retired
    }

    /// Registers a migration. Names are unique and permanent: never rename or reorder a shipped one.
    public mutating func registerMigration(_ name: String, _ body: @escaping Migration) {
        precondition(!name.isEmpty, "a vault migration needs a name")
        precondition(
            !steps.contains { $0.name == name } && !retired.contains(name),
            "the vault migration \(name) is registered twice")
        steps.append(Step(name: name, body: body))
    }

    /// The registered migrations' names, in order.
    public var names: [String] { steps.map(\.name) }

    /// The names only: what the restore inspector and `keel vault inspect` compare a vault against.
    public var summary: Summary { Summary(migrations: names, retired: retired) }

    /// A schema's migration names, without their bodies: exported by the app (``export()``) for
    /// `keel vault inspect --schema`, and what a ``RestoreInspector`` compares vaults with.
    public struct Summary: Sendable, Codable, Equatable {
        /// The migrations the app carries, in order.
        public var migrations: [String]
        /// The migrations the app no longer carries; a vault must have applied them.
        public var retired: [String]

        /// A summary of these names.
        public init(migrations: [String], retired: [String] = []) {
            self.migrations = migrations
            self.retired = retired
        }

        private enum CodingKeys: String, CodingKey, CaseIterable { case migrations, retired }

        /// Reads the JSON object ``export()`` writes: `migrations` and `retired` (absent: none). An unknown
        /// member is refused — a misspelt `retired` would read as none, and vaults would be judged against
        /// another schema.
        ///
        /// - Throws: `DecodingError` for a missing `migrations`, a wrong type or an unknown member.
        public init(from decoder: any Decoder) throws {
            try JSONMemberKey.refuseUnknown(in: decoder, allowed: CodingKeys.allCases.map(\.rawValue))
            let container = try decoder.container(keyedBy: CodingKeys.self)
            self.init(
                migrations: try container.decode([String].self, forKey: .migrations),
                retired: try container.decodeIfPresent([String].self, forKey: .retired) ?? [])
        }

        /// Where a vault that applied `applied` stands against this schema.
        public func state(ofApplied applied: [String]) -> State {
            let known = Set(migrations).union(retired)
            let unknown = applied.filter { !known.contains($0) }
            if !unknown.isEmpty { return .tooNew(unknown: unknown) }
            let done = Set(applied)
            let missing = retired.filter { !done.contains($0) }
            if !missing.isEmpty { return .tooOld(missing: missing) }
            let pending = migrations.filter { !done.contains($0) }
            // Pending ones come after every applied one: a migration inserted before migrations this vault
            // already ran would run after them here, in another order than on a new install.
            if let lastApplied = migrations.lastIndex(where: done.contains) {
                let outOfOrder = migrations[..<lastApplied].filter { !done.contains($0) }
                if !outOfOrder.isEmpty { return .inconsistent(outOfOrder: outOfOrder) }
            }
            return pending.isEmpty ? .upToDate : .pending(pending)
        }

        /// Everything a new vault counts as applied: it starts at the current schema.
        var everything: [String] { retired + migrations }
    }

    /// Where a vault stands against a schema.
    public enum State: Sendable, Equatable {
        /// Every migration is applied.
        case upToDate
        /// These migrations are pending, in order: opening the vault runs them.
        case pending([String])
        /// The vault applied migrations this app does not know: a newer app wrote it.
        case tooNew(unknown: [String])
        /// The vault misses migrations this app no longer carries: it is older than this app supports.
        case tooOld(missing: [String])
        /// These migrations are registered before migrations the vault already applied (inserted into a
        /// shipped list, or reordered): running them now would apply them in another order than a new
        /// install does. A mistake in the app, refused rather than guessed at.
        case inconsistent(outOfOrder: [String])
    }

    /// The summary as JSON (`{"migrations": [...], "retired": [...]}`), for `keel vault inspect --schema`.
    public func export() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        return try encoder.encode(summary)
    }
}
