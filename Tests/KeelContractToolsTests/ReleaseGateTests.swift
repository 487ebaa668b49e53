import Foundation
import KeelContract
import KeelContractTools
import KeelCore
import Testing

/// MOB-API-005 (release side): a required update only when every production store can serve it to
/// every user.
@Suite struct ReleaseGateTests {
    static func catalog(_ json: String) throws -> StoreCatalog { try StoreCatalog(json: Array(json.utf8)) }

    static func gate(_ json: String, _ platform: StoreCatalog.Platform, _ version: String) throws -> ReleaseGate {
        try ReleaseGate(catalog: catalog(json), platform: platform, minimumVersion: #require(AppVersion(version)))
    }

    static let example = """
        {"stores": [
          {"id": "app-store", "platform": "ios", "production": true,
           "releases": [{"version": "5.1.0", "rollout": "available"},
                        {"version": "5.2.0", "rollout": "phased", "percent": 5, "manualUpdate": true}]},
          {"id": "google-play", "platform": "android", "production": true,
           "releases": [{"version": "5.2.0", "rollout": "staged", "percent": 20}]}
        ]}
        """

    @Test func everyStoreAvailableIsAllowed() throws {
        let gate = try Self.gate(Self.example, .ios, "5.1")
        #expect(gate.allowed)
        #expect(gate.reasons.isEmpty)
        #expect(gate.stores == [.init(store: "app-store", production: true, serving: AppVersion("5.2.0"))])
    }

    @Test func anAppStorePhasedReleaseWithManualUpdatesReachesEveryone() throws {
        #expect(try Self.gate(Self.example, .ios, "5.2.0").allowed)
    }

    @Test func aPhasedReleaseWithoutManualUpdatesDoesNot() throws {
        let json = Self.example.replacingOccurrences(of: #", "manualUpdate": true"#, with: "")
        let gate = try Self.gate(json, .ios, "5.2.0")
        #expect(!gate.allowed)
        #expect(gate.reasons.map(\.store) == ["app-store"])
        #expect(gate.reasons.first?.release == AppVersion("5.2.0"))
        #expect(gate.reasons.first?.why.contains("phased release at 5%") == true)
        // At 100 % nobody is left out of the phase, so the reason says what counts instead.
        let complete = try Self.gate(
            json.replacingOccurrences(of: #""percent": 5"#, with: #""percent": 100"#), .ios, "5.2")
        #expect(!complete.allowed)
        #expect(complete.reasons.first?.why.contains("phased release at 100%") == true)
        #expect(complete.reasons.first?.why.contains("until it is \"available\"") == true)
        #expect(complete.reasons.first?.why.contains("users not yet included") == false)
    }

    @Test func aGooglePlayStagedRolloutAt20PercentIsRefusedAndAt100Allowed() throws {
        let refused = try Self.gate(Self.example, .android, "5.2.0")
        #expect(!refused.allowed)
        #expect(
            refused.reasons == [.init(store: "google-play", release: AppVersion("5.2.0"), why: refused.reasons[0].why)])
        #expect(refused.reasons[0].why.contains("staged rollout at 20%"))
        let full = Self.example.replacingOccurrences(of: #""percent": 20"#, with: #""percent": 100"#)
        #expect(try Self.gate(full, .android, "5.2.0").allowed)
        #expect(try Self.gate(full.replacingOccurrences(of: "100", with: "100.000"), .android, "5.2.0").allowed)
        // Found in review: 99.99999999999999999 is 100.0 as a Double, and was let through as every user.
        let almost = Self.example.replacingOccurrences(of: #""percent": 20"#, with: #""percent": 99.99999999999999999"#)
        let almostDecision = try Self.gate(almost, .android, "5.2.0")
        #expect(!almostDecision.allowed)
        #expect(almostDecision.reasons.first?.why.contains("staged rollout at under 100%") == true)
        let over = Self.example.replacingOccurrences(of: #""percent": 20"#, with: #""percent": 100.00000000000001"#)
        #expect(throws: ReleaseGateInputError.self) { try Self.gate(over, .android, "5.2.0") }
    }

    /// Found in an outside audit: `Decimal` keeps 38 digits, so a percent just over 100 written with more
    /// digits was 100 (and let through as every user), and an exponent beyond ±128 made a valid 0 bad input.
    @Test(
        arguments: [
            ("100.00000000000000000000000000000000000000000001", false, nil),
            ("100000000000000000000000000000000000000000001e-42", false, nil),
            ("1e3", false, nil), ("-1e-400", false, nil), ("100e999999999", false, nil),
            ("0.1e3", true, true), ("1000e-1", true, true),
            ("100000000000000000000000000000000000000000000e-42", true, true),
            ("99.999999999999999999999999999999999999999999", true, false), ("0e200", true, false),
            ("0e-200", true, false), ("-0", true, false), ("1e-130", true, false), ("5e-999999999", true, false),
        ] as [(String, Bool, Bool?)])
    func aPercentIsJudgedOnEveryDigitAsWritten(literal: String, valid: Bool, everyUser: Bool?) throws {
        let json = Self.example.replacingOccurrences(of: #""percent": 20"#, with: #""percent": \#(literal)"#)
        guard valid else {
            #expect(throws: ReleaseGateInputError.self) { try Self.gate(json, .android, "5.2.0") }
            return
        }
        #expect(try Self.gate(json, .android, "5.2.0").allowed == everyUser)
    }

    @Test func aSecondAndroidProductionStoreThatLagsRefuses() throws {
        let json = """
            {"stores": [
              {"id": "google-play", "platform": "android", "production": true,
               "releases": [{"version": "5.2.0", "rollout": "available"}]},
              {"id": "rustore", "platform": "android", "production": true,
               "releases": [{"version": "5.1.3", "rollout": "available"}]},
              {"id": "beta-track", "platform": "android", "production": false, "releases": []}
            ]}
            """
        let gate = try Self.gate(json, .android, "5.2")
        #expect(!gate.allowed)
        #expect(gate.reasons == [.init(store: "rustore", release: nil, why: "no release of 5.2 or later")])
        #expect(gate.storesThatCannotServe == ["rustore"])
        // A non-production store is listed but never decides.
        #expect(gate.stores.map(\.store) == ["google-play", "rustore", "beta-track"])
        #expect(try Self.gate(json, .android, "5.1.3").allowed)
    }

    @Test func aPausedRolloutRefusesUnlessManualUpdatesAreOn() throws {
        let paused = """
            {"stores": [{"id": "app-store", "platform": "ios", "production": true,
              "releases": [{"version": "6.0", "rollout": "paused", "percent": 50}]}]}
            """
        #expect(try !Self.gate(paused, .ios, "6.0").allowed)
        let manual = paused.replacingOccurrences(of: #""percent": 50"#, with: #""percent": 50, "manualUpdate": true"#)
        #expect(try Self.gate(manual, .ios, "6.0").allowed)
    }

    @Test(arguments: ["halted", "inReview", "rejected"])
    func releasesThatAreNotOutReachNobody(rollout: String) throws {
        let percent = rollout == "halted" ? #", "percent": 100"# : ""
        let json = """
            {"stores": [{"id": "s", "platform": "ios", "production": true,
              "releases": [{"version": "7.0.0", "rollout": "\(rollout)"\(percent)}]}]}
            """
        #expect(try !Self.gate(json, .ios, "7").allowed)
    }

    @Test func versionsCompareNumerically() throws {
        #expect(try #require(AppVersion("5.10.0")) > #require(AppVersion("5.9.0")))
        #expect(AppVersion("5.2") == AppVersion("5.2.0.0"))
        #expect(try #require(AppVersion("5.2.1")) > #require(AppVersion("5.2")))
        for bad in [
            "", "5.", ".5", "5..1", "v5", "5.2.0.1.2", "-1", "+5", "5.2-beta", " 5.2", "5.x", "99999999999999999999",
        ] {
            #expect(AppVersion(bad) == nil, "\(bad)")
        }
        let json = """
            {"stores": [{"id": "s", "platform": "ios", "production": true,
              "releases": [{"version": "5.10.0", "rollout": "available"}]}]}
            """
        #expect(try Self.gate(json, .ios, "5.9.0").allowed)
        #expect(try !Self.gate(json, .ios, "5.11").allowed)
    }

    @Test(arguments: [
        (#"[]"#, ""),
        (#"{"stores": [], "extra": 1}"#, "/extra"),
        (#"{}"#, "/stores"),
        (#"{"stores": {}}"#, "/stores"),
        (
            #"{"stores": [{"id": "a", "platform": "ios", "production": true, "releases": [], "prod": true}]}"#,
            "/stores/0/prod"
        ),
        (#"{"stores": [{"platform": "ios", "production": true, "releases": []}]}"#, "/stores/0/id"),
        (#"{"stores": [{"id": "", "platform": "ios", "production": true, "releases": []}]}"#, "/stores/0/id"),
        (
            #"{"stores": [{"id": "a", "platform": "ios", "production": true, "releases": []}, {"id": "a", "platform": "ios", "production": true, "releases": []}]}"#,
            "/stores/1/id"
        ),
        (#"{"stores": [{"id": "a", "platform": "web", "production": true, "releases": []}]}"#, "/stores/0/platform"),
        (#"{"stores": [{"id": "a", "platform": "ios", "production": "yes", "releases": []}]}"#, "/stores/0/production"),
        (#"{"stores": [{"id": "a", "platform": "ios", "production": true}]}"#, "/stores/0/releases"),
        (
            #"{"stores": [{"id": "a", "platform": "ios", "production": true, "releases": [{"version": "5.2.0-beta", "rollout": "available"}]}]}"#,
            "/stores/0/releases/0/version"
        ),
        (
            #"{"stores": [{"id": "a", "platform": "ios", "production": true, "releases": [{"version": "5", "rollout": "live"}]}]}"#,
            "/stores/0/releases/0/rollout"
        ),
        (
            #"{"stores": [{"id": "a", "platform": "ios", "production": true, "releases": [{"version": "5", "rollout": "staged"}]}]}"#,
            "/stores/0/releases/0/percent"
        ),
        (
            #"{"stores": [{"id": "a", "platform": "ios", "production": true, "releases": [{"version": "5", "rollout": "available", "percent": 100}]}]}"#,
            "/stores/0/releases/0/percent"
        ),
        (
            #"{"stores": [{"id": "a", "platform": "ios", "production": true, "releases": [{"version": "5", "rollout": "staged", "percent": 101}]}]}"#,
            "/stores/0/releases/0/percent"
        ),
        (
            #"{"stores": [{"id": "a", "platform": "ios", "production": true, "releases": [{"version": "5", "rollout": "staged", "percent": "5"}]}]}"#,
            "/stores/0/releases/0/percent"
        ),
        (
            #"{"stores": [{"id": "a", "platform": "ios", "production": true, "releases": [{"version": "5", "rollout": "staged", "percent": 5, "manualUpdate": true}]}]}"#,
            "/stores/0/releases/0/manualUpdate"
        ),
        (
            #"{"stores": [{"id": "a", "platform": "ios", "production": true, "releases": [{"version": "5", "rollout": "phased", "percent": 5, "manualUpdate": 1}]}]}"#,
            "/stores/0/releases/0/manualUpdate"
        ),
        (
            #"{"stores": [{"id": "a", "platform": "ios", "production": true, "releases": [{"version": "5", "rollout": "available", "notes": "x"}]}]}"#,
            "/stores/0/releases/0/notes"
        ),
        (
            #"{"stores": [{"id": "a", "platform": "ios", "production": true, "releases": [{"version": 5, "rollout": "available"}]}]}"#,
            "/stores/0/releases/0/version"
        ),
        // Not JSON at all: the pointer still names where reading stopped — the unterminated store, the
        // repeated member (a second "rollout" must not silently win).
        (#"{"stores": [{"id": "a", "platform": "ios""#, "/stores/0"),
        (
            #"{"stores": [{"id": "a", "platform": "ios", "production": true, "releases": [{"version": "5", "rollout": "halted", "rollout": "available"}]}]}"#,
            "/stores/0/releases/0/rollout"
        ),
        ("", ""),
    ])
    func badInputNamesTheOffendingField(json: String, pointer: String) {
        #expect {
            try ReleaseGateTests.gate(json, .ios, "5")
        } throws: { ($0 as? ReleaseGateInputError)?.pointer == pointer }
    }

    /// A component beyond what a 64-bit integer holds is refused with the limit named, never read as some
    /// other number; the largest one that fits is a version like any other.
    @Test func aVersionComponentBeyondTheLimitIsRefusedSayingSo() throws {
        func store(_ version: String) -> String {
            #"{"stores": [{"id": "a", "platform": "ios", "production": true, "releases": [{"version": "\#(version)", "rollout": "available"}]}]}"#
        }
        #expect {
            try ReleaseGateTests.gate(store("5.99999999999999999999"), .ios, "5")
        } throws: { error in
            guard let error = error as? ReleaseGateInputError else { return false }
            return error.pointer == "/stores/0/releases/0/version" && error.message.contains("\(Int.max)")
        }
        let largest = try Self.gate(store("5.\(Int.max)"), .ios, "5.\(Int.max)")
        #expect(largest.allowed)
        #expect(try !Self.gate(store("5.\(Int.max - 1)"), .ios, "5.\(Int.max)").allowed)
    }

    @Test func noProductionStoreForThePlatformIsNothingToVerify() {
        let testOnly = #"{"stores": [{"id": "t", "platform": "ios", "production": false, "releases": []}]}"#
        let androidOnly = #"{"stores": [{"id": "p", "platform": "android", "production": true, "releases": []}]}"#
        for json in [testOnly, androidOnly] {
            #expect {
                try ReleaseGateTests.gate(json, .ios, "5")
            } throws: { ($0 as? ReleaseGateInputError)?.message.contains("no production store for ios") == true }
        }
    }
}
