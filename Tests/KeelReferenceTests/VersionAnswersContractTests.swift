import Foundation
import KeelContract
import KeelContractTools
import KeelCore
import KeelHTTP
import KeelReference
import KeelTesting
import Testing

/// MOB-API-005 (API-005.1): the contract test of optional update, required update, maintenance and technical
/// failure. The reference backend's real answers are checked against the contract revision that pins them
/// (`contracts/notes-api.v1.8.yaml`: `update_required` with the minimum per platform, `maintenance`), and
/// Keel's client reads each as the policy it stands for — or, for what the contract does not say, as a
/// technical failure that changes nothing.
@Suite(.timeLimit(.minutes(1))) struct VersionAnswersContractTests {
    static let contract = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("contracts/notes-api.v1.8.yaml")

    func client(_ harness: BackendHarness, token: String, version: String) throws -> HTTPClient {
        HTTPClient(
            configuration: .init(
                baseURL: harness.backend.baseURL,
                policy: CallPolicy(attemptTimeout: .seconds(5), deadline: .seconds(5), maximumAttempts: 1),
                versionPolicy: VersionPolicyContract(appVersion: try #require(AppVersion(version)), platform: "ios")))
    }

    /// How `operation` failed through `client` (nil when it succeeded).
    static func failure(_ client: HTTPClient, _ operation: HTTPOperation) async -> HTTPFailure? {
        do {
            _ = try await client.send(operation)
            return nil
        } catch { return error }
    }

    static func changes(_ token: String) -> HTTPOperation {
        .get("/changes", headers: ["Authorization": "Bearer \(token)"])
    }

    @Test func theBackendsVersionAnswersAreTheOnesTheContractPinsAndTheClientReadsThem() async throws {
        let document = try OpenAPIDocument.load(from: Self.contract)
        let updateRequired = try document.schema(at: "#/components/schemas/UpdateRequired")
        let maintenance = try document.schema(at: "#/components/schemas/Maintenance")
        // The pins hold: a renamed code, or a required update without its minimum, is not the contract's.
        #expect(!updateRequired.validate(["code": "updateRequired", "minimumVersions": ["ios": "2.0"]]).isValid)
        #expect(!updateRequired.validate(["code": "update_required"]).isValid)
        #expect(!updateRequired.validate(["code": "update_required", "minimumVersions": [:]]).isValid)
        #expect(!maintenance.validate(["code": "down"]).isValid)

        let harness = try BackendHarness()
        let token = try await harness.signIn("alice")
        _ = try await harness.call(
            "POST", "/_admin/min-version", json: #"{"platform": "ios", "version": "2.0", "latest": "2.3"}"#)
        let old = ["Authorization": "Bearer \(token)", "X-App-Version": "1.9", "X-App-Platform": "ios"]

        // Required update: 426, as the contract pins it; the client's policy names the minimum.
        let refused = try await harness.call("GET", "/changes", headers: old)
        #expect(refused.status == 426)
        let body = try #require(refused.body)
        let verdict = updateRequired.validate(body)
        #expect(verdict.isValid, "\(verdict.errors.map(\.message)) in \(refused.text)")
        let outdated = try client(harness, token: token, version: "1.9")
        let required = try #require(await Self.failure(outdated, Self.changes(token)))
        #expect(required.kind == .updateRequired, "\(required)")
        #expect(outdated.versionPolicy == .updateRequired(minimum: AppVersion("2.0")!))

        // Optional update: a header on a success, never a failure.
        let current = try client(harness, token: token, version: "2.1")
        _ = try await current.send(Self.changes(token))
        #expect(current.versionPolicy == .updateAvailable(latest: AppVersion("2.3")!))

        // Maintenance: 503 as the contract pins it, with Retry-After; the client keeps the retry time.
        _ = try await harness.call("POST", "/_admin/fault", json: #"{"mode": "unavailable", "retryAfter": 30}"#)
        var headers = old
        headers["X-App-Version"] = "2.1"
        let down = try await harness.call("GET", "/changes", headers: headers)
        #expect(down.status == 503 && down.headers["retry-after"] == "30")
        let maintained = maintenance.validate(try #require(down.body))
        #expect(maintained.isValid, "\(maintained.errors.map(\.message)) in \(down.text)")
        let during = try client(harness, token: token, version: "2.1")
        let failure = try #require(await Self.failure(during, Self.changes(token)))
        #expect(failure.kind == .maintenance, "\(failure)")
        guard case .maintenance(let retryAt) = during.versionPolicy else {
            Issue.record("policy \(during.versionPolicy)")
            return
        }
        #expect(retryAt != nil)

        // Technical failure: an answer the contract does not make (a portal's page in the API's place) is no
        // version answer: no policy changes, nothing is asked of the user.
        _ = try await harness.call("POST", "/_admin/fault", json: #"{"mode": "portal"}"#)
        let fresh = try client(harness, token: token, version: "1.9")
        let portal = try #require(await Self.failure(fresh, Self.changes(token)))
        #expect(portal.kind != .updateRequired && portal.kind != .maintenance, "\(portal)")
        #expect(fresh.versionPolicy == .supported)
        _ = try await harness.call("POST", "/_admin/fault", json: #"{"mode": "none"}"#)
    }
}
