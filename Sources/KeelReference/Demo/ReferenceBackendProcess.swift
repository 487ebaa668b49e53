public import Foundation
public import KeelContract
import KeelCore
import KeelHTTP
public import KeelTesting

/// `keel backend --data DIR --admin` as a child process, with its admin endpoints as methods: what
/// `keel demo` and the end-to-end tests drive the reference app against.
public final class ReferenceBackendProcess: Sendable {
    /// The process.
    public let process: ChildProcess
    /// `http://127.0.0.1:<port>`.
    public let baseURL: URL
    private let admin: HTTPClient

    /// Starts `keel` (the executable at `keel`) as `keel backend --data <data> --admin` and waits for its
    /// `listening` line.
    ///
    /// - Throws: ``NotesDemoError`` `backend` when it does not start listening within 20 seconds.
    public init(keel: String, data: URL) async throws {
        process = try ChildProcess.launch(
            executable: keel, arguments: ["backend", "--data", data.path, "--admin", "--exit-with-parent"])
        let line: String?
        do { line = try await process.nextLine(timeout: .seconds(20)) } catch { line = nil }
        guard let line, line.hasPrefix("listening "), let url = URL(string: String(line.dropFirst("listening ".count)))
        else {
            process.kill()
            throw NotesDemoError(
                code: .backend,
                message: "keel backend did not start: \(line ?? "") \(process.output(of: .standardError).suffix(600))")
        }
        baseURL = url
        admin = HTTPClient(
            configuration: .init(
                baseURL: url,
                policy: CallPolicy(attemptTimeout: .seconds(10), deadline: .seconds(15), maximumAttempts: 1)
            ))
    }

    /// `GET /_admin/<path>` as JSON.
    public func get(_ path: String) async throws -> JSONValue {
        try await call(.get("/_admin/" + path))
    }

    /// `POST /_admin/<path>` with `body`.
    @discardableResult
    public func post(_ path: String, _ body: JSONObject) async throws -> JSONValue {
        try await call(
            .post(
                "/_admin/" + path, body: Data(JSONValue.object(body).serialized()), idempotency: .idempotent,
                headers: ["Content-Type": "application/json"]))
    }

    private func call(_ operation: HTTPOperation) async throws -> JSONValue {
        do {
            let reply = try await admin.send(operation)
            return try JSONValue(parsing: reply.body)
        } catch {
            throw NotesDemoError(code: .backend, message: "\(operation.method) \(operation.path): \(error)")
        }
    }

    /// Sets the fault every app request meets (`none`, `stall`, `drop`, `unavailable`, `portal`).
    public func fault(_ mode: String, retryAfter: Int? = nil, delayAcksMs: Int? = nil, count: Int? = nil)
        async throws
    {
        var body: JSONObject = ["mode": .string(mode)]
        if let retryAfter { body["retryAfter"] = .number(JSONNumber(Int64(retryAfter))) }
        if let delayAcksMs { body["delayAcksMs"] = .number(JSONNumber(Int64(delayAcksMs))) }
        if let count { body["count"] = .number(JSONNumber(Int64(count))) }
        try await post("fault", body)
    }

    /// Every idempotency key applied, with how many times.
    public func applied() async throws -> [String: Int] { try await counts("applied") }

    /// Every note of every account (with `account`, `version`, `deleted`).
    public func notes() async throws -> [JSONValue] {
        guard case .array(let notes)? = try await get("notes")["notes"] else {
            throw NotesDemoError(code: .backend, message: "GET /_admin/notes without notes")
        }
        return notes
    }

    /// The note `id` as the backend has it, if it has it.
    public func note(_ id: String) async throws -> JSONValue? {
        try await notes().first { $0["id"]?.stringValue == id }
    }

    /// Publications per note.
    public func published() async throws -> [String: Int] { try await counts("published") }

    /// `GET /_admin/<name>`'s member `<name>`: a count per key.
    private func counts(_ name: String) async throws -> [String: Int] {
        guard case .object(let object)? = try await get(name)[name] else {
            throw NotesDemoError(code: .backend, message: "GET /_admin/\(name) without \(name)")
        }
        return object.reduce(into: [:]) { result, entry in
            if case .number(let number) = entry.value, let count = number.int64 { result[entry.key] = Int(count) }
        }
    }

    /// The last requests the app made (method, path, status, account, trace headers).
    public func requests() async throws -> [JSONValue] {
        guard case .array(let requests)? = try await get("requests")["requests"] else {
            throw NotesDemoError(code: .backend, message: "GET /_admin/requests without requests")
        }
        return requests
    }

    /// Stops the backend (SIGTERM: answers in flight go out first).
    public func stop() async {
        process.kill(signal: ChildProcess.Signal.terminate)
        if (try? await process.waitForExit(timeout: .seconds(15))) == nil { process.kill() }
    }
}
