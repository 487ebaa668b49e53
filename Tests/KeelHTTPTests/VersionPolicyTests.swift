import Foundation
import KeelCore
import KeelHTTP
import KeelTesting
import Testing

/// MOB-API-005, client side: the version policy the backend states, read only from answers the contract
/// defines; anything else is a technical failure that changes nothing.
@Suite(.timeLimit(.minutes(1))) struct VersionPolicyTests {
    static let app = VersionPolicyContract(appVersion: AppVersion("5.1.0")!, platform: "ios")
    static let once = CallPolicy(maximumAttempts: 1)

    static func error(_ status: Int, _ body: String, headers: HeaderFields = [:]) -> TestResponse {
        var all = headers
        all["Content-Type"] = "application/json"
        return TestResponse(status: status, headers: all, body: body)
    }

    @Test func everyCallSendsTheAppVersionAndPlatformAndNothingElseCanOverrideThem() async throws {
        let harness = try Harness(versionPolicy: Self.app)
        harness.server.enqueue(.json("{}"))
        var operation = HTTPOperation.get("/notes")
        operation.headers["X-App-Version"] = "99.0"
        _ = try #require(await harness.send(operation).success)
        let request = try #require(harness.server.requests.first)
        #expect(request.headers.values(for: "X-App-Version") == ["5.1.0"])
        #expect(request.headers.values(for: "X-App-Platform") == ["ios"])
    }

    @Test func anOptionalUpdateIsAHeaderOnASuccessNeverAFailure() async throws {
        let changes = Locked<[VersionPolicy]>([])
        let harness = try Harness(
            versionPolicy: Self.app, onVersionPolicyChange: { p in changes.withLock { $0.append(p) } })
        harness.server.enqueue(TestResponse(status: 200, headers: ["X-Update-Available": "5.3.0"], body: "{}"))
        harness.server.enqueue(TestResponse(status: 200, headers: ["X-Update-Available": "5.3.0"], body: "{}"))
        harness.server.enqueue(TestResponse(status: 200, headers: ["X-Update-Available": "5.1"], body: "{}"))
        _ = try #require(await harness.send(.get("/a")).success)
        #expect(harness.client.versionPolicy == .updateAvailable(latest: AppVersion("5.3.0")!))
        _ = try #require(await harness.send(.get("/b")).success)
        _ = try #require(await harness.send(.get("/c")).success)  // announces this very version: nothing to do
        #expect(harness.client.versionPolicy == .supported)
        #expect(changes.withLock { $0 } == [.updateAvailable(latest: AppVersion("5.3.0")!), .supported])  // once each
    }

    @Test func aRequiredUpdateIsItsOwnKindWithThePlatformsMinimum() async throws {
        let harness = try Harness(policy: Self.once, versionPolicy: Self.app)
        harness.server.enqueue(
            Self.error(426, #"{"code": "update_required", "minimumVersions": {"ios": "5.2.0", "android": "5.0"}}"#))
        let failure = try #require(await harness.send(.post("/mutations", body: Data("{}".utf8))).failure)
        #expect(failure.kind == .updateRequired)
        #expect(failure.outcome == .rejected)  // the server refused it: nothing was applied
        #expect(harness.client.versionPolicy == .updateRequired(minimum: AppVersion("5.2.0")!))
        let shown = UserFacingOutcome(failure: failure, mutates: true)
        #expect(shown.action == .updateApp)
        #expect(shown.message.contains("no longer supported"))
        #expect(shown.message.contains("kept"))
    }

    /// Found in review: a reachability probe's 2xx — which a portal, a CDN or an endpoint exempt from the
    /// version check may give — ended a required update (or a block) as if the backend accepted the app.
    @Test func aReachabilityProbeNeverEndsARequiredUpdate() async throws {
        let harness = try Harness(policy: Self.once, versionPolicy: Self.app)
        harness.server.enqueue(
            Self.error(426, #"{"code": "update_required", "minimumVersions": {"ios": "5.2.0"}}"#))
        _ = try #require(await harness.send(.get("/notes")).failure)
        let required = VersionPolicy.updateRequired(minimum: AppVersion("5.2.0")!)
        #expect(harness.client.versionPolicy == required)
        harness.server.enqueue(TestResponse(status: 204))
        #expect(await harness.client.probeReachability() == .reachable)
        #expect(harness.client.versionPolicy == required)
    }

    /// Found in review: any later success without an update header — an endpoint the backend's version check
    /// exempts, a 200 a CDN kept — turned a required update or a security block back into `supported`.
    @Test func aLaterSuccessNeverEndsARequiredUpdateOrABlock() async throws {
        for (status, body, expected) in [
            (
                426, #"{"code": "update_required", "minimumVersions": {"ios": "5.2.0"}}"#,
                VersionPolicy.updateRequired(minimum: AppVersion("5.2.0")!)
            ),
            (
                403, #"{"code": "version_blocked", "minimumVersions": {"ios": "5.1.1"}}"#,
                VersionPolicy.blocked(minimum: AppVersion("5.1.1")!)
            ),
        ] {
            let harness = try Harness(policy: Self.once, versionPolicy: Self.app)
            harness.server.enqueue(Self.error(status, body))
            _ = try #require(await harness.send(.post("/notes", body: Data("{}".utf8))).failure)
            #expect(harness.client.versionPolicy == expected)
            harness.server.enqueue(.json("{}"))
            harness.server.enqueue(TestResponse(status: 200, headers: ["X-Update-Available": "5.3.0"], body: "{}"))
            _ = try #require(await harness.send(.get("/public/terms")).success)
            _ = try #require(await harness.send(.get("/public/terms")).success)
            #expect(harness.client.versionPolicy == expected)
            // Nor does a maintenance answer, after which a success would have ended it.
            harness.server.enqueue(Self.error(503, #"{"code": "maintenance"}"#, headers: ["Retry-After": "60"]))
            _ = try #require(await harness.send(.get("/notes")).failure)
            #expect(harness.client.versionPolicy == expected)
            harness.server.enqueue(.json("{}"))
            _ = try #require(await harness.send(.get("/notes")).success)
            #expect(harness.client.versionPolicy == expected)
        }
    }

    /// Found in review: the instant shown to the user was built from the delay capped for retrying (one
    /// day), so a three-day maintenance window was announced as ending tomorrow.
    @Test func aLongMaintenanceWindowIsReportedAsTheServerSaidIt() async throws {
        let harness = try Harness(policy: Self.once, versionPolicy: Self.app)
        harness.server.enqueue(Self.error(503, #"{"code": "maintenance"}"#, headers: ["Retry-After": "259200"]))
        let before = harness.clock.wallClock.now()
        let failure = try #require(await harness.send(.get("/notes")).failure)
        let retryAt = try #require(failure.retryAt)
        #expect(abs(retryAt.timeIntervalSince(before) - 259_200) < 60)
        #expect(harness.client.versionPolicy == .maintenance(retryAt: retryAt))
        #expect(RetryAfter.delay(from: "259200", now: before) == RetryAfter.maximumDelay)  // waiting stays capped
        #expect(
            RetryAfter.instant(from: "99999999999999999999", now: before) == before.addingTimeInterval(366 * 86_400))
    }

    @Test func maintenanceCarriesItsRetryTime() async throws {
        let harness = try Harness(policy: Self.once, versionPolicy: Self.app)
        harness.server.enqueue(Self.error(503, #"{"code": "maintenance"}"#, headers: ["Retry-After": "120"]))
        let failure = try #require(await harness.send(.get("/notes")).failure)
        #expect(failure.kind == .maintenance)
        let retryAt = try #require(failure.retryAt)
        #expect(harness.client.versionPolicy == .maintenance(retryAt: retryAt))
        // The next successful answer ends it.
        harness.server.enqueue(.json("{}"))
        _ = try #require(await harness.send(.get("/notes")).success)
        #expect(harness.client.versionPolicy == .supported)
    }

    @Test func aSecurityBlockIsDistinctFromARequiredUpdate() async throws {
        let harness = try Harness(policy: Self.once, versionPolicy: Self.app)
        harness.server.enqueue(Self.error(403, #"{"code": "version_blocked", "minimumVersions": {"ios": "5.1.1"}}"#))
        let failure = try #require(await harness.send(.get("/notes")).failure)
        #expect(failure.kind == .versionBlocked)
        #expect(harness.client.versionPolicy == .blocked(minimum: AppVersion("5.1.1")!))
        #expect(UserFacingOutcome(failure: failure, mutates: false).message.contains("blocked"))
    }

    @Test(arguments: [
        (426, #"{"code": "please_update"}"#),  // an unknown code
        (426, #"{"code": "update_required""#),  // a malformed body
        (426, "<html>upgrade</html>"),
        (426, #"{"code": "update_required", "minimumVersions": {"android": "5.2.0"}}"#),  // another platform only
        (426, #"{"code": "update_required"}"#),  // no minimum at all
        (426, #"{"code": "update_required", "minimumVersions": {"ios": "5.x"}}"#),  // does not parse
        (426, #"{"code": "update_required", "minimumVersions": {"ios": 6}}"#),
        (426, #"{"code": "update_required", "minimumVersions": "6.0"}"#),
        (426, #"{"code": "update_required", "minimumVersions": {"ios": "5.0.9"}}"#),  // older than this app
        (400, #"{"code": "update_required", "minimumVersions": {"ios": "5.2.0"}}"#),  // not the contract's status
        (500, #"{"code": "update_required", "minimumVersions": {"ios": "5.2.0"}}"#),
        (503, #"{"code": "version_blocked"}"#),  // a block is a 4xx
        (403, #"{"code": "version_blocked", "minimumVersions": {"ios": "five"}}"#),
        (403, #"{"code": "version_blocked", "minimumVersions": {"android": "5.2.0"}}"#),  // another platform only
        (403, #"{"code": "version_blocked", "minimumVersions": {"ios": "5.1.0"}}"#),  // this app meets it
    ])
    func anAnswerThatDoesNotSayItProperlyIsTechnicalAndChangesNothing(status: Int, body: String) async throws {
        let harness = try Harness(policy: Self.once, versionPolicy: Self.app)
        harness.server.enqueue(TestResponse(status: 200, headers: ["X-Update-Available": "5.2.0"], body: "{}"))
        _ = try #require(await harness.send(.get("/a")).success)
        let before = harness.client.versionPolicy
        #expect(before == .updateAvailable(latest: AppVersion("5.2.0")!))
        harness.server.enqueue(Self.error(status, body))
        let failure = try #require(await harness.send(.get("/b")).failure)
        #expect(failure.kind == .technical)
        #expect(harness.client.versionPolicy == before)
    }

    @Test func aMalformedAnnouncementOnASuccessChangesNothing() async throws {
        let harness = try Harness(versionPolicy: Self.app)
        harness.server.enqueue(TestResponse(status: 200, headers: ["X-Update-Available": "5.3.0"], body: "{}"))
        harness.server.enqueue(TestResponse(status: 200, headers: ["X-Update-Available": "latest!"], body: "{}"))
        _ = try #require(await harness.send(.get("/a")).success)
        _ = try #require(await harness.send(.get("/b")).success)
        #expect(harness.client.versionPolicy == .updateAvailable(latest: AppVersion("5.3.0")!))
    }

    @Test func withoutAVersionContractA426IsAnOrdinaryTechnicalFailure() async throws {
        let harness = try Harness(policy: Self.once)
        harness.server.enqueue(Self.error(426, #"{"code": "update_required", "minimumVersions": {"ios": "9"}}"#))
        #expect(try #require(await harness.send(.get("/a")).failure).kind == .technical)
        #expect(harness.client.versionPolicy == .supported)
        #expect(harness.server.requests.first?.headers.contains("X-App-Version") == false)
    }

    /// Two calls ending at once: the observer is never run twice at once and ends on the newest policy. Here
    /// the first call's observer is still running (held on purpose) when the second call's answer changes the
    /// policy again; the observer must get that change after the first one, not before it.
    @Test func theObserverEndsOnTheNewestPolicyWhenCallsEndAtOnce() async throws {
        let seen = Locked<[VersionPolicy]>([])
        let entered = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let running = Locked(0)
        let overlapped = Locked(false)
        let harness = try Harness(
            policy: Self.once, versionPolicy: Self.app,
            onVersionPolicyChange: { policy in
                running.withLock { count in
                    if count > 0 { overlapped.withLock { $0 = true } }
                    count += 1
                }
                if case .updateAvailable = policy {
                    entered.signal()
                    _ = release.wait(timeout: .now() + 10)
                }
                seen.withLock { $0.append(policy) }
                running.withLock { $0 -= 1 }
            })
        harness.server.enqueue(TestResponse(status: 200, headers: ["X-Update-Available": "5.3.0"], body: "{}"))
        harness.server.enqueue(Self.error(426, #"{"code": "update_required", "minimumVersions": {"ios": "5.2.0"}}"#))
        let first = Task { await harness.send(.get("/a")) }
        // The first call's observer holds a thread until released: wait for it off the cooperative pool.
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                _ = entered.wait(timeout: .now() + 10)
                continuation.resume()
            }
        }
        #expect(try #require(await harness.send(.get("/b")).failure).kind == .updateRequired)
        release.signal()
        _ = try #require(await first.value.success)
        let required = VersionPolicy.updateRequired(minimum: AppVersion("5.2.0")!)
        #expect(harness.client.versionPolicy == required)
        #expect(seen.withLock { $0 } == [.updateAvailable(latest: AppVersion("5.3.0")!), required])
        #expect(!overlapped.withLock { $0 })
    }
}
