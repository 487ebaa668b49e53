public import KeelCore

/// Adds W3C Trace Context (`traceparent`, and `tracestate` when the operation carries one) to requests
/// for a closed allowlist of origins, and to nothing else (MOB-API-004).
///
/// Every attempt of an operation shares its trace id (``MiddlewareContext/trace``) and gets a new
/// random parent id from the injected random source, so the backend sees each attempt as its own span
/// of one trace. The middleware never sees a request to another origin (``HTTPMiddleware/allowedOrigins``),
/// so no redirect or URL can carry the context elsewhere; and the client drops any `traceparent` or
/// `tracestate` an operation sets by hand.
///
/// ```swift
/// let tracing = TraceContextMiddleware(allowlist: try OriginAllowlist(["https://api.example.com"]))
/// let client = HTTPClient(configuration: .init(baseURL: api, middleware: [tracing]))
/// ```
public struct TraceContextMiddleware: HTTPMiddleware {
    /// `traceparent`.
    public static let traceparentHeader = "traceparent"
    /// `tracestate`.
    public static let tracestateHeader = "tracestate"

    /// The only origins that receive trace context.
    public let allowlist: OriginAllowlist
    /// Where parent ids come from.
    public let random: RandomSource
    /// The sampled flag for operations that did not decide (``TraceContext/sampled`` is nil).
    public let sampledByDefault: Bool

    /// Trace context for `allowlist`'s origins, parent ids from `random`.
    public init(allowlist: OriginAllowlist, random: RandomSource = .system, sampledByDefault: Bool = false) {
        self.allowlist = allowlist
        self.random = random
        self.sampledByDefault = sampledByDefault
    }

    /// ``allowlist``.
    public var allowedOrigins: OriginAllowlist? { allowlist }

    /// False: it only adds headers, from memory.
    public var mayWait: Bool { false }

    /// Sets `traceparent` (version 00, the operation's trace id, a new parent id) and `tracestate`.
    public func prepare(_ request: inout TransportRequest, context: MiddlewareContext) async throws(MiddlewareRefusal) {
        let trace = context.trace
        let parent = TraceParent(
            traceID: trace.traceID, parentID: .random(using: random), sampled: trace.sampled ?? sampledByDefault)
        request.headers.removeAll(named: Self.traceparentHeader)
        request.headers.removeAll(named: Self.tracestateHeader)
        request.headers.append(name: Self.traceparentHeader, value: parent.headerValue)
        if let state = trace.traceState, !state.isEmpty {
            request.headers.append(name: Self.tracestateHeader, value: state.headerValue)
        }
    }
}
