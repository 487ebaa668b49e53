// The URLSession adapter: the only file in KeelHTTP that talks to URLSession.
#if canImport(FoundationNetworking)
import Foundation
public import FoundationNetworking
#else
public import Foundation
#endif

/// The default transport: `URLSession`, with redirects not followed and errors mapped to ``TransportError``.
public final class URLSessionTransport: HTTPTransport {
    private let session: URLSession

    /// A transport over a fresh ephemeral session with `configuration`'s settings.
    public init(configuration: URLSessionConfiguration = .ephemeral) {
        configuration.httpShouldSetCookies = false
        configuration.urlCache = nil
        session = URLSession(configuration: configuration, delegate: RedirectRefusingDelegate(), delegateQueue: nil)
    }

    deinit {
        session.finishTasksAndInvalidate()
    }

    public func send(_ request: HTTPRequest) async throws(TransportError) -> HTTPResponse {
        var urlRequest = URLRequest(url: request.url)
        urlRequest.httpMethod = request.method
        for header in request.headers { urlRequest.addValue(header.value, forHTTPHeaderField: header.name) }
        urlRequest.httpBody = request.body
        // FoundationNetworking truncates timeouts to whole seconds: round up, never down to zero.
        let seconds = request.transportTimeout.components.seconds + (request.transportTimeout.components.attoseconds > 0 ? 1 : 0)
        urlRequest.timeoutInterval = TimeInterval(max(1, seconds))
        do {
            let (data, response) = try await session.data(for: urlRequest)
            guard let http = response as? HTTPURLResponse else {
                throw TransportError(code: .malformedResponse, requestMayHaveBeenSent: true, detail: "not an HTTP response")
            }
            guard data.count <= request.maximumResponseBytes else {
                throw TransportError(code: .responseTooLarge, requestMayHaveBeenSent: true,
                                     detail: "response body of \(data.count) bytes exceeds \(request.maximumResponseBytes)")
            }
            let headers = http.allHeaderFields.compactMap { key, value -> (name: String, value: String)? in
                guard let name = key as? String, let value = value as? String else { return nil }
                return (name, value)
            }
            return HTTPResponse(status: http.statusCode, headers: headers, body: data)
        } catch let error as TransportError {
            throw error
        } catch let error as URLError {
            throw Self.map(error)
        } catch is CancellationError {
            throw TransportError(code: .cancelled, requestMayHaveBeenSent: true, detail: "cancelled")
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
            // FoundationNetworking reports a truncated body as .unknown (-1); keel faults shows it.
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

/// Hands 3xx responses back to Keel instead of following them.
private final class RedirectRefusingDelegate: NSObject, URLSessionTaskDelegate, @unchecked Sendable {
    // @unchecked Sendable: stateless.
    func urlSession(_ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
                    newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void) {
        completionHandler(nil)
    }
}
