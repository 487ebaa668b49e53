import Foundation
import KeelHTTP
import KeelTesting
import Testing

/// The request URL is the base URL's path plus the operation's, percent-encoded where it must be.
@Suite(.timeLimit(.minutes(1))) struct RequestURLTests {
    @Test(arguments: [
        ("/v1", "/notes/7", [URLQueryItem](), "/v1/notes/7"),
        ("/v1/", "notes/7", [], "/v1/notes/7"),
        ("", "/notes/a b", [], "/notes/a%20b"),
        ("/v1", "/notes", [URLQueryItem(name: "q", value: "x y&z")], "/v1/notes?q=x%20y%26z"),
        ("", "/caf\u{E9}", [], "/caf%C3%A9"),
    ])
    func theTargetIsTheBasePathPlusTheOperationsPath(base: String, path: String, query: [URLQueryItem], target: String)
        async throws
    {
        let server = try TestServer()
        let harness = try Harness(baseURL: URL(string: server.baseURL.absoluteString + base)!, server: server)
        server.enqueue(.json("{}"))
        _ = try #require(await harness.send(.get(path, query: query)).success)
        #expect(server.requests.first?.target == target)
    }
}
