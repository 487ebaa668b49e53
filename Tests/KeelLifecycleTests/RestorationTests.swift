import Foundation
import KeelCore
import KeelLifecycle
import KeelTesting
import Testing

@Suite struct RestorationTests {
    /// PLAT-005.2: tearing the UI-facing state down and rebuilding it from its snapshot in the same process
    /// (Android's recreation on a configuration change) gives an equal state and starts no effect.
    @Test func aConfigurationChangeRebuildsAnEqualStateAndStartsNothing() throws {
        var h = try Harness()
        h.deepStack()
        h.send(.background)
        let snapshot = try NavigationSnapshot(h.state, inFlight: ["publish@e5#1"]).encoded()
        let rebuilt = h.navigator.restore(snapshot, drafts: h.state.drafts, session: .valid(account: .alice))
        // Equal but for the lineage of the entries opened from now on (entryIDsNeverRepeatWithinALaunch).
        func sameLineage(_ state: NavigationState) -> NavigationState {
            var state = state
            state.lineage = h.state.lineage
            return state
        }
        #expect(sameLineage(rebuilt.result.state) == h.state)
        #expect(rebuilt.result.state.stack.map(\.id) == h.state.stack.map(\.id))
        #expect(rebuilt.result.effects.isEmpty)
        #expect(rebuilt.inFlight == ["publish@e5#1"])  // reattached to the ledger, not started again
        // And again: recreation is idempotent.
        let again = h.navigator.restore(
            try NavigationSnapshot(rebuilt.result.state).encoded(), drafts: h.state.drafts,
            session: .valid(account: .alice))
        #expect(sameLineage(again.result.state) == h.state && again.result.effects.isEmpty)
        // What a snapshot never holds does not come back from one (found in an outside audit: the guide said
        // every rebuild was equal): a one-time screen is dropped, saying so. Apps keep the state value instead.
        h.send(.open(route: "otp"))
        let withOneTimeScreen = h.navigator.restore(
            try NavigationSnapshot(h.state).encoded(), drafts: h.state.drafts, session: .valid(account: .alice))
        #expect(withOneTimeScreen.result.state.modal == nil)
        #expect(withOneTimeScreen.result.effects.map(\.description) == ["droppedSensitive otp"])
    }

    /// Found in review: entry numbers started again at `e2` with every fresh state (a first launch, a
    /// discarded snapshot), so an operation confirmed on `e5` in one launch was answered "already done"
    /// for a different `e5` in the next launch, and the new operation never ran.
    @Test func aFreshLaunchNeverGivesAnEntryTheIDOfAnEntryOfAnEarlierLaunch() async throws {
        let directory = try TemporaryDirectory(prefix: "keel-lineage")
        let ledger = try EffectLedger(file: directory.url("ledger.json"))
        var first = try Harness()
        first.deepStack()
        let published = try #require(first.state.top).id
        let firstID = EffectLedger.operationID(entry: published, action: "publish")
        #expect(try await ledger.begin(firstID, action: "publish") == .run)
        try await ledger.complete(firstID, .succeeded, result: "published as #1")

        // The next launch has no snapshot it can use; the user walks the same screens and publishes again.
        var second = try Harness(seed: 6)
        second.state =
            second.navigator.restore(Data("not a snapshot".utf8), drafts: [:], session: .signedOut).result.state
        second.deepStack()
        let secondEntry = try #require(second.state.top)
        #expect(secondEntry.route == "edit" && secondEntry.id != published)
        let secondID = EffectLedger.operationID(entry: secondEntry.id, action: "publish")
        #expect(try await ledger.begin(secondID, action: "publish") == .run, "a new publish was taken for the old")
        // A restored snapshot gives the same entry ids (in this launch and the next).
        let snapshot = try NavigationSnapshot(second.state).encoded()
        for navigator in [second.navigator, try Harness(seed: 7).navigator] {
            let restored = navigator.restore(snapshot, drafts: [:], session: .valid(account: .alice))
            #expect(restored.result.state.stack.map(\.id) == second.state.stack.map(\.id))
        }
    }

    /// Found in review: the process can die after an operation was confirmed on a new entry and before a
    /// snapshot holding that entry was written. The next launch restores the older snapshot, whose entry
    /// counter hands the same number out again — to another screen, which must not share the id.
    @Test func anEntryOpenedAfterTheLastSnapshotIsNeverTakenForOneOpenedAfterARestore() async throws {
        let directory = try TemporaryDirectory(prefix: "keel-lineage")
        let ledger = try EffectLedger(file: directory.url("ledger.json"))
        var first = try Harness()
        first.send(.signIn(account: .alice))
        first.send(.open(route: "notes"))
        let snapshot = try NavigationSnapshot(first.state).encoded()  // the last snapshot written
        first.send(.open(route: "note", parameters: ["noteID": "1"]))
        first.send(.open(route: "edit", parameters: ["noteID": "1"]))
        let published = EffectLedger.operationID(entry: try #require(first.state.top).id, action: "publish")
        #expect(try await ledger.begin(published, action: "publish") == .run)
        // Killed before the next snapshot. The relaunch restores the older one and the user edits another note.
        var second = try Harness(seed: 6)
        second.state = second.navigator.restore(snapshot, drafts: [:], session: .valid(account: .alice)).result.state
        second.send(.open(route: "note", parameters: ["noteID": "2"]))
        second.send(.open(route: "edit", parameters: ["noteID": "2"]))
        let other = EffectLedger.operationID(entry: try #require(second.state.top).id, action: "publish")
        #expect(other != published)
        #expect(try await ledger.begin(other, action: "publish") == .run, "note 2 was taken for note 1's publish")
    }

    /// A snapshot written before entry lineages existed restores with its `e<number>` ids; entries opened
    /// after it get this navigator's lineage.
    @Test func aSnapshotWithoutLineagesKeepsItsEntryIDs() throws {
        var h = try Harness()
        h.deepStack()
        var object = try #require(
            try JSONSerialization.jsonObject(with: try NavigationSnapshot(h.state).encoded()) as? [String: Any])
        var state = try #require(object["state"] as? [String: Any])
        var stack = try #require(state["stack"] as? [[String: Any]])
        for index in stack.indices { stack[index]["id"] = "e\(index + 1)" }
        state["stack"] = stack
        state["nextEntry"] = stack.count + 1
        object["state"] = state
        let old = try JSONSerialization.data(withJSONObject: object)
        let restored = h.navigator.restore(old, drafts: [:], session: .valid(account: .alice)).result.state
        #expect(restored.stack.map(\.id) == ["e1", "e2", "e3", "e4"])
        #expect(restored.lineage.count == 16 && restored.lineage != h.state.lineage)
        let opened = h.navigator.reduce(restored, .open(route: "notes")).state
        #expect(opened.top?.id == "e5-\(restored.lineage)")
    }

    /// Found in an outside audit: the lineage was minted once per navigator, so two states of one launch — two
    /// windows, or a rebuild in the same process from a snapshot older than the state — handed the same id to
    /// two screens, and the effect ledger answered one note's publish with the other's result (the second
    /// publish never ran). Each state `initialState` and `restore` give opens entries of its own lineage.
    @Test func entryIDsNeverRepeatWithinALaunch() async throws {
        let h = try Harness()
        func walk(_ noteID: String) -> NavigationState {
            var state = h.navigator.initialState
            for event: NavigationEvent in [
                .signIn(account: .alice), .open(route: "notes"), .open(route: "note", parameters: ["noteID": noteID]),
            ] { state = h.navigator.reduce(state, event).state }
            return state
        }
        // Two windows (scenes) of one launch.
        let windowA = walk("1")
        let windowB = walk("2")
        #expect(Set(windowA.stack.map(\.id)).isDisjoint(with: windowB.stack.map(\.id)))
        // A rebuild in this process from the last snapshot written, which is older than the state.
        var state = h.navigator.reduce(h.navigator.initialState, .signIn(account: .alice)).state
        state = h.navigator.reduce(state, .open(route: "notes")).state
        let snapshot = try NavigationSnapshot(state).encoded()
        state = h.navigator.reduce(state, .open(route: "note", parameters: ["noteID": "1"])).state
        let directory = try TemporaryDirectory(prefix: "keel-lineage")
        let ledger = try EffectLedger(file: directory.url("ledger.json"))
        let published = EffectLedger.operationID(entry: try #require(state.top).id, action: "publish")
        #expect(try await ledger.begin(published, action: "publish") == .run)
        try await ledger.complete(published, .succeeded, result: "/p/1")
        let restored = h.navigator.restore(snapshot, drafts: [:], session: .valid(account: .alice)).result.state
        // Restored entries keep their ids (a completed operation on them is still found)...
        #expect(restored.stack.map(\.id) == Array(state.stack.map(\.id).prefix(2)))
        // ...and the screen opened after the rebuild is another one, whose publish runs.
        let rebuilt = h.navigator.reduce(restored, .open(route: "note", parameters: ["noteID": "9"])).state
        let other = EffectLedger.operationID(entry: try #require(rebuilt.top).id, action: "publish")
        #expect(other != published)
        #expect(try await ledger.begin(other, action: "publish") == .run, "note 9 was shown note 1's publication")
    }

    /// Found in an outside audit: after an app update whose route takes a new parameter (a note now lives in a
    /// folder), a snapshot of the previous version restored an entry that route can no longer be opened with.
    /// It is unusable, as a revoked one is: the stack is cut above it, saying so, and a held target without
    /// it is dropped saying so.
    @Test func aRestoredEntryAlwaysCarriesTheParametersItsRouteDeclaresNow() throws {
        var old = try Harness()
        old.deepStack()
        old.send(.back(.systemBack))
        let snapshot = try NavigationSnapshot(old.state).encoded()
        old.send(.sessionExpired)
        #expect(old.state.pendingTarget?.route == "note")
        let held = try NavigationSnapshot(old.state).encoded()
        let updated = exampleRoutes.map { route -> Route in
            guard route.id == "note" else { return route }
            var route = route
            route.parameters = ["folderID", "noteID"]  // v2: a note lives in a folder
            route.deepLink = "keel-notes://note/{folderID}/{noteID}"
            return route
        }
        let new = try Harness(routes: updated, seed: 6)
        let restored = new.navigator.restore(snapshot, drafts: [:], session: .valid(account: .alice)).result
        #expect(restored.state.stack.map(\.route) == ["home", "notes"])
        #expect(restored.effects.map(\.description) == ["accessDenied note noteID=1"])
        for entry in restored.state.stack + [restored.state.modal].compactMap({ $0 }) {
            let declared = try #require(new.navigator.contract.route(entry.route))
            #expect(declared.parameters.allSatisfy { entry.parameters[$0] != nil }, "\(entry.label)")
        }
        // Held by sign-in across the update: dropped at launch, saying so; signing in opens no such screen.
        let launched = new.navigator.restore(held, drafts: [:], session: .expired).result
        #expect(launched.state.pendingTarget == nil)
        #expect(launched.effects.map(\.description).contains("accessDenied note noteID=1"))
        let signedIn = new.navigator.reduce(launched.state, .signIn(account: .alice)).state
        #expect(signedIn.stack.allSatisfy { $0.route != "note" })
    }

    /// An update that adds a parameter to a route cuts the old entries of that route — they cannot be shown —
    /// but revokes nothing: the drafts above them (the editor of the same note) are kept, never deleted because
    /// the app was updated (MOB-API-005; found in a review: the cut entry's ids were taken for a revoked
    /// resource, and the editor's draft went with it).
    @Test func anUpdateThatAddsARouteParameterDeletesNoDraft() throws {
        var old = try Harness()
        old.deepStack()
        old.send(.type("half a sentence"))
        old.send(.background)
        let drafts = old.state.drafts
        #expect(!drafts.isEmpty)
        let snapshot = try NavigationSnapshot(old.state).encoded()
        let updated = exampleRoutes.map { route -> Route in
            guard route.id == "note" else { return route }
            var route = route
            route.parameters = ["folderID", "noteID"]
            route.deepLink = "keel-notes://note/{folderID}/{noteID}"
            return route
        }
        let new = try Harness(routes: updated, seed: 6)
        let restored = new.navigator.restore(snapshot, drafts: drafts, session: .valid(account: .alice)).result
        #expect(restored.state.stack.map(\.route) == ["home", "notes"])
        #expect(restored.effects.map(\.description).contains("accessDenied note noteID=1"))
        #expect(!restored.effects.contains { $0.description.hasPrefix("deleteDraft") }, "\(restored.effects)")
        #expect(restored.state.drafts == drafts)
    }

    /// Found in review: operations in flight of the account in the snapshot were handed back in another
    /// account's session (or signed out), to be reattached there.
    @Test func operationsInFlightComeBackOnlyToTheirAccount() throws {
        var h = try Harness()
        h.deepStack()
        let snapshot = try NavigationSnapshot(h.state, inFlight: ["publish@e5#1"]).encoded()
        let restore = { (session: SessionCheck) in h.navigator.restore(snapshot, drafts: [:], session: session).inFlight
        }
        #expect(restore(.valid(account: .alice)) == ["publish@e5#1"])
        #expect(restore(.expired) == ["publish@e5#1"])  // the same account, signing in again
        #expect(restore(.valid(account: .bob)).isEmpty)
        #expect(restore(.signedOut).isEmpty)
    }

    /// PLAT-005.3: the session expired while the app was dead: sign-in comes first, nothing protected is
    /// shown, the target and the drafts are kept, and signing in again brings the target back.
    @Test func anExpiredSessionAtRestoreShowsSignInAndKeepsTheTargetAndDrafts() throws {
        var h = try Harness()
        h.deepStack()
        h.send(.type("draft before death"))
        h.send(.background)
        let snapshot = try NavigationSnapshot(h.state).encoded()
        let restored = h.navigator.restore(snapshot, drafts: h.state.drafts, session: .expired)
        var state = restored.result.state
        #expect(state.stack.map(\.route) == ["home"])
        #expect(state.modal?.route == "signIn")
        #expect(state.pendingTarget?.route == "edit")
        #expect(restored.result.effects.map(\.description) == ["signInRequired edit noteID=1"])
        state = h.navigator.reduce(state, .signIn(account: .alice)).state
        #expect(state.stack.map(\.route) == ["home", "notes", "note", "edit"])
        #expect(state.top?.input == "draft before death")
        // Another account signing in does not get alice's target.
        let other = h.navigator.reduce(restored.result.state, .signIn(account: .bob)).state
        #expect(other.stack.map(\.route) == ["home"])
    }

    @Test func restoreReChecksAccessDropsSensitiveEntriesAndNeverCarriesInputOrPrompts() throws {
        var h = try Harness()
        h.deepStack()
        h.send(.back(.systemBack))
        h.send(.open(route: "otp"))
        let snapshot = try NavigationSnapshot(h.state).encoded()
        h.revocations.revoke("note noteID=1")
        let restored = h.navigator.restore(snapshot, drafts: [:], session: .valid(account: .alice))
        #expect(restored.result.state.stack.map(\.route) == ["home", "notes"])
        #expect(restored.result.state.modal == nil)
        #expect(
            restored.result.effects.map(\.description) == ["droppedSensitive otp", "accessDenied note noteID=1"])
    }

    @Test func accessRevokedWhileTheAppWasDeadLosesTheCutInputAsWhileRunning() throws {
        var h = try Harness()
        h.deepStack()
        let typed = h.send(.type("half a sentence"))
        #expect(typed.effects.map(\.description) == ["saveDraft edit noteID=1"])
        let snapshot = try NavigationSnapshot(h.state).encoded()
        // Killed; access to the note revoked meanwhile; launched.
        h.revocations.revoke("note noteID=1")
        let restored = h.navigator.restore(snapshot, drafts: h.state.drafts, session: .valid(account: .alice))
        #expect(restored.result.state.stack.map(\.route) == ["home", "notes"])
        #expect(
            restored.result.effects.map(\.description) == [
                "accessDenied note noteID=1", "deleteDraft edit noteID=1", "inputLost edit noteID=1",
            ])
        #expect(restored.result.state.drafts.isEmpty)
        // While running, the same revocation says the same.
        var running = try Harness()
        running.deepStack()
        running.send(.type("half a sentence"))
        running.revocations.revoke("note noteID=1")
        let cut = running.send(.accessRevoked(route: "note", parameters: ["noteID": "1"]))
        #expect(
            Set(cut.effects.map(\.description)).isSuperset(of: ["deleteDraft edit noteID=1", "inputLost edit noteID=1"])
        )
    }

    /// Found in review: a deep link opened while signed out waits behind sign-in; when the app died there,
    /// the restored sign-in had forgotten it (and the link, consumed, could not be delivered again).
    @Test func aTargetHeldBySignInSurvivesProcessDeath() throws {
        var h = try Harness()
        h.send(.deepLink(url: "keel-notes://note/42", mode: .cold, id: "link-1"))
        #expect(h.state.modal?.route == "signIn")
        #expect(h.state.pendingTarget?.parameters == ["noteID": "42"])
        let snapshot = try NavigationSnapshot(h.state).encoded()
        for session in [SessionCheck.signedOut, .expired] {
            let restored = h.navigator.restore(snapshot, drafts: [:], session: session)
            #expect(restored.result.state.modal?.route == "signIn", "\(session)")
            #expect(restored.result.state.pendingTarget?.parameters == ["noteID": "42"], "\(session)")
            let signedIn = h.navigator.reduce(restored.result.state, .signIn(account: .alice)).state
            #expect(signedIn.top?.route == "note" && signedIn.top?.parameters == ["noteID": "42"], "\(session)")
        }
    }

    /// Found in an outside audit: a protected screen opened while signed out showed sign-in and remembered
    /// the screen, but asked for no snapshot: killed there, the app came back without either. It asks now,
    /// and the saved state brings both back.
    @Test func aScreenOpenedWhileSignedOutIsSavedWithTheSignInHoldingIt() throws {
        var h = try Harness()
        let opened = h.send(.open(route: "note", parameters: ["noteID": "7"]))
        #expect(opened.effects.map(\.description) == ["signInRequired note noteID=7", "saveSnapshot"])
        let snapshot = try NavigationSnapshot(h.state).encoded()
        let restored = h.navigator.restore(snapshot, drafts: [:], session: .signedOut)
        #expect(restored.result.state.modal?.route == "signIn")
        let signedIn = h.navigator.reduce(restored.result.state, .signIn(account: .alice)).state
        #expect(signedIn.top?.route == "note" && signedIn.top?.parameters == ["noteID": "7"])
    }

    /// Found in review: public entries kept from another account's snapshot still named that account, so
    /// input typed there was keyed to its drafts (refused by the vault of the account now signed in).
    @Test func publicEntriesKeptFromAnotherAccountBelongToTheAccountNowSignedIn() throws {
        let routes =
            exampleRoutes + [Route("feedback", parent: "home", access: .public, input: .init(policy: .saveDraft))]
        var h = try Harness(routes: routes)
        h.send(.signIn(account: .alice))
        h.send(.open(route: "feedback"))
        let snapshot = try NavigationSnapshot(h.state).encoded()
        func draftAccounts(_ state: NavigationState) -> [AccountID] {
            h.navigator.reduce(state, .type("hello")).effects.compactMap { effect -> AccountID? in
                if case .saveDraft(let key, _) = effect { return key.account }
                return nil
            }
        }
        let asBob = h.navigator.restore(snapshot, drafts: [:], session: .valid(account: .bob)).result.state
        #expect(asBob.stack.map(\.route) == ["home", "feedback"])
        #expect(draftAccounts(asBob) == [.bob])
        let signedOut = h.navigator.restore(snapshot, drafts: [:], session: .signedOut).result.state
        #expect(draftAccounts(h.navigator.reduce(signedOut, .signIn(account: .bob)).state) == [.bob])
        // The same account keeps its own.
        let asAlice = h.navigator.restore(snapshot, drafts: [:], session: .valid(account: .alice)).result.state
        #expect(draftAccounts(asAlice) == [.alice])
    }

    @Test func aSnapshotOfAnotherAccountRestoresOnlyPublicEntries() throws {
        var h = try Harness()
        h.deepStack(.alice)
        let snapshot = try NavigationSnapshot(h.state).encoded()
        let restored = h.navigator.restore(snapshot, drafts: [:], session: .valid(account: .bob))
        #expect(restored.result.state.stack.map(\.route) == ["home"])
        #expect(restored.result.state.account == .bob)
    }

    /// MOB-DATA-006: "jos\u{E9}" and "jose\u{301}" are one string to Swift's `==` (canonically equivalent), but
    /// two accounts with two vaults, as their bytes differ. The snapshot of one is never restored in the other's
    /// session — none of its protected screens, typed input, drafts or operations in flight — whether the
    /// session is the other's at launch or the other signs in after an expired one.
    @Test func aSnapshotIsNeverRestoredForACanonicallyEquivalentAccount() throws {
        let composed = AccountID.known("jos\u{E9}")
        let decomposed = AccountID.known("jose\u{301}")
        var h = try Harness()
        h.deepStack(composed)
        h.send(.type("Jos\u{E9}'s text"))
        h.send(.background)
        let snapshot = try NavigationSnapshot(h.state, inFlight: ["publish@e5#1"]).encoded()
        let other = h.navigator.restore(snapshot, drafts: h.state.drafts, session: .valid(account: decomposed))
        #expect(other.result.state.stack.map(\.route) == ["home"], "\(other.result.state.stack.map(\.route))")
        #expect(other.result.state.stack.allSatisfy { $0.account == nil && $0.input == nil })
        #expect(other.result.state.account.map { Array($0.rawValue.utf8) } == Array(decomposed.rawValue.utf8))
        #expect(other.inFlight.isEmpty)
        #expect(!other.result.effects.contains { if case .restoreDraft = $0 { true } else { false } })
        // Signing in as the other after an expired session: nothing of the first account's opens either.
        let expired = h.navigator.restore(snapshot, drafts: h.state.drafts, session: .expired)
        let signedIn = h.navigator.reduce(expired.result.state, .signIn(account: decomposed))
        #expect(signedIn.state.stack.map(\.route) == ["home"] && signedIn.state.modal == nil)
        #expect(!signedIn.effects.contains { if case .restoreDraft = $0 { true } else { false } })
        // The same bytes are the same account: everything comes back.
        let own = h.navigator.restore(snapshot, drafts: h.state.drafts, session: .valid(account: .known("jos\u{E9}")))
        #expect(own.result.state.stack.map(\.route) == ["home", "notes", "note", "edit"])
        #expect(own.result.state.top?.input == "Jos\u{E9}'s text" && own.inFlight == ["publish@e5#1"])
    }

    /// MOB-DATA-006: an empty or placeholder account id is never an account. A snapshot an earlier version wrote
    /// for one (navigation took "" and "null" as accounts), in its state or in one of its screens, is unusable,
    /// as a damaged one is: a fresh start saying why, nothing of it restored into any session, drafts kept.
    @Test func aSnapshotNamingAnInvalidAccountIsDiscardedAndNothingOfItRestored() throws {
        var source = try Harness()
        source.deepStack()
        source.send(.sessionExpired)
        let valid = try NavigationSnapshot(source.state, inFlight: ["publish@e5#1"]).encoded()
        let drafts = [DraftKey(account: .alice, route: "edit", parameters: ["noteID": "1"]): "kept"]
        let h = try Harness(seed: 6)
        for invalid in ["", "null", "0", "anonymous", " alice"] {
            for place in ["state", "pendingTarget"] {
                var object = try #require(try JSONSerialization.jsonObject(with: valid) as? [String: Any])
                var state = try #require(object["state"] as? [String: Any])
                if place == "state" {
                    state["account"] = invalid
                } else {
                    var target = try #require(state["pendingTarget"] as? [String: Any])
                    target["account"] = invalid
                    state["pendingTarget"] = target
                }
                object["state"] = state
                let bytes = try JSONSerialization.data(withJSONObject: object)
                for session in [SessionCheck.valid(account: .alice), .valid(account: .bob), .expired, .signedOut] {
                    let restored = h.navigator.restore(bytes, drafts: drafts, session: session)
                    let context = "\(invalid.debugDescription) in the \(place), \(session)"
                    #expect(
                        restored.result.effects.map(\.description) == [
                            "snapshotDiscarded snapshot names an invalid account"
                        ], "\(context)")
                    #expect(restored.result.state.stack.map(\.route) == ["home"], "\(context)")
                    #expect(restored.result.state.modal == nil && restored.result.state.pendingTarget == nil)
                    #expect(restored.result.state.drafts == drafts && restored.inFlight.isEmpty, "\(context)")
                    if case .valid(let account) = session {
                        #expect(restored.result.state.account == account && restored.result.state.sessionValid)
                    } else {
                        #expect(restored.result.state.account == nil && !restored.result.state.sessionValid)
                    }
                }
            }
        }
    }

    /// Accounts are ``AccountID``s, and a snapshot keeps its format: an account is the same JSON string, so a
    /// snapshot written before restores as it did, and writing it again gives the same bytes.
    @Test func aSnapshotKeepsItsFormatWithAccountsAsStrings() throws {
        let written =
            #"{"inFlight":["publish@e3-00000000000000aa#1"],"state":{"account":"alice","consumed":["link-1"],"#
            + #""lineage":"00000000000000aa","nextEntry":4,"sessionValid":true,"stack":["#
            + #"{"id":"e1-00000000000000aa","parameters":{},"route":"home"},"#
            + #"{"account":"alice","id":"e2-00000000000000aa","parameters":{},"route":"notes"},"#
            + #"{"account":"alice","id":"e3-00000000000000aa","parameters":{"noteID":"1"},"route":"note"}]},"#
            + #""version":1}"#
        let decoded = try JSONDecoder().decode(NavigationSnapshot.self, from: Data(written.utf8))
        #expect(decoded.state.account == .alice && decoded.state.stack.map(\.account) == [nil, .alice, .alice])
        let again = try NavigationSnapshot(decoded.state, inFlight: decoded.inFlight).encoded()
        #expect(String(decoding: again, as: UTF8.self) == written)
        let h = try Harness()
        let restored = h.navigator.restore(Data(written.utf8), drafts: [:], session: .valid(account: .alice))
        #expect(restored.result.state.stack.map(\.route) == ["home", "notes", "note"])
        #expect(restored.result.state.stack.map(\.id) == decoded.state.stack.map(\.id))
        #expect(restored.result.effects.isEmpty && restored.inFlight == ["publish@e3-00000000000000aa#1"])
    }

    @Test func newerDamagedOrUnmigratableSnapshotsAreDiscardedWithAReasonAndDraftsKept() throws {
        let h = try Harness()
        let drafts = [DraftKey(account: .alice, route: "edit", parameters: ["noteID": "1"]): "kept"]
        for (bytes, reason) in [
            (#"{"version": 2, "state": {}}"#, "snapshot version 2 is newer than 1"),
            (#"{"version": 0, "state": {}}"#, "no migration from snapshot version 0"),
            (#"{"version": 1, "state": {"stack": []}}"#, "damaged snapshot"),
            ("garbage", "unreadable snapshot"),
        ] {
            let restored = h.navigator.restore(Data(bytes.utf8), drafts: drafts, session: .valid(account: .alice))
            #expect(restored.result.effects.map(\.description) == ["snapshotDiscarded " + reason])
            #expect(restored.result.state.stack.map(\.route) == ["home"])
            #expect(restored.result.state.drafts == drafts)
        }
        // An older format is migrated before use.
        var source = try Harness()
        source.deepStack()
        let current = try NavigationSnapshot(source.state).encoded()
        var object = try #require(JSONSerialization.jsonObject(with: current) as? [String: Any])
        object["version"] = 0
        object["legacy"] = true
        let old = try JSONSerialization.data(withJSONObject: object)
        let migrated = h.navigator.restore(
            old, drafts: [:], session: .valid(account: .alice),
            migrations: [
                0: { data in
                    var object = try JSONSerialization.jsonObject(with: data) as! [String: Any]
                    object["version"] = 1
                    object["legacy"] = nil
                    return try JSONSerialization.data(withJSONObject: object)
                }
            ])
        #expect(migrated.result.state.stack.map(\.route) == ["home", "notes", "note", "edit"])
        #expect(migrated.result.effects.isEmpty)
    }
}
