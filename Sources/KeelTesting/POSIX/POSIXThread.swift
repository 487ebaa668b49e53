// A joinable OS thread. Foundation's `Thread` cannot be joined, and the test server must prove it
// leaves no thread behind, so it owns pthreads directly.
#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#else
    #error("KeelTesting needs POSIX threads")
#endif

package final class POSIXThread: @unchecked Sendable {
    // @unchecked Sendable: `handle` is written once in `spawn`, before the object is shared. `join`
    // (called once, by the owner) clears it; `isCurrent` may read it from other threads, which is only
    // done by the owner before it joins (TestServer.shutdown), never concurrently with `join`.
    private var handle: pthread_t?

    private final class Start {
        let name: String
        let body: () -> Void
        init(name: String, body: @escaping () -> Void) {
            self.name = name
            self.body = body
        }
    }

    private init() {}

    /// Starts `body` on a new thread named `name` (at most 15 characters are kept on Linux).
    package static func spawn(name: String, _ body: @escaping @Sendable () -> Void) -> POSIXThread {
        let thread = POSIXThread()
        let start = Unmanaged.passRetained(Start(name: name, body: body)).toOpaque()
        #if canImport(Darwin)
            var handle: pthread_t?
        #else
            var handle = pthread_t()
        #endif
        let result = pthread_create(
            &handle, nil,
            { argument in
                #if canImport(Darwin)
                    let start = Unmanaged<Start>.fromOpaque(argument).takeRetainedValue()
                    _ = start.name.withCString { pthread_setname_np($0) }
                #else
                    let start = Unmanaged<Start>.fromOpaque(argument!).takeRetainedValue()
                    nameCurrentThread(start.name)
                #endif
                start.body()
                return nil
            }, start)
        precondition(result == 0, "pthread_create failed: \(POSIX.describe(errno: result))")
        thread.handle = handle
        return thread
    }

    /// Waits for the thread to finish. Call once.
    package func join() {
        guard let handle else { return }
        self.handle = nil
        pthread_join(handle, nil)
    }

    /// Whether the calling thread is this thread.
    package var isCurrent: Bool {
        guard let handle else { return false }
        return pthread_equal(handle, pthread_self()) != 0
    }
}

#if canImport(Glibc) || canImport(Musl)
    /// Names the calling thread through procfs: Glibc's module does not export `pthread_setname_np`.
    private func nameCurrentThread(_ name: String) {
        let fd = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
        guard fd >= 0 else { return }
        _ = POSIX.writeAll(fd, Array(name.utf8.prefix(15)))
        POSIX.close(fd)
    }
#endif
