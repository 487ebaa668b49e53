import Foundation
import KeelCore
import KeelTesting
import Testing

@testable import KeelStore

extension VaultFixture {
    /// The manifest of the vault of `namespace`, as JSON.
    func manifestFile(_ namespace: String) -> URL { data.appendingPathComponent("vaults/\(namespace)/vault.json") }

    /// Opens `account`'s vault, writes note `id` ("a note") and closes it; the vault's namespace.
    func closedVault(of account: AccountID, withANote id: String) async throws -> String {
        let vault = try await vaults.open(account)
        try await vault.put("notes", id: id, Data("a note".utf8))
        await vaults.close()
        return vault.namespace.rawValue
    }

    /// Rewrites the manifest of the vault of `namespace` as `change` says (what another version of Keel wrote).
    func editManifest(_ namespace: String, _ change: (inout [String: Any]) throws -> Void) throws {
        let file = manifestFile(namespace)
        var manifest = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: file)) as? [String: Any])
        try change(&manifest)
        try JSONSerialization.data(withJSONObject: manifest).write(to: file)
    }
}

/// Found in an outside audit: a database restored from an older copy, or whose WAL was lost, without the
/// records table of a dataset the manifest says was written, read as an empty dataset — and the next write
/// created the table again, erasing the evidence. The manifest now knows when a records table was committed.
@Suite(.timeLimit(.minutes(1))) struct LostRecordsTableTests {
    @Test func aCommittedRecordsTableThatIsGoneIsDamagedNeverEmptyNorRecreated() async throws {
        let fixture = try VaultFixture("keel-vault-lost-table")
        let alice = try AccountID("alice")
        let namespace = try await fixture.closedVault(of: alice, withANote: "n1")
        // The database as an older copy has it: without the notes table.
        let file = fixture.data.appendingPathComponent("vaults/\(namespace)/include.sqlite").path
        let raw = try DatabasePool(path: file)
        try await raw.writeWithoutTransaction { db in try db.execute(#"DROP TABLE "records.notes""#) }
        await raw.close()

        let reopened = try await fixture.vaults.open(alice)
        // Read, written, and read again: damaged every time (the write did not make an empty table).
        await #expect {
            _ = try await reopened.get("notes", id: "n1")
        } throws: { ($0 as? VaultError)?.code == .damaged && "\($0)".contains("notes") }
        await #expect {
            try await reopened.put("notes", id: "n2", Data("written over the loss".utf8))
        } throws: { ($0 as? VaultError)?.code == .damaged }
        await #expect {
            _ = try await reopened.get("notes", id: "n2")
        } throws: { ($0 as? VaultError)?.code == .damaged }
        await fixture.vaults.close()
        let check = try DatabasePool(path: file)
        let tables = try await check.read { db in
            try db.scalar(Int.self, #"SELECT count(*) FROM sqlite_master WHERE name = 'records.notes'"#)
        }
        #expect(tables == 0)  // not recreated
        await check.close()
    }

    /// Found in a review: the marker was set only when this process created the table, so a table an older
    /// Keel made, read first and then written, never got it. Any committed write sets it.
    @Test func aTableAnOlderKeelMadeIsMarkedCommittedByTheNextWrite() async throws {
        let fixture = try VaultFixture("keel-vault-legacy-table")
        let alice = try AccountID("alice")
        let namespace = try await fixture.closedVault(of: alice, withANote: "n1")
        func committed() throws -> Any? {
            let manifest =
                try JSONSerialization.jsonObject(with: Data(contentsOf: fixture.manifestFile(namespace)))
                as? [String: Any]
            let datasets = manifest?["datasets"] as? [String: Any]
            return (datasets?["notes"] as? [String: Any])?["recordsCommitted"]
        }
        #expect(try committed() as? Bool == true)
        // As an older Keel wrote it: no marker.
        try fixture.editManifest(namespace) { manifest in
            var datasets = try #require(manifest["datasets"] as? [String: Any])
            var notes = try #require(datasets["notes"] as? [String: Any])
            notes["recordsCommitted"] = nil
            datasets["notes"] = notes
            manifest["datasets"] = datasets
        }
        #expect(try committed() == nil)
        let reopened = try await fixture.vaults.open(alice)
        #expect(try await reopened.get("notes", id: "n1") == Data("a note".utf8))  // read first
        try await reopened.put("notes", id: "n2", Data("then written".utf8))
        #expect(try committed() as? Bool == true)
        await fixture.vaults.close()
    }

    /// A first write that rolls back takes its new table with it: that dataset reads empty (nothing was lost),
    /// and the next write creates the table.
    @Test func aFirstWriteThatRolledBackLeavesAnEmptyDatasetNotADamagedOne() async throws {
        let fixture = try VaultFixture("keel-vault-rolled-back")
        let vault = try await fixture.vaults.open(try AccountID("alice"))
        struct Refused: Error {}
        await #expect(throws: Refused.self) {
            try await vault.write("notes") { records -> Void in
                try records.put("n1", Data("not kept".utf8))
                throw Refused()
            }
        }
        #expect(try await vault.get("notes", id: "n1") == nil)
        try await vault.put("notes", id: "n2", Data("kept".utf8))
        #expect(try await vault.get("notes", id: "n2") == Data("kept".utf8))
        await fixture.vaults.close()
    }
}

/// Found in an outside audit: signing out while the account's vault could not be opened (written by a newer
/// version of the app: `schemaTooNew`) deleted nothing — `logout()` acts on the open vault only — and said
/// so with an empty report; the session token and its key stayed on the device.
@Suite(.timeLimit(.minutes(1))) struct LogoutWithoutAnOpenVaultTests {
    @Test func aVaultThatCannotBeOpenedIsStillSignedOutByItsManifest() async throws {
        let fixture = try VaultFixture("keel-vault-logout-closed")
        let alice = try AccountID("alice")
        let vault = try await fixture.vaults.open(alice)
        try await vault.put("session-token", id: "bearer", Data("secret token".utf8))
        try await vault.put("notes", id: "n1", Data("a note".utf8))
        try await vault.put("drafts", id: "d1", Data("a draft kept across sign-out".utf8))
        let namespace = vault.namespace.rawValue
        await fixture.vaults.close()
        // A newer version of the app migrated it since: this one cannot open it.
        try fixture.editManifest(namespace) { $0["migrations"] = ["v9-from-the-future"] }
        let keysBefore = try fixture.keyStore.listKeys().count
        await #expect {
            _ = try await fixture.vaults.open(alice)
        } throws: { ($0 as? VaultError)?.code == .schemaTooNew }
        #expect(try await fixture.vaults.logout().deletedDatasets.isEmpty)  // nothing open

        let report = try await fixture.vaults.logout(alice)
        #expect(report.deletedDatasets == ["notes", "session-token"])
        #expect(report.keptDatasets == ["drafts"])
        #expect(try fixture.keyStore.listKeys().count == keysBefore - 2)
        #expect(VaultFixture.files(under: fixture.data, containing: Data("secret token".utf8)).isEmpty)
    }
}
