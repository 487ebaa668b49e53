import Foundation
import KeelCore
import KeelReference
import KeelStore
import KeelSync
import KeelTesting
import Testing

/// DATA-005.2: a real app process (`keel-fixtures sync-app`) is killed with SIGKILL in the middle of a sync,
/// twice, and relaunched with the same directories: every change reaches the backend exactly once.
@Suite(.timeLimit(.minutes(2))) struct SyncKillTests {
    /// Waits (polling the backend) until at least `count` keys were applied.
    func untilApplied(_ world: SyncWorld, atLeast count: Int) async throws {
        for _ in 0..<2000 where try world.backend.appliedKeys().count < count {
            try await Task.sleep(for: .milliseconds(2))
        }
    }

    @Test func killedInTheMiddleOfSyncingTwiceEveryChangeIsAppliedExactlyOnce() async throws {
        let world = try SyncWorld(prefix: "keel-sync-kill")
        let token = try await world.token(.alice)
        let device = world.directory.url("phone-data")
        let keys = world.directory.url("phone-keys")
        // Each batch's answer is held a little, so the kill lands while batches are in flight.
        world.backend.setFault(.init(mode: .none, delayAcks: .milliseconds(100)))
        func launch(_ run: String, create: Int, edit: Int) throws -> ChildProcess {
            try ChildProcess.launch(
                product: "keel-fixtures",
                arguments: [
                    "sync-app", "--data", device.path, "--keys", keys.path, "--server",
                    world.backend.baseURL.absoluteString, "--token", token, "--run", run, "--create", String(create),
                    "--edit", String(edit), "--batch", "4",
                ])
        }

        // First launch: 24 notes queued, killed after about three batches.
        let first = try launch("a", create: 24, edit: 0)
        #expect(try await first.nextLine(timeout: .seconds(20)) == "queued 24")
        #expect(try await first.nextLine() == "syncing")
        try await untilApplied(world, atLeast: 4)  // a batch or so in: the kill lands mid-sync, whatever the load
        first.kill()
        _ = try await first.waitForExit()
        let afterFirst = try world.backend.appliedKeys().count
        #expect(afterFirst < 24)  // killed mid-sync, not after

        // Second launch: 8 more notes and edits of 6 existing ones, killed again mid-sync.
        let second = try launch("b", create: 8, edit: 6)
        let queued = try #require(try await second.nextLine(timeout: .seconds(20)))
        #expect(queued.hasPrefix("queued ") && Int(queued.dropFirst(7))! > 8)
        #expect(try await second.nextLine() == "syncing")
        try await untilApplied(world, atLeast: afterFirst + 4)
        second.kill()
        _ = try await second.waitForExit()

        // Third launch: runs to the end.
        world.backend.setFault(.none)
        let third = try launch("c", create: 0, edit: 0)
        _ = try await third.nextLine(timeout: .seconds(20))
        #expect(try await third.nextLine() == "syncing")
        let done = try #require(try await third.nextLine(timeout: .seconds(30)))
        #expect(done.hasSuffix("complete 0"), "\(done)")
        #expect(try await third.waitForExit() == .exited(0))

        // Exactly once: 32 notes, every key applied once, the edits on the server.
        let applied = try world.backend.appliedKeys()
        #expect(applied.values.allSatisfy { $0 == 1 })
        #expect(applied.count == 24 + 8 + 6)
        #expect(try world.backend.noteCount() == 32)
        let vaults = try Vaults(
            dataDirectory: device, keyStore: try FileKeyStore(directory: keys, dataDirectories: [device]),
            inventory: NotesSync.inventory)
        let engine = try SyncEngine(
            vault: try await vaults.open(.alice),
            remote: NotesRemote(client: world.client(), account: .alice, token: token), policies: NotesSync.policies,
            offline: NotesSync.offline)
        let notes = try await engine.entities("note")
        #expect(notes.count == 32 && notes.allSatisfy { $0.state == .synced })
        #expect(notes.filter { $0.fields["body"] == "edited in b" }.count == 6)
    }
}
