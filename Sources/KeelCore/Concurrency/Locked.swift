/// A value guarded by a lock, for state shared between threads that cannot live in an actor
/// (socket threads, clock sleepers resumed from synchronous code).
///
/// `Synchronization.Mutex` would do, but it needs iOS 18 / macOS 15; Keel supports older systems. The lock
/// is a ``PlatformMutex``. Public so that an app on those systems has one too (the reference app keeps its
/// session tokens in one, read by a middleware on any thread).
///
/// ```swift
/// let tokens = Locked<[AccountID: String]>([:])
/// tokens.withLock { $0[account] = token }
/// let current = tokens.withLock { $0[account] }
/// ```
public final class Locked<Value>: @unchecked Sendable {
    // @unchecked Sendable: every access to `value` happens inside `lock`.
    private let lock = PlatformMutex()
    private var value: Value

    /// A lock around `value`.
    public init(_ value: Value) { self.value = value }

    /// Runs `body` with exclusive access to the value.
    public func withLock<Result, Failure: Error>(_ body: (inout Value) throws(Failure) -> Result) throws(Failure)
        -> Result
    {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }

    /// Runs `body` with exclusive access to the value when no other thread holds it; nil, without
    /// waiting, when one does.
    public func withLockIfAvailable<Result, Failure: Error>(_ body: (inout Value) throws(Failure) -> Result)
        throws(Failure) -> Result?
    {
        guard lock.tryLock() else { return nil }
        defer { lock.unlock() }
        return try body(&value)
    }
}
