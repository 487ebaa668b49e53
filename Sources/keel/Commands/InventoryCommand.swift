import Foundation
import KeelStore

/// `keel inventory`: prints an app's data inventory for review, and checks it in CI (MOB-DATA-001).
enum InventoryCommand {
    static let command = Keel.Command(
        name: "inventory",
        summary: "Print or check an app's data inventory (exported with Inventory.export()).",
        usage: """
            USAGE: keel inventory <inventory.json> [--format markdown|json] [--check]

            The inventory lives in the app's Swift code; the app (or a test) writes it out with
            `try inventory.export()` to a JSON file, and this command reads that file.

            Prints one row per dataset: purpose, kind, classification, account binding, retention, backup
            policy, deletion triggers and role (source of truth or cache). With --check, applies the same
            rules as registration (no sensitive or credential data in transferable backups, personal data
            needs a retention, ...) and exits 1 listing every problem.

            OPTIONS:
              --format markdown|json  Output style (default markdown).
              --check                 Validate only; exit 0 when sound, 1 with the problems. With
                                      --format json: {"sound", "datasets", "problems": [{"code",
                                      "dataset", "field", "message"}]}.
              -h, --help              Show this help.

            EXIT STATUS: 0 sound (or printed), 1 problems found by --check, 2 unreadable or malformed file.

            """,
        run: run
    )

    /// `--check --format json`: one object.
    struct CheckReport: Encodable {
        let sound: Bool
        let datasets: Int
        let problems: [ProblemRow]
    }

    struct ProblemRow: Encodable {
        let code: String
        let dataset: String
        let field: String
        let message: String
    }

    static func run(_ raw: [String]) async throws -> Int32 {
        let arguments = try Arguments(raw, options: ["format"], flags: ["check"])
        guard arguments.positionals.count == 1 else { throw UsageError("expected one inventory file") }
        let path = arguments.positionals[0]
        let format = try arguments.choice("format", default: "markdown", among: ["markdown", "json"])
        guard let data = readInputFile(path) else {
            return fail("\(path): cannot read the file")
        }
        if let problem = strictJSONProblem(data) { return fail("\(path): \(problem)") }
        let datasets: [Dataset]
        do {
            datasets = try JSONDecoder().decode([Dataset].self, from: data)
        } catch {
            return fail(
                "\(path): not an exported inventory: \((error as? DecodingError)?.readableDescription ?? "\(error)")")
        }
        if arguments.has("check") {
            let problems = Inventory.problems(in: datasets)
            if format == "json" {
                try sayJSON(
                    CheckReport(
                        sound: problems.isEmpty, datasets: datasets.count,
                        problems: problems.map {
                            ProblemRow(code: $0.code.name, dataset: $0.dataset, field: $0.field, message: $0.message)
                        }))
                return problems.isEmpty ? 0 : 1
            }
            if problems.isEmpty {
                say("\(path): \(datasets.count) dataset(s), no problems")
                return 0
            }
            for problem in problems { say("problem: \(problem)") }
            return 1
        }
        if format == "json" {
            say(String(decoding: try Inventory.export(datasets), as: UTF8.self))
        } else {
            say(Inventory.markdown(datasets), terminator: "")
        }
        return 0
    }
}
