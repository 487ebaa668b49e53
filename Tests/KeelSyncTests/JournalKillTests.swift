import Foundation
import KeelCore
import KeelHTTP
import KeelSync
import KeelTesting
import Testing

/// MOB-API-004 with a real process: killed (SIGKILL) while its keyed request is in flight, relaunched on
/// the same journal, it reconciles, and the server has applied the operation exactly once.
@Suite(.timeLimit(.minutes(2))) struct JournalKillTests {
    @Test func aKeyedPostKilledMidRequestIsAppliedExactlyOnceAfterRelaunch() async throws {
        let directory = try TemporaryDirectory(prefix: "keel-journal-kill")
        let journalPath = directory.url("journal.sqlite").path
        let key = IdempotencyKey.make(using: .seeded(21)).rawValue
        let server = try TestServer()
        let applied = Locked<(keys: Set<String>, duplicates: Int)>(([], 0))
        // The backend applies a key once; a repeat gets the stored result. The first time, it applies the
        // operation and then stalls without answering: the client cannot know.
        let apply: @Sendable (RecordedRequest) -> Bool = { request in
            let key = request.headers["Idempotency-Key"] ?? "?"
            return applied.withLock { state in
                if state.keys.insert(key).inserted { return true }
                state.duplicates += 1
                return false
            }
        }
        server.setDispatcher(
            TestServer.Dispatcher { request in
                _ = apply(request)
                return TestResponse(socketEffect: .noResponse)
            })
        let arguments = ["--journal", journalPath, "--server", server.baseURL.absoluteString, "--key", key]
        let first = try ChildProcess.launch(product: "keel-fixtures", arguments: ["journal-send"] + arguments)
        #expect(try await first.nextLine(timeout: .seconds(30)) == "sending", "\(first.output(of: .standardError))")
        _ = try await server.takeRequest(timeout: .seconds(30))  // the request reached the server
        first.kill()
        #expect(try await first.waitForExit() == .signaled(ChildProcess.Signal.kill))
        // The journal on disk says the operation may have been sent.
        let seen = try await SQLiteOperationJournal(path: journalPath).entry("outbox-1")
        #expect(seen?.state == .sending)

        server.setDispatcher(
            TestServer.Dispatcher { request in
                _ = apply(request)
                return TestResponse(status: 200, headers: ["X-Request-ID": "req-stored"], body: #"{"results": []}"#)
            })
        let relaunched = try ChildProcess.launch(product: "keel-fixtures", arguments: ["journal-reconcile"] + arguments)
        relaunched.closeInput()
        #expect(try await relaunched.waitForExit(timeout: .seconds(60)) == .exited(0))
        let lines = relaunched.output(of: .standardOutput).split(separator: "\n").filter { $0 != "sending" }
        #expect(lines == ["outbox-1 succeeded req-stored", "reconciled"], "\(relaunched.output(of: .standardError))")
        let posts = server.requests.filter { $0.method == "POST" }
        #expect(posts.count == 2)
        #expect(Set(posts.map { $0.headers["Idempotency-Key"] }) == [key])
        #expect(Set(posts.map { $0.headers["X-Correlation-ID"] }).count == 1)  // the correlation id survived
        #expect(applied.withLock { $0.keys } == [key])  // applied once
        #expect(applied.withLock { $0.duplicates } == 1)  // the re-send was recognised as a repeat
        #expect(try await SQLiteOperationJournal(path: journalPath).unresolved().isEmpty)
    }

    /// MOB-API-004 (API-004.3), suspension with a real process: stopped (SIGSTOP, as the OS suspends an app)
    /// while the server holds its keyed request, the answer arrives while it cannot run; the journal on disk
    /// still says the operation may have been sent — nothing is called done that the app has not seen —; resumed
    /// (SIGCONT), it reads the answer and settles the operation `succeeded`, sent once.
    @Test func aProcessSuspendedMidRequestSettlesFromTheAnswerThatCameMeanwhile() async throws {
        let directory = try TemporaryDirectory(prefix: "keel-journal-stop")
        let journalPath = directory.url("journal.sqlite").path
        let key = IdempotencyKey.make(using: .seeded(22)).rawValue
        let server = try TestServer()
        let release = DispatchSemaphore(value: 0)
        let answered = Locked(false)
        server.setDispatcher(
            TestServer.Dispatcher { _ in
                release.wait()  // held until the app is suspended
                answered.withLock { $0 = true }
                return TestResponse(
                    status: 200, headers: ["X-Request-ID": "req-while-stopped"], body: #"{"results": []}"#)
            })
        let arguments = ["--journal", journalPath, "--server", server.baseURL.absoluteString, "--key", key]
        let app = try ChildProcess.launch(product: "keel-fixtures", arguments: ["journal-send"] + arguments)
        defer { app.kill() }
        #expect(try await app.nextLine(timeout: .seconds(30)) == "sending", "\(app.output(of: .standardError))")
        _ = try await server.takeRequest(timeout: .seconds(30))
        app.kill(signal: SIGSTOP)
        release.signal()  // the answer goes out while the app cannot run
        let deadline = ContinuousClock.now + .seconds(10)
        while !answered.withLock({ $0 }), ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
        try await Task.sleep(for: .milliseconds(100))  // the answer's bytes reach the stopped app's socket
        #expect(try await SQLiteOperationJournal(path: journalPath).entry("outbox-1")?.state == .sending)
        app.kill(signal: SIGCONT)
        #expect(try await app.waitForExit(timeout: .seconds(30)) == .exited(0))
        #expect(app.output(of: .standardOutput).contains("answered"))
        let settled = try await SQLiteOperationJournal(path: journalPath).entry("outbox-1")
        #expect(
            settled?.state == .succeeded && settled?.requestID == "req-while-stopped", "\(String(describing: settled))")
        #expect(server.requests.filter { $0.method == "POST" }.count == 1)
    }
}
