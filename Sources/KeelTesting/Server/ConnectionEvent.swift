/// Something that happened to a connection of the ``TestServer``, in order of occurrence.
public struct ConnectionEvent: Sendable, CustomStringConvertible {
    /// What happened.
    public enum Kind: Sendable, Equatable {
        /// The server accepted the connection.
        case opened
        /// The client closed its side or reset the connection (the server read end-of-stream or an error).
        case closedByClient
        /// The server closed the connection with FIN (a socket effect, `Connection: close`, or shutdown).
        case closedByServer
        /// The server reset the connection (RST via `SO_LINGER` 0).
        case resetByServer
        /// The server rejected a malformed request with the given status and closed the connection.
        case rejected(status: Int, reason: String)
    }

    /// The connection's id (see ``RecordedRequest/connectionID``).
    public let connectionID: Int
    /// What happened.
    public let kind: Kind
    /// When, by the continuous clock.
    public let instant: ContinuousClock.Instant
    /// How many bytes the server had written on this connection when it happened (status lines,
    /// headers and bodies of every response so far). With ``Kind/closedByClient`` it shows how much of
    /// a large response the client took before it hung up.
    public let bytesSent: Int

    /// The connection id and what happened, e.g. `connection 2: closedByClient`.
    public var description: String { "connection \(connectionID): \(kind)" }
}
