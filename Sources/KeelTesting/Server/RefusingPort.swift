public import Foundation

/// A loopback port where every connection is refused, for "connection refused" tests.
///
/// The port is bound but not listening, so it stays reserved for this value's lifetime: no other server
/// (another test running in parallel, say) can take it and answer by accident, as could happen with the
/// port of a server that was merely shut down.
public final class RefusingPort: Sendable {
    /// The port number.
    public let port: Int
    private let descriptor: Int32

    /// Reserves a free port on 127.0.0.1.
    ///
    /// - Throws: ``TestServerError`` when no socket can be bound.
    public init() throws {
        do {
            let socket = try POSIX.makeBoundSocket(host: "127.0.0.1")
            descriptor = socket.fd
            port = Int(socket.port)
        } catch {
            throw TestServerError(code: .cannotListen, message: "cannot reserve a port: \(error)")
        }
    }

    deinit { POSIX.close(descriptor) }

    /// `http://127.0.0.1:<port>`.
    public var baseURL: URL { URL(string: "http://127.0.0.1:\(port)")! }

    /// The URL of `path` on the refusing port.
    public func url(_ path: String = "/") -> URL {
        TestServer.url(port: port, path: path)
    }
}
