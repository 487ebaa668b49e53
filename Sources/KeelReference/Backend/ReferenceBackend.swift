public import Foundation
public import KeelCore
public import KeelContract
import KeelCrypto
import KeelStore
import KeelTesting

/// Keel's reference backend: the sample notes contract (`contracts/notes-api.v1.8.yaml`) served on
/// loopback by KeelTesting's HTTP/1.1 server, persisted in SQLite so that it survives its own restart.
///
/// What it keeps (the promises a sync client is tested against):
/// - **Idempotent batch mutations.** `POST /mutations` applies each mutation at most once per idempotency
///   key and account (the mutation's `idempotencyKey`, or its `id`); a replay returns the stored result
///   (`duplicate` where it was `applied`); a key reused with another payload refuses the whole batch with
///   422 `idempotency_key_reused`; a key still being applied by another request answers 409
///   `idempotency_key_in_progress`. The batch's own `Idempotency-Key` header follows the same rules and
///   replays the stored response byte for byte; a batch without one is 400 `idempotency_key_missing`.
/// - **Publishing** (`POST /notes/{id}/publish`): irreversible, made at most once per `Idempotency-Key` and
///   account; a replay answers the same publication, a key still in progress 409, a key reused for another
///   note 422.
/// - **Versions.** Every note has a version, raised by each applied mutation; a mutation whose
///   `baseVersion` is not the current one is a `conflict` carrying the server's note (`serverVersion`).
/// - **A changes feed** with an opaque cursor (`GET /changes`), per account, oldest change first;
///   deletions are tombstones (`deleted: true`).
/// - **Operation status** (`GET /operations/{correlationID}`) for the HTTP journal's reconcile.
/// - **Accounts.** `POST /sessions` answers a bearer token per account; every other call needs one (401),
///   and a token is refused for another account named in `X-Account-ID` (403). Accounts never see each
///   other's notes.
/// - **Version policy.** `X-App-Version` below the platform's minimum → 426 `update_required` with the
///   minimum per platform; below the latest → `X-Update-Available`.
/// - **A request log** with the trace headers each request carried.
/// - **Errors in the contract's format, always.** A request the HTTP layer refuses before routing is answered
///   with the contract's Error body too, never plain text: 400 `bad_request` (a malformed request line,
///   header, `Content-Length` or chunk; no `Host`; both `Content-Length` and `Transfer-Encoding`), 408
///   `request_timeout`, 413 `payload_too_large`, 414 `uri_too_long`, 431 `headers_too_large`, 505
///   `http_version_not_supported` — each closing its connection.
///
/// With ``Configuration/admin``, `/_admin/...` endpoints let tests and demos inspect it and inject faults
/// (see ``Fault``); the same things are available as methods.
public final class ReferenceBackend: Sendable {
    /// How the backend runs.
    public struct Configuration: Sendable {
        /// Where its database lives (created when missing).
        public var dataDirectory: URL
        /// The port on 127.0.0.1; 0 lets the system choose.
        public var port: Int
        /// Whether the `/_admin/...` endpoints answer.
        public var admin: Bool
        /// The clock of `updatedAt` and session dates.
        public var clock: WallClock
        /// Tokens and request ids.
        public var random: RandomSource
        /// Receives one line per request (method, path, status, account and trace headers).
        public var log: (@Sendable (String) -> Void)?
        /// Asked before `POST /_admin/min-version` requires a version (MOB-API-005): nil lets every minimum
        /// through; otherwise the minimum is refused (409 `rollout_incomplete`) unless the gate allows it or
        /// the body declares a security incident. `keel backend --stores` answers with `keel release-gate`.
        public var minimumVersionGate: MinimumVersionGate?
        /// The longest request body it reads; a longer one is answered 413 `payload_too_large` (declared by the
        /// operations that take a body). 64 MiB by default.
        public var maximumBodyBytes: Int

        /// A configuration; the defaults suit tests.
        public init(
            dataDirectory: URL, port: Int = 0, admin: Bool = false, clock: WallClock = .system,
            random: RandomSource = .system, log: (@Sendable (String) -> Void)? = nil,
            minimumVersionGate: MinimumVersionGate? = nil, maximumBodyBytes: Int = 64 * 1024 * 1024
        ) {
            self.dataDirectory = dataDirectory
            self.port = port
            self.admin = admin
            self.clock = clock
            self.random = random
            self.log = log
            self.minimumVersionGate = minimumVersionGate
            self.maximumBodyBytes = maximumBodyBytes
        }
    }

    /// Whether the backend may require `version` on `platform` (`ios` or `android`) now: the reasons it may
    /// not — each production store that cannot serve that version to every one of its users yet — or none
    /// when it may. A throw (the store catalog cannot be read) refuses the minimum too: nothing verified it.
    public typealias MinimumVersionGate =
        @Sendable (_ platform: String, _ version: String) throws -> [String]

    /// A fault the backend plays until it is set back to ``Mode/none``.
    public struct Fault: Sendable, Equatable {
        /// What every non-admin request meets.
        public enum Mode: String, Sendable, CaseIterable {
            /// Normal service.
            case none
            /// Requests are read and never answered; nothing is applied.
            case stall
            /// Requests are applied, then the connection closes without an answer (the client cannot know).
            case drop
            /// 503 `maintenance` (with `Retry-After` when set); nothing is applied.
            case unavailable
            /// A captive portal's HTML login page (200) for every path; nothing is applied.
            case portal
        }
        /// The mode.
        public var mode: Mode
        /// The `Retry-After` seconds of ``Mode/unavailable``.
        public var retryAfter: Int?
        /// Answers to `POST /mutations` and publications are held this long after they are applied (a late
        /// response).
        public var delayAcks: Duration?
        /// How many requests meet ``mode`` before service is normal again; nil: until it is changed.
        public var count: Int?

        /// A fault.
        public init(mode: Mode, retryAfter: Int? = nil, delayAcks: Duration? = nil, count: Int? = nil) {
            self.mode = mode
            self.retryAfter = retryAfter
            self.delayAcks = delayAcks
            self.count = count
        }

        /// Normal service.
        public static let none = Fault(mode: .none)
    }

    /// One logged request.
    public struct LoggedRequest: Sendable, Equatable {
        /// Method and path (without the query).
        public let method: String, path: String
        /// The status answered (0 when none was: a stall or a drop).
        public let status: Int
        /// The account of the token, when it was valid.
        public let account: String?
        /// Trace, correlation and idempotency headers as received.
        public let traceparent: String?, tracestate: String?, correlationID: String?, idempotencyKey: String?
        /// Whether `Authorization` was present.
        public let hadAuthorization: Bool
    }

    /// Why a backend could not start on its data directory.
    public struct DataDirectoryInUse: Error, Sendable, CustomStringConvertible {
        /// The data directory.
        public let path: String

        /// What happened and what to do, for a person.
        public var description: String {
            "\(path) is in use by another reference backend (it holds backend.lock there): stop that one first"
        }
    }

    let handler: BackendHandler
    let server: TestServer
    /// Held while it serves: one backend per data directory (see ``init(configuration:)``).
    private let lock: ExclusiveFileLock

    /// Opens (or creates) the database and starts serving on 127.0.0.1.
    ///
    /// One backend serves a data directory at a time, in this process or any other: the deduplication of
    /// keys still being applied (409) lives in the serving process, so a second backend on the same
    /// database could apply a key twice. A lock on `backend.lock` in the directory says which one serves; the
    /// kernel drops it when that process dies, and ``stop(timeout:)`` and ``shutdown()`` let it go.
    ///
    /// - Throws: ``DataDirectoryInUse`` when another backend serves the directory; `CocoaError` when it
    ///   cannot be created; `DatabaseError`/`MigrationError` when the database cannot be opened;
    ///   ``TestServerError`` when the port cannot be bound.
    public init(configuration: Configuration) throws {
        let directory = configuration.dataDirectory
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        do {
            lock = try ExclusiveFileLock(directory.appendingPathComponent("backend.lock").path, .file)
        } catch .held {
            throw DataDirectoryInUse(path: directory.path)
        } catch .failed(let code) {
            throw CocoaError(
                .fileWriteUnknown,
                userInfo: [
                    NSFilePathErrorKey: directory.appendingPathComponent("backend.lock").path,
                    NSUnderlyingErrorKey: NSError(domain: NSPOSIXErrorDomain, code: Int(code)),
                ])
        }
        let store = try BackendStore(directory: directory)
        // What makes this database's cursors its own (see ChangeCursor): made once, kept.
        if store.setting(ChangeCursor.epochSetting) == nil {
            try store.setSetting(ChangeCursor.epochSetting, BackendHandler.randomHex(configuration.random, bytes: 8))
        }
        let handler = BackendHandler(store: store, configuration: configuration)
        self.handler = handler
        server = try TestServer(
            // Idle connections are closed after five minutes: a thread serves each, and a long-running backend
            // must not keep threads for clients that went quiet (a client's own pool lets go sooner).
            configuration: .init(
                port: configuration.port, maximumBodyBytes: configuration.maximumBodyBytes, recordsRequests: false,
                idleTimeout: .seconds(300), rejectionAnswer: BackendHandler.rejectionAnswer),
            dispatcher: .init { request in handler.respond(to: request) })
    }

    /// `http://127.0.0.1:<port>`.
    public var baseURL: URL { server.baseURL }

    /// The port it listens on.
    public var port: Int { server.port }

    /// Stops: refuses new connections, finishes the requests in flight (at most `timeout`), closes.
    public func stop(timeout: Duration = .seconds(10)) async {
        // Answers held back (`delayAcksMs`) go out now: their mutations are applied, and the drain waits
        // for them.
        handler.state.withLock { $0.stopping = true }
        await server.drain(timeout: timeout)
        lock.release()
    }

    /// Stops at once, cutting requests in flight.
    public func shutdown() {
        server.shutdown()
        lock.release()
    }

    /// Sets the fault every non-admin request meets.
    public func setFault(_ fault: Fault) { handler.state.withLock { $0.fault = fault } }

    /// Every idempotency key that was applied, with how many times the change sent under it was applied —
    /// the most for any one account, as keys are scoped per account (2 is always a double application).
    ///
    /// Canonically equivalent keys (NFC and NFD spellings) fold into one entry of this Swift dictionary;
    /// `GET /_admin/applied` keeps them apart.
    public func appliedKeys() throws -> [String: Int] {
        try handler.store.appliedKeysMost().reduce(into: [:]) { result, entry in
            result[entry.key.name] = max(result[entry.key.name] ?? 0, entry.value)
        }
    }

    /// Account → idempotency key → how many times the change sent under it was applied.
    ///
    /// Canonically equivalent account names fold into one entry of this Swift dictionary (their counts
    /// added); `GET /_admin/applied-by-account` keeps them apart.
    public func appliedKeysByAccount() throws -> [String: [String: Int]] {
        try handler.store.appliedKeys().reduce(into: [:]) { result, entry in
            for (key, times) in entry.value { result[entry.key.name, default: [:]][key.name, default: 0] += times }
        }
    }

    /// How many publications each note has (once, unless something is broken): of `account`'s notes, or of
    /// every account's together.
    public func publicationCounts(account: String? = nil) throws -> [String: Int] {
        try handler.store.publicationCounts(account: account)
    }

    /// Every note of every account, tombstones included: its document with `account`, `version` and
    /// `deleted`.
    public func notes() throws -> [JSONObject] { try handler.store.documents() }

    /// How many notes exist (not deleted), all accounts together.
    public func noteCount() throws -> Int { try handler.store.liveNoteCount() }

    /// Sets the minimum supported version (and optionally the latest) of `platform`; nil clears it.
    public func setMinimumVersion(_ version: AppVersion?, latest: AppVersion? = nil, platform: String) throws {
        try handler.store.setSetting("minimum.\(platform)", version?.description)
        try handler.store.setSetting("latest.\(platform)", latest?.description)
    }

    /// The last requests (at most 1,000), oldest first.
    public var requestLog: [LoggedRequest] { handler.state.withLock { Array($0.log.suffix(1000)) } }
}

/// Answers requests: routing, authentication, version policy, faults and the endpoints.
package final class BackendHandler: Sendable {
    let store: BackendStore
    let configuration: ReferenceBackend.Configuration
    let state = Locked(State())

    struct State {
        var fault = ReferenceBackend.Fault.none
        /// Keys and operations, told apart by their bytes as the store tells them apart (Swift's `==` takes a
        /// decomposed "é" for the precomposed one: two accounts' keys would collide).
        var keysInProgress: Set<[UInt8]> = []
        var operationsInProgress: Set<[UInt8]> = []
        var log: [ReferenceBackend.LoggedRequest] = []
        /// Set when the backend stops: late answers are no longer held.
        var stopping = false
    }

    init(store: BackendStore, configuration: ReferenceBackend.Configuration) {
        self.store = store
        self.configuration = configuration
    }

    func respond(to request: RecordedRequest) -> TestResponse {
        let path = request.path
        if path.hasPrefix("/_admin/") {
            guard configuration.admin else { return Self.json(status: 404, ["code": "not_found"]) }
            return guarded {
                try Self.requireLocalCaller(request)
                return try self.admin(request)
            }  // not logged: the log is what the app sent
        }
        let fault = state.withLock { state -> ReferenceBackend.Fault in
            let fault = state.fault
            if fault.mode != .none, let count = fault.count {
                // The last counted request clears the mode (a delay of acknowledgements stays).
                state.fault.count = count - 1
                if count <= 1 { state.fault = .init(mode: .none, delayAcks: fault.delayAcks) }
            }
            return fault
        }
        switch fault.mode {
        case .none, .drop: break
        case .stall:
            record(request, status: 0, account: nil)
            return TestResponse(socketEffect: .noResponse)
        case .unavailable:
            var headers: HeaderFields = [:]
            if let seconds = fault.retryAfter { headers["Retry-After"] = String(seconds) }
            let response = Self.json(
                status: 503, ["code": "maintenance", "message": "the backend is down for maintenance"],
                headers: headers)
            record(request, status: 503, account: nil)
            return response
        case .portal:
            record(request, status: 200, account: nil)
            return TestServer.Dispatcher.captivePortal(.loginPage).response(to: request)
        }
        var account: String?
        var response = answer(request, account: &account)
        if fault.mode == .drop { response = TestResponse(socketEffect: .disconnectAfterRequest) }
        record(request, status: fault.mode == .drop ? 0 : response.status, account: account)
        return response
    }

    private func answer(_ request: RecordedRequest, account: inout String?) -> TestResponse {
        do {
            // The version gate guards the app's data, on the endpoints whose contract declares 426. It never
            // stands before the answers an app below the minimum still needs: `/client-config` (which exists to
            // tell it so, as a 200), sign-in, and what became of its operations.
            let gated =
                !["/sessions", "/client-config"].contains(request.path) && !request.path.hasPrefix("/operations/")
            if gated { try checkVersion(request) }
            try Self.requireAllowedMethod(request)
            var headers = try updateHeaders(request)
            switch (Self.routed(request.method), request.path) {
            case ("POST", "/sessions"): return try signIn(request)
            case ("GET", "/client-config"): return try clientConfig(request)
            default: break
            }
            let owner = try authenticate(request)
            account = owner
            let response: TestResponse
            switch (Self.routed(request.method), request.path) {
            case ("POST", "/mutations"): response = try mutations(request, account: owner)
            case ("GET", "/changes"): response = try changes(request, account: owner)
            case ("POST", let path) where path.hasPrefix("/notes/") && path.hasSuffix("/publish"):
                response = try publish(
                    Self.pathParameter(path.dropFirst("/notes/".count).dropLast("/publish".count)), request,
                    account: owner)
            case ("GET", let path) where path.hasPrefix("/notes/"):
                response = try note(Self.pathParameter(path.dropFirst("/notes/".count)), account: owner)
            case ("GET", let path) where path.hasPrefix("/operations/"):
                response = try operation(Self.pathParameter(path.dropFirst("/operations/".count)), account: owner)
            default:
                throw BackendFailure(status: 404, code: "not_found", message: "no such endpoint")
            }
            var merged = response
            headers.append(contentsOf: response.headers)
            merged.headers = headers
            return merged
        } catch let failure as BackendFailure {
            return Self.failure(failure)
        } catch {
            return Self.failure(BackendFailure(status: 500, code: "internal", message: "\(error)"))
        }
    }

    /// The methods the resource at `path` answers, or nil for a path that names no resource.
    static func methods(at path: String) -> [String]? {
        switch path {
        case "/sessions", "/mutations", "/_admin/fault", "/_admin/min-version": return ["POST"]
        case "/client-config", "/changes", "/_admin/applied", "/_admin/applied-by-account", "/_admin/notes",
            "/_admin/published", "/_admin/requests":
            return ["GET"]
        case _ where path.hasPrefix("/notes/") && path.hasSuffix("/publish"): return ["POST"]
        case _ where path.hasPrefix("/notes/") || path.hasPrefix("/operations/"): return ["GET"]
        default: return nil
        }
    }

    /// RFC 9110 §15.5.6: a method the resource does not answer is 405 with the methods it does in `Allow` —
    /// not 404, which would tell a client with a wrong method that the endpoint is missing. Before
    /// authentication: which methods a path answers is the same for everyone.
    static func requireAllowedMethod(_ request: RecordedRequest) throws {
        guard var allowed = methods(at: request.path), !allowed.contains(routed(request.method)) else { return }
        if allowed.contains("GET") { allowed.append("HEAD") }
        throw BackendFailure(
            status: 405, code: "method_not_allowed",
            message: "\(request.path) answers \(allowed.joined(separator: ", ")), not \(request.method)",
            headers: ["Allow": allowed.joined(separator: ", ")])
    }

    /// The method a request is answered as: HEAD as GET (RFC 9110 §9.3.2: the same header fields, and the
    /// server writes no body), anything else as itself.
    static func routed(_ method: String) -> String { method == "HEAD" ? "GET" : method }

    private func guarded(_ body: () throws -> TestResponse) -> TestResponse {
        do { return try body() } catch let failure as BackendFailure {
            return Self.failure(failure)
        } catch {
            return Self.failure(BackendFailure(status: 500, code: "internal", message: "\(error)"))
        }
    }

    // MARK: - Requests refused by the HTTP layer

    /// The stable code of each answer the HTTP layer gives a request it refuses before the backend sees it (the
    /// contract's Error `code`): the request is not well-formed HTTP/1.1 or is larger than the server reads.
    static let rejectionCodes: [Int: String] = [
        400: "bad_request",  // a malformed request line, header, Content-Length or chunk; no Host; both framings
        408: "request_timeout",  // the head or body stopped arriving for the idle timeout
        413: "payload_too_large",  // the body is larger than the server reads
        414: "uri_too_long",  // the request line alone is larger than the server reads
        431: "headers_too_large",  // the head is larger than the server reads
        505: "http_version_not_supported",  // not HTTP/1.0 or HTTP/1.1
    ]

    /// A request the HTTP layer refused, answered as the contract answers every failure: an Error body with a
    /// stable machine code (``rejectionCodes``; `request_rejected` for a status not listed there) and the
    /// reason as its message, for logs.
    @Sendable static func rejectionAnswer(_ rejection: TestServer.Rejection) -> TestServer.RejectionAnswer {
        let code = rejectionCodes[rejection.status] ?? "request_rejected"
        let object: JSONObject = ["code": .string(code), "message": .string(rejection.reason)]
        return TestServer.RejectionAnswer(
            headers: ["Content-Type": "application/json"], body: Data(JSONValue.object(object).serialized()))
    }

    // MARK: - Log

    private func record(_ request: RecordedRequest, status: Int, account: String?) {
        let entry = ReferenceBackend.LoggedRequest(
            method: request.method, path: request.path, status: status, account: account,
            traceparent: request.headers["traceparent"], tracestate: request.headers["tracestate"],
            correlationID: request.headers["X-Correlation-ID"], idempotencyKey: request.headers["Idempotency-Key"],
            hadAuthorization: request.headers["Authorization"] != nil)
        state.withLock { state in
            state.log.append(entry)
            // Trimmed in chunks: shifting 1,000 entries on every request would put the copy on the hot path.
            if state.log.count > 2000 { state.log.removeFirst(state.log.count - 1000) }
        }
        if let log = configuration.log {
            // Every field as one word of visible ASCII: what a client sent is escaped, so it can neither end
            // the line, add a field nor reach the terminal as a control sequence.
            var line =
                "\(Self.logWord(request.method)) \(Self.logWord(request.path)) \(status == 0 ? "-" : String(status))"
            line += " account=\(Self.logWord(account))"
            line += " traceparent=\(Self.logWord(entry.traceparent))"
            line += " tracestate=\(Self.logWord(entry.tracestate))"
            line += " correlation=\(Self.logWord(entry.correlationID))"
            log(line)
        }
    }

    /// `value` for the request log: `-` when absent (or empty); a space, `%`, `"`, a control character or
    /// anything beyond ASCII as `%XX` (its UTF-8 bytes), so each field stays one word of printable text.
    package static func logWord(_ value: String?) -> String {
        guard let value, !value.isEmpty else { return "-" }
        var word = ""
        for byte in value.utf8 {
            if byte > 0x20, byte < 0x7F, byte != UInt8(ascii: "%"), byte != UInt8(ascii: "\"") {
                word.unicodeScalars.append(Unicode.Scalar(byte))
            } else {
                word += Hex.percentEscape(byte)
            }
        }
        return word
    }

    /// A path parameter (`{id}`, `{correlationID}`): one segment, percent-decoded (`a%2Fb` is `a/b`). A raw
    /// `/` is another path, and a malformed escape names nothing: no such endpoint either way.
    static func pathParameter(_ raw: Substring) throws -> String {
        guard !raw.isEmpty, !raw.contains("/"), let value = raw.removingPercentEncoding else {
            throw BackendFailure(status: 404, code: "not_found", message: "no such endpoint")
        }
        return value
    }

    // MARK: - Authentication and version policy

    private func authenticate(_ request: RecordedRequest) throws -> String {
        // The scheme's name is case-insensitive (RFC 9110 §11.1): `bearer <token>` is a bearer token.
        guard let authorization = request.headers["Authorization"], authorization.count > 7,
            authorization.prefix(7).lowercased() == "bearer ",
            let account = try store.account(
                forToken: String(authorization.dropFirst(7)).trimmingCharacters(in: .whitespaces))
        else {
            // A 401 names the scheme it wants (RFC 9110 §11.6.1, RFC 6750 §3).
            throw BackendFailure(
                status: 401, code: "authentication_required", message: "a valid bearer token is needed",
                headers: ["WWW-Authenticate": #"Bearer realm="notes""#])
        }
        // Accounts are told apart by their bytes, as sessions and notes are stored (Swift's `==` would take a
        // decomposed "é" for the precomposed one: another account). Two claims are refused (403, as any claim
        // the token does not match), not the first one believed.
        let claims = request.headers.values(for: "X-Account-ID")
        guard claims.count <= 1 else {
            throw BackendFailure(
                status: 403, code: "account_mismatch", message: "X-Account-ID is given more than once")
        }
        if let claimed = claims.first, !AccountID.same(claimed, account) {
            throw BackendFailure(
                status: 403, code: "account_mismatch", message: "the token belongs to another account")
        }
        return account
    }

    private func checkVersion(_ request: RecordedRequest) throws {
        // A version that does not parse cannot be judged against the minimum: refused, never let through.
        if let text = request.headers["X-App-Version"], AppVersion(text) == nil {
            throw BackendFailure(
                status: 400, code: "validation",
                message: "X-App-Version must be 1 to 4 dot-separated integers, each at most \(Int.max)",
                errors: [("X-App-Version", "pattern")])
        }
        // Nor can a version without its platform, or a platform the contract does not name (`IOS`, `web`):
        // the gate would otherwise be passed by leaving one header out or spelling the other differently.
        let platform = request.headers["X-App-Platform"]
        let text = request.headers["X-App-Version"]
        if platform != nil || text != nil {
            guard let platform, ["ios", "android"].contains(platform), text != nil else {
                throw BackendFailure(
                    status: 400, code: "validation",
                    message: "X-App-Version and X-App-Platform (ios or android) are sent together",
                    errors: [("X-App-Platform", "enum")])
            }
        }
        guard let platform, let text, let version = AppVersion(text) else { return }
        guard let minimum = store.setting("minimum.\(platform)").flatMap(AppVersion.init), version < minimum
        else { return }
        var minimums = JSONObject()
        for name in ["ios", "android"] {
            if let value = store.setting("minimum.\(name)") { minimums[name] = .string(value) }
        }
        throw BackendFailure(
            status: 426, code: "update_required", message: "this app version is no longer supported",
            extra: ["minimumVersions": .object(minimums)])
    }

    private func updateHeaders(_ request: RecordedRequest) throws -> HeaderFields {
        guard let platform = request.headers["X-App-Platform"], let text = request.headers["X-App-Version"],
            let version = AppVersion(text), let latest = store.setting("latest.\(platform)"),
            let latestVersion = AppVersion(latest), version < latestVersion
        else { return [:] }
        return ["X-Update-Available": latest]
    }

    // MARK: - Endpoints

    private func signIn(_ request: RecordedRequest) throws -> TestResponse {
        let body = try Self.object(request.body)
        guard let name = body["account"]?.stringValue, (try? AccountID(name)) != nil, name.unicodeScalars.count <= 64
        else {
            throw BackendFailure(
                status: 422, code: "validation", message: "account must be a valid account id",
                errors: [("account", "invalid")])
        }
        let token = Self.randomHex(configuration.random, bytes: 24)
        try store.createSession(account: name, token: token, at: configuration.clock.now())
        return Self.json(status: 200, ["token": .string(token), "account": .string(name)])
    }

    private func clientConfig(_ request: RecordedRequest) throws -> TestResponse {
        let query = Dictionary(request.queryItems.map { ($0.name, $0.value ?? "") }, uniquingKeysWith: { a, _ in a })
        guard let platform = query["platform"], ["ios", "android"].contains(platform),
            let version = query["appVersion"].flatMap(AppVersion.init)
        else {
            throw BackendFailure(status: 400, code: "validation", message: "platform and appVersion are required")
        }
        let minimum = store.setting("minimum.\(platform)")
        let latest = store.setting("latest.\(platform)")
        var status = "ok"
        if let minimum, let minimumVersion = AppVersion(minimum), version < minimumVersion {
            status = "updateRequired"
        } else if let latest, let latestVersion = AppVersion(latest), version < latestVersion {
            status = "updateAvailable"
        }
        var answer: JSONObject = ["status": .string(status)]
        if let minimum { answer["minimumVersion"] = .string(minimum) }
        if let latest { answer["latestVersion"] = .string(latest) }
        return Self.json(status: 200, answer)
    }

    private func note(_ id: String, account: String) throws -> TestResponse {
        guard let stored = try store.note(id, account: account), !stored.deleted else {
            throw BackendFailure(status: 404, code: "not_found", message: "no such note")
        }
        return Self.json(status: 200, stored.document, headers: ["ETag": "\"\(stored.version)\""])
    }

    private func operation(_ correlationID: String, account: String) throws -> TestResponse {
        let key = Array((account + "\u{0}" + correlationID).utf8)
        if state.withLock({ $0.operationsInProgress.contains(key) }) {
            return Self.json(status: 200, ["status": "inProgress"])
        }
        guard let status = try store.operationStatus(correlationID, account: account) else {
            throw BackendFailure(
                status: 404, code: "operation_not_found", message: "no operation with this correlation id")
        }
        return Self.json(status: 200, ["status": .string(status)])
    }

    private func changes(_ request: RecordedRequest, account: String) throws -> TestResponse {
        let scope = ChangeCursor.scope(account: account, epoch: store.setting(ChangeCursor.epochSetting) ?? "")
        var after: Int64 = 0
        var limit = 100
        for item in request.queryItems {
            switch item.name {
            case "cursor":
                guard let value = item.value, let decoded = ChangeCursor.decode(value, scope: scope) else {
                    throw BackendFailure(
                        status: 400, code: "invalid_cursor",
                        message: "the cursor is not one this backend issued for this account: pull from the start")
                }
                after = decoded
            case "limit":
                guard let value = item.value.flatMap(Int.init), (1...500).contains(value) else {
                    throw BackendFailure(
                        status: 400, code: "validation", message: "limit must be 1...500", errors: [("limit", "range")])
                }
                limit = value
            default: break
            }
        }
        guard let page = try store.changes(account: account, after: after, limit: limit) else {
            throw BackendFailure(
                status: 400, code: "invalid_cursor",
                message: "the cursor is past the end of this account's changes: pull from the start")
        }
        return Self.json(
            status: 200,
            [
                "changes": .array(page.notes.map(JSONValue.object)),
                "cursor": .string(ChangeCursor.encode(page.last, scope: scope)),
                "hasMore": .bool(page.hasMore),
            ])
    }

    // MARK: - Admin

    /// Admin endpoints answer only what a test or a demo on this machine sends: the server listens on
    /// loopback only, but a web page the user has open can still send to it. A browser names the page in
    /// `Origin` on every cross-origin POST (refused unless it is loopback), and puts the name it reached
    /// the server under in `Host` (a DNS-rebinding page reaches 127.0.0.1 under its own name: refused).
    static func requireLocalCaller(_ request: RecordedRequest) throws {
        func isLoopback(_ authority: String) -> Bool {
            var host = Substring(authority)
            if host.hasPrefix("[") {
                host = host.dropFirst().prefix { $0 != "]" }
            } else if let colon = host.lastIndex(of: ":") {
                host = host[..<colon]
            }
            if host.hasSuffix(".") { host = host.dropLast() }  // `localhost.`, the name written absolute
            return ["127.0.0.1", "localhost", "::1"].contains(host.lowercased())
        }
        // No Host at all is an HTTP/1.0 client, never a browser.
        if let host = request.headers["Host"], !isLoopback(host) {
            throw BackendFailure(status: 403, code: "forbidden", message: "admin answers only loopback hosts")
        }
        if let origin = request.headers["Origin"] {
            let authority = URL(string: origin).map { url in
                (url.host.map { $0.contains(":") ? "[\($0)]" : $0 } ?? "") + (url.port.map { ":\($0)" } ?? "")
            }
            guard let authority, isLoopback(authority) else {
                throw BackendFailure(status: 403, code: "forbidden", message: "admin answers no web page")
            }
        }
    }

    private func admin(_ request: RecordedRequest) throws -> TestResponse {
        try Self.requireAllowedMethod(request)
        switch (Self.routed(request.method), request.path) {
        case ("GET", "/_admin/applied"):
            // Built from names compared by their bytes (JSONObject keeps `josé` in NFC and NFD apart, as the
            // backend does): found in an outside test, two accounts' keys read as one key applied twice.
            let byKey = try store.appliedKeysMost()
            var object = JSONObject()
            for key in byKey.keys.sorted(by: Self.byBytes) {
                object[key.name] = .number(JSONNumber(Int64(byKey[key]!)))
            }
            return Self.json(
                status: 200,
                ["applied": .object(object), "entities": .number(JSONNumber(Int64(try store.liveNoteCount())))])
        case ("GET", "/_admin/applied-by-account"):
            let applied = try store.appliedKeys()
            var byAccount = JSONObject()
            for account in applied.keys.sorted(by: Self.byBytes) {
                var keys = JSONObject()
                for (key, times) in applied[account]!.sorted(by: { Self.byBytes($0.key, $1.key) }) {
                    keys[key.name] = .number(JSONNumber(Int64(times)))
                }
                byAccount[account.name] = .object(keys)
            }
            return Self.json(status: 200, ["accounts": .object(byAccount)])
        case ("POST", "/_admin/fault"):
            let body = try Self.object(request.body, allowing: ["mode", "retryAfter", "delayAcksMs", "count"])
            guard let name = body["mode"]?.stringValue, let mode = ReferenceBackend.Fault.Mode(rawValue: name) else {
                throw BackendFailure(
                    status: 422, code: "validation",
                    message: "mode must be one of \(ReferenceBackend.Fault.Mode.allCases.map(\.rawValue))")
            }
            let retryAfter = try Self.optionalInteger(body, "retryAfter", atMost: 86_400)
            let delay = try Self.optionalInteger(body, "delayAcksMs", atMost: 600_000)
            let count = try Self.optionalInteger(body, "count", atMost: 1_000_000)
            guard count != 0 else {
                throw BackendFailure(
                    status: 422, code: "validation", message: "count must be at least 1 (or absent: until changed)")
            }
            state.withLock {
                $0.fault = .init(
                    mode: mode, retryAfter: retryAfter, delayAcks: delay.map { .milliseconds($0) }, count: count)
            }
            return Self.json(status: 200, ["mode": .string(mode.rawValue)])
        case ("GET", "/_admin/notes"):
            return Self.json(status: 200, ["notes": .array(try store.documents().map(JSONValue.object))])
        case ("GET", "/_admin/published"):
            var object = JSONObject()
            let account = request.queryItems.first { $0.name == "account" }?.value
            let counts = try store.publicationCounts(account: account)
            for id in counts.keys.sorted() { object[id] = .number(JSONNumber(Int64(counts[id]!))) }
            return Self.json(status: 200, ["published": .object(object)])
        case ("POST", "/_admin/min-version"):
            let body = try Self.object(request.body, allowing: ["platform", "version", "latest", "incident"])
            guard let platform = body["platform"]?.stringValue, ["ios", "android"].contains(platform) else {
                throw BackendFailure(status: 422, code: "validation", message: "platform must be ios or android")
            }
            // `version` is required (null clears the minimum): a body that forgot it must not clear it.
            guard body["version"] != nil else {
                throw BackendFailure(
                    status: 422, code: "validation", message: "version is required (null clears the minimum)")
            }
            func version(_ name: String) throws -> String? {
                guard let value = body[name], value != .null else { return nil }
                guard let text = value.stringValue, AppVersion(text) != nil else {
                    throw BackendFailure(status: 422, code: "validation", message: "\(name) must be a version like 2.1")
                }
                return text
            }
            // Everything is checked before anything is changed: a refused body leaves the policy as it was.
            let minimum = try version("version")
            let latest = body["latest"] == nil ? nil : try version("latest")
            if let minimum, let latest, let low = AppVersion(minimum), let high = AppVersion(latest), high < low {
                throw BackendFailure(
                    status: 422, code: "validation", message: "latest \(latest) is older than the minimum \(minimum)")
            }
            let incident: Bool
            switch body["incident"] {
            case nil, .null?: incident = false
            case .bool(let value)?: incident = value
            default: throw BackendFailure(status: 422, code: "validation", message: "incident must be true or false")
            }
            // MOB-API-005: before a required update is switched on, every production store must offer a compatible
            // release to every user; a staged rollout must not leave some of them unable to get it. Only a
            // security incident may block first (and the block screen then keeps all local data).
            var answer: JSONObject = ["platform": .string(platform)]
            // Only a raise is asked about: lowering or clearing a minimum (or setting the same one again) blocks
            // no one who was not blocked already.
            let current = store.setting("minimum.\(platform)").flatMap(AppVersion.init)
            let raises = minimum.flatMap(AppVersion.init).map { new in current.map { new > $0 } ?? true } ?? false
            if raises, let minimum, let gate = configuration.minimumVersionGate {
                var reasons: [String] = []
                var unverified: String?
                do { reasons = try gate(platform, minimum) } catch { unverified = "\(error)" }
                if let unverified, !incident {
                    // Nothing was verified: a failure of the check itself, not a conflict of the request.
                    throw BackendFailure(
                        status: 503, code: "rollout_unverified",
                        message: "the stores could not be checked, so \(minimum) is not required: \(unverified)")
                }
                if !reasons.isEmpty, !incident {
                    throw BackendFailure(
                        status: 409, code: "rollout_incomplete",
                        message:
                            "\(minimum) is not required on \(platform): not every user can get it yet (\(reasons.joined(separator: "; ")))",
                        extra: ["reasons": .array(reasons.map(JSONValue.string))])
                }
                // A security incident may block first, whatever the stores say (or if they cannot be read).
                if incident, unverified != nil || !reasons.isEmpty {
                    answer["incident"] = true
                    answer["reasons"] = .array(
                        (unverified.map { ["stores unverified: \($0)"] } ?? reasons).map(JSONValue.string))
                }
            }
            try store.setSetting("minimum.\(platform)", minimum)
            if body["latest"] != nil { try store.setSetting("latest.\(platform)", latest) }
            return Self.json(status: 200, answer)
        case ("GET", "/_admin/requests"):
            let log = state.withLock { $0.log.suffix(1000) }
            return Self.json(
                status: 200,
                [
                    "requests": .array(
                        log.map { entry in
                            var object: JSONObject = [
                                "method": .string(entry.method), "path": .string(entry.path),
                                "status": .number(JSONNumber(Int64(entry.status))),
                                "authorization": .bool(entry.hadAuthorization),
                            ]
                            object["account"] = entry.account.map(JSONValue.string) ?? .null
                            object["traceparent"] = entry.traceparent.map(JSONValue.string) ?? .null
                            object["tracestate"] = entry.tracestate.map(JSONValue.string) ?? .null
                            object["correlationID"] = entry.correlationID.map(JSONValue.string) ?? .null
                            object["idempotencyKey"] = entry.idempotencyKey.map(JSONValue.string) ?? .null
                            return .object(object)
                        })
                ])
        default:
            throw BackendFailure(status: 404, code: "not_found", message: "no such admin endpoint")
        }
    }

    // MARK: - JSON helpers

    /// Orders names by their UTF-8 bytes (the admin answers list keys and accounts so).
    static func byBytes(_ lhs: JSONObject.MemberName, _ rhs: JSONObject.MemberName) -> Bool {
        lhs.name.utf8.lexicographicallyPrecedes(rhs.name.utf8)
    }

    static func object(_ body: Data) throws -> JSONObject {
        guard case .object(let object)? = try? JSONValue(parsing: body) else {
            throw BackendFailure(status: 422, code: "validation", message: "the body must be a JSON object")
        }
        return object
    }

    /// A JSON object with no member but `allowed` ones: an admin body with a misspelt member
    /// (`"retryafter"`) is refused rather than run without it.
    static func object(_ body: Data, allowing allowed: [String]) throws -> JSONObject {
        let object = try object(body)
        if let unknown = object.keys.first(where: { !allowed.contains($0) }) {
            throw BackendFailure(
                status: 422, code: "validation",
                message: "unknown member \"\(unknown)\" (allowed: \(allowed.joined(separator: ", ")))")
        }
        return object
    }

    private static func optionalInteger(_ body: JSONObject, _ name: String, atMost limit: Int64) throws -> Int? {
        guard let value = body[name], value != .null else { return nil }
        guard case .number(let number) = value, let integer = number.int64, (0...limit).contains(integer) else {
            throw BackendFailure(
                status: 422, code: "validation", message: "\(name) must be an integer from 0 to \(limit)")
        }
        return Int(integer)
    }

    static func json(status: Int, _ object: JSONObject, headers: HeaderFields = [:]) -> TestResponse {
        var all: HeaderFields = ["Content-Type": "application/json"]
        all.append(contentsOf: headers)
        return TestResponse(status: status, headers: all, body: Data(JSONValue.object(object).serialized()))
    }

    static func failure(_ failure: BackendFailure) -> TestResponse {
        var object: JSONObject = ["code": .string(failure.code), "message": .string(failure.message)]
        if !failure.errors.isEmpty {
            object["errors"] = .array(
                failure.errors.map { .object(["field": .string($0.field), "code": .string($0.code)]) })
        }
        for (key, value) in failure.extra { object[key] = value }
        return json(status: failure.status, object, headers: failure.headers)
    }

    static func randomHex(_ random: RandomSource, bytes: Int) -> String {
        var words: [UInt8] = []
        while words.count < bytes { withUnsafeBytes(of: random.next()) { words.append(contentsOf: $0) } }
        return Hex.encode(words.prefix(bytes))
    }
}

/// The changes feed's cursor: opaque to clients, so that its form can change without a contract change.
/// `c2.<scope>.<sequence in base 36>`, where the scope is 12 hex digits of SHA-256 of this database's
/// random epoch and the account: a cursor of another account (an app that switched accounts and kept its
/// cursor) or of another database (a backend whose data was reset) is refused with `invalid_cursor` — the
/// client pulls from the start — instead of silently skipping changes that happen to be numbered below it.
/// (A database restored from an older backup keeps its epoch: there, only a cursor past the account's last
/// change is refused.) (`c1.` cursors, which had no scope, are refused the same way: one pull from the
/// start.)
enum ChangeCursor {
    /// The setting that holds the database's epoch.
    static let epochSetting = "cursor-epoch"

    /// The scope of `account`'s cursors in the database of `epoch`.
    static func scope(account: String, epoch: String) -> String {
        String(SHA256Digest.hex(Array((epoch + "\u{0}" + account).utf8)).prefix(12))
    }

    static func encode(_ sequence: Int64, scope: String) -> String {
        "c2." + scope + "." + String(sequence, radix: 36)
    }

    /// The sequence number of a cursor of `scope` in the exact form ``encode(_:scope:)`` writes (no sign,
    /// leading zero, upper case or prefix of another radix), or nil.
    static func decode(_ text: String, scope: String) -> Int64? {
        let prefix = "c2." + scope + "."
        guard text.hasPrefix(prefix), let value = Int64(text.dropFirst(prefix.count), radix: 36), value >= 0,
            encode(value, scope: scope) == text
        else { return nil }
        return value
    }
}
