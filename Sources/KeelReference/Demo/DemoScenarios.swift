import Foundation
import KeelContract
import KeelTesting

/// The scenarios of ``NotesDemo``. Each uses its own account, so that each can run alone.
extension DemoRun {
    // MARK: - 1 Offline

    func offlineStart() async throws {
        let phone = try device("phone")
        let trip = try await signedInNote(phone, account: "alice", title: "Trip plan")
        try await must(phone, "new Groceries")
        try await syncUntilIdle(phone)
        try await phone.quit()

        // Seven hours later, with no network: a port held closed refuses every connection.
        let refusing = try RefusingPort()
        let offline = refusing.baseURL
        defer { withExtendedLifetime(refusing) {} }
        action("phone starts again 7 h later with no network (\(offline) refuses connections)")
        let later = try relaunch(phone, server: offline, arguments: ["--time-offset", "25200"])
        let list = try await run(later, "list")
        demonstrating("MOB-DATA-004")
        verify(
            "both synced notes are shown offline", list["notes"]?.arrayValue?.count == 2, expected: "2 notes",
            seen: "\(list["notes"]?.arrayValue?.count ?? 0) notes")
        verify("the list is marked stale (older than the declared 6 h)", list["stale"], equals: true)
        verify("the list says how old it is", list["updatedAgo"], equals: "updated 7 h ago")

        try await must(later, "edit \(trip) Passport, tickets, adapter")
        verify("an offline edit is queued as pending", try await listed(later, trip)?["state"], equals: "pending")
        let sync = try await run(later, "sync")
        let message = sync["error"]?["message"]?.stringValue ?? ""
        demonstrating("MOB-API-003")
        verify(
            "sync says nothing was sent (outcome notSent) and that the edit is kept on the device",
            sync["ok"] == false && sync["error"]?["outcome"] == "notSent"
                && message.contains("saved on this device"),
            expected: "ok false, outcome notSent, a message saying the edit is kept", seen: sync.description)
        demonstrating("MOB-DATA-004")
        // Shown, not checked: with no route to the backend, nothing could have changed there (found in an
        // outside audit: as a check it could not fail).
        let kept = try await backend.note(trip)?["version"]?.description ?? "none"
        action("the backend, out of the phone's reach, has version \(kept) of the note")
        verify(
            "the edit is still pending after the failed sync", try await listed(later, trip)?["state"],
            equals: "pending")
    }

    // MARK: - 2 Kill during sync

    func killDuringSync() async throws {
        let phone = try device("phone")
        let note = try await signedInNote(phone, account: "bruno", title: "Field notes")
        try await must(phone, "edit \(note) Day 1: arrived at the station")
        let applied = try await syncWithItsAnswerHeld(phone) { try await self.backend.note(note)?["version"] == 2 }
        // A restart in the middle of sync (MOB-DATA-005); the resend applied once is the retry with an
        // idempotency key (MOB-API-002).
        demonstrating("MOB-DATA-005")
        verify(
            "the backend applied the edit (version 2) while its answer is held", applied, expected: "version 2",
            seen: applied ? "version 2" : "not applied")
        try await phone.kill()
        action("kill -9 phone before the answer arrives")
        try await backend.fault("none")

        let again = try relaunch(phone)
        action("phone starts again on the same directories")
        let state = try await listed(again, note)?["state"]?.stringValue ?? "missing"
        // Said, not inferred: the app must list the note as sending or pending (a missing answer is no proof).
        verify(
            "the edit is not shown as synced: the backend's answer never reached the app",
            ["sending", "pending"].contains(state), expected: "sending or pending", seen: state)
        let sync = try await syncUntilIdle(again)
        verify(
            "sync completes after the restart", sync["ok"] == true && sync["outstanding"] == 0,
            expected: "ok, nothing outstanding", seen: sync.description)
        demonstrating("MOB-DATA-005", "MOB-API-002")
        verify("the backend has the edit once: version 2, not 3", try await backend.note(note)?["version"], equals: 2)
        try await verifyAppliedOnce()
        demonstrating("MOB-DATA-005")
        let after = try await listed(again, note)
        verify(
            "the note is synced at version 2 with its text",
            after?["state"] == "synced" && after?["version"] == 2 && after?["body"] == "Day 1: arrived at the station",
            expected: "synced, version 2", seen: after?.description ?? "missing")
    }

    // MARK: - 3 Conflict

    func concurrentEdit() async throws {
        let phone = try device("phone")
        let tablet = try device("tablet")
        let note = try await signedInNote(phone, account: "chen", title: "Shopping")
        try await must(tablet, "signin chen")
        try await syncUntilIdle(tablet)
        verify("the tablet has the phone's note", try await listed(tablet, note)?["state"], equals: "synced")

        try await must(phone, "edit \(note) milk, eggs")
        try await must(phone, "tag \(note) home")
        try await must(tablet, "edit \(note) milk, bread")
        try await must(tablet, "tag \(note) weekend")
        try await syncUntilIdle(phone)
        let sync = try await run(tablet, "sync")
        verify(
            "the tablet's edit meets the phone's: a conflict, not an overwrite",
            (sync["conflicts"]?.intValue ?? 0) >= 1,
            expected: "conflicts ≥ 1", seen: sync.description)
        verify(
            "the note is marked conflicted on the tablet", try await listed(tablet, note)?["state"],
            equals: "conflicted")
        let conflicts = try await run(tablet, "conflicts")
        let record = conflicts["conflicts"]?.arrayValue?.first { $0["id"]?.stringValue == note }
        verify(
            "both versions are kept: mine \"milk, bread\", theirs \"milk, eggs\"",
            record?["mine"]?["body"] == "milk, bread" && record?["theirs"]?["body"] == "milk, eggs",
            expected: "mine and theirs", seen: record?.description ?? "no conflict record")
        verify(
            "the backend kept the phone's text (nothing silently overwritten)",
            try await backend.note(note)?["body"], equals: "milk, eggs")
        try await must(tablet, "resolve \(note) merged milk, eggs, bread")
        try await syncUntilIdle(tablet)
        try await syncUntilIdle(phone)
        let onPhone = try await listed(phone, note)
        let onTablet = try await listed(tablet, note)
        verify(
            "the merged text reached the backend", try await backend.note(note)?["body"], equals: "milk, eggs, bread")
        verify(
            "both devices show the merged text at the same version",
            onPhone?["body"] == "milk, eggs, bread" && onPhone?["body"] == onTablet?["body"]
                && onPhone?["version"] == onTablet?["version"],
            expected: "milk, eggs, bread on both",
            seen: "phone \(onPhone?.description ?? "-"), tablet \(onTablet?.description ?? "-")")
        func tags(_ note: JSONValue?) -> [String] {
            (note?["tags"]?.arrayValue ?? []).compactMap(\.stringValue).sorted()
        }
        let backendNote = try await backend.note(note)
        verify(
            "tags merged as a set union (the declared policy): home and weekend, on both devices and the backend",
            tags(onPhone) == ["home", "weekend"] && tags(onTablet) == tags(onPhone)
                && tags(backendNote) == tags(onPhone),
            expected: "[home, weekend] everywhere",
            seen: "phone \(tags(onPhone)), tablet \(tags(onTablet)), backend \(tags(backendNote))")
        try await verifyAppliedOnce()
    }

    // MARK: - 4 Account switch

    func accountSwitch() async throws {
        let phone = try device("phone")
        try await must(phone, "signin dana")
        let made = try await must(phone, "new Surprise party for Eli")
        guard let secret = made["id"]?.stringValue else {
            throw NotesDemoError(code: .badAnswer, message: "phone$ new answered \(made) (no id)")
        }
        try await must(phone, "switch eli")
        let list = try await run(phone, "list")
        verify("eli sees none of dana's notes", list["notes"]?.arrayValue?.count, equals: 0)
        let madeForEli = try await must(phone, "new Reading list")
        guard let eliNote = madeForEli["id"]?.stringValue else {
            throw NotesDemoError(code: .badAnswer, message: "phone$ new answered \(madeForEli) (no id)")
        }
        let sync = try await syncUntilIdle(phone)
        verify("eli's sync sends eli's change only", sync["acknowledged"], equals: 1)
        let notes = try await backend.notes()
        verify(
            "dana's pending note was not sent under eli's account (the backend does not have it)",
            !notes.contains { $0["id"]?.stringValue == secret }, expected: "absent", seen: "present")
        verify(
            "eli's note belongs to eli on the backend",
            notes.first { $0["id"]?.stringValue == eliNote }?["account"], equals: "eli")
        try await must(phone, "switch dana")
        verify(
            "back on dana, her change is still pending", try await listed(phone, secret)?["state"],
            equals: "pending")
        try await syncUntilIdle(phone)
        verify(
            "dana's note reached the backend under dana",
            try await backend.note(secret)?["account"], equals: "dana")
        let danaList = try await run(phone, "list")
        let danaNotes = danaList["notes"]?.arrayValue
        verify(
            "dana does not see eli's note",
            danaList["ok"] == true && danaNotes.map { !$0.contains { $0["id"]?.stringValue == eliNote } } == true
                && danaNotes?.contains { $0["id"]?.stringValue == secret } == true,
            expected: "her own note listed, eli's absent", seen: danaList.description)
    }

    // MARK: - 5 Links

    func deepLinks() async throws {
        let phone = try device("phone")
        let note = try await signedInNote(phone, account: "farah", title: "Recipe")
        let other = try await must(phone, "new Shopping")["id"]?.stringValue ?? ""
        let label = "note noteID=\(note)"
        demonstrating("MOB-PLAT-008")
        // Opened from another stack (another note's editor): a navigator that only pushed the note would
        // leave that stack under it (found in an outside audit: opened from [home, notes], pushing passed).
        try await must(phone, "open \(other)")
        try await must(phone, "editor \(other)")
        let linked = try await must(phone, "open-link keel-notes://note/\(note)")
        verify(
            "the deep link, opened over another note's editor, shows the note above its declared parents only",
            linked["screen"]?["stack"], equals: ["home", "notes", .string(label)])
        let back = try await must(phone, "back systemBack")
        verify(
            "system back returns to its parent, the notes list", back["screen"]?["stack"], equals: ["home", "notes"])
        try await must(phone, "open \(other)")
        let notified = try await must(phone, "notification \(note)")
        verify(
            "a notification, opened over another note, opens the note the same way", notified["screen"]?["stack"],
            equals: ["home", "notes", .string(label)])
        let gesture = try await must(phone, "back gesture")
        verify("the back gesture does the same as system back", gesture["screen"]?["stack"], equals: ["home", "notes"])
        let refused = try await run(phone, "open-link keel-notes://admin/\(note)")
        verify(
            "an unknown link is refused, the screen unchanged",
            refused["ok"] == false && refused["screen"]?["stack"] == ["home", "notes"],
            expected: "refused", seen: refused.description)

        demonstrating("MOB-PLAT-005")
        try await must(phone, "open \(note)")
        try await must(phone, "editor \(note)")
        try await must(phone, "type add basil at the end")
        try await phone.kill()
        action("kill -9 phone with the editor open")
        let again = try relaunch(phone)
        let screen = try await run(again, "screen")
        verify(
            "the editor is restored above its parents", screen["screen"]?["stack"],
            equals: ["home", "notes", .string(label), .string("edit noteID=\(note)")])
        verify("the typed text is restored from the draft", screen["screen"]?["input"], equals: "add basil at the end")
    }

    // MARK: - 6 Captive portal

    func captivePortal() async throws {
        let phone = try device("phone")
        let note = try await signedInNote(phone, account: "gus", title: "Café wifi")
        try await must(phone, "edit \(note) the password is on the receipt")
        try await backend.fault("portal")
        action("the network now answers with a captive portal's login page")
        let sync = try await run(phone, "sync")
        verify("sync recognises a captive portal", sync["error"]?["kind"], equals: "captivePortal")
        // A mutation that met a portal cannot be proven unsent (a proxy may have forwarded it): the app says
        // so, and does not call it saved.
        verify(
            "it does not claim the edit was or was not sent: outcome unknown", sync["error"]?["outcome"],
            equals: "unknown")
        let state = try await listed(phone, note)?["state"]?.stringValue ?? "missing"
        verify(
            "the edit is not called synced", ["sending", "pending"].contains(state), expected: "sending or pending",
            seen: state)
        // Shown, not checked: the portal answers in the backend's place, so nothing reached it (found in an
        // outside audit: as a check it could not fail).
        let behind = try await backend.note(note)?["version"]?.description ?? "none"
        action("behind the portal, the backend has version \(behind) of the note")
        try await backend.fault("none")
        action("the portal is gone")
        let after = try await syncUntilIdle(phone)
        verify("the edit is sent once the network is real", after["acknowledged"], equals: 1)
        verify("the backend applied it once: version 2", try await backend.note(note)?["version"], equals: 2)
        try await verifyAppliedOnce()
    }

    // MARK: - 7 Required update

    func requiredUpdate() async throws {
        let phone = try device("phone", arguments: ["--app-version", "1.4"])
        let note = try await signedInNote(phone, account: "hana", title: "Visa application")
        // An operation whose result the app cannot know (MOB-API-005 names it with credentials and drafts):
        // the backend applies a new note and holds its answer, and the app is killed before it arrives.
        let photos = try await must(phone, "new Passport photos")["id"]?.stringValue ?? ""
        try await must(phone, "open \(note)")
        try await must(phone, "editor \(note)")
        try await must(phone, "type Draft: call the embassy on Monday")
        let applied = try await syncWithItsAnswerHeld(phone) { try await self.backend.note(photos) != nil }
        verify(
            "the backend applied the new note while its answer is held", applied, expected: "applied",
            seen: applied ? "applied" : "not applied")
        try await phone.kill()
        action("kill -9 phone before the answer arrives: the result of that sync is unknown to the app")
        try await backend.fault("none")
        try await backend.post("min-version", ["platform": "ios", "version": "2.0", "latest": "2.1"])
        action("the backend now requires version 2.0 on iOS (the phone runs 1.4)")
        let again = try relaunch(phone)
        action("phone starts again, still 1.4")
        let sync = try await run(again, "sync")
        verify("the call is refused as a required update", sync["error"]?["kind"], equals: "updateRequired")
        let version = try await run(again, "version")
        verify(
            "the app knows the minimum it must update to",
            version["policy"] == "updateRequired" && version["minimum"] == "2.0",
            expected: "updateRequired, minimum 2.0", seen: version.description)
        let screen = try await run(again, "screen")
        verify("the draft is kept", screen["screen"]?["input"], equals: "Draft: call the embassy on Monday")
        verify("the notes are kept", try await listed(again, note)?["state"], equals: "synced")
        let unknown = try await listed(again, photos)?["state"]?.stringValue ?? "missing"
        verify(
            "the operation whose answer was lost is kept and not called synced",
            ["sending", "pending"].contains(unknown),
            expected: "sending or pending", seen: unknown)
        try await again.quit()
        action("phone is updated to 2.1 and starts again: no new sign-in")
        let updated = try relaunch(phone, arguments: ["--app-version", "2.1"])
        let resumed = try await syncUntilIdle(updated)
        verify(
            "the updated app syncs with its kept credentials", resumed["ok"] == true && resumed["outstanding"] == 0,
            expected: "ok, nothing outstanding", seen: resumed.description)
        let settled = try await listed(updated, photos)
        verify(
            "the operation is settled after the update: the note is synced at version 1",
            settled?["state"] == "synced" && settled?["version"] == 1, expected: "synced, version 1",
            seen: settled?.description ?? "missing")
        verify("the backend has it once: version 1", try await backend.note(photos)?["version"], equals: 1)
        try await verifyAppliedOnce()
        let draft = try await run(updated, "screen")
        verify(
            "and the draft survived the update", draft["screen"]?["input"], equals: "Draft: call the embassy on Monday")
    }

    // MARK: - 8 Traces

    func traces() async throws {
        let phone = try device("phone", arguments: ["--public", pages.server.baseURL.absoluteString])
        let note = try await signedInNote(phone, account: "ivan", title: "Talk outline")
        try await must(phone, "edit \(note) 1. why 2. how 3. what now")
        try await backend.fault("unavailable", retryAfter: 0, count: 2)
        action("the backend answers the next two requests with 503 maintenance")
        let sync = try await syncUntilIdle(phone)
        verify("sync succeeds after retries", sync["acknowledged"], equals: 1)
        let posts = try await backend.requests().filter { $0["path"] == "/mutations" }.suffix(3)
        let statuses = posts.map { $0["status"]?.intValue ?? 0 }
        verify(
            "three attempts reached the backend: 503, 503, 200", statuses == [503, 503, 200],
            expected: "[503, 503, 200]", seen: statuses.description)
        let parents = posts.compactMap { $0["traceparent"]?.stringValue?.split(separator: "-").map(String.init) }
        let traceIDs = Set(parents.compactMap { $0.count == 4 ? $0[1] : nil })
        verify(
            "all three carry one trace id (\(traceIDs.first.map { String($0.prefix(8)) + "…" } ?? "-"))",
            parents.count == 3 && traceIDs.count == 1, expected: "one trace id", seen: "\(traceIDs.count) trace ids")
        let spans = Set(parents.compactMap { $0.count == 4 ? $0[2] : nil })
        verify("each attempt has its own parent id", spans.count, equals: 3)

        let published = try await must(phone, "publish \(note)")
        verify("the published page is live on the public host", published["live"], equals: true)
        let seen = pages.server.requests
        verify(
            "the public host (not allowlisted) received no traceparent or tracestate",
            !seen.isEmpty && seen.allSatisfy { $0.headers["traceparent"] == nil && $0.headers["tracestate"] == nil },
            expected: "no trace headers", seen: "\(seen.count) requests")
        verify(
            "nor the account's token", !seen.isEmpty && seen.allSatisfy { $0.headers["Authorization"] == nil },
            expected: "no Authorization", seen: "\(seen.count) requests")
        let publish = try await backend.requests().last { ($0["path"]?.stringValue ?? "").hasSuffix("/publish") }
        verify(
            "the backend (allowlisted) received the publish call with a traceparent",
            publish?["traceparent"]?.stringValue != nil, expected: "a traceparent", seen: publish?.description ?? "none"
        )
    }

    // MARK: - 9 Publish

    func publishOnce() async throws {
        let phone = try device("phone")
        let note = try await signedInNote(phone, account: "june", title: "Essay on tides")
        let path = "/notes/\(note)/publish"
        try await backend.fault("none", delayAcksMs: 2500)
        action("backend holds its answers for 2.5 s after publishing")
        try phone.send("publish \(note)")
        action("phone$ publish \(Self.short(note))  (in flight)")
        let made = try await waitUntil(.seconds(10)) { try await self.backend.published()[note] == 1 }
        demonstrating("MOB-API-002")
        verify("the backend made the publication", made, expected: "1 publication", seen: made ? "1" : "none")
        try await phone.kill()
        action("kill -9 phone before the answer arrives")
        try await backend.fault("none")
        let again = try relaunch(phone)
        let deadline = ContinuousClock.now + .seconds(15)
        let first = try await run(again, "publish \(note)")
        var answer = first
        while answer["ok"] == false, answer["error"]?["kind"] == "inProgress", ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(250))
            answer = try await run(again, "publish \(note)", quiet: true)
        }
        if answer["ok"] == true {
            action("phone$ publish \(Self.short(note))  → published at \(answer["path"]?.stringValue ?? "-")")
        }
        // The premise, checked: the kill came while the publication was in flight. Had its answer arrived
        // first, the ledger would hold it, and this tap would be answered from there without a call.
        verify(
            "the kill came before the answer: after the restart the app does not know the outcome (not answered "
                + "from its ledger)",
            first["alreadyPublished"] != true && answer["alreadyPublished"] == false,
            expected: "alreadyPublished false", seen: answer.description)
        verify("publishing again after the restart succeeds", answer["ok"], equals: true)
        let calls = try await backend.requests().filter { $0["path"]?.stringValue == path }
        let answered = calls.filter { $0["status"] == 200 }.count
        // The request in flight at the kill and its replay after the restart, both answered with the one
        // publication: the replay carried the same key (a new key publishes again).
        verify(
            "the backend answered the publication again after the restart: 2 calls answered 200 (the one in "
                + "flight, then its replay)",
            answered, equals: 2)
        demonstrating("MOB-API-002", "MOB-PLAT-008")
        let keys = Set(calls.map { $0["idempotencyKey"]?.stringValue ?? "none" })
        verify(
            "the replay carried the key of the call in flight: one Idempotency-Key for both",
            keys.count == 1 && !keys.contains("none"), expected: "one key",
            seen: keys.sorted().map { String($0.prefix(12)) }.joined(separator: ", "))
        verify(
            "the backend published the note once, not twice",
            try await backend.published()[note], equals: 1)
        demonstrating("MOB-PLAT-008")
        let before = try await backend.requests()
        let pagesBefore = pages.server.requests.count
        let repeated = try await run(again, "publish \(note)")
        verify("a third tap answers from the effect ledger", repeated["alreadyPublished"], equals: true)
        let after = try await backend.requests()
        let pagesAfter = pages.server.requests.count
        verify(
            "and makes no call at all: the backend's request log and the public page host are unchanged",
            after == before && pagesAfter == pagesBefore,
            expected: "\(before.count) backend requests, \(pagesBefore) page requests",
            seen: "\(after.count) backend requests, \(pagesAfter) page requests")
    }
}
