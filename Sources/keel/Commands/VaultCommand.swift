import Foundation
import KeelStore

/// `keel vault inspect`: runs the restore inspector on a data directory and a key store, for support and
/// CI (MOB-DATA-007). Reads only.
enum VaultCommand {
    static let command = Keel.Command(
        name: "vault",
        summary: "Inspect the account vaults of a data directory (restore state, recovery paths).",
        usage: """
            USAGE: keel vault inspect --data <dir> --keys <dir> [--format text|json]
                                      [--inventory <inventory.json>] [--schema <schema.json>]

            Runs the restore inspector an app built on Keel runs at launch: for each account vault under
            <data>/vaults, whether its data can be read with the keys in <keys> (a FileKeyStore
            directory), and if not, why and what to do. States: freshInstall, normal, restoredWithoutKeys,
            credentialsMissing, permissionsToRequest, schemaTooNew, schemaTooOld, partial, damaged, locked.
            It never creates, changes or deletes anything it inspects.

            OPTIONS:
              --data <dir>          The app's data directory.
              --keys <dir>          The key store directory (outside the data directory).
              --format text|json    Output style (default text: one line per vault). json prints
                                    {"vaults": [{"namespace", "state", "datasets": [{"name", "readable",
                                    "reason", ...}], "recovery": [...], "conditions": [...],
                                    "permissionsToRequest": [...], "pendingMigrations": [...], "problem"}]}
              --inventory <file>    The app's inventory (Inventory.export()); default: the declarations
                                    each vault recorded.
              --schema <file>       The app's vault migrations (VaultSchema.export()); without it, schemas
                                    are not compared.
              -h, --help            Show this help.

            EXIT STATUS: 0 every vault normal (or a fresh install), 1 a vault needs recovery, 2 bad input
            (a missing directory, a file where a directory must be, a directory that cannot be listed, an
            unreadable inventory or schema).

            """,
        run: run
    )

    static func run(_ raw: [String]) async throws -> Int32 {
        guard raw.first == "inspect" else {
            throw UsageError(raw.first.map { "unknown vault command '\($0)'" } ?? "expected 'inspect'")
        }
        let arguments = try Arguments(
            Array(raw.dropFirst()), options: ["data", "keys", "format", "inventory", "schema"])
        guard arguments.positionals.isEmpty else {
            throw UsageError("unexpected argument '\(arguments.positionals[0])'")
        }
        guard let data = arguments.value("data") else { throw UsageError("missing --data <dir>") }
        guard let keys = arguments.value("keys") else { throw UsageError("missing --keys <dir>") }
        let format = try arguments.choice("format", default: "text", among: ["text", "json"])
        for (option, path) in [("--data", data), ("--keys", keys)] {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
                return fail("\(option) \(path): no such directory")
            }
            guard isDirectory.boolValue else { return fail("\(option) \(path): not a directory") }
            // A directory this process may not read is bad input, not a vault to recover: found in an outside
            // audit, unlistable keys reported every vault damaged, with "restore from backup" as the way out.
            guard (try? FileManager.default.contentsOfDirectory(atPath: path)) != nil else {
                return fail("\(option) \(path): the directory cannot be listed (check its permissions)")
            }
            // Listed but not entered (read without search permission): what is inside cannot be read either, and
            // would look absent — a fresh install (found in an outside audit).
            guard access(path, R_OK | X_OK) == 0 else {
                return fail("\(option) \(path): the directory cannot be entered (check its permissions)")
            }
        }
        var inventory: Inventory?
        if let path = arguments.value("inventory") {
            guard let bytes = readInputFile(path) else {
                return fail("--inventory \(path): cannot read the file")
            }
            if let problem = strictJSONProblem(bytes) { return fail("--inventory \(path): \(problem)") }
            do { inventory = try Inventory(JSONDecoder().decode([Dataset].self, from: bytes)) } catch {
                let reason = (error as? DecodingError)?.readableDescription ?? "\(error)"
                return fail("--inventory \(path): not a sound exported inventory: \(reason)")
            }
        }
        var schema: VaultSchema.Summary?
        if let path = arguments.value("schema") {
            guard let bytes = readInputFile(path) else {
                return fail("--schema \(path): cannot read the file")
            }
            if let problem = strictJSONProblem(bytes) { return fail("--schema \(path): \(problem)") }
            do { schema = try JSONDecoder().decode(VaultSchema.Summary.self, from: bytes) } catch {
                return fail(
                    "--schema \(path): not an exported vault schema: \((error as? DecodingError)?.readableDescription ?? "\(error)")"
                )
            }
        }
        let report: RestoreReport
        do {
            let dataURL = URL(fileURLWithPath: data)
            let keyStore = try FileKeyStore(
                directory: URL(fileURLWithPath: keys), dataDirectories: [dataURL], create: false)
            report = try RestoreInspector(
                dataDirectory: dataURL, keyStore: keyStore, inventory: inventory, schema: schema
            ).inspect()
        } catch {
            return fail("\(error)")
        }
        if format == "json" {
            try sayJSON(report)
        } else if report.vaults.isEmpty {
            say("fresh install: no vaults under \(data)")
        } else {
            for vault in report.vaults { say(line(vault)) }
        }
        return report.needsRecovery ? 1 : 0
    }

    /// `<namespace>  <state>  recovery: a, b  unreadable: notes (keyUnavailable)  permissions: camera`.
    static func line(_ vault: VaultInspection) -> String {
        var parts = [vault.namespace, vault.state.rawValue]
        if !vault.recovery.isEmpty {
            parts.append("recovery: " + vault.recovery.map(\.rawValue).joined(separator: ", "))
        }
        let unreadable = vault.datasets.filter { !$0.readable }
        if !unreadable.isEmpty {
            parts.append(
                "unreadable: "
                    + unreadable.map { "\($0.name) (\($0.reason?.rawValue ?? "unknown"))" }.joined(separator: ", "))
        }
        if !vault.permissionsToRequest.isEmpty {
            parts.append("permissions: " + vault.permissionsToRequest.joined(separator: ", "))
        }
        if !vault.pendingMigrations.isEmpty {
            parts.append("pending migrations: " + vault.pendingMigrations.joined(separator: ", "))
        }
        if let problem = vault.problem { parts.append("problem: " + problem) }
        return parts.joined(separator: "  ")
    }
}
