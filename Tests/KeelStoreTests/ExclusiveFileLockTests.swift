import Foundation
import KeelTesting
import Testing

@testable import KeelStore

/// The advisory lock behind manifests and effect ledgers, between two holders in one process (flock locks
/// are per open file, so two opens in one process exclude each other as two processes do).
@Suite(.timeLimit(.minutes(1))) struct ExclusiveFileLockTests {
    /// Found in review: a waiter that got the lock on a lock file its holder had unlinked (as a sign-out
    /// removes the ledger's) held a file no path names any more, while the next opener made a new one and
    /// took that: two holders. A lock is taken only on the file the path still names.
    @Test func aLockOnAnUnlinkedFileIsTakenAgainOnTheFileThePathNames() async throws {
        let directory = try TemporaryDirectory(prefix: "keel-lock")
        let path = directory.url("ledger.lock").path
        let holder = try ExclusiveFileLock(path, .file)
        let waiter = Task.detached { try ExclusiveFileLock(path, .file, waitingUpTo: .seconds(20)) }
        try await Task.sleep(for: .milliseconds(200))  // the waiter is waiting on the file the path names now
        // The holder removes its lock file, then lets go.
        try FileManager.default.removeItem(atPath: path)
        holder.release()
        let second = try await waiter.value
        #expect(FileManager.default.fileExists(atPath: path))
        // A third opener finds the lock held by the waiter, on the file the path names.
        #expect {
            _ = try ExclusiveFileLock(path, .file)
        } throws: { error in
            if case ExclusiveFileLock.Failure.held = error { return true }
            return false
        }
        second.release()
        _ = try ExclusiveFileLock(path, .file)
    }

    /// Found in review: a FIFO in place of a lock file no longer made the open wait (opened without
    /// blocking), but it was still taken as the lock file. Anything that is not a regular file is refused.
    @Test func aFIFOInPlaceOfTheLockFileIsRefusedAtOnce() throws {
        let directory = try TemporaryDirectory(prefix: "keel-lock-fifo")
        let path = directory.url("backend.lock").path
        #expect(mkfifo(path, 0o600) == 0)
        #expect {
            _ = try ExclusiveFileLock(path, .file)
        } throws: { error in
            if case ExclusiveFileLock.Failure.failed(let code) = error { return code == EINVAL }
            return false
        }
    }
}
