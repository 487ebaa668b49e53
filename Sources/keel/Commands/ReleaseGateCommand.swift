import Foundation
import KeelContract
import KeelContractTools
import KeelCore

/// `keel release-gate`: may the backend require a version on a platform now? (MOB-API-005, release side)
enum ReleaseGateCommand {
    static let command = Keel.Command(
        name: "release-gate",
        summary: "Decide whether the backend may require an app version on a platform now.",
        usage: """
            USAGE: keel release-gate --stores <STORES.json> --platform ios|android --min-version <version>
                                     [--incident] [--format text|json]

            Answers "may the backend require <version> on this platform now?". Allowed only when every
            production store of the platform has a release of <version> or later that reaches every user:
            rollout "available", "staged" at 100%, or "phased"/"paused" with "manualUpdate": true (an App
            Store phased release only throttles automatic updates). Non-production stores are listed but
            never decide. Versions are 1 to 4 dot-separated integers, each at most 9223372036854775807 (2^63-1),
            compared numerically (5.2 = 5.2.0).

            STORES.json: {"stores": [{"id", "platform": "ios"|"android", "production": bool, "releases":
            [{"version", "rollout": "available"|"phased"|"staged"|"paused"|"halted"|"inReview"|"rejected",
            "percent": 0-100 (phased, staged, paused, halted only), "manualUpdate": bool (phased, paused only)}]}]}
            Unknown members are bad input: a typo must not pass a gate.

            OPTIONS:
              --stores <file>         The stores and their releases.
              --platform ios|android  The platform the requirement applies to.
              --min-version <v>       The minimum version the backend would require.
              --incident              Security exception: exit 0 even when refused, and say what the block
                                      screen must keep and which stores cannot serve the update yet.
              --format text|json      Output style (default text).
              -h, --help              Show this help.

            EXIT STATUS: 0 allowed (or --incident), 1 refused (every reason listed: store, release, why),
            2 bad input (the offending field named as a JSON pointer) or usage error.

            """,
        run: run
    )

    static let blockScreen =
        "the block screen must keep all local data (credentials, drafts and operations whose result is unknown)"
        + " and delete nothing because of the version"

    static func run(_ raw: [String]) async throws -> Int32 {
        do {
            return try await gate(raw)
        } catch let error as UsageError where !error.isHelpRequest && asksForJSON(raw) {
            // JSON mode answers a usage error with an error object as well (the usage text still goes to
            // standard error): a pipeline parsing standard output always gets an object, whatever exit 2 was.
            say(errorObject(pointer: "", message: error.description, usage: true))
            throw error
        }
    }

    /// Whether the command line asks for JSON (`--format json` or `--format=json`), read on its own: a usage
    /// error may stop the parsing before the format is reached.
    private static func asksForJSON(_ raw: [String]) -> Bool {
        for (index, argument) in raw.enumerated() {
            if argument == "--" { return false }
            if argument == "--format=json" { return true }
            if argument == "--format", index + 1 < raw.count, raw[index + 1] == "json" { return true }
        }
        return false
    }

    private static func gate(_ raw: [String]) async throws -> Int32 {
        let arguments = try Arguments(
            raw, options: ["stores", "platform", "min-version", "format"], flags: ["incident"])
        guard arguments.positionals.isEmpty else {
            throw UsageError("unexpected argument '\(arguments.positionals[0])'")
        }
        guard let path = arguments.value("stores") else { throw UsageError("--stores is required") }
        guard let platformName = arguments.value("platform") else { throw UsageError("--platform is required") }
        guard let platform = StoreCatalog.Platform(rawValue: platformName) else {
            throw UsageError("--platform must be ios or android, not '\(platformName)'")
        }
        guard let versionText = arguments.value("min-version") else { throw UsageError("--min-version is required") }
        guard let version = AppVersion(versionText) else {
            throw UsageError(
                "--min-version must be 1 to 4 dot-separated non-negative integers (each at most \(Int.max)), not '\(versionText)'"
            )
        }
        let format = try arguments.choice("format", default: "text", among: ["text", "json"])
        let incident = arguments.has("incident")
        guard let data = readInputFile(path) else {
            // JSON mode answers every bad input with an error object, a missing file included.
            if format == "json" {
                say(errorObject(pointer: "", message: "cannot read the file"))
            }
            return fail("\(path): cannot read the file")
        }
        let gate: ReleaseGate
        do {
            gate = try ReleaseGate(
                catalog: try StoreCatalog(json: Array(data)), platform: platform, minimumVersion: version)
        } catch {
            if format == "json" {
                say(errorObject(pointer: error.pointer, message: error.message))
            }
            return fail("\(path): \(error)")
        }
        if format == "json" {
            say(serialize(json(gate, incident: incident)))
        } else {
            say(text(gate, incident: incident), terminator: "")
        }
        return gate.allowed || incident ? 0 : 1
    }

    /// The one line JSON mode prints for an exit 2: `{"error": {"pointer", "message"}}`, plus `"usage": true`
    /// for a usage error.
    private static func errorObject(pointer: String, message: String, usage: Bool = false) -> String {
        var error: JSONObject = ["pointer": .string(pointer), "message": .string(message)]
        if usage { error["usage"] = true }
        return serialize(["error": .object(error)])
    }

    private static func serialize(_ object: JSONObject) -> String {
        String(decoding: JSONValue.object(object).serialized(), as: UTF8.self)
    }

    private static func json(_ gate: ReleaseGate, incident: Bool) -> JSONObject {
        var object: JSONObject = [
            "allowed": .bool(gate.allowed),
            "decision": .string(gate.allowed ? "allowed" : incident ? "incident" : "refused"),
            "platform": .string(gate.platform.rawValue),
            "minVersion": .string(gate.minimumVersion.description),
            "incident": .bool(incident),
            "reasons": .array(
                gate.reasons.map { reason in
                    .object([
                        "store": .string(reason.store),
                        "release": reason.release.map { .string($0.description) } ?? .null,
                        "why": .string(reason.why),
                    ])
                }),
            "stores": .array(
                gate.stores.map { store in
                    .object([
                        "id": .string(store.store), "production": .bool(store.production),
                        "serving": store.serving.map { .string($0.description) } ?? .null,
                    ])
                }),
            "storesThatCannotServe": .array(gate.storesThatCannotServe.map(JSONValue.string)),
        ]
        if incident { object["blockScreen"] = .string(blockScreen) }
        return object
    }

    private static func text(_ gate: ReleaseGate, incident: Bool) -> String {
        let platform = gate.platform.rawValue
        var lines: [String] = []
        if gate.allowed {
            lines.append("allowed: the backend may require \(gate.minimumVersion) on \(platform)")
        } else if incident {
            lines.append(
                "incident: \(platform) versions below \(gate.minimumVersion) may be blocked as a security exception,"
                    + " although not every production store can serve the update yet")
        } else {
            lines.append("refused: the backend may not require \(gate.minimumVersion) on \(platform) yet")
        }
        for reason in gate.reasons {
            // A store id is input: a newline in it must not start a line that reads as another verdict.
            lines.append(
                "  \(TerminalText.oneLine(reason.store))  \(reason.release?.description ?? "-")  \(reason.why)")
        }
        for store in gate.stores {
            let role = store.production ? "production" : "not production, does not decide"
            let serving = store.serving.map { "serves \($0) to every user" } ?? "cannot serve it to every user"
            lines.append("  store \(TerminalText.oneLine(store.store)) (\(role)): \(serving)")
        }
        if incident {
            lines.append(blockScreen.prefix(1).uppercased() + blockScreen.dropFirst() + ".")
            let blocked = gate.storesThatCannotServe.map(TerminalText.oneLine)
            lines.append(
                "Stores that cannot serve the update yet: \(blocked.isEmpty ? "none" : blocked.joined(separator: ", "))"
            )
        }
        return lines.joined(separator: "\n") + "\n"
    }
}
