import KeelCore

/// One persisted dataset, declared once with everything MOB-DATA-001 asks: purpose, classification,
/// retention, backup policy, deletion triggers, and whether it is a cache or the source of truth.
public struct Dataset: Sendable, Hashable, Codable {
    /// How sensitive the data is.
    public enum Classification: String, Sendable, Codable, CaseIterable, Comparable {
        case `public`, `internal`, personal, sensitive, credential

        /// Orders from least to most sensitive, by declaration order: `public` < `internal` < `personal` <
        /// `sensitive` < `credential`.
        public static func < (lhs: Classification, rhs: Classification) -> Bool {
            allCases.firstIndex(of: lhs)! < allCases.firstIndex(of: rhs)!
        }
    }

    /// What kind of storage holds it.
    public enum Kind: String, Sendable, Codable, CaseIterable {
        case table, file, keyValue, cache, mediaDirectory, draft, queue, snapshot
    }

    /// Whether platform backups may carry it.
    public enum BackupPolicy: String, Sendable, Codable, CaseIterable {
        /// Backed up and restorable on a new device.
        case include
        /// Never backed up.
        case exclude
        /// Backed up only to this device (not transferable to a new device).
        case deviceOnly
    }

    /// What deletes it.
    public enum DeletionTrigger: String, Sendable, Codable, CaseIterable, Comparable {
        case logout, accountDeletion, accessRevocation, retentionExpiry, appVersionChange

        /// Orders by declaration order (`logout` first, `appVersionChange` last), so sorted triggers always
        /// export and print the same way.
        public static func < (lhs: DeletionTrigger, rhs: DeletionTrigger) -> Bool {
            allCases.firstIndex(of: lhs)! < allCases.firstIndex(of: rhs)!
        }
    }

    /// How long it is kept.
    public enum Retention: Sendable, Hashable, Codable {
        /// Records older than this are swept (whole seconds count; exported as a number of seconds).
        case duration(Duration)
        /// Kept until one of its deletion triggers happens.
        case untilEvent
    }

    /// Whether deleting it loses information.
    public enum Role: Sendable, Hashable, Codable {
        /// The only copy: never reset, never deleted except by its triggers.
        case sourceOfTruth
        /// Rebuildable from the named source (the backend, another dataset): may be reset at any time.
        case cache(rebuiltFrom: String)

        /// Whether it is a cache.
        public var isCache: Bool {
            if case .cache = self { return true }
            return false
        }
    }

    /// Where a table's records live and which column stamps them, for retention sweeps.
    ///
    /// A dataset kept in an account's ``Vault`` or in the ``SharedCache`` lives in the store's own table
    /// (`records.<name>`, stamped at each write): their sweeps use that, whatever table is declared here, so
    /// such a dataset declares no storage, also when its retention is a duration.
    public struct TableStorage: Sendable, Hashable, Codable {
        /// The table holding the dataset's records: the only one ``DataStore`` lets its statements touch.
        public var table: String
        /// A column holding the record's time as seconds since 1970 (sweeps compare it with the clock).
        public var timestampColumn: String?
        /// Records in `table`, stamped by `timestampColumn` when retention sweeps must reach them.
        public init(table: String, timestampColumn: String? = nil) {
            self.table = table
            self.timestampColumn = timestampColumn
        }
    }

    /// The name the store and the inventory know the dataset by; must be non-empty and unique in the
    /// inventory.
    public var name: String
    /// Why the app keeps this data, in words for review; must be non-empty.
    public var purpose: String
    /// What kind of storage holds it (a table by default).
    public var kind: Kind
    /// How sensitive it is: `personal` and above need a retention; `sensitive` and above may not be in
    /// transferable backups.
    public var classification: Classification
    /// Whether it belongs to the signed-in account: account-bound `personal` (or more sensitive) data must
    /// list `accountDeletion` among its deletion triggers.
    public var isAccountBound: Bool
    /// How long it is kept; may be nil only below `personal`. A duration needs something to sweep it: ``storage``
    /// with a timestamp column (a ``DataStore`` table), or no storage at all for records an account's ``Vault``
    /// (account-bound) or the ``SharedCache`` (public, of no account) keeps and stamps itself. Files and media
    /// directories are never swept.
    public var retention: Retention?
    /// Whether platform backups may carry it (`include` is refused for `sensitive` and `credential` data).
    public var backup: BackupPolicy
    /// The events that delete it; at least one is needed when retention is `untilEvent`.
    public var deletionTriggers: Set<DeletionTrigger>
    /// Whether it is the source of truth or a cache that ``DataStore/resetCache(_:)`` may empty.
    public var role: Role
    /// For table datasets: the table (and timestamp column) the store and the sweeper act on.
    public var storage: TableStorage?

    /// Declares a dataset. Nothing is checked here: an ``Inventory`` refuses a declaration with ``problems``
    /// when it registers it.
    public init(
        name: String, purpose: String, kind: Kind = .table, classification: Classification, isAccountBound: Bool,
        retention: Retention?, backup: BackupPolicy, deletionTriggers: Set<DeletionTrigger>, role: Role,
        storage: TableStorage? = nil
    ) {
        self.name = name
        self.purpose = purpose
        self.kind = kind
        self.classification = classification
        self.isAccountBound = isAccountBound
        self.retention = retention
        self.backup = backup
        self.deletionTriggers = deletionTriggers
        self.role = role
        self.storage = storage
    }

    /// Whether the store that keeps this dataset stamps and sweeps its records by itself, with no table declared:
    /// an account-bound dataset lives in an account's ``Vault`` (the only store that admits it without a table),
    /// a public one of no account in the ``SharedCache``; both stamp each record when it is put and sweep by
    /// that (``Vault/sweepExpired(now:)``, ``SharedCache/sweepExpired(now:)``). Files and media directories
    /// are not records: nothing sweeps them. A dataset that declares a table is the ``DataStore``'s, which
    /// sweeps only by the table's declared timestamp column.
    var isSweptByItsStore: Bool {
        guard storage == nil, kind != .file, kind != .mediaDirectory else { return false }
        return isAccountBound || classification == .public
    }

    /// What is wrong with this declaration (empty when it is acceptable). The standard allows no
    /// exceptions for sensitive data, so these are refusals, not warnings.
    public var problems: [InventoryProblem] {
        var problems: [InventoryProblem] = []
        func problem(_ code: InventoryProblem.Code, _ field: String, _ message: String) {
            problems.append(InventoryProblem(code: code, dataset: name, field: field, message: message))
        }
        // Blank is blank with line breaks too (found in an outside audit: a name of "\n" passed).
        if name.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty {
            problem(.missingName, "name", "a dataset needs a name")
        } else if !VaultFiles.isSafeComponent(name) {
            // What a vault can store it under (a file and table name): found in an outside audit, `my notes` or
            // `a/b` passed the check, and every vault then refused the dataset at its first use.
            problem(
                .unusableName, "name",
                "\(name.debugDescription) cannot name a dataset: 1 to 128 of A–Z, a–z, 0–9, '.', '_', '-', not starting with '.'"
            )
        }
        if purpose.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty {
            problem(.missingPurpose, "purpose", "a dataset needs a purpose")
        }
        if classification >= .sensitive, backup == .include {
            problem(
                .sensitiveInBackup, "backup",
                "\(classification.rawValue) data may not be in transferable backups (backup must be exclude or deviceOnly)"
            )
        }
        if classification >= .personal, retention == nil {
            problem(
                .missingRetention, "retention",
                "\(classification.rawValue) data needs a retention (a duration or until an event)")
        }
        if classification >= .personal, isAccountBound, !deletionTriggers.contains(.accountDeletion) {
            problem(
                .notDeletedWithAccount, "deletionTriggers",
                "account-bound \(classification.rawValue) data must be deleted on account deletion")
        }
        // MOB-DATA-002: logout, account deletion and access revocation delete credentials and protected data.
        let signOut: Set<DeletionTrigger> = [.logout, .accessRevocation]
        if classification >= .sensitive, isAccountBound, !signOut.isSubset(of: deletionTriggers) {
            problem(
                .notDeletedOnSignOut, "deletionTriggers",
                "account-bound \(classification.rawValue) data must be deleted on logout and on access revocation (missing: \(signOut.subtracting(deletionTriggers).sorted().map(\.rawValue).joined(separator: ", ")))"
            )
        }
        if retention == .untilEvent, deletionTriggers.isEmpty {
            problem(
                .missingDeletionTrigger, "deletionTriggers", "kept until an event, but no deletion trigger is declared")
        } else if retention == .untilEvent, deletionTriggers == [.retentionExpiry] {
            // Retention expiry needs a duration to expire by: with "until event" and no other event, the data is
            // never deleted (found in an outside audit).
            problem(
                .missingDeletionTrigger, "deletionTriggers",
                "kept until an event, but its only event is retention expiry, which needs a duration: it is never deleted"
            )
        }
        if case .duration(let duration) = retention {
            if duration.components.seconds <= 0 {
                problem(.nonPositiveRetention, "retention", "retention must be positive")
            }
            // Only records with a time can be swept; anything else would silently never expire. A table the app
            // declares (``DataStore``) needs its timestamp column; a dataset declared without one is kept by a
            // store that stamps each record itself: an account's ``Vault`` (account-bound) or the ``SharedCache``
            // (public, of no account) — but only as records: their files are never swept.
            if storage?.timestampColumn == nil, !isSweptByItsStore {
                problem(
                    .retentionNotSweepable, "storage",
                    "a retention duration needs table storage with a timestamp column to sweep")
            }
        }
        // MOB-API-005: an update must not delete credentials, drafts or the record of an operation whose result
        // is not known merely because the app's version changed; what an update cannot carry over gets an
        // explicit safe result through a migration (MOB-DATA-003). Only a cache may go with the version.
        if deletionTriggers.contains(.appVersionChange), !role.isCache {
            problem(
                .deletedByAppVersion, "deletionTriggers",
                "the source of truth may not be deleted because the app's version changed (only a cache may): migrate it, and give what an update cannot carry over an explicit safe result"
            )
        }
        if case .cache(let source) = role, source.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty {
            problem(.cacheWithoutSource, "role", "a cache must say what rebuilds it")
        }
        return problems
    }
}

extension Dataset.Retention: CustomStringConvertible {
    /// The retention for review tables: `30 days`, `12 hours`, `90 s` or `until event`.
    public var description: String {
        switch self {
        case .untilEvent: return "until event"
        case .duration(let duration):
            let seconds = duration.components.seconds
            return seconds % 86_400 == 0
                ? "\(seconds / 86_400) days" : seconds % 3600 == 0 ? "\(seconds / 3600) hours" : "\(seconds) s"
        }
    }
}

// MARK: - A stable, hand-writable JSON form (for `Inventory.export()` and `keel inventory`)

extension Dataset.Retention {
    // `86400` (seconds) or `"untilEvent"`.
    /// Reads the hand-writable JSON form: a whole number of seconds (`86400`) for a duration, or the string
    /// `"untilEvent"`.
    ///
    /// - Throws: `DecodingError.dataCorrupted` for any other string; a `DecodingError` for any other value.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let seconds = try? container.decode(Int64.self) {
            self = .duration(.seconds(seconds))
        } else if (try? container.decode(String.self)) == "untilEvent" {
            self = .untilEvent
        } else {
            // A fraction or a number beyond Int64 is no count of seconds; saying "expected a String" (the
            // decoder's own text, from the second try) would point away from it.
            throw DecodingError.dataCorruptedError(
                in: container, debugDescription: "retention is a whole number of seconds or \"untilEvent\"")
        }
    }

    /// Writes the JSON form ``init(from:)`` reads: a duration as its whole seconds (a number; any fraction of
    /// a second is dropped), `untilEvent` as the string `"untilEvent"`.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .duration(let duration): try container.encode(duration.components.seconds)
        case .untilEvent: try container.encode("untilEvent")
        }
    }
}

extension Dataset.Role {
    // `"sourceOfTruth"` or `{"cacheRebuiltFrom": "GET /feed"}`.
    private enum Keys: String, CodingKey { case cacheRebuiltFrom }

    /// Reads the hand-writable JSON form: the string `"sourceOfTruth"`, or `{"cacheRebuiltFrom": source}` for
    /// a cache rebuilt from `source` (e.g. `"GET /feed"`).
    ///
    /// - Throws: `DecodingError.dataCorrupted` for any other string; a `DecodingError` for an object without
    ///   a string `cacheRebuiltFrom` or with another member, or for any other value.
    public init(from decoder: any Decoder) throws {
        if let single = try? decoder.singleValueContainer(), let text = try? single.decode(String.self) {
            guard text == "sourceOfTruth" else {
                throw DecodingError.dataCorruptedError(
                    in: single, debugDescription: "role is \"sourceOfTruth\" or {\"cacheRebuiltFrom\": ...}")
            }
            self = .sourceOfTruth
            return
        }
        // Hand-written like the rest of the inventory: an unknown member is refused, not ignored.
        try JSONMemberKey.refuseUnknown(in: decoder, allowed: [Keys.cacheRebuiltFrom.rawValue])
        let container = try decoder.container(keyedBy: Keys.self)
        self = .cache(rebuiltFrom: try container.decode(String.self, forKey: .cacheRebuiltFrom))
    }

    /// Writes the JSON form ``init(from:)`` reads: `"sourceOfTruth"`, or `{"cacheRebuiltFrom": source}` for a
    /// cache.
    public func encode(to encoder: any Encoder) throws {
        switch self {
        case .sourceOfTruth:
            var container = encoder.singleValueContainer()
            try container.encode("sourceOfTruth")
        case .cache(let source):
            var container = encoder.container(keyedBy: Keys.self)
            try container.encode(source, forKey: .cacheRebuiltFrom)
        }
    }
}

extension Dataset.TableStorage {
    private enum CodingKeys: String, CodingKey, CaseIterable { case table, timestampColumn }

    /// Reads `{"table": ..., "timestampColumn": ...}`; an unknown member is refused (a misspelt
    /// `timestampColumn` would read as none).
    ///
    /// - Throws: `DecodingError` for a missing `table`, a wrong type or an unknown member.
    public init(from decoder: any Decoder) throws {
        try JSONMemberKey.refuseUnknown(in: decoder, allowed: CodingKeys.allCases.map(\.rawValue))
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            table: try container.decode(String.self, forKey: .table),
            timestampColumn: try container.decodeIfPresent(String.self, forKey: .timestampColumn))
    }
}

extension Dataset {
    private enum CodingKeys: String, CodingKey, CaseIterable {
        case name, purpose, kind, classification, isAccountBound, retention, backup, deletionTriggers, role, storage
    }

    /// Reads the JSON object ``encode(to:)`` writes. The file is hand-writable, so an unknown member is
    /// refused rather than ignored: a misspelt `retention` would otherwise read as no retention, and the
    /// checks would judge a dataset other than the one written.
    ///
    /// - Throws: `DecodingError` for a missing required member, a wrong type, an unknown raw value or an
    ///   unknown member.
    public init(from decoder: any Decoder) throws {
        try JSONMemberKey.refuseUnknown(in: decoder, allowed: CodingKeys.allCases.map(\.rawValue))
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            name: try container.decode(String.self, forKey: .name),
            purpose: try container.decode(String.self, forKey: .purpose),
            kind: try container.decode(Kind.self, forKey: .kind),
            classification: try container.decode(Classification.self, forKey: .classification),
            isAccountBound: try container.decode(Bool.self, forKey: .isAccountBound),
            retention: try container.decodeIfPresent(Retention.self, forKey: .retention),
            backup: try container.decode(BackupPolicy.self, forKey: .backup),
            deletionTriggers: try container.decode(Set<DeletionTrigger>.self, forKey: .deletionTriggers),
            role: try container.decode(Role.self, forKey: .role),
            storage: try container.decodeIfPresent(TableStorage.self, forKey: .storage))
    }

    // Deletion triggers are written sorted: the same inventory always exports the same bytes.
    /// Writes the dataset as a JSON object with one key per field (`retention` and `storage` left out when
    /// nil), the enums as their raw values, `retention` and `role` in their hand-writable forms, and
    /// `deletionTriggers` as an array in declaration order.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(name, forKey: .name)
        try container.encode(purpose, forKey: .purpose)
        try container.encode(kind, forKey: .kind)
        try container.encode(classification, forKey: .classification)
        try container.encode(isAccountBound, forKey: .isAccountBound)
        try container.encodeIfPresent(retention, forKey: .retention)
        try container.encode(backup, forKey: .backup)
        try container.encode(deletionTriggers.sorted(), forKey: .deletionTriggers)
        try container.encode(role, forKey: .role)
        try container.encodeIfPresent(storage, forKey: .storage)
    }
}
