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
public final class URLSessionTransport: HTTPTransport {
    private let pooled: URLSession
    private let fresh: URLSession
    private let delegate: SessionDelegate

    /// A transport over new sessions with `configuration`'s settings (cookies and caching off).
    public init(configuration: URLSessionConfiguration = .ephemeral) {
        configuration.httpShouldSetCookies = false
        configuration.urlCache = nil
        delegate = SessionDelegate()
        pooled = URLSession(configuration: configuration, delegate: delegate, delegateQueue: nil)
        let single = configuration.copy() as! URLSessionConfiguration
        single.httpAdditionalHeaders = (single.httpAdditionalHeaders ?? [:]).merging(["Connection": "close"]) { $1 }
        fresh = URLSession(configuration: single, delegate: delegate, delegateQueue: nil)
    }

    deinit {
        pooled.finishTasksAndInvalidate()
        fresh.finishTasksAndInvalidate()
    }

    public func send(_ request: HTTPRequest) async throws(TransportError) -> HTTPResponse {
        var urlRequest = URLRequest(url: request.url)
        urlRequest.httpMethod = request.method
        for header in request.headers { urlRequest.addValue(header.value, forHTTPHeaderField: header.name) }
        urlRequest.httpBody = request.body
        if !request.reusesConnections { urlRequest.setValue("close", forHTTPHeaderField: "Connection") }
        // FoundationNetworking truncates timeouts to whole seconds: round up, never down to zero.
        let seconds = request.transportTimeout.components.seconds + (request.transportTimeout.components.attoseconds > 0 ? 1 : 0)
        urlRequest.timeoutInterval = TimeInterval(max(1, seconds))

        let task = (request.reusesConnections ? pooled : fresh).dataTask(with: urlRequest)
        let delegate = self.delegate
        do {
            return try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<HTTPResponse, any Error>) in
                    delegate.register(task, limit: request.maximumResponseBytes, continuation: continuation)
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
        case .badServerResponse, .cannotParseResponse, .cannotDecodeRawData, .cannotDecodeContentData, .zeroByteResource, .unknown:
            // FoundationNetworking reports a truncated body as .unknown (-1); `keel faults` shows it.
            return TransportError(code: .malformedResponse, requestMayHaveBeenSent: true, detail: detail)
        case .dataLengthExceedsMaximum:
            return TransportError(code: .responseTooLarge, requestMayHaveBeenSent: true, detail: detail)
        case .cancelled:
            return TransportError(code: .cancelled, requestMayHaveBeenSent: true, detail: detail)
        default:
            return TransportError(code: .other, requestMayHaveBeenSent: true, detail: detail)
        }
    }
}

/// Collects each task's response and body, enforcing the size limit as bytes arrive.
private final class SessionDelegate: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    // @unchecked Sendable: `exchanges` is only touched under its lock; URLSession calls the delegate on
    // its own serial queue.
    private struct Exchange {
        let continuation: CheckedContinuation<HTTPResponse, any Error>
        let limit: Int
        var response: HTTPURLResponse?
        var body = Data()
        var tooLarge = false
    }

    private let exchanges = Locked<[Int: Exchange]>([:])

    func register(_ task: URLSessionTask, limit: Int, continuation: CheckedContinuation<HTTPResponse, any Error>) {
        exchanges.withLock { $0[task.taskIdentifier] = Exchange(continuation: continuation, limit: limit) }
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
                    completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void) {
        exchanges.withLock { $0[dataTask.taskIdentifier]?.response = response as? HTTPURLResponse }
        completionHandler(.allow)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        let exceeded = exchanges.withLock { exchanges -> Bool in
            guard var exchange = exchanges[dataTask.taskIdentifier] else { return false }
            if exchange.body.count + data.count > exchange.limit {
                exchange.tooLarge = true
                exchanges[dataTask.taskIdentifier] = exchange
                return true
            }
            exchange.body.append(data)
            exchanges[dataTask.taskIdentifier] = exchange
            return false
        }
        // Stop downloading at once: the body is not kept, and the rest is never read.
        if exceeded { dataTask.cancel() }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
                    newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void) {
        completionHandler(nil)  // Keel judges redirects (a foreign origin means a captive portal)
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        guard let exchange = exchanges.withLock({ $0.removeValue(forKey: task.taskIdentifier) }) else { return }
        if exchange.tooLarge {
            exchange.continuation.resume(throwing: TransportError(
                code: .responseTooLarge, requestMayHaveBeenSent: true,
                detail: "response body exceeds \(exchange.limit) bytes; the rest was not downloaded"
            ))
        } else if let error {
            let mapped = (error as? URLError).map(URLSessionTransport.map)
                ?? TransportError(code: .other, requestMayHaveBeenSent: true, detail: "\(error)")
            exchange.continuation.resume(throwing: mapped)
        } else if let response = exchange.response {
            let headers = response.allHeaderFields.compactMap { key, value -> (name: String, value: String)? in
                guard let name = key as? String, let value = value as? String else { return nil }
                return (name, value)
            }
            exchange.continuation.resume(returning: HTTPResponse(status: response.statusCode, headers: headers, body: exchange.body))
        } else {
            exchange.continuation.resume(throwing: TransportError(code: .malformedResponse, requestMayHaveBeenSent: true, detail: "no HTTP response"))
        }
    }
}
