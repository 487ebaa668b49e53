// keel-notes: Keel's reference notes app on the command line. One command per line from standard input (or
// --script FILE); exactly one JSON object per command on standard output, flushed per line.
//
//   keel-notes --data DIR --keys DIR --server URL [--device NAME] [--app-version V] [--script FILE]
//              [--public URL] [--time-offset SECONDS]
//
// --public names the host of published notes' pages (another origin: no token, no trace context reach it);
// --time-offset shifts the app's wall clock (a device that comes back hours later, for staleness).
//
// Commands: signin ACCOUNT · switch ACCOUNT · signout · delete-account · new TITLE · edit ID TEXT · tag ID TAG ·
// pin ID · list · sync · online · offline · foreground · retry · discard ID · conflicts ·
// resolve ID mine|theirs|merged TEXT ·
// open-link URL · notification ID ·
// open ID · editor ID · type TEXT · back systemBack|gesture|appButton|modalDismiss · screen · publish ID ·
// version · launch · help · quit
import Foundation
import KeelContract
import KeelCore
import KeelReference

/// The command language, one command per line (`help` answers it too).
let commands = [
    "signin ACCOUNT", "switch ACCOUNT", "signout", "delete-account", "new TITLE", "edit ID TEXT", "tag ID TAG",
    "pin ID", "list", "sync", "online", "offline", "foreground", "retry", "discard ID", "conflicts",
    "resolve ID mine|theirs|merged TEXT", "open-link URL", "notification ID", "open ID", "editor ID", "type TEXT",
    "back systemBack|gesture|appButton|modalDismiss", "screen", "publish ID", "version", "launch", "help", "quit",
]

let usage =
    "usage: keel-notes --data DIR --keys DIR --server URL [--device NAME] [--app-version V] [--script FILE] "
    + "[--public URL] [--time-offset SECONDS]\n"

/// `--help`: the options and the commands read from standard input (or the script).
let help =
    usage + "\nOne command per line on standard input (or --script FILE); one JSON object answers each:\n"
    + commands.map { "  \($0)\n" }.joined()

func usageError(_ message: String) -> Never {
    FileHandle.standardError.write(Data(("error: \(message)\n" + usage).utf8))
    exit(2)
}

/// The options, checked: a misspelt or unknown option, a stray argument, an option given twice or without its
/// value is a usage error (exit 2) — never ignored, with stdin read in place of a script that was asked for.
let options: [String: String] = {
    let known: Set<String> = ["data", "keys", "server", "device", "app-version", "script", "public", "time-offset"]
    var options: [String: String] = [:]
    var arguments = CommandLine.arguments.dropFirst()
    while let argument = arguments.popFirst() {
        if argument == "--help" || argument == "-h" {
            FileHandle.standardOutput.write(Data(help.utf8))
            exit(0)
        }
        guard argument.hasPrefix("--") else { usageError("unexpected argument '\(argument)'") }
        var name = String(argument.dropFirst(2))
        var value: String?
        if let equals = name.firstIndex(of: "=") {
            value = String(name[name.index(after: equals)...])
            name = String(name[..<equals])
        }
        guard known.contains(name) else { usageError("unknown option '--\(name)'") }
        guard options[name] == nil else { usageError("option '--\(name)' is given more than once") }
        if value == nil, let next = arguments.first, !next.hasPrefix("--") {
            value = next
            arguments.removeFirst()
        }
        guard let value else { usageError("option '--\(name)' needs a value") }
        options[name] = value
    }
    return options
}()

func option(_ name: String) -> String? { options[name] }

func say(_ object: JSONObject) {
    FileHandle.standardOutput.write(Data(JSONValue.object(object).serialized() + [0x0A]))
}

/// `text` as an http(s) URL with a host, or nil.
func webURL(_ text: String) -> URL? {
    guard let url = URL(string: text), ["http", "https"].contains(url.scheme?.lowercased() ?? ""),
        url.host?.isEmpty == false
    else { return nil }
    return url
}

guard let data = option("data"), let keys = option("keys"), let serverText = option("server") else {
    usageError("--data, --keys and --server are required")
}
guard let server = webURL(serverText) else {
    usageError("--server needs an http(s) URL, not '\(serverText)'")
}
guard let version = AppVersion(option("app-version") ?? "1.0") else {
    FileHandle.standardError.write(Data("error: --app-version needs a version like 1.0\n".utf8))
    exit(2)
}

guard let offset = Double(option("time-offset") ?? "0"), offset.isFinite else {
    FileHandle.standardError.write(Data("error: --time-offset needs a number of seconds\n".utf8))
    exit(2)
}
let publicPages = option("public").flatMap(webURL)
if let text = option("public"), publicPages == nil {
    usageError("--public needs an http(s) URL, not '\(text)'")
}
// A directory option naming a file is a usage error, not a vault "damaged" at launch (exit 1).
for name in ["data", "keys"] {
    var isDirectory: ObjCBool = false
    if let path = option(name), FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory),
        !isDirectory.boolValue
    {
        usageError("--\(name) needs a directory; \(path) is a file")
    }
}

let app: NotesApp
do {
    // The directories the app keeps itself (vaults and keys) are made here with their parents, as a
    // first launch makes them in an app's container; the stores then make their own with their modes.
    for directory in [data, keys] {
        let parent = URL(fileURLWithPath: directory).deletingLastPathComponent()
        try FileManager.default.createDirectory(at: parent, withIntermediateDirectories: true)
    }
    app = try NotesApp(
        .init(
            data: URL(fileURLWithPath: data), keys: URL(fileURLWithPath: keys), server: server,
            publicPages: publicPages, device: option("device") ?? "device", appVersion: version,
            clock: offset == 0 ? .system : WallClock { Date().addingTimeInterval(offset) }))
} catch {
    FileHandle.standardError.write(Data("error: \(error)\n".utf8))
    exit(1)
}

var script: [String]? = nil
if let path = option("script") {
    guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
        FileHandle.standardError.write(Data("error: cannot read \(path)\n".utf8))
        exit(2)
    }
    // Lines end in LF or CRLF (a script written on Windows). Split on the LF byte — Swift's "\n" does not split
    // "\r\n", one Character, and `isNewline` would also split a note's text at U+2028 or a form feed.
    script = text.utf8.split(separator: 10, omittingEmptySubsequences: true).map { line in
        String(decoding: line.last == 13 ? line.dropLast() : line, as: UTF8.self)
    }.filter { !$0.isEmpty }
}
// The launch's outcome is said, not dropped: an account whose data cannot be read (a key that is gone, a
// damaged vault) would otherwise show only as "sign in first" (found in an outside audit). It goes to standard
// error, as one JSON object, so that standard output keeps one answer per command; `launch` answers it too.
let launched = await app.launch()
if launched["ok"] != true {
    FileHandle.standardError.write(Data("launch: ".utf8 + JSONValue.object(launched).serialized() + [0x0A]))
}

/// Standard input's lines as bytes, read with read(2): a line that is not UTF-8 is refused, not read with
/// replacement characters (`readLine()` turned "signin \xff" and "signin \xfe" into one account "\u{FFFD}":
/// found in an outside audit).
struct StandardInputLines {
    private var pending: [UInt8] = []
    private var ended = false

    /// The next line without its "\n" (nor a "\r" before it), or nil at the end of input.
    mutating func next() -> ArraySlice<UInt8>? {
        var searched = 0
        while true {
            if let newline = pending[searched...].firstIndex(of: 0x0A) {
                let line = pending[..<newline]
                defer { pending.removeFirst(newline + 1) }
                return ArraySlice(line.last == 0x0D ? line.dropLast() : line)
            }
            searched = pending.count
            guard !ended else { break }
            var buffer = [UInt8](repeating: 0, count: 4096)
            let count = buffer.withUnsafeMutableBytes { read(0, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            if count <= 0 {
                ended = true
            } else {
                pending.append(contentsOf: buffer[..<count])
            }
        }
        guard !pending.isEmpty else { return nil }
        defer { pending.removeAll() }
        return ArraySlice(pending.last == 0x0D ? pending.dropLast() : pending[...])
    }
}

var input = StandardInputLines()
var position = 0
while true {
    let line: String
    if let script {
        guard position < script.count else { break }
        line = script[position]
        position += 1
    } else {
        guard let bytes = input.next() else { break }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            say([
                "ok": false,
                "error": [
                    "kind": "usage", "outcome": "notSent", "message": "That line is not valid UTF-8; nothing was done.",
                ],
            ])
            continue
        }
        line = text
    }
    let trimmed = line.trimmingCharacters(in: .whitespaces)
    if trimmed.isEmpty || trimmed.hasPrefix("#") { continue }
    if trimmed == "quit" {
        say(["ok": true])
        break
    }
    if trimmed == "help" {
        say(["ok": true, "commands": .array(commands.map(JSONValue.string))])
        continue
    }
    say(await app.perform(trimmed))
}
exit(0)
