public import Foundation
public import KeelCore
public import KeelContract

/// The HTTP client every Keel call goes through (MOB-API-002, MOB-API-003).
///
/// Each call has a finite deadline on the injected clock; cancelling the calling task stops the
/// in-flight attempt and any wait before a retry at once; a failed attempt is retried only when the
/// failure is transient **and** the operation may be repeated (idempotent or keyed), or when the request
/// provably never left the device. Every failure is an ``HTTPFailure`` with a kind and an outcome.
///
/// ```swift
/// let client = HTTPClient(configuration: .init(baseURL: api))
/// let note = try await client.send(.get("/notes/7"), decoding: Note.self)
/// ```
public final class HTTPClient: Sendable {
    /// Everything the client needs, injected.
    public struct Configuration: Sendable {
        /// The API's base URL (`https://api.example.com/v1`); operation paths are appended to it.
        public var baseURL: URL
        public var transport: any HTTPTransport
        /// The clock for deadlines, attempt timeouts and retry delays.
        public var clock: any Clock<Duration>
        /// The wall clock for `Retry-After` dates.
        public var wallClock: WallClock
        /// Randomness for jitter, correlation ids and idempotency keys.
        public var random: RandomSource
        public var policy: CallPolicy
        /// Shared by all calls of this client.
        public var budget: RetryBudget
        /// The contract version sent on every call (``ContractVersion/header``), if pinned.
        public var contractVersion: ContractVersion?
        public var errorBody: ErrorBodyContract
        /// The header the server puts its request id in.
        public var requestIDHeader: String
        /// The header carrying the correlation id.
        public var correlationIDHeader: String
        /// The header carrying the idempotency key.
        public var idempotencyKeyHeader: String
        /// Receives every attempt event (tests, diagnostics). Called synchronously; keep it cheap.
        public var observer: (@Sendable (AttemptEvent) -> Void)?
        public var logger: Logger

        public init(
            baseURL: URL,
            transport: any HTTPTransport = URLSessionTransport(),
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
            logger: Logger = .disabled
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
        }
    }

    /// A successful exchange.
    public struct Reply: Sendable {
        public let status: Int
        public let headers: [(name: String, value: String)]
        public let body: Data
        /// The server's request id, when it sent one.
        public let requestID: String?
        public let correlationID: CorrelationID
        public let attempts: Int
    }

    public let configuration: Configuration

    public init(configuration: Configuration) {
        self.configuration = configuration
    }

    /// Sends `operation` and returns the successful (2xx) reply.
    ///
    /// - Throws: ``HTTPFailure``.
    public func send(_ operation: HTTPOperation, policy: CallPolicy? = nil) async throws(HTTPFailure) -> Reply {
        var call = Call(configuration: configuration, operation: operation, policy: policy ?? configuration.policy)
        return try await call.run(clock: configuration.clock)
    }

    /// Sends `operation` and decodes its JSON reply as `T`.
    ///
    /// - Throws: ``HTTPFailure``; a reply that does not decode is `technical` (outcome `unknown` for a
    ///   mutating operation: the server did act on it, but the app cannot read what happened).
    public func send<T: Decodable>(_ operation: HTTPOperation, decoding type: T.Type, policy: CallPolicy? = nil) async throws(HTTPFailure) -> T {
        let reply = try await send(operation, policy: policy)
        do {
            return try ContractDecoder().decode(type, from: reply.body)
        } catch {
            throw HTTPFailure(
                kind: .technical, outcome: operation.mutates ? .unknown : .rejected, status: reply.status, errorCode: nil,
                requestID: reply.requestID, correlationID: reply.correlationID, attempts: reply.attempts, retryAt: nil,
                fieldErrors: [], detail: Redacted("undecodable response: \(error)")
            )
        }
    }
}
