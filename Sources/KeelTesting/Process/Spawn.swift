// Thin adapter over posix_spawn and waitpid for ChildProcess. The platform ladder lives here.
#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#else
    #error("KeelTesting needs posix_spawn")
#endif

@available(iOS, unavailable, message: "iOS apps cannot start processes")
@available(tvOS, unavailable)
@available(watchOS, unavailable)
enum Spawn {
    /// Starts `path` with `arguments` (not including argv[0]) and `environment`, with its standard
    /// streams connected to the given descriptors. Returns the process id.
    static func start(
        path: String,
        arguments: [String],
        environment: [String: String],
        workingDirectory: String?,
        stdin: Int32,
        stdout: Int32,
        stderr: Int32
    ) throws(POSIX.Failure) -> pid_t {
        #if canImport(Darwin)
            var actions: posix_spawn_file_actions_t?
            var attributes: posix_spawnattr_t?
        #else
            var actions = posix_spawn_file_actions_t()
            var attributes = posix_spawnattr_t()
        #endif
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, stdin, 0)
        posix_spawn_file_actions_adddup2(&actions, stdout, 1)
        posix_spawn_file_actions_adddup2(&actions, stderr, 2)
        // The child must inherit nothing else: a descriptor another test opened at the same moment
        // (before it could be marked close-on-exec) would otherwise keep that test's pipes and sockets
        // alive in this child.
        #if canImport(Glibc) || canImport(Musl)
            _ = addCloseFrom(&actions, 3)
        #endif
        if let workingDirectory {
            #if canImport(Darwin)
                if #available(macOS 10.15, *) { posix_spawn_file_actions_addchdir_np(&actions, workingDirectory) }
            #else
                guard addChangeDirectory(&actions, workingDirectory) else {
                    throw POSIX.Failure(call: "posix_spawn_file_actions_addchdir_np", errno: ENOSYS)
                }
            #endif
        }

        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // The child starts with default signal dispositions and an empty mask, whatever the test runner set.
        var defaults = sigset_t()
        sigfillset(&defaults)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        var empty = sigset_t()
        sigemptyset(&empty)
        posix_spawnattr_setsigmask(&attributes, &empty)
        // Its own process group, so that killing the child kills whatever it started too.
        posix_spawnattr_setpgroup(&attributes, 0)
        #if canImport(Darwin)
            posix_spawnattr_setflags(
                &attributes,
                Int16(
                    POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_CLOEXEC_DEFAULT
                ))
        #else
            posix_spawnattr_setflags(
                &attributes, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETPGROUP))
        #endif

        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var pid = pid_t()
        let result = posix_spawn(&pid, path, &actions, &attributes, argv, envp)
        guard result == 0 else { throw POSIX.Failure(call: "posix_spawn(\(path))", errno: result) }
        return pid
    }

    /// Sends `signal` to every process in the process group led by `pid`.
    static func sendToGroup(_ signal: Int32, leader pid: pid_t) {
        _ = kill(-pid, signal)
    }

    /// Waits (blocking) until `pid` has ended, without reaping it: until it is reaped, its pid cannot be
    /// reused, so a signal sent meanwhile cannot reach an unrelated process. False when the wait failed
    /// (someone else reaped the child, or SIGCHLD is ignored); then nothing is known about the pid.
    static func waitUntilEnded(_ pid: pid_t) -> Bool {
        var info = siginfo_t()
        while waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT) < 0 {
            if errno != EINTR { return false }
        }
        return true
    }

    /// Reaps the ended `pid` and returns how it ended; `.unknown` when it could not be reaped.
    static func reap(_ pid: pid_t) -> ChildProcess.Termination {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            if errno != EINTR { return .unknown }
        }
        // WIFEXITED / WTERMSIG are macros; decode the status word by hand.
        let signal = status & 0x7F
        if signal == 0 { return .exited((status >> 8) & 0xFF) }
        return .signaled(signal)
    }

    static var sigkill: Int32 { SIGKILL }
    static var sigterm: Int32 { SIGTERM }
    static var sigint: Int32 { SIGINT }
}

#if canImport(Glibc) || canImport(Musl)
    /// `posix_spawn_file_actions_addclosefrom_np` (glibc 2.34+) is not exported by the Glibc module; look it
    /// up. Returns false on an older C library (the child then relies on close-on-exec alone).
    private func addCloseFrom(_ actions: inout posix_spawn_file_actions_t, _ lowest: Int32) -> Bool {
        typealias AddCloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np")
        else {
            return false
        }
        return unsafeBitCast(symbol, to: AddCloseFrom.self)(&actions, lowest) == 0
    }

    /// `posix_spawn_file_actions_addchdir_np` (glibc 2.29+) is not exported by the Glibc module; look it up.
    private func addChangeDirectory(_ actions: inout posix_spawn_file_actions_t, _ path: String) -> Bool {
        typealias AddChdir =
            @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, UnsafePointer<CChar>) -> Int32
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addchdir_np") else {
            return false
        }
        let function = unsafeBitCast(symbol, to: AddChdir.self)
        return path.withCString { function(&actions, $0) } == 0
    }
#endif
