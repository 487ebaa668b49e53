import Foundation
public import KeelCore

/// A transport that can deliver a response body as it arrives (long-lived streams: server-sent events,
/// newline-delimited JSON). ``SocketTransport`` is one.
public protocol StreamingHTTPTransport: HTTPTransport {
    /// Sends `request` on a fresh connection and returns the response head; the body follows in
    /// ``TransportStream/body`` as it arrives. Connecting may take at most `connectTimeout`; after that,
    /// every wait for the next byte (the head's included) at most `noProgressTimeout`; there is no overall
    /// limit. Ending the iteration of the body (or cancelling the task) closes the connection.
    ///
    /// - Throws: ``TransportError`` when no response head arrived.
    func openStream(_ request: TransportRequest, connectTimeout: Duration, noProgressTimeout: Duration)
        async throws(TransportError) -> TransportStream
}

/// A response whose body is still arriving.
public struct TransportStream: Sendable {
    /// The status code.
    public let status: Int
    /// The response's header fields.
    public let headers: HeaderFields
    /// The body's bytes as they arrive; the sequence ends at the body's clean end (the last chunk, the
    /// declared length, or the server closing a close-delimited body) and throws ``TransportError``
    /// otherwise (`timedOut` after the no-progress timeout, `connectionLost`, `malformedResponse`).
    /// ``SocketTransport`` keeps at most 256 KiB unread: a reader slower than the server makes it stop
    /// reading the socket, and TCP holds the server back.
    public let body: AsyncThrowingStream<[UInt8], any Error>
    /// Closes the connection now (the reader stops; ``body`` ends). Call it when done with the stream
    /// before its end, e.g. after a terminal event. With ``SocketTransport`` the bytes not read yet are
    /// dropped and ``body`` ends without an error (you ended it); with `URLSessionTransport` it ends with
    /// `cancelled`.
    public let close: @Sendable () -> Void

    /// A stream (transports make these).
    public init(
        status: Int, headers: HeaderFields, body: AsyncThrowingStream<[UInt8], any Error>,
        close: @escaping @Sendable () -> Void
    ) {
        self.status = status
        self.headers = headers
        self.body = body
        self.close = close
    }
}

extension SocketTransport: StreamingHTTPTransport {
    /// Opens a long-lived exchange on its own connection (never pooled), read on a worker thread.
    public func openStream(_ request: TransportRequest, connectTimeout: Duration, noProgressTimeout: Duration)
        async throws(TransportError) -> TransportStream
    {
        let exchange = Exchange()
        // The body goes from the worker to the reader through a bounded buffer: a reader slower than the
        // server makes the worker wait, and the server's writes wait on TCP, instead of the body piling up
        // here.
        let body = StreamHandoff<[UInt8]>(capacity: Self.streamBufferBytes)
        // Connecting is bounded by `connectTimeout`, the name lookup included, which no socket deadline reaches
        // (`getaddrinfo` on a resolver that never answers): the attempt watchdog interrupts the exchange then,
        // which ends the wait as `timedOut`. Disarmed once connected.
        let connecting = TransportInterruption()
        let timer = AttemptTimer(deadline: .now + connectTimeout, clock: ContinuousClock()) {
            connecting.interrupt()
        }
        let head: StreamHead
        do {
            head = try await onWorker(exchange, interruption: connecting) { opened in
                self.runStream(
                    request, connectTimeout: connectTimeout, noProgressTimeout: noProgressTimeout, exchange: exchange,
                    connected: {
                        timer.cancel()
                        return !connecting.isInterrupted
                    }, opened: opened, body: body)
            }
        } catch {
            // Nobody will read the body: a worker that got the head after all stops at its first byte.
            body.cancel()
            throw error
        }
        // The stream is made here, not on the worker: the worker holds only the buffer, so dropping the
        // stream is seen (the connection closes) even while the worker waits for room.
        return TransportStream(
            status: head.status, headers: head.headers, body: body.stream(onTermination: { exchange.cancel() }),
            close: { body.cancel() })
    }

    /// How many body bytes may wait for a reader that is slower than the server (256 KiB).
    static let streamBufferBytes = 256 << 10

    /// A stream's response head, handed from the worker.
    struct StreamHead: Sendable {
        let status: Int
        let headers: HeaderFields
    }

    /// The worker: connect, send, read the head (then hand the stream over), then read the body into it.
    private func runStream(
        _ request: TransportRequest, connectTimeout: Duration, noProgressTimeout: Duration, exchange: Exchange,
        connected: () -> Bool, opened: FirstResult<StreamHead>, body: StreamHandoff<[UInt8]>
    ) {
        var stream = request
        stream.reusesConnections = false
        let socket: ClientSocket
        var reader: ResponseReader<ClientSocket>
        var framing: ResponseReader<ClientSocket>.StreamFraming
        do throws(TransportError) {
            let target = try Self.target(of: stream)
            let head = try Self.head(of: stream, target: target)
            socket = try connect(target.endpoint, deadline: .now + connectTimeout, exchange: exchange)
            // Disarms the connect timer; false when it fired first (the exchange is being stopped).
            guard connected() else {
                socket.close()
                throw TransportError(
                    code: .timedOut, requestMayHaveBeenSent: false,
                    detail: "connecting took longer than \(connectTimeout)")
            }
            exchange.markSending()
            do throws(ClientSocket.Failure) {
                try socket.write(head + [UInt8](stream.body ?? Data()), deadline: .now + noProgressTimeout)
            } catch {
                socket.close()
                throw Self.failure(error, sent: true, phase: "writing the request")
            }
            reader = ResponseReader(socket: socket, deadline: .now, maximumHeadBytes: configuration.maximumHeadBytes)
            reader.progressTimeout = noProgressTimeout
            do throws(ResponseReadFailure) {
                let head = try reader.readStreamHead(method: stream.method)
                framing = head.framing
                opened.resume(returning: StreamHead(status: head.status, headers: head.headers))
            } catch {
                socket.close()
                throw Self.streamFailure(error, phase: "reading the response head")
            }
        } catch {
            body.finish(throwing: error)
            opened.resume(throwing: error)
            return
        }
        defer {
            _ = exchange.detach()
            socket.close()
        }
        while true {
            do throws(ResponseReadFailure) {
                guard let bytes = try reader.nextBodyBytes(&framing) else {
                    body.finish()
                    return
                }
                // Waits while the reader is behind; false when it went away (the connection then closes).
                guard body.put(bytes, weight: bytes.count) else { return }
            } catch {
                body.finish(throwing: Self.streamFailure(error, phase: "reading the stream"))
                return
            }
        }
    }

    static func streamFailure(_ readFailure: ResponseReadFailure, phase: String) -> TransportError {
        switch readFailure {
        case .socket(let socketFailure): return failure(socketFailure, sent: true, phase: phase)
        case .malformed(let reason):
            return TransportError(code: .malformedResponse, requestMayHaveBeenSent: true, detail: "\(phase): \(reason)")
        case .tooLarge(let reason):
            return TransportError(code: .responseTooLarge, requestMayHaveBeenSent: true, detail: "\(phase): \(reason)")
        case .closedWithoutResponse:
            return TransportError(
                code: .malformedResponse, requestMayHaveBeenSent: true,
                detail: "\(phase): the server closed the connection without answering")
        }
    }
}
