import Foundation
import KeelContract
import KeelCore
import KeelHTTP
import KeelReference
import KeelStore
import KeelTesting
import Testing

extension NotesDevice {
    /// The built `keel-notes` next to the test binary.
    static var executable: String { ChildProcess.productsDirectory.appendingPathComponent("keel-notes").path }

    /// A device named `name` with its directories in `directory`.
    convenience init(_ directory: TemporaryDirectory, name: String, server: URL, arguments: [String] = []) throws {
        try self.init(
            name: name, directory: directory.url, server: server, executable: Self.executable, arguments: arguments)
    }
}

/// The reference app as a process, against the reference backend on loopback.
@Suite(.timeLimit(.minutes(1))) struct NotesAppProcessTests {
    /// A reference backend (admin endpoints on) and a phone signed in as alice with one synced note, "Essay",
    /// whose id comes last; the directory holds both, and goes when it does.
    static func syncedEssay(_ prefix: String) async throws -> (
        TemporaryDirectory, ReferenceBackend, NotesDevice, String
    ) {
        let directory = try TemporaryDirectory(prefix: prefix)
        let backend = try ReferenceBackend(configuration: .init(dataDirectory: directory.url("backend"), admin: true))
        let phone = try NotesDevice(directory, name: "phone", server: backend.baseURL)
        _ = try await phone.run("signin alice")
        let id = try #require(try await phone.run("new Essay")["id"]?.stringValue)
        #expect(try await phone.run("sync")["ok"] == true)
        return (directory, backend, phone, id)
    }

    @Test func theAppSignsInWorksOnNotesAndSyncsThem() async throws {
        let directory = try TemporaryDirectory(prefix: "keel-notes")
        let backend = try ReferenceBackend(configuration: .init(dataDirectory: directory.url("backend"), admin: true))
        let phone = try NotesDevice(directory, name: "phone", server: backend.baseURL)
        let signedIn = try await phone.run("signin alice")
        #expect(signedIn["ok"] == true && signedIn["account"] == "alice")
        #expect(signedIn["screen"]?["stack"] == ["home", "notes"])
        let created = try await phone.run("new Groceries for the weekend")
        let id = try #require(created["id"]?.stringValue)
        #expect(try await phone.run("edit \(id) milk, eggs")["ok"] == true)
        #expect(try await phone.run("tag \(id) home")["tags"] == ["home"])
        let before = try await phone.run("list")
        #expect(before["notes"]?[0]?["state"] == "pending" && before["notes"]?[0]?["version"] == .null)
        #expect(before["notes"]?[0]?["title"] == "Groceries for the weekend")
        let synced = try await phone.run("sync")
        // Create, edit and tag of one note: three changes, sent in order (one per batch), all acknowledged.
        #expect(synced["ok"] == true && synced["acknowledged"] == 3 && synced["outstanding"] == 0)
        let after = try await phone.run("list")
        #expect(after["notes"]?[0]?["state"] == "synced" && after["notes"]?[0]?["body"] == "milk, eggs")
        #expect(after["updatedAgo"] == "updated just now" && after["stale"] == false)
        #expect(try backend.noteCount() == 1)
        #expect(try await phone.run("frobnicate")["error"]?["kind"] == "usage")
        // A note that is not here: the same answer from edit, tag and pin.
        for command in ["edit nope text", "tag nope home", "pin nope"] {
            #expect(try await phone.run(command)["error"]?["kind"] == "notFound", "\(command)")
        }
        #expect(try await phone.run("quit")["ok"] == true)
        #expect(try await phone.process.waitForExit() == .exited(0))
    }

    /// Found in review: the offline scenario declares syncing when connectivity comes back and when the app
    /// comes to the foreground, and the app never did either. `offline`/`online` and `foreground` report them
    /// as the platform would; each syncs as declared.
    @Test func theDeclaredSyncConditionsSync() async throws {
        let directory = try TemporaryDirectory(prefix: "keel-notes-conditions")
        let backend = try ReferenceBackend(configuration: .init(dataDirectory: directory.url("backend"), admin: true))
        let phone = try NotesDevice(directory, name: "phone", server: backend.baseURL)
        #expect(try await phone.run("signin alice")["ok"] == true)
        #expect(try await phone.run("online")["synced"] == false)  // it was not offline: nothing regained
        #expect(try await phone.run("offline")["synced"] == false)
        _ = try await phone.run("new Bread")
        let regained = try await phone.run("online")
        #expect(regained["ok"] == true && regained["synced"] == true && regained["acknowledged"] == 1, "\(regained)")
        #expect(try backend.noteCount() == 1)
        // The network went away on one account and came back on another (found in an outside test: the
        // account switched to never learned it was offline, and regaining synced nothing).
        #expect(try await phone.run("offline")["ok"] == true)
        #expect(try await phone.run("signin bob")["ok"] == true)
        _ = try await phone.run("new Bob's")
        let bobRegained = try await phone.run("online")
        #expect(bobRegained["synced"] == true && bobRegained["acknowledged"] == 1, "\(bobRegained)")
        #expect(try backend.noteCount() == 2)
        #expect(try await phone.run("switch alice")["ok"] == true)
        _ = try await phone.run("new Milk")
        let foreground = try await phone.run("foreground")
        #expect(foreground["synced"] == true && foreground["acknowledged"] == 1 && foreground["outstanding"] == 0)
        #expect(try backend.noteCount() == 3)
        #expect(try await phone.run("quit")["ok"] == true)
    }

    /// Found in an outside test: a tag longer than the contract allows was queued (and refused at sync, with
    /// every later change of the note waiting behind it), a failed note said only "failed", and no command
    /// could act on it. Input is checked as it is typed; a failed note says why and what to do; `retry`
    /// sends it again and `discard` gives it up.
    @Test func aFailedNoteSaysWhyAndCanBeRetriedOrDiscarded() async throws {
        let directory = try TemporaryDirectory(prefix: "keel-notes-failed")
        let backend = try ReferenceBackend(configuration: .init(dataDirectory: directory.url("backend"), admin: true))
        let phone = try NotesDevice(directory, name: "phone", server: backend.baseURL)
        #expect(try await phone.run("signin alice")["ok"] == true)
        let id = try #require(try await phone.run("new Groceries")["id"]?.stringValue)
        #expect(try await phone.run("sync")["acknowledged"] == 1)
        let long = try await phone.run("tag \(id) " + String(repeating: "x", count: 65))
        #expect(long["error"]?["kind"] == "validation")
        #expect(try await phone.run("new " + String(repeating: "t", count: 201))["error"]?["kind"] == "validation")
        // Refused by the server (the app is below the minimum version): failed, saying why and what to do.
        try backend.setMinimumVersion(AppVersion("99.0")!, platform: "ios")
        _ = try await phone.run("edit \(id) milk")
        _ = try await phone.run("sync")
        let failed = try await phone.run("list")
        #expect(failed["notes"]?[0]?["state"] == "failed", "\(failed)")
        #expect(failed["notes"]?[0]?["failure"]?["kind"] == "updateRequired")
        #expect(failed["notes"]?[0]?["failure"]?["action"] == "updateApp")
        try backend.setMinimumVersion(nil, platform: "ios")
        #expect(try await phone.run("retry")["retried"] == 1)
        #expect(try await phone.run("sync")["outstanding"] == 0)
        #expect(try await phone.run("list")["notes"]?[0]?["body"] == "milk")
        // Given up instead: the note shows the server's version again.
        try backend.setMinimumVersion(AppVersion("99.0")!, platform: "ios")
        _ = try await phone.run("edit \(id) eggs")
        _ = try await phone.run("sync")
        #expect(try await phone.run("discard \(id)")["discarded"] == 1)
        let after = try await phone.run("list")
        #expect(after["notes"]?[0]?["body"] == "milk" && after["notes"]?[0]?["state"] == "synced", "\(after)")
        #expect(try await phone.run("discard \(id)")["error"]?["kind"] == "notFound")
        #expect(try await phone.run("quit")["ok"] == true)
    }

    /// Found in review of the command-line contracts: a misspelt `--scirpt` was ignored (stdin read instead
    /// of the script, exit 0), stray arguments and an unknown option passed, `--server notaurl` ran with
    /// every command failing, `--script --device x` took `--device` as the script, and `--help` exited 2.
    @Test func badCommandLinesAreUsageErrorsAndHelpIsNot() async throws {
        let directory = try TemporaryDirectory(prefix: "keel-notes-args")
        let required = ["--data", directory.url("d").path, "--keys", directory.url("k").path]
        for (extra, message) in [
            (["--server", "http://127.0.0.1:1", "--scirpt", "s.txt"], "unknown option '--scirpt'"),
            (["--server", "http://127.0.0.1:1", "extra"], "unexpected argument 'extra'"),
            (["--server", "http://127.0.0.1:1", "--bogus"], "unknown option '--bogus'"),
            (["--server", "notaurl"], "--server needs an http(s) URL"),
            (["--server", "http://127.0.0.1:1", "--script", "--device", "x"], "option '--script' needs a value"),
            (["--server", "http://127.0.0.1:1", "--server", "http://127.0.0.1:2"], "given more than once"),
            // Found in an outside audit: a --public that is no URL was taken, and --data naming a file ran and
            // said its vault was damaged (exit 1).
            (["--server", "http://127.0.0.1:1", "--public", "notaurl"], "--public needs an http(s) URL"),
        ] {
            let process = try ChildProcess.launch(executable: NotesDevice.executable, arguments: required + extra)
            process.closeInput()
            #expect(try await process.waitForExit(timeout: .seconds(30)) == .exited(2), "\(extra)")
            #expect(process.output(of: .standardError).contains(message), "\(extra)")
            #expect(process.output(of: .standardOutput).isEmpty, "\(extra)")
        }
        let file = directory.url("a-file")
        try Data().write(to: file)
        let onAFile = try ChildProcess.launch(
            executable: NotesDevice.executable,
            arguments: ["--data", file.path, "--keys", directory.url("k").path, "--server", "http://127.0.0.1:1"])
        onAFile.closeInput()
        #expect(try await onAFile.waitForExit(timeout: .seconds(30)) == .exited(2))
        #expect(onAFile.output(of: .standardError).contains("--data needs a directory"))
        let help = try ChildProcess.launch(executable: NotesDevice.executable, arguments: ["--help"])
        help.closeInput()
        #expect(try await help.waitForExit(timeout: .seconds(30)) == .exited(0))
        let text = help.output(of: .standardOutput)
        #expect(text.hasPrefix("usage: keel-notes --data DIR"))
        // The commands too (found in an outside audit: none were listed, and `help` was an unknown command).
        #expect(text.contains("  signin ACCOUNT\n") && text.contains("  publish ID\n"), "\(text)")
        let asked = try ChildProcess.launch(
            executable: NotesDevice.executable,
            arguments: required + ["--server", "http://127.0.0.1:1"])
        try asked.writeLine("help")
        asked.closeInput()
        #expect(try await asked.waitForExit(timeout: .seconds(30)) == .exited(0))
        #expect(asked.output(of: .standardOutput).contains(#""commands":["signin ACCOUNT""#))
    }

    /// Found in review: a script with CRLF line ends (written on Windows) ran as one command — Swift does not
    /// split "\r\n" at "\n" — and the app answered one usage error and exited 0.
    @Test func aScriptWithCRLFLineEndsRunsLineByLine() async throws {
        let directory = try TemporaryDirectory(prefix: "keel-notes-crlf")
        let script = directory.url("script.txt")
        try Data("screen\r\nfrobnicate\r\nquit\r\n".utf8).write(to: script)
        // Directories whose parents do not exist yet are made, as on a first launch (found in review: exit 1).
        let process = try ChildProcess.launch(
            executable: NotesDevice.executable,
            arguments: [
                "--data", directory.url("new/d").path, "--keys", directory.url("other/k").path, "--server",
                "http://127.0.0.1:1",
                "--script", script.path,
            ])
        process.closeInput()
        #expect(try await process.waitForExit(timeout: .seconds(30)) == .exited(0))
        let answers = process.output(of: .standardOutput).split(separator: "\n").compactMap {
            try? JSONValue(parsing: String($0))
        }
        #expect(answers.count == 3)
        #expect(answers.first?["screen"] != nil && answers.dropFirst().first?["error"]?["kind"] == "usage")
    }

    /// Found in review: a sign-in without a connection said "It is saved on this device and will be sent when
    /// possible" — nothing of a sign-in is queued.
    @Test func aDirectCallThatFailsOfflineNeverSaysItWillBeSentLater() async throws {
        let directory = try TemporaryDirectory(prefix: "keel-notes-offline")
        let gone = try TestServer()  // a port nothing listens on any more
        let dead = gone.baseURL
        gone.shutdown()
        let phone = try NotesDevice(directory, name: "phone", server: dead)
        let answer = try await phone.run("signin carol")
        #expect(answer["ok"] == false && answer["error"]?["kind"] == "offline")
        let message = try #require(answer["error"]?["message"]?.stringValue)
        #expect(message.contains("Nothing was changed.") && !message.contains("will be sent"))
        _ = try await phone.run("quit")
    }

    /// Found in review: the app kept the session token stored in the vault over the one a new sign-in got,
    /// so after the server ended the session (here: a backend that forgot every session), `signin` said ok and
    /// every sync stayed 401 — the only way out was a sign-out that threw the unsent changes away.
    @Test func aSessionTheServerEndedIsRenewedBySigningInAgain() async throws {
        let directory = try TemporaryDirectory(prefix: "keel-notes-session")
        let first = try ReferenceBackend(configuration: .init(dataDirectory: directory.url("backend-1")))
        let phone = try NotesDevice(directory, name: "phone", server: first.baseURL)
        _ = try await phone.run("signin oli")
        _ = try await phone.run("new Before")
        #expect(try await phone.run("sync")["ok"] == true)
        let port = first.port
        first.shutdown()
        let second = try ReferenceBackend(configuration: .init(dataDirectory: directory.url("backend-2"), port: port))
        defer { second.shutdown() }
        let id = try #require(try await phone.run("new After")["id"]?.stringValue)
        #expect(try await phone.run("sync")["error"]?["kind"] == "authentication")
        #expect(try await phone.run("signin oli")["ok"] == true)
        let synced = try await phone.run("sync")
        #expect(synced["ok"] == true && synced["outstanding"] == 0)
        let list = try await phone.run("list")
        let notes = try #require(list["notes"].flatMap { if case .array(let notes) = $0 { notes } else { nil } })
        #expect(notes.first { $0["id"]?.stringValue == id }?["state"] == "synced")
        #expect(try second.noteCount() == 1)
        _ = try await phone.run("quit")
    }

    /// Found in review: after a relaunch, `switch` to an account signed in on this device (even to the active
    /// one) asked the server for a new session, so without a connection it failed `offline` — the account's
    /// stored session is what a switch uses. A switch to an account with no session here still needs the
    /// server, and when it fails the app stays on the account it was on.
    @Test func aRelaunchedAppSwitchesBetweenItsAccountsOffline() async throws {
        let directory = try TemporaryDirectory(prefix: "keel-notes-switch")
        let backend = try ReferenceBackend(configuration: .init(dataDirectory: directory.url("backend")))
        let phone = try NotesDevice(directory, name: "phone", server: backend.baseURL)
        _ = try await phone.run("signin fay")
        _ = try await phone.run("new Fay's note")
        _ = try await phone.run("switch gus")
        _ = try await phone.run("new Gus's note")
        _ = try await phone.run("quit")
        _ = try await phone.process.waitForExit()
        backend.shutdown()

        let offline = try phone.relaunched()
        let toFay = try await offline.run("switch fay")
        #expect(toFay["ok"] == true && toFay["account"] == "fay")
        let fays = try await offline.run("list")["notes"]
        #expect(fays?[0]?["title"] == "Fay's note" && fays?[1] == nil, "only Fay's note: \(fays?.description ?? "")")
        #expect(try await offline.run("switch gus")["ok"] == true)
        #expect(try await offline.run("switch gus")["ok"] == true)
        let unknown = try await offline.run("switch hal")
        #expect(unknown["ok"] == false && unknown["error"]?["kind"] == "offline")
        let list = try await offline.run("list")
        #expect(list["ok"] == true && list["notes"]?[0]?["title"] == "Gus's note" && list["notes"]?[1] == nil)
        _ = try await offline.run("quit")
    }

    /// Found in review: sign-out kept the account's token in memory, so a later `switch` to it in the same
    /// process signed it back in with the old session — without the server, without credentials.
    @Test func aSignedOutAccountNeedsASignInAgain() async throws {
        let directory = try TemporaryDirectory(prefix: "keel-notes-signout")
        let backend = try ReferenceBackend(configuration: .init(dataDirectory: directory.url("backend")))
        let phone = try NotesDevice(directory, name: "phone", server: backend.baseURL)
        #expect(try await phone.run("signin ida")["ok"] == true)
        #expect(try await phone.run("signout")["ok"] == true)
        backend.shutdown()
        let back = try await phone.run("switch ida")
        #expect(back["ok"] == false && back["error"]?["kind"] == "offline", "\(back)")
        _ = try await phone.run("quit")
    }

    @Test func aKilledAppRestoresItsScreenAndDraftAndResumesSync() async throws {
        let directory = try TemporaryDirectory(prefix: "keel-notes-kill")
        let backend = try ReferenceBackend(configuration: .init(dataDirectory: directory.url("backend"), admin: true))
        let phone = try NotesDevice(directory, name: "phone", server: backend.baseURL)
        _ = try await phone.run("signin alice")
        let id = try #require(try await phone.run("new Plan")["id"]?.stringValue)
        _ = try await phone.run("open \(id)")
        _ = try await phone.run("editor \(id)")
        let typed = try await phone.run("type half a thought")
        #expect(typed["screen"]?["input"] == "half a thought")
        phone.process.kill()
        _ = try await phone.process.waitForExit()

        let again = try phone.relaunched()
        let screen = try await again.run("screen")
        let expected: JSONValue = .array(
            ["home", "notes", "note noteID=\(id)", "edit noteID=\(id)"].map(JSONValue.string))
        #expect(screen["screen"]?["stack"] == expected)
        #expect(screen["screen"]?["input"] == "half a thought")
        #expect(try await again.run("list")["notes"]?[0]?["state"] == "pending")
        #expect(try await again.run("sync")["acknowledged"] == 1)
        #expect(try backend.noteCount() == 1)
        // A deep link opens a note above its declared parents; back leads to them.
        let linked = try await again.run("open-link keel-notes://note/\(id)")
        #expect(linked["screen"]?["stack"]?[2] == .string("note noteID=\(id)"))
        let back = try await again.run("back systemBack")
        #expect(back["ok"] == true)
        _ = try await again.run("quit")
    }

    /// A backend, and alice's phone and tablet sharing a note the tablet then edited and synced; the phone
    /// has not seen that edit yet.
    func twoDevicesAfterATabletEdit(_ prefix: String) async throws -> (
        directory: TemporaryDirectory, backend: ReferenceBackend, phone: NotesDevice, tablet: NotesDevice, id: String
    ) {
        let directory = try TemporaryDirectory(prefix: prefix)
        let backend = try ReferenceBackend(configuration: .init(dataDirectory: directory.url("backend"), admin: true))
        let phone = try NotesDevice(directory, name: "phone", server: backend.baseURL)
        let tablet = try NotesDevice(directory, name: "tablet", server: backend.baseURL)
        _ = try await phone.run("signin alice")
        _ = try await tablet.run("signin alice")
        let id = try #require(try await phone.run("new Shared")["id"]?.stringValue)
        _ = try await phone.run("sync")
        _ = try await tablet.run("sync")
        _ = try await tablet.run("edit \(id) from the tablet")
        _ = try await tablet.run("sync")
        return (directory, backend, phone, tablet, id)
    }

    @Test func twoDevicesConflictAndTheUserKeepsTheirVersion() async throws {
        let setup = try await twoDevicesAfterATabletEdit("keel-notes-conflict")
        defer { withExtendedLifetime(setup) {} }  // the backend and the directories outlive the devices
        let (phone, tablet, id) = (setup.phone, setup.tablet, setup.id)
        _ = try await phone.run("edit \(id) from the phone")
        let sync = try await phone.run("sync")
        #expect(sync["conflicts"] == 1)
        let conflicts = try await phone.run("conflicts")
        #expect(conflicts["conflicts"]?[0]?["fields"] == ["body"])
        #expect(conflicts["conflicts"]?[0]?["mine"]?["body"] == "from the phone")
        #expect(conflicts["conflicts"]?[0]?["theirs"]?["body"] == "from the tablet")
        #expect(try await phone.run("list")["notes"]?[0]?["state"] == "conflicted")
        let resolved = try await phone.run("resolve \(id) merged phone and tablet")
        #expect(resolved["sent"] == true && resolved["state"] == "pending", "\(resolved)")
        #expect(try await phone.run("sync")["acknowledged"] == 1)
        _ = try await tablet.run("sync")
        #expect(try await tablet.run("list")["notes"]?[0]?["body"] == "phone and tablet")
        _ = try await phone.run("quit")
        _ = try await tablet.run("quit")
    }

    /// Found in an outside audit: coming back online met a conflict, the change still outstanding, and the
    /// answer said `"synced": true`. In Keel "synced" means the backend confirmed: `synced` is true only
    /// when nothing is left outstanding, conflicted or rejected; `ran` says whether a sync ran at all.
    @Test func aConditionThatMeetsAConflictDoesNotSaySynced() async throws {
        let setup = try await twoDevicesAfterATabletEdit("keel-notes-synced")
        defer { withExtendedLifetime(setup) {} }  // the backend and the directories outlive the devices
        let (phone, tablet, id) = (setup.phone, setup.tablet, setup.id)
        #expect(try await phone.run("offline")["ran"] == false)
        _ = try await phone.run("edit \(id) from the phone")
        let regained = try await phone.run("online")
        #expect(regained["ok"] == true && regained["ran"] == true, "\(regained)")
        #expect(regained["conflicts"] == 1 && regained["outstanding"] == 1, "\(regained)")
        #expect(regained["synced"] == false, "\(regained)")
        _ = try await phone.run("resolve \(id) merged from both")
        let settled = try await phone.run("foreground")
        #expect(settled["outstanding"] == 0 && settled["synced"] == true, "\(settled)")
        _ = try await phone.run("quit")
        _ = try await tablet.run("quit")
    }

    /// Found in an outside audit: the launch's result was dropped, so data whose key was gone showed as
    /// "sign in first", and signing in said "technical". The launch says what it found (a JSON line on
    /// standard error, and `launch`), with a typed kind and the way out (MOB-DATA-007); the way out works.
    @Test func dataWhoseKeyIsGoneIsReportedAtLaunchWithItsWayOut() async throws {
        let (directory, backend, phone, _) = try await Self.syncedEssay("keel-notes-key-gone")
        _ = try await phone.run("quit")
        _ = try await phone.process.waitForExit()
        try FileManager.default.removeItem(at: phone.keys)
        let restored = try phone.relaunched()
        let launched = try await restored.run("launch")
        #expect(launched["launched"] == "failed" && launched["account"] == "alice", "\(launched)")
        #expect(launched["error"]?["kind"] == "keyUnavailable" && launched["error"]?["action"] == "signOut")
        let errors = restored.process.output(of: .standardError)
        #expect(errors.contains("launch: {") && errors.contains("\"keyUnavailable\""), "\(errors)")
        // Not "sign in first" (nobody signed in), not "technical": what is wrong, and what to do.
        let list = try await restored.run("list")
        #expect(list["error"]?["kind"] == "keyUnavailable", "\(list)")
        #expect(list["error"]?["message"]?.stringValue?.contains("Sign out") == true, "\(list)")
        #expect(try await restored.run("signin alice")["error"]?["kind"] == "keyUnavailable")
        #expect(try await restored.run("signout")["ok"] == true)
        #expect(try await restored.run("signin alice")["ok"] == true)
        #expect(try await restored.run("sync")["ok"] == true)
        #expect(try await restored.run("list")["notes"]?[0]?["title"] == "Essay")
        _ = try await restored.run("quit")
        withExtendedLifetime((directory, backend)) {}
    }

    /// A vault whose manifest is damaged is `vaultDamaged` at launch, with `deleteAccount` as the way out (a
    /// sign-out cannot tell what it deletes from what it keeps); `delete-account` works without the vault.
    @Test func aDamagedVaultIsReportedAtLaunchAndCanBeDeleted() async throws {
        let (directory, backend, phone, _) = try await Self.syncedEssay("keel-notes-vault-damaged")
        _ = try await phone.run("quit")
        _ = try await phone.process.waitForExit()
        let manifest = phone.data.appendingPathComponent(
            "vaults/\(VaultNamespace(try AccountID("alice")).rawValue)/vault.json")
        try Data("not a manifest".utf8).write(to: manifest)
        let restored = try phone.relaunched()
        let launched = try await restored.run("launch")
        #expect(launched["error"]?["kind"] == "vaultDamaged" && launched["error"]?["action"] == "deleteAccount")
        #expect(try await restored.run("list")["error"]?["kind"] == "vaultDamaged")
        #expect(try await restored.run("signin alice")["error"]?["kind"] == "vaultDamaged")
        #expect(try await restored.run("delete-account")["ok"] == true)
        #expect(try await restored.run("signin alice")["ok"] == true)
        #expect(try await restored.run("sync")["ok"] == true)
        #expect(try await restored.run("list")["notes"]?[0]?["title"] == "Essay")
        _ = try await restored.run("quit")
        withExtendedLifetime((directory, backend)) {}
    }

    /// Found in an outside audit: lines were read with `readLine()`, so `signin \xff` and `signin \xfe` both
    /// signed in one account named "\u{FFFD}" (MOB-DATA-006). A line that is not UTF-8 is refused.
    @Test func aLineThatIsNotUTF8IsRefusedNotReadAsAnotherName() async throws {
        let directory = try TemporaryDirectory(prefix: "keel-notes-utf8")
        let backend = try ReferenceBackend(configuration: .init(dataDirectory: directory.url("backend"), admin: true))
        let phone = try NotesDevice(directory, name: "phone", server: backend.baseURL)
        for byte: UInt8 in [0xFF, 0xFE] {
            try phone.process.write(Data("signin ".utf8) + Data([byte, 0x0A]))
            let answer = try await phone.answer(to: "signin \\x\(String(byte, radix: 16))")
            #expect(answer["ok"] == false && answer["error"]?["kind"] == "usage", "\(answer)")
            #expect(answer["error"]?["message"]?.stringValue?.contains("UTF-8") == true, "\(answer)")
        }
        #expect(try await phone.run("list")["error"]?["message"] == "sign in first")
        // Valid UTF-8 still reads as it did: a name in another script, a line ending in CRLF.
        #expect(try await phone.run("signin zoë\r")["account"] == "zoë")
        _ = try await phone.run("quit")
    }

    /// The reference app checks its version at every launch before any vault opens (the inventory's
    /// `appVersionChange` caches would be reset there; it declares none): the version is recorded with the
    /// one before it, and an update keeps the session and the queued change.
    @Test func eachLaunchRecordsTheAppVersionAndAnUpdateKeepsEverything() async throws {
        let directory = try TemporaryDirectory(prefix: "keel-notes-app-version")
        let backend = try ReferenceBackend(configuration: .init(dataDirectory: directory.url("backend"), admin: true))
        let phone = try NotesDevice(
            directory, name: "phone", server: backend.baseURL, arguments: ["--app-version", "1.4"])
        #expect(try await phone.run("signin alice")["ok"] == true)
        let id = try #require(try await phone.run("new Kept across the update")["id"]?.stringValue)
        _ = try await phone.run("quit")
        _ = try await phone.process.waitForExit()
        func recorded() throws -> JSONValue {
            try JSONValue(
                parsing: String(
                    decoding: try Data(contentsOf: phone.data.appendingPathComponent("app-version.json")), as: UTF8.self
                ))
        }
        #expect(try recorded()["version"] == "1.4")
        let updated = try phone.relaunched(arguments: ["--app-version", "2.0"])
        let launch = try await updated.run("launch")
        #expect(launch["account"] == "alice" && launch["appVersionCheck"] == nil, "\(launch)")
        let after = try recorded()
        #expect(after["version"] == "2.0" && after["previous"] == "1.4", "\(after)")
        let list = try await updated.run("list")
        #expect(list["notes"]?[0]?["id"]?.stringValue == id && list["notes"]?[0]?["state"] == "pending", "\(list)")
        _ = try await updated.run("quit")
    }

    /// Found in an outside audit: words after a command's last argument were dropped, so `signin a b` signed
    /// in to `a` and synced under it. A command given more words than it takes is refused and runs nothing.
    @Test func extraWordsAreRefusedNotDropped() async throws {
        let directory = try TemporaryDirectory(prefix: "keel-notes-arity")
        let backend = try ReferenceBackend(configuration: .init(dataDirectory: directory.url("backend"), admin: true))
        let phone = try NotesDevice(directory, name: "phone", server: backend.baseURL)
        let refused = try await phone.run("signin a b")
        #expect(refused["ok"] == false && refused["error"]?["kind"] == "usage", "\(refused)")
        #expect(try await phone.run("list")["error"]?["message"] == "sign in first")
        #expect(try await phone.run("signin alice")["account"] == "alice")
        let id = try #require(try await phone.run("new Essay on two words")["id"]?.stringValue)
        for command in ["switch bob carol", "pin \(id) x", "publish \(id) x", "back gesture x", "list x", "sync now"] {
            #expect(try await phone.run(command)["error"]?["kind"] == "usage", "\(command)")
        }
        // Nothing of them ran: the note is unpinned, unsent, and alice is still the account.
        let list = try await phone.run("list")
        #expect(list["notes"]?[0]?["pinned"] != true && list["notes"]?[0]?["state"] == "pending", "\(list)")
        #expect(list["notes"]?[0]?["title"] == "Essay on two words")
        #expect(try backend.noteCount() == 0)
        _ = try await phone.run("quit")
    }

    /// MOB-DATA-006: an empty or placeholder account id is never an account: `signin` and `switch` refuse one as
    /// invalid input, and the account signed in stays, with its notes.
    @Test func anInvalidAccountNameIsRefusedAndTheAccountSignedInStays() async throws {
        let directory = try TemporaryDirectory(prefix: "keel-notes-account")
        let backend = try ReferenceBackend(configuration: .init(dataDirectory: directory.url("backend"), admin: true))
        let phone = try NotesDevice(directory, name: "phone", server: backend.baseURL)
        for command in ["signin null", "signin 0", "switch anonymous"] {
            let refused = try await phone.run(command)
            #expect(refused["ok"] == false && refused["error"]?["kind"] == "validation", "\(command): \(refused)")
        }
        #expect(try await phone.run("list")["error"]?["message"] == "sign in first")
        #expect(try await phone.run("signin alice")["account"] == "alice")
        _ = try await phone.run("new Essay")
        for command in ["switch null", "signin (null)", "switch undefined"] {
            #expect(try await phone.run(command)["error"]?["kind"] == "validation", "\(command)")
        }
        #expect(try await phone.run("list")["notes"]?[0]?["title"] == "Essay")
        _ = try await phone.run("quit")
    }

    @Test func aDamagedPublicationRecordIsNeverReplacedByANewKey() async throws {
        let (directory, backend, phone, id) = try await Self.syncedEssay("keel-notes-ledger")
        defer { withExtendedLifetime(directory) {} }  // the data is deleted with it
        // A started publication whose key was lost (a damaged or foreign ledger file of an earlier version,
        // imported into the vault as it is): sending it again under a new key could publish twice, so the app
        // refuses and says so.
        let ledger = phone.data.appendingPathComponent("effects").appendingPathComponent(
            VaultNamespace(try AccountID("alice")).rawValue + ".json")
        try FileManager.default.createDirectory(
            at: ledger.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(#"[{"id": "publish@note/\#(id)#1", "action": "publish", "state": "started"}]"#.utf8).write(to: ledger)
        let answer = try await phone.run("publish \(id)")
        #expect(answer["ok"] == false && answer["error"]?["kind"] == "technical", "\(answer)")
        #expect(answer["error"]?["message"]?.stringValue?.contains("nothing was sent") == true)
        #expect(try backend.publicationCounts().isEmpty)
        _ = try await phone.run("quit")
    }

    /// Found in an outside security audit: the effect ledger was a plaintext file in the data directory
    /// (`effects/<namespace>.json`) holding the account id, the note id and the publication path, outside the
    /// account's vault. It is now sealed records of the vault's `effects` dataset: after a publish, no file of
    /// the data directory holds the path, the publication's operation id or its key, or the account id (but
    /// `app-session.json`, the declared record of which account to reopen); the note id only as the sync
    /// engine's record id of the note (`note/<id>`, which names no publication).
    @Test func aPublicationLeavesNothingReadableOnDisk() async throws {
        let (directory, backend, phone, id) = try await Self.syncedEssay("keel-notes-sealed-ledger")
        defer { withExtendedLifetime((directory, backend)) {} }
        let published = try await phone.run("publish \(id)")
        let path = try #require(published["path"]?.stringValue, "\(published)")
        #expect(try await phone.run("publish \(id)")["alreadyPublished"] == true)  // answered from the ledger
        _ = try await phone.run("quit")
        _ = try await phone.process.waitForExit()
        let key = IdempotencyKey.derived(from: id, namespace: "publish").rawValue
        let files = FileManager.default.enumerator(atPath: phone.data.path)!.compactMap { $0 as? String }
        #expect(files.contains { $0.hasPrefix("vaults/") && $0.hasSuffix(".sqlite") })
        #expect(!files.contains { $0.hasPrefix("effects") }, "\(files)")
        for name in files {
            guard let bytes = FileManager.default.contents(atPath: phone.data.path + "/" + name) else { continue }
            for secret in [path, "publish@", key] {
                #expect(bytes.range(of: Data(secret.utf8)) == nil, "\(secret) in \(name)")
            }
            if name != "app-session.json" {
                #expect(bytes.range(of: Data("alice".utf8)) == nil, "the account id in \(name)")
            }
            // Every occurrence of the note id is the sync engine's `note/<id>`.
            var from = bytes.startIndex
            while let found = bytes.range(of: Data(id.utf8), in: from..<bytes.endIndex) {
                let before = bytes[max(bytes.startIndex, found.lowerBound - 13)..<found.lowerBound]
                #expect(
                    before.suffix(5) == Data("note/".utf8) && before != Data("publish@note/".utf8),
                    "the note id in \(name) after \(String(decoding: before, as: UTF8.self))")
                from = found.upperBound
            }
        }
    }

    /// An install upgraded from a version that kept the ledger in `effects/<namespace>.json`: the file is
    /// imported into the vault on first use, in one transaction, and deleted (with its lock) only then. A
    /// publication it recorded as started is sent again under the key it recorded — not a new one — and is
    /// made once; nothing of the file is left.
    @Test func anEarlierVersionsLedgerFileIsImportedAndItsStartedPublicationKeepsItsKey() async throws {
        let (directory, backend, phone, id) = try await Self.syncedEssay("keel-notes-ledger-import")
        defer { withExtendedLifetime(directory) {} }
        _ = try await phone.run("quit")
        _ = try await phone.process.waitForExit()
        // What the earlier version wrote when it was killed in flight: a start, with the key it drew then.
        let file = phone.data.appendingPathComponent("effects").appendingPathComponent(
            VaultNamespace(try AccountID("alice")).rawValue + ".json")
        try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        let recordedKey = "publish-key-recorded-by-version-1"
        try Data(
            #"[{"id": "publish@note/\#(id)#1", "action": "publish", "state": "started", "reference": "\#(recordedKey)", "account": "alice"}]"#
                .utf8
        ).write(to: file)
        try Data().write(to: URL(fileURLWithPath: file.path + ".lock"))

        let upgraded = try phone.relaunched()
        let answer = try await upgraded.run("publish \(id)")
        #expect(answer["ok"] == true && answer["alreadyPublished"] == false, "\(answer)")
        let sent = backend.requestLog.filter { $0.path.hasSuffix("/publish") }
        #expect(sent.map(\.idempotencyKey) == [recordedKey], "\(sent)")
        #expect(try backend.publicationCounts() == [id: 1])
        #expect(!FileManager.default.fileExists(atPath: file.path))
        #expect(!FileManager.default.fileExists(atPath: file.path + ".lock"))
        // Recorded in the vault now: a later tap answers from there, with no call.
        #expect(try await upgraded.run("publish \(id)")["alreadyPublished"] == true)
        #expect(backend.requestLog.filter { $0.path.hasSuffix("/publish") }.count == 1)
        _ = try await upgraded.run("quit")
    }

    /// A ledger file of an earlier version that is not a ledger is kept as it is and reported; nothing is
    /// published while it is there (which of its publications were started cannot be told). Sign-out deletes it.
    @Test func aDamagedLedgerFileOfAnEarlierVersionIsKeptAndNothingIsSent() async throws {
        let (directory, backend, phone, id) = try await Self.syncedEssay("keel-notes-ledger-damaged")
        defer { withExtendedLifetime(directory) {} }
        let file = phone.data.appendingPathComponent("effects").appendingPathComponent(
            VaultNamespace(try AccountID("alice")).rawValue + ".json")
        try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data("[{\"id\": \"publish@note/\(id)#1\", \"state\": ".utf8).write(to: file)
        let answer = try await phone.run("publish \(id)")
        #expect(answer["ok"] == false && answer["error"]?["kind"] == "technical", "\(answer)")
        #expect(answer["error"]?["message"]?.stringValue?.contains("nothing was sent") == true, "\(answer)")
        #expect(backend.requestLog.allSatisfy { !$0.path.hasSuffix("/publish") })
        #expect(try Data(contentsOf: file) == Data("[{\"id\": \"publish@note/\(id)#1\", \"state\": ".utf8))
        #expect(try await phone.run("signout")["ok"] == true)
        #expect(!FileManager.default.fileExists(atPath: file.path))
        #expect(!FileManager.default.fileExists(atPath: file.path + ".lock"))
        _ = try await phone.run("quit")
    }

    static func names(_ value: JSONValue?) -> [String] {
        if case .array(let items)? = value { return items.compactMap(\.stringValue) }
        return []
    }

    /// The ledger is the account's data: sign-out and account deletion delete it with the vault's datasets
    /// (the inventory's triggers for `effects`), and its key — nothing of it is readable after.
    @Test func signOutAndAccountDeletionDeleteTheLedger() async throws {
        let (directory, backend, phone, id) = try await Self.syncedEssay("keel-notes-ledger-logout")
        defer { withExtendedLifetime(directory) {} }
        let first = try await phone.run("publish \(id)")
        #expect(first["ok"] == true, "\(first)")
        let keys = try FileKeyStore(directory: phone.keys, dataDirectories: [phone.data], create: false)
        let namespace = VaultNamespace(try AccountID("alice")).rawValue
        let before = try keys.listKeys().filter { $0.namespace == namespace }.count
        let signedOut = try await phone.run("signout")
        #expect(Self.names(signedOut["deleted"]).contains("effects"), "\(signedOut)")
        #expect(try keys.listKeys().filter { $0.namespace == namespace }.count < before)
        _ = try await phone.run("signin alice")
        _ = try await phone.run("sync")
        // Forgotten here (the backend still answers the same publication, under the same derived key).
        let again = try await phone.run("publish \(id)")
        #expect(again["alreadyPublished"] == false && again["path"] == first["path"], "\(again)")
        let deleted = try await phone.run("delete-account")
        #expect(Self.names(deleted["deleted"]).contains("effects"), "\(deleted)")
        #expect(try keys.listKeys().filter { $0.namespace == namespace }.isEmpty)
        #expect(try backend.publicationCounts() == [id: 1])
        _ = try await phone.run("quit")
    }

    /// Found in an outside audit: sign-out deleted the effect ledger, and the next `publish` of the same note
    /// drew a new random key — the backend, which deduplicates by key, published the note a second time. The
    /// key now says what is published (the note, published once), so it is the same key again.
    @Test func aPublicationForgottenAtSignOutIsNeverMadeTwice() async throws {
        let (directory, backend, phone, id) = try await Self.syncedEssay("keel-notes-publish")
        defer { withExtendedLifetime(directory) {} }  // the data is deleted with it
        let first = try await phone.run("publish \(id)")
        #expect(first["ok"] == true, "\(first)")
        #expect(try await phone.run("signout")["ok"] == true)
        _ = try await phone.run("signin alice")
        _ = try await phone.run("sync")
        let again = try await phone.run("publish \(id)")
        #expect(again["ok"] == true && again["path"] == first["path"], "\(again)")
        #expect(try backend.publicationCounts() == [id: 1])
        _ = try await phone.run("quit")
    }

    /// Found in an outside audit: `publish` (online-only: no offline scenario declares it) went out while the
    /// app knew it was offline, and waited out its timeout against a stalled backend before saying `unknown`.
    @Test func publishingOfflineFailsAtOnceWithOffline() async throws {
        let (directory, backend, phone, id) = try await Self.syncedEssay("keel-notes-publish-offline")
        defer { withExtendedLifetime(directory) {} }  // the data is deleted with it
        _ = try await phone.run("offline")
        let answer = try await phone.run("publish \(id)")
        #expect(answer["ok"] == false && answer["error"]?["kind"] == "offline", "\(answer)")
        #expect(try backend.publicationCounts().isEmpty)
        #expect(backend.requestLog.allSatisfy { !$0.path.hasSuffix("/publish") })
        _ = try await phone.run("online")
        #expect(try await phone.run("publish \(id)")["ok"] == true)
        _ = try await phone.run("quit")
    }

    /// Found in an outside audit: drafts were loaded at launch for the account active then only; after a
    /// relaunch, a switch to another account showed its editor empty, and the next keystroke wrote over the
    /// draft kept in its vault.
    @Test func anAccountsDraftComesBackWhenTheAppSwitchesToItAfterARelaunch() async throws {
        let directory = try TemporaryDirectory(prefix: "keel-notes-drafts")
        let backend = try ReferenceBackend(configuration: .init(dataDirectory: directory.url("backend")))
        let phone = try NotesDevice(directory, name: "phone", server: backend.baseURL)
        _ = try await phone.run("signin bob")
        let id = try #require(try await phone.run("new Plan")["id"]?.stringValue)
        _ = try await phone.run("open \(id)")
        _ = try await phone.run("editor \(id)")
        #expect(try await phone.run("type half a thought")["screen"]?["input"] == "half a thought")
        _ = try await phone.run("switch alice")
        _ = try await phone.run("quit")
        _ = try await phone.process.waitForExit()

        let again = try phone.relaunched()
        _ = try await again.run("switch bob")
        _ = try await again.run("open \(id)")
        let editor = try await again.run("editor \(id)")
        #expect(editor["screen"]?["input"] == "half a thought", "\(editor)")
        _ = try await again.run("quit")
    }

    /// Found in an outside audit: launch restored the account's screens as signed in whatever the session, so
    /// a session the server had ended (a 401) came back as a signed-in app after a relaunch. The 401 now shows
    /// sign-in, and a relaunch before the next sign-in asks for it again.
    @Test func aSessionTheServerEndedAsksForSignInAgainAfterARelaunch() async throws {
        let directory = try TemporaryDirectory(prefix: "keel-notes-expired")
        let first = try ReferenceBackend(configuration: .init(dataDirectory: directory.url("backend-1")))
        let phone = try NotesDevice(directory, name: "phone", server: first.baseURL)
        _ = try await phone.run("signin oli")
        let id = try #require(try await phone.run("new Before")["id"]?.stringValue)
        #expect(try await phone.run("sync")["ok"] == true)
        _ = try await phone.run("open \(id)")
        let port = first.port
        first.shutdown()
        let second = try ReferenceBackend(configuration: .init(dataDirectory: directory.url("backend-2"), port: port))
        defer { second.shutdown() }
        #expect(try await phone.run("sync")["error"]?["kind"] == "authentication")
        #expect(try await phone.run("screen")["screen"]?["modal"] == "signIn")
        phone.process.kill()
        _ = try await phone.process.waitForExit()

        let again = try phone.relaunched()
        let screen = try await again.run("screen")
        #expect(screen["screen"]?["modal"] == "signIn", "\(screen)")
        #expect(screen["screen"]?["stack"] == ["home"])
        // A switch to that same account is a sign-in (found in a review: it brought the screens back on the
        // dead token, and the next relaunch no longer asked).
        let signedIn = try await again.run("switch oli")
        #expect(signedIn["ok"] == true && signedIn["screen"]?["modal"] == .null, "\(signedIn)")
        #expect(signedIn["screen"]?["stack"]?[2] == .string("note noteID=\(id)"))
        #expect(try await again.run("sync")["ok"] == true)
        _ = try await again.run("quit")
    }

    /// Found in an outside audit: after a downgrade the account's vault did not open (`schemaTooNew`), and
    /// `signout` answered ok with nothing deleted — the session token and its key stayed.
    @Test func signingOutOfAVaultThatCannotOpenStillDeletesItsCredentials() async throws {
        let directory = try TemporaryDirectory(prefix: "keel-notes-downgrade")
        let backend = try ReferenceBackend(configuration: .init(dataDirectory: directory.url("backend")))
        let phone = try NotesDevice(directory, name: "phone", server: backend.baseURL)
        _ = try await phone.run("signin alice")
        _ = try await phone.run("new Kept on the server")
        _ = try await phone.run("quit")
        _ = try await phone.process.waitForExit()
        let manifestFile = phone.data.appendingPathComponent(
            "vaults/\(VaultNamespace(try AccountID("alice")).rawValue)/vault.json")
        var manifest = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: manifestFile)) as? [String: Any])
        manifest["migrations"] = ["v9-from-a-newer-app"]
        try JSONSerialization.data(withJSONObject: manifest).write(to: manifestFile)

        let downgraded = try phone.relaunched()
        let signedOut = try await downgraded.run("signout")
        #expect(signedOut["ok"] == true, "\(signedOut)")
        let deleted = try #require(
            signedOut["deleted"].flatMap { if case .array(let names) = $0 { names } else { nil } })
        #expect(deleted.contains("session-token"), "\(signedOut)")
        _ = try await downgraded.run("quit")
    }
}
