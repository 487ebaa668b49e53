import Foundation
import KeelStore
import KeelStoreFixtures
import KeelTesting
import Testing

/// MOB-DATA-003 (DATA-003.1), migration tests from every supported version — from databases as those versions
/// left them, frozen in `Tests/Fixtures/notes-schema/v1.sql` … `v4.sql` when they shipped, not rebuilt by
/// today's code: a shipped migration edited later (a column renamed in v2, a step dropped) changes what today's
/// code builds, and these fail instead of migrating a history that never existed (found in a conformance
/// audit: the "old versions" were made by the current migrator).
///
/// `KEEL_FREEZE_SCHEMA=1 swift test --filter FrozenSchemaTests` writes the files when a new version ships.
@Suite(.timeLimit(.minutes(1))) struct FrozenSchemaTests {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/notes-schema")
    static let rows = 12
    let temporary: TemporaryDirectory
    init() throws { temporary = try TemporaryDirectory(prefix: "keel-frozen") }

    /// Every table and index of `pool` as SQL that rebuilds it: schema in name order, rows in rowid order.
    static func dump(_ pool: DatabasePool) throws -> String {
        try pool.readSync { db in
            var text = ""
            let objects = try db.rows(
                "SELECT type, name, sql FROM sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%' ORDER BY type DESC, name"
            )
            for object in objects {
                let sql: String = try object.decode("sql")
                text += sql + ";\n"
                guard try object.decode("type") == "table" else { continue }
                let name: String = try object.decode("name")
                let quoted = "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\""
                for row in try db.rows("SELECT * FROM \(quoted) ORDER BY rowid") {
                    let values = row.values.map { value -> String in
                        switch value {
                        case .null: "NULL"
                        case .integer(let number): String(number)
                        case .real(let number): String(number)
                        case .text(let string): "'" + string.replacingOccurrences(of: "'", with: "''") + "'"
                        case .blob(let data): "X'" + data.map { String(format: "%02X", $0) }.joined() + "'"
                        }
                    }
                    text +=
                        "INSERT INTO \(quoted) (\(row.columns.joined(separator: ", "))) VALUES (\(values.joined(separator: ", ")));\n"
                }
            }
            return text
        }
    }

    static func frozen(_ version: Int) -> URL { directory.appendingPathComponent("v\(version).sql") }

    @Test(arguments: 1...NotesSchema.versions.count)
    func todaysShippedMigrationsStillBuildTheFrozenDatabase(version: Int) throws {
        let pool = try DatabasePool(path: temporary.url("v\(version).sqlite").path)
        try NotesSchema.seed(pool, version: version, rows: Self.rows)
        let built = try Self.dump(pool)
        if ProcessInfo.processInfo.environment["KEEL_FREEZE_SCHEMA"] == "1",
            !FileManager.default.fileExists(atPath: Self.frozen(version).path)
        {
            try FileManager.default.createDirectory(at: Self.directory, withIntermediateDirectories: true)
            try Data(built.utf8).write(to: Self.frozen(version))
        }
        let frozen = try String(contentsOf: Self.frozen(version), encoding: .utf8)
        #expect(built == frozen, "v\(version) as today's migrations build it differs from the one that shipped")
    }

    @Test(arguments: 1...NotesSchema.versions.count)
    func aFrozenDatabaseOfEveryShippedVersionMigratesToTheLatestKeepingAllData(version: Int) throws {
        let pool = try DatabasePool(path: temporary.url("frozen-v\(version).sqlite").path)
        try pool.writeSync { db in try db.executeScript(try String(contentsOf: Self.frozen(version), encoding: .utf8)) }
        #expect(try NotesSchema.invariantViolations(pool, rows: Self.rows).isEmpty)
        let report = try NotesSchema.migrator(batchSize: 5).migrate(pool)
        #expect(report.applied == Array(NotesSchema.versions.dropFirst(version)))
        #expect(try NotesSchema.migrator().state(of: pool) == .upToDate)
        #expect(try NotesSchema.invariantViolations(pool, rows: Self.rows).isEmpty)
        #expect(try pool.readSync { try $0.scalar(Int.self, "SELECT count(*) FROM note WHERE title_key IS NULL") } == 0)
    }
}
