import Foundation
import KeelCore
import KeelHTTP
import KeelTesting
import Testing

/// Streams over URLSessionTransport (the Apple default): the same contract as over SocketTransport, with
/// URLSession's whole-second idle timeout standing for the no-progress limit.
@Suite(.timeLimit(.minutes(1))) struct URLSessionStreamTests {
    func client(_ server: TestServer) -> HTTPClient {
        HTTPClient(configuration: .init(baseURL: server.baseURL, transport: URLSessionTransport()))
    }

    @Test func eventsArriveAsTheyComeAndTheTerminalEventEndsTheStream() async throws {
        let server = try TestServer()
        let head = "data: one\n\nevent: done\ndata: two\n\n"
        var response = TestResponse(headers: ["Content-Type": "text/event-stream"], body: head + "data: late\n\n")
        response.throttle = .init(bytes: head.utf8.count, period: .seconds(30))
        server.enqueue(response)
        let start = ContinuousClock.now
        let (events, failure) = await collect(
            client(server).events(
                .get("/events"), format: .serverSentEvents,
                policy: StreamPolicy(noProgressTimeout: .seconds(60), isTerminal: { $0.type == "done" })))
        #expect(failure == nil)
        #expect(events.map(\.data) == ["one", "two"])
        #expect(ContinuousClock.now - start < .seconds(10))
    }

    /// Found in review: URLSession kept delivering into an unbounded buffer, so a reader slower than the
    /// server (or a hostile server) grew memory without end. URLSession cannot make the server wait, so past
    /// 8 MiB unread the stream ends — what arrived is still read first, nothing after — and the exchange is
    /// cancelled.
    @Test func aReaderFarBehindTheServerEndsTheStreamInsteadOfBufferingIt() async throws {
        let server = try TestServer()
        let size = 256 << 20
        server.enqueue(TestResponse().generatedBody(count: size))
        let transport = URLSessionTransport()
        let stream = try await transport.openStream(
            TransportRequest(method: "GET", url: server.url("/feed")), connectTimeout: .seconds(5),
            noProgressTimeout: .seconds(30))
        var iterator = stream.body.makeAsyncIterator()
        #expect(try await iterator.next()?.isEmpty == false)
        // A reader busy elsewhere for a second: the server goes on sending. (FoundationNetworking may go on
        // downloading after the task is cancelled; what arrives then is dropped, never kept.)
        try await Task.sleep(for: .seconds(1))
        var read = 0
        do {
            while let chunk = try await iterator.next() { read += chunk.count }
            Issue.record("the stream ended without an error after \(read) bytes")
        } catch {
            #expect((error as? TransportError)?.code == .responseTooLarge, "\(error)")
        }
        #expect(read > 0 && read <= (8 << 20) + (1 << 20))  // what was waiting is handed out first
    }

    @Test func aStallEndsWithTimeout() async throws {
        let server = try TestServer()
        let first = "{\"n\":1}\n"
        var response = TestResponse(body: first + "{\"n\":2}\n")
        response.throttle = .init(bytes: first.utf8.count, period: .seconds(30))
        server.enqueue(response)
        let (events, failure) = await collect(
            client(server).events(
                .get("/feed"), format: .newlineDelimitedJSON, policy: StreamPolicy(noProgressTimeout: .seconds(1))))
        #expect(events.map(\.data) == [#"{"n":1}"#])
        #expect(failure?.kind == .timeout)
    }

    @Test func aCleanCloseEndsTheStream() async throws {
        let server = try TestServer()
        server.enqueue(TestResponse(body: "{\"n\":1}\n{\"n\":2}\n", socketEffect: .disconnectAtEnd))
        let (events, failure) = await collect(client(server).events(.get("/feed"), format: .newlineDelimitedJSON))
        #expect(failure == nil)
        #expect(events.count == 2)
    }

    @Test func aHeadThatNeverComesTimesOutByTheConnectLimit() async throws {
        let server = try TestServer()
        server.enqueue(TestResponse(body: "x\n").delayingHeaders(by: .seconds(30)))
        let start = ContinuousClock.now
        let (_, failure) = await collect(
            client(server).events(
                .get("/feed"), format: .newlineDelimitedJSON,
                policy: StreamPolicy(connectTimeout: .milliseconds(500), noProgressTimeout: .seconds(60))))
        #expect(failure?.kind == .timeout)
        #expect(ContinuousClock.now - start < .seconds(10))
    }
}
