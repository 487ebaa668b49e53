import Foundation
import KeelHTTP
import KeelTesting
import Testing

/// MOB-API-003: "connected" is judged by the API itself, not by the OS.
@Suite(.timeLimit(.minutes(1))) struct ReachabilityTests {
    @Test func theExpectedEmptyAnswerIsReachable() async throws {
        let harness = try Harness()
        harness.server.enqueue(TestResponse(status: 204))
        #expect(await harness.client.probeReachability() == .reachable)
        #expect(harness.server.requests.first?.path == "/generate_204")
    }

    @Test func aCaptivePortalIsRecognisedInEveryForm() async throws {
        let login = try Harness(server: try TestServer(dispatcher: .captivePortal(.loginPage)))
        #expect(await login.client.probeReachability() == .captivePortal)
        let redirect = try Harness(
            server: try TestServer(
                dispatcher: .captivePortal(.redirect(to: URL(string: "http://login.hotel.example/")!))))
        #expect(await redirect.client.probeReachability() == .captivePortal)
        let wrong = try Harness()
        wrong.server.enqueue(TestResponse(status: 200, body: "welcome"))
        #expect(await wrong.client.probeReachability() == .captivePortal)
    }

    @Test func noRouteIsOffline() async throws {
        let refusing = try RefusingPort()
        let url = refusing.baseURL
        #expect(await (try Harness(baseURL: url)).client.probeReachability() == .offline)
    }
}
