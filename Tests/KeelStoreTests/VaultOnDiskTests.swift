import Foundation
import KeelCore
import KeelTesting
import Testing

@testable import KeelStore

/// Found in an outside audit: only the retention sweep turned `secure_delete` on, and only for its own
/// deletes. Where SQLite's build leaves it off (upstream's default; Debian's build turns it on, which hid
/// this here), an earlier version of a replaced record stayed in the file — still under its live key.
@Suite(.timeLimit(.minutes(1))) struct SecureDeleteTests {
    let directory: TemporaryDirectory
    init() throws { directory = try TemporaryDirectory(prefix: "keel-secure-delete") }

    /// Whether `marker` is in the bytes of the database `file` after a record holding it was replaced.
    func replacedBytesRemain(secureDelete: Bool, file: String) async throws -> Bool {
        let pool = try DatabasePool(path: file, configuration: DatabaseConfiguration(secureDelete: secureDelete))
        let old = String(repeating: "OLDVERSION-MARKER-", count: 8)
        try await pool.writeWithoutTransaction { db in
            try db.execute(
                "CREATE TABLE t (id TEXT PRIMARY KEY NOT NULL, value BLOB NOT NULL, updated_at REAL NOT NULL) WITHOUT ROWID"
            )
            try db.execute("INSERT OR REPLACE INTO t VALUES ('a', ?, 0)", arguments: [Data(old.utf8)])
            try db.execute("INSERT OR REPLACE INTO t VALUES ('a', ?, 1)", arguments: [Data("new".utf8)])
            _ = try db.rows("PRAGMA wal_checkpoint(TRUNCATE)")
        }
        await pool.close()
        let bytes = try Data(contentsOf: URL(fileURLWithPath: file))
        return bytes.range(of: Data("OLDVERSION-MARKER-".utf8)) != nil
    }

    @Test func aReplacedRecordLeavesNoBytesWithSecureDeleteWhateverSQLiteDefaultsTo() async throws {
        // Off, the earlier value stays in the page's free space: the test can see it.
        #expect(try await replacedBytesRemain(secureDelete: false, file: directory.url("off.sqlite").path))
        #expect(try await !replacedBytesRemain(secureDelete: true, file: directory.url("on.sqlite").path))
        // Every vault database is opened with it on.
        let pool = try VaultFiles.openDatabase(in: directory.url.path, policy: .deviceOnly)
        #expect(pool.configuration.secureDelete == true)
        let onWriter = try await pool.writeWithoutTransaction { db in try db.scalar(Int.self, "PRAGMA secure_delete") }
        #expect(onWriter == 1)
        await pool.close()
    }
}

/// Found in an outside audit: a vault's database files were made with the process's default mode (0644),
/// readable by every user of the machine, while its manifest and keys were 0600.
@Suite(.timeLimit(.minutes(1))) struct VaultFileModeTests {
    static func mode(_ path: String) throws -> mode_t {
        var info = stat()
        guard stat(path, &info) == 0 else { throw CocoaError(.fileNoSuchFile) }
        return info.st_mode & 0o777
    }

    @Test func aVaultsDatabaseFilesAreTheOwnersAlone() async throws {
        let fixture = try VaultFixture("keel-vault-modes")
        let vault = try await fixture.vaults.open(try AccountID("alice"))
        try await vault.put("notes", id: "n1", Data("a note".utf8))
        let directory = fixture.data.appendingPathComponent("vaults/\(vault.namespace.rawValue)").path
        let databases = try FileManager.default.contentsOfDirectory(atPath: directory).filter {
            $0.contains(".sqlite")
        }
        #expect(databases.contains("include.sqlite") && databases.contains("include.sqlite-wal"))
        for name in databases { #expect(try Self.mode(directory + "/" + name) == 0o600, "\(name)") }
        await fixture.vaults.close()
        // One an older Keel made readable by all is narrowed when it is opened.
        let file = directory + "/include.sqlite"
        #expect(chmod(file, 0o644) == 0)
        let reopened = try await fixture.vaults.open(try AccountID("alice"))
        #expect(try await reopened.get("notes", id: "n1") == Data("a note".utf8))
        #expect(try Self.mode(file) == 0o600)
        await fixture.vaults.close()
    }
}
