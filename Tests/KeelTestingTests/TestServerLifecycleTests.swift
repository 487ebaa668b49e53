import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
import KeelCore
import KeelTesting
import Testing

/// Shutdown and resource hygiene of the TestServer.
@Suite(.timeLimit(.minutes(1))) struct TestServerLifecycleTests {
    @Test func shutdownClosesIdleAndStalledConnectionsAndIsIdempotent() async throws {
        let server = try TestServer()
        server.enqueue(TestResponse(body: "x"))
        server.enqueue(TestResponse(socketEffect: .noResponse))
        let idle = try RawClient(port: server.port)
        idle.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        _ = idle.read(until: "x")
        let stalled = try RawClient(port: server.port)
        stalled.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        _ = try await server.takeRequest()
        _ = try await server.takeRequest()
        server.enqueue(TestResponse(socketEffect: .stallAtStart))
        let neverRead = try RawClient(port: server.port)
        neverRead.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        _ = try await server.awaitConnectionEvent { $0.connectionID == 3 }

        server.shutdown()
        // End-of-stream, not a timeout (readUntilClose records an issue otherwise).
        #expect(idle.readUntilClose() == "")
        #expect(stalled.readUntilClose() == "")
        #expect(neverRead.readToEnd().ending != .timedOut)
        #expect(server.socketInodes.isEmpty)
        server.shutdown()
        await #expect(throws: TestServerError.self) { try await server.takeRequest(timeout: .seconds(5)) }
    }

    @Test func shutdownInterruptsLongDelaysAndThrottles() async throws {
        let server = try TestServer()
        server.enqueue(TestResponse(body: "x").delayingHeaders(by: .seconds(3600)))
        server.enqueue(TestResponse(body: "x").delayingBody(by: .seconds(3600)))
        server.enqueue(TestResponse(body: "xyz").throttled(bytes: 1, per: .seconds(3600)))
        var clients: [RawClient] = []
        for _ in 0..<3 {
            let raw = try RawClient(port: server.port)
            raw.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            clients.append(raw)
            _ = try await server.takeRequest()
        }
        let start = ContinuousClock.now
        server.shutdown()
        for client in clients { _ = client.readUntilClose() }
        // Shutdown returned long before the hour-long waits: they were interrupted, not waited out.
        #expect(ContinuousClock.now - start < .seconds(60))
    }

    /// Found in review: with `recordsRequests: false` (a long-running reference backend) every connection
    /// still left two events behind, forever. Such a server keeps the newest events only.
    @Test func aServerThatDoesNotRecordKeepsOnlyItsNewestConnectionEvents() async throws {
        let server = try TestServer(
            configuration: .init(recordsRequests: false),
            dispatcher: TestServer.Dispatcher { _ in TestResponse(body: "x") })
        for _ in 0..<1200 {
            let client = try RawClient(port: server.port)
            client.send("GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            _ = client.readUntilClose()
        }
        _ = try await server.awaitConnectionEvent { $0.connectionID == 1200 && $0.kind != .opened }
        let events = server.connectionEvents
        #expect(events.count <= 2048 && events.count >= 1024)
        #expect(events.last?.connectionID == 1200)
        #expect(server.requestCount == 1200)
    }

    /// Found in review: a thread per connection and no timeout, so idle connections (or a client dripping
    /// its head) held a long-running server's threads forever. With an idle timeout the server closes an idle
    /// connection, answers 408 to a request that stopped arriving, and serves the others as before.
    @Test func anIdleTimeoutClosesConnectionsThatSendNothing() async throws {
        let server = try TestServer(configuration: .init(idleTimeout: .milliseconds(200)))
        let idle = try RawClient(port: server.port)
        let dripping = try RawClient(port: server.port)
        dripping.send("GET / HTTP/1.1\r\nHost: x\r\n")
        let slowBody = try RawClient(port: server.port)
        slowBody.send("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n12345")
        #expect(idle.readToEnd().ending == .endOfStream)
        #expect(dripping.readUntilClose().hasPrefix("HTTP/1.1 408"))
        #expect(slowBody.readUntilClose().hasPrefix("HTTP/1.1 408"))
        #expect(server.requestCount == 0)
        server.enqueue(TestResponse(body: "served"))
        let prompt = try RawClient(port: server.port)
        prompt.send("GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        #expect(prompt.readUntilClose().hasSuffix("served"))
    }

    /// Found in review: a failed `pthread_create` (at the process's memory or thread limit) trapped, so a few
    /// dozen idle connections to `keel serve` or `keel backend` short of memory killed it. The connection the
    /// server has no thread for is reset; the others are served.
    @Test func aConnectionWithoutAThreadIsResetAndTheServerGoesOn() async throws {
        let attempts = Locked(0)
        var configuration = TestServer.Configuration()
        configuration.spawnsConnectionThread = { name, body in
            let attempt = attempts.withLock { count in
                count += 1
                return count
            }
            return attempt == 2
                ? .failure(POSIXThread.SpawnFailure(code: EAGAIN)) : POSIXThread.trySpawn(name: name, body)
        }
        let server = try TestServer(configuration: configuration)
        for _ in 0..<3 { server.enqueue(TestResponse(body: "served")) }
        let first = try RawClient(port: server.port)
        first.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(first.read(until: "served").hasSuffix("served"))
        let refused = try RawClient(port: server.port)
        refused.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(refused.readToEnd().ending != .timedOut)
        let reset = try await server.awaitConnectionEvent { $0.connectionID == 2 && $0.kind != .opened }
        #expect(reset.kind == .resetByServer)
        let third = try RawClient(port: server.port)
        third.send("GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        #expect(third.readUntilClose().hasSuffix("served"))
        #expect(server.requestCount == 2)
    }

    @Test func pendingWaitsFailWhenTheServerShutsDown() async throws {
        let server = try TestServer()
        let waiting = Task { try await server.takeRequest(timeout: .seconds(30)) }
        try await Task.sleep(for: .milliseconds(100))
        let start = ContinuousClock.now
        server.shutdown()
        await #expect(throws: TestServerError.self) { try await waiting.value }
        #expect(ContinuousClock.now - start < .seconds(20))
    }

    @Test func releasingTheLastReferenceShutsTheServerDown() async throws {
        var inodes: Set<UInt64> = []
        do {
            let server = try TestServer()
            inodes = server.socketInodes.union(server.wakePipeInodes)
            #expect(inodes.count == 2)  // the listener and the wake pipe (both ends share one inode)
        }
        #expect(inodes.isDisjoint(with: ProcFS.openInodes()))
    }

    /// Opens and closes 200 servers, each serving requests (half of them with a connection stalled in
    /// `noResponse` at shutdown), and checks that the process keeps none of their sockets or threads.
    /// Checked through /proc by the inodes of each server's own sockets and by its threads' names, so
    /// other tests running in parallel cannot disturb the count.
    @Test(.enabled(if: FileManager.default.fileExists(atPath: "/proc/self/fd")))
    func twoHundredServersLeaveNoDescriptorOrThreadBehind() async throws {
        var serials: [Int] = []
        var leakedSockets: [String] = []
        var wakePipes: Set<UInt64> = []
        for index in 0..<200 {
            let server = try TestServer()
            serials.append(server.serialNumber)
            server.enqueue(TestResponse(body: "\(index)"))
            if index % 2 == 0 { server.enqueue(TestResponse(socketEffect: .noResponse)) }
            let raw = try RawClient(port: server.port)
            raw.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            _ = raw.read(until: "\r\n\r\n\(index)")
            if index % 2 == 0 {
                raw.send("GET /stall HTTP/1.1\r\nHost: x\r\n\r\n")
                _ = try await server.takeRequest()
                _ = try await server.takeRequest()
            }
            let inodes = server.socketInodes
            #expect(inodes.count == 2)  // the listener and the one connection
            #expect(inodes.isSubset(of: ProcFS.openInodes()))
            wakePipes.formUnion(server.wakePipeInodes)
            server.shutdown()
            leakedSockets += inodes.intersection(ProcFS.openInodes()).map { "socket:[\($0)]" }
        }
        // Each server's wake pipe closes when the server value goes away (end of each iteration).
        let leakedPipes = wakePipes.intersection(ProcFS.openInodes())
        #expect(leakedPipes.isEmpty, "wake pipes still open: \(leakedPipes)")
        #expect(leakedSockets.isEmpty, "sockets still open on server ports: \(leakedSockets)")
        // Every thread was joined by shutdown, but the kernel may list a joined thread in /proc/self/task
        // for a moment after pthread_join returns (glibc wakes the joiner when the thread clears its tid,
        // before the kernel releases the task). A leaked thread never goes away; a joined one does at once.
        let names = Set(serials.flatMap { ["kts\($0)a", "kts\($0)c"] })
        var leakedThreads = ProcFS.threadNames().filter(names.contains)
        let patience = ContinuousClock.now + .seconds(5)
        while !leakedThreads.isEmpty && ContinuousClock.now < patience {
            try await Task.sleep(for: .milliseconds(10))
            leakedThreads = ProcFS.threadNames().filter(names.contains)
        }
        #expect(leakedThreads.isEmpty, "threads still running: \(leakedThreads)")
    }

    @Test(.enabled(if: FileManager.default.fileExists(atPath: "/proc/self/task")))
    func serverThreadsAreVisibleWhileRunning() throws {
        // Guards the leak test above: the thread names it looks for really are the server's.
        let server = try TestServer()
        let raw = try RawClient(port: server.port)
        server.enqueue(TestResponse(body: "x"))
        raw.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        _ = raw.read(until: "\r\n\r\nx")
        let names = ProcFS.threadNames()
        #expect(names.contains("kts\(server.serialNumber)a"))
        #expect(names.contains("kts\(server.serialNumber)c"))
        server.shutdown()
    }
}

/// Reads this process's sockets and threads from Linux's /proc.
enum ProcFS {
    /// The inodes of every socket and pipe this process has open (`/proc/self/fd/<n>` → `socket:[<inode>]`).
    static func openInodes() -> Set<UInt64> {
        let descriptors = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        var inodes: Set<UInt64> = []
        for descriptor in descriptors {
            guard
                let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(descriptor)"),
                let open = target.firstIndex(of: "["), target.hasSuffix("]"),
                let inode = UInt64(target[target.index(after: open)...].dropLast())
            else { continue }
            inodes.insert(inode)
        }
        return inodes
    }

    static func threadNames() -> [String] {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        return tasks.compactMap { task in
            (try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8))?
                .trimmingCharacters(in: .whitespacesAndNewlines)
        }
    }
}

/// The graceful stop (`drain`), as `keel backend` does it on SIGTERM.
@Suite(.timeLimit(.minutes(1))) struct TestServerDrainTests {
    /// One HTTP/1.1 response read off `client`: nil when the connection ended before a whole one arrived.
    static func response(from client: RawClient) -> (head: String, body: String)? {
        var received: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let text = String(decoding: received, as: UTF8.self)
            if let end = text.range(of: "\r\n\r\n") {
                let head = String(text[..<end.lowerBound])
                let length =
                    head.split(separator: "\r\n").first { $0.lowercased().hasPrefix("content-length:") }
                    .flatMap { Int($0.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) } ?? 0
                let body = text[end.upperBound...]
                if body.utf8.count >= length { return (head, String(body)) }
            }
            guard !POSIX.waitReadable([client.descriptor], timeoutMilliseconds: 5000).isEmpty,
                let count = chunk.withUnsafeMutableBytes({ POSIX.read(client.descriptor, into: $0) }), count > 0
            else { return nil }
            received += chunk[0..<count]
        }
    }

    /// Found in review: the drain waited until nothing was in flight and then shut down in a second step, and a
    /// kept-alive connection could start an exchange in between (or at any time of the drain): the backend
    /// applied the request and the shutdown cut its answer. Now a request is either handed on and answered, or
    /// never handed on; answers during the drain close their connections.
    @Test func aDrainAnswersEveryRequestItHandsOnAndHandsOnNoOther() async throws {
        for round in 0..<4 {
            let dispatched = Locked(0)
            let server = try TestServer(
                configuration: .init(recordsRequests: false),
                dispatcher: TestServer.Dispatcher { _ in
                    let number = dispatched.withLock { count in
                        count += 1
                        return count
                    }
                    usleep(200)  // the work of applying it
                    return TestResponse(body: "applied \(number)")
                })
            let answered = Locked(0)
            let finished = DispatchGroup()
            for _ in 0..<4 {
                let client = try RawClient(port: server.port)
                finished.enter()
                Thread.detachNewThread {
                    defer { finished.leave() }
                    while true {
                        client.send("POST /mutations HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n")
                        guard let (head, _) = Self.response(from: client) else { return }
                        answered.withLock { $0 += 1 }
                        // An answer during the drain closes its connection.
                        if head.lowercased().contains("connection: close") { return }
                    }
                }
            }
            while dispatched.withLock({ $0 }) < 50 { try await Task.sleep(for: .milliseconds(1)) }
            await server.drain(timeout: .seconds(20))
            await withCheckedContinuation { continuation in
                finished.notify(queue: .global()) { continuation.resume() }
            }
            #expect(dispatched.withLock { $0 } == answered.withLock { $0 }, "round \(round)")
        }
    }

    /// Found in review: an exchange stalled on purpose (`noResponse`) counted as in flight, so a drain waited
    /// its whole timeout for an answer that never comes; and connects during a drain were left hanging in
    /// the backlog instead of refused.
    @Test func aDrainNeitherWaitsForAStallNorLetsNewConnectionsHang() async throws {
        let server = try TestServer()
        server.enqueue(TestResponse(socketEffect: .noResponse))
        let stalled = try RawClient(port: server.port)
        stalled.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        _ = try await server.takeRequest()
        // Held in flight: a dispatcherless queue answer that is slow to write.
        server.enqueue(TestResponse(body: "late").delayingHeaders(by: .seconds(2)))
        let held = try RawClient(port: server.port)
        held.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        _ = try await server.takeRequest()
        let start = ContinuousClock.now
        let draining = Task { await server.drain(timeout: .seconds(45)) }
        try await Task.sleep(for: .milliseconds(200))
        #if os(Linux)
            // Refused at once (the listening socket is shut), not accepted into a backlog nobody serves. (On
            // Darwin, shutdown(2) of a listening socket does nothing: connects wait until the drain ends.)
            #expect(throws: (any Error).self) { try RawClient(port: server.port) }
        #endif
        let answer = Self.response(from: held)
        #expect(answer?.body == "late" && answer?.head.lowercased().contains("connection: close") == true)
        await draining.value
        // Done once the held answer went out, not after the stalled exchange's 45 s.
        #expect(ContinuousClock.now - start < .seconds(30))
        #expect(stalled.readToEnd().ending != .timedOut)
    }
}

@Suite(.timeLimit(.minutes(1))) struct RefusingPortTests {
    @Test func connectionsAreRefusedWhileThePortStaysReserved() async throws {
        let refusing = try RefusingPort()
        #expect(throws: (any Error).self) { try RawClient(port: refusing.port) }
        let code = await urlErrorCode { _ = try await makeSession().get(refusing.url("/x")) }
        #expect(code == .cannotConnectToHost)
        // Reserved: binding the same port fails while the value lives.
        #expect(throws: (any Error).self) { try TestServer(configuration: .init(port: refusing.port)) }
    }
}
