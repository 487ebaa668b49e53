import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
import KeelTesting
import Testing

/// A fresh URLSession per test, so no pooled connection leaks between tests.
func makeSession(timeout: Double = 5, followRedirects: Bool = true) -> URLSession {
    let configuration = URLSessionConfiguration.ephemeral
    configuration.timeoutIntervalForRequest = timeout
    configuration.timeoutIntervalForResource = 60
    return URLSession(
        configuration: configuration, delegate: followRedirects ? nil : RedirectRefuser(), delegateQueue: nil)
}

/// Refuses every redirect, so the test sees the 3xx response itself.
final class RedirectRefuser: NSObject, URLSessionTaskDelegate, Sendable {
    func urlSession(
        _ session: URLSession,
        task: URLSessionTask,
        willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest,
        completionHandler: @escaping @Sendable (URLRequest?) -> Void
    ) {
        completionHandler(nil)
    }
}

extension URLSession {
    /// Sends `request`; returns the status, headers and body, or throws the URLError.
    func send(_ request: URLRequest) async throws -> (status: Int, headers: [AnyHashable: Any], body: Data) {
        let (data, response) = try await data(for: request)
        let http = response as! HTTPURLResponse
        return (http.statusCode, http.allHeaderFields, data)
    }

    func get(_ url: URL) async throws -> (status: Int, headers: [AnyHashable: Any], body: Data) {
        try await send(URLRequest(url: url))
    }
}

/// The URLError code a failed request threw, or nil when it did not fail with a URLError.
func urlErrorCode(of body: () async throws -> Void) async -> URLError.Code? {
    do {
        try await body()
        return nil
    } catch let error as URLError {
        return error.code
    } catch {
        return nil
    }
}

/// A raw TCP client for what URLSession cannot send (malformed requests) or hides (wire framing).
final class RawClient: @unchecked Sendable {
    // @unchecked Sendable: the descriptor never changes; a test uses a client from one thread at a time.
    let descriptor: Int32

    init(port: Int) throws {
        descriptor = try POSIX.connect(host: "127.0.0.1", port: UInt16(port))
    }

    deinit { POSIX.close(descriptor) }

    func send(_ text: String) { send(bytes: Array(text.utf8)) }

    func send(bytes: [UInt8]) {
        _ = bytes.withUnsafeBytes { POSIX.write(descriptor, $0) }
    }

    /// How a read from the server ended.
    enum Ending: Equatable {
        case endOfStream, reset, timedOut
    }

    /// Reads until the server closes the connection (FIN) and returns what arrived. Records a test
    /// issue when the connection did not end that way (reset, or still open after 5 s), so a test
    /// expecting a clean close cannot pass on a timeout.
    func readUntilClose(sourceLocation: SourceLocation = #_sourceLocation) -> String {
        let (text, ending) = readToEnd()
        if ending != .endOfStream {
            Issue.record(
                "expected the server to close the connection, but it \(ending)", sourceLocation: sourceLocation)
        }
        return text
    }

    /// Reads until the connection ends or 5 s pass without data; returns what arrived and how it ended.
    func readToEnd() -> (text: String, ending: Ending) {
        var received: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            guard !POSIX.waitReadable([descriptor], timeoutMilliseconds: 5000).isEmpty else {
                return (String(decoding: received, as: UTF8.self), .timedOut)
            }
            guard let count = chunk.withUnsafeMutableBytes({ POSIX.read(descriptor, into: $0) }) else {
                return (String(decoding: received, as: UTF8.self), .reset)
            }
            if count == 0 { return (String(decoding: received, as: UTF8.self), .endOfStream) }
            received += chunk[0..<count]
        }
    }

    /// Reads until `marker` has been received (or the connection closes, or 5 s pass).
    func read(until marker: String) -> String {
        var received: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while !String(decoding: received, as: UTF8.self).contains(marker) {
            guard !POSIX.waitReadable([descriptor], timeoutMilliseconds: 5000).isEmpty else { break }
            guard let count = chunk.withUnsafeMutableBytes({ POSIX.read(descriptor, into: $0) }), count > 0 else {
                break
            }
            received += chunk[0..<count]
        }
        return String(decoding: received, as: UTF8.self)
    }
}
