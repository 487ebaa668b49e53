public import Foundation
public import KeelContract
public import KeelCore
public import KeelTesting

/// One `keel-notes` process — a device with its own data and key directories — driven one command line at a
/// time, as `keel demo` and the end-to-end tests drive it. Killing it is a real SIGKILL; ``relaunched(_:)``
/// starts a new process on the same directories, as an app is started again by its user.
public final class NotesDevice: Sendable {
    /// The device's name (its `--device`).
    public let name: String
    /// Its data directory.
    public let data: URL
    /// Its key directory.
    public let keys: URL
    /// The backend it talks to.
    public let server: URL
    /// The `keel-notes` executable.
    public let executable: String
    /// Extra arguments of this launch (`--app-version`, `--time-offset`, `--public`).
    public let arguments: [String]
    /// The running process.
    public let process: ChildProcess

    /// Starts `keel-notes` for a device named `name` with its directories under `directory`.
    ///
    /// - Throws: ``KeelTesting/ChildProcessError`` when the executable cannot be started.
    public convenience init(
        name: String, directory: URL, server: URL, executable: String, arguments: [String] = []
    ) throws {
        try self.init(
            name: name, data: directory.appendingPathComponent("\(name)-data"),
            keys: directory.appendingPathComponent("\(name)-keys"), server: server, executable: executable,
            arguments: arguments)
    }

    private init(name: String, data: URL, keys: URL, server: URL, executable: String, arguments: [String]) throws {
        self.name = name
        self.data = data
        self.keys = keys
        self.server = server
        self.executable = executable
        self.arguments = arguments
        process = try ChildProcess.launch(
            executable: executable,
            arguments: ["--data", data.path, "--keys", keys.path, "--server", server.absoluteString, "--device", name]
                + arguments)
    }

    /// The same device started again on the same directories (after a kill or a quit), optionally against
    /// another server URL or with other arguments.
    public func relaunched(server: URL? = nil, arguments: [String]? = nil) throws -> NotesDevice {
        try NotesDevice(
            name: name, data: data, keys: keys, server: server ?? self.server, executable: executable,
            arguments: arguments ?? self.arguments)
    }

    /// Sends one command line and returns its one JSON answer.
    ///
    /// - Throws: ``NotesDemoError`` (`noAnswer`, `badAnswer`) when the process ends or stays silent for `timeout`, or answers
    ///   something that is not JSON; `CancellationError` when the task is cancelled while it waits.
    public func run(_ command: String, timeout: Duration = .seconds(30)) async throws -> JSONValue {
        try send(command)
        return try await answer(to: command, timeout: timeout)
    }

    /// Sends one command line without waiting for its answer (to kill the process while it works).
    public func send(_ command: String) throws {
        do { try process.writeLine(command) } catch {
            throw NotesDemoError(code: .noAnswer, message: "\(name) cannot take '\(command)': \(error)")
        }
    }

    /// Reads the answer to a command sent with ``send(_:)``.
    public func answer(to command: String, timeout: Duration = .seconds(30)) async throws -> JSONValue {
        let line: String?
        do { line = try await process.nextLine(timeout: timeout) } catch is CancellationError {
            // The run was stopped (Ctrl-C): not a device that failed to answer (found in an outside audit).
            throw CancellationError()
        } catch {
            throw NotesDemoError(code: .noAnswer, message: "\(name) did not answer '\(command)' within \(timeout)")
        }
        guard let line else {
            let errors = process.output(of: .standardError).suffix(600)
            throw NotesDemoError(code: .noAnswer, message: "\(name) ended without answering '\(command)'. \(errors)")
        }
        do { return try JSONValue(parsing: Data(line.utf8)) } catch {
            throw NotesDemoError(
                code: .badAnswer, message: "\(name) answered '\(command)' with something that is not JSON: \(line)")
        }
    }

    /// SIGKILL, and waits until the process is gone.
    public func kill() async throws {
        process.kill()
        _ = try await process.waitForExit(timeout: .seconds(10))
    }

    /// `quit`, and waits for a clean exit.
    public func quit() async throws {
        _ = try await run("quit")
        _ = try await process.waitForExit(timeout: .seconds(10))
    }
}

/// Why a demo or end-to-end run could not go on: a process that did not answer as it must, a backend that
/// could not be started or inspected.
public struct NotesDemoError: KeelError, Equatable {
    /// Codes of ``NotesDemoError``.
    public typealias Code = ErrorCode<NotesDemoError>
    /// What went wrong.
    public let code: Code
    /// What, for people.
    public let message: String

    /// An error of kind `code`.
    public init(code: Code, message: String) {
        self.code = code
        self.message = message
    }

    /// `notes demo noAnswer: ...`.
    public var description: String { "notes demo \(code): \(message)" }
}

extension ErrorCode where Domain == NotesDemoError {
    /// A process ended, or stayed silent, instead of answering.
    public static var noAnswer: Self { Self("noAnswer") }
    /// A process answered something that is not what its contract says.
    public static var badAnswer: Self { Self("badAnswer") }
    /// The backend could not be started or inspected.
    public static var backend: Self { Self("backend") }
    /// An executable the demo needs is not built.
    public static var notBuilt: Self { Self("notBuilt") }
}
