/// What the ``TestServer`` does to a connection around one response (OkHttp's `SocketPolicy`).
public enum SocketEffect: Sendable, Equatable {
    /// Send the response and keep the connection open for more requests (unless the client asked to close).
    case keepOpen
    /// Send the response, then close the connection (FIN).
    case disconnectAtEnd
    /// Close the connection as soon as the request starts arriving, before reading it.
    case disconnectAtStart
    /// Read the whole request, then close without responding.
    case disconnectAfterRequest
    /// Read the request head and at most `afterBytes` bytes of its body, then close without answering
    /// (also when the body turned out shorter). Queue only: a dispatcher sees the request too late.
    case disconnectDuringRequestBody(afterBytes: Int)
    /// Send the headers and `afterBytes` bytes of the body as it goes on the wire (with ``TestResponse/chunked(size:)``,
    /// the chunked framing counts: cut after 6 bytes of chunks of 4, the client gets `4\r\n01`), then close.
    case disconnectDuringResponseBody(afterBytes: Int)
    /// Send the headers and `afterBytes` bytes of the body as it goes on the wire (framing included, as for
    /// ``disconnectDuringResponseBody(afterBytes:)``), then go silent: no more bytes, no FIN, no RST — a
    /// network that switched away under the connection. It is held until the client gives up or the server
    /// stops, whatever `Connection: close` the request carried.
    case stallDuringResponseBody(afterBytes: Int)
    /// Read the request, then shut down the server's output (the client sees end-of-stream, no response).
    case halfCloseAfterRequest
    /// Read the request and never answer; hold the connection until the client gives up or the server stops.
    case noResponse
    /// Accept the connection and never read from it: the request sits unread in the socket buffer
    /// until the client gives up or the server stops.
    ///
    /// The at-start effects (this one, ``disconnectAtStart`` and ``resetAtStart``) are looked for when a
    /// connection starts waiting for its next request. Enqueued while a kept-alive connection is already
    /// waiting, they act on the request that connection reads next — after reading it: the client sees the
    /// same (no answer, a close, a reset), but the bytes are no longer in the socket buffer.
    case stallAtStart
    /// Reset the connection (RST) as soon as the request starts arriving.
    case resetAtStart
    /// Read the whole request, then reset the connection (RST) without responding.
    case resetAfterRequest
    /// Send the headers and `afterBytes` bytes of the body as it goes on the wire (framing included, as for
    /// ``disconnectDuringResponseBody(afterBytes:)``), then reset the connection (RST).
    case resetDuringResponseBody(afterBytes: Int)
    /// Send the response, then shut down the server's input side: further requests are not read, and the
    /// server closes the connection (recorded as closed by the server).
    case shutdownInputAtEnd
    /// Send the response, then shut down the server's output side (FIN; the client can still send).
    case shutdownOutputAtEnd

    /// Effects that act while the request body is read; they must be known before the request is.
    var actsDuringRequestBody: Bool {
        if case .disconnectDuringRequestBody = self { return true }
        return false
    }

    /// Effects that act before the request is read; the server looks at the next queued response for them.
    var actsAtStart: Bool {
        switch self {
        case .disconnectAtStart, .stallAtStart, .resetAtStart: true
        default: false
        }
    }
}
