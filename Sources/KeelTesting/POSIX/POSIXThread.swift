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

    /// Starts `body` on a new thread named `name` (at most 15 characters are kept on Linux). Traps when the
    /// system cannot create a thread; see ``trySpawn(name:_:)``.
    package static func spawn(name: String, _ body: @escaping @Sendable () -> Void) -> POSIXThread {
        switch trySpawn(name: name, body) {
        case .success(let thread): return thread
        case .failure(let error): preconditionFailure("pthread_create failed: \(POSIX.describe(errno: error.code))")
        }
    }

    /// Why a thread was not created (`pthread_create`'s error: EAGAIN when the process or the system has no
    /// thread or memory to spare).
    package struct SpawnFailure: Error {
        package let code: Int32
        package init(code: Int32) { self.code = code }
    }

    /// Starts `body` on a new thread named `name`, or says why the system could not create one (a server
    /// serving a connection per thread turns that into a closed connection, not a crash).
    package static func trySpawn(name: String, _ body: @escaping @Sendable () -> Void) -> Result<
        POSIXThread, SpawnFailure
    > {
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
        guard result == 0 else {
            Unmanaged<Start>.fromOpaque(start).release()  // the thread never started: nobody else takes it
            return .failure(SpawnFailure(code: result))
        }
        thread.handle = handle
        return .success(thread)
    }

    /// Waits for the thread to finish. Call once.
    package func join() {
        guard let handle else { return }
        self.handle = nil
        pthread_join(handle, nil)
    }

    /// Lets the thread end on its own, its resources freed when it does (it is never joined): for the thread
    /// that runs the code stopping its owner (a server shut down from one of its connection threads).
    package func detach() {
        guard let handle else { return }
        self.handle = nil
        pthread_detach(handle)
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
