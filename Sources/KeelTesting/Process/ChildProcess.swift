public import Foundation
public import KeelCore

/// A child process running an executable of this package, for process-death and CLI tests.
///
/// Launch it, talk to it over stdin, read its output line by line with a timeout, kill it with
/// `SIGKILL` at the moment the test chooses, and read how it ended.
///
/// ```swift
/// let child = try ChildProcess.launch(product: "keel", arguments: ["serve"])
/// let banner = try await child.nextLine(timeout: .seconds(10))
/// child.kill()
/// #expect(try await child.waitForExit() == .signaled(SIGKILL))
/// ```
///
/// Output is collected from the moment of launch, so no line is lost between calls.
///
/// The child runs in a process group of its own. Signals go to the whole group, and when the child
/// ends, whatever it started and left running is killed too, so no stray grandchild holds its pipes
/// open. Releasing a running `ChildProcess` kills the group (`SIGKILL`) and reaps the child; no process
/// or thread outlives the value.
///
/// ## Topics
/// - Launching: ``launch(product:arguments:environment:workingDirectory:)``,
///   ``launch(executable:arguments:environment:workingDirectory:)``, ``productsDirectory``
/// - Input: ``write(_:)``, ``writeLine(_:)``, ``closeInput()``
/// - Output: ``nextLine(from:timeout:)``, ``waitForLine(from:timeout:where:)``, ``output(of:)``
/// - Ending: ``kill(signal:)``, ``waitForExit(timeout:)``, ``termination``
@available(iOS, unavailable, message: "iOS apps cannot start processes")
@available(tvOS, unavailable)
@available(watchOS, unavailable)
public final class ChildProcess: Sendable {
    /// One of the child's output streams.
    public enum Stream: Sendable, CustomStringConvertible {
        case standardOutput, standardError
        /// `stdout` or `stderr`.
        public var description: String { self == .standardOutput ? "stdout" : "stderr" }
    }

    /// How the child ended.
    public enum Termination: Sendable, Equatable, CustomStringConvertible {
        /// It exited with this status.
        case exited(Int32)
        /// It was killed by this signal.
        case signaled(Int32)
        /// It ended, but its status was taken by someone else (another `waitpid`, or SIGCHLD ignored).
        case unknown

        /// How the child ended, in words (`exited with status 0`, `killed by signal 9`).
        public var description: String {
            switch self {
            case .exited(let status): "exited with status \(status)"
            case .signaled(let signal): "killed by signal \(signal)"
            case .unknown: "ended with an unknown status"
            }
        }
    }

    /// The signal numbers a test usually sends.
    public enum Signal {
        /// `SIGKILL`: the process dies at once, without running any of its code.
        public static var kill: Int32 { Spawn.sigkill }
        /// `SIGTERM`: a polite request to stop.
        public static var terminate: Int32 { Spawn.sigterm }
        /// `SIGINT`: what Ctrl-C sends.
        public static var interrupt: Int32 { Spawn.sigint }
    }

    /// The process id.
    public let pid: Int32
    /// The executable's path.
    public let executable: String

    private struct Output {
        var text: [UInt8] = []
        var lines: [String] = []
        var partial: [UInt8] = []
        var consumed = 0
        var isClosed = false
    }

    private struct State {
        var streams: [Stream: Output] = [.standardOutput: Output(), .standardError: Output()]
        var termination: Termination?
    }

    private let state = WaitableState(State())
    private let input: Locked<Int32?>
    private let threads: [POSIXThread]
    /// Written on release to stop the output pumps even if some process still holds the pipes.
    private let wake: (read: Int32, write: Int32)

    // MARK: - Launching

    /// Where the package's built products are: `KEEL_PRODUCTS_DIRECTORY` when set, otherwise the
    /// directory of the running test binary (`.build/<triple>/debug`).
    public static var productsDirectory: URL {
        if let override = ProcessInfo.processInfo.environment["KEEL_PRODUCTS_DIRECTORY"], !override.isEmpty {
            return URL(fileURLWithPath: override, isDirectory: true)
        }
        #if canImport(Darwin)
            // Under `swift test` on macOS the process is the `xctest` tool (XCTest) or SwiftPM's testing helper
            // (Swift Testing), not the test bundle: the loaded `.xctest` bundle says where the products are.
            if let bundle = Bundle.allBundles.first(where: { $0.bundlePath.hasSuffix(".xctest") }) {
                return bundle.bundleURL.deletingLastPathComponent()
            }
        #endif
        var directory = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
            .deletingLastPathComponent()
        // On Apple platforms the test binary sits inside `<Package>Tests.xctest/Contents/MacOS/`.
        var probe = directory
        while probe.pathComponents.count > 1 {
            if probe.pathExtension == "xctest" { directory = probe.deletingLastPathComponent() }
            probe = probe.deletingLastPathComponent()
        }
        return directory
    }

    /// Launches the package's executable product `product` (e.g. `"keel"`) from ``productsDirectory``.
    ///
    /// - Throws: ``ChildProcessError`` when the product is not built or cannot be started.
    public static func launch(
        product: String,
        arguments: [String] = [],
        environment: [String: String] = [:],
        workingDirectory: URL? = nil
    ) throws -> ChildProcess {
        let path = productsDirectory.appendingPathComponent(product).path
        guard FileManager.default.isExecutableFile(atPath: path) else {
            throw ChildProcessError(
                code: .notBuilt,
                message: "no executable \(product) at \(path); build the package first (swift build) "
                    + "or set KEEL_PRODUCTS_DIRECTORY"
            )
        }
        return try launch(
            executable: path, arguments: arguments, environment: environment, workingDirectory: workingDirectory)
    }

    /// Launches the executable at `path`. `environment` is added to (and overrides) this process's environment.
    ///
    /// - Throws: ``ChildProcessError`` when it cannot be started.
    public static func launch(
        executable path: String,
        arguments: [String] = [],
        environment: [String: String] = [:],
        workingDirectory: URL? = nil
    ) throws -> ChildProcess {
        try ChildProcess(path: path, arguments: arguments, environment: environment, workingDirectory: workingDirectory)
    }

    private init(path: String, arguments: [String], environment: [String: String], workingDirectory: URL?) throws {
        var descriptors: [Int32] = []
        func closeAll() { descriptors.forEach(POSIX.close) }
        do {
            let stdin = try POSIX.makeSocketPair()
            descriptors += [stdin.0, stdin.1]
            let stdout = try POSIX.makePipe()
            descriptors += [stdout.read, stdout.write]
            let stderr = try POSIX.makePipe()
            descriptors += [stderr.read, stderr.write]
            let wake = try POSIX.makePipe()
            descriptors += [wake.read, wake.write]
            let fullEnvironment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
            pid = try Spawn.start(
                path: path, arguments: arguments, environment: fullEnvironment,
                workingDirectory: workingDirectory?.path,
                stdin: stdin.1, stdout: stdout.write, stderr: stderr.write
            )
            // The child has its copies; keep only the parent's ends.
            [stdin.1, stdout.write, stderr.write].forEach(POSIX.close)
            executable = path
            input = Locked(stdin.0)
            self.wake = wake
            let state = self.state
            let pid = self.pid
            threads = [
                POSIXThread.spawn(name: "keel-child-out") {
                    Self.pump(stdout.read, into: .standardOutput, state: state, wake: wake.read)
                },
                POSIXThread.spawn(name: "keel-child-err") {
                    Self.pump(stderr.read, into: .standardError, state: state, wake: wake.read)
                },
                POSIXThread.spawn(name: "keel-child-wait") {
                    guard Spawn.waitUntilEnded(pid) else {
                        // Someone else reaped it: the pid may already be reused, so signal nothing.
                        state.withLock { $0.termination = .unknown }
                        return
                    }
                    // Ended but not reaped: the pid (and so the group id) cannot have been reused yet.
                    Spawn.sendToGroup(Spawn.sigkill, leader: pid)
                    // Reap under the lock that `kill` takes, so no signal can follow the pid's release.
                    state.withLock { $0.termination = Spawn.reap(pid) }
                },
            ]
        } catch {
            closeAll()
            throw ChildProcessError(code: .cannotStart, message: "cannot start \(path): \(error)")
        }
    }

    deinit {
        kill(signal: Signal.kill)
        closeInput()
        _ = POSIX.writeAll(wake.write, [1])
        threads.forEach { $0.join() }
        POSIX.close(wake.read)
        POSIX.close(wake.write)
    }

    // MARK: - Input

    /// Writes `text` (UTF-8) to the child's standard input. Blocks while the child's input buffer is full.
    ///
    /// - Throws: ``ChildProcessError`` when input was closed or the child is gone.
    public func write(_ text: String) throws {
        try write(Data(text.utf8))
    }

    /// Writes `bytes` as they are (input that is not UTF-8, say) to the child's standard input. Blocks while
    /// the child's input buffer is full.
    ///
    /// - Throws: ``ChildProcessError`` when input was closed or the child is gone.
    public func write(_ bytes: Data) throws {
        let ok = input.withLock { descriptor -> Bool in
            guard let descriptor else { return false }
            return bytes.withUnsafeBytes { POSIX.write(descriptor, $0) }
        }
        guard ok else {
            throw ChildProcessError(
                code: .cannotWrite, message: "cannot write to the standard input of \(executable) (pid \(pid))")
        }
    }

    /// Writes `line` and a newline to the child's standard input.
    public func writeLine(_ line: String) throws { try write(line + "\n") }

    /// Closes the child's standard input (it reads end-of-file). Idempotent.
    public func closeInput() {
        input.withLock { descriptor in
            if let open = descriptor { POSIX.close(open) }
            descriptor = nil
        }
    }

    // MARK: - Output

    /// The next line of `stream` not yet returned, without its newline; `nil` once the stream has ended.
    ///
    /// - Throws: ``WaitTimeout`` when no complete line arrives within `timeout` (real time).
    public func nextLine(from stream: Stream = .standardOutput, timeout: Duration = .seconds(10)) async throws
        -> String?
    {
        try await state.wait(timeout: timeout, for: "a line on \(stream) of \(executable)") { state -> String?? in
            let output = state.streams[stream]!
            if output.consumed < output.lines.count {
                state.streams[stream]!.consumed += 1
                return .some(output.lines[output.consumed])
            }
            return output.isClosed ? .some(nil) : nil
        }
    }

    /// Skips lines of `stream` until one satisfies `predicate`, and returns it.
    ///
    /// `predicate` runs under this value's lock, on whatever thread output arrives: it must not call back into
    /// this `ChildProcess` (``output(of:)``, another wait), which would deadlock.
    ///
    /// - Throws: ``WaitTimeout`` on timeout; ``ChildProcessError`` when the stream ends first.
    public func waitForLine(
        from stream: Stream = .standardOutput,
        timeout: Duration = .seconds(10),
        where predicate: @escaping @Sendable (String) -> Bool
    ) async throws -> String {
        let found = try await state.wait(timeout: timeout, for: "a matching line on \(stream) of \(executable)") {
            state -> String?? in
            var output = state.streams[stream]!
            defer { state.streams[stream] = output }
            while output.consumed < output.lines.count {
                let line = output.lines[output.consumed]
                output.consumed += 1
                if predicate(line) { return .some(line) }
            }
            return output.isClosed ? .some(nil) : nil
        }
        guard let found else {
            throw ChildProcessError(
                code: .streamEnded, message: "\(stream) of \(executable) ended without a matching line")
        }
        return found
    }

    /// Everything `stream` has produced so far, decoded as UTF-8.
    public func output(of stream: Stream) -> String {
        state.withLock { String(decoding: $0.streams[stream]!.text, as: UTF8.self) }
    }

    // MARK: - Ending

    /// Sends `signal` (default `SIGKILL`) to the child and its process group. Does nothing once it has ended.
    public func kill(signal: Int32 = Signal.kill) {
        state.withLock { state in
            if state.termination == nil { Spawn.sendToGroup(signal, leader: pid) }
        }
    }

    /// How the child ended, or nil while it runs.
    public var termination: Termination? { state.withLock { $0.termination } }

    /// Waits for the child to end, and for all of its output to be collected, and returns how it ended.
    ///
    /// - Throws: ``WaitTimeout`` when it is still running after `timeout` (real time).
    public func waitForExit(timeout: Duration = .seconds(30)) async throws -> Termination {
        try await state.wait(timeout: timeout, for: "\(executable) (pid \(pid)) to exit") { state in
            guard let termination = state.termination, state.streams.values.allSatisfy(\.isClosed) else { return nil }
            return termination
        }
    }

    // MARK: - Pumping output

    private static func pump(_ descriptor: Int32, into stream: Stream, state: WaitableState<State>, wake: Int32) {
        var chunk = [UInt8](repeating: 0, count: 8192)
        while true {
            let ready = POSIX.waitReadable([descriptor, wake], timeoutMilliseconds: -1)
            let count =
                ready.contains(0) ? chunk.withUnsafeMutableBytes { POSIX.readFile(descriptor, into: $0) } ?? 0 : 0
            state.withLock { state in
                var output = state.streams[stream]!
                defer { state.streams[stream] = output }
                if count == 0 {
                    if !output.partial.isEmpty { output.lines.append(String(decoding: output.partial, as: UTF8.self)) }
                    output.partial = []
                    output.isClosed = true
                    return
                }
                output.text += chunk[0..<count]
                for byte in chunk[0..<count] {
                    if byte == 10 {
                        if output.partial.last == 13 { output.partial.removeLast() }
                        output.lines.append(String(decoding: output.partial, as: UTF8.self))
                        output.partial = []
                    } else {
                        output.partial.append(byte)
                    }
                }
            }
            if count == 0 { break }
        }
        POSIX.close(descriptor)
    }
}

/// A child process could not be started or talked to.
public struct ChildProcessError: KeelError {
    /// Codes of ``ChildProcessError``.
    public typealias Code = ErrorCode<ChildProcessError>

    /// What went wrong.
    public let code: Code
    /// A short explanation.
    public let message: String
    /// A developer-facing explanation, prefixed with `ChildProcess:`.
    public var description: String { "ChildProcess: \(message)" }
}

extension ErrorCode where Domain == ChildProcessError {
    /// The package product is not built (or `KEEL_PRODUCTS_DIRECTORY` points elsewhere).
    public static var notBuilt: Self { Self("notBuilt") }
    /// The process could not be started.
    public static var cannotStart: Self { Self("cannotStart") }
    /// Its standard input could not be written (it exited or closed it).
    public static var cannotWrite: Self { Self("cannotWrite") }
    /// An output stream ended before the awaited line.
    public static var streamEnded: Self { Self("streamEnded") }
}
