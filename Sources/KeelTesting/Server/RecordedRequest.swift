public import Foundation
public import KeelCore

/// One request the ``TestServer`` received, as it arrived on the wire.
public struct RecordedRequest: Sendable, CustomStringConvertible {
    /// The method token, e.g. `GET`.
    public let method: String
    /// The request target exactly as sent (`/notes?since=3`).
    public let target: String
    /// The protocol version, e.g. `HTTP/1.1`.
    public let version: String
    /// The header fields in wire order.
    public let headers: HeaderFields
    /// The body bytes received (for chunked requests, the decoded payload).
    public let body: Data
    /// Whether the body arrived with `Transfer-Encoding: chunked`.
    public let isChunked: Bool
    /// For chunked bodies, the size of each chunk in order (without the final zero-size chunk).
    public let chunkSizes: [Int]
    /// Whether the whole body arrived. False when a socket effect cut it short or the client hung up.
    public let isComplete: Bool
    /// Which connection carried it (1 for the first connection the server accepted, then 2, ...).
    public let connectionID: Int
    /// Its position on that connection (0 for the first request).
    public let indexOnConnection: Int
    /// Its position among all requests the server received (0 for the first).
    public let sequenceNumber: Int
    /// When the request line arrived, by the wall clock.
    public let arrivalDate: Date
    /// When the request line arrived, by the continuous clock (for measuring gaps between attempts).
    public let arrivalInstant: ContinuousClock.Instant

    /// The path part of ``target`` (without the query).
    public var path: String {
        String(target.prefix { $0 != "?" })
    }

    /// The decoded query items of ``target``, in order.
    public var queryItems: [URLQueryItem] {
        URLComponents(string: target)?.queryItems ?? []
    }

    /// The body decoded as UTF-8.
    public var bodyText: String { String(decoding: body, as: UTF8.self) }

    /// The sequence number, method, target and connection, e.g. `#0 GET /notes (connection 1)`.
    public var description: String { "#\(sequenceNumber) \(method) \(target) (connection \(connectionID))" }
}
