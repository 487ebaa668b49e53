import Foundation
import KeelContract
import KeelCore
import KeelReference
import KeelTesting
import Testing

/// Two devices of one account make 500 changes and sync while `keel-notes` processes are SIGKILLed at
/// random moments (seeded: `KEEL_CRASH_SEED` replays a run's choices — commands, which are killed, after how
/// long — though not the scheduling of the processes; the seed is in every failure message).
/// Afterwards: every idempotency key the backend applied was applied exactly once (a change sent again under
/// a new key would not show here: keys are made once, when the change is), every note a device created reached
/// it, both devices converge on the
/// backend's notes, conflict records carried both versions, and no device ever called a note synced at a
/// version the backend did not have.
@Suite(.timeLimit(.minutes(6))) struct RandomCrashTests {
    static let mutations = 500
    static let minimumKills = 50
    /// Kills that land while a sync is in flight (the rest interrupt local edits).
    static let minimumKillsDuringSync = 25

    /// One device under test: its current process, the notes it knows, its counters.
    final class Device {
        var process: NotesDevice
        var known: [String] = []
        init(_ process: NotesDevice) { self.process = process }
    }

    @Test func fiftyKillsWhileTwoDevicesSyncFiveHundredMutations() async throws {
        let seed = ProcessInfo.processInfo.environment["KEEL_CRASH_SEED"].flatMap(UInt64.init) ?? 0x5EED_2026
        var random = SeededGenerator(seed: seed)
        let context = "seed \(seed) (KEEL_CRASH_SEED=\(seed) replays this run)"
        let directory = try TemporaryDirectory(prefix: "keel-crash")
        let backend = try ReferenceBackend(configuration: .init(dataDirectory: directory.url("backend"), admin: true))
        defer { backend.shutdown() }
        // Answers to pushes leave 15 ms after the backend applied them: a kill in that window is the hard case
        // (applied, never acknowledged), so it must happen often, not by luck.
        backend.setFault(.init(mode: .none, delayAcks: .milliseconds(15)))
        let devices = [
            Device(try NotesDevice(directory, name: "phone", server: backend.baseURL)),
            Device(try NotesDevice(directory, name: "tablet", server: backend.baseURL)),
        ]
        for device in devices { #expect(try await device.process.run("signin crash")["ok"] == true, "\(context)") }

        var made = 0
        var kills = 0
        var killsDuringSync = 0
        var created: Set<String> = []  // notes whose creation a device answered ok
        var conflictRecords = 0
        var claims: [(id: String, version: Int)] = []  // notes a device called synced, at that version

        /// Reads the device's list: learns its notes and records every `synced` claim.
        func observe(_ device: Device) async throws {
            guard case .array(let notes)? = try await device.process.run("list")["notes"] else { return }
            device.known = notes.compactMap { $0["id"]?.stringValue }
            for note in notes where note["state"] == "synced" {
                if case .number(let number)? = note["version"], let version = number.int64 {
                    claims.append((note["id"]?.stringValue ?? "", Int(version)))
                }
            }
        }

        while made < Self.mutations || kills < Self.minimumKills || killsDuringSync < Self.minimumKillsDuringSync {
            let device = devices[Int(random.next() % 2)]
            let roll = random.next() % 100
            let command: String
            if roll < 15 || device.known.isEmpty {
                command = "new note \(made)"
            } else if roll < 25 {
                command = "sync"
            } else {
                let id = device.known[Int(random.next() % UInt64(device.known.count))]
                switch roll {
                case ..<65: command = "edit \(id) text \(made) from \(device.process.name)"
                case ..<80: command = "tag \(id) t\(random.next() % 6)"
                default: command = "pin \(id)"
                }
            }
            // About one command in eight is killed in flight, at a random moment within its first 30 ms; most of
            // those are a sync (so that kills land between applied and acknowledged).
            if random.next() % 8 == 0 {
                let killed = random.next() % 3 == 0 ? command : "sync"
                try device.process.send(killed)
                try await Task.sleep(for: .microseconds(Int(random.next() % 30_000)))
                try await device.process.kill()
                kills += 1
                if killed == "sync" { killsDuringSync += 1 }
                device.process = try device.process.relaunched()
                try await observe(device)
                continue
            }
            let answer = try await device.process.run(command)
            if command != "sync" {
                if answer["ok"] == true { made += 1 }
                if command.hasPrefix("new"), let id = answer["id"]?.stringValue {
                    device.known.append(id)
                    created.insert(id)
                }
            }
            if random.next() % 10 == 0 { try await observe(device) }
        }

        // Settle: sync both until nothing is outstanding; every conflict is checked and kept as the user's.
        for _ in 0..<30 {
            var idle = true
            for device in devices {
                let answer = try await device.process.run("sync")
                if answer["ok"] != true || answer["outstanding"] != 0 { idle = false }
                guard case .array(let conflicts)? = try await device.process.run("conflicts")["conflicts"] else {
                    continue
                }
                for conflict in conflicts {
                    conflictRecords += 1
                    idle = false
                    guard case .object(let mine)? = conflict["mine"], case .object = conflict["theirs"] else {
                        Issue.record("a conflict record without both versions: \(conflict) — \(context)")
                        continue
                    }
                    #expect(!mine.isEmpty, "\(context)")
                    let id = conflict["id"]?.stringValue ?? ""
                    #expect(try await device.process.run("resolve \(id) mine")["ok"] == true, "\(context)")
                }
            }
            if idle { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        for device in devices { _ = try await device.process.run("sync") }

        // Exactly once.
        let applied = try backend.appliedKeys()
        #expect(!applied.isEmpty)
        #expect(applied.filter { $0.value != 1 }.isEmpty, "keys applied more than once — \(context)")
        #expect(kills >= Self.minimumKills && made >= Self.mutations, "\(kills) kills, \(made) mutations — \(context)")
        #expect(killsDuringSync >= Self.minimumKillsDuringSync, "\(killsDuringSync) kills during sync — \(context)")
        // At least once: every note a device said it created reached the backend (nothing lost to a kill).
        let onBackend = Set(try backend.notes().compactMap { $0["id"]?.stringValue })
        #expect(
            created.subtracting(onBackend).isEmpty,
            "created but never synced: \(created.subtracting(onBackend)) — \(context)")

        // Convergence: both devices show the backend's notes.
        let server = try backend.notes().filter { $0["account"] == "crash" && $0["deleted"] != true }
        func view(_ note: JSONValue) -> String {
            ["id", "title", "body", "tags", "pinned", "version"].map { note[$0]?.description ?? "null" }
                .joined(separator: "|")
        }
        let expected = server.map { view(.object($0)) }.sorted()
        for device in devices {
            guard case .array(let notes)? = try await device.process.run("list")["notes"] else {
                Issue.record("no list from \(device.process.name) — \(context)")
                continue
            }
            #expect(notes.allSatisfy { $0["state"] == "synced" }, "\(device.process.name) — \(context)")
            #expect(
                notes.map(view).sorted() == expected, "\(device.process.name) differs from the backend — \(context)")
        }

        // Never "synced" ahead of the backend.
        let versions = Dictionary(
            server.compactMap { note -> (String, Int)? in
                guard let id = note["id"]?.stringValue, case .number(let number)? = note["version"],
                    let version = number.int64
                else { return nil }
                return (id, Int(version))
            }, uniquingKeysWith: { a, _ in a })
        for claim in claims {
            #expect(
                (versions[claim.id] ?? 0) >= claim.version,
                "a device called \(claim.id) synced at version \(claim.version) — \(context)")
        }
        for device in devices { _ = try await device.process.run("quit") }
        print(
            "random crash: \(kills) kills (\(killsDuringSync) during sync), \(made) mutations, \(created.count) notes created, \(applied.count) keys applied once, \(conflictRecords) conflict records, \(claims.count) synced claims checked — \(context)"
        )
    }
}
