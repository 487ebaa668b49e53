import Foundation
import KeelTesting
import KeelContract

/// `keel`: the Keel command-line tool.
@main
enum Keel {
    /// A subcommand: its name, one-line summary, usage text and entry point.
    struct Command: Sendable {
        let name: String
        let summary: String
        let usage: String
        let run: @Sendable ([String]) async throws -> Int32
    }

    static let commands: [Command] = [
        ServeCommand.command, FaultsCommand.command, SchemaCommand.command, ContractCommand.command,
        InventoryCommand.command, VaultCommand.command, NavigationCommand.command, TraceCommand.command,
        ReleaseGateCommand.command, BackendCommand.command, DemoCommand.command,
    ]

    /// The width of the subcommand column in the usage text (the longest name and two spaces).
    private static let nameWidth = (commands.map(\.name.count).max() ?? 0) + 2

    static let usage = """
        USAGE: keel <subcommand> [options]

        Keel gives a mobile app the layer between its screens and its backend.
        This tool runs the parts of it that work from a terminal.

        SUBCOMMANDS:
        \(commands.map { "  " + $0.name.padding(toLength: nameWidth, withPad: " ", startingAt: 0) + $0.summary }.joined(separator: "\n"))

        OPTIONS:
          -h, --help  Show help for keel or for a subcommand (keel <subcommand> --help).
          --version   Show the version.

        """

    static let version = "0.1.0"

    static func main() async {
        let arguments = Array(CommandLine.arguments.dropFirst())
        exit(await run(arguments))
    }

    static func run(_ arguments: [String]) async -> Int32 {
        guard let first = arguments.first else {
            FileHandle.standardError.write(usage)
            return 2
        }
        switch first {
        case "-h", "--help":
            say(usage, terminator: "")
            return 0
        case "help":
            guard let name = arguments.dropFirst().first else {
                say(usage, terminator: "")
                return 0
            }
            guard let command = commands.first(where: { $0.name == name }) else {
                return usageFailure("unknown subcommand '\(name)'", usage: usage)
            }
            say(command.usage, terminator: "")
            return 0
        case "--version":
            say("keel \(version)")
            return 0
        default:
            break
        }
        guard let command = commands.first(where: { $0.name == first }) else {
            return usageFailure(
                first.hasPrefix("-") ? "unknown option '\(first)'" : "unknown subcommand '\(first)'", usage: usage)
        }
        let rest = Array(arguments.dropFirst())
        // `keel trace --help` (before a subcommand's own verb); elsewhere the subcommand's argument parser
        // decides, so `--help` as an option's value or after `--` is not a help request.
        if rest.first == "--help" || rest.first == "-h" {
            say(command.usage, terminator: "")
            return 0
        }
        do {
            return try await command.run(rest)
        } catch let error as UsageError where error.isHelpRequest {
            say(command.usage, terminator: "")
            return 0
        } catch let error as UsageError {
            return usageFailure(error.description, usage: command.usage)
        } catch {
            return fail("\(error)", status: 1)
        }
    }

    private static func usageFailure(_ message: String, usage: String) -> Int32 {
        FileHandle.standardError.write("error: \(message)\n\n\(usage)")
        return 2
    }
}

extension FileHandle {
    func write(_ text: String) { write(Data(text.utf8)) }
}

/// Writes `text` to standard output at once (unbuffered), so a reader of a pipe sees each line as it is said.
/// A reader that went away (EPIPE, where SIGPIPE is ignored: `serve`, `backend`) loses the text; the command
/// goes on (FileHandle's write would trap on the error).
func say(_ text: String, terminator: String = "\n") {
    _ = POSIX.writeAll(1, Array((text + terminator).utf8))
}

/// Writes `value` to standard output as pretty-printed JSON (sorted keys, unescaped slashes).
func sayJSON(_ value: some Encodable) throws {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
    say(String(decoding: try encoder.encode(value), as: UTF8.self))
}

/// Calls `stop` on SIGTERM or SIGINT (and SIGHUP where asked) instead of letting the default action end the
/// process, so that a long-running command shuts down cleanly. ``TerminationSignals/restore()`` gives the
/// signals their default action back (a second Ctrl-C during shutdown then ends the process).
final class TerminationSignals {
    /// SIGTERM and SIGINT: what every long-running command handles.
    static let standard = [SIGTERM, SIGINT]
    /// SIGHUP too, for a command that leaves data behind when it is killed: the terminal it ran in closed (a
    /// dropped ssh session) stops it as SIGTERM does (found in an outside audit: `keel demo` left its
    /// directory). A SIGHUP ignored when the process started (`nohup`) stays ignored.
    static let withHangUp = [SIGTERM, SIGINT, SIGHUP]
    private let numbers: [Int32]
    private let sources: [any DispatchSourceSignal]

    convenience init(_ numbers: [Int32] = standard, _ stop: @escaping @Sendable () -> Void) {
        self.init(numbers) { (_: Int32) in stop() }
    }

    /// Calls `stop` with the signal's number.
    init(_ numbers: [Int32] = standard, _ stop: @escaping @Sendable (Int32) -> Void) {
        self.numbers = numbers.filter { number in
            let previous = signal(number, SIG_IGN)
            // Ignored by whoever started this process (nohup ignores SIGHUP): left ignored.
            return number != SIGHUP || unsafeBitCast(previous, to: Int.self) != unsafeBitCast(SIG_IGN, to: Int.self)
        }
        sources = self.numbers.map { number in
            let source = DispatchSource.makeSignalSource(signal: number)
            source.setEventHandler { stop(number) }
            source.resume()
            return source
        }
    }

    func restore() {
        sources.forEach { $0.cancel() }
        for number in numbers { signal(number, SIG_DFL) }
    }
}

/// Hands `body` each line of standard input (without its line ending) until it returns false or input ends.
/// Reads file descriptor 0 with read(2): a thread blocked here holds no stdio lock, so exiting never waits
/// for it (`readLine()` blocks in getline holding stdin's lock, and some C libraries lock every stream at
/// exit). Returns the `errno` of a read that failed (standard input a directory, say), after the lines read
/// before it; nil when input ended or `body` stopped it.
@discardableResult
func forEachStandardInputLine(_ body: (String) -> Bool) -> Int32? {
    forEachStandardInputLineBytes { body(textLine($0)) }
}

/// ``forEachStandardInputLine(_:)`` with each line's bytes (without its line ending), for a reader that
/// refuses a line that is not UTF-8 instead of reading it with replacement characters.
@discardableResult
func forEachStandardInputLineBytes(_ body: (ArraySlice<UInt8>) -> Bool) -> Int32? {
    var pending: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 4096)
    var failure: Int32?
    // Only the bytes a read added are searched for a line end, and the lines taken are removed once per read
    // (found in an outside audit: rescanning a long line's bytes after every 4 KiB took 177 s for 8 MiB).
    var searched = 0
    while true {
        let count = buffer.withUnsafeMutableBytes { read(0, $0.baseAddress, $0.count) }
        if count < 0 && errno == EINTR { continue }
        if count < 0 { failure = errno }
        guard count > 0 else { break }
        pending.append(contentsOf: buffer[..<count])
        var start = 0
        while let newline = pending[searched...].firstIndex(of: UInt8(ascii: "\n")) {
            let line = lineBytes(pending[start..<newline])
            start = newline + 1
            searched = start
            if !body(line) { return nil }
        }
        pending.removeFirst(start)
        searched = pending.count
    }
    if !pending.isEmpty, !body(lineBytes(pending[...])) { return nil }
    return failure
}

/// A line split off at its "\n" byte, without a trailing "\r".
func lineBytes(_ bytes: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
    bytes.last == UInt8(ascii: "\r") ? bytes.dropLast() : bytes
}

/// One line of text split off at its "\n" byte, without a trailing "\r" (lines are split on the byte: in a
/// Swift string "\r\n" is one character, which "\n" never matches).
func textLine<Bytes: BidirectionalCollection<UInt8>>(_ bytes: Bytes) -> String {
    String(decoding: bytes.last == UInt8(ascii: "\r") ? bytes.dropLast() : bytes[...], as: UTF8.self)
}

/// Writes "error: `message`" to standard error and returns `status`, the exit status to return.
func fail(_ message: String, status: Int32 = 2) -> Int32 {
    FileHandle.standardError.write("error: \(message)\n")
    return status
}

/// Why `data`, a hand-written JSON input (an inventory, a navigation contract, a vault schema, a response
/// script), cannot be read as one, or nil when it can: not JSON, or a member name used twice in one object.
/// Foundation's `JSONDecoder` keeps one of two repeated members silently, so a reviewer could read one value
/// while the gate checked the other; Keel's own parser refuses them, with the position.
/// A number beyond what a `Double` holds (`1e400`) is refused here too, where it is named: Foundation would
/// only say the data "was not valid JSON".
func strictJSONProblem(_ data: Data) -> String? {
    let value: JSONValue
    do { value = try JSONValue(parsing: data) } catch { return "not valid JSON: \(error.description)" }
    func outOfRange(_ value: JSONValue, at pointer: String) -> String? {
        switch value {
        case .number(let number) where !number.double.isFinite:
            return
                "not usable: the number \(number.literal) at \(pointer.isEmpty ? "the top level" : pointer) is out of range"
        case .array(let elements):
            for (index, element) in elements.enumerated() {
                if let problem = outOfRange(element, at: pointer + "/\(index)") { return problem }
            }
        case .object(let object):
            for (name, member) in object {
                if let problem = outOfRange(member, at: pointer + "/" + JSONPointer.escape(name)) { return problem }
            }
        default: break
        }
        return nil
    }
    return outOfRange(value, at: "")
}
