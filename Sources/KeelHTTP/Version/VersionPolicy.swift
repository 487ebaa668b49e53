public import Foundation
import KeelContract
public import KeelCore

/// What the backend says about the installed app version (MOB-API-005), as the app should act on it.
///
/// Derived only from answers the contract defines; anything else — an unknown code, a malformed body, a
/// minimum version for another platform only, a version that does not parse — is a technical failure and
/// leaves the policy as it was. Never "update now" by default, and nothing in Keel deletes anything
/// because of it: the update and block screens are screens, not purges.
public enum VersionPolicy: Sendable, Equatable {
    /// Nothing to show.
    case supported
    /// A newer version exists; this one keeps working (a header on normal responses, never a failure).
    case updateAvailable(latest: AppVersion)
    /// This version is no longer supported on this platform; `minimum` is the oldest one that is. It holds
    /// for the client's life: a later success (from an endpoint the backend's check exempts, or a cached
    /// answer) does not end it; installing the update relaunches the app with a new client.
    case updateRequired(minimum: AppVersion)
    /// The backend is down for planned maintenance, until `retryAt` when it said so.
    case maintenance(retryAt: Date?)
    /// This version is blocked for security reasons (the incident exception: possibly before an update is
    /// available everywhere). A distinct, safe screen; local data stays. Like ``updateRequired(minimum:)``,
    /// it holds for the client's life.
    case blocked(minimum: AppVersion?)
}

/// How the contract carries the version policy, and who this app is.
///
/// Every call sends ``appVersion`` and ``platform`` in ``appVersionHeader`` and ``platformHeader``. The
/// defaults match Keel's sample contract (`contracts/notes-api.v1.2.yaml`):
/// - optional update: `X-Update-Available: 5.3.0` on any successful response;
/// - required update: HTTP 426 with `{"code": "update_required", "minimumVersions": {"ios": "5.2.0"}}`;
/// - maintenance: HTTP 503 with `{"code": "maintenance"}` and an optional `Retry-After`;
/// - security block: `{"code": "version_blocked", "minimumVersions": {...}}` (any 4xx).
public struct VersionPolicyContract: Sendable, Equatable {
    /// This app's version.
    public var appVersion: AppVersion
    /// This app's platform as the contract names it (`ios`, `android`).
    public var platform: String
    /// The request header carrying ``appVersion``.
    public var appVersionHeader: String
    /// The request header carrying ``platform``.
    public var platformHeader: String
    /// The response header announcing the latest version (an optional update).
    public var updateAvailableHeader: String
    /// Statuses that carry a required update (with ``updateRequiredCode``).
    public var updateRequiredStatuses: Set<Int>
    /// The machine code of a required update.
    public var updateRequiredCode: String
    /// The machine code of a security block.
    public var blockedCode: String
    /// The error-body member mapping platforms to their minimum supported version.
    public var minimumVersionsMember: String

    /// The sample contract's names; only the app's version and platform are required.
    public init(
        appVersion: AppVersion,
        platform: String,
        appVersionHeader: String = "X-App-Version",
        platformHeader: String = "X-App-Platform",
        updateAvailableHeader: String = "X-Update-Available",
        updateRequiredStatuses: Set<Int> = [426],
        updateRequiredCode: String = "update_required",
        blockedCode: String = "version_blocked",
        minimumVersionsMember: String = "minimumVersions"
    ) {
        self.appVersion = appVersion
        self.platform = platform
        self.appVersionHeader = appVersionHeader
        self.platformHeader = platformHeader
        self.updateAvailableHeader = updateAvailableHeader
        self.updateRequiredStatuses = updateRequiredStatuses
        self.updateRequiredCode = updateRequiredCode
        self.blockedCode = blockedCode
        self.minimumVersionsMember = minimumVersionsMember
    }

    /// What a failed answer means for the version policy.
    enum Verdict: Equatable {
        /// Not about versions.
        case unrelated
        /// A required update, with this platform's minimum.
        case updateRequired(AppVersion)
        /// A security block (with this platform's minimum when the body gives one).
        case blocked(AppVersion?)
        /// A version answer that does not make sense: a technical failure, no change of policy.
        case malformed(String)
    }

    /// Reads a non-2xx answer whose machine code is `code`.
    func verdict(status: Int, code: String?, body: Data) -> Verdict {
        let claimsUpdate = updateRequiredStatuses.contains(status)
        switch code {
        case updateRequiredCode?:
            // A required update is the contract's status (426) with its code: the code on another status (a
            // 400, a 500) is a server saying two things at once.
            guard claimsUpdate else {
                return .malformed("\(updateRequiredCode) on status \(status), not \(updateRequiredStatuses.sorted())")
            }
            switch minimumVersion(in: body) {
            case .invalid: return .malformed("a required update without a valid minimum version for \(platform)")
            case .absent, .otherPlatformsOnly:
                return .malformed("a required update without a minimum version for \(platform)")
            case .version(let minimum):
                guard appVersion < minimum else {
                    return .malformed("a required update to \(minimum), but this app is \(appVersion) already")
                }
                return .updateRequired(minimum)
            }
        case blockedCode?:
            // A refusal of this version: a 4xx, never a server error.
            guard (400..<500).contains(status) else {
                return .malformed("\(blockedCode) on status \(status), not a 4xx")
            }
            switch minimumVersion(in: body) {
            case .invalid: return .malformed("a version block with an invalid minimum version")
            // A block that names minimums, none of them this platform's, is about other apps.
            case .otherPlatformsOnly: return .malformed("a version block for other platforms than \(platform)")
            case .absent: return .blocked(nil)  // this version is blocked; no minimum given
            case .version(let minimum):
                guard appVersion < minimum else {
                    return .malformed("a version block below \(minimum), but this app is \(appVersion)")
                }
                return .blocked(minimum)
            }
        default:
            // A required-update status with an unknown (or no) code is not a policy the app can act on.
            return claimsUpdate ? .malformed("status \(status) without a known version code") : .unrelated
        }
    }

    /// What an error body says about this platform's minimum version.
    private enum Minimum {
        /// The body is not a JSON object, or the member or this platform's version is malformed.
        case invalid
        /// No minimum versions at all.
        case absent
        /// Minimum versions for other platforms, none for this one.
        case otherPlatformsOnly
        /// This platform's minimum.
        case version(AppVersion)
    }

    /// This platform's minimum version in an error body.
    private func minimumVersion(in body: Data) -> Minimum {
        guard let value = try? JSONValue(parsing: body), case .object(let object) = value else { return .invalid }
        guard let member = object[minimumVersionsMember] else { return .absent }
        guard case .object(let versions) = member else { return .invalid }
        guard let entry = versions[platform] else { return versions.isEmpty ? .absent : .otherPlatformsOnly }
        guard case .string(let text) = entry, let version = AppVersion(text) else { return .invalid }
        return .version(version)
    }

    /// The policy a successful response states: an update when it announces a version newer than this
    /// app, `.supported` when it announces none (or one not newer); nil — no change — when the announcement
    /// does not parse.
    func policy(afterSuccess response: TransportResponse) -> VersionPolicy? {
        guard let text = response.header(updateAvailableHeader) else { return .supported }
        guard let latest = AppVersion(text.trimmingSpacesAndTabs()) else { return nil }
        return appVersion < latest ? .updateAvailable(latest: latest) : .supported
    }
}

/// The client's current ``VersionPolicy``, shared by its calls.
///
/// The observer is called outside any lock (it may read ``HTTPClient/versionPolicy`` or do anything else)
/// and never twice at once, and it always ends on the newest policy: when calls set policies concurrently,
/// one of them delivers, the others leave their change to it, and it delivers until nothing newer is left
/// (a policy that was replaced before it could be delivered is skipped).
final class VersionPolicyState: Sendable {
    private struct State {
        var current = VersionPolicy.supported
        /// The policy the observer was last given.
        var delivered = VersionPolicy.supported
        /// Whether some call is running the observer now.
        var isDelivering = false
    }

    private let state = Locked(State())
    private let onChange: (@Sendable (VersionPolicy) -> Void)?

    init(onChange: (@Sendable (VersionPolicy) -> Void)?) { self.onChange = onChange }

    var current: VersionPolicy { state.withLock { $0.current } }

    /// Sets the policy; tells the observer when it changed. A required update or a security block holds for
    /// the client's life: only another such verdict replaces it — never maintenance, an announcement or a
    /// success that does not speak of versions (decided under the lock, so a verdict arriving meanwhile is
    /// never overwritten).
    func set(_ policy: VersionPolicy) {
        let delivers = state.withLock { state -> Bool in
            switch (state.current, policy) {
            case (.updateRequired, .updateRequired), (.updateRequired, .blocked), (.blocked, .updateRequired),
                (.blocked, .blocked):
                break
            case (.updateRequired, _), (.blocked, _): return false
            default: break
            }
            state.current = policy
            guard onChange != nil, !state.isDelivering, state.current != state.delivered else { return false }
            state.isDelivering = true
            return true
        }
        guard delivers, let onChange else { return }
        while true {
            let next = state.withLock { state -> VersionPolicy? in
                guard state.current != state.delivered else {
                    state.isDelivering = false
                    return nil
                }
                state.delivered = state.current
                return state.current
            }
            guard let next else { return }
            onChange(next)
        }
    }
}
