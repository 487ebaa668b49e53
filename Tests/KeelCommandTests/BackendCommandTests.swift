import Foundation
import KeelContract
import KeelTesting
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `keel backend`, run as the built binary: its first line, its admin endpoints, a clean stop on SIGTERM
/// that still answers the request in flight, and data that survives a restart.
@Suite(.timeLimit(.minutes(1))) struct BackendCommandTests {
    /// Sends a request with a fresh session; the status and the JSON body.
    func send(_ method: String, _ url: URL, json: String? = nil, headers: [String: String] = [:]) async throws -> (
        Int, JSONValue?
    ) {
        var request = URLRequest(url: url)
        request.httpMethod = method
        request.timeoutInterval = 10
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        if let json {
            request.httpBody = Data(json.utf8)
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        let session = URLSession(configuration: .ephemeral)
        defer { session.finishTasksAndInvalidate() }
        let (data, response) = try await session.data(for: request)
        return ((response as? HTTPURLResponse)?.statusCode ?? 0, try? JSONValue(parsing: data))
    }

    func start(_ data: URL) async throws -> (ChildProcess, URL) {
        let child = try ChildProcess.launch(product: "keel", arguments: ["backend", "--data", data.path, "--admin"])
        let first = try #require(try await child.nextLine(timeout: .seconds(20)))
        #expect(first.hasPrefix("listening http://127.0.0.1:"), "\(first)")
        return (child, try #require(URL(string: String(first.dropFirst("listening ".count)))))
    }

    @Test func theBackendServesStopsCleanlyOnSIGTERMAndKeepsItsData() async throws {
        let directory = try TemporaryDirectory(prefix: "keel-backend-command")
        let data = directory.url("backend")
        let (child, base) = try await start(data)
        let (signInStatus, session) = try await send(
            "POST", base.appendingPathComponent("sessions"), json: #"{"account": "alice"}"#)
        #expect(signInStatus == 200)
        let token = try #require(session?["token"]?.stringValue)
        let (faultStatus, _) = try await send(
            "POST", base.appendingPathComponent("_admin/fault"), json: #"{"mode": "none", "delayAcksMs": 600}"#)
        #expect(faultStatus == 200)

        // A batch in flight when SIGTERM arrives is still answered.
        let inFlight = Task {
            try await send(
                "POST", base.appendingPathComponent("mutations"),
                json: #"{"mutations": [{"id": "m1", "type": "create", "noteID": "n1", "title": "T"}]}"#,
                headers: ["Authorization": "Bearer \(token)", "Idempotency-Key": "batch-0000000000000001"])
        }
        var applied: JSONValue?
        for _ in 0..<400 where applied?["applied"]?["m1"] != 1 {
            try await Task.sleep(for: .milliseconds(5))
            applied = try await send("GET", base.appendingPathComponent("_admin/applied")).1
        }
        #expect(applied == ["applied": ["m1": 1], "entities": 1])
        child.kill(signal: ChildProcess.Signal.terminate)
        let (status, answer) = try await inFlight.value
        #expect(status == 200 && answer?["results"]?[0]?["status"] == "applied")
        #expect(try await child.waitForExit() == .exited(0))
        let output = child.output(of: .standardOutput)
        #expect(output.contains("POST /sessions 200 account=- traceparent=-"))
        #expect(output.contains("POST /mutations 200 account=alice"))
        #expect(output.hasSuffix("stopped\n"))
        #expect(!output.contains("/_admin"), "admin requests are not logged (--help): \(output)")

        // Restarted on the same directory: the key, the note and the token are still there.
        let (again, againBase) = try await start(data)
        let (_, afterRestart) = try await send("GET", againBase.appendingPathComponent("_admin/applied"))
        #expect(afterRestart == ["applied": ["m1": 1], "entities": 1])
        let (feedStatus, feed) = try await send(
            "GET", againBase.appendingPathComponent("changes"), headers: ["Authorization": "Bearer \(token)"])
        #expect(feedStatus == 200 && feed?["changes"]?[0]?["id"] == "n1")
        try again.writeLine("quit")
        #expect(try await again.waitForExit() == .exited(0))
    }

    @Test func theEndOfStandardInputDoesNotStopIt() async throws {
        let directory = try TemporaryDirectory(prefix: "keel-backend-stdin")
        let (child, base) = try await start(directory.url("backend"))
        // As a script's background job or a harness's child with stdin from /dev/null: input ends at once.
        child.closeInput()
        await #expect(throws: WaitTimeout.self) { try await child.waitForExit(timeout: .milliseconds(500)) }
        let (status, _) = try await send("POST", base.appendingPathComponent("sessions"), json: #"{"account": "bob"}"#)
        #expect(status == 200)
        child.kill(signal: ChildProcess.Signal.terminate)
        #expect(try await child.waitForExit() == .exited(0))
        #expect(child.output(of: .standardOutput).hasSuffix("stopped\n"))
    }

    /// With `--exit-with-parent`, started by a process that then dies (a killed demo, a crashed test run),
    /// it stops instead of holding its port forever; without it (the contract: signals and `quit` stop it),
    /// a CI step that starts it in the background and ends leaves it running for the next step.
    @Test(arguments: [true, false])
    func itOutlivesTheProcessThatStartedItUnlessAskedNotTo(exitWithParent: Bool) async throws {
        let directory = try TemporaryDirectory(prefix: "keel-backend-orphan")
        let keel = ChildProcess.productsDirectory.appendingPathComponent("keel").path
        // A shell starts it in the background (stdin from /dev/null; a session of its own, so that nothing
        // but its launcher's exit can reach it), says its pid, and waits.
        let flag = exitWithParent ? " --exit-with-parent" : ""
        let shell = try ChildProcess.launch(
            executable: "/bin/sh",
            arguments: [
                "-c", "setsid \"$0\" backend --data \"$1\"\(flag) > /dev/null 2>&1 & echo $!; sleep 60", keel,
                directory.url("b").path,
            ])
        let line = try await shell.nextLine(timeout: .seconds(20))
        let pid = try #require(line.flatMap { Int32($0) })
        defer { kill(pid, SIGKILL) }
        try await Task.sleep(for: .milliseconds(1500))
        #expect(kill(pid, 0) == 0)  // running while its launcher is
        kill(shell.pid, SIGKILL)  // the shell alone, not its process group: the backend is orphaned, not killed
        _ = try await shell.waitForExit()
        var gone = false
        for _ in 0..<30 where !gone {
            try await Task.sleep(for: .milliseconds(100))
            gone = kill(pid, 0) != 0
        }
        if exitWithParent {
            for _ in 0..<70 where !gone {
                try await Task.sleep(for: .milliseconds(100))
                gone = kill(pid, 0) != 0
            }
        }
        #expect(gone == exitWithParent, gone ? "it stopped with its launcher" : "it outlived its launcher")
    }

    /// Found in review: the request log was written on each request's own thread, so a reader of standard
    /// output that stopped reading (a harness that only wanted the `listening` line) hung the backend once
    /// the pipe filled, and one that closed its end killed it (SIGPIPE) at the next request.
    @Test(arguments: ["head -n 1", "head -n 1; sleep 30"])
    func aStandardOutputNobodyReadsNeitherHangsNorKillsTheBackend(reader: String) async throws {
        let directory = try TemporaryDirectory(prefix: "keel-backend-log")
        let keel = ChildProcess.productsDirectory.appendingPathComponent("keel").path
        let shell = try ChildProcess.launch(
            executable: "/bin/bash",
            arguments: [
                "-c", "\"$0\" backend --data \"$1\" > >(\(reader)) & echo \"pid $!\"; wait $!", keel,
                directory.url("b").path,
            ])
        defer { shell.kill(signal: ChildProcess.Signal.kill) }
        var pid: Int32?
        var base: URL?
        for _ in 0..<2 {
            let line = try #require(try await shell.nextLine(timeout: .seconds(20)))
            if line.hasPrefix("pid ") { pid = Int32(line.dropFirst(4)) }
            if line.hasPrefix("listening ") { base = URL(string: String(line.dropFirst("listening ".count))) }
        }
        let backend = try #require(pid)
        let url = try #require(base).appendingPathComponent("notes/n1")
        defer { kill(backend, SIGKILL) }
        try await Task.sleep(for: .milliseconds(300))  // the reader has had its line (and, closing, gone away)
        // Some 150 KB of log lines, more than a pipe holds.
        var answered = 0
        for _ in 0..<1000 {
            guard await fetch(url, timeout: 5).status == 401 else { break }
            answered += 1
        }
        #expect(answered == 1000, "the backend stopped answering after \(answered) requests")
        kill(backend, SIGTERM)
        var gone = false
        for _ in 0..<100 where !gone {
            try await Task.sleep(for: .milliseconds(100))
            gone = kill(backend, 0) != 0
        }
        #expect(gone, "it did not stop on SIGTERM")
    }

    @Test func usageErrorsExitWith2() async throws {
        for arguments in [
            ["backend"], ["backend", "--data"], ["backend", "--data", "/tmp/x", "extra"], ["backend", "--data", ""],
            ["backend", "--data", "/tmp/x", "--data", "/tmp/y"],
            ["backend", "--data", "/tmp/x", "--port", "1", "--port", "2"],
        ] {
            let child = try ChildProcess.launch(product: "keel", arguments: arguments)
            #expect(try await child.waitForExit() == .exited(2), "\(arguments)")
        }
        let help = try ChildProcess.launch(product: "keel", arguments: ["backend", "--help"])
        #expect(try await help.waitForExit() == .exited(0))
        let text = help.output(of: .standardOutput)
        for endpoint in [
            "/_admin/applied", "/_admin/fault", "/_admin/min-version", "delayAcksMs", "listening http://127.0.0.1:",
        ] {
            #expect(text.contains(endpoint))
        }
    }

    /// MOB-API-005 (API-005.3): a required update during a staged rollout. With `--stores`, the backend asks
    /// the release gate before it requires a version: while Google Play serves 5.2.0 to 20 % of its users,
    /// 5.2.0 is not required on Android, and an installed 5.1.0 keeps working; at 100 % it is, and 5.1.0 is
    /// told to update (iOS is not touched). A security incident may block first; a catalog that cannot be
    /// read refuses the switch and changes nothing.
    @Test func aRequiredUpdateWaitsForTheStagedRolloutToReachEveryUser() async throws {
        let directory = try TemporaryDirectory(prefix: "keel-backend-stores")
        let stores = directory.url("stores.json")
        func rollout(android percent: Int, ios rollout: String = #""rollout": "available""#) throws {
            try Data(
                """
                {"stores": [
                  {"id": "app-store", "platform": "ios", "production": true,
                   "releases": [{"version": "5.2.0", \(rollout)}]},
                  {"id": "google-play", "platform": "android", "production": true,
                   "releases": [{"version": "5.1.0", "rollout": "available"},
                                {"version": "5.2.0", "rollout": "staged", "percent": \(percent)}]}
                ]}
                """.utf8
            ).write(to: stores)
        }
        try rollout(android: 20)
        let child = try ChildProcess.launch(
            product: "keel",
            arguments: ["backend", "--data", directory.url("backend").path, "--admin", "--stores", stores.path])
        defer { child.kill() }
        let first = try #require(try await child.nextLine(timeout: .seconds(20)))
        let base = try #require(URL(string: String(first.dropFirst("listening ".count))))
        let (_, session) = try await send(
            "POST", base.appendingPathComponent("sessions"), json: #"{"account": "alice"}"#)
        let token = try #require(session?["token"]?.stringValue)
        func changes(_ platform: String) async throws -> (Int, JSONValue?) {
            try await send(
                "GET", base.appendingPathComponent("changes"),
                headers: ["Authorization": "Bearer \(token)", "X-App-Version": "5.1.0", "X-App-Platform": platform])
        }
        func require(_ platform: String, _ version: String, incident: Bool? = nil) async throws -> (Int, JSONValue?) {
            let extra = incident.map { #", "incident": \#($0)"# } ?? ""
            return try await send(
                "POST", base.appendingPathComponent("_admin/min-version"),
                json: #"{"platform": "\#(platform)", "version": "\#(version)"\#(extra)}"#)
        }

        // 20 %: refused, with the store and the release that fall short; the installed 5.1.0 keeps working.
        let (refused, why) = try await require("android", "5.2.0")
        #expect(refused == 409 && why?["code"] == "rollout_incomplete", "\(refused) \(why?.description ?? "")")
        let reasons = Self.strings(why?["reasons"])
        #expect(
            reasons.count == 1 && reasons[0].hasPrefix("google-play 5.2.0:") && reasons[0].contains("20"), "\(reasons)")
        #expect(try await changes("android").0 == 200)

        // 100 %: required; 5.1.0 on Android must update to 5.2.0, on iOS nothing changed.
        try rollout(android: 100)
        #expect(try await require("android", "5.2.0").0 == 200)
        let (blocked, answer) = try await changes("android")
        #expect(blocked == 426 && answer?["code"] == "update_required", "\(blocked) \(answer?.description ?? "")")
        #expect(answer?.description.contains("5.2.0") == true, "\(answer?.description ?? "")")
        #expect(try await changes("ios").0 == 200)

        // A security incident may block before every user can update: the answer lists who cannot yet.
        try rollout(android: 100, ios: #""rollout": "phased", "percent": 5"#)
        #expect(try await require("ios", "5.2.0").0 == 409)
        #expect(try await changes("ios").0 == 200)
        let (forced, said) = try await require("ios", "5.2.0", incident: true)
        #expect(forced == 200 && said?["incident"] == true, "\(forced) \(said?.description ?? "")")
        #expect(Self.strings(said?["reasons"]).first?.hasPrefix("app-store 5.2.0:") == true)
        #expect(try await changes("ios").0 == 426)

        // A catalog that cannot be read verifies nothing: a raise is refused and the policy left as it was —
        // but a security incident may still block; lowering a minimum is never asked about.
        try FileManager.default.removeItem(at: stores)
        let (unverified, because) = try await require("android", "5.3.0")
        #expect(unverified == 503 && because?["code"] == "rollout_unverified")
        let (stillOld, minimum) = try await changes("android")
        #expect(
            stillOld == 426 && minimum?.description.contains("5.2.0") == true && !minimum!.description.contains("5.3.0")
        )
        let (emergency, stated) = try await require("ios", "5.3.0", incident: true)
        #expect(emergency == 200 && stated?["incident"] == true, "\(emergency) \(stated?.description ?? "")")
        #expect(try await require("ios", "5.1.0").0 == 200)  // lowered: nobody newly blocked
        #expect(try await changes("ios").0 == 200)
        // Clearing a minimum asks nobody.
        #expect(
            try await send(
                "POST", base.appendingPathComponent("_admin/min-version"),
                json: #"{"platform": "android", "version": null}"#
            ).0 == 200)
        #expect(try await changes("android").0 == 200)
    }

    static func strings(_ value: JSONValue?) -> [String] {
        guard case .array(let items)? = value else { return [] }
        return items.compactMap(\.stringValue)
    }

    @Test func aStoresFileThatIsNotACatalogIsAUsageError() async throws {
        let directory = try TemporaryDirectory(prefix: "keel-backend-stores")
        try Data(#"{"stores": [{"id": "app-store", "platform": "ios", "production": true, "releses": []}]}"#.utf8)
            .write(to: directory.url("typo.json"))
        for file in ["typo.json", "missing.json"] {
            let child = try ChildProcess.launch(
                product: "keel",
                arguments: ["backend", "--data", directory.url("backend").path, "--stores", directory.url(file).path])
            #expect(try await child.waitForExit() == .exited(2), "\(file)")
            #expect(child.output(of: .standardError).contains("--stores"), "\(child.output(of: .standardError))")
        }
    }

    @Test func aDataDirectoryThatIsAFileExitsOneSayingSo() async throws {
        let directory = try TemporaryDirectory(prefix: "keel-backend-file")
        try Data("x".utf8).write(to: directory.url("a-file"))
        let child = try ChildProcess.launch(
            product: "keel", arguments: ["backend", "--data", directory.url("a-file").path])
        #expect(try await child.waitForExit() == .exited(1))
        let error = child.output(of: .standardError)
        #expect(error.contains("a-file cannot be used: ") && !error.contains("NSCocoaErrorDomain"), "\(error)")
    }

    @Test func aPortInUseExitsOneSayingSo() async throws {
        let directory = try TemporaryDirectory(prefix: "keel-backend-port")
        let (first, base) = try await start(directory.url("first"))
        defer { first.kill(signal: ChildProcess.Signal.kill) }
        let port = try #require(base.port)
        let second = try ChildProcess.launch(
            product: "keel", arguments: ["backend", "--data", directory.url("second").path, "--port", "\(port)"])
        #expect(try await second.waitForExit() == .exited(1))
        let error = second.output(of: .standardError)
        #expect(error.contains("cannot listen on 127.0.0.1") && error.contains("\(port)"), "\(error)")
        #expect(!error.contains("TestServer"), "\(error)")
        #expect(second.output(of: .standardOutput).isEmpty)
    }

    /// Two backends on one data directory would each keep their own list of keys being applied, so a key
    /// could be applied twice: the second exits 1 saying the directory is in use, and the first keeps
    /// serving. Once the first is killed (the kernel drops its lock), the directory can be served again.
    @Test func aSecondBackendOnTheSameDataDirectoryExitsOne() async throws {
        let directory = try TemporaryDirectory(prefix: "keel-backend-data")
        let (first, base) = try await start(directory.url("data"))
        let second = try ChildProcess.launch(
            product: "keel", arguments: ["backend", "--data", directory.url("data").path])
        #expect(try await second.waitForExit() == .exited(1))
        let error = second.output(of: .standardError)
        #expect(error.contains("in use by another reference backend"), "\(error)")
        #expect(second.output(of: .standardOutput).isEmpty)
        let (status, _) = try await send(
            "POST", base.appendingPathComponent("sessions"), json: #"{"account": "alice"}"#)
        #expect(status == 200)
        first.kill(signal: ChildProcess.Signal.kill)
        _ = try await first.waitForExit()
        let (third, _) = try await start(directory.url("data"))
        third.kill(signal: ChildProcess.Signal.kill)
    }
}
