import Foundation
import KeelCore
import KeelSync
import Testing

/// The changes feed's cursor after the server's data was reset or restored: the server refuses a cursor
/// past the end of its feed, and the engine reads the feed again from its start instead of failing (or,
/// worse, hearing "nothing new") on every sync from then on.
@Suite(.timeLimit(.minutes(2))) struct PullCursorTests {
    @Test func aCursorTheServerNoLongerKnowsRestartsThePullFromTheStart() async throws {
        let account = try AccountID("carol")
        // The first backend: three notes from another device, pulled by the phone (its cursor is then three
        // changes into that backend's feed).
        let before = try SyncWorld(prefix: "keel-cursor-before")
        let writer = try await before.device("writer").engine(account)
        for index in 1...3 {
            try await writer.create("note", id: "n\(index)", fields: .note("Old \(index)"), operation: "createNote")
        }
        #expect(await writer.sync().isComplete)
        let phone = try before.device("phone")
        let first = await (try await phone.engine(account)).sync()
        #expect(first.isComplete && first.pulled == 3 && !first.restartedPull)

        // The service comes back from an older backup: its feed has one change, so the phone's cursor points
        // past its end.
        let after = try SyncWorld(prefix: "keel-cursor-after")
        let other = try await after.device("other").engine(account)
        try await other.create("note", id: "n9", fields: .note("After the restore"), operation: "createNote")
        #expect(await other.sync().isComplete)
        let engine = try await phone.engine(
            account, token: try await after.token(account), client: after.client())
        let restarted = await engine.sync()
        #expect(restarted.failure == nil, "\(String(describing: restarted.failure))")
        #expect(restarted.isComplete && restarted.restartedPull && restarted.pulled == 1)
        #expect(try await engine.entity("note", id: "n9")?.serverVersion == 1)
        // What the phone had stays (it was pulled again from nowhere, nothing was dropped).
        #expect(try await engine.entity("note", id: "n1") != nil)
        // The cursor it stored now is the new backend's: the next sync reads on from there.
        let next = await engine.sync()
        #expect(next.isComplete && !next.restartedPull && next.pulled == 0)
    }
}
