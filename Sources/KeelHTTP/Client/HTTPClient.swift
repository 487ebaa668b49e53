public import Foundation
public import KeelCore
public import KeelContract
import KeelCrypto

/// The HTTP client every Keel call goes through (MOB-API-002, MOB-API-003).
///
/// Each call has a finite deadline on the injected clock; cancelling the calling task stops the
/// in-flight attempt and any wait before a retry at once; a failed attempt is retried only when the
/// failure is transient **and** the operation may be repeated (idempotent or keyed), or when the request
/// provably never left the device. Every failure is an ``HTTPFailure`` with a kind and an outcome.
///
/// A reply that does not decode as the contract's model is its own failure,
/// ``ErrorCode/contractViolation``, carrying the typed ``ContractDecodingError`` (code and path): an app
/// can tell "the server sent a closed-enum value this version does not know" (MOB-API-001: loud, never
/// guessed) from a server error, and no payload text reaches the user-facing projection.
///
/// ```swift
/// let client = HTTPClient(configuration: .init(baseURL: api, middleware: [BearerAuth(tokens: tokens)]))
/// let note = try await client.send(.get("/notes/7"), decoding: Note.self)
/// let created = try await client.sendForReply(.post("/notes", body: json), decoding: Note.self)
/// print(created.value.id, created.reply.requestID ?? "-", created.reply.attempts)
/// ```
///
/// ## Topics
/// - ``Configuration``
/// - ``send(_:policy:)``
/// - ``send(_:decoding:policy:)``
/// - ``sendForReply(_:decoding:policy:)``
/// - ``Reply``
/// - ``Decoded``
public final class HTTPClient: Sendable {
    /// Everything the client needs, injected.
    public struct Configuration: Sendable {
        /// The API's base URL (`https://api.example.com/v1`); operation paths are appended to it.
        public var baseURL: URL
        /// Sends each attempt (``makeDefaultTransport()`` by default: ``SocketTransport`` on Linux,
        /// ``URLSessionTransport`` on Apple platforms).
        public var transport: any HTTPTransport
        /// The clock for deadlines, attempt timeouts and retry delays.
        public var clock: any Clock<Duration>
        /// The wall clock for `Retry-After` dates.
        public var wallClock: WallClock
        /// Randomness for jitter, correlation ids and idempotency keys.
        public var random: RandomSource
        /// Timeouts and retry rules of calls that do not bring their own.
        public var policy: CallPolicy
        /// Shared by all calls of this client.
        public var budget: RetryBudget
        /// The contract version sent on every call (``ContractVersion/header``), if pinned.
        public var contractVersion: ContractVersion?
        /// Where error bodies carry machine codes and field errors.
        public var errorBody: ErrorBodyContract
        /// The header the server puts its request id in.
        public var requestIDHeader: String
        /// The header carrying the correlation id.
        public var correlationIDHeader: String
        /// The header carrying the idempotency key.
        public var idempotencyKeyHeader: String
        /// Receives every attempt event (tests, diagnostics). Called synchronously; keep it cheap.
        public var observer: (@Sendable (AttemptEvent) -> Void)?
        /// Receives the client's debug records (never bodies or header values).
        public var logger: Logger
        /// Steps every attempt goes through, in order (authentication, tracing); see ``HTTPMiddleware``.
        public var middleware: [any HTTPMiddleware]
        /// This app's version and platform, sent on every call, and how the contract answers about them;
        /// nil: no version headers, and version answers are ordinary failures. See ``HTTPClient/versionPolicy``.
        public var versionPolicy: VersionPolicyContract?
        /// Called (synchronously, keep it cheap) whenever ``HTTPClient/versionPolicy`` changes.
        public var onVersionPolicyChange: (@Sendable (VersionPolicy) -> Void)?
        /// The background time the OS grants (MOB-API-004): clamps each call's deadline, and cancels calls
        /// still running when it expires; nil: no limit.
        public var backgroundBudget: (any BackgroundBudget)?
        /// Where mutating operations are recorded before they are sent and settled after (MOB-API-004);
        /// nil: not journaled. See ``HTTPClient/reconcile(rebuild:status:)``.
        public var journal: (any OperationJournal)?
        /// Whether calls may go over cleartext `http` to a host other than this device. False (the default):
        /// a call whose URL is `http` and whose host is not loopback (`localhost`, 127.0.0.0/8, `::1`) is
        /// refused before anything is sent — kind ``ErrorCode/technical``, outcome `notSent`, no attempt —
        /// so that no header a middleware adds (a bearer token) crosses the network unencrypted. `https` and
        /// loopback `http` (a local test server) are never affected.
        ///
        /// This is Keel's App Transport Security, on every platform and transport (on Linux nothing else
        /// stops it), and the opt-in is its exception (`NSAllowsArbitraryLoads`, `NSExceptionAllowsInsecureHTTPLoads`):
        /// set it only for a development server on the local network, never in a release build. It covers the
        /// whole client (one base URL, so one host). On Apple platforms ATS still applies beneath it: a
        /// cleartext host needs its Info.plist exception too.
        public var allowsCleartextHTTP: Bool

        /// A configuration; everything but the base URL has a default suited to production.
        public init(
            baseURL: URL,
            transport: any HTTPTransport = HTTPClient.Configuration.makeDefaultTransport(),
            clock: any Clock<Duration> = ContinuousClock(),
            wallClock: WallClock = .system,
            random: RandomSource = .system,
            policy: CallPolicy = CallPolicy(),
            budget: RetryBudget = RetryBudget(),
            contractVersion: ContractVersion? = nil,
            errorBody: ErrorBodyContract = ErrorBodyContract(),
            requestIDHeader: String = "X-Request-ID",
            correlationIDHeader: String = "X-Correlation-ID",
            idempotencyKeyHeader: String = "Idempotency-Key",
            observer: (@Sendable (AttemptEvent) -> Void)? = nil,
            logger: Logger = .disabled,
            middleware: [any HTTPMiddleware] = [],
            versionPolicy: VersionPolicyContract? = nil,
            onVersionPolicyChange: (@Sendable (VersionPolicy) -> Void)? = nil,
            journal: (any OperationJournal)? = nil,
            backgroundBudget: (any BackgroundBudget)? = nil,
            allowsCleartextHTTP: Bool = false
        ) {
            self.baseURL = baseURL
            self.transport = transport
            self.clock = clock
            self.wallClock = wallClock
            self.random = random
            self.policy = policy
            self.budget = budget
            self.contractVersion = contractVersion
            self.errorBody = errorBody
            self.requestIDHeader = requestIDHeader
            self.correlationIDHeader = correlationIDHeader
            self.idempotencyKeyHeader = idempotencyKeyHeader
            self.observer = observer
            self.logger = logger
            self.middleware = middleware
            self.versionPolicy = versionPolicy
            self.onVersionPolicyChange = onVersionPolicyChange
            self.journal = journal
            self.backgroundBudget = backgroundBudget
            self.allowsCleartextHTTP = allowsCleartextHTTP
        }
    }

    /// A successful exchange.
    public struct Reply: Sendable {
        /// The 2xx status.
        public let status: Int
        /// The response's header fields.
        public let headers: HeaderFields
        /// The response body.
        public let body: Data
        /// The server's request id, when it sent one (never invented).
        public let requestID: String?
        /// The user operation's correlation id.
        public let correlationID: CorrelationID
        /// How many attempts the call took (retries and replays included).
        public let attempts: Int

        /// The first value of header `name`, compared case-insensitively.
        public func header(_ name: String) -> String? { headers[name] }

        /// A reply, for unit tests and previews of an app's code that takes one (a wrapper around the client,
        /// a repository): the client makes the real ones. Give only what matters to the case at hand.
        ///
        /// - Precondition: `status` is a 2xx status (a reply is a success; a failure is an ``HTTPFailure``).
        public init(
            status: Int = 200, headers: HeaderFields = [:], body: Data = Data(), requestID: String? = nil,
            correlationID: CorrelationID, attempts: Int = 1
        ) {
            precondition((200...299).contains(status), "a reply is a 2xx answer; a failure is an HTTPFailure")
            self.status = status
            self.headers = headers
            self.body = body
            self.requestID = requestID
            self.correlationID = correlationID
            self.attempts = attempts
        }
    }

    /// A decoded value with the reply it came in (status, headers, request id, attempts).
    public struct Decoded<Value: Sendable>: Sendable {
        /// The decoded value.
        public let value: Value
        /// The reply it was decoded from.
        public let reply: Reply

        /// A decoded value, for unit tests and previews of an app's code that takes one (the client makes the
        /// real ones).
        public init(value: Value, reply: Reply) {
            self.value = value
            self.reply = reply
        }
    }

    /// The configuration the client was made with.
    public let configuration: Configuration

    /// The base URL as text without a trailing slash, for building request URLs by concatenation; nil
    /// when it has a query or fragment (those go through URLComponents).
    let basePrefix: String?

    /// The version policy as the backend last stated it (MOB-API-005): `.supported` until an answer says
    /// otherwise. Set only by answers the ``Configuration/versionPolicy`` contract defines: a successful
    /// response (with or without an update announcement), a required update, a security block, or
    /// maintenance. Anything malformed leaves it unchanged and fails as `technical`.
    public var versionPolicy: VersionPolicy { policyState.current }

    let policyState: VersionPolicyState

    /// The middleware that sees this client's requests (all go to the base URL's origin), decided once:
    /// reading the origin from a URL and looking it up in every allowlist cost more than the headers they add.
    let middlewareForBase: [any HTTPMiddleware]
    /// Whether any of ``middlewareForBase`` may wait (``HTTPMiddleware/mayWait``), asked once.
    let middlewareMayWait: Bool

    /// Why this client sends nothing (cleartext `http` to a host that is not loopback, not allowed by
    /// ``Configuration/allowsCleartextHTTP``), or nil. Every request URL is the base URL with another path or
    /// query, so its scheme and host are the base URL's: decided once.
    let cleartextRefusal: String?

    /// The header fields the client sets on every request itself (``ClientHeaders``).
    let ownHeaders: ClientHeaders

    /// ``Configuration/versionPolicy`` behind one reference: read on every success, the optional contract
    /// itself was copied, strings and all, each time.
    final class VersionContract: Sendable {
        let contract: VersionPolicyContract
        init(_ contract: VersionPolicyContract) { self.contract = contract }

        /// ``VersionPolicyContract/policy(afterSuccess:)``, the contract read in place.
        func policy(afterSuccess response: TransportResponse) -> VersionPolicy? {
            contract.policy(afterSuccess: response)
        }
    }
    let versionContract: VersionContract?

    /// The journaled calls this client is sending now, and the journal entries reconcile is resolving.
    struct JournalTraffic {
        /// The calls being sent (see `send`'s `identity`): the same one is never on the wire twice at once
        /// (a double tap, an outbox replay racing the first send).
        var calls: Set<String> = []
        /// Journal keys with a call in flight, and how many: reconcile leaves those entries alone (their calls
        /// settle them).
        var keys: [String: Int] = [:]
        /// Journal keys whose entry reconcile is asking the server about: a call for one waits for the answer
        /// (it is refused, `unknown`), so that "never arrived" cannot be written over a send just started.
        var reconciling: Set<String> = []
    }
    let journalTraffic = Locked(JournalTraffic())

    /// A client with `configuration`.
    public init(configuration: Configuration) {
        self.configuration = configuration
        policyState = VersionPolicyState(onChange: configuration.onVersionPolicyChange)
        middlewareForBase = Call.middleware(for: configuration.baseURL, in: configuration)
        middlewareMayWait = middlewareForBase.contains(where: \.mayWait)
        ownHeaders = ClientHeaders(configuration)
        cleartextRefusal = CleartextPolicy.refusal(
            for: configuration.baseURL, allowed: configuration.allowsCleartextHTTP)
        versionContract = configuration.versionPolicy.map(VersionContract.init)
        let base = configuration.baseURL
        if base.query == nil, base.fragment == nil {
            let text = base.absoluteString
            basePrefix = text.hasSuffix("/") ? String(text.dropLast()) : text
        } else {
            basePrefix = nil
        }
    }

    /// Sends `operation` and returns the successful (2xx) reply.
    ///
    /// - Throws: ``HTTPFailure``.
    public func send(_ operation: HTTPOperation, policy: CallPolicy? = nil) async throws(HTTPFailure) -> Reply {
        let call = Call(client: self, operation: operation, policy: policy ?? configuration.policy)
        guard let journal = configuration.journal, operation.mutates else {
            return try await run(consume call)
        }
        // Journaled: durably recorded before the first byte leaves, settled when the call ends.
        var key: IdempotencyKey?
        if case .keyed(let value) = operation.idempotency { key = value }
        // Which call this is: its operation id when the app gave one; otherwise the correlation id names the
        // user operation, which may span several different calls (OBS-LOG-004), so the call is that id with
        // its method, path, body and key — the same request sent again, not another one of the operation.
        let plainID = operation.operationID ?? call.correlationID.rawValue
        let identity =
            operation.operationID.map { "id\u{0}" + $0 }
            ?? [
                "call", plainID, operation.method, operation.path, operation.bodyDigest ?? "", key?.rawValue ?? "",
            ].joined(separator: "\u{0}")
        // Its journal key. Without an operation id: the correlation id for the operation's first call, and for
        // every other call the correlation id with a suffix of its own, so that one call's entry never takes
        // another's place (a second call of the operation would otherwise overwrite an `unknown` first one, and
        // the first could then be sent again, or never be reconciled).
        let ownID = operation.operationID == nil ? Self.journalID(plainID, call: identity) : plainID
        let reused = operation.operationID != nil || operation.correlationID != nil
        var operationID = plainID
        let busy = journalTraffic.withLock { traffic -> Bool in
            guard traffic.calls.insert(identity).inserted else { return true }
            // The correlation id's own entry is being written by another call of the operation: this one has
            // its own.
            if operation.operationID == nil, traffic.keys[plainID] != nil { operationID = ownID }
            traffic.keys[operationID, default: 0] += 1
            return false
        }
        if busy {
            throw HTTPFailure(
                kind: .inProgress, outcome: .unknown, correlationID: call.correlationID, attempts: 0,
                detail: Redacted(
                    "operation \(plainID): it is being sent already: it is not sent a second time while the first send runs"
                ))
        }
        defer {
            journalTraffic.withLock { traffic in
                traffic.calls.remove(identity)
                let left = (traffic.keys[operationID] ?? 1) - 1
                traffic.keys[operationID] = left > 0 ? left : nil
            }
        }
        // The same operation sent again (reconcile's re-send, an app retrying its outbox entry, a relaunch that
        // reuses the persisted correlation id): found by the key it was journaled under. A journal that cannot
        // say whether the operation was sent before cannot keep its outcome honest: nothing is sent, and an
        // earlier send may have been applied (`unknown`, never "not applied").
        var earlier: JournalEntry?
        do {
            if reused, operation.operationID != nil {
                earlier = try await journal.entry(plainID)
                // An operation id names one request. Another one under it (another endpoint, or another key)
                // would overwrite the entry's record of what was sent, and could be taken for it: a `succeeded`
                // earlier send would make this one's failure read as applied. It is not sent (found in review).
                // The body may be spelled otherwise (an app update that orders members differently): under the
                // same key, the server's idempotency tells a replay from a reused key.
                if let earlier,
                    earlier.method != operation.method || earlier.path != operation.path
                        || earlier.idempotencyKey != key
                {
                    throw HTTPFailure(
                        kind: .technical, outcome: .notSent, correlationID: call.correlationID, attempts: 0,
                        detail: Redacted(
                            "operation \(plainID) is journaled for another request (\(earlier.method) \(earlier.path)): this one was not sent, so that the entry keeps what was sent under it"
                        ))
                }
            } else if reused {
                // Without an operation id, this request's earlier send is under its own key, or under the
                // correlation id when it was the operation's first call — looked up both ways, whichever key
                // this send is journaled under (another call may hold the correlation id's right now).
                let first = try await journal.entry(plainID)
                let firstIsThis = first.map {
                    $0.method == operation.method && $0.path == operation.path
                        && $0.bodyDigest == operation.bodyDigest && $0.idempotencyKey == key
                }
                let own = try await journal.entry(ownID)
                earlier = own ?? (firstIsThis == true ? first : nil)
                if operationID == plainID, own != nil || firstIsThis == false {
                    // The correlation id's entry is another call of the operation: this call has its own.
                    journalTraffic.withLock { traffic in
                        let left = (traffic.keys[plainID] ?? 1) - 1
                        traffic.keys[plainID] = left > 0 ? left : nil
                        traffic.keys[ownID, default: 0] += 1
                    }
                    operationID = ownID
                }
            }
        } catch let failure as HTTPFailure {
            throw failure
        } catch {
            throw HTTPFailure(
                kind: .technical, outcome: .unknown, correlationID: call.correlationID, attempts: 0,
                detail: Redacted(
                    "the operation journal could not be read, so the operation was not sent again (an earlier send may have been applied): \(error)"
                ))
        }
        let journalKey = operationID
        if journalTraffic.withLock({ $0.reconciling.contains(journalKey) }) {
            throw HTTPFailure(
                kind: .inProgress, outcome: .unknown, correlationID: call.correlationID, attempts: 0,
                detail: Redacted(
                    "operation \(journalKey): reconcile() is asking the server what became of it: it is not sent meanwhile"
                ))
        }
        // Whether an earlier send was applied, or may have been: this send cannot make it "not applied" by
        // failing, and an operation that may not be repeated is not sent again at all.
        let earlierMayHaveApplied = earlier.map { !$0.isResolved || $0.state == .succeeded } ?? false
        if earlierMayHaveApplied, let earlier, !operation.allowsRetryAfterSending {
            let what =
                earlier.state == .succeeded
                ? "was applied already (the journal records its success)"
                : "may have been applied (its outcome is unknown until reconcile() asks the server)"
            throw HTTPFailure(
                kind: .inProgress, outcome: .unknown, correlationID: call.correlationID, attempts: 0,
                detail: Redacted(
                    "operation \(operationID) \(what), and it has no idempotency key: it is not sent again"))
        }
        let entry = JournalEntry(
            operationID: operationID, idempotencyKey: key, correlationID: call.correlationID, method: operation.method,
            path: operation.path, bodyDigest: operation.bodyDigest,
            createdAt: earlier?.createdAt ?? configuration.wallClock.now(), state: .sending, trace: call.trace)
        do {
            try await journal.record(entry)
        } catch {
            throw HTTPFailure(
                kind: .technical, outcome: earlierMayHaveApplied ? .unknown : .notSent,
                correlationID: call.correlationID, attempts: 0,
                detail: Redacted("the operation journal could not record the operation, so it was not sent: \(error)"))
        }
        do {
            let reply = try await run(call)
            await settle(journal, operationID, .succeeded, requestID: reply.requestID)
            return reply
        } catch {
            let unknown = error.outcome == .unknown || earlierMayHaveApplied
            if earlier?.state == .succeeded {
                // Confirmed before: a failed re-send (of a keyed or idempotent operation) takes nothing back.
                await settle(journal, operationID, .succeeded, requestID: earlier?.requestID)
            } else {
                await settle(journal, operationID, unknown ? .unknown : .failed(error.kind), requestID: error.requestID)
            }
            guard unknown, error.outcome != .unknown else { throw error }
            // Not sent (or refused) this time, but an earlier send of the same operation may have been applied.
            throw HTTPFailure(
                kind: error.kind, outcome: .unknown, status: error.status, errorCode: error.errorCode,
                requestID: error.requestID, correlationID: error.correlationID, attempts: error.attempts,
                retryAt: error.retryAt, fieldErrors: error.fieldErrors, contractViolation: error.contractViolation,
                detail: Redacted(
                    "\(error.detail.unredacted); an earlier send of operation \(operationID) may have been applied"))
        }
    }

    /// The journal key of a call of user operation `correlationID` other than the one its correlation id
    /// names: that id, `~`, and 16 hex digits of the call's identity (method, path, body digest, key).
    static func journalID(_ correlationID: String, call identity: String) -> String {
        correlationID + "~" + SHA256Digest.hex(Array(identity.utf8)).prefix(16)
    }

    /// Runs `call`; with a background budget, raced against its expiry: an expired budget cancels the call,
    /// which then ends with its outcome as it stands.
    private func run(_ call: consuming Call) async throws(HTTPFailure) -> Reply {
        guard let budget = configuration.backgroundBudget else {
            // Run in place: a call is an operation and its state, and copying it costs a retain per field.
            return try await call.run(clock: configuration.clock)
        }
        let clock = configuration.clock
        let budgeted = copy call
        let result = await withTaskGroup(of: Result<Reply, HTTPFailure>?.self) { group in
            group.addTask {
                var call = budgeted
                do throws(HTTPFailure) {
                    return .success(try await call.run(clock: clock))
                } catch {
                    return .failure(error)
                }
            }
            group.addTask {
                await budget.expired()
                return nil
            }
            var expired = false
            var ended: Result<Reply, HTTPFailure>?
            while let next = await group.next() {
                guard let next else {
                    // The budget's task ends by itself only at the expiry (it returns nil too once cancelled,
                    // after the call ended or the caller cancelled).
                    if ended == nil, !Task.isCancelled { expired = true }
                    group.cancelAll()  // the budget ran out: stop the call where it stands
                    continue
                }
                ended = next
                group.cancelAll()  // the call ended: stop waiting for the budget
            }
            // The budget reads zero as soon as it expires, before the cancellation reaches the call: a call
            // between attempts then ends as a timeout ("deadline of 0.0 seconds passed"). Either way it was
            // the expiry that ended it.
            guard expired || budget.remaining() == .zero, case .failure(let failure) = ended,
                failure.kind == .cancelled || failure.kind == .timeout
            else { return ended! }
            return .failure(
                HTTPFailure(
                    kind: .cancelled, outcome: failure.outcome, status: failure.status, errorCode: failure.errorCode,
                    requestID: failure.requestID, correlationID: failure.correlationID, attempts: failure.attempts,
                    detail: Redacted("the background time budget expired: \(failure.detail.unredacted)")))
        }
        return try result.get()
    }

    /// Records how a journaled operation ended. If even that fails (a full disk), the entry stays
    /// `sending`, which reconcile treats as unknown: nothing is lost, the answer is only looked up again.
    private func settle(
        _ journal: any OperationJournal, _ operationID: String, _ state: JournalEntry.State, requestID: String?
    ) async {
        do {
            try await journal.complete(operationID, state: state, requestID: requestID)
        } catch {
            configuration.logger.log(
                .error, "journal entry \(operationID, privacy: .public) stays unsettled: \(String(describing: error))")
        }
    }

    /// Sends `operation` and decodes its JSON reply as `T` with ``ContractDecoder``.
    ///
    /// - Throws: ``HTTPFailure``; a reply that does not decode is ``ErrorCode/contractViolation`` with
    ///   ``HTTPFailure/contractViolation`` set (outcome `unknown` for a mutating operation: the server did
    ///   act on it, but the app cannot read what happened; `rejected` for a read).
    public func send<T: Decodable & Sendable>(
        _ operation: HTTPOperation, decoding type: T.Type, policy: CallPolicy? = nil
    ) async throws(HTTPFailure) -> T {
        try await sendForReply(operation, decoding: type, policy: policy).value
    }

    /// Sends `operation` and decodes its JSON reply as `T`, returning the value with its reply's metadata.
    ///
    /// - Throws: ``HTTPFailure``, as ``send(_:decoding:policy:)``.
    public func sendForReply<T: Decodable & Sendable>(
        _ operation: HTTPOperation, decoding type: T.Type, policy: CallPolicy? = nil
    ) async throws(HTTPFailure) -> Decoded<T> {
        let reply = try await send(operation, policy: policy)
        do {
            return Decoded(value: try ContractDecoder().decode(type, from: reply.body), reply: reply)
        } catch {
            // Loud and typed (MOB-API-001): the code and path of what broke, never the payload text.
            let location = error.path.isEmpty ? "top level" : error.path
            throw HTTPFailure(
                kind: .contractViolation, outcome: operation.mutates ? .unknown : .rejected, status: reply.status,
                requestID: reply.requestID, correlationID: reply.correlationID, attempts: reply.attempts,
                contractViolation: error, detail: Redacted("reply breaks the contract at \(location): \(error.code)")
            )
        }
    }
}
