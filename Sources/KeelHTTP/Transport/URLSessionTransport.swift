// The URLSession adapter: the only file in KeelHTTP that talks to URLSession.
#if canImport(FoundationNetworking)
    import Foundation
    public import FoundationNetworking
#else
    public import Foundation
#endif
import KeelCore

/// The default transport: `URLSession` data tasks driven by a delegate, so that the body is received
/// piece by piece (and cut off as soon as it exceeds the limit), redirects are handed back instead of
/// followed, and cancellation cancels the task (closing its connection).
///
/// Requests that must not reuse a connection (``HTTPRequest/reusesConnections`` false) go through a
/// second session whose every request says `Connection: close`, so its pool never holds a connection
/// that could be silently reused and re-sent on.
public final class URLSessionTransport: InterruptibleHTTPTransport {
    private let pooled: URLSession
    fileprivate let fresh: URLSession
    fileprivate let delegate: SessionDelegate

    /// A transport over new sessions with a copy of `configuration`'s settings (cookies and caching
    /// turned off in the copy; the caller's configuration is left as it was).
    public init(configuration: URLSessionConfiguration = .ephemeral) {
        // URLSessionConfiguration is a class: change a copy, never the caller's object.
        let settings = configuration.copy() as! URLSessionConfiguration
        settings.httpShouldSetCookies = false
        settings.urlCache = nil
        delegate = SessionDelegate()
        pooled = URLSession(configuration: settings, delegate: delegate, delegateQueue: nil)
        let single = settings.copy() as! URLSessionConfiguration
        single.httpAdditionalHeaders = (single.httpAdditionalHeaders ?? [:]).merging(["Connection": "close"]) { $1 }
        fresh = URLSession(configuration: single, delegate: delegate, delegateQueue: nil)
    }

    deinit {
        pooled.finishTasksAndInvalidate()
        fresh.finishTasksAndInvalidate()
    }

    /// How many bytes of a stream may wait unread before the stream ends with ``ErrorCode/responseTooLarge``
    /// (8 MiB). URLSession cannot be made to wait for a slow reader the way ``SocketTransport`` makes the
    /// server wait; this keeps memory bounded instead.
    static let streamBufferBytes = 8 << 20

    /// Performs one exchange on a `URLSession` data task: redirects are returned, not followed; a request that
    /// must not reuse a connection goes out with `Connection: close`; cancelling the calling task, or
    /// `interruption`, cancels the data task. (``send(_:)`` is this with an interruption nothing gives.)
    ///
    /// - Throws: ``TransportError`` mapped from the `URLError`, saying whether the request may have been sent.
    public func send(_ request: TransportRequest, interruption: TransportInterruption) async throws(TransportError)
        -> TransportResponse
    {
        // A line break in a field would end it early and smuggle what follows; nothing is sent.
        if let refusal = FieldSyntax.hostileField(in: request.headers) { throw refusal }
        var urlRequest = URLRequest(url: request.url)
        urlRequest.httpMethod = request.method
        for field in request.headers { urlRequest.addValue(field.value, forHTTPHeaderField: field.name) }
        urlRequest.httpBody = request.body
        if !request.reusesConnections { urlRequest.setValue("close", forHTTPHeaderField: "Connection") }
        // FoundationNetworking truncates timeouts to whole seconds: round up, never down to zero.
        urlRequest.timeoutInterval = TimeInterval(request.transportTimeout.inWholeSecondsRoundedUp(minimum: 1))

        let task = (request.reusesConnections ? pooled : fresh).dataTask(with: urlRequest)
        let exchange = Exchange(limit: request.maximumResponseBytes, reusesConnection: request.reusesConnections)
        delegate.track(task, exchange)
        /// Ends the exchange with `code` and cancels the data task (a cancel, or the attempt timer).
        @Sendable func stop(_ code: TransportError.Code, _ detail: String) {
            exchange.finish(.failure(TransportError(code: code, requestMayHaveBeenSent: true, detail: detail)))
            task.cancel()
        }
        // Before the task is resumed: an interruption that came first ends the exchange before it is sent.
        interruption.onInterrupt { stop(.timedOut, "interrupted by the attempt timer") }
        let resumed = Locked(false)
        do {
            return try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation {
                    (continuation: CheckedContinuation<TransportResponse, any Error>) in
                    // Attach first, resume after: a cancellation that came earlier resumes at once instead.
                    if exchange.attach(continuation) {
                        resumed.withLock { $0 = true }
                        task.resume()
                    }
                }
            } onCancel: {
                stop(.cancelled, "cancelled")
            }
        } catch let error as TransportError {
            // Ended before the task was resumed (an interruption or a cancel that came first): nothing left the
            // device, whatever `stop` assumed (found in an outside audit: such a call ended `unknown`).
            guard resumed.withLock({ $0 }) else {
                throw TransportError(
                    code: error.code, requestMayHaveBeenSent: false, detail: error.detail + " (before it was sent)")
            }
            throw error
        } catch {
            throw TransportError(code: .other, requestMayHaveBeenSent: true, detail: "\(error)")
        }
    }

    /// A response's header fields as Keel keeps them.
    static func headers(of response: HTTPURLResponse) -> HeaderFields {
        HeaderFields(
            response.allHeaderFields.compactMap { key, value -> (String, String)? in
                guard let name = key as? String, let value = value as? String else { return nil }
                return (name, value)
            })
    }

    /// What each URLError means for "did the request leave the device?".
    static func map(_ error: URLError) -> TransportError {
        let detail = "URLError \(error.code.rawValue)"
        switch error.code {
        case .notConnectedToInternet, .dataNotAllowed, .internationalRoamingOff:
            return TransportError(code: .notConnected, requestMayHaveBeenSent: false, detail: detail)
        case .cannotFindHost, .dnsLookupFailed:
            return TransportError(code: .dnsFailed, requestMayHaveBeenSent: false, detail: detail)
        case .cannotConnectToHost:
            return TransportError(code: .cannotConnect, requestMayHaveBeenSent: false, detail: detail)
        case .timedOut:
            return TransportError(code: .timedOut, requestMayHaveBeenSent: true, detail: detail)
        case .networkConnectionLost:
            return TransportError(code: .connectionLost, requestMayHaveBeenSent: true, detail: detail)
        case .badServerResponse, .cannotParseResponse, .cannotDecodeRawData, .cannotDecodeContentData,
            .zeroByteResource, .unknown:
            // FoundationNetworking reports a truncated body as .unknown (-1); `keel faults` shows it.
            return TransportError(code: .malformedResponse, requestMayHaveBeenSent: true, detail: detail)
        case .dataLengthExceedsMaximum:
            return TransportError(code: .responseTooLarge, requestMayHaveBeenSent: true, detail: detail)
        case .cancelled:
            return TransportError(code: .cancelled, requestMayHaveBeenSent: true, detail: detail)
        // The server's certificate was refused, or App Transport Security refused the connection: that is
        // decided in the handshake, before the request is written, so it never left (found in an outside audit:
        // `other`, may have been sent — how a captive portal usually shows over HTTPS). CFNetwork's catch-all
        // for TLS (-1200) and a client certificate refused (which TLS 1.3 may say after the client's first
        // data) can come after the request went out: may have been sent (found in a review).
        case .serverCertificateHasBadDate, .serverCertificateUntrusted, .serverCertificateHasUnknownRoot,
            .serverCertificateNotYetValid, .clientCertificateRequired, .appTransportSecurityRequiresSecureConnection:
            return TransportError(code: .secureConnectionFailed, requestMayHaveBeenSent: false, detail: detail)
        case .secureConnectionFailed, .clientCertificateRejected:
            return TransportError(code: .secureConnectionFailed, requestMayHaveBeenSent: true, detail: detail)
        case .callIsActive:
            // A phone call holds the only data channel (2G): nothing could be sent.
            return TransportError(code: .notConnected, requestMayHaveBeenSent: false, detail: detail)
        default:
            return TransportError(code: .other, requestMayHaveBeenSent: true, detail: detail)
        }
    }
}

/// What receives a data task's delegate callbacks: a whole-response ``Exchange`` or a ``StreamExchange``.
private protocol TaskReceiver: Sendable {
    /// The response head; false to cancel the task.
    func received(_ response: HTTPURLResponse?) -> Bool
    /// A piece of the body; false to cancel the task.
    func append(_ data: Data) -> Bool
    /// The task ended (with `error`, or cleanly).
    func complete(error: (any Error)?)
}

extension Exchange: TaskReceiver {}

/// A long-lived exchange: the head resumes ``opened``; body pieces go to ``continuation`` as they arrive.
private final class StreamExchange: TaskReceiver {
    private let opened = Locked<CheckedContinuation<TransportStream, any Error>?>(nil)
    /// What arrived and was not read yet. URLSession delivers on a delegate queue every task of the session
    /// shares, which must never wait for one slow reader: past ``URLSessionTransport/streamBufferBytes``
    /// unread, the stream ends with an error instead of growing without end.
    private let handoff: StreamHandoff<[UInt8]>
    private let body: AsyncThrowingStream<[UInt8], any Error>
    private let close: @Sendable () -> Void

    init(handoff: StreamHandoff<[UInt8]>, close: @escaping @Sendable () -> Void) {
        self.handoff = handoff
        self.body = handoff.stream(onTermination: close)
        self.close = close
    }

    func attach(_ continuation: CheckedContinuation<TransportStream, any Error>) {
        opened.withLock { $0 = continuation }
    }

    /// The opening continuation, once: whoever takes it (head, failure, connect timer) resumes it.
    private func takeOpened() -> CheckedContinuation<TransportStream, any Error>? {
        opened.withLock { state in
            defer { state = nil }
            return state
        }
    }

    /// Fails the opening with a timeout when the head has not arrived; true when it had not.
    func expireHead(after limit: Duration) -> Bool {
        guard
            let waiting = takeOpened()
        else { return false }
        waiting.resume(
            throwing: TransportError(
                code: .timedOut, requestMayHaveBeenSent: true, detail: "no response head within \(limit)"))
        handoff.finish()
        return true
    }

    func received(_ response: HTTPURLResponse?) -> Bool {
        guard
            let waiting = takeOpened()
        else { return false }
        guard let response else {
            waiting.resume(
                throwing: TransportError(
                    code: .malformedResponse, requestMayHaveBeenSent: true, detail: "no HTTP response"))
            return false
        }
        waiting.resume(
            returning: TransportStream(
                status: response.statusCode, headers: URLSessionTransport.headers(of: response), body: body,
                close: close))
        return true
    }

    func append(_ data: Data) -> Bool {
        switch handoff.offer([UInt8](data), weight: data.count) {
        case true?: return true
        case false?: return false
        case nil:
            // The reader fell this far behind the server: the stream ends (what was unread is still handed
            // out first) rather than hold the rest of the feed in memory.
            handoff.finish(
                throwing: TransportError(
                    code: .responseTooLarge, requestMayHaveBeenSent: true,
                    detail:
                        "the reader fell more than \(handoff.capacity) bytes behind the server: the stream was ended"))
            close()
            return false
        }
    }

    func complete(error: (any Error)?) {
        let mapped = error.map {
            ($0 as? URLError).map(URLSessionTransport.map)
                ?? TransportError(code: .other, requestMayHaveBeenSent: true, detail: "\($0)")
        }
        if let waiting = takeOpened() {
            waiting.resume(
                throwing: mapped
                    ?? TransportError(
                        code: .malformedResponse, requestMayHaveBeenSent: true, detail: "no HTTP response"))
        }
        handoff.finish(throwing: mapped)
    }
}

extension URLSessionTransport: StreamingHTTPTransport {
    /// Opens a long-lived exchange as a data task on the no-reuse session. URLSession's request timeout
    /// is an idle timeout, so it is the no-progress limit (whole seconds on Linux); connecting is bounded by
    /// the smaller of the two limits.
    public func openStream(_ request: TransportRequest, connectTimeout: Duration, noProgressTimeout: Duration)
        async throws(TransportError) -> TransportStream
    {
        if let refusal = FieldSyntax.hostileField(in: request.headers) { throw refusal }
        var urlRequest = URLRequest(url: request.url)
        urlRequest.httpMethod = request.method
        for field in request.headers { urlRequest.addValue(field.value, forHTTPHeaderField: field.name) }
        urlRequest.httpBody = request.body
        urlRequest.setValue("close", forHTTPHeaderField: "Connection")
        // URLSession's request timeout is an idle limit between packets: the no-progress limit.
        urlRequest.timeoutInterval = TimeInterval(noProgressTimeout.inWholeSecondsRoundedUp(minimum: 1))
        let task = fresh.dataTask(with: urlRequest)
        let exchange = StreamExchange(
            handoff: StreamHandoff(capacity: Self.streamBufferBytes), close: { task.cancel() })
        delegate.track(task, exchange)
        // Connecting (up to the response head) has its own, usually shorter, limit. Its timer is freed when
        // the head arrives first (DeadlineSleep), not kept until it would have fired.
        let connectTimer = Task {
            try? await DeadlineSleep.wait(connectTimeout)
            if !Task.isCancelled, exchange.expireHead(after: connectTimeout) { task.cancel() }
        }
        defer { connectTimer.cancel() }
        do {
            return try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation {
                    (opened: CheckedContinuation<TransportStream, any Error>) in
                    exchange.attach(opened)
                    task.resume()
                }
            } onCancel: {
                task.cancel()
            }
        } catch let error as TransportError {
            throw error
        } catch {
            throw TransportError(code: .other, requestMayHaveBeenSent: true, detail: "\(error)")
        }
    }
}

/// One exchange in flight: its continuation (resumed exactly once, by whichever of completion and
/// cancellation comes first) and what has arrived so far.
private final class Exchange: Sendable {
    private enum Phase {
        case waiting
        case attached(CheckedContinuation<TransportResponse, any Error>)
        case finished(Result<TransportResponse, any Error>?)
    }

    /// Everything that changes, behind one lock.
    private struct State {
        var phase = Phase.waiting
        var response: HTTPURLResponse?
        var body = Data()
        var tooLarge = false
    }

    let limit: Int
    let reusesConnection: Bool
    private let state = Locked(State())

    init(limit: Int, reusesConnection: Bool) {
        self.limit = limit
        self.reusesConnection = reusesConnection
    }

    /// Attaches the continuation; false when the exchange already finished (it was resumed here).
    func attach(_ continuation: CheckedContinuation<TransportResponse, any Error>) -> Bool {
        // Decided under the lock, resumed outside it.
        let earlier: Result<TransportResponse, any Error>?? = state.withLock { state in
            switch state.phase {
            case .waiting:
                state.phase = .attached(continuation)
                return .none
            case .finished(let result):
                state.phase = .finished(nil)
                return .some(result)
            case .attached:
                preconditionFailure("URLSessionTransport: exchange attached twice")
            }
        }
        guard case .some(let result) = earlier else { return true }
        continuation.resume(
            with: result
                ?? .failure(TransportError(code: .cancelled, requestMayHaveBeenSent: false, detail: "cancelled")))
        return false
    }

    /// Ends the exchange with `result` (first call wins).
    func finish(_ result: Result<TransportResponse, any Error>) {
        let waiting: CheckedContinuation<TransportResponse, any Error>? = state.withLock { state in
            switch state.phase {
            case .waiting:
                state.phase = .finished(result)
                return nil
            case .attached(let continuation):
                state.phase = .finished(nil)
                return continuation
            case .finished:
                return nil
            }
        }
        waiting?.resume(with: result)
    }

    /// Records the response head; false (and the exchange failed) when its declared `Content-Length`
    /// already exceeds the limit, so that none of the body is read.
    func received(_ response: HTTPURLResponse?) -> Bool {
        state.withLock { $0.response = response }
        guard
            let declared = response?.value(forHTTPHeaderField: "Content-Length").flatMap({
                Int64($0.trimmingCharacters(in: .whitespaces))
            }),
            declared > Int64(limit)
        else { return true }
        finish(
            .failure(
                TransportError(
                    code: .responseTooLarge, requestMayHaveBeenSent: true,
                    detail: "declared Content-Length \(declared) exceeds \(limit) bytes; the body was not read")))
        return false
    }

    /// Appends `data`; false (and the body dropped) when it would exceed the limit.
    func append(_ data: Data) -> Bool {
        state.withLock { state in
            guard !state.tooLarge, state.body.count + data.count <= limit else {
                state.tooLarge = true
                state.body = Data()
                return false
            }
            state.body.append(data)
            return true
        }
    }

    func complete(error: (any Error)?) {
        let (response, body, tooLarge) = state.withLock { ($0.response, $0.body, $0.tooLarge) }
        if tooLarge {
            finish(
                .failure(
                    TransportError(
                        code: .responseTooLarge, requestMayHaveBeenSent: true,
                        detail: "response body exceeds \(limit) bytes; the rest was not downloaded")))
        } else if let error {
            var mapped =
                (error as? URLError).map(URLSessionTransport.map)
                ?? TransportError(code: .other, requestMayHaveBeenSent: true, detail: "\(error)")
            if reusesConnection && !mapped.requestMayHaveBeenSent {
                // On a pooled connection the stack may have sent the request on a connection that died
                // and then failed to reconnect: "refused" then proves nothing about the first copy.
                mapped = TransportError(
                    code: mapped.code, requestMayHaveBeenSent: true, detail: mapped.detail + " (pooled connection)")
            }
            finish(.failure(mapped))
        } else if let response {
            finish(
                .success(
                    TransportResponse(
                        status: response.statusCode, headers: URLSessionTransport.headers(of: response), body: body)))
        } else {
            finish(
                .failure(
                    TransportError(code: .malformedResponse, requestMayHaveBeenSent: true, detail: "no HTTP response")))
        }
    }
}

/// Routes each task's delegate callbacks to its exchange.
private final class SessionDelegate: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    // @unchecked Sendable: `exchanges` is only touched under its lock. Keys are the task objects'
    // identities; each entry holds its task, so an identity cannot be reused while the entry exists
    // (task identifiers alone repeat across the transport's two sessions).
    private let exchanges = Locked<[ObjectIdentifier: (task: URLSessionTask, exchange: any TaskReceiver)]>([:])

    func track(_ task: URLSessionTask, _ exchange: any TaskReceiver) {
        exchanges.withLock { entries in
            precondition(entries[ObjectIdentifier(task)] == nil, "URLSessionTransport: task tracked twice")
            entries[ObjectIdentifier(task)] = (task, exchange)
        }
    }

    private func exchange(for task: URLSessionTask) -> (any TaskReceiver)? {
        exchanges.withLock { $0[ObjectIdentifier(task)]?.exchange }
    }

    func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
        completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void
    ) {
        let proceed = exchange(for: dataTask)?.received(response as? HTTPURLResponse) ?? true
        completionHandler(proceed ? .allow : .cancel)
        if !proceed { dataTask.cancel() }
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        // Over the limit: stop downloading at once; the rest is never read.
        if exchange(for: dataTask)?.append(data) == false { dataTask.cancel() }
    }

    func urlSession(
        _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void
    ) {
        completionHandler(nil)  // Keel judges redirects (a foreign origin means a captive portal)
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        let entry = exchanges.withLock { $0.removeValue(forKey: ObjectIdentifier(task)) }
        entry?.exchange.complete(error: error)
    }
}
