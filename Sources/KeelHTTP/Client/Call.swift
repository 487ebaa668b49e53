import Foundation
import KeelCore

/// One call in progress: attempts, the decisions between them, and the failure it ends with.
struct Call {
    /// The client sending this call: its configuration, base URL text, middleware and version policy are
    /// read through it, not copied into every call (a configuration is some twenty fields to retain and
    /// release per call; keel-bench http.get and trace.overhead).
    let client: HTTPClient
    /// The client's configuration, lent (not copied) for each use.
    var configuration: HTTPClient.Configuration {
        _read { yield client.configuration }
    }
    let operation: HTTPOperation
    let policy: CallPolicy
    let correlationID: CorrelationID
    /// The trace every attempt belongs to (one trace id per operation). Minted only when some middleware
    /// will see the request — trace headers are ``TraceContextMiddleware``'s business — so a call without
    /// middleware draws nothing more from the random source.
    let trace: TraceContext?
    /// What the middleware contexts of this call's attempts share; nil when no middleware sees the call.
    let middlewareShared: MiddlewareContext.Shared?

    /// Whether any attempt may have reached the server without a readable answer. (For a read this
    /// harms nothing, but it is still what happened; the user-facing projection weighs `mutates`.)
    private var sawUnknown = false
    /// Whether any attempt got an answer from the server.
    private var reachedServer = false
    private var attempts = 0
    /// Budget tokens this call spent on retries (refunded when it succeeds).
    private var spentOnRetries = 0

    /// The base URL as text without a trailing slash, when it has no query or fragment (see `url()`).
    var basePrefix: String? { client.basePrefix }

    /// Where version answers go (shared by the client's calls).
    var versionPolicy: VersionPolicyState { client.policyState }

    /// The middleware that may see this call's requests: those whose allowlist admits the base URL's origin.
    /// Every request URL is the base URL with another path or query (see `url()`), so its origin is the
    /// base URL's, and the client decides this once (``HTTPClient/middlewareForBase``).
    var steps: [any HTTPMiddleware] { client.middlewareForBase }

    init(client: HTTPClient, operation: HTTPOperation, policy: CallPolicy) {
        self.client = client
        self.operation = operation
        self.policy = policy
        self.correlationID = operation.correlationID ?? CorrelationID.make(using: client.configuration.random)
        self.trace =
            operation.trace
            ?? (client.configuration.middleware.isEmpty ? nil : .start(using: client.configuration.random))
        if let trace = self.trace, !client.middlewareForBase.isEmpty {
            middlewareShared = MiddlewareContext.Shared(
                operation: operation, correlationID: correlationID, trace: trace)
        } else {
            middlewareShared = nil
        }
    }

    /// The outcome across all attempts so far: unknown wins (an earlier attempt may have been applied).
    private var outcome: HTTPFailure.Outcome {
        if sawUnknown { return .unknown }
        return reachedServer ? .rejected : .notSent
    }

    private enum AttemptResult: Sendable {
        case response(TransportResponse)
        case transportFailure(TransportError)
        case timedOut
        case cancelled
    }

    /// What middleware made of a request.
    private enum Prepared: Sendable {
        case ready(TransportRequest)
        case refused(MiddlewareRefusal)
    }

    /// Replays middleware may ask for per call (a refreshed token gets one more try, not a loop).
    static let maximumReplays = 1

    // MARK: - The loop

    mutating func run<C: Clock>(clock: C) async throws(HTTPFailure) -> HTTPClient.Reply where C.Duration == Duration {
        let start = clock.now
        // In the background, the OS's budget may end the call sooner than its own deadline.
        let allowed = configuration.backgroundBudget?.remaining().map { min($0, policy.deadline) } ?? policy.deadline
        var deadline = start.advanced(by: allowed)
        // What set the deadline, for the message of a timeout (built only then: every call passes here).
        var clampedByBudget: (left: Duration, attempt: Int)?
        func limit() -> String {
            clampedByBudget.map { "background time budget (\($0.left) left at attempt \($0.attempt))" }
                ?? "deadline of \(allowed)"
        }
        try refuseDotSegments()
        try refuseCleartext()
        // Each attempt gets a request of its own, made afresh (the same every time but for what middleware
        // adds), for middleware to change in place: copying a kept one cost a header list per call.
        let url = url()
        var replays = 0
        var isReplay = false
        while true {
            if Task.isCancelled { throw failure(.cancelled, detail: "cancelled before attempt \(attempts + 1)") }
            // The OS may grant less than when the call began (the app went to the background during a backoff):
            // every attempt is clamped to what is left of the budget now, not only the first (found in review).
            if let left = configuration.backgroundBudget?.remaining() {
                let end = clock.now.advanced(by: left)
                if end < deadline {
                    deadline = end
                    clampedByBudget = (left, attempts + 1)
                }
            }
            if clock.now.duration(to: deadline) <= .zero {
                throw failure(.timeout, detail: "\(limit()) passed")
            }
            attempts += 1
            let context = middlewareShared.map {
                MiddlewareContext(shared: $0, attempt: attempts, isReplay: isReplay)
            }
            isReplay = false
            // Middleware works on a fresh copy each attempt, inside the deadline; nothing is sent yet.
            let prepared = try await prepare(
                makeRequest(url: url), steps: steps, context: context, deadline: deadline, clock: clock)
            if prepared.urlWasSet { try refuseCleartext(prepared.url, built: url) }
            let remaining = clock.now.duration(to: deadline)
            if remaining <= .zero { throw failure(.timeout, detail: "\(limit()) passed") }
            emit(.attemptStarted(number: attempts))
            let result = await attempt(prepared, timeout: min(policy.attemptTimeout, remaining), clock: clock)

            let failure: HTTPFailure
            var retryAfter: Duration?
            var transportCode: TransportError.Code?
            switch result {
            case .response(let response):
                emit(.attemptResponded(number: attempts, status: response.status))
                // A portal's answer is not the server's: it does not count as reaching it.
                let portal = captivePortalFailure(response)
                var asksForReplay = false
                // A success is final: no middleware is asked about a replay after a 2xx.
                if portal == nil, replays < Self.maximumReplays, !(200...299).contains(response.status) {
                    // The request as sent goes with the question (a refresh compares the token it carried).
                    let answer = await middlewareAsksForReplay(
                        after: response, steps: steps, context: context.map { MiddlewareContext($0, sent: prepared) },
                        deadline: deadline, clock: clock)
                    guard let answer else {
                        // The middleware was still deciding (a token refresh that hangs) when the deadline
                        // passed: the call ends with the answer it has, as far as it got.
                        reachedServer = true
                        recordWhetherApplied(response)
                        if Task.isCancelled {
                            throw self.failure(.cancelled, detail: "cancelled while middleware decided on a replay")
                        }
                        throw self.failure(
                            .timeout,
                            detail:
                                "deadline passed while middleware decided on a replay after status \(response.status)")
                    }
                    asksForReplay = answer
                }
                if asksForReplay, mayReplay(after: response, deadline: deadline, clock: clock) {
                    replays += 1
                    reachedServer = true
                    // The answer being replayed may still say the mutation was applied (a 500 after the commit).
                    recordWhetherApplied(response)
                    emit(.replayScheduled(nextAttempt: attempts + 1, status: response.status))
                    isReplay = true
                    continue
                }
                if let portal {
                    failure = portal
                } else if (200...299).contains(response.status) {
                    configuration.budget.recordSuccess(refunding: spentOnRetries)
                    // The backend accepted this version just now; it may announce a newer one. (A required
                    // update or a security block is not ended by it: `VersionPolicyState.set`.)
                    if operation.successStatesVersionPolicy,
                        let policy = client.versionContract?.policy(afterSuccess: response)
                    {
                        versionPolicy.set(policy)
                    }
                    return HTTPClient.Reply(
                        status: response.status, headers: response.headers, body: response.body,
                        requestID: response.header(configuration.requestIDHeader), correlationID: correlationID,
                        attempts: attempts
                    )
                } else {
                    reachedServer = true
                    // One wall-clock reading serves both the retry delay and the failure's `retryAt`.
                    let now = configuration.wallClock.now()
                    retryAfter = RetryAfter.delay(from: response.header("Retry-After"), now: now)
                    failure = statusFailure(response, retryAfter: retryAfter, now: now)
                }
            case .transportFailure(let error):
                if Task.isCancelled || error.code == .cancelled {
                    if error.requestMayHaveBeenSent { sawUnknown = true }
                    throw self.failure(.cancelled, detail: "cancelled during attempt \(attempts)")
                }
                failure = transportFailure(error)
                transportCode = error.code
            case .timedOut:
                // The request may have been sent and applied; there is no way to know.
                sawUnknown = true
                failure = self.failure(.timeout, detail: "attempt \(attempts) timed out")
            case .cancelled:
                sawUnknown = true
                throw self.failure(.cancelled, detail: "cancelled during attempt \(attempts)")
            }
            emit(.attemptFailed(number: attempts, kind: failure.kind, outcome: failure.outcome))

            // MARK: Retry decision
            guard isTransient(failure, transportCode: transportCode), mayRepeat(after: result) else {
                throw declined(failure, .notRetryable)
            }
            guard attempts < policy.maximumAttempts else { throw declined(failure, .attemptsExhausted) }
            var delay = policy.backoff.delay(forRetry: attempts, using: configuration.random)
            let left = clock.now.duration(to: deadline)
            if let retryAfter {
                guard retryAfter < left else { throw declined(failure, .retryAfterTooLong) }
                delay = max(delay, retryAfter)  // never shorter than the server asked
            }
            // A retry needs time to do something: one certain to time out would only add uncertainty.
            guard delay + Self.minimumAttemptTime(policy) <= left else { throw declined(failure, .deadline) }
            // Retries that never reached a server (no route) cost nothing: they cannot add load to it.
            if failure.outcome != .notSent || transportCode == nil {
                guard configuration.budget.spendForRetry() else { throw declined(failure, .budgetExhausted) }
                spentOnRetries += configuration.budget.retryCost
            }
            emit(.retryScheduled(nextAttempt: attempts + 1, delay: delay, reason: failure.kind))
            do {
                try await clock.sleep(until: clock.now.advanced(by: delay), tolerance: nil)
            } catch {
                throw self.failure(.cancelled, detail: "cancelled while waiting to retry")
            }
        }
    }

    // MARK: - Middleware

    /// The middleware of `configuration` that may see requests to `url`'s origin: those without an allowlist,
    /// and those whose allowlist contains the origin.
    static func middleware(for url: URL, in configuration: HTTPClient.Configuration) -> [any HTTPMiddleware] {
        let origin = OriginAllowlist.Origin(url)
        return configuration.middleware.filter { step in
            guard let allowed = step.allowedOrigins else { return true }
            return origin.map(allowed.origins.contains) ?? false
        }
    }

    /// The request of a one-attempt exchange (a stream), prepared by the middleware within `timeout`, and
    /// what is left of `timeout` after them (for connecting: one limit for both, not one each).
    mutating func preparedRequest<C: Clock>(clock: C, within timeout: Duration) async throws(HTTPFailure)
        -> (request: TransportRequest, left: Duration) where C.Duration == Duration
    {
        try refuseDotSegments()
        try refuseCleartext()
        let url = url()
        let request = makeRequest(url: url)
        attempts = 1
        let context = middlewareShared.map { MiddlewareContext(shared: $0, attempt: 1, isReplay: false) }
        let deadline = clock.now.advanced(by: timeout)
        let prepared = try await prepare(request, steps: steps, context: context, deadline: deadline, clock: clock)
        if prepared.urlWasSet { try refuseCleartext(prepared.url, built: url) }
        return (prepared, clock.now.duration(to: deadline))
    }

    /// Runs every middleware whose allowlist admits the request's origin, in order, raced against the
    /// call's deadline. A refusal ends the call with its kind; nothing was sent on this attempt.
    private func prepare<C: Clock>(
        _ request: consuming TransportRequest, steps: [any HTTPMiddleware], context: MiddlewareContext?,
        deadline: C.Instant, clock: C
    ) async throws(HTTPFailure) -> TransportRequest where C.Duration == Duration {
        guard !steps.isEmpty, let context else { return request }  // no middleware for this origin
        if !client.middlewareMayWait {
            // Header-only middleware cannot hang: no timer task needed (keel-bench trace.overhead). The
            // request is this attempt's own, made with room for what middleware adds: changed in place.
            do throws(MiddlewareRefusal) {
                for step in steps { try await step.prepare(&request, context: context) }
                return request
            } catch {
                throw failure(error.kind, detail: "refused by middleware before attempt \(attempts): \(error.detail)")
            }
        }
        let request = copy request
        let outcome = await Self.race(deadline: deadline, clock: clock) { () async -> Prepared in
            var copy = request
            do throws(MiddlewareRefusal) {
                for step in steps { try await step.prepare(&copy, context: context) }
                return .ready(copy)
            } catch {
                return .refused(error)
            }
        }
        switch outcome {
        case .some(.ready(let prepared)): return prepared
        case .some(.refused(let refusal)):
            throw failure(refusal.kind, detail: "refused by middleware before attempt \(attempts): \(refusal.detail)")
        case .none:
            if Task.isCancelled {
                throw failure(.cancelled, detail: "cancelled while middleware prepared attempt \(attempts)")
            }
            throw failure(.timeout, detail: "deadline passed while middleware prepared attempt \(attempts)")
        }
    }

    /// Whether any middleware (allowed for the request's origin) asks to send the call once more; nil when
    /// the deadline passed (or the call was cancelled) before they decided. Middleware that may wait (a
    /// token refresh over the network) is raced against the call's deadline, as in ``prepare``.
    private func middlewareAsksForReplay<C: Clock>(
        after response: TransportResponse, steps: [any HTTPMiddleware], context: MiddlewareContext?,
        deadline: C.Instant, clock: C
    ) async -> Bool? where C.Duration == Duration {
        guard let context, !(200...299).contains(response.status) else { return false }  // a success is final
        @Sendable func ask() async -> Bool {
            for step in steps {
                if await step.shouldReplay(after: response, context: context) { return true }
            }
            return false
        }
        guard client.middlewareMayWait else { return await ask() }
        return await Self.race(deadline: deadline, clock: clock, ask)
    }

    /// The client's rules for a replay a middleware asked for: it is an attempt (within the maximum), it
    /// must fit in the deadline, it is never made at once after an answer that asks the client to wait
    /// (429, 503, a `Retry-After`: the retry rules, which honour it and the retry budget, decide), and an
    /// operation that may not be repeated is replayed only after a 4xx refusal when no earlier attempt may
    /// have been applied.
    private func mayReplay<C: Clock>(after response: TransportResponse, deadline: C.Instant, clock: C) -> Bool
    where C.Duration == Duration {
        let allowed: Bool
        if !(attempts < policy.maximumAttempts) {
            allowed = false
        } else if response.status == 429 || response.status == 503 || response.header("Retry-After") != nil {
            allowed = false
        } else if clock.now.duration(to: deadline) < Self.minimumAttemptTime(policy) {
            allowed = false
        } else if operation.allowsRetryAfterSending {
            allowed = true
        } else {
            allowed = !sawUnknown && (400...499).contains(response.status) && response.status != 408
        }
        if !allowed { emit(.replayRefused(afterAttempt: attempts, status: response.status)) }
        return allowed
    }

    // MARK: - One attempt

    /// Runs the exchange against the attempt timer on the injected clock; whichever ends first wins and the
    /// other is stopped (a timed-out exchange closes its connection). An ``InterruptibleHTTPTransport`` runs
    /// on this task and the timer interrupts it; any other transport is raced against a timer task.
    private func attempt<C: Clock>(_ request: TransportRequest, timeout: Duration, clock: C) async -> AttemptResult
    where C.Duration == Duration {
        let transport = configuration.transport
        if let interruptible = transport as? any InterruptibleHTTPTransport {
            return await attempt(request, on: interruptible, deadline: clock.now.advanced(by: timeout), clock: clock)
        }
        let result = await Self.race(deadline: clock.now.advanced(by: timeout), clock: clock) {
            () async -> AttemptResult in
            do throws(TransportError) {
                return .response(try await transport.send(request))
            } catch {
                return .transportFailure(error)
            }
        }
        if Task.isCancelled { return Self.cancelled(with: result) }
        return result ?? .timedOut
    }

    /// What an attempt the caller cancelled ends as: a complete answer that came in as it was cancelled is
    /// that answer (found in an outside audit: a 201 received as the background budget expired was thrown
    /// away, and the journal said `unknown` of a payment the server had confirmed); the transport's own
    /// failure when it proves the request never left (cancelled while resolving, connecting or in the TLS
    /// handshake: `notSent`); else `.cancelled` — it may have been sent.
    private static func cancelled(with result: AttemptResult?) -> AttemptResult {
        switch result {
        case .response?: return result!
        case .transportFailure(let error)? where !error.requestMayHaveBeenSent: return .transportFailure(error)
        default: return .cancelled
        }
    }

    /// One attempt on a transport that the attempt timer can interrupt: the exchange runs on this task, and
    /// the timer (the process's watchdog on a system clock, a sleeping task on any other) only signals it.
    private func attempt<C: Clock>(
        _ request: TransportRequest, on transport: any InterruptibleHTTPTransport, deadline: C.Instant, clock: C
    ) async -> AttemptResult where C.Duration == Duration {
        let interruption = TransportInterruption()
        let timer = AttemptTimer(deadline: deadline, clock: clock) { interruption.interrupt() }
        let result: AttemptResult
        do throws(TransportError) {
            result = .response(try await transport.send(request, interruption: interruption))
        } catch {
            if !interruption.isInterrupted {
                result = .transportFailure(error)
            } else if error.requestMayHaveBeenSent {
                result = .timedOut
            } else {
                // The timer ended an attempt that provably never left (a connect or name lookup that hung): a
                // timeout, but nothing was sent, so nothing may have been applied and a retry is safe.
                result = .transportFailure(
                    TransportError(
                        code: .timedOut, requestMayHaveBeenSent: false,
                        detail: "attempt \(attempts) timed out before the request was sent: \(error.detail)"))
            }
        }
        timer.cancel()
        if Task.isCancelled { return Self.cancelled(with: result) }
        return result
    }

    /// Runs `work` against a timer on `clock` that fires at `deadline`: the value of `work` when it ends
    /// first, nil when the timer does (or the caller is cancelled). The loser is cancelled, and the race
    /// returns without waiting for it: work that ignores cancellation (a token refresh awaiting a shared
    /// task, a custom transport) cannot hold the call past its deadline; what it returns later is dropped.
    private static func race<C: Clock, Value: Sendable>(
        deadline: C.Instant, clock: C, _ work: @escaping @Sendable () async -> Value
    ) async -> Value? where C.Duration == Duration {
        // The work's value, or nil from the timer or the caller's cancellation: whichever comes first.
        let first = FirstResult<Value?>()
        let worker = Task { first.resume(returning: await work()) }
        let timer = Task {
            // Cancelled: the work ended first (or the caller was cancelled), and nothing is left to end.
            guard (try? await DeadlineSleep.sleep(until: deadline, on: clock)) != nil else { return }
            first.resume(returning: nil)
        }
        // Nothing is ever thrown into it: `try?` only unwraps.
        let value = await withTaskCancellationHandler {
            (try? await withCheckedThrowingContinuation { first.start($0) }) ?? nil
        } onCancel: {
            first.resume(returning: nil)
        }
        worker.cancel()
        timer.cancel()
        return value
    }

    /// The request of one attempt to `url` (``url()``).
    private func makeRequest(url: URL) -> TransportRequest {
        let own = client.ownHeaders
        var headers: HeaderFields
        if own.namesClash {
            headers = clashingHeaders()
        } else {
            headers = HeaderFields()
            // Room for the client's own fields and a middleware's, so the list is not copied as it grows.
            headers.reserveCapacity(operation.headers.count + own.fixed.count + 8)
            // One pass over the operation's fields, leaving out every name the client sets itself (see
            // `ClientHeaders`): a search per name cost a scan of the list each (keel-bench trace.overhead).
            for field in operation.headers where !own.isOwned(field.name) {
                headers.append(name: field.name, value: field.value)
            }
            headers.append(name: configuration.correlationIDHeader, value: correlationID.rawValue)
            if case .keyed(let key) = operation.idempotency {
                headers.append(name: configuration.idempotencyKeyHeader, value: key.rawValue)
            }
            headers.append(contentsOf: own.fixed)
        }
        // Over the whole list, the client's fields included (a client may name one of its own `Accept`).
        if operation.expectsJSON, !headers.contains("Accept") {
            headers.append(name: "Accept", value: "application/json")
        }
        if operation.body != nil, !headers.contains("Content-Type") {
            headers.append(name: "Content-Type", value: "application/json")
        }
        // The transport's own timer is only a backstop behind the attempt timer on the injected clock.
        return TransportRequest(
            method: operation.method, url: url, headers: headers, body: operation.body,
            transportTimeout: policy.attemptTimeout + .seconds(30), maximumResponseBytes: policy.maximumResponseBytes,
            reusesConnections: operation.allowsRetryAfterSending
        )
    }

    /// The operation's fields and the client's own, for a client whose own header names clash (its version
    /// header named as its correlation id header, say): each of its fields replaces any earlier one of that
    /// name, the earlier of its own included, as the client has always resolved such a configuration.
    private func clashingHeaders() -> HeaderFields {
        var headers = operation.headers
        headers.removeAll(named: TraceContextMiddleware.traceparentHeader)
        headers.removeAll(named: TraceContextMiddleware.tracestateHeader)
        headers.removeAll(named: configuration.correlationIDHeader)
        headers.removeAll(named: configuration.idempotencyKeyHeader)
        headers.append(name: configuration.correlationIDHeader, value: correlationID.rawValue)
        if case .keyed(let key) = operation.idempotency {
            headers.append(name: configuration.idempotencyKeyHeader, value: key.rawValue)
        }
        if let version = configuration.contractVersion {
            headers.removeAll(named: version.headerName)
            headers.append(name: version.headerName, value: version.description)
        }
        if let identity = configuration.versionPolicy {
            headers.removeAll(named: identity.appVersionHeader)
            headers.removeAll(named: identity.platformHeader)
            headers.append(name: identity.appVersionHeader, value: identity.appVersion.description)
            headers.append(name: identity.platformHeader, value: identity.platform)
        }
        return headers
    }

    /// The operation's URL under the base URL. The common case (no query, a path of plain URL characters)
    /// is one string concatenation; otherwise the path is put in its URL form (``encodedPath(_:)``) and the
    /// query added by URLComponents.
    private func url() -> URL {
        var path = operation.path.hasPrefix("/") ? operation.path : "/" + operation.path
        let plain = path.utf8.allSatisfy(Self.isPlainPathByte)
        if !plain { path = Self.encodedPath(path) }
        if operation.query.isEmpty, let prefix = basePrefix, let url = URL(string: prefix + path) {
            return url
        }
        var components = URLComponents(url: configuration.baseURL, resolvingAgainstBaseURL: false)!
        let base = components.percentEncodedPath
        components.percentEncodedPath = (base.hasSuffix("/") ? String(base.dropLast()) : base) + path
        if !operation.query.isEmpty {
            components.percentEncodedQueryItems = operation.query.map {
                URLQueryItem(name: Self.encodedQueryComponent($0.name), value: $0.value.map(Self.encodedQueryComponent))
            }
        }
        return components.url!
    }

    /// A query item's name or value in its URL form: every byte but the unreserved ones (`A–Z a–z 0–9 - . _ ~`)
    /// percent-encoded, as a path segment is. URLComponents leaves `+` and `;` as they are, and most servers
    /// read a query as a form — `+` a space, `;` a separator in some —, so a cursor `a+b` arrived as `a b`
    /// (found in an outside audit).
    static func encodedQueryComponent(_ text: String) -> String { HTTPOperation.pathSegment(text) }

    /// `path` in its URL form: plain bytes and `%XX` escapes as written, every other byte (a space, a lone
    /// `%`, `?`, `#`, non-ASCII) percent-encoded. Before, URLComponents encoded the `%` of an escape too:
    /// `/notes/a%2Fb` went out as `/notes/a%252Fb`, so no id with a `/` could be put into a path.
    static func encodedPath(_ path: String) -> String {
        let bytes = Array(path.utf8)
        var result = ""
        result.reserveCapacity(bytes.count)
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            if isPlainPathByte(byte) {
                result.unicodeScalars.append(Unicode.Scalar(byte))
            } else if byte == UInt8(ascii: "%"), index + 2 < bytes.count,
                isHexDigit(bytes[index + 1]), isHexDigit(bytes[index + 2])
            {
                result += String(decoding: bytes[index...(index + 2)], as: UTF8.self)
                index += 3
                continue
            } else {
                result += Hex.percentEscape(byte)
            }
            index += 1
        }
        return result
    }

    /// Refuses a path with a `.` or `..` segment, written plainly or percent-encoded (`%2e%2E`, which a
    /// server decodes before it resolves): no API path needs one, and one that does is an id from a deep
    /// link or a push interpolated into the path (`"/notes/\(id)"` with `../admin/x`), which a server
    /// normalizing dot segments would route elsewhere on the same origin — with the app's credentials.
    private func refuseDotSegments() throws(HTTPFailure) {
        let path = operation.path
        // Most paths have no "." or escape at all: one scan, no split.
        guard path.utf8.contains(where: { $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "%") }) else { return }
        // `..;x` counts too: servlet containers drop a segment's `;` parameters before resolving it. A segment
        // is also read as a server that decodes it first would: `..%2Fadmin` or `%2e%2e%5c` is a dot segment
        // then (found in a review: escapes now go out as written).
        for segment in path.split(separator: "/", omittingEmptySubsequences: false) {
            let decoded = String(segment).removingPercentEncoding ?? String(segment)
            let pieces = decoded.split(omittingEmptySubsequences: false) { $0 == "/" || $0 == "\\" }
            guard pieces.contains(where: { ["." as Substring, ".."].contains($0.prefix { $0 != ";" }) }) else {
                continue
            }
            throw HTTPFailure(
                kind: .technical, outcome: .notSent, correlationID: correlationID, attempts: 0,
                detail: Redacted(
                    "the path has a \"\(segment)\" segment, which a server may resolve to another path: nothing was sent (put values into a path with HTTPOperation.pathSegment)"
                ))
        }
    }

    /// Refuses to send anything over cleartext `http` to a host that is not loopback, unless the app allows it
    /// (``HTTPClient/Configuration/allowsCleartextHTTP``; decided once for the base URL,
    /// ``HTTPClient/cleartextRefusal``). `technical`, not `offline`: no network will fix it, so it is never
    /// retried, and the user is not sent to check a connection that is fine.
    private func refuseCleartext() throws(HTTPFailure) {
        guard let why = client.cleartextRefusal else { return }
        throw HTTPFailure(
            kind: .technical, outcome: .notSent, correlationID: correlationID, attempts: 0, detail: Redacted(why))
    }

    /// The same rule for a request a middleware moved to another URL (its `prepare` may change any part of the
    /// request): held to it as the client's own URL is. Asked only when a middleware set the URL
    /// (``TransportRequest/urlWasSet``); `built` is the URL the client made for the attempt.
    private func refuseCleartext(_ sent: URL, built: URL) throws(HTTPFailure) {
        guard sent != built,
            let why = CleartextPolicy.refusal(for: sent, allowed: configuration.allowsCleartextHTTP)
        else { return }
        throw failure(.technical, detail: "middleware moved attempt \(attempts) to another URL: \(why)")
    }

    private static func isHexDigit(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "f"),
            UInt8(ascii: "A")...UInt8(ascii: "F"):
            true
        default: false
        }
    }

    /// Bytes a URL path carries as they are: unreserved, sub-delims, `:`, `@`, `/` (no `%`, `?`, `#`).
    private static func isPlainPathByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        default:
            return "-._~!$&'()*+,;=:@/".utf8.contains(byte)
        }
    }

    // MARK: - Classification

    /// A response that cannot be the API's: a redirect to another origin, or HTML where JSON was promised.
    private mutating func captivePortalFailure(_ response: TransportResponse) -> HTTPFailure? {
        // 511 Network Authentication Required is what an intercepting proxy answers until the network is
        // logged into (RFC 6585 §6): never the API's own answer (found in an outside audit: read as a 5xx).
        // The proxy forwards nothing until then: unlike a login page in the API's place, a 511 proves the
        // request did not reach the API, a mutation's too (what earlier attempts established still holds).
        if response.status == 511 { return failure(.captivePortal, detail: "511 Network Authentication Required") }
        if (300...399).contains(response.status) {
            let location = response.header("Location").flatMap { URL(string: $0, relativeTo: configuration.baseURL) }
            if let location, OriginAllowlist.Origin(location) != OriginAllowlist.Origin(configuration.baseURL) {
                return portal("redirect to another origin")
            }
            return nil
        }
        if (200...299).contains(response.status), operation.expectsJSON, response.status != 204, !response.body.isEmpty
        {
            let type = response.header("Content-Type") ?? ""
            if Self.isHTML(contentType: type) || (type.isEmpty && Self.looksLikeHTML(response.body)) {
                return portal("HTML where the contract promises JSON")
            }
        }
        return nil
    }

    private mutating func portal(_ detail: String) -> HTTPFailure {
        // Most likely something in between answered and the API never saw the request; but for a
        // mutation that cannot be proven (a proxy may have forwarded it), so it stays unknown.
        if operation.mutates { sawUnknown = true }
        // Otherwise what the earlier attempts established: notSent, or rejected if one reached the server.
        return failure(.captivePortal, detail: detail)
    }

    /// Whether a `Content-Type` value starts with `text/html` in any case (compared in place: it is read on
    /// every successful call).
    static func isHTML(contentType: String) -> Bool {
        let prefix = "text/html".utf8
        let value = contentType.utf8
        guard value.count >= prefix.count else { return false }
        return zip(value, prefix).allSatisfy { $0 == $1 || ($0 | 0x20 == $1 && (0x61...0x7A).contains($1)) }
    }

    static func looksLikeHTML(_ body: Data) -> Bool {
        let prefix = String(decoding: body.prefix(256), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            .lowercased()
        return prefix.hasPrefix("<!doctype html") || prefix.hasPrefix("<html")
    }

    /// A stream's answer that cannot be the API's: a redirect to another origin, or HTML — by its
    /// `Content-Type`, or by `firstBytes` when it has none — where events were asked for (a captive portal's
    /// login page would otherwise be read as events, or as a clean end with none).
    mutating func streamPortalFailure(status: Int, headers: HeaderFields, firstBytes: Data) -> HTTPFailure? {
        // A network login's 511, as for any call (found in a review: streams read it as a server error).
        if status == 511 {
            return captivePortalFailure(TransportResponse(status: status, headers: headers, body: Data()))
        }
        if (300...399).contains(status) {
            // A portal's redirect is not the server's answer: the outcome stays as the attempts made it.
            return captivePortalFailure(TransportResponse(status: status, headers: headers, body: Data()))
        }
        guard (200...299).contains(status), status != 204 else { return nil }
        let type = headers["Content-Type"] ?? ""
        guard Self.isHTML(contentType: type) || (type.isEmpty && Self.looksLikeHTML(firstBytes)) else { return nil }
        return portal("HTML where a stream of events was asked for")
    }

    /// The failure of a stream's non-2xx answer (`response` holds the start of its body): read as any call's
    /// answer — its kind from the status and error body, `Retry-After`, and the version policy, which a 426
    /// `update_required` or a 503 `maintenance` changes for streams as for calls.
    mutating func streamStatusFailure(_ response: TransportResponse) -> HTTPFailure {
        reachedServer = true
        let now = configuration.wallClock.now()
        return statusFailure(
            response, retryAfter: RetryAfter.delay(from: response.header("Retry-After"), now: now), now: now)
    }

    /// `retryAfter` is the response's `Retry-After` delay, measured from the wall-clock reading `now`.
    private mutating func statusFailure(_ response: TransportResponse, retryAfter: Duration?, now: Date) -> HTTPFailure
    {
        let details = configuration.errorBody.details(of: response.body)
        var kind: HTTPFailure.Kind
        var detail = "status \(response.status)"
        switch response.status {
        case 401: kind = .authentication
        case 403: kind = .authorization
        case 400, 422: kind = .validation
        case 409 where operation.isKeyed && details.code.map(configuration.errorBody.inProgressCodes.contains) == true:
            // An earlier attempt with this idempotency key is still being applied: it may yet be, so the
            // outcome is unknown, and the same key may be sent again once it is done.
            kind = .inProgress
            sawUnknown = true
        case 409, 412: kind = .conflict
        case 408: kind = .timeout
        case 429: kind = .rateLimited
        case 503 where details.code.map(configuration.errorBody.maintenanceCodes.contains) == true: kind = .maintenance
        default: kind = .technical
        }
        // The instant the server named, not the delay capped for retrying: a three-day maintenance window is
        // reported as three days.
        let retryAt =
            retryAfter == nil ? nil : RetryAfter.instant(from: response.header("Retry-After"), now: now)
        if let contract = configuration.versionPolicy {
            switch contract.verdict(status: response.status, code: details.code, body: response.body) {
            case .unrelated:
                if kind == .maintenance { versionPolicy.set(.maintenance(retryAt: retryAt)) }
            case .updateRequired(let minimum):
                kind = .updateRequired
                versionPolicy.set(.updateRequired(minimum: minimum))
            case .blocked(let minimum):
                kind = .versionBlocked
                versionPolicy.set(.blocked(minimum: minimum))
            case .malformed(let why):
                // Never "update now" on an answer that does not say so properly: technical, no change.
                kind = .technical
                detail += ": \(why)"
            }
        }
        recordWhetherApplied(response, kind: kind)
        return HTTPFailure(
            kind: kind, outcome: outcome, status: response.status, errorCode: details.code,
            requestID: response.header(configuration.requestIDHeader), correlationID: correlationID, attempts: attempts,
            retryAt: retryAt, fieldErrors: kind == .validation ? details.fields : [], detail: Redacted(detail)
        )
    }

    /// A mutation may have been applied although the answer is an error: a 500 can come after the commit, any
    /// gateway's 5xx (502, 504, Cloudflare's 520–524, a proxy's 503 after its upstream reset) after the
    /// origin applied it, a same-origin 3xx (303 See Other) after processing. Such an answer makes the
    /// call's outcome unknown. `kind`: what the answer was read as — the contract's maintenance answer (a
    /// 503 with a maintenance code) says the backend did nothing.
    private mutating func recordWhetherApplied(_ response: TransportResponse, kind: HTTPFailure.Kind? = nil) {
        guard operation.mutates, kind != .maintenance else { return }
        if Self.mayFollowApplying(response.status) { sawUnknown = true }
    }

    /// Whether an answer with `status` may come after the request was applied (see
    /// ``recordWhetherApplied(_:kind:)``): every 5xx but those that say the request was not understood at all
    /// (501 Not Implemented, 505 HTTP Version Not Supported, 511 Network Authentication Required — a portal's),
    /// and every 3xx.
    static func mayFollowApplying(_ status: Int) -> Bool {
        ((500...599).contains(status) && ![501, 505, 511].contains(status)) || (300...399).contains(status)
    }

    private mutating func transportFailure(_ error: TransportError) -> HTTPFailure {
        if error.requestMayHaveBeenSent { sawUnknown = true }
        return failure(Self.kind(of: error), detail: error.description)
    }

    /// The failure kind of a transport error: no route is `offline`, a timer is `timeout`, the rest `technical`.
    static func kind(of error: TransportError) -> HTTPFailure.Kind {
        switch error.code {
        case .notConnected, .dnsFailed, .cannotConnect, .connectionLost: .offline
        case .timedOut: .timeout
        default: .technical
        }
    }

    /// A failure without a response; `outcome` overrides the one accumulated across attempts.
    private func failure(_ kind: HTTPFailure.Kind, detail: String, outcome: HTTPFailure.Outcome? = nil) -> HTTPFailure {
        HTTPFailure(
            kind: kind, outcome: outcome ?? self.outcome, status: nil, errorCode: nil, requestID: nil,
            correlationID: correlationID, attempts: attempts, retryAt: nil, fieldErrors: [], detail: Redacted(detail)
        )
    }

    private func declined(_ failure: HTTPFailure, _ reason: DeclineReason) -> HTTPFailure {
        emit(.retryDeclined(reason: reason))
        return failure
    }

    /// Transient: a keyed call whose earlier attempt is still in progress; a listed status; an attempt timeout; or a transport failure that may pass (no route,
    /// refused, lost, or a response cut short — FoundationNetworking reports a server that closes without
    /// answering as a bad response). A body over the size limit, or an unknown transport error, is not.
    private func isTransient(_ failure: HTTPFailure, transportCode: TransportError.Code?) -> Bool {
        if failure.kind == .inProgress { return true }
        if let status = failure.status { return policy.transientStatuses.contains(status) }
        if let transportCode {
            return [.notConnected, .dnsFailed, .cannotConnect, .timedOut, .connectionLost, .malformedResponse].contains(
                transportCode)
        }
        return failure.kind == .timeout
    }

    /// The least time left for a retry to be worth starting.
    static func minimumAttemptTime(_ policy: CallPolicy) -> Duration {
        min(policy.attemptTimeout, .milliseconds(100))
    }

    /// Whether the operation may be sent again after this attempt.
    private func mayRepeat(after result: AttemptResult) -> Bool {
        if operation.allowsRetryAfterSending { return true }
        // An unsafe operation: only when this attempt provably never left the device.
        if case .transportFailure(let error) = result { return !error.requestMayHaveBeenSent && !sawUnknown }
        return false
    }

    private func emit(_ event: AttemptEvent) {
        configuration.observer?(event)
        configuration.logger.log(
            .debug,
            "\(operation.method, privacy: .public) call \(correlationID.rawValue, privacy: .public): \(String(describing: event), privacy: .public)"
        )
    }
}

/// The header fields a client sets on every request itself, decided once from its configuration.
struct ClientHeaders: Sendable {
    /// Names an operation's own fields may not carry: a field of one of these names is left out.
    /// - Trace context (`traceparent`, `tracestate`) reaches only allowlisted origins, through
    ///   ``TraceContextMiddleware``; one the app put on the operation by hand could go anywhere.
    /// - The client's ids are the only ones: an app's own value of these headers would reach the server
    ///   first (a server reading the first one would dedupe on a key the journal does not know, or see a
    ///   placeholder correlation id).
    /// - The contract version and the app's identity (``VersionPolicyContract``) are the configuration's.
    let names: [String]
    /// The fields the same on every request, after the ids: the contract version, then the app version and
    /// platform.
    let fixed: HeaderFields
    /// Whether two of the client's own fields share a name (a configuration that names its contract version
    /// header as its correlation id header): each then replaces the earlier one (`Call.clashingHeaders`).
    let namesClash: Bool

    init(_ configuration: HTTPClient.Configuration) {
        var names = [
            TraceContextMiddleware.traceparentHeader, TraceContextMiddleware.tracestateHeader,
            configuration.correlationIDHeader, configuration.idempotencyKeyHeader,
        ]
        var fixed = HeaderFields()
        if let version = configuration.contractVersion {
            names.append(version.headerName)
            fixed.append(name: version.headerName, value: version.description)
        }
        if let identity = configuration.versionPolicy {
            names += [identity.appVersionHeader, identity.platformHeader]
            fixed.append(name: identity.appVersionHeader, value: identity.appVersion.description)
            fixed.append(name: identity.platformHeader, value: identity.platform)
        }
        self.names = names
        self.fixed = fixed
        let own = names.dropFirst(2)  // the trace context names are never set by the client itself
        namesClash = own.indices.contains { index in
            own[index...].dropFirst().contains { HeaderFields.equalIgnoringCase($0, own[index]) }
        }
    }

    /// Whether `name` is one the client sets itself (ASCII case-insensitive).
    func isOwned(_ name: String) -> Bool {
        let length = name.utf8.count
        return names.contains { $0.utf8.count == length && HeaderFields.equalIgnoringCase($0, name) }
    }
}
