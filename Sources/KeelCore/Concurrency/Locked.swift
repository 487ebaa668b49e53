import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// A value guarded by a lock, for state shared between threads that cannot live in an actor
/// (socket threads, clock sleepers resumed from synchronous code).
///
/// `Synchronization.Mutex` would do, but it needs iOS 18 / macOS 15; Keel supports older systems. On
/// Linux the lock is a bare `pthread_mutex_t`: corelibs' `NSLock` also allocates and initializes a condition
/// variable and a second mutex (for `lock(before:)`), and a `Locked` is made for every exchange, attempt and
/// wait — a measurable share of a loopback GET.
package final class Locked<Value>: @unchecked Sendable {
    // @unchecked Sendable: every access to `value` happens inside `lock`.
    #if os(Linux)
        private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    #else
        private let lock = NSLock()
    #endif
    private var value: Value

    package init(_ value: Value) {
        self.value = value
        #if os(Linux)
            mutex = .allocate(capacity: 1)
            mutex.initialize(to: pthread_mutex_t())
            let status = pthread_mutex_init(mutex, nil)
            precondition(status == 0, "pthread_mutex_init failed (\(status))")
        #endif
    }

    #if os(Linux)
        deinit {
            pthread_mutex_destroy(mutex)
            mutex.deinitialize(count: 1)
            mutex.deallocate()
        }
    #endif

    /// Runs `body` with exclusive access to the value.
    package func withLock<Result, Failure: Error>(_ body: (inout Value) throws(Failure) -> Result) throws(Failure)
        -> Result
    {
        acquire()
        defer { release() }
        return try body(&value)
    }

    /// Runs `body` with exclusive access to the value when no other thread holds it; nil, without
    /// waiting, when one does.
    package func withLockIfAvailable<Result, Failure: Error>(_ body: (inout Value) throws(Failure) -> Result)
        throws(Failure) -> Result?
    {
        guard tryAcquire() else { return nil }
        defer { release() }
        return try body(&value)
    }

    #if os(Linux)
        private func acquire() { pthread_mutex_lock(mutex) }
        private func tryAcquire() -> Bool { pthread_mutex_trylock(mutex) == 0 }
        private func release() { pthread_mutex_unlock(mutex) }
    #else
        private func acquire() { lock.lock() }
        private func tryAcquire() -> Bool { lock.try() }
        private func release() { lock.unlock() }
    #endif
}
