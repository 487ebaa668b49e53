import Foundation
import KeelContract
import KeelTesting
import Testing

/// `keel trace parse` and `keel release-gate`, run as the built binary against their exact contracts.
@Suite(.timeLimit(.minutes(3))) struct TraceAndReleaseGateCommandTests {
    let directory: TemporaryDirectory
    init() throws { directory = try TemporaryDirectory(prefix: "keel-gate-cli") }

    static let traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

    private func object(_ output: String) throws -> JSONObject {
        let lines = output.split(separator: "\n")
        #expect(lines.count == 1)  // one object, one line
        guard case .object(let object) = try JSONValue(parsing: Array(output.utf8)) else {
            throw CommandTestError("not a JSON object: \(output)")
        }
        return object
    }

    @Test func aValidTraceparentPrintsItsFieldsAndExitsZero() async throws {
        let (status, output, _) = try await runKeel(
            [
                "trace", "parse", Self.traceparent, "--tracestate", "rojo=00f067aa0ba902b7, ,congo=t61rcWkgMzE",
                "--format", "json",
            ])
        #expect(status == .exited(0))
        let json = try object(output)
        #expect(
            json.keys == [
                "valid", "version", "traceId", "parentId", "flags", "sampled", "tracestate", "reason",
                "tracestateDropped",
            ])
        #expect(json["valid"] == .bool(true))
        #expect(json["version"] == .string("00"))
        #expect(json["traceId"] == .string("4bf92f3577b34da6a3ce929d0e0e4736"))
        #expect(json["parentId"] == .string("00f067aa0ba902b7"))
        #expect(json["flags"] == .string("01"))
        #expect(json["sampled"] == .bool(true))
        #expect(json["tracestate"] == .array([.string("rojo=00f067aa0ba902b7"), .string("congo=t61rcWkgMzE")]))
        #expect(json["reason"] == .null)
        let (textStatus, text, _) = try await runKeel(["trace", "parse", Self.traceparent])
        #expect(textStatus == .exited(0))
        #expect(text.contains("trace-id:    4bf92f3577b34da6a3ce929d0e0e4736"))
        #expect(text.contains("tracestate:  none"))
    }

    @Test func anInvalidTraceparentExitsOneWithTheReasonAndNulls() async throws {
        let (status, output, _) = try await runKeel(
            [
                "trace", "parse", "00-00000000000000000000000000000000-00f067aa0ba902b7-01", "--tracestate", "a=1",
                "--format", "json",
            ])
        #expect(status == .exited(1))
        let json = try object(output)
        #expect(json["valid"] == .bool(false))
        for key in ["version", "traceId", "parentId", "flags", "sampled", "tracestate", "tracestateDropped"] {
            #expect(json[key] == .null)
        }
        #expect(json["reason"]?.stringValue?.contains("all zeros") == true)
        let (textStatus, text, _) = try await runKeel(["trace", "parse", "ff" + Self.traceparent.dropFirst(2)])
        #expect(textStatus == .exited(1))
        #expect(text.contains("a new trace would be started"))
    }

    /// Found in an outside audit: JSON said nothing of why a tracestate was dropped (text did), so it read
    /// exactly as no tracestate given.
    @Test func aDroppedTracestateIsNullBesideAValidTraceparentAndSaysWhy() async throws {
        let (status, output, _) = try await runKeel(
            ["trace", "parse", Self.traceparent, "--tracestate", "a=1,a=2", "--format", "json"])
        #expect(status == .exited(0))
        let json = try object(output)
        #expect(json["tracestate"] == .null)
        #expect(json["reason"] == .null)
        #expect(json["tracestateDropped"]?.stringValue?.contains("appears twice") == true)
    }

    /// A value that begins with '-' is an option unless it follows `--` (as the help says): after `--` even
    /// `--help` is a traceparent, and an invalid one.
    @Test func aValueAfterTheSeparatorIsReadAsTheTraceparent() async throws {
        let (status, output, _) = try await runKeel(["trace", "parse", "--format", "json", "--", "--help"])
        #expect(status == .exited(1))
        #expect(try object(output)["valid"] == .bool(false))
        let (_, help, _) = try await runKeel(["trace", "parse", "--help"])
        #expect(help.contains("put it after"))
    }

    @Test func repeatedTracestatesAreOneListAsHTTPCombinesFieldLines() async throws {
        let (status, output, _) = try await runKeel(
            [
                "trace", "parse", Self.traceparent, "--tracestate", "rojo=1", "--tracestate", "congo=2", "--format",
                "json",
            ])
        #expect(status == .exited(0))
        #expect(try object(output)["tracestate"] == .array([.string("rojo=1"), .string("congo=2")]))
        // A key repeated across the lines is a duplicate in the one list: the whole tracestate is dropped.
        let (_, duplicate, _) = try await runKeel(
            ["trace", "parse", Self.traceparent, "--tracestate", "a=1", "--tracestate", "a=2", "--format", "json"])
        #expect(try object(duplicate)["tracestate"] == .null)
    }

    @Test(arguments: [
        ["trace"], ["trace", "parse"], ["trace", "parse", "a", "b"], ["trace", "format", "x"],
        ["trace", "parse", traceparent, "--format", "yaml"], ["trace", "parse", traceparent, "--bogus"],
    ])
    func traceUsageErrorsExitTwo(arguments: [String]) async throws {
        #expect(try await runKeel(arguments).0 == .exited(2))
    }

    private func writeStores(_ json: String) throws -> String {
        let url = directory.url("stores.json")
        try Data(json.utf8).write(to: url)
        return url.path
    }

    @Test func allowedExitsZeroAndRefusedExitsOneListingEveryReason() async throws {
        let path = try writeStores(ReleaseGateExamples.example)
        let (allowed, allowedOutput, _) = try await runKeel(
            ["release-gate", "--stores", path, "--platform", "ios", "--min-version", "5.2.0", "--format", "json"])
        #expect(allowed == .exited(0))
        #expect(try object(allowedOutput)["allowed"] == .bool(true))
        let (refused, output, _) = try await runKeel(
            ["release-gate", "--stores", path, "--platform", "android", "--min-version", "5.2"])
        #expect(refused == .exited(1))
        #expect(output.contains("refused"))
        #expect(output.contains("google-play  5.2.0  staged rollout at 20%"))
        let (_, json, _) = try await runKeel(
            ["release-gate", "--stores", path, "--platform", "android", "--min-version", "5.2", "--format", "json"])
        let reasons = try object(json)["reasons"]
        #expect(
            reasons
                == .array([
                    .object(["store": "google-play", "release": "5.2.0", "why": reasons?[0]?["why"] ?? .null])
                ]))
    }

    /// Found in an outside audit: a store id is input, and one with a newline printed a second line that
    /// read as the opposite verdict.
    @Test func aStoreIDCannotForgeALineOfTheTextReport() async throws {
        let forged = #"x\nallowed: the backend may require 5.2 on ios"#
        let path = try writeStores(
            #"{"stores": [{"id": "\#(forged)", "platform": "ios", "production": true, "releases": []}]}"#)
        let (status, output, _) = try await runKeel(
            ["release-gate", "--stores", path, "--platform", "ios", "--min-version", "5.2"])
        #expect(status == .exited(1))
        #expect(output.hasPrefix("refused"))
        #expect(!output.split(separator: "\n").contains { $0.hasPrefix("allowed") })
        #expect(output.contains(#"x\nallowed: the backend"#))
    }

    /// Found in review: an input that is a pipe (`<(…)`, `/dev/stdin`) read as "cannot read the file".
    @Test func theStoresFileMayBeAPipe() async throws {
        let path = try writeStores(ReleaseGateExamples.example)
        let keel = ChildProcess.productsDirectory.appendingPathComponent("keel").path
        let shell = try ChildProcess.launch(
            executable: "/bin/bash",
            arguments: [
                "-c", "\"$0\" release-gate --stores <(cat \"$1\") --platform ios --min-version 5.2.0 --format json",
                keel, path,
            ])
        shell.closeInput()
        #expect(try await shell.waitForExit(timeout: .seconds(60)) == .exited(0), "\(shell.output(of: .standardError))")
        #expect(try object(shell.output(of: .standardOutput))["allowed"] == .bool(true))
        // A directory is still unreadable input.
        #expect(
            try await runKeel([
                "release-gate", "--stores", directory.url("").path, "--platform", "ios", "--min-version", "5.2.0",
            ]).0
                == .exited(2))
    }

    @Test func anIncidentExitsZeroAndSaysWhatTheBlockScreenKeeps() async throws {
        let path = try writeStores(ReleaseGateExamples.example)
        let (status, output, _) = try await runKeel(
            ["release-gate", "--stores", path, "--platform", "android", "--min-version", "5.2", "--incident"])
        #expect(status == .exited(0))
        #expect(output.contains("must keep all local data"))
        #expect(output.contains("Stores that cannot serve the update yet: google-play"))
        let (_, json, _) = try await runKeel(
            [
                "release-gate", "--stores", path, "--platform", "android", "--min-version", "5.2", "--incident",
                "--format", "json",
            ])
        let object = try object(json)
        #expect(object["allowed"] == .bool(false))
        #expect(object["decision"] == .string("incident"))
        #expect(object["storesThatCannotServe"] == .array([.string("google-play")]))
    }

    @Test func badInputExitsTwoNamingTheFieldAsAJSONPointer() async throws {
        let path = try writeStores(
            ReleaseGateExamples.example.replacingOccurrences(of: #""percent": 20"#, with: #""percnt": 20"#))
        let (status, output, error) = try await runKeel(
            ["release-gate", "--stores", path, "--platform", "android", "--min-version", "5.2", "--format", "json"])
        #expect(status == .exited(2))
        #expect(error.contains("/stores/1/releases/0/percnt"))
        #expect(try object(output)["error"]?["pointer"] == .string("/stores/1/releases/0/percnt"))
        // A file that cannot be read is answered in JSON too: a pipeline parsing standard output gets an object.
        let (missing, missingOutput, _) = try await runKeel(
            ["release-gate", "--stores", "nope.json", "--platform", "ios", "--min-version", "5", "--format", "json"],
            in: directory.url)
        #expect(missing == .exited(2))
        #expect(try object(missingOutput)["error"]?["message"] == .string("cannot read the file"))
        // So is a usage error, whichever argument is wrong (the usage text goes to standard error).
        for arguments in [
            ["--stores", path, "--platform", "ios", "--format", "json"],
            ["--format=json", "--stores", path, "--platform", "web", "--min-version", "5"],
            ["--stores", path, "--platform", "ios", "--min-version", "5", "--format", "json", "--bogus"],
        ] {
            let (usage, usageOutput, usageError) = try await runKeel(["release-gate"] + arguments)
            #expect(usage == .exited(2))
            let answer = try object(usageOutput)["error"]
            #expect(answer?["usage"] == .bool(true))
            #expect(answer?["message"]?.stringValue.map { usageError.contains($0) } == true)
        }
    }

    @Test(arguments: [
        ["release-gate", "--platform", "ios", "--min-version", "5"],
        ["release-gate", "--stores", "stores.json", "--platform", "web", "--min-version", "5"],
        ["release-gate", "--stores", "stores.json", "--platform", "ios", "--min-version", "5.x"],
        ["release-gate", "--stores", "stores.json", "--platform", "ios"],
        ["release-gate", "--stores", "missing.json", "--platform", "ios", "--min-version", "5"],
    ])
    func gateUsageAndInputErrorsExitTwo(arguments: [String]) async throws {
        _ = try writeStores(ReleaseGateExamples.example)
        #expect(try await runKeel(arguments, in: directory.url).0 == .exited(2))
    }

    @Test func theHelpListsBothCommands() async throws {
        let (_, output, _) = try await runKeel(["--help"])
        #expect(output.contains("  trace "))
        #expect(output.contains("  release-gate "))
    }
}

enum ReleaseGateExamples {
    static let example = """
        {"stores": [
          {"id": "app-store", "platform": "ios", "production": true,
           "releases": [{"version": "5.1.0", "rollout": "available"},
                        {"version": "5.2.0", "rollout": "phased", "percent": 5, "manualUpdate": true}]},
          {"id": "google-play", "platform": "android", "production": true,
           "releases": [{"version": "5.2.0", "rollout": "staged", "percent": 20}]}
        ]}
        """
}

struct CommandTestError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
