import Foundation
import KeelCore
import KeelLifecycle
import Testing

/// A shop and notes: a sensitive payment confirmation between the cart and the receipt, a comment under a
/// note whose id no link carries, and a public feedback form.
let shopRoutes: [Route] = [
    Route("home", access: .public, isRoot: true),
    Route("cart", parent: "home", access: .signedIn),
    Route("payConfirm", parent: "cart", access: .signedIn, isSensitive: true),
    Route("receipt", parent: "payConfirm", access: .signedIn),
    Route("note", parent: "home", access: .signedIn, parameters: ["noteID"]),
    Route("comment", parent: "note", access: .signedIn, parameters: ["commentID"]),
    Route("feedback", parent: "home", access: .public, input: .init(policy: .warnBeforeLoss, onDeath: .drop)),
    Route(
        "edit", parent: "note", access: .signedIn, parameters: ["noteID"],
        input: .init(policy: .confirmDiscard, onDeath: .save)),
    Route("attach", access: .signedIn, isModal: true, input: .init(policy: .warnBeforeLoss, onDeath: .drop)),
    Route("signIn", access: .public, isModal: true),
]

/// Found in review of KeelLifecycle: what sign-in rebuilt after a session expired, and input that went
/// without a prompt or an `inputLost`.
@Suite(.timeLimit(.minutes(1))) struct SignInRebuildTests {
    /// Alice editing note 1 ("hello"), with the attach modal over it holding `caption`.
    static func editingWithAnAttachment(_ caption: String) throws -> Harness {
        var h = try Harness(routes: shopRoutes)
        h.send(.signIn(account: .alice))
        h.send(.open(route: "note", parameters: ["noteID": "1"]))
        h.send(.open(route: "edit", parameters: ["noteID": "1"]))
        h.send(.type("hello"))
        h.send(.open(route: "attach"))
        h.send(.type(caption))
        return h
    }

    /// Sign-in rebuilt the target's ancestors from the contract, the sensitive payment confirmation among
    /// them: back from the receipt led to a fresh confirmation (a new entry, so a new operation the ledger
    /// would let run — a second payment).
    @Test func signingInAgainNeverRebuildsASensitiveOneTimeScreen() throws {
        var h = try Harness(routes: shopRoutes)
        h.send(.signIn(account: .alice))
        h.send(.open(route: "cart"))
        h.send(.open(route: "payConfirm"))
        h.send(.open(route: "receipt"))
        h.send(.sessionExpired)
        #expect(h.state.modal?.route == "signIn")
        let signedIn = h.send(.signIn(account: .alice))
        #expect(signedIn.error == nil)
        #expect(h.stack == ["home", "cart", "receipt"])
        // Across a kill too: the snapshot holds the target, and sign-in after launch rebuilds the same.
        h.send(.sessionExpired)
        let snapshot = try NavigationSnapshot(h.state).encoded()
        var relaunched = try Harness(routes: shopRoutes, seed: 6)
        relaunched.state = relaunched.navigator.restore(snapshot, drafts: [:], session: .expired).result.state
        relaunched.send(.signIn(account: .alice))
        #expect(relaunched.stack == ["home", "cart", "receipt"])
    }

    /// The comment's ancestor needs a note id the comment does not carry: every sign-in failed with "missing
    /// parameter", the sign-in screen stayed, and the remembered target kept it so after a relaunch too.
    @Test func signInIsNeverRefusedForAnAncestorTheTargetCannotRebuild() throws {
        var h = try Harness(routes: shopRoutes)
        h.send(.signIn(account: .alice))
        h.send(.open(route: "note", parameters: ["noteID": "7"]))
        h.send(.open(route: "comment", parameters: ["commentID": "3"]))
        h.send(.sessionExpired)
        let signedIn = h.send(.signIn(account: .alice))
        #expect(signedIn.error == nil)
        #expect(h.state.sessionValid && h.state.modal == nil)
        #expect(h.stack == ["home", "comment"])
        #expect(h.state.top?.parameters == ["commentID": "3"])
    }

    /// Input typed on a public screen, then the session expired over a protected screen opened from it: sign-in
    /// rebuilt the target over its declared ancestors, replacing the stack, and the text was gone without a word.
    @Test func inputOnAScreenSignInReplacesIsReportedLost() throws {
        var h = try Harness(routes: shopRoutes)
        h.send(.signIn(account: .alice))
        h.send(.open(route: "feedback"))
        h.send(.type("long complaint"))
        h.send(.open(route: "note", parameters: ["noteID": "1"]))
        h.send(.sessionExpired)
        #expect(h.state.modal?.route == "signIn" && h.stack == ["home", "feedback"])
        let signedIn = h.send(.signIn(account: .alice))
        #expect(h.stack == ["home", "note"])
        #expect(signedIn.effects.map(\.description).contains("inputLost feedback"))
    }

    /// Found in an outside audit: a screen opened while signed out (the user's own history, not a link) was
    /// rebuilt over its declared ancestors after sign-in, and a `warnBeforeLoss` screen below it was destroyed
    /// with only an after-the-fact `inputLost`. It is pushed onto the stack it was opened from, which stays
    /// with its input — across a kill before the sign-in too.
    @Test func signingInPushesAScreenOpenedWhileSignedOutOverTheScreensItWasOpenedFrom() throws {
        var h = try Harness(routes: shopRoutes)
        h.send(.open(route: "feedback"))
        h.send(.type("long complaint"))
        h.send(.open(route: "note", parameters: ["noteID": "1"]))
        #expect(h.state.modal?.route == "signIn" && h.state.pendingTarget?.route == "note")
        let snapshot = try NavigationSnapshot(h.state).encoded()
        let signedIn = h.send(.signIn(account: .alice))
        #expect(h.stack == ["home", "feedback", "note"] && h.state.modal == nil)
        #expect(h.state.stack[1].input == "long complaint")
        #expect(!signedIn.effects.map(\.description).contains { $0.hasPrefix("inputLost") })
        #expect(h.state.top?.parameters == ["noteID": "1"] && h.state.top?.account == .alice)
        // Killed before signing in: the relaunch still pushes it (the typed text was declared lost at launch).
        var relaunched = try Harness(routes: shopRoutes, seed: 6)
        relaunched.state = relaunched.navigator.restore(snapshot, drafts: [:], session: .signedOut).result.state
        relaunched.send(.signIn(account: .alice))
        #expect(relaunched.stack == ["home", "feedback", "note"])
        // A link opened while signed out is still built over its declared parents.
        var linked = try Harness(routes: shopRoutes)
        linked.send(.open(route: "feedback"))
        linked.send(.notification(route: "edit", parameters: ["noteID": "2"], mode: .cold))
        linked.send(.signIn(account: .alice))
        #expect(linked.stack == ["home", "note", "edit"])
    }

    /// A confirmed prompt about the top screen also replaced the screen below it that held input: that one
    /// was never asked about, and its input went without an `inputLost` (or its draft).
    @Test func aWarmLinkOverTwoInputScreensKeepsOrReportsTheOneItDidNotAskAbout() throws {
        var h = try Self.editingWithAnAttachment("caption")
        h.send(.notification(route: "cart", mode: .warm, id: "n1"))
        #expect(h.state.prompt != nil)
        let confirmed = h.send(.confirm)
        #expect(h.stack == ["home", "cart"])
        // The edit screen keeps drafts (confirmDiscard, saved on death): its text is saved, not dropped.
        let key = DraftKey(account: .alice, route: "edit", parameters: ["noteID": "1"])
        #expect(confirmed.effects.contains(.saveDraft(key, "hello")))
        // The one asked about is reported once, as the confirmed prompt said.
        #expect(confirmed.effects.map(\.description).filter { $0 == "inputLost attach" }.count == 1)
    }

    /// A prompt about a modal that access was revoked to stayed up; confirming it popped the screen below,
    /// whose input went without a word.
    @Test func revokingAModalTakesItsPromptAlong() throws {
        var h = try Self.editingWithAnAttachment("x")
        h.send(.back(.systemBack))
        #expect(h.state.prompt != nil)
        h.send(.accessRevoked(route: "attach"))
        #expect(h.state.prompt == nil && h.state.modal == nil)
        let confirmed = h.send(.confirm)
        #expect(confirmed.error != nil)  // nothing to confirm
        #expect(h.stack == ["home", "note", "edit"] && h.state.top?.input == "hello")
    }

    /// The snapshot left out the input of the stack and the modal, but wrote the input of the target sign-in
    /// holds in plain text, and a `drop` route got it back after a kill.
    @Test func theSnapshotNeverHoldsTheInputOfTheTargetSignInHolds() throws {
        var h = try Harness(routes: shopRoutes)
        h.send(.signIn(account: .alice))
        h.send(.open(route: "note", parameters: ["noteID": "1"]))
        h.send(.open(route: "attach"))
        h.send(.type("my secret text"))
        h.send(.sessionExpired)
        #expect(h.state.pendingTarget?.route == "attach")
        let bytes = try NavigationSnapshot(h.state).encoded()
        #expect(!String(decoding: bytes, as: UTF8.self).contains("my secret text"))
        var relaunched = try Harness(routes: shopRoutes, seed: 6)
        relaunched.state = relaunched.navigator.restore(bytes, drafts: [:], session: .expired).result.state
        relaunched.send(.signIn(account: .alice))
        #expect(relaunched.state.modal?.route == "attach" && relaunched.state.modal?.input == nil)
    }
}

/// Found in review of KeelLifecycle: values from outside (a link, a snapshot on disk) that crashed the app
/// or reached it in a shape the contract does not allow.
@Suite(.timeLimit(.minutes(1))) struct HostileNavigationInputTests {
    /// A placeholder stands for one whole segment, but `%2F` decoded into several (`1/../2`), and `%00` or a
    /// line break came through: an app building a path or a log line from it would act on them.
    @Test func aDeepLinkPlaceholderNeverDecodesToMoreThanOneSegment() throws {
        let pattern = try #require(DeepLinkPattern("keel-notes://note/{noteID}"))
        #expect(pattern.match("keel-notes://note/42") == ["noteID": "42"])
        #expect(pattern.match("keel-notes://note/caf%C3%A9%20au%20lait") == ["noteID": "café au lait"])
        for hostile in ["1%2F..%2F2", "%2e%2e", "..", ".", "%00", "a%0Ab", "a%7Fb", "%2F"] {
            #expect(pattern.match("keel-notes://note/\(hostile)") == nil, "\(hostile)")
        }
        var h = try Harness()
        h.send(.signIn(account: .alice))
        let refused = h.send(.deepLink(url: "keel-notes://note/1%2F..%2F2", mode: .warm))
        #expect(refused.error != nil && h.stack == ["home"])
    }

    /// `nextEntry` at its limit in a snapshot made every launch trap on the next entry id.
    @Test func aSnapshotWithTheEntryCounterAtItsLimitDoesNotCrashTheLaunch() throws {
        var h = try Harness()
        h.deepStack()
        h.state.nextEntry = Int.max
        let bytes = try NavigationSnapshot(h.state).encoded()
        var relaunched = try Harness(seed: 6)
        let restored = relaunched.navigator.restore(bytes, drafts: [:], session: .valid(account: .alice))
        relaunched.state = restored.result.state
        relaunched.send(.open(route: "notes"))
        relaunched.send(.open(route: "note", parameters: ["noteID": "2"]))
        #expect(relaunched.stack.suffix(2) == ["notes", "note"])
        #expect(Set(relaunched.state.stack.map(\.id)).count == relaunched.state.stack.count)
    }

    /// A root declared modal passed the contract check, and a restart with a sensitive modal open trapped on
    /// an empty stack at every launch. Such a contract is refused now; and a restore whose sensitive modal
    /// is dropped still keeps the root in the stack.
    @Test func aModalRootIsRefusedAndARestoreNeverLeavesAnEmptyStack() throws {
        let modalRoot = [
            Route("home", access: .public, isModal: true, isRoot: true),
            Route("signIn", access: .public, isModal: true),
            Route("otp", access: .public, isModal: true, isSensitive: true),
        ]
        #expect(NavigationContract.problems(in: modalRoot).map(\.code) == [.modalRoot])
        // A snapshot whose only entries are the root and a sensitive modal (the otp is dropped at launch).
        var h = try Harness()
        h.send(.signIn(account: .alice))
        h.send(.open(route: "otp"))
        let bytes = try NavigationSnapshot(h.state).encoded()
        let relaunched = try Harness(seed: 6)
        let restored = relaunched.navigator.restore(bytes, drafts: [:], session: .valid(account: .alice))
        #expect(restored.result.state.stack.map(\.route) == ["home"] && restored.result.state.modal == nil)
        #expect(restored.result.effects.map(\.description).contains("droppedSensitive otp"))
    }
}
