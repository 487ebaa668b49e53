import KeelCore

/// A transport that can end an exchange when the client's attempt timer fires, so that the client runs the
/// exchange on the calling task instead of racing it against a timer task: no task, no thread switch and
/// no dispatch timer of its own per attempt. ``URLSessionTransport`` and ``SocketTransport`` are; a transport
/// that is not still gets its attempt timeout, enforced by cancelling a child task.
public protocol InterruptibleHTTPTransport: HTTPTransport {
    /// Performs one exchange, as ``HTTPTransport/send(_:)`` does, and ends it as soon as `interruption` is
    /// interrupted: stop the exchange and close its connection (as for a cancellation), then throw.
    ///
    /// Register the exchange's ending with ``TransportInterruption/onInterrupt(_:)`` before any byte leaves:
    /// an interruption that came first then ends the exchange before it is sent.
    ///
    /// - Throws: ``TransportError`` when no complete response arrived.
    func send(_ request: TransportRequest, interruption: TransportInterruption) async throws(TransportError)
        -> TransportResponse
}

extension InterruptibleHTTPTransport {
    /// Performs one exchange that only task cancellation ends early: ``send(_:interruption:)`` with an
    /// interruption nothing gives.
    ///
    /// - Throws: ``TransportError`` when no complete response arrived.
    public func send(_ request: TransportRequest) async throws(TransportError) -> TransportResponse {
        try await send(request, interruption: TransportInterruption())
    }
}

/// The client's signal to end one exchange early (its attempt timer fired), handed to an
/// ``InterruptibleHTTPTransport``.
public final class TransportInterruption: Sendable {
    private struct State {
        var isInterrupted = false
        var handler: (@Sendable () -> Void)?
    }

    private let state = Locked(State())

    /// A signal not yet given.
    public init() {}

    /// Whether ``interrupt()`` was called.
    public var isInterrupted: Bool { state.withLock { $0.isInterrupted } }

    /// Sets what ends the exchange (replacing an earlier handler); when the interruption came first,
    /// `handler` runs at once, on this thread.
    public func onInterrupt(_ handler: @escaping @Sendable () -> Void) {
        let runNow = state.withLock { state -> Bool in
            guard !state.isInterrupted else { return true }
            state.handler = handler
            return false
        }
        if runNow { handler() }
    }

    /// Gives the signal: the handler runs once, on this thread; later calls do nothing.
    public func interrupt() {
        let handler = state.withLock { state -> (@Sendable () -> Void)? in
            guard !state.isInterrupted else { return nil }
            state.isInterrupted = true
            defer { state.handler = nil }
            return state.handler
        }
        handler?()
    }
}
