import Foundation
import KeelContract
import KeelCore
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
        // Found in an outside audit: the `%` of an escape was encoded again (`a%2Fb` went out as `a%252Fb`), so
        // no id with a `/` could be put into a path. Escapes go as written; a `%` that is not one is encoded.
        ("", "/notes/a%2Fb", [], "/notes/a%2Fb"),
        ("/v1", "/notes/a%2fb", [URLQueryItem(name: "q", value: "1")], "/v1/notes/a%2fb?q=1"),
        ("", "/notes/50%", [], "/notes/50%25"),
        ("", "/notes/%zz%4", [], "/notes/%25zz%254"),
        ("/v%201", "/x", [], "/v%201/x"),
        // Found in an outside audit: `+` and `;` went out as written, and a server reading the query as a form
        // took `+` for a space (a cursor `a+b` came back as `a b`). Everything but unreserved bytes is escaped.
        (
            "/v1", "/notes",
            [
                URLQueryItem(name: "cursor", value: "a+b;c?d@e,f$g!h(i)*j=k&l%m#n é"),
                URLQueryItem(name: "flag", value: nil), URLQueryItem(name: "a b+", value: ""),
            ],
            "/v1/notes?cursor=a%2Bb%3Bc%3Fd%40e%2Cf%24g%21h%28i%29%2Aj%3Dk%26l%25m%23n%20%C3%A9&flag&a%20b%2B="
        ),
        (
            "/v1", "/notes/" + HTTPOperation.pathSegment("a/b?c#d \u{E9}%.~"), [],
            "/v1/notes/a%2Fb%3Fc%23d%20%C3%A9%25.~"
        ),
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

    /// Found in review: an id from a deep link interpolated into a path (`"/notes/\(id)"`, id `../admin/x`)
    /// reached the server as `/notes/../admin/x`, which a server normalizing dot segments routes to
    /// `/admin/x` — with the app's credentials. Refused before anything is sent; dots inside a segment
    /// (`v1.2`, `a..b`, `.well-known`) are ordinary characters.
    @Test func aPathWithADotSegmentIsNeverSent() async throws {
        let server = try TestServer()
        let harness = try Harness(server: server)
        // Percent-encoded dots too: a server decodes `%2e%2E` to `..` before it resolves the path.
        for path in [
            "/notes/../admin/x", "/notes/./7", "/notes/..", "notes/..%2f/x/..", "/notes/..;x=1/admin",
            "/notes/%2e%2E/admin", "/notes/%2E", "/notes/.%2e;x",
            // A segment a server decodes before resolving: an id from a link that decoded once to `..%2Fadmin`.
            "/notes/..%2Fadmin", "/notes/%2e%2e%2fadmin", "/notes/..%5Cadmin", "/notes/x%2F..%2F..",
        ] {
            let failure = try #require(await harness.send(.get(path)).failure, "\(path)")
            #expect(failure.outcome == .notSent && failure.attempts == 0, "\(path)")
        }
        #expect(server.requestCount == 0)
        server.enqueue(.json("{}"))
        _ = try #require(await harness.send(.get("/v1.2/a..b/.well-known")).success)
        #expect(server.requests.first?.target == "/v1.2/a..b/.well-known")
    }

    /// A client's own fields whose names clash with each other or with `Accept` resolve as they always have:
    /// each replaces any earlier field of its name, and `Accept` is not added beside a field of that name.
    @Test func aClientsOwnFieldsThatShareANameAreSentOnce() async throws {
        let server = try TestServer()
        let client = HTTPClient(
            configuration: .init(
                baseURL: server.baseURL, policy: CallPolicy(maximumAttempts: 1),
                contractVersion: try ContractVersion("1.2.0", headerName: "accept")))
        server.enqueue(.json("{}"))
        _ = try await client.send(.get("/notes", headers: ["Accept": "text/plain"]))
        let accept = try #require(server.requests.first?.headers.values(for: "Accept"))
        #expect(accept == ["1.2.0"])

        let clashing = HTTPClient(
            configuration: .init(
                baseURL: server.baseURL, policy: CallPolicy(maximumAttempts: 1),
                contractVersion: try ContractVersion("1.2.0", headerName: "x-correlation-id")))
        server.enqueue(.json("{}"))
        _ = try await clashing.send(.get("/notes"))
        #expect(server.requests.last?.headers.values(for: "X-Correlation-ID") == ["1.2.0"])
    }

    @Test func theClientsIdsAreTheOnlyOnesOnTheWire() async throws {
        // An app's own Idempotency-Key or X-Correlation-ID would reach the server ahead of the client's: a
        // server reading the first would dedupe on a key the journal does not know.
        let server = try TestServer()
        let harness = try Harness(server: server)
        server.enqueue(.json("{}"))
        let key = IdempotencyKey("k-1")
        let correlation = try CorrelationID(validating: "0123456789abcdef0123456789abcdef")
        let operation = HTTPOperation.post(
            "/notes", body: Data("{}".utf8), idempotency: .keyed(key),
            headers: ["idempotency-key": "k-0", "X-Correlation-ID": "unknown", "X-Other": "kept"],
            correlationID: correlation)
        _ = try #require(await harness.send(operation).success)
        let headers = try #require(server.requests.first?.headers)
        #expect(headers.values(for: "Idempotency-Key") == ["k-1"])
        #expect(headers.values(for: "X-Correlation-ID") == [correlation.rawValue])
        #expect(headers["X-Other"] == "kept")
    }
}
