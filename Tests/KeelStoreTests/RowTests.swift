import Foundation
import KeelStore
import KeelTesting
import Testing

/// Row tells a missing column, a NULL and a type mismatch apart; Date columns round-trip.
@Suite struct RowTests {
    let directory: TemporaryDirectory
    let pool: DatabasePool

    init() throws {
        directory = try TemporaryDirectory()
        pool = try DatabasePool(path: directory.url("rows.sqlite").path)
    }

    private func row(_ sql: String) async throws -> Row {
        try await pool.read { db in try #require(try db.rows(sql).first) }
    }

    @Test func decodeTellsTheThreeFailuresApart() async throws {
        let row = try await row("SELECT 'a' AS title, NULL AS body, 7 AS count")
        #expect(try row.decode("title", as: String.self) == "a")
        #expect(try row.decode("count", as: Int.self) == 7)
        #expect(try row.decode("body", as: String?.self) == nil)  // NULL where NULL is allowed
        #expect(throws: DatabaseError.self) { try row.decode("tittle", as: String.self) }
        do {
            _ = try row.decode("tittle", as: String?.self)
            Issue.record("a missing column must throw even for an optional")
        } catch { #expect(error.code == .missingColumn) }
        do {
            _ = try row.decode("body", as: String.self)
            Issue.record("NULL for a non-optional must throw")
        } catch { #expect(error.code == .unexpectedNull) }
        do {
            _ = try row.decode("title", as: Int.self)
            Issue.record("text for an Int must throw")
        } catch { #expect(error.code == .mismatch) }
        // The convenience accessor folds all three into nil.
        #expect(row.get("tittle", as: String.self) == nil && row.get("body", as: String.self) == nil)
    }

    @Test func datesAreStoredAsSecondsSince1970() async throws {
        let date = Date(timeIntervalSince1970: 1_796_126_400.25)
        try await pool.write { db in
            try db.execute("CREATE TABLE event (at REAL NOT NULL, whole INTEGER NOT NULL)")
            try db.execute("INSERT INTO event VALUES (?, ?)", arguments: [date, 1_796_126_400])
        }
        let row = try await row("SELECT at, whole, typeof(at) AS kind FROM event")
        #expect(try row.decode("at", as: Date.self) == date)
        #expect(try row.decode("whole", as: Date.self) == Date(timeIntervalSince1970: 1_796_126_400))
        #expect(try row.decode("kind", as: String.self) == "real")
    }

    @Test func migrationStateIsAvailableWithoutBlocking() async throws {
        var migrator = Migrator()
        migrator.registerMigration("v1") { db in try db.execute("CREATE TABLE t (x)") }
        #expect(try await migrator.state(of: pool) == .pending(["v1"], resumingFrom: nil))
        try await migrator.migrate(pool)
        #expect(try await migrator.state(of: pool) == .upToDate)
    }

    /// A one-argument query takes its own path (the point read by key): it checks the count and binds every
    /// kind of value as the general path does.
    /// One read of every kind of value with one argument: through the array form, or without an array.
    private static func singleArgumentReads(_ db: Database, arrayless: Bool) throws -> SingleArgumentReads {
        func read<T: DatabaseValueConvertible>(_ type: T.Type, _ sql: String, _ argument: some DatabaseValueConvertible)
            throws -> T?
        {
            arrayless ? try db.scalar(type, sql, argument: argument) : try db.scalar(type, sql, arguments: [argument])
        }
        return (
            try read(Int.self, "SELECT ? + 1", 41), try read(String.self, "SELECT ? || '!'", "a\u{0}b"),
            try read(Data.self, "SELECT ?", Data([0, 1, 2])), try read(Double.self, "SELECT ? * 2", 1.25),
            try read(Int.self, "SELECT ?", String?.none)
        )
    }

    private typealias SingleArgumentReads = (Int?, String?, Data?, Double?, Int?)

    @Test func aSingleArgumentIsBoundAndCheckedLikeAnyOther() async throws {
        let read = try await pool.read { db in try Self.singleArgumentReads(db, arrayless: false) }
        #expect(read.0 == 42 && read.1 == "a\u{0}b!" && read.2 == Data([0, 1, 2]) && read.3 == 2.5 && read.4 == nil)
        let refused = try await pool.read { db -> [DatabaseError.Code?] in
            var codes: [DatabaseError.Code?] = []
            for sql in ["SELECT ? + ?", "SELECT 1"] {
                do {
                    _ = try db.scalar(Int.self, sql, arguments: [1])
                    codes.append(nil)
                } catch { codes.append((error as? DatabaseError)?.code) }
            }
            return codes
        }
        #expect(refused == [.sqlError, .sqlError])  // one argument for two placeholders, and for none
        // The same statement, read again with another argument, holds none of the previous one.
        #expect(try await pool.read { db in try db.scalar(Int.self, "SELECT ? + 1", arguments: [1]) } == 2)
    }

    /// ``Database/scalar(_:_:argument:)`` — the point read without an argument array — reads what the array
    /// form reads, for every kind of value, and refuses the same mistakes with the same codes.
    @Test func theArraylessPointReadMatchesTheArrayForm() async throws {
        let read = try await pool.read { db in try Self.singleArgumentReads(db, arrayless: true) }
        #expect(read.0 == 42 && read.1 == "a\u{0}b!" && read.2 == Data([0, 1, 2]) && read.3 == 2.5 && read.4 == nil)
        // And what the array form reads, value for value.
        let viaArray = try await pool.read { db in try Self.singleArgumentReads(db, arrayless: false) }
        #expect(
            read.0 == viaArray.0 && read.1 == viaArray.1 && read.2 == viaArray.2 && read.3 == viaArray.3
                && read.4 == viaArray.4)
        let refused = try await pool.read { db -> [DatabaseError.Code?] in
            var codes: [DatabaseError.Code?] = []
            for (sql, argument) in [("SELECT ? + ?", 1), ("SELECT 1", 1)] {
                do {
                    _ = try db.scalar(Int.self, sql, argument: argument)
                    codes.append(nil)
                } catch { codes.append((error as? DatabaseError)?.code) }
            }
            do {
                _ = try db.scalar(Int.self, "SELECT ?", argument: "not a number")
                codes.append(nil)
            } catch { codes.append((error as? DatabaseError)?.code) }
            return codes
        }
        #expect(refused == [.sqlError, .sqlError, .mismatch])
        // Bytes take a path of their own: NULL, no row, an empty blob and values that are not blobs come out
        // as through the array form, errors with the same code and message.
        let blobs = try await pool.read { db -> [String] in
            var outcomes: [String] = []
            for (sql, argument) in [
                ("SELECT ?", DatabaseValue.blob(Data([7, 8]))), ("SELECT ?", .null), ("SELECT ? WHERE 0", .integer(1)),
                ("SELECT zeroblob(?)", .integer(0)), ("SELECT ?", .integer(5)), ("SELECT ?", .text("bytes?")),
                ("SELECT ?", .real(0.5)),
            ] {
                func outcome(_ read: () throws -> Data?) -> String {
                    do { return try read().map { "bytes \(Array($0))" } ?? "nil" } catch {
                        return
                            "\((error as? DatabaseError)?.code.name ?? "?"): \((error as? DatabaseError)?.message ?? "")"
                    }
                }
                let arrayless = outcome { try db.scalar(Data.self, sql, argument: argument) }
                let array = outcome { try db.scalar(Data.self, sql, arguments: [argument]) }
                outcomes.append(arrayless == array ? arrayless : "differs: \(arrayless) / \(array)")
            }
            return outcomes
        }
        #expect(
            blobs == [
                "bytes [7, 8]", "nil", "nil", "bytes []", "mismatch: 5 is not a Data",
                #"mismatch: "bytes?" is not a Data"#, "mismatch: 0.5 is not a Data",
            ])
        // The cached statement is reset and bound afresh on each read: the second key reads its own row.
        let rows = try await pool.read { db in
            (
                try db.scalar(String.self, "SELECT ? || ''", argument: "first"),
                try db.scalar(String.self, "SELECT ? || ''", argument: "second")
            )
        }
        #expect(rows.0 == "first" && rows.1 == "second")
    }
}
