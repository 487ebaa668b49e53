public import KeelCore

/// A step every request of an ``HTTPClient`` goes through: add headers (authentication, tracing), and
/// after a response, ask for one replay (a refreshed token after a 401).
///
/// Middleware runs in the order of ``HTTPClient/Configuration/middleware``, before **every** attempt
/// (retries and replays included), on a fresh copy of the request the client built, so nothing a
/// middleware added to one attempt leaks into the next.
///
/// What a middleware cannot do is as deliberate as what it can:
/// - It cannot change a response, so it cannot turn a failure, or an `unknown` outcome, into a success.
/// - A replay it asks for is granted by the client's rules, not the middleware's: at most one per call,
///   never after a 2xx, counted as an attempt (``CallPolicy/maximumAttempts``), inside the deadline,
///   and for an operation that may not be repeated (``HTTPOperation/Idempotency/unsafe``) only when no
///   attempt may have been applied and the answer was a 4xx refusal.
/// - With ``allowedOrigins`` set, it only ever sees requests to those origins: a token can't reach
///   another host, whatever the request's URL or a redirect says.
///
/// ```swift
/// struct BearerAuth: HTTPMiddleware {
///     let tokens: TokenStore
///     var allowedOrigins: OriginAllowlist? { try? OriginAllowlist(["https://api.example.com"]) }
///
///     func prepare(_ request: inout TransportRequest, context: MiddlewareContext) async throws(MiddlewareRefusal) {
///         guard let token = await tokens.current else { throw MiddlewareRefusal(kind: .authentication) }
///         request.headers["Authorization"] = "Bearer \(token)"
///     }
///
///     func shouldReplay(after response: TransportResponse, context: MiddlewareContext) async -> Bool {
///         guard response.status == 401 else { return false }
///         // Refreshed by another call since this one was sent (concurrent 401s): replay with the new token.
///         let sent = context.sentRequest?.headers["Authorization"]
///         if let current = await tokens.current, sent != "Bearer \(current)" { return true }
///         return await tokens.refresh()   // true: try once more with the new token
///     }
/// }
/// ```
///
/// ## Topics
/// - ``allowedOrigins``
/// - ``prepare(_:context:)``
/// - ``shouldReplay(after:context:)``
/// - ``MiddlewareContext``
/// - ``MiddlewareRefusal``
public protocol HTTPMiddleware: Sendable {
    /// The origins whose requests this middleware sees; nil (the default) for every origin.
    var allowedOrigins: OriginAllowlist? { get }

    /// Whether ``prepare(_:context:)`` may wait (a token refresh over the network). The client then races it
    /// against the call's deadline, which costs a timer task per attempt. A middleware that only adds
    /// headers from memory says false (as ``TraceContextMiddleware`` does) and runs inline. Default true.
    /// Read once, when the client is made: it is a property of the middleware, not of a request.
    var mayWait: Bool { get }

    /// Adjusts `request` before it is sent (adds headers). Throwing ends the call with the refusal's kind
    /// and nothing sent for this attempt. Runs inside the call's deadline and is cancelled with it.
    func prepare(_ request: inout TransportRequest, context: MiddlewareContext) async throws(MiddlewareRefusal)

    /// Whether the call should be sent once more after `response` (a non-2xx answer). The client decides
    /// whether the replay is allowed; see the type's documentation.
    func shouldReplay(after response: TransportResponse, context: MiddlewareContext) async -> Bool
}

extension HTTPMiddleware {
    /// Every origin.
    public var allowedOrigins: OriginAllowlist? { nil }

    /// True: preparation may wait, so the client bounds it by the deadline.
    public var mayWait: Bool { true }

    /// Leaves the request as it is.
    public func prepare(_ request: inout TransportRequest, context: MiddlewareContext) async throws(MiddlewareRefusal) {
    }

    /// Never asks for a replay.
    public func shouldReplay(after response: TransportResponse, context: MiddlewareContext) async -> Bool { false }
}

/// What a middleware knows about the call it is part of.
public struct MiddlewareContext: Sendable {
    /// What every attempt of one call shares, made once per call: a context then copies as one reference,
    /// not as an operation's dozen fields (keel-bench trace.overhead).
    final class Shared: Sendable {
        let operation: HTTPOperation
        let correlationID: CorrelationID
        let trace: TraceContext

        init(operation: HTTPOperation, correlationID: CorrelationID, trace: TraceContext) {
            self.operation = operation
            self.correlationID = correlationID
            self.trace = trace
        }
    }

    let shared: Shared

    /// The operation being sent.
    public var operation: HTTPOperation { shared.operation }
    /// The user operation's correlation id (the same on every attempt).
    public var correlationID: CorrelationID { shared.correlationID }
    /// The operation's trace: ``HTTPOperation/trace`` when it continues one, otherwise a new trace id
    /// minted for this call (the same on every attempt).
    public var trace: TraceContext { shared.trace }
    /// The attempt about to be sent (``HTTPMiddleware/prepare(_:context:)``) or that got the response
    /// (``HTTPMiddleware/shouldReplay(after:context:)``), from 1.
    public let attempt: Int
    /// Whether this attempt is a replay a middleware asked for.
    public let isReplay: Bool
    /// The request as this attempt sent it — after every middleware's ``HTTPMiddleware/prepare(_:context:)``,
    /// so with the `Authorization` it carried — in ``HTTPMiddleware/shouldReplay(after:context:)``; nil in
    /// `prepare`, where nothing is sent yet and the request being prepared is the `inout` parameter.
    ///
    /// A token refresh compares the token it sent with the current one: when another call replaced it
    /// meanwhile (concurrent calls that all got a 401 to the old token), the answer was to a token already
    /// refreshed, and the replay needs no refresh of its own.
    public var sentRequest: TransportRequest? { sent?.request }

    /// ``sentRequest`` behind one reference: the context goes to every middleware of every attempt, and a
    /// request held inline made it a dozen words longer to copy (keel-bench trace.overhead).
    final class Sent: Sendable {
        let request: TransportRequest
        init(_ request: TransportRequest) { self.request = request }
    }

    let sent: Sent?

    init(shared: Shared, attempt: Int, isReplay: Bool) {
        self.shared = shared
        self.attempt = attempt
        self.isReplay = isReplay
        sent = nil
    }

    /// The context of attempt `context` for the replay decision after it sent `request`. Made only when a
    /// middleware is asked (a non-2xx answer): a successful call never copies its request into one.
    init(_ context: MiddlewareContext, sent request: TransportRequest) {
        shared = context.shared
        attempt = context.attempt
        isReplay = context.isReplay
        sent = Sent(request)
    }

    /// A context for unit tests and previews of an app's own middleware (the client makes the real ones,
    /// one per attempt), giving only what matters to the case at hand: the correlation id and the trace
    /// default to the operation's, or new ones drawn from the system's randomness, as the client's do.
    ///
    /// ```swift
    /// let sent = TransportRequest(method: "GET", url: api, headers: ["Authorization": "Bearer old"])
    /// let context = MiddlewareContext(operation: .get("/notes"), sentRequest: sent)
    /// #expect(await auth.shouldReplay(after: TransportResponse(status: 401), context: context))
    /// ```
    ///
    /// - Precondition: `attempt` is 1 or more.
    public init(
        operation: HTTPOperation, correlationID: CorrelationID? = nil, trace: TraceContext? = nil, attempt: Int = 1,
        isReplay: Bool = false, sentRequest: TransportRequest? = nil
    ) {
        precondition(attempt >= 1, "attempts count from 1")
        shared = Shared(
            operation: operation, correlationID: correlationID ?? operation.correlationID ?? .make(using: .system),
            trace: trace ?? operation.trace ?? .start(using: .system))
        self.attempt = attempt
        self.isReplay = isReplay
        sent = sentRequest.map(Sent.init)
    }
}

/// A middleware's reason not to send a request (no credentials, a refresh that failed).
public struct MiddlewareRefusal: Error, Sendable {
    /// The kind of failure the call ends with (e.g. ``ErrorCode/authentication``).
    public let kind: HTTPFailure.Kind
    /// Diagnostic detail for logs; never shown to users.
    public let detail: String

    /// A refusal of `kind`.
    public init(kind: HTTPFailure.Kind, detail: String = "") {
        self.kind = kind
        self.detail = detail
    }
}
