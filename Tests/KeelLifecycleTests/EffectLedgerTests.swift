import Foundation
import KeelCore
import KeelLifecycle
import KeelTesting
import Testing

@Suite struct EffectLedgerTests {
    let directory: TemporaryDirectory
    init() throws { directory = try TemporaryDirectory(prefix: "keel-ledger") }

    /// PLAT-008.5: once begun, an operation is never begun again — not by a replayed confirmation, not by
    /// a ledger reopened after a relaunch — and its result comes from the ledger.
    @Test func anOperationIsBegunOnceAndItsResultComesFromTheLedger() async throws {
        let file = directory.url("ledger.json")
        var ledger: EffectLedger! = try EffectLedger(file: file)
        let id = EffectLedger.operationID(entry: "e4", action: "pay")
        #expect(id == EffectLedger.operationID(entry: "e4", action: "pay"))
        #expect(id != EffectLedger.operationID(entry: "e5", action: "pay"))
        #expect(id != EffectLedger.operationID(entry: "e4", action: "pay", attempt: 2))
        #expect(try await ledger.begin(id, action: "pay", reference: "journal-7") == .run)
        guard case .recorded(let entry) = try await ledger.begin(id, action: "pay") else {
            Issue.record("a replayed confirmation would pay twice")
            return
        }
        #expect(entry.state == .started && entry.reference == "journal-7")
        #expect(try await ledger.unsettled().map(\.id) == [id])
        try await ledger.complete(id, .succeeded, result: "paid 12.00")

        ledger = nil  // the process ends; the next launch opens the ledger again
        let reopened = try EffectLedger(file: file)
        #expect(try await reopened.entry(id)?.result == "paid 12.00")
        #expect(try await reopened.unsettled().isEmpty)
        guard case .recorded(let again) = try await reopened.begin(id, action: "pay") else {
            Issue.record("a relaunch would pay twice")
            return
        }
        #expect(again.state == .succeeded)
    }

    /// Found in review: the ledger is read once and rewritten whole, so a second ledger on the same file
    /// (an app extension, a second instance) dropped the first one's entries, and an operation it had
    /// started could run again. A second ledger on the file is refused with `inUse` while the first lives.
    @Test func aSecondLedgerOnTheSameFileIsRefusedWhileTheFirstLives() async throws {
        let file = directory.url("shared-ledger.json")
        var first: EffectLedger? = try EffectLedger(file: file)
        #expect(try await first?.begin("pay@e1#1", action: "pay") == .run)
        #expect {
            _ = try EffectLedger(file: file)
        } throws: { error in
            (error as? EffectLedgerError)?.code == .inUse
        }
        first = nil
        let second = try EffectLedger(file: file)
        guard case .recorded = try await second.begin("pay@e1#1", action: "pay") else {
            Issue.record("the first ledger's start was lost")
            return
        }
    }

    /// Found in review: a start the ledger could not write down stayed in its memory, so a retry was
    /// refused as already started (and would only run after a relaunch).
    @Test func aStartOrAnEndThatCouldNotBeWrittenIsNotRemembered() async throws {
        let folder = directory.url("ledgers")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let file = folder.appendingPathComponent("ledger.json")
        let ledger = try EffectLedger(file: file)
        // The folder becomes a file: nothing can be written to the ledger (as on a failing disk).
        func breakDisk() throws {
            try FileManager.default.removeItem(at: folder)
            try Data().write(to: folder)
        }
        func repairDisk() throws {
            try FileManager.default.removeItem(at: folder)
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        }
        try breakDisk()
        await #expect(throws: EffectLedgerError.self) { try await ledger.begin("pay@e4#1", action: "pay") }
        #expect(try await ledger.entry("pay@e4#1") == nil)
        try repairDisk()
        #expect(try await ledger.begin("pay@e4#1", action: "pay") == .run)
        try breakDisk()
        await #expect(throws: EffectLedgerError.self) {
            try await ledger.complete("pay@e4#1", .succeeded, result: "paid")
        }
        #expect(try await ledger.entry("pay@e4#1")?.state == .started)  // what the disk last said
    }

    @Test func aDamagedLedgerIsRefusedAndNeverReplaced() async throws {
        let file = directory.url("ledger.json")
        try Data("{ not a ledger".utf8).write(to: file)
        #expect(throws: EffectLedgerError.self) { try EffectLedger(file: file) }
        #expect(try Data(contentsOf: file) == Data("{ not a ledger".utf8))
        let ledger = try EffectLedger(file: directory.url("other.json"))
        await #expect(throws: EffectLedgerError.self) { try await ledger.complete("never-begun", .failed, result: nil) }
    }
}

/// Found in review: ledger entries had no owner, and a snapshot of `unsettled()` taken in another account's
/// session (a switch while A's payment was in flight, then a kill) reattached A's operation in B's session.
@Suite(.timeLimit(.minutes(1))) struct EffectLedgerOwnerTests {
    @Test func anotherAccountsOperationInFlightIsNeverHandedBackInThisAccountsSession() async throws {
        let directory = try TemporaryDirectory(prefix: "keel-ledger-owner")
        let file = directory.url("ledger.json")
        do {
            let ledger = try EffectLedger(file: file)
            #expect(try await ledger.begin("pay@e2-a#1", action: "pay", account: .alice) == .run)
            #expect(try await ledger.begin("pay@e3-b#1", action: "pay", account: .bob) == .run)
            #expect(try await ledger.begin("legacy@e4#1", action: "pay") == .run)
        }
        // Relaunched: the owner survived the file.
        let ledger = try EffectLedger(file: file)
        #expect(try await ledger.unsettled(account: .bob).map(\.id) == ["legacy@e4#1", "pay@e3-b#1"])
        #expect(try await ledger.unsettled(account: .alice).map(\.id) == ["legacy@e4#1", "pay@e2-a#1"])
        #expect(try await ledger.unsettled(account: nil).map(\.id) == ["legacy@e4#1"])
        #expect(try await ledger.unsettled().count == 3)
        #expect(try await ledger.entry("pay@e2-a#1")?.account == .alice)
        // A ledger written before owners were reads as entries without one.
        try Data(#"[{"id": "old@e1#1", "action": "pay", "state": "started"}]"#.utf8).write(
            to: directory.url("old.json"))
        let old = try EffectLedger(file: directory.url("old.json"))
        #expect(try await old.unsettled(account: .alice).map(\.id) == ["old@e1#1"])
    }

    /// MOB-DATA-006: an account an earlier version recorded that is not a valid account id ("" and "null", which
    /// navigation took as accounts) names no account: its operation is handed back in no account's session. It
    /// is otherwise an entry like any other — the ledger is not damaged (the entry may be a payment that must not
    /// run twice): it is listed, answers a replayed confirmation, is settled and forgotten, and its account is
    /// written back exactly as it was, in the ledger's format of always.
    @Test func anOperationRecordedForAnInvalidAccountIsKeptAndHandedBackInNoSession() async throws {
        let directory = try TemporaryDirectory(prefix: "keel-ledger-owner")
        let file = directory.url("ledger.json")
        let entries = [
            #"{"account":"","action":"pay","id":"pay@e1#1","reference":"key-1","state":"started"}"#,
            #"{"account":"null","action":"pay","id":"pay@e2#1","state":"started"}"#,
            #"{"account":"alice","action":"pay","id":"pay@e3#1","state":"started"}"#,
        ]
        try Data(("[" + entries.joined(separator: ",") + "]").utf8).write(to: file)
        let settled = Date(timeIntervalSinceReferenceDate: 1000)
        let ledger = try EffectLedger(file: file, clock: WallClock { settled })
        let all = try await ledger.allEntries()
        #expect(all.map(\.id) == ["pay@e1#1", "pay@e2#1", "pay@e3#1"])
        #expect(all.map(\.account) == [nil, nil, .alice] && all.map(\.invalidAccount) == ["", "null", nil])
        #expect(try await ledger.unsettled().count == 3)
        #expect(try await ledger.unsettled(account: .alice).map(\.id) == ["pay@e3#1"])
        #expect(try await ledger.unsettled(account: nil).isEmpty)
        guard case .recorded(let entry) = try await ledger.begin("pay@e1#1", action: "pay", account: .alice) else {
            Issue.record("a recorded payment would run again")
            return
        }
        #expect(entry.reference == "key-1" && entry.account == nil && entry.invalidAccount == "")
        try await ledger.complete("pay@e1#1", .succeeded, result: "paid")
        let written = [
            #"{"account":"","action":"pay","id":"pay@e1#1","reference":"key-1","result":"paid","settledAt":1000,"state":"succeeded"}"#,
            entries[1], entries[2],
        ]
        #expect(
            String(decoding: try Data(contentsOf: file), as: UTF8.self) == "[" + written.joined(separator: ",") + "]")
        #expect(try await ledger.removeSettled(before: settled.addingTimeInterval(1)) == 1)
        #expect(try await ledger.allEntries().map(\.id) == ["pay@e2#1", "pay@e3#1"])
    }
}

/// Found in review: nothing ever left the ledger, which is rewritten whole on every change; past its 64 MiB
/// read limit it no longer opened, and no irreversible operation could run at all.
@Suite(.timeLimit(.minutes(1))) struct EffectLedgerRetentionTests {
    @Test func settledOperationsOlderThanTheRetentionAreForgottenUnknownOnesNever() async throws {
        let directory = try TemporaryDirectory(prefix: "keel-ledger-retention")
        let file = directory.url("ledger.json")
        let now = Locked(Date(timeIntervalSince1970: 1_764_892_800))
        let clock = WallClock { now.withLock { $0 } }
        do {
            let ledger = try EffectLedger(file: file, clock: clock)
            for id in ["old-done", "old-failed", "old-open", "new-done"] {
                #expect(try await ledger.begin(id, action: "pay") == .run)
            }
            try await ledger.complete("old-done", .succeeded, result: "paid")
            try await ledger.complete("old-failed", .failed, result: nil)
            now.withLock { $0 += 30 * 86_400 }
            try await ledger.complete("new-done", .succeeded, result: "paid")
            #expect(try await ledger.removeSettled(before: now.withLock { $0 } - 7 * 86_400) == 2)
        }
        // Gone from the file too; the unknown one stays (it may still need reattaching), and so does the new one.
        let reopened = try EffectLedger(file: file, clock: clock)
        #expect(try await reopened.entry("old-done") == nil)
        #expect(try await reopened.entry("old-failed") == nil)
        #expect(try await reopened.entry("old-open")?.state == .started)
        #expect(try await reopened.entry("new-done")?.result == "paid")
        #expect(try await reopened.removeSettled(before: .distantFuture) == 1)  // never the started one
        #expect(try await reopened.unsettled().map(\.id) == ["old-open"])
    }

    /// Found in an outside audit: a failed first attempt was forgotten while the second, which succeeded,
    /// stayed; an app that looks for the next attempt after the failed ones found #1 missing and ran it
    /// again — a second publication.
    @Test func theAttemptsOfOneConfirmationAreForgottenTogether() async throws {
        let directory = try TemporaryDirectory(prefix: "keel-ledger-retention")
        let now = Locked(Date(timeIntervalSince1970: 1_764_892_800))
        let ledger = try EffectLedger(file: directory.url("ledger.json"), clock: WallClock { now.withLock { $0 } })
        let first = EffectLedger.operationID(entry: "e6", action: "publish", attempt: 1)
        let second = EffectLedger.operationID(entry: "e6", action: "publish", attempt: 2)
        let other = EffectLedger.operationID(entry: "e7", action: "publish", attempt: 1)
        for id in [first, other] { #expect(try await ledger.begin(id, action: "publish") == .run) }
        try await ledger.complete(first, .failed, result: nil)
        try await ledger.complete(other, .failed, result: nil)
        now.withLock { $0 += 10 * 86_400 }
        #expect(try await ledger.begin(second, action: "publish") == .run)
        try await ledger.complete(second, .succeeded, result: "/p/1")
        // A week ago: #1 of e6 is that old, #2 is not; e7's only attempt is.
        #expect(try await ledger.removeSettled(before: now.withLock { $0 } - 7 * 86_400) == 1)
        #expect(try await ledger.entry(first)?.state == .failed)
        #expect(try await ledger.entry(other) == nil)
        // Once every attempt is old enough, they go together.
        #expect(try await ledger.removeSettled(before: .distantFuture) == 2)
        #expect(try await ledger.entry(first) == nil)
        #expect(try await ledger.entry(second) == nil)
    }

    /// Found in an outside audit: a late "failed" from a second caller turned a succeeded operation into a
    /// failed one, and the next confirmation would have run it again.
    @Test func anOperationRecordedAsSucceededStaysSucceeded() async throws {
        let directory = try TemporaryDirectory(prefix: "keel-ledger-settled")
        do {
            let ledger = try EffectLedger(file: directory.url("ledger.json"))
            #expect(try await ledger.begin("publish@e6#1", action: "publish") == .run)
            try await ledger.complete("publish@e6#1", .succeeded, result: "/p/1")
            for late in [EffectLedger.State.failed, .started] {
                await #expect {
                    try await ledger.complete("publish@e6#1", late, result: nil)
                } throws: { ($0 as? EffectLedgerError)?.code == .alreadySucceeded }
            }
        }
        let reopened = try EffectLedger(file: directory.url("ledger.json"))
        #expect(try await reopened.entry("publish@e6#1")?.state == .succeeded)
        #expect(try await reopened.entry("publish@e6#1")?.result == "/p/1")
    }

    /// Found in an outside audit: a second "succeeded" (a reattach racing the first caller) rewrote the result
    /// the user is shown, and when it settled (which decides when it is forgotten). A succeeded operation's
    /// record never changes: a second completion is refused with `alreadySucceeded`, on disk too.
    @Test func aSucceededOperationsRecordedResultNeverChanges() async throws {
        let directory = try TemporaryDirectory(prefix: "keel-ledger-settled")
        let now = Locked(Date(timeIntervalSince1970: 1_764_892_800))
        let settled = now.withLock { $0 }
        do {
            let ledger = try EffectLedger(file: directory.url("ledger.json"), clock: WallClock { now.withLock { $0 } })
            #expect(try await ledger.begin("publish@e6#1", action: "publish") == .run)
            try await ledger.complete("publish@e6#1", .succeeded, result: "/p/1")
            now.withLock { $0 += 86_400 }
            for result in [nil, "/p/2", "/p/1"] {
                await #expect {
                    try await ledger.complete("publish@e6#1", .succeeded, result: result)
                } throws: { ($0 as? EffectLedgerError)?.code == .alreadySucceeded }
            }
            #expect(try await ledger.entry("publish@e6#1")?.result == "/p/1")
            #expect(try await ledger.entry("publish@e6#1")?.settledAt == settled)
        }
        let reopened = try EffectLedger(file: directory.url("ledger.json"))
        #expect(try await reopened.entry("publish@e6#1")?.result == "/p/1")
        #expect(try await reopened.entry("publish@e6#1")?.settledAt == settled)
        // A failed attempt may still be recorded as succeeded (a late answer that it did happen).
        #expect(try await reopened.begin("publish@e7#1", action: "publish") == .run)
        try await reopened.complete("publish@e7#1", .failed, result: nil)
        try await reopened.complete("publish@e7#1", .succeeded, result: "/p/7")
        #expect(try await reopened.entry("publish@e7#1")?.result == "/p/7")
    }
}
