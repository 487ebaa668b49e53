import Foundation
public import KeelContract
public import KeelCore

/// The production stores an app is published to and the state of each release (MOB-BUILD-005), as read
/// from a `STORES.json` file.
public struct StoreCatalog: Sendable, Equatable {
    /// A platform.
    public enum Platform: String, Sendable, Equatable, CaseIterable {
        /// iOS.
        case ios
        /// Android.
        case android
    }

    /// How far a release has been rolled out.
    public enum Rollout: String, Sendable, Equatable, CaseIterable {
        /// Available to everyone.
        case available
        /// App Store phased release (throttles automatic updates only).
        case phased
        /// Google Play (or similar) staged rollout to a percentage of users.
        case staged
        /// A phased or staged rollout that was paused.
        case paused
        /// A staged rollout that was halted.
        case halted
        /// Waiting for review.
        case inReview
        /// Rejected by review.
        case rejected

        /// Whether `percent` is required (for these) or forbidden (for the others).
        var takesPercent: Bool { [.phased, .staged, .paused, .halted].contains(self) }
        /// Whether `manualUpdate` may be given.
        var takesManualUpdate: Bool { self == .phased || self == .paused }
    }

    /// One release in one store.
    public struct Release: Sendable, Equatable {
        /// The version.
        public let version: AppVersion
        /// The rollout state.
        public let rollout: Rollout
        /// The rollout percentage (for phased, staged, paused and halted).
        public let percent: Double?
        /// Whether users can update by hand during a phased (or paused) App Store release.
        public let manualUpdate: Bool
        /// Whether `percent` is exactly 100 as written (`99.99999999999999999` is a `Double` of 100.0, and
        /// not every user).
        let isFullPercent: Bool

        /// Whether every user of the store can get this release now: `available`; `staged` at 100 %;
        /// `phased` or `paused` with manual updates (a phased release only throttles automatic updates).
        public var reachesEveryUser: Bool {
            switch rollout {
            case .available: true
            case .staged: isFullPercent
            case .phased, .paused: manualUpdate
            case .halted, .inReview, .rejected: false
            }
        }

        /// Why the release does not reach every user (nil when it does).
        var shortfall: String? {
            guard !reachesEveryUser else { return nil }
            // A share that rounds to 100 but is not (99.99999999999999999) is not said to be 100.
            let share =
                percent.map { (Self.format($0) == "100" && !isFullPercent ? "under 100" : Self.format($0)) + "%" } ?? ""
            switch rollout {
            case .available: return nil
            case .staged: return "staged rollout at \(share): the other users cannot install it yet"
            case .phased where isFullPercent:
                // The phase is over but the file still says phased: only "available" (or manual updates) counts.
                return
                    "phased release at 100% without manual updates: not counted as reaching every user until it is \"available\""
            case .phased:
                return "phased release at \(share) without manual updates: users not yet included cannot install it"
            case .paused: return "rollout paused at \(share) without manual updates"
            case .halted: return "rollout halted at \(share)"
            case .inReview: return "still in review"
            case .rejected: return "rejected in review"
            }
        }

        static func format(_ percent: Double) -> String {
            percent == percent.rounded() ? String(Int(percent)) : String(percent)
        }
    }

    /// One store.
    public struct Store: Sendable, Equatable {
        /// A unique id (`app-store`, `google-play`, `rustore`).
        public let id: String
        /// The platform it serves.
        public let platform: Platform
        /// Whether it is a production store (only those decide).
        public let production: Bool
        /// Its releases.
        public let releases: [Release]
    }

    /// The stores, in file order.
    public let stores: [Store]

    /// Reads `STORES.json`.
    ///
    /// Strict: unknown members, a wrong type, a duplicate store id, an invalid version or a `percent` or
    /// `manualUpdate` where the rollout does not take it are bad input — a typo must not pass a gate.
    ///
    /// - Throws: ``ReleaseGateInputError`` naming the offending field as a JSON pointer.
    public init(json data: some Collection<UInt8>) throws(ReleaseGateInputError) {
        let document: JSONValue
        do {
            document = try JSONValue(parsing: data)
        } catch {
            throw ReleaseGateInputError(pointer: error.pointer(in: data), message: "not JSON: \(error)")
        }
        try self.init(document)
    }

    /// Reads a parsed `STORES.json` (see ``init(json:)``).
    public init(_ document: JSONValue) throws(ReleaseGateInputError) {
        let root = try Self.object(document, at: "", allowed: ["stores"], required: ["stores"])
        guard case .array(let entries) = root["stores"]! else {
            throw ReleaseGateInputError(pointer: "/stores", message: "must be an array of stores")
        }
        var stores: [Store] = []
        var ids: Set<String> = []
        for (index, entry) in entries.enumerated() {
            let pointer = "/stores/\(index)"
            let object = try Self.object(
                entry, at: pointer, allowed: ["id", "platform", "production", "releases"],
                required: ["id", "platform", "production", "releases"])
            guard case .string(let id) = object["id"]!, !id.isEmpty else {
                throw ReleaseGateInputError(pointer: pointer + "/id", message: "must be a non-empty string")
            }
            guard ids.insert(id).inserted else {
                throw ReleaseGateInputError(
                    pointer: pointer + "/id", message: "store id \(id.debugDescription) appears twice")
            }
            guard case .string(let platformName) = object["platform"]!, let platform = Platform(rawValue: platformName)
            else {
                throw ReleaseGateInputError(pointer: pointer + "/platform", message: "must be \"ios\" or \"android\"")
            }
            guard case .bool(let production) = object["production"]! else {
                throw ReleaseGateInputError(pointer: pointer + "/production", message: "must be true or false")
            }
            guard case .array(let releaseEntries) = object["releases"]! else {
                throw ReleaseGateInputError(pointer: pointer + "/releases", message: "must be an array of releases")
            }
            var releases: [Release] = []
            for (position, release) in releaseEntries.enumerated() {
                releases.append(try Self.release(release, at: pointer + "/releases/\(position)"))
            }
            stores.append(Store(id: id, platform: platform, production: production, releases: releases))
        }
        self.stores = stores
    }

    private static func release(_ value: JSONValue, at pointer: String) throws(ReleaseGateInputError) -> Release {
        let object = try object(
            value, at: pointer, allowed: ["version", "rollout", "percent", "manualUpdate"],
            required: ["version", "rollout"])
        guard case .string(let text) = object["version"]!, let version = AppVersion(text) else {
            throw ReleaseGateInputError(
                pointer: pointer + "/version",
                message: "must be 1 to 4 dot-separated non-negative integers, each at most \(Int.max)")
        }
        guard case .string(let rolloutName) = object["rollout"]!, let rollout = Rollout(rawValue: rolloutName) else {
            throw ReleaseGateInputError(
                pointer: pointer + "/rollout",
                message: "must be one of \(Rollout.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        var percent: Double?
        var isFullPercent = false
        if let value = object["percent"] {
            guard rollout.takesPercent else {
                throw ReleaseGateInputError(
                    pointer: pointer + "/percent", message: "not allowed with rollout \(rollout.rawValue)")
            }
            // Judged on the number as written, by JSONNumber's exact comparison: a `Double` rounds
            // 99.99999999999999999 to 100 and 100.00000000000001 into range, and `Decimal` keeps 38 digits.
            let hundred = JSONNumber(Int64(100))
            guard case .number(let number) = value, let double = Double(number.literal),
                number >= JSONNumber(Int64(0)), number <= hundred
            else {
                throw ReleaseGateInputError(pointer: pointer + "/percent", message: "must be a number from 0 to 100")
            }
            percent = double
            isFullPercent = number == hundred
        } else if rollout.takesPercent {
            throw ReleaseGateInputError(
                pointer: pointer + "/percent", message: "required with rollout \(rollout.rawValue)")
        }
        var manualUpdate = false
        if let value = object["manualUpdate"] {
            guard rollout.takesManualUpdate else {
                throw ReleaseGateInputError(
                    pointer: pointer + "/manualUpdate", message: "allowed only with rollout phased or paused")
            }
            guard case .bool(let flag) = value else {
                throw ReleaseGateInputError(pointer: pointer + "/manualUpdate", message: "must be true or false")
            }
            manualUpdate = flag
        }
        return Release(
            version: version, rollout: rollout, percent: percent, manualUpdate: manualUpdate,
            isFullPercent: isFullPercent)
    }

    private static func object(
        _ value: JSONValue, at pointer: String, allowed: Set<String>, required: [String]
    ) throws(ReleaseGateInputError) -> JSONObject {
        guard case .object(let object) = value else {
            throw ReleaseGateInputError(pointer: pointer, message: "must be an object")
        }
        for key in object.keys where !allowed.contains(key) {
            throw ReleaseGateInputError(
                pointer: pointer + "/" + JSONPointer.escape(key), message: "unknown member \(key.debugDescription)")
        }
        for key in required where object[key] == nil {
            throw ReleaseGateInputError(pointer: pointer + "/" + key, message: "is required")
        }
        return object
    }
}

/// "May the backend require this version on this platform now?" (MOB-API-005): allowed only when every
/// production store of the platform offers a release at least that new to every one of its users.
public struct ReleaseGate: Sendable, Equatable {
    /// Why one production store cannot serve the required version to every user yet.
    public struct Reason: Sendable, Equatable {
        /// The store.
        public let store: String
        /// The release concerned (nil when the store has no release new enough at all).
        public let release: AppVersion?
        /// Why.
        public let why: String

        /// A reason.
        public init(store: String, release: AppVersion?, why: String) {
            self.store = store
            self.release = release
            self.why = why
        }
    }

    /// What one store contributes.
    public struct StoreVerdict: Sendable, Equatable {
        /// The store.
        public let store: String
        /// Whether it is a production store (only those decide).
        public let production: Bool
        /// The newest release at least as new as the required version that reaches every user, if any.
        public let serving: AppVersion?

        /// A verdict.
        public init(store: String, production: Bool, serving: AppVersion?) {
            self.store = store
            self.production = production
            self.serving = serving
        }
    }

    /// The platform asked about.
    public let platform: StoreCatalog.Platform
    /// The version the backend would require.
    public let minimumVersion: AppVersion
    /// Whether every production store can serve it to every user.
    public let allowed: Bool
    /// Why not (empty when allowed): every release and store that falls short.
    public let reasons: [Reason]
    /// Every store of the platform, production or not.
    public let stores: [StoreVerdict]

    /// The production stores of `platform` that cannot serve the update yet.
    public var storesThatCannotServe: [String] {
        stores.filter { $0.production && $0.serving == nil }.map(\.store)
    }

    /// Decides for `platform` and `minimumVersion`.
    ///
    /// - Throws: ``ReleaseGateInputError`` when the catalog has no production store for `platform`
    ///   (nothing to verify).
    public init(catalog: StoreCatalog, platform: StoreCatalog.Platform, minimumVersion: AppVersion)
        throws(ReleaseGateInputError)
    {
        let relevant = catalog.stores.filter { $0.platform == platform }
        guard relevant.contains(where: \.production) else {
            throw ReleaseGateInputError(
                pointer: "/stores",
                message: "no production store for \(platform.rawValue): nothing to verify")
        }
        var reasons: [Reason] = []
        var verdicts: [StoreVerdict] = []
        for store in relevant {
            let candidates = store.releases.filter { $0.version >= minimumVersion }
            let serving = candidates.filter(\.reachesEveryUser).map(\.version).max()
            verdicts.append(StoreVerdict(store: store.id, production: store.production, serving: serving))
            guard store.production, serving == nil else { continue }
            if candidates.isEmpty {
                reasons.append(
                    Reason(store: store.id, release: nil, why: "no release of \(minimumVersion) or later"))
            }
            for release in candidates {
                reasons.append(Reason(store: store.id, release: release.version, why: release.shortfall ?? ""))
            }
        }
        self.platform = platform
        self.minimumVersion = minimumVersion
        self.reasons = reasons
        self.stores = verdicts
        self.allowed = reasons.isEmpty
    }
}

/// A `STORES.json` (or a gate question) that cannot be read: the offending field as a JSON pointer.
public struct ReleaseGateInputError: KeelError, Equatable, CustomStringConvertible {
    /// Codes of ``ReleaseGateInputError``.
    public typealias Code = ErrorCode<ReleaseGateInputError>

    /// What is wrong.
    public let code: Code
    /// The offending field (`/stores/0/releases/1/percent`; `""` for the whole document).
    public let pointer: String
    /// What is wrong with it.
    public let message: String

    /// An error at `pointer`.
    public init(code: Code = .invalid, pointer: String, message: String) {
        self.code = code
        self.pointer = pointer
        self.message = message
    }

    /// `pointer: message`; `the document: message` for the whole document (whose JSON pointer is empty:
    /// `/` would name a member with the empty name).
    public var description: String { "\(pointer.isEmpty ? "the document" : pointer): \(message)" }
}

extension ErrorCode where Domain == ReleaseGateInputError {
    /// The input breaks the format.
    public static var invalid: Self { Self("invalid") }
}
