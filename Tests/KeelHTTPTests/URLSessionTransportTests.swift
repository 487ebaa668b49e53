import Foundation
import KeelHTTP
import KeelTesting
import Testing

/// The URLSession adapter against real sockets.
@Suite struct URLSessionTransportTests {
    @Test func aReusedConnectionThatDiesIsNotUsedToResendAnUnsafeRequest() async throws {
        // libcurl silently re-sends an idempotent request once when a reused connection dies before any
        // response byte. It must never do that for a POST: the server must see it exactly once.
        // (FoundationNetworking then waits out its own timer instead of reporting the close; Keel's
        // attempt timer on the injected clock ends such an attempt. Here the backstop is 2 s.)
        let server = try TestServer()
        let transport = URLSessionTransport()
        server.enqueue(TestResponse(body: "warm"))
        server.enqueue(TestResponse(socketEffect: .disconnectAfterRequest))
        server.enqueue(TestResponse(status: 201))
        _ = try await transport.send(HTTPRequest(method: "GET", url: server.url("/warm")))
        do {
            _ = try await transport.send(HTTPRequest(method: "POST", url: server.url("/pay"), body: Data("x".utf8), transportTimeout: .seconds(2)))
            Issue.record("the dead connection must fail the POST")
        } catch {
            #expect(error.requestMayHaveBeenSent)
        }
        #expect(server.requests.map(\.method) == ["GET", "POST"])
    }

    @Test func redirectsAreHandedBackNotFollowed() async throws {
        let server = try TestServer()
        server.enqueue(.redirect(to: "/elsewhere", status: 302))
        let response = try await URLSessionTransport().send(HTTPRequest(method: "GET", url: server.url("/start")))
        #expect(response.status == 302)
        #expect(response.header("location") == "/elsewhere")
        #expect(server.requestCount == 1)
    }

    @Test func aRefusedConnectionProvablyNeverSentTheRequest() async throws {
        let closed = try TestServer()
        let url = closed.url("/x")
        closed.shutdown()
        do {
            _ = try await URLSessionTransport().send(HTTPRequest(method: "POST", url: url, body: Data("x".utf8)))
            Issue.record("expected a failure")
        } catch {
            #expect(error.code == .cannotConnect)
            #expect(!error.requestMayHaveBeenSent)
        }
    }

    @Test func aHugeBodyIsCutOffWhileItIsStillArriving() async throws {
        let server = try TestServer()
        server.enqueue(TestResponse(body: Data(repeating: 7, count: 64 * 1024 * 1024)))
        do {
            _ = try await URLSessionTransport().send(HTTPRequest(method: "GET", url: server.url("/huge"), maximumResponseBytes: 64 * 1024))
            Issue.record("expected responseTooLarge")
        } catch {
            #expect(error.code == .responseTooLarge)
        }
        // The client hung up while the server was still writing the 64 MiB: nothing more was downloaded.
        _ = try await server.awaitConnectionEvent { $0.kind == .closedByClient }
    }

    @Test func anOversizedBodyIsCutOffWithAClearError() async throws {
        let server = try TestServer()
        server.enqueue(TestResponse(body: Data(repeating: 1, count: 4096)))
        do {
            _ = try await URLSessionTransport().send(HTTPRequest(method: "GET", url: server.url("/big"), maximumResponseBytes: 1024))
            Issue.record("expected responseTooLarge")
        } catch {
            #expect(error.code == .responseTooLarge)
        }
    }
}
