import Foundation
import KeelCore
import KeelHTTP
import KeelTesting
import Testing

/// Long-lived streams (the exception of MOB-API-002): finite connect and no-progress timeouts, a completion
/// condition, cancellation, and no overall timeout; against a real TestServer that throttles, stalls and
/// closes mid-event. Timeouts here are real (they bound socket waits), and short.
@Suite(.timeLimit(.minutes(1))) struct EventStreamTests {
    static let sse = """
        : a comment, as keep-alives are\r
        id: 1\r
        event: note\r
        data: {"id": 1,\r
        data:  "title": "first"}\r
        \r
        data: second\r
        \r
        event: done\r
        data: bye\r
        \r

        """

    func client(_ server: TestServer) -> HTTPClient {
        HTTPClient(configuration: .init(baseURL: server.baseURL, transport: SocketTransport()))
    }

    @Test func serverSentEventsArriveThrottledAndTheTerminalEventEndsTheStream() async throws {
        let server = try TestServer()
        let sse = Self.sse + "data: after a long pause\n\n"
        var response = TestResponse(headers: ["Content-Type": "text/event-stream"], body: sse)
        // Throttled, then a 30 s pause right after the terminal event: only the completion condition can end
        // the stream in time.
        response.throttle = .init(bytes: Self.sse.utf8.count, period: .seconds(30))
        server.enqueue(response)
        let policy = StreamPolicy(noProgressTimeout: .seconds(60), isTerminal: { $0.type == "done" })
        let start = ContinuousClock.now
        let (events, failure) = await collect(
            client(server).events(.get("/events"), format: .serverSentEvents, policy: policy))
        #expect(failure == nil)
        #expect(
            events == [
                StreamEvent(data: "{\"id\": 1,\n \"title\": \"first\"}", type: "note", id: "1"),
                StreamEvent(data: "second", id: "1"),  // the last event id carries over
                StreamEvent(data: "bye", type: "done", id: "1"),
            ])
        #expect(ContinuousClock.now - start < .seconds(10))
    }

    @Test func theTerminalEventClosesTheConnectionAtOnce() async throws {
        let server = try TestServer()
        // After the terminal event the server keeps writing keep-alive comments, 8 bytes every 20 ms: it
        // finds the connection closed on one of its next writes, long before its own end (~5 s).
        let body = "data: x\n\nevent: done\ndata: bye\n\n" + String(repeating: ": keep-alive\n", count: 200)
        var response = TestResponse(headers: ["Content-Type": "text/event-stream"], body: body)
        response.throttle = .init(bytes: 8, period: .milliseconds(20))
        server.enqueue(response)
        let (events, failure) = await collect(
            client(server).events(
                .get("/events"), format: .serverSentEvents, policy: StreamPolicy(isTerminal: { $0.type == "done" })))
        #expect(failure == nil)
        #expect(events.map(\.data) == ["x", "bye"])
        _ = try await server.awaitConnectionEvent(timeout: .seconds(4)) { $0.kind == .closedByClient }
    }

    @Test func throttledChunkedEventsArriveWhole() async throws {
        let server = try TestServer()
        var response = TestResponse(headers: ["Content-Type": "text/event-stream"], body: Self.sse).chunked(size: 16)
        response.throttle = .init(bytes: 9, period: .milliseconds(2))
        server.enqueue(response)
        let (events, failure) = await collect(client(server).events(.get("/events"), format: .serverSentEvents))
        #expect(failure == nil)
        #expect(events.map(\.data) == ["{\"id\": 1,\n \"title\": \"first\"}", "second", "bye"])
    }

    /// Found in review: lines ended only at LF, so a server ending lines with a lone CR never delivered an
    /// event, and a leading byte order mark made the first field `\u{FEFF}data` — that event was lost.
    @Test func serverSentEventsTakeEveryLineEndingAndALeadingByteOrderMark() async throws {
        let bodies = [
            "\u{FEFF}data: one\r\rdata: two\r\n\r\nid: 3\rdata: three\n\n",
            "data: one\n\ndata: two\r\rid: 3\r\ndata: three\r\n\r\n",
        ]
        for body in bodies {
            let server = try TestServer()
            // One byte at a time: a CR at the end of one read and its LF at the start of the next is one line end.
            server.enqueue(
                TestResponse(
                    headers: ["Content-Type": "text/event-stream"], body: body, socketEffect: .disconnectAtEnd
                ).chunked(size: 1))
            let (events, failure) = await collect(client(server).events(.get("/events"), format: .serverSentEvents))
            #expect(failure == nil, "\(body.debugDescription)")
            #expect(events.map(\.data) == ["one", "two", "three"], "\(body.debugDescription)")
            #expect(events.last?.id == "3")
        }
    }

    /// Found in an outside audit: fields were split on Swift characters, and a colon or space followed by a
    /// combining mark is one character with it: `data:\u{301}x` was an unknown field (no event), the space of
    /// `data: \u{301}x` stayed in the value, and `:\u{301}` was not a comment. The spec works on code points.
    @Test func fieldsAreSplitOnCodePointsNotCharacters() async throws {
        let server = try TestServer()
        server.enqueue(
            TestResponse(
                headers: ["Content-Type": "text/event-stream"],
                body: ":\u{301} a comment\ndata:\u{301}x\n\ndata: \u{301}y\n\nevent:\u{301}\ndata: z\n\n",
                socketEffect: .disconnectAtEnd))
        let (events, failure) = await collect(client(server).events(.get("/events"), format: .serverSentEvents))
        #expect(failure == nil)
        #expect(events.map(\.data) == ["\u{301}x", "\u{301}y", "z"])
        #expect(events.map { $0.data.unicodeScalars.count } == [2, 2, 1])
        #expect(events.last?.type == "\u{301}")
    }

    /// An `event:` field with an empty value leaves the event of the default type ("message"), as if there were
    /// none; a later block's type does not carry over (found in an outside audit: the type was "").
    @Test func anEmptyEventFieldMeansTheDefaultType() async throws {
        let server = try TestServer()
        server.enqueue(
            TestResponse(
                headers: ["Content-Type": "text/event-stream"],
                body: "event:\ndata: a\n\nevent: note\ndata: b\n\nevent: note\nevent:\ndata: c\n\n",
                socketEffect: .disconnectAtEnd))
        let (events, failure) = await collect(client(server).events(.get("/events"), format: .serverSentEvents))
        #expect(failure == nil)
        #expect(events.map(\.data) == ["a", "b", "c"])
        #expect(events.map(\.type) == [nil, "note", nil])
    }

    /// Found in review: streams skipped the captive-portal judgement every call makes — a portal's 200 HTML
    /// page was delivered line by line as events (or read as a clean end with none), and a redirect to the
    /// portal's origin was an ordinary `technical` failure.
    @Test func aCaptivePortalAnsweringAStreamIsACaptivePortal() async throws {
        let page = "<!DOCTYPE html>\n<html><body>Sign in to the airport Wi-Fi</body></html>\n\n"
        for response in [
            TestResponse(headers: ["Content-Type": "text/html; charset=utf-8"], body: page),
            TestResponse(body: page, socketEffect: .disconnectAtEnd),
            TestResponse.redirect(to: "http://portal.example/login"),
            // A network login's status (found in a review: a stream read it as the server failing).
            TestResponse(status: 511, headers: ["Content-Type": "text/html"], body: page),
        ] {
            for format in [StreamFormat.serverSentEvents, .newlineDelimitedJSON] {
                let server = try TestServer()
                server.enqueue(response)
                let (events, failure) = await collect(client(server).events(.get("/events"), format: format))
                #expect(events.isEmpty)
                #expect(failure?.kind == .captivePortal, "\(response.status) \(format)")
                // What answered was not the API: nothing of a GET reached it.
                #expect(failure?.outcome == .notSent, "\(response.status) \(format)")
            }
        }
    }

    @Test func newlineDelimitedJSONEndsCleanlyWhenTheServerCloses() async throws {
        let server = try TestServer()
        server.enqueue(TestResponse(body: "{\"n\":1}\n\n{\"n\":2}\r\n", socketEffect: .disconnectAtEnd))
        let (events, failure) = await collect(
            client(server).events(.get("/feed"), format: .newlineDelimitedJSON))
        #expect(failure == nil)
        #expect(events.map(\.data) == [#"{"n":1}"#, #"{"n":2}"#])
    }

    @Test func aStallMidStreamEndsWithTimeoutAfterTheNoProgressLimit() async throws {
        let server = try TestServer()
        let first = "{\"n\":1}\n"
        var response = TestResponse(body: first + "{\"n\":2}\n")
        response.throttle = .init(bytes: first.utf8.count, period: .seconds(30))  // then silence
        server.enqueue(response)
        let start = ContinuousClock.now
        let (events, failure) = await collect(
            client(server).events(
                .get("/feed"), format: .newlineDelimitedJSON,
                policy: StreamPolicy(noProgressTimeout: .milliseconds(300))))
        #expect(events.map(\.data) == [#"{"n":1}"#])  // what arrived was delivered
        #expect(failure?.kind == .timeout)
        #expect(ContinuousClock.now - start < .seconds(10))  // the no-progress limit, not the server's pause
    }

    @Test func noOverallTimeoutASlowButSteadyStreamRunsPastTheNoProgressLimit() async throws {
        let server = try TestServer()
        let lines = (1...6).map { "{\"n\":\($0)}\n" }.joined()
        var response = TestResponse(body: lines).chunked(size: 8)
        response.throttle = .init(bytes: 8, period: .milliseconds(120))  // ~0.8 s in all, never 300 ms silent
        server.enqueue(response)
        let (events, failure) = await collect(
            client(server).events(
                .get("/feed"), format: .newlineDelimitedJSON,
                policy: StreamPolicy(noProgressTimeout: .milliseconds(300))))
        #expect(failure == nil)
        #expect(events.count == 6)
    }

    @Test func aServerThatNeverAnswersTimesOutOnTheHead() async throws {
        let server = try TestServer()
        server.enqueue(TestResponse(body: "x\n").delayingHeaders(by: .seconds(30)))
        let (_, failure) = await collect(
            client(server).events(
                .get("/feed"), format: .newlineDelimitedJSON,
                policy: StreamPolicy(noProgressTimeout: .milliseconds(300))))
        #expect(failure?.kind == .timeout)
    }

    @Test(arguments: [StreamFormat.serverSentEvents, .newlineDelimitedJSON])
    func closingMidEventIsAFailureNotACleanEnd(format: StreamFormat) async throws {
        let server = try TestServer()
        let complete = format == .serverSentEvents ? "data: one\n\n" : "{\"n\":1}\n"
        let body = complete + (format == .serverSentEvents ? "data: tw" : "{\"n\":")
        // Close-delimited (no length, not chunked): the close itself is the only end, so it must land
        // between events to be clean.
        server.enqueue(.raw("HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n" + body, socketEffect: .disconnectAtEnd))
        let (events, failure) = await collect(client(server).events(.get("/feed"), format: format))
        #expect(events.count == 1)
        #expect(failure?.kind == .technical)
        #expect(failure?.detail.unredacted.contains("middle of an event") == true)
    }

    @Test func aChunkedStreamCutInsideAChunkIsAFailure() async throws {
        let server = try TestServer()
        server.enqueue(
            .raw(
                "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n8\r\n{\"n\":1}\n\r\n8\r\n{\"n\"",
                socketEffect: .disconnectAtEnd))
        let (events, failure) = await collect(client(server).events(.get("/feed"), format: .newlineDelimitedJSON))
        #expect(events.count == 1)
        #expect(failure?.kind == .technical)
    }

    @Test func stoppingTheIterationClosesTheConnection() async throws {
        let server = try TestServer()
        var response = TestResponse(body: (1...100).map { "{\"n\":\($0)}\n" }.joined()).chunked(size: 8)
        response.throttle = .init(bytes: 8, period: .milliseconds(20))
        server.enqueue(response)
        for try await event in client(server).events(.get("/feed"), format: .newlineDelimitedJSON) {
            #expect(event.data == #"{"n":1}"#)
            break
        }
        // The stream went away with the loop: the connection closed, and the server's next write found out.
        _ = try await server.awaitConnectionEvent(timeout: .seconds(10)) { $0.kind == .closedByClient }
    }

    /// Found in review: events were parsed as fast as the server sent them and queued without limit for a
    /// reader that was slower, so a busy screen on a fast feed grew without bound. Events now wait in a
    /// 1 MiB buffer, and when it is full the stream stops reading (and the server stops sending).
    @Test func aReaderSlowerThanTheServerHoldsTheServerBack() async throws {
        let server = try TestServer()
        let line = #"{"pad":""# + String(repeating: "x", count: 1000) + "\"}\n"
        let count = 64 << 10  // 64 MiB of events
        // Written in 64 KiB slices, so that the server's count of bytes sent says how far it got.
        server.enqueue(TestResponse(body: String(repeating: line, count: count)).throttled(bytes: 64 << 10, per: .zero))
        var stream: AsyncThrowingStream<StreamEvent, any Error>? = client(server).events(
            .get("/feed"), format: .newlineDelimitedJSON)
        var iterator = stream?.makeAsyncIterator()
        #expect(try await iterator?.next()?.data.count == line.utf8.count - 1)
        // A reader busy elsewhere for a second: an unbounded queue takes in the whole feed in that time.
        try await Task.sleep(for: .seconds(1))
        #expect(try await iterator?.next()?.data.count == line.utf8.count - 1)
        iterator = nil
        stream = nil
        let size = line.utf8.count * count
        // A client that read the whole body never closes mid-body.
        let closed = try? await server.awaitConnectionEvent(timeout: .seconds(10)) { $0.kind == .closedByClient }
        #expect(
            closed.map { $0.bytesSent < size / 4 } == true,
            "the server sent \((closed?.bytesSent ?? size) >> 20) MiB to a reader of two events")
    }

    @Test func aRefusedStreamFailsWithTheStatusKind() async throws {
        let server = try TestServer()
        server.enqueue(TestResponse(status: 401, headers: ["X-Request-ID": "r-1"], body: "{}"))
        let (events, failure) = await collect(client(server).events(.get("/feed"), format: .serverSentEvents))
        #expect(events.isEmpty)
        #expect(failure?.kind == .authentication)
        #expect(failure?.requestID == "r-1")
    }

    /// A stream's error answer is read as any call's: a 422 with field errors is `validation`, a 503
    /// `maintenance` is maintenance, and a 426 `update_required` is a required update that changes the
    /// client's version policy (every call, streams included, sends the app's version).
    @Test func aStreamsErrorAnswerIsReadAsAnyCallsAndFeedsTheVersionPolicy() async throws {
        let server = try TestServer()
        let client = HTTPClient(
            configuration: .init(
                baseURL: server.baseURL, transport: SocketTransport(),
                versionPolicy: VersionPolicyContract(appVersion: AppVersion("5.1.0")!, platform: "ios")))
        let json: HeaderFields = ["Content-Type": "application/json"]
        server.enqueue(
            TestResponse(
                status: 422, headers: json,
                body: #"{"code": "invalid", "errors": [{"field": "since", "code": "too_old"}]}"#))
        server.enqueue(
            TestResponse(
                status: 503, headers: ["Content-Type": "application/json", "Retry-After": "60"],
                body: #"{"code": "maintenance"}"#))
        server.enqueue(
            TestResponse(
                status: 426, headers: json, body: #"{"code": "update_required", "minimumVersions": {"ios": "5.2.0"}}"#))
        let invalid = await collect(client.events(.get("/feed"), format: .serverSentEvents)).1
        #expect(invalid?.kind == .validation && invalid?.status == 422)
        let maintenance = await collect(client.events(.get("/feed"), format: .serverSentEvents)).1
        #expect(maintenance?.kind == .maintenance && maintenance?.retryAt != nil)
        let update = await collect(client.events(.get("/feed"), format: .serverSentEvents)).1
        #expect(update?.kind == .updateRequired)
        #expect(client.versionPolicy == .updateRequired(minimum: AppVersion("5.2.0")!))
        #expect(server.requests.first?.headers["X-App-Version"] == "5.1.0")
    }

    /// Outcomes as for any call (MOB-API-003): a mutating stream that may have reached the server is
    /// `unknown`, never "rejected" (which tells the user nothing was changed).
    @Test func aMutatingStreamThatMayHaveBeenAppliedEndsUnknown() async throws {
        let server = try TestServer()
        let body = Data(#"{"file": "import.csv"}"#.utf8)
        let policy = StreamPolicy(noProgressTimeout: .milliseconds(300))
        // No answer at all: the request arrived, the server may be applying it.
        server.enqueue(TestResponse(body: "x\n").delayingHeaders(by: .seconds(30)))
        let (_, silent) = await collect(
            client(server).events(.post("/imports", body: body), format: .newlineDelimitedJSON, policy: policy))
        #expect(silent?.kind == .timeout)
        #expect(silent?.outcome == .unknown)
        // A 502 may come after the commit.
        server.enqueue(TestResponse(status: 502, body: "{}"))
        let (_, gateway) = await collect(
            client(server).events(.post("/imports", body: body), format: .newlineDelimitedJSON, policy: policy))
        #expect(gateway?.status == 502)
        #expect(gateway?.outcome == .unknown)
        // Accepted (200), then broken off mid-event: the import may be half done.
        server.enqueue(
            .raw("HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n{\"n\":1}\n{\"n\":", socketEffect: .disconnectAtEnd))
        let (events, broken) = await collect(
            client(server).events(.post("/imports", body: body), format: .newlineDelimitedJSON, policy: policy))
        #expect(events.count == 1)
        #expect(broken?.outcome == .unknown)
        // The same answers to a read are refusals of the read: nothing to apply.
        server.enqueue(TestResponse(status: 502, body: "{}"))
        let (_, read) = await collect(client(server).events(.get("/feed"), format: .newlineDelimitedJSON))
        #expect(read?.outcome == .rejected)
        // A 4xx refusal of a mutation is a refusal: nothing was applied.
        server.enqueue(TestResponse(status: 422, body: "{}"))
        let (_, refused) = await collect(
            client(server).events(.post("/imports", body: body), format: .newlineDelimitedJSON, policy: policy))
        #expect(refused?.outcome == .rejected)
    }

    /// Found in review: with the event buffer full (a reader that stopped reading, as an app does when it
    /// goes to the background), the stream waited for room and never saw the budget expire — the connection
    /// stayed open past the time the OS granted.
    @Test func anExpiredBudgetEndsAStreamWhoseReaderStoppedReading() async throws {
        let server = try TestServer()
        let line = #"{"pad":""# + String(repeating: "x", count: 1000) + "\"}\n"
        server.enqueue(
            TestResponse(body: String(repeating: line, count: 16 << 10)).throttled(bytes: 64 << 10, per: .zero))
        let budget = ManualBackgroundBudget(remaining: .seconds(30))
        let client = HTTPClient(
            configuration: .init(baseURL: server.baseURL, transport: SocketTransport(), backgroundBudget: budget))
        let stream = client.events(.get("/feed"), format: .newlineDelimitedJSON)
        var iterator = stream.makeAsyncIterator()
        _ = try await iterator.next()
        // The reader stops reading; the buffers fill (the server cannot finish its 16 MiB), then time runs out.
        try await Task.sleep(for: .milliseconds(500))
        budget.expire()
        let closed = try await server.awaitConnectionEvent(timeout: .seconds(10)) { $0.kind == .closedByClient }
        #expect(closed.bytesSent < line.utf8.count * (16 << 10))
        // When the reader comes back, it is told what happened after the events that had arrived.
        var failure: HTTPFailure?
        do {
            while try await iterator.next() != nil {}
        } catch {
            failure = error as? HTTPFailure
        }
        #expect(failure?.kind == .cancelled)
        #expect(failure?.detail.unredacted.contains("background time budget expired") == true)
        #expect(try await iterator.next() == nil)  // and after that, the stream is over
    }

    /// MOB-API-004: in the background a stream lives only as long as the time the OS granted.
    @Test func anExpiredBackgroundBudgetEndsAStreamAndClosesItsConnection() async throws {
        let server = try TestServer()
        var response = TestResponse(body: (1...400).map { ": keep-alive \($0)\n\n" }.joined()).chunked(size: 20)
        response.throttle = .init(bytes: 20, period: .milliseconds(50))  // a comment every 50 ms, for 20 s
        server.enqueue(response)
        let budget = ManualBackgroundBudget(remaining: .seconds(30))
        let client = HTTPClient(
            configuration: .init(baseURL: server.baseURL, transport: SocketTransport(), backgroundBudget: budget))
        let stream = client.events(.get("/feed"), format: .serverSentEvents)
        let collected = Task { await collect(stream) }
        _ = try await server.takeRequest()
        try await Task.sleep(for: .milliseconds(200))  // streaming now
        let expiredAt = ContinuousClock.now
        budget.expire()
        let (_, failure) = await collected.value
        #expect(failure?.kind == .cancelled)
        #expect(failure?.detail.unredacted.contains("background time budget expired") == true)
        #expect(ContinuousClock.now - expiredAt < .seconds(10))  // not when the server stops (20 s)
        _ = try await server.awaitConnectionEvent(timeout: .seconds(10)) { $0.kind == .closedByClient }
    }

    @Test func anOverlongEventIsRefused() async throws {
        let server = try TestServer()
        server.enqueue(TestResponse(body: String(repeating: "x", count: 5000) + "\n", socketEffect: .disconnectAtEnd))
        let (_, failure) = await collect(
            client(server).events(
                .get("/feed"), format: .newlineDelimitedJSON, policy: StreamPolicy(maximumEventBytes: 1024)))
        #expect(failure?.kind == .technical)
    }
}
