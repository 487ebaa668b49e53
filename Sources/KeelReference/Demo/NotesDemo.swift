public import Foundation
import KeelContract
import KeelCore
import KeelTesting

/// `keel demo`: the reference app (`keel-notes`, two devices, real processes) against the reference backend
/// (`keel backend`, a real process on loopback), through scenarios that each show a requirement of the standard
/// being kept, with every claim checked against what the backend and the app actually report.
///
/// Each scenario is self-contained (its own account and devices, on the shared backend), so that one can be
/// run alone — the end-to-end tests run them one by one, `keel demo` runs them all in order.
public struct NotesDemo: Sendable {
    /// One scenario.
    public struct Scenario: Sendable, Identifiable {
        /// Its short name (`offline`, `kill`, ...).
        public let id: String
        /// What it shows.
        public let title: String
        /// The requirements it demonstrates (`MOB-DATA-004`).
        public let requirements: [String]
        let run: @Sendable (DemoRun) async throws -> Void
    }

    /// Where the executables are and where the demo may write.
    public struct Configuration: Sendable {
        /// The `keel` executable (it runs `keel backend`).
        public var keel: String
        /// The `keel-notes` executable.
        public var notes: String
        /// A fresh directory for the backend's and the devices' data.
        public var directory: URL

        /// A configuration.
        public init(keel: String, notes: String, directory: URL) {
            self.keel = keel
            self.notes = notes
            self.directory = directory
        }
    }

    /// What happens, as it happens.
    public enum Event: Sendable {
        /// The backend listens at this URL.
        case backend(URL)
        /// A scenario starts.
        case scenario(number: Int, of: Int, Scenario)
        /// Something the demo did (a command, a kill, a fault).
        case action(String)
        /// Something the demo checked.
        case verified(Verification)
        /// The scenario could not go on (a process did not answer).
        case aborted(String)
    }

    /// One check: what was expected, what was seen.
    public struct Verification: Sendable, Equatable {
        /// What it claims (`backend applied mutation 7f3… once`).
        public let claim: String
        /// Whether it held.
        public let held: Bool
        /// What was expected, and what was seen (shown when it did not hold).
        public let expected: String, seen: String
        /// The requirements this check shows being kept, among its scenario's; empty for all of them. A
        /// scenario that names two requirements shows some of each: the report counts a check only for
        /// what it checks.
        public let requirements: [String]

        /// A check.
        public init(claim: String, held: Bool, expected: String, seen: String, requirements: [String] = []) {
            self.claim = claim
            self.held = held
            self.expected = expected
            self.seen = seen
            self.requirements = requirements
        }
    }

    /// What one scenario did and found.
    public struct Outcome: Sendable {
        /// The scenario.
        public let scenario: Scenario
        /// Actions and checks, in order.
        public let timeline: [Event]
        /// Why it stopped early, if it did.
        public let abortion: String?

        /// An outcome.
        public init(scenario: Scenario, timeline: [Event], abortion: String?) {
            self.scenario = scenario
            self.timeline = timeline
            self.abortion = abortion
        }

        /// Its checks.
        public var verifications: [Verification] {
            timeline.compactMap { if case .verified(let check) = $0 { check } else { nil } }
        }
        /// The checks that show `requirement` being kept.
        public func verifications(for requirement: String) -> [Verification] {
            verifications.filter {
                ($0.requirements.isEmpty ? scenario.requirements : $0.requirements).contains(requirement)
            }
        }
        /// Whether every check held and nothing stopped it.
        public var passed: Bool { abortion == nil && !verifications.isEmpty && verifications.allSatisfy(\.held) }
    }

    /// The whole run.
    public struct Report: Sendable {
        /// Each scenario's outcome, in order.
        public let outcomes: [Outcome]
        /// How long it took.
        public let duration: Duration

        /// A report.
        public init(outcomes: [Outcome], duration: Duration) {
            self.outcomes = outcomes
            self.duration = duration
        }
        /// Whether every scenario passed.
        public var passed: Bool { !outcomes.isEmpty && outcomes.allSatisfy(\.passed) }

        /// Requirement → the scenarios that demonstrate it, in the order of the standard.
        public var requirements: [(requirement: String, scenarios: [Outcome])] {
            let ids = Set(outcomes.flatMap(\.scenario.requirements)).sorted { a, b in
                NotesDemo.order(a) < NotesDemo.order(b)
            }
            return ids.map { id in (id, outcomes.filter { $0.scenario.requirements.contains(id) }) }
        }

        /// The checks that show `requirement` being kept, across every scenario: each check counts for the
        /// requirements it checks, not for every requirement its scenario names.
        public func verifications(for requirement: String) -> [Verification] {
            outcomes.flatMap { $0.verifications(for: requirement) }
        }

        /// Whether `requirement` was shown kept: its own checks all held, and no scenario that shows it
        /// stopped early (its later checks never ran). A check of another requirement that failed in the same
        /// scenario does not count against it.
        public func demonstrated(_ requirement: String) -> Bool {
            let checks = verifications(for: requirement)
            let scenarios = outcomes.filter { $0.scenario.requirements.contains(requirement) }
            return !checks.isEmpty && checks.allSatisfy(\.held) && scenarios.allSatisfy { $0.abortion == nil }
        }
    }

    /// The configuration.
    public let configuration: Configuration

    /// A demo with `configuration`.
    public init(_ configuration: Configuration) { self.configuration = configuration }

    /// The scenarios, in the order `keel demo` runs them.
    public static let scenarios: [Scenario] = [
        Scenario(
            id: "offline", title: "Offline start: the last synced notes are shown, marked stale; edits wait as pending",
            requirements: ["MOB-DATA-004", "MOB-API-003"], run: { try await $0.offlineStart() }),
        Scenario(
            id: "kill", title: "kill -9 during sync, then resume: nothing applied twice, nothing called synced early",
            requirements: ["MOB-DATA-005", "MOB-API-002"], run: { try await $0.killDuringSync() }),
        Scenario(
            id: "conflict", title: "The same note edited on two devices: both versions kept, then resolved",
            requirements: ["MOB-DATA-005"], run: { try await $0.concurrentEdit() }),
        Scenario(
            id: "switch", title: "An account switch with a change still pending: nothing crosses accounts",
            requirements: ["MOB-DATA-006"], run: { try await $0.accountSwitch() }),
        Scenario(
            id: "links",
            title: "A deep link and a notification open a note above its parents; a killed editor comes back",
            requirements: ["MOB-PLAT-008", "MOB-PLAT-005"], run: { try await $0.deepLinks() }),
        Scenario(
            id: "portal", title: "A captive portal is recognised, not taken for the backend",
            requirements: ["MOB-API-003"], run: { try await $0.captivePortal() }),
        Scenario(
            id: "update", title: "A required update blocks calls and keeps drafts, credentials and an unknown result",
            requirements: ["MOB-API-005"], run: { try await $0.requiredUpdate() }),
        Scenario(
            id: "trace", title: "One trace id across retries; no trace context or token to another host",
            requirements: ["MOB-API-004"], run: { try await $0.traces() }),
        Scenario(
            id: "publish", title: "Publishing is irreversible: it happens once, even when the app is killed during it",
            requirements: ["MOB-PLAT-008", "MOB-API-002"], run: { try await $0.publishOnce() }),
    ]

    /// Runs `only` (scenario ids; all when nil) against a new `keel backend`, reporting as it goes.
    ///
    /// - Throws: ``NotesDemoError`` when the backend cannot be started; a scenario that fails is reported in
    ///   its ``Outcome``, and the next one still runs.
    public func run(only: [String]? = nil, progress: @escaping @Sendable (Event) -> Void = { _ in }) async throws
        -> Report
    {
        let chosen = only.map { ids in Self.scenarios.filter { ids.contains($0.id) } } ?? Self.scenarios
        let clock = ContinuousClock()
        let start = clock.now
        // The devices' vaults and key directories live here: the owner's alone, like a real app's container.
        try FileManager.default.createDirectory(
            at: configuration.directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let backend = try await ReferenceBackendProcess(
            keel: configuration.keel, data: configuration.directory.appendingPathComponent("backend"))
        progress(.backend(backend.baseURL))
        let pages = try PublicPages()
        var outcomes: [Outcome] = []
        for (index, scenario) in chosen.enumerated() {
            // Cancelled (Ctrl-C): no further scenario starts, and what runs stops at its next step.
            if Task.isCancelled { break }
            progress(.scenario(number: index + 1, of: chosen.count, scenario))
            let run = DemoRun(
                configuration: configuration, backend: backend, pages: pages, scenario: scenario, progress: progress)
            var abortion: String?
            do { try await scenario.run(run) } catch {
                // Stopped from outside (Ctrl-C, SIGTERM): said as such, not as "CancellationError()" or a device
                // that did not answer (found in an outside audit). Ctrl-C reaches the whole process group at
                // once: a device can die of it, and its step fail, before this process has handled its own
                // signal and cancelled the run (found when a CI run printed "phone cannot take 'signin bruno'"
                // for a SIGINT). A failure is reported a moment later, once such a signal had time to arrive;
                // the wait ends at once when it does.
                if !(error is CancellationError) { try? await clock.sleep(for: .milliseconds(300)) }
                abortion = error is CancellationError || Task.isCancelled ? "interrupted" : "\(error)"
                progress(.aborted(abortion ?? ""))
            }
            await run.finish()
            outcomes.append(Outcome(scenario: scenario, timeline: await run.timeline, abortion: abortion))
        }
        pages.server.shutdown()
        await backend.stop()
        return Report(outcomes: outcomes, duration: clock.now - start)
    }

    /// The position of a requirement in the standard (API, platform, data), for the summary table.
    static func order(_ id: String) -> String {
        let groups = ["MOB-API": "1", "MOB-PLAT": "2", "MOB-DATA": "3"]
        let prefix = id.split(separator: "-").prefix(2).joined(separator: "-")
        return (groups[prefix] ?? "9") + id
    }
}

/// The host of published pages: another origin than the backend, which must receive neither the session
/// token nor trace context.
final class PublicPages: Sendable {
    let server: TestServer

    init() throws {
        server = try TestServer(
            dispatcher: .init { request in
                guard request.path.hasPrefix("/p/") else { return TestResponse(status: 404, body: "not found") }
                return TestResponse(
                    status: 200, headers: ["Content-Type": "text/html; charset=utf-8"],
                    body: "<!doctype html><title>A published note</title><p>Published with Keel.</p>")
            })
    }
}

/// One scenario's run: its devices, its checks, its timeline.
actor DemoRun {
    let configuration: NotesDemo.Configuration
    let backend: ReferenceBackendProcess
    let pages: PublicPages
    let scenario: NotesDemo.Scenario
    let progress: @Sendable (NotesDemo.Event) -> Void
    private(set) var timeline: [NotesDemo.Event] = []
    /// What the next checks show (see ``demonstrating(_:)``); empty for all of the scenario's requirements.
    private var demonstrating: [String] = []
    private var devices: [NotesDevice] = []

    init(
        configuration: NotesDemo.Configuration, backend: ReferenceBackendProcess, pages: PublicPages,
        scenario: NotesDemo.Scenario, progress: @escaping @Sendable (NotesDemo.Event) -> Void
    ) {
        self.configuration = configuration
        self.backend = backend
        self.pages = pages
        self.scenario = scenario
        self.progress = progress
    }

    // MARK: - Reporting

    func action(_ text: String) {
        timeline.append(.action(text))
        progress(.action(text))
    }

    /// The checks that follow show these requirements being kept (of the scenario's); none named means all
    /// of the scenario's.
    func demonstrating(_ requirements: String...) {
        precondition(
            requirements.allSatisfy(scenario.requirements.contains),
            "\(scenario.id) does not name \(requirements) among its requirements")
        demonstrating = requirements
    }

    /// Records a check; `expected`/`seen` are shown when it does not hold.
    @discardableResult
    func verify(_ claim: String, _ held: Bool, expected: String, seen: String) -> Bool {
        let check = NotesDemo.Verification(
            claim: claim, held: held, expected: expected, seen: seen, requirements: demonstrating)
        timeline.append(.verified(check))
        progress(.verified(check))
        return held
    }

    /// Records that `seen` equals `expected`.
    @discardableResult
    func verify(_ claim: String, _ seen: JSONValue?, equals expected: JSONValue) -> Bool {
        verify(claim, seen == expected, expected: expected.description, seen: seen?.description ?? "nothing")
    }

    /// Records that the count `seen` equals `expected`.
    @discardableResult
    func verify(_ claim: String, _ seen: Int?, equals expected: Int) -> Bool {
        verify(claim, seen == expected, expected: String(expected), seen: seen.map(String.init) ?? "nothing")
    }

    // MARK: - Devices

    /// A device of this scenario (`<scenario>-<name>` directories), started.
    func device(_ name: String, arguments: [String] = [], server: URL? = nil) throws -> NotesDevice {
        try Task.checkCancellation()
        let directory = configuration.directory.appendingPathComponent(scenario.id)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let device = try NotesDevice(
            name: name, directory: directory,
            server: server ?? backend.baseURL, executable: configuration.notes, arguments: arguments)
        devices.append(device)
        return device
    }

    /// `device` started again on its directories.
    func relaunch(_ device: NotesDevice, server: URL? = nil, arguments: [String]? = nil) throws -> NotesDevice {
        try Task.checkCancellation()
        let next = try device.relaunched(server: server ?? backend.baseURL, arguments: arguments)
        devices.append(next)
        return next
    }

    /// Runs `command` on `device`, shown in the timeline.
    @discardableResult
    func run(_ device: NotesDevice, _ command: String, quiet: Bool = false) async throws -> JSONValue {
        try Task.checkCancellation()
        let answer = try await device.run(command)
        if !quiet {
            var line = "\(device.name)$ \(command)"
            if answer["ok"] == false, let message = answer["error"]?["message"]?.stringValue {
                line += "  → \(answer["error"]?["kind"]?.stringValue ?? "error"): \"\(message)\""
            }
            action(line)
        }
        return answer
    }

    /// Runs `command` and requires `ok: true` (a step the scenario builds on).
    @discardableResult
    func must(_ device: NotesDevice, _ command: String) async throws -> JSONValue {
        let answer = try await run(device, command)
        guard answer["ok"] == true else {
            throw NotesDemoError(code: .badAnswer, message: "\(device.name)$ \(command) answered \(answer)")
        }
        return answer
    }

    /// Signs in and creates a note that the backend has; answers its id.
    func signedInNote(_ device: NotesDevice, account: String, title: String) async throws -> String {
        try await must(device, "signin \(account)")
        let id = try await must(device, "new \(title)")["id"]?.stringValue ?? ""
        try await syncUntilIdle(device)
        return id
    }

    /// Syncs until nothing is outstanding; a key still being applied by an earlier request (409, after a
    /// kill) is waited out, as the app's next trigger would.
    @discardableResult
    func syncUntilIdle(_ device: NotesDevice, within limit: Duration = .seconds(20)) async throws -> JSONValue {
        let deadline = ContinuousClock.now + limit
        var answer: JSONValue = .null
        while ContinuousClock.now < deadline {
            answer = try await run(device, "sync", quiet: true)
            if answer["ok"] == true, answer["outstanding"] == 0 { break }
            if answer["ok"] == false, answer["error"]?["kind"] != "inProgress" { break }
            try await Task.sleep(for: .milliseconds(200))
        }
        action("\(device.name)$ sync  → \(Self.summary(answer))")
        return answer
    }

    static func summary(_ answer: JSONValue) -> String {
        guard answer["ok"] == true else {
            return
                "\(answer["error"]?["kind"]?.stringValue ?? "error"): \"\(answer["error"]?["message"]?.stringValue ?? "")\""
        }
        return ["acknowledged", "conflicts", "pulled", "outstanding"].map {
            "\($0) \(answer[$0]?.description ?? "-")"
        }.joined(separator: ", ")
    }

    /// The note `id` in `device`'s list.
    func listed(_ device: NotesDevice, _ id: String) async throws -> JSONValue? {
        guard case .array(let notes)? = try await run(device, "list", quiet: true)["notes"] else { return nil }
        return notes.first { $0["id"]?.stringValue == id }
    }

    /// Starts a sync on `device` while the backend holds its answers to mutations for 2.5 s after applying them,
    /// and waits (at most 10 s) until `applied` says the backend has the change: whether it does. The scenario
    /// then kills the device before the answer arrives.
    func syncWithItsAnswerHeld(_ device: NotesDevice, applied: () async throws -> Bool) async throws
        -> Bool
    {
        try await backend.fault("none", delayAcksMs: 2500)
        action("backend holds its answers to mutations for 2.5 s after applying them")
        try device.send("sync")
        action("\(device.name)$ sync  (in flight)")
        return try await waitUntil(.seconds(10), applied)
    }

    /// Polls `condition` every 50 ms for at most `limit`.
    func waitUntil(_ limit: Duration, _ condition: () async throws -> Bool) async throws -> Bool {
        let deadline = ContinuousClock.now + limit
        while ContinuousClock.now < deadline {
            if try await condition() { return true }
            try await Task.sleep(for: .milliseconds(50))
        }
        return false
    }

    /// Every change the backend applied was applied exactly once (counted per change, across keys: a change
    /// sent again under a new key counts twice).
    func verifyAppliedOnce() async throws {
        let applied = try await backend.applied()
        let twice = applied.filter { $0.value != 1 }
        verify(
            "the backend applied each of the \(applied.count) changes it received exactly once", twice.isEmpty,
            expected: "every key once", seen: twice.map { "\($0.key.prefix(8))… \($0.value)×" }.joined(separator: ", "))
    }

    /// Quits what is still running and puts the backend back to normal service.
    func finish() async {
        for device in devices where device.process.termination == nil { device.process.kill() }
        try? await backend.fault("none")
        _ = try? await backend.post("min-version", ["platform": "ios", "version": .null, "latest": .null])
    }

    static func short(_ id: String) -> String { String(id.prefix(8)) + "…" }
}
