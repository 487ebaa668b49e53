import Foundation
import KeelTesting
import Testing

/// `keel inventory`, run as the built binary.
@Suite(.timeLimit(.minutes(3))) struct InventoryCommandTests {
    let directory: TemporaryDirectory
    init() throws { directory = try TemporaryDirectory(prefix: "keel-inventory-cli") }

    static let sound = #"""
        [{"name": "notes", "purpose": "The user's notes", "kind": "table", "classification": "personal", "isAccountBound": true,
          "retention": "untilEvent", "backup": "include", "deletionTriggers": ["logout", "accountDeletion"],
          "role": "sourceOfTruth"},
         {"name": "session-token", "purpose": "Signs API calls", "kind": "keyValue", "classification": "credential",
          "isAccountBound": true, "retention": "untilEvent", "backup": "deviceOnly",
          "deletionTriggers": ["logout", "accountDeletion", "accessRevocation"], "role": "sourceOfTruth"}]
        """#

    private func run(_ arguments: [String]) async throws -> (ChildProcess.Termination, String, String) {
        try await runKeel(["inventory"] + arguments, in: directory.url)
    }

    @Test func printsAMarkdownTableForReview() async throws {
        try Data(Self.sound.utf8).write(to: directory.url("inventory.json"))
        let (status, output, _) = try await run(["inventory.json"])
        #expect(status == .exited(0))
        #expect(output.hasPrefix("| dataset | purpose |"))
        #expect(
            output.contains(
                "| session-token | Signs API calls | keyValue | credential | yes | until event | deviceOnly | logout, accountDeletion, accessRevocation | source of truth |"
            ))
    }

    @Test func checkPassesASoundInventoryAndFailsABrokenOne() async throws {
        try Data(Self.sound.utf8).write(to: directory.url("sound.json"))
        let (ok, okOutput, _) = try await run(["sound.json", "--check"])
        #expect(ok == .exited(0))
        #expect(okOutput.contains("2 dataset(s), no problems"))

        try Data(Self.sound.replacingOccurrences(of: "\"deviceOnly\"", with: "\"include\"").utf8).write(
            to: directory.url("leaky.json"))
        let (bad, badOutput, _) = try await run(["leaky.json", "--check"])
        #expect(bad == .exited(1))
        #expect(badOutput.contains("problem: session-token: credential data may not be in transferable backups"))

        // --format json applies to --check too: one object with structured problems.
        let (jsonBad, jsonOutput, _) = try await run(["leaky.json", "--check", "--format", "json"])
        #expect(jsonBad == .exited(1))
        let report = try #require(try JSONSerialization.jsonObject(with: Data(jsonOutput.utf8)) as? [String: Any])
        #expect(report["sound"] as? Bool == false && report["datasets"] as? Int == 2)
        let problems = try #require(report["problems"] as? [[String: String]])
        #expect(problems.contains { $0["dataset"] == "session-token" && $0["field"] == "backup" && $0["code"] != nil })
        let (jsonOK, soundOutput, _) = try await run(["sound.json", "--check", "--format", "json"])
        #expect(jsonOK == .exited(0))
        #expect(soundOutput.contains("\"sound\" : true"))
    }

    @Test func jsonOutputAndBadFiles() async throws {
        try Data(Self.sound.utf8).write(to: directory.url("inventory.json"))
        let (status, output, _) = try await run(["inventory.json", "--format", "json"])
        #expect(status == .exited(0))
        #expect(output.contains("\"name\" : \"notes\""))
        try Data("{not json".utf8).write(to: directory.url("broken.json"))
        let (broken, _, error) = try await run(["broken.json"])
        #expect(broken == .exited(2))
        #expect(error.contains("broken.json: not valid JSON: line 1, column 2"))
        let (missing, _, missingError) = try await run(["nope.json"])
        #expect(missing == .exited(2))
        #expect(missingError.contains("nope.json: cannot read the file"))
        try Data(#"[{"name": 5}]"#.utf8).write(to: directory.url("typed.json"))
        let (typed, _, typedError) = try await run(["typed.json"])
        #expect(typed == .exited(2))
        #expect(typedError.contains("typed.json: not an exported inventory: at [0].name: "), "\(typedError)")
    }

    /// Found in an outside audit: a retention of 1.5 seconds (or beyond Int64) was refused as "expected to
    /// decode String but found number", pointing away from the number.
    @Test func aRetentionThatIsNoWholeNumberOfSecondsIsRefusedSayingSo() async throws {
        for retention in ["1.5", "99999999999999999999"] {
            let inventory = #"""
                [{"name": "tips", "purpose": "Hints shown once", "kind": "keyValue", "classification": "public",
                  "isAccountBound": false, "retention": \#(retention), "backup": "include", "deletionTriggers": [],
                  "role": "sourceOfTruth"}]
                """#
            try Data(inventory.utf8).write(to: directory.url("retention.json"))
            let (status, _, error) = try await run(["retention.json", "--check"])
            #expect(status == .exited(2))
            #expect(error.contains("retention is a whole number of seconds or \"untilEvent\""), "\(error)")
        }
    }

    /// A misspelt member is refused, not ignored: `retension` would read as no retention, and --check would
    /// judge a dataset other than the one written (here it would even pass: public data needs none).
    @Test func anUnknownMemberIsRefusedNamingIt() async throws {
        let misspelt = #"""
            [{"name": "tips", "purpose": "Hints shown once", "kind": "table", "classification": "public",
              "isAccountBound": false, "retension": 86400, "backup": "include", "deletionTriggers": [],
              "role": "sourceOfTruth", "storage": {"table": "tips", "timestampColum": "seen_at"}}]
            """#
        try Data(misspelt.utf8).write(to: directory.url("misspelt.json"))
        let (status, _, error) = try await run(["misspelt.json", "--check"])
        #expect(status == .exited(2))
        #expect(error.contains("unknown member \"retension\""), "\(error)")
        // In the nested storage object too.
        let storageOnly = misspelt.replacingOccurrences(of: "\"retension\": 86400, ", with: "")
        try Data(storageOnly.utf8).write(to: directory.url("storage.json"))
        let (nested, _, nestedError) = try await run(["storage.json", "--check"])
        #expect(nested == .exited(2))
        #expect(nestedError.contains("unknown member \"timestampColum\""), "\(nestedError)")
        // And in a cache's role object (found in an outside audit: its extra members were ignored).
        let role = storageOnly.replacingOccurrences(
            of: "\"role\": \"sourceOfTruth\"", with: "\"role\": {\"cacheRebuiltFrom\": \"GET /tips\", \"ttl\": 60}")
        try Data(role.utf8).write(to: directory.url("role.json"))
        let (roleStatus, _, roleError) = try await run(["role.json", "--check"])
        #expect(roleStatus == .exited(2))
        #expect(roleError.contains("unknown member \"ttl\""), "\(roleError)")
        // Spelt right, the same file is read and checked.
        let fixed = storageOnly.replacingOccurrences(of: "timestampColum\"", with: "timestampColumn\"")
        try Data(fixed.utf8).write(to: directory.url("fixed.json"))
        #expect(try await run(["fixed.json", "--check"]).0 == .exited(0))
    }

    /// Found in an outside audit: `--check` refused a vault dataset (account-bound) whose retention is a
    /// duration unless it declared a table with a timestamp column, which the vault's sweep never uses. Without
    /// a table it passes; the same dataset belonging to no account (nothing would sweep it) is still refused,
    /// with the same line and exit code as before.
    @Test func aRetentionDurationOfVaultRecordsNeedsNoTable() async throws {
        let vault = #"""
            [{"name": "recent-places", "purpose": "Places looked at", "kind": "keyValue", "classification": "personal",
              "isAccountBound": true, "retention": 604800, "backup": "deviceOnly",
              "deletionTriggers": ["logout", "accountDeletion", "retentionExpiry"], "role": "sourceOfTruth"}]
            """#
        try Data(vault.utf8).write(to: directory.url("vault.json"))
        let (status, output, _) = try await run(["vault.json", "--check"])
        #expect(status == .exited(0))
        #expect(output.contains("1 dataset(s), no problems"), "\(output)")

        let nobody = vault.replacingOccurrences(
            of: #""classification": "personal""#, with: #""classification": "internal""#
        )
        .replacingOccurrences(of: #""isAccountBound": true"#, with: #""isAccountBound": false"#)
        try Data(nobody.utf8).write(to: directory.url("nobody.json"))
        let (refused, refusedOutput, _) = try await run(["nobody.json", "--check"])
        #expect(refused == .exited(1))
        #expect(
            refusedOutput.contains(
                "problem: recent-places: a retention duration needs table storage with a timestamp column to sweep"),
            "\(refusedOutput)")
    }

    /// Foundation's decoder keeps one of two repeated members silently: the reviewer would read `public`
    /// while the gate checked `credential` (or the other way round, depending on the decoder).
    @Test func aMemberRepeatedInOneDatasetIsRefusedNotResolved() async throws {
        let repeated = Self.sound.replacingOccurrences(
            of: #""classification": "credential","#,
            with: #""classification": "public", "classification": "credential","#)
        #expect(repeated != Self.sound)
        try Data(repeated.utf8).write(to: directory.url("repeated.json"))
        for arguments in [["repeated.json"], ["repeated.json", "--check"]] {
            let (status, output, error) = try await run(arguments)
            #expect(status == .exited(2), "\(arguments)")
            #expect(output.isEmpty)
            #expect(error.contains(#"repeated.json: not valid JSON: line 4, column"#), "\(error)")
            #expect(error.contains(#"duplicate member "classification""#), "\(error)")
        }
    }
}
