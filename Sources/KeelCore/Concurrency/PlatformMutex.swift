// The platform adapter behind `Locked`: the only place in KeelCore that chooses a lock per platform.
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// A plain, non-recursive mutex.
///
/// On Linux a bare `pthread_mutex_t`: corelibs' `NSLock` also allocates and initializes a condition variable
/// and a second mutex (for `lock(before:)`), and a `Locked` is made for every exchange, attempt and wait — a
/// measurable share of a loopback GET (the same with Musl). Elsewhere `NSLock`, which is a bare pthread mutex
/// there already.
final class PlatformMutex: @unchecked Sendable {
    // @unchecked Sendable: a mutex is made to be shared between threads.
    #if canImport(Glibc) || canImport(Musl)
        private let mutex: UnsafeMutablePointer<pthread_mutex_t>

        init() {
            mutex = .allocate(capacity: 1)
            mutex.initialize(to: pthread_mutex_t())
            let status = pthread_mutex_init(mutex, nil)
            precondition(status == 0, "pthread_mutex_init failed (\(status))")
        }

        deinit {
            pthread_mutex_destroy(mutex)
            mutex.deinitialize(count: 1)
            mutex.deallocate()
        }

        func lock() { pthread_mutex_lock(mutex) }
        func tryLock() -> Bool { pthread_mutex_trylock(mutex) == 0 }
        func unlock() { pthread_mutex_unlock(mutex) }
    #else
        private let nsLock = NSLock()

        init() {}

        func lock() { nsLock.lock() }
        func tryLock() -> Bool { nsLock.try() }
        func unlock() { nsLock.unlock() }
    #endif
}
