import CSQLite

/// The tables one dataset's statements may touch, enforced by SQLite's authorizer while each statement is
/// prepared (triggers included: their statements are prepared with the statement that fires them).
///
/// Allowed: reading and writing the declared tables, SQLite's own tables (`sqlite_*`), transactions,
/// savepoints and functions. Everything else is denied and recorded: another table, schema changes
/// (they belong in migrations), pragmas and attached databases.
final class TableAccess {
    /// The dataset's name (also the statement-cache partition).
    let scope: String
    /// Lower-cased table names (SQLite compares them case-insensitively).
    let tables: Set<String>
    /// What was denied, in order: the table, or the action when it names none.
    private(set) var denials: [String] = []

    init(scope: String, tables: [String]) {
        self.scope = scope
        self.tables = Set(tables.map { $0.lowercased() })
    }

    /// Whether the action SQLite is about to authorize is allowed; records it when not.
    func authorize(action: Int32, first: String?, second: String?) -> Bool {
        let table: String?
        switch action {
        case SQLITE_READ, SQLITE_INSERT, SQLITE_UPDATE, SQLITE_DELETE:
            table = first
        case SQLITE_SELECT, SQLITE_TRANSACTION, SQLITE_SAVEPOINT, SQLITE_FUNCTION, SQLITE_RECURSIVE:
            return true
        default:
            denials.append(Self.actionNames[action] ?? "action \(action)")
            return false
        }
        guard let table else { return true }
        let name = table.lowercased()
        if name.hasPrefix("sqlite_") || tables.contains(name) { return true }
        denials.append(table)
        return false
    }

    private static let actionNames: [Int32: String] = [
        SQLITE_CREATE_INDEX: "CREATE INDEX", SQLITE_CREATE_TABLE: "CREATE TABLE",
        SQLITE_CREATE_TRIGGER: "CREATE TRIGGER",
        SQLITE_CREATE_VIEW: "CREATE VIEW", SQLITE_DROP_INDEX: "DROP INDEX", SQLITE_DROP_TABLE: "DROP TABLE",
        SQLITE_DROP_TRIGGER: "DROP TRIGGER", SQLITE_DROP_VIEW: "DROP VIEW", SQLITE_PRAGMA: "PRAGMA",
        SQLITE_ATTACH: "ATTACH",
        SQLITE_DETACH: "DETACH", SQLITE_ALTER_TABLE: "ALTER TABLE", SQLITE_ANALYZE: "ANALYZE",
        SQLITE_CREATE_TEMP_TABLE: "CREATE TEMP TABLE", SQLITE_CREATE_TEMP_VIEW: "CREATE TEMP VIEW",
        SQLITE_CREATE_TEMP_TRIGGER: "CREATE TEMP TRIGGER", SQLITE_CREATE_VTABLE: "CREATE VIRTUAL TABLE",
    ]
}
