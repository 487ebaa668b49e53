/// A value guarded by a lock, for state shared between threads that cannot live in an actor
/// (socket threads, clock sleepers resumed from synchronous code).
///
/// `Synchronization.Mutex` would do, but it needs iOS 18 / macOS 15; Keel supports older systems. The lock
/// is a ``PlatformMutex``.
package final class Locked<Value>: @unchecked Sendable {
    // @unchecked Sendable: every access to `value` happens inside `lock`.
    private let lock = PlatformMutex()
    private var value: Value

    package init(_ value: Value) { self.value = value }

    /// Runs `body` with exclusive access to the value.
    package func withLock<Result, Failure: Error>(_ body: (inout Value) throws(Failure) -> Result) throws(Failure)
        -> Result
    {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }

    /// Runs `body` with exclusive access to the value when no other thread holds it; nil, without
    /// waiting, when one does.
    package func withLockIfAvailable<Result, Failure: Error>(_ body: (inout Value) throws(Failure) -> Result)
        throws(Failure) -> Result?
    {
        guard lock.tryLock() else { return nil }
        defer { lock.unlock() }
        return try body(&value)
    }
}
