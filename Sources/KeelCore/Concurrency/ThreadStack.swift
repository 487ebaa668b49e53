import Foundation

#if canImport(CThreadStack)
    import CThreadStack
#elseif canImport(Darwin)
    import Darwin
#endif

/// How much of the current thread's stack is left: recursive evaluators check it, so that hostile input
/// nested within their own depth limits still ends with an error, not a stack overflow, on threads with
/// small stacks (512 KiB on Apple platforms' secondary threads; a debug build's frames are several times
/// larger than a release build's).
package struct ThreadStack: Sendable {
    /// Below this address the thread's stack keeps only its safety margin; nil when the bounds are unknown.
    private let limit: UInt?

    /// The stack of the calling thread, keeping `margin` bytes in reserve.
    package init(margin: Int = 128 * 1024) {
        limit = Self.lowestAddress().map { $0 + UInt(margin) }
    }

    /// The calling thread's stack, found once per thread and kept with it: finding it is a system call, and
    /// on Linux's main thread a read of /proc/self/maps.
    package static var current: ThreadStack {
        let values = Thread.current.threadDictionary
        if let cached = values[cacheKey] as? ThreadStack { return cached }
        let stack = ThreadStack()
        values[cacheKey] = stack
        return stack
    }

    private static let cacheKey = "keel.threadStack"

    /// Whether the calling thread (the one that made this value) is down to its safety margin.
    @inline(never)
    package func isNearlyExhausted() -> Bool {
        guard let limit else { return false }
        var marker: UInt8 = 0
        return withUnsafeMutablePointer(to: &marker) { UInt(bitPattern: $0) } < limit
    }

    private static func lowestAddress() -> UInt? {
        #if canImport(CThreadStack)
            let low = keel_thread_stack_low()
            return low == 0 ? nil : UInt(low)
        #elseif canImport(Darwin)
            let top = UInt(bitPattern: pthread_get_stackaddr_np(pthread_self()))
            return top - UInt(pthread_get_stacksize_np(pthread_self()))
        #else
            return nil
        #endif
    }
}
