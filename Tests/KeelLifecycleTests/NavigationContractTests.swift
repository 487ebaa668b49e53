import Foundation
import KeelLifecycle
import Testing

/// The example contract of the issue and the guide (`contracts/navigation.example.json`), as routes.
let exampleRoutes: [Route] = [
    Route("home", access: .public, isRoot: true),
    Route("notes", parent: "home", access: .signedIn),
    Route("note", parent: "notes", access: .account, parameters: ["noteID"], deepLink: "keel-notes://note/{noteID}"),
    Route(
        "edit", parent: "note", access: .account, parameters: ["noteID"],
        input: .init(policy: .confirmDiscard, onDeath: .save)),
    Route("otp", parent: "home", access: .signedIn, isModal: true, isSensitive: true),
    Route("signIn", access: .public, isModal: true),
]

@Suite(.timeLimit(.minutes(1))) struct NavigationContractTests {
    static func codes(_ routes: [Route]) -> [String] {
        NavigationContract.problems(in: routes).map { "\($0.route):\($0.code.name)" }
    }

    /// A chain of 20,000 parents (a hostile contract) is checked in one pass over the routes — the check
    /// walked every route's whole chain, quadratic, and stalled — and every route beyond 64 ancestors is
    /// refused; a chain of 64 is fine.
    @Test func longParentChainsAreCheckedInLinearTimeAndTooDeepOnesRefused() {
        func chain(_ count: Int) -> [Route] {
            [Route("r0", access: .public, isRoot: true)]
                + (1..<count).map {
                    Route("r\($0)", parent: "r\($0 - 1)", access: .public, deepLink: "app://r/\($0)")
                }
        }
        #expect(Self.codes(chain(NavigationContract.maximumDepth + 1)) == [])
        let problems = NavigationContract.problems(in: chain(20_000))
        #expect(problems.count == 20_000 - NavigationContract.maximumDepth - 1)
        #expect(problems.allSatisfy { $0.code == .tooDeep })
        #expect(
            problems.first?.description == "r65: r65 has 65 ancestors; a back stack deeper than 64 routes is refused")
        // A long chain that ends in a cycle: every route on it is cyclic, through the cycle's entry.
        var looped = chain(20_000)
        looped[0] = Route("r0", parent: "r19999", access: .public)
        let loop = NavigationContract.problems(in: looped + [Route("root", access: .public, isRoot: true)])
        #expect(loop.filter { $0.code == .cyclicParents }.count == 20_000)
    }

    @Test func theExampleContractIsSoundAndItsFileReadsBackToTheSameRoutes() throws {
        let contract = try NavigationContract(exampleRoutes)
        #expect(contract.root.id == "home")
        #expect(contract.ancestors(of: "edit").map(\.id) == ["home", "notes", "note"])
        let file = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("contracts/navigation.example.json")
        let fromFile = try NavigationContract(json: Data(contentsOf: file))
        #expect(fromFile == contract)
        #expect(try NavigationContract(json: contract.export()) == contract)
        // Defaults are left out of the export: the file stays as small as the hand-written one.
        let exported = String(decoding: try contract.export(), as: UTF8.self)
        #expect(!exported.contains("false"))
        #expect(exported.contains(#""deepLink" : "keel-notes://note/{noteID}""#))
    }

    @Test func everyUnsoundDeclarationIsRefusedWithItsRoute() {
        #expect(Self.codes([]) == [":noRoot"])
        #expect(Self.codes([Route("a", access: .public)]) == [":noRoot", "a:missingParent"])
        #expect(
            Self.codes([Route("a", access: .public, isRoot: true), Route("b", access: .public, isRoot: true)])
                == ["b:twoRoots"])
        #expect(
            Self.codes([
                Route("a", access: .public, isRoot: true), Route("b", parent: "a", access: .public),
                Route("b", parent: "a", access: .signedIn),
            ]) == ["b:declaredTwice"])
        #expect(
            Self.codes([Route("a", access: .public, isRoot: true), Route("b", parent: "zzz", access: .public)])
                == ["b:unknownParent"])
        let cycle = Self.codes([
            Route("root", access: .public, isRoot: true), Route("b", parent: "c", access: .public),
            Route("c", parent: "b", access: .public),
        ])
        #expect(cycle.contains("b:cyclicParents") && cycle.contains("c:cyclicParents"))
        // A route hanging off a cycle is refused too, naming where its chain starts to loop.
        let feeder = NavigationContract.problems(in: [
            Route("root", access: .public, isRoot: true), Route("b", parent: "c", access: .public),
            Route("c", parent: "b", access: .public), Route("d", parent: "b", access: .public),
        ])
        #expect(feeder.map(\.description).contains("d: the parents of d form a cycle through b"))
        #expect(feeder.map(\.description).contains("b: the parents of b form a cycle through b"))
        #expect(
            Self.codes([
                Route("root", access: .public, isRoot: true),
                Route("edit", parent: "root", access: .account, input: .init(policy: .confirmDiscard)),
            ]) == ["edit:missingDeathBehaviour"])
        // The root is public and never one-time; no route hangs under a modal; a deep link never rebuilds a
        // sensitive one-time screen under its target.
        #expect(
            Self.codes([
                Route("root", access: .account, isSensitive: true, isRoot: true),
                Route("wizard", access: .public, isModal: true), Route("step2", parent: "wizard", access: .public),
                Route("confirmPay", parent: "root", access: .account, isSensitive: true),
                Route("receipt", parent: "confirmPay", access: .account, deepLink: "app://receipt"),
            ]) == [
                // One for each sensitive ancestor: confirmPay, and the (refused) sensitive root.
                "root:protectedRoot", "root:sensitiveRoot", "step2:modalParent", "receipt:sensitiveAncestor",
                "receipt:sensitiveAncestor",
            ])
        // onDeath decides only for confirmDiscard: elsewhere a contradicting one is refused, an agreeing one kept.
        #expect(
            Self.codes([
                Route("root", access: .public, isRoot: true),
                Route("secret", parent: "root", access: .account, input: .init(policy: .saveDraft, onDeath: .drop)),
                Route("form", parent: "root", access: .public, input: .init(policy: .warnBeforeLoss, onDeath: .save)),
                Route("note", parent: "root", access: .account, input: .init(policy: .saveDraft, onDeath: .save)),
                Route("poll", parent: "root", access: .public, input: .init(policy: .warnBeforeLoss, onDeath: .drop)),
            ]) == ["secret:contradictoryDeathBehaviour", "form:contradictoryDeathBehaviour"])
        #expect(
            Self.codes([
                Route("root", access: .public, isRoot: true),
                Route(
                    "otp", parent: "root", access: .signedIn, isModal: true, isSensitive: true, deepLink: "app://otp"),
            ]) == ["otp:sensitiveDeepLink"])
        #expect(
            Self.codes([
                Route("root", access: .public, isRoot: true),
                Route("a", parent: "root", access: .public, parameters: ["id"], deepLink: "app://item/{id}"),
                Route("b", parent: "root", access: .public, parameters: ["key"], deepLink: "APP://Item/{key}"),
            ]) == ["b:duplicateDeepLink"])
        // A public deep link whose ancestor needs an account: back would lead where the user cannot go.
        #expect(
            Self.codes([
                Route("root", access: .public, isRoot: true), Route("inbox", parent: "root", access: .account),
                Route("promo", parent: "inbox", access: .public, deepLink: "app://promo"),
            ]) == ["promo:ancestorNeedsMoreAccess"])
        #expect(
            Self.codes([
                Route("root", access: .public, isRoot: true),
                Route("premium", parent: "root", access: .custom("premium")),
                Route("item", parent: "premium", access: .account, parameters: ["id"], deepLink: "app://item/{id}"),
            ]) == ["item:ancestorNeedsMoreAccess"])
        #expect(
            Self.codes([
                Route("root", access: .public, isRoot: true),
                Route("folder", parent: "root", access: .public, parameters: ["folderID"]),
                Route("item", parent: "folder", access: .public, parameters: ["id"], deepLink: "app://item/{id}"),
            ]) == ["item:ancestorParameterMissing"])
        #expect(
            Self.codes([
                Route("root", access: .public, isRoot: true),
                Route("item", parent: "root", access: .public, parameters: ["id"], deepLink: "app://item/{other}"),
            ]) == ["item:invalidDeepLink"])
        #expect(
            Self.codes([
                Route("root", access: .public, isRoot: true),
                Route("item", parent: "root", access: .public, deepLink: "not a url"),
            ]) == ["item:invalidDeepLink"])
    }

    @Test func aRefusedContractThrowsEveryProblemAndMalformedFilesAreTyped() throws {
        do {
            _ = try NavigationContract([
                Route("a", access: .public), Route("b", access: .public, isRoot: true, deepLink: "x"),
            ])
            Issue.record("an unsound contract was accepted")
        } catch { #expect(error.code == .refused && error.problems.count == 2) }
        for json in [
            #"{"routes": [{"id": "home", "root": true, "access": "public", "color": "red"}]}"#,
            #"{"routes": [], "extra": 1}"#,
            #"{"routes": [{"id": "home", "root": 1, "access": "public"}]}"#,
            #"{"routes": [{"id": "home", "root": true, "access": "admin"}]}"#,
            #"{"routes": [{"id": "e", "root": true, "access": "public", "input": {"policy": "autosave"}}]}"#,
            #"{"routes": [{"id": "e", "root": true, "access": "public", "input": {"policy": "saveDraft", "x": 1}}]}"#,
            "not json",
        ] {
            do {
                _ = try NavigationContract(json: Data(json.utf8))
                Issue.record("accepted: \(json)")
            } catch { #expect(error.code == .malformed, "\(json): \(error)") }
        }
    }

    @Test func deepLinkPatternsMatchWholeSegmentsAndQueries() throws {
        let pattern = try #require(DeepLinkPattern("keel-notes://note/{noteID}"))
        #expect(pattern.match("keel-notes://note/42") == ["noteID": "42"])
        #expect(pattern.match("KEEL-NOTES://NOTE/42") == ["noteID": "42"])
        #expect(pattern.match("keel-notes://note/a%20b/") == ["noteID": "a b"])
        #expect(pattern.match("keel-notes://note/42?ref=mail#top") == ["noteID": "42", "ref": "mail"])
        #expect(pattern.match("keel-notes://note/") == nil)
        #expect(pattern.match("keel-notes://note/42/edit") == nil)
        #expect(pattern.match("other://note/42") == nil)
        #expect(pattern.match("keel-notes://notes/42") == nil)
        #expect(DeepLinkPattern("app://{host}/x") == nil)
        #expect(DeepLinkPattern("app://a/{b") == nil)
        #expect(DeepLinkPattern("app://a//b") == nil)
    }
}
