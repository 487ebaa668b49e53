import Foundation
import KeelContract
import KeelHTTP

/// `keel trace parse`: checks an incoming W3C Trace Context the way the client continues one (MOB-API-004).
enum TraceCommand {
    static let command = Keel.Command(
        name: "trace",
        summary: "Parse a W3C traceparent (and tracestate) exactly as Keel continues a trace.",
        usage: """
            USAGE: keel trace parse <traceparent> [--tracestate <value>] [--format text|json]

            Reads a traceparent the way an app built on Keel does when a push payload or a deep link
            continues a trace: spaces and tabs around the value are ignored; lowercase hex only; exact
            field lengths; version ff and all-zero trace or parent ids are invalid; version 00 is exactly
            55 characters; a higher version may be longer when a '-' follows its flags (only the first
            four fields are read). An invalid traceparent starts a new trace, and the tracestate is
            dropped with it. A tracestate with a malformed member, a duplicate key or more than 32
            members is dropped whole; empty members are skipped.

            OPTIONS:
              --tracestate <value>  The tracestate received with it. Repeat it for several tracestate
                                    header lines: they are one list, combined in order as HTTP
                                    combines field lines (a duplicate key across them drops it all).
              --format text|json    Output style (default text). json prints one object:
                                    {"valid", "version", "traceId", "parentId", "flags", "sampled",
                                     "tracestate": ["key=value", ...] | null, "reason",
                                     "tracestateDropped"}
                                    with absent fields null. "reason" says why the traceparent is
                                    invalid; "tracestateDropped" why a tracestate given with a valid
                                    one is not propagated.
              -h, --help            Show this help.

            A value that begins with '-' (never a valid traceparent) is read as an option: put it after
            '--' (keel trace parse --format json -- "$VALUE"), or -h / --help shows this help.

            EXIT STATUS: 0 valid, 1 invalid (a new trace would be started), 2 usage error.

            """,
        run: run
    )

    static func run(_ raw: [String]) async throws -> Int32 {
        guard raw.first == "parse" else {
            throw UsageError(raw.first.map { "unknown trace command '\($0)'" } ?? "expected 'parse'")
        }
        let arguments = try Arguments(Array(raw.dropFirst()), options: ["format"], repeatable: ["tracestate"])
        guard arguments.positionals.count == 1 else { throw UsageError("expected one traceparent value") }
        let format = try arguments.choice("format", default: "text", among: ["text", "json"])
        // Several tracestate field lines are one comma-separated list (RFC 9110 §5.3; W3C Trace Context §3.3).
        let tracestate = arguments.values["tracestate"].map { $0.joined(separator: ",") }
        let parent: TraceParent
        do {
            parent = try TraceParent.parse(arguments.positionals[0])
        } catch {
            if format == "json" {
                say(json(valid: false, parent: nil, state: nil, reason: error.message, dropped: nil))
            } else {
                say("traceparent: invalid: \(error.message)")
                say("a new trace would be started" + (tracestate == nil ? "" : "; the tracestate is dropped with it"))
            }
            return 1
        }
        var state: TraceState?
        var dropped: String?
        if let tracestate {
            do {
                let parsed = try TraceState.parse(tracestate)
                state = parsed.isEmpty ? nil : parsed
            } catch {
                dropped = error.message
            }
        }
        if format == "json" {
            say(json(valid: true, parent: parent, state: state, reason: nil, dropped: dropped))
            return 0
        }
        say("traceparent: valid")
        say("version:     \(hex(parent.version))")
        say("trace-id:    \(parent.traceID)")
        say("parent-id:   \(parent.parentID)")
        say("flags:       \(hex(parent.flags))")
        say("sampled:     \(parent.sampled)")
        if let dropped {
            say("tracestate:  dropped (\(dropped)); none would be propagated")
        } else {
            say("tracestate:  \(state?.headerValue ?? "none")")
        }
        return 0
    }

    private static func hex(_ byte: UInt8) -> String {
        let digits = Array("0123456789abcdef")
        return String([digits[Int(byte >> 4)], digits[Int(byte & 0xf)]])
    }

    /// The one JSON object of `--format json`, members in the documented order, absent fields null.
    private static func json(
        valid: Bool, parent: TraceParent?, state: TraceState?, reason: String?, dropped: String?
    ) -> String {
        func text(_ value: String?) -> JSONValue { value.map(JSONValue.string) ?? .null }
        let object: JSONObject = [
            "valid": .bool(valid),
            "version": text(parent.map { hex($0.version) }),
            "traceId": text(parent?.traceID.description),
            "parentId": text(parent?.parentID.description),
            "flags": text(parent.map { hex($0.flags) }),
            "sampled": parent.map { .bool($0.sampled) } ?? .null,
            "tracestate": state.map { .array($0.members.map { .string($0.description) }) } ?? .null,
            "reason": text(reason),
            "tracestateDropped": text(dropped),
        ]
        return String(decoding: JSONValue.object(object).serialized(), as: UTF8.self)
    }
}
