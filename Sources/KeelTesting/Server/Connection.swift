import Foundation
import KeelCore

/// Serves one accepted connection of a ``TestServer`` on its own thread: reads requests, records them,
/// and writes scripted responses with their delays, throttling and socket effects.
final class Connection: @unchecked Sendable {
    // @unchecked Sendable: created by the accept thread and then used only by its own connection thread.
    private let server: ServerCore
    private let id: Int
    private let descriptor: Int32
    private var buffer: [UInt8] = []
    private var scratch = [UInt8](repeating: 0, count: 16 * 1024)
    private var requestIndex = 0
    /// Set by `shutdownInputAtEnd`: end-of-stream from then on is the server's doing, not the client's.
    private var inputIsShutDown = false
    /// Set when a read waited out the idle timeout: a request cut short by it is answered 408.
    private var idledOut = false

    init(server: ServerCore, id: Int, descriptor: Int32) {
        self.server = server
        self.id = id
        self.descriptor = descriptor
    }

    /// Bytes written on this connection so far (only the connection's own thread touches it).
    private var bytesSent = 0

    private enum Ending {
        /// Close with FIN after draining what the client still sends (a "lingering close", so that
        /// unread request bytes do not turn the close into a reset that destroys the last response).
        case closeGracefully
        /// Close with RST.
        case reset
        /// The client closed or reset the connection.
        case peerClosed
        /// The server is shutting down.
        case interrupted
        /// Already recorded (a rejected request); close gracefully.
        case rejected
    }

    func serve() {
        switch serveRequests() {
        case .closeGracefully:
            server.recordEvent(.closedByServer, connection: id, bytesSent: bytesSent)
            lingeringClose()
        case .rejected:
            lingeringClose()
        case .reset:
            POSIX.setLingerZero(descriptor)
            server.recordEvent(.resetByServer, connection: id, bytesSent: bytesSent)
        case .peerClosed:
            server.recordEvent(.closedByClient, connection: id, bytesSent: bytesSent)
        case .interrupted:
            server.recordEvent(.closedByServer, connection: id, bytesSent: bytesSent)
        }
        // The server closes the descriptor once this returns (see ServerCore.acceptLoop).
    }

    /// Sends FIN, then reads and discards until the client closes too (at most one second, and never
    /// past shutdown), so the kernel does not answer unread data with RST.
    private func lingeringClose() {
        POSIX.shutdown(descriptor, .write)
        let deadline = ContinuousClock.now + .seconds(1)
        while ContinuousClock.now < deadline {
            let ready = POSIX.waitReadable([descriptor, server.wakeDescriptors.read], timeoutMilliseconds: 100)
            if ready.contains(1) { return }
            guard ready.contains(0) else { continue }
            let count = scratch.withUnsafeMutableBytes { POSIX.read(descriptor, into: $0) }
            if count == nil || count == 0 { return }
        }
    }

    private func serveRequests() -> Ending {
        while true {
            // Wait for the next request to start arriving. When an "at start" effect is queued, wait
            // without consuming it (it must stay unread in the socket); otherwise just read (one
            // system call per request instead of two).
            if buffer.isEmpty {
                if server.nextResponseActsAtStart {
                    let visible = POSIX.peekBlocking(descriptor)
                    if server.isShutDown { return .interrupted }
                    guard let visible, visible > 0 else { return inputIsShutDown ? .closeGracefully : .peerClosed }
                } else {
                    let result = fill()
                    guard result == .data else { return ending(after: result) }
                }
            }
            if let startEffect = server.takeStartEffect() {
                switch startEffect.socketEffect {
                case .disconnectAtStart: return .closeGracefully
                case .resetAtStart: return .reset
                default: return stallWithoutReading()
                }
            }
            let arrivalDate = Date()
            let arrivalInstant = ContinuousClock.now

            let head: RequestHead
            switch readHead() {
            case .head(let parsed): head = parsed
            case .ended(let ending): return ending
            case .rejected(let status, let reason): return reject(status: status, reason: reason)
            }
            // In flight from its head on: a server draining for shutdown waits for a request whose body is
            // still arriving, as for one being answered. A drain that has stopped taking exchanges gets no
            // more: the request is not handed on, and the connection closes.
            guard server.beginExchange() else { return .interrupted }
            var exchangeOpen = true
            /// Ends the exchange early: an effect that stalls without answering keeps nothing in flight (a
            /// drain would otherwise wait its whole timeout for an answer that never comes).
            func endExchange() {
                if exchangeOpen { server.finishExchange() }
                exchangeOpen = false
            }
            defer { endExchange() }

            // A body the server will refuse for its declared length is refused before the client is told
            // to send it.
            if !head.isChunked, head.contentLength > server.configuration.maximumBodyBytes {
                return reject(status: 413, reason: "request body too large")
            }
            if head.expectsContinue {
                _ = send(Array("HTTP/1.1 100 Continue\r\n\r\n".utf8))
            }

            // Take the queued response now, so concurrent connections cannot swap responses.
            let reservation = server.reserveResponse()
            let reserved = reservation?.response
            var bodyLimit: Int? = nil
            if case .disconnectDuringRequestBody(let afterBytes) = reserved?.socketEffect { bodyLimit = afterBytes }

            let body: RequestBody
            switch readBody(of: head, stoppingAfter: bodyLimit) {
            case .body(let parsed): body = parsed
            case .rejected(let status, let reason):
                // A request refused for its body is not recorded: its scripted response goes to the next one.
                if let reservation, reservation.fromQueue { server.giveBack(reservation.response) }
                return reject(status: status, reason: reason)
            case .ended(let ending): return ending
            }
            if idledOut {
                // The body stopped arriving for the idle timeout: refused like any request refused for its body.
                if let reservation, reservation.fromQueue { server.giveBack(reservation.response) }
                return reject(status: 408, reason: "the request body did not arrive within the idle timeout")
            }

            let index = requestIndex
            requestIndex += 1
            let response = server.record(reserved: reserved) { sequenceNumber in
                RecordedRequest(
                    method: head.method, target: head.target, version: head.version, headers: head.headers,
                    body: Data(body.bytes), isChunked: head.isChunked, chunkSizes: body.chunkSizes,
                    isComplete: body.isComplete, connectionID: id, indexOnConnection: index,
                    sequenceNumber: sequenceNumber, arrivalDate: arrivalDate, arrivalInstant: arrivalInstant
                )
            }
            guard let response else {
                if body.peerClosed { return .peerClosed }
                return .closeGracefully
            }
            if body.peerClosed { return .peerClosed }
            if bodyLimit != nil { return .closeGracefully }  // disconnectDuringRequestBody, cut or not
            precondition(
                !response.socketEffect.actsAtStart && !response.socketEffect.actsDuringRequestBody,
                "TestServer: a Dispatcher cannot return \(response.socketEffect); it acts before the dispatcher sees the request. Enqueue it instead."
            )

            switch response.socketEffect {
            case .disconnectAfterRequest: return .closeGracefully
            case .resetAfterRequest: return .reset
            case .noResponse:
                endExchange()
                return stallReading()
            case .halfCloseAfterRequest:
                POSIX.shutdown(descriptor, .write)
                endExchange()
                return stallReading()
            default: break
            }

            // While the server drains, every answer closes its connection: the client opens no new exchange
            // on it, and finds the next connection refused.
            var closesAfter =
                head.wantsClose || response.asksToClose || response.socketEffect == .disconnectAtEnd
                || server.isDraining
            // HTTP/1.0 has no chunked coding (RFC 9112 §6.1): the body goes out whole, with its length.
            var framed = response
            if head.version == "HTTP/1.0" { framed.chunkSize = nil }
            switch write(framed, for: head, closing: &closesAfter) {
            case .completed: break
            case .ended(let ending): return ending
            case .stalled:
                endExchange()
                return stallReading()
            }

            // A drain that began while this answer was being written (its headers already out, keep-alive):
            // the connection closes now instead of reading a request the drain would refuse unanswered.
            if !closesAfter, server.isDraining, response.socketEffect == .keepOpen { return .closeGracefully }
            switch response.socketEffect {
            case .shutdownInputAtEnd:
                POSIX.shutdown(descriptor, .read)
                inputIsShutDown = true
                buffer.removeAll()
            case .shutdownOutputAtEnd:
                POSIX.shutdown(descriptor, .write)
                endExchange()
                return stallReading()
            default:
                if closesAfter { return .closeGracefully }
            }
        }
    }

    // MARK: - Reading

    private enum FillResult { case data, endOfStream, failed, interrupted, idle }

    /// Reads more bytes into the buffer, waiting until they arrive or the server shuts down — or, with an
    /// ``TestServer/Configuration/idleTimeout``, until it passes without a byte.
    ///
    /// A plain blocking read: ``ServerCore/shutdown()`` shuts every open connection down, which ends
    /// the read, so no poll on the wake pipe is needed here (it would add a wake-up per request).
    private func fill() -> FillResult {
        if let idle = server.configuration.idleTimeout,
            POSIX.waitReadable([descriptor], timeoutMilliseconds: Int32(clamping: idle.inMillisecondsRoundedUp))
                .isEmpty
        {
            if server.isShutDown { return .interrupted }
            idledOut = true
            return .idle
        }
        let count = scratch.withUnsafeMutableBytes { POSIX.read(descriptor, into: $0) }
        if server.isShutDown { return .interrupted }
        guard let count else { return .failed }
        if count == 0 { return .endOfStream }
        buffer.append(contentsOf: scratch[0..<count])
        return .data
    }

    /// How a connection ends when a read comes up empty.
    private func ending(after result: FillResult) -> Ending {
        switch result {
        case .interrupted: .interrupted
        case .idle: .closeGracefully  // the client sent nothing for the idle timeout: the server closes
        case .endOfStream where inputIsShutDown: .closeGracefully
        default: .peerClosed
        }
    }

    private enum HeadResult {
        case head(RequestHead)
        case ended(Ending)
        case rejected(status: Int, reason: String)
    }

    private func readHead() -> HeadResult {
        let limit = server.configuration.maximumHeadBytes
        while true {
            if let end = headEnd() {
                guard end.headLength <= limit else { return oversizedHead(limit: limit) }
                let headBytes = Array(buffer[0..<end.headLength])
                buffer.removeFirst(end.consumed)
                switch RequestHead.parse(headBytes) {
                case .success(let head): return .head(head)
                case .failure(let failure): return .rejected(status: failure.status, reason: failure.reason)
                }
            }
            if buffer.count > limit { return oversizedHead(limit: limit) }
            let result = fill()
            if result == .idle, !buffer.isEmpty {
                return .rejected(status: 408, reason: "the request head did not arrive within the idle timeout")
            }
            guard result == .data else { return .ended(ending(after: result)) }
        }
    }

    /// The answer to a head longer than `limit`: 414 when the request line alone is (RFC 9110 §15.5.15: the
    /// target is longer than the server will interpret), 431 when the header fields make it so (RFC 6585 §5).
    private func oversizedHead(limit: Int) -> HeadResult {
        let requestLine = buffer.withUnsafeBufferPointer { RequestHead.nextLineFeed(in: $0, from: 0) }
        if requestLine > limit {
            return .rejected(status: 414, reason: "request line exceeds \(limit) bytes")
        }
        return .rejected(status: 431, reason: "request head exceeds \(limit) bytes")
    }

    /// Where the head ends: accepts CRLF CRLF and, leniently, LF LF.
    private func headEnd() -> (headLength: Int, consumed: Int)? {
        // From line feed to line feed (memchr), not byte by byte through the array: every request's head is
        // searched this way, and its cost grows with every header field (keel-bench trace.overhead).
        buffer.withUnsafeBufferPointer { bytes -> (headLength: Int, consumed: Int)? in
            var index = RequestHead.nextLineFeed(in: bytes, from: 0)
            while index < bytes.count {
                if index + 1 < bytes.count, bytes[index + 1] == 10 { return (index, index + 2) }
                if index + 2 < bytes.count, bytes[index + 1] == 13, bytes[index + 2] == 10 {
                    return (index, index + 3)
                }
                index = RequestHead.nextLineFeed(in: bytes, from: index + 1)
            }
            return nil
        }
    }

    private struct RequestBody {
        var bytes: [UInt8] = []
        var chunkSizes: [Int] = []
        var isComplete = true
        var peerClosed = false
    }

    private enum BodyResult {
        case body(RequestBody)
        case rejected(status: Int, reason: String)
        case ended(Ending)
    }

    private func readBody(of head: RequestHead, stoppingAfter limit: Int?) -> BodyResult {
        var body = RequestBody()
        let maximum = server.configuration.maximumBodyBytes
        if head.isChunked {
            while true {
                let line: String
                switch readLine() {
                case .line(let text): line = text
                case .tooLong: return .rejected(status: 400, reason: "chunk-size line too long")
                case .ended(.interrupted): return .ended(.interrupted)
                case .ended: return peerWentAway(body)
                }
                guard let size = RequestHead.chunkSize(line: line.utf8) else {
                    return .rejected(status: 400, reason: "malformed chunk size \(line.debugDescription)")
                }
                if size == 0 {
                    // Trailer fields, then an empty line.
                    while true {
                        switch readLine() {
                        case .line(let trailer):
                            if trailer.isEmpty { return .body(body) }
                            guard RequestHead.isField(line: trailer.utf8) else {
                                return .rejected(status: 400, reason: "malformed trailer \(trailer.debugDescription)")
                            }
                        case .tooLong: return .rejected(status: 400, reason: "trailer line too long")
                        case .ended(.interrupted): return .ended(.interrupted)
                        case .ended: return peerWentAway(body)
                        }
                    }
                }
                guard size <= maximum - body.bytes.count else {
                    return .rejected(status: 413, reason: "request body too large")
                }
                body.chunkSizes.append(size)
                switch readExactly(size, into: &body, limit: limit) {
                case .done: break
                case .cut: return .body(body)
                case .ended(let ending): return ending == .interrupted ? .ended(.interrupted) : peerWentAway(body)
                }
                switch readLine() {
                case .line(let terminator) where terminator.isEmpty: continue
                case .line, .tooLong: return .rejected(status: 400, reason: "chunk not followed by CRLF")
                case .ended(.interrupted): return .ended(.interrupted)
                case .ended: return peerWentAway(body)
                }
            }
        }
        guard head.contentLength <= maximum else { return .rejected(status: 413, reason: "request body too large") }
        switch readExactly(head.contentLength, into: &body, limit: limit) {
        case .done, .cut: return .body(body)
        case .ended(let ending): return ending == .interrupted ? .ended(.interrupted) : peerWentAway(body)
        }
    }

    private func peerWentAway(_ body: RequestBody) -> BodyResult {
        var body = body
        body.isComplete = false
        body.peerClosed = true
        return .body(body)
    }

    private enum ReadOutcome {
        case done, cut
        case ended(Ending)
    }

    /// Appends `count` body bytes, or stops after `limit` body bytes in total (marking the body incomplete).
    private func readExactly(_ count: Int, into body: inout RequestBody, limit: Int?) -> ReadOutcome {
        var remaining = count
        while remaining > 0 {
            if let limit, body.bytes.count >= limit {
                body.isComplete = false
                return .cut
            }
            if buffer.isEmpty {
                let result = fill()
                guard result == .data else { return .ended(ending(after: result)) }
            }
            var take = min(remaining, buffer.count)
            if let limit { take = min(take, limit - body.bytes.count) }
            body.bytes.append(contentsOf: buffer[0..<take])
            buffer.removeFirst(take)
            remaining -= take
        }
        return .done
    }

    private enum LineResult {
        case line(String)
        case tooLong
        case ended(Ending)
    }

    /// One CRLF- (or LF-) terminated line, without the terminator.
    private func readLine() -> LineResult {
        while true {
            if let newline = buffer.firstIndex(of: 10) {
                var line = Array(buffer[0..<newline])
                buffer.removeFirst(newline + 1)
                if line.last == 13 { line.removeLast() }
                return .line(String(decoding: line, as: UTF8.self))
            }
            if buffer.count >= 64 * 1024 { return .tooLong }
            let result = fill()
            guard result == .data else { return .ended(ending(after: result)) }
        }
    }

    private func reject(status: Int, reason: String) -> Ending {
        server.recordEvent(.rejected(status: status, reason: reason), connection: id, bytesSent: bytesSent)
        let answer = server.configuration.rejectionAnswer(TestServer.Rejection(status: status, reason: reason))
        // The framing and the close are the server's, whatever the answer says: the connection closes after it.
        var headers = answer.headers
        headers.removeAll(named: "Transfer-Encoding")
        headers["Content-Length"] = String(answer.body.count)
        headers["Connection"] = "close"
        var head = "HTTP/1.1 \(status) \(ReasonPhrase.standard(for: status))\r\n"
        for field in headers { head += "\(field.name): \(field.value)\r\n" }
        head += "\r\n"
        _ = send(Array(head.utf8) + [UInt8](answer.body))
        return .rejected
    }

    /// Holds the connection without answering, reading and discarding what the client sends, until the
    /// client closes it or the server shuts down.
    private func stallReading() -> Ending {
        buffer.removeAll()
        while true {
            let ready = POSIX.waitReadable([descriptor, server.wakeDescriptors.read], timeoutMilliseconds: -1)
            if ready.contains(1) { return .interrupted }
            guard ready.contains(0) else { continue }
            let result = fill()
            guard result == .data else { return ending(after: result) }
            buffer.removeAll()
        }
    }

    /// Holds the connection without ever reading from it (`stallAtStart`), checking every 50 ms whether
    /// the client has hung up.
    private func stallWithoutReading() -> Ending {
        while true {
            if POSIX.waitReadable([server.wakeDescriptors.read], timeoutMilliseconds: 50).contains(0) {
                return .interrupted
            }
            if POSIX.peerHasHungUp(descriptor) { return .peerClosed }
        }
    }

    // MARK: - Writing

    private enum WriteResult {
        case completed
        case ended(Ending)
        /// Part of the body is out and the connection is to go silent (`stallDuringResponseBody`).
        case stalled
    }

    /// Writes `response`; `closing` (whether the connection closes after it) becomes true when a drain
    /// started while the headers were held back: the answer says `Connection: close` all the same.
    private func write(_ response: TestResponse, for head: RequestHead, closing: inout Bool) -> WriteResult {
        precondition(
            (100...999).contains(response.status), "TestResponse status \(response.status) is not a three-digit code")
        precondition(response.chunkSize.map { $0 > 0 } ?? true, "TestResponse chunk size must be positive")
        if !sleep(response.headersDelay) { return .ended(.interrupted) }
        if !closing, response.headersDelay > .zero, server.isDraining { closing = true }
        if let raw = response.rawBytes {
            return send([UInt8](raw)) ? .completed : .ended(.peerClosed)
        }

        let sendsBody =
            head.method != "HEAD" && !(100...199).contains(response.status)
            && response.status != 204 && response.status != 304
        var headers = response.headers
        if response.chunkSize != nil, sendsBody {
            if !headers.contains("Transfer-Encoding") { headers["Transfer-Encoding"] = "chunked" }
        } else if !headers.contains("Content-Length"), !headers.contains("Transfer-Encoding"), response.status != 204,
            !(100...199).contains(response.status)
        {
            // Not beside a scripted Transfer-Encoding: RFC 9112 §6.1 forbids both (found in an outside review).
            headers["Content-Length"] = String(response.bodyCount)
        }
        // A connection that closes after this answer says so, whatever the response set (a scripted
        // `keep-alive` would have the client send its next request into a closing connection).
        if closing { headers["Connection"] = "close" }

        var text = "HTTP/1.1 \(response.status) \(response.reason ?? ReasonPhrase.standard(for: response.status))\r\n"
        for field in headers { text += "\(field.name): \(field.value)\r\n" }
        text += "\r\n"

        var cutAfter: Int? = nil
        var cutEnding = Ending.closeGracefully
        var stallsAfterCut = false
        switch response.socketEffect {
        case .disconnectDuringResponseBody(let afterBytes): cutAfter = afterBytes
        case .stallDuringResponseBody(let afterBytes):
            cutAfter = afterBytes
            stallsAfterCut = true
        case .resetDuringResponseBody(let afterBytes):
            cutAfter = afterBytes
            cutEnding = .reset
        default: break
        }

        let isPlain =
            response.bodyDelay == .zero && response.throttle == nil && response.chunkSize == nil && cutAfter == nil
            && response.generatedBodyCount == nil
        if sendsBody, isPlain {
            // Head and body in one write: one segment, as a real server would send a small response.
            return send(Array(text.utf8) + response.body) ? .completed : .ended(.peerClosed)
        }
        guard send(Array(text.utf8)) else { return .ended(.peerClosed) }
        guard sendsBody else {
            if stallsAfterCut { return .stalled }
            return cutAfter == nil ? .completed : .ended(cutEnding)
        }

        if !sleep(response.bodyDelay) { return .ended(.interrupted) }
        if let count = response.generatedBodyCount {
            if let ending = writeGenerated(
                count: count, chunkSize: response.chunkSize, cutAfter: cutAfter, throttle: response.throttle)
            {
                return .ended(ending)
            }
            if stallsAfterCut { return .stalled }
            return cutAfter == nil ? .completed : .ended(cutEnding)
        }

        let body = [UInt8](response.body)
        let wire = response.chunkSize.map { encodeChunked(body, size: $0) } ?? body
        let limit = cutAfter.map { min($0, wire.count) } ?? wire.count
        let step = response.throttle?.bytes ?? max(limit, 1)
        var offset = 0
        while offset < limit {
            let end = min(offset + step, limit)
            guard send(Array(wire[offset..<end])) else { return .ended(.peerClosed) }
            offset = end
            if offset < limit, let period = response.throttle?.period, !sleep(period) { return .ended(.interrupted) }
        }
        if stallsAfterCut { return .stalled }
        return cutAfter == nil ? .completed : .ended(cutEnding)
    }

    /// Writes a generated body of `count` bytes in 64 KiB slices (chunked when `chunkSize` is set), never
    /// holding more than one slice; stops after `cutAfter` wire bytes; paced by `throttle` as any body is.
    /// Nil when written; otherwise how the connection ended (the client hung up, the server shut down).
    private func writeGenerated(count: Int, chunkSize: Int?, cutAfter: Int?, throttle: TestResponse.Throttle?)
        -> Ending?
    {
        let slice = 64 * 1024
        let filler = [UInt8](repeating: UInt8(ascii: "x"), count: slice)
        var remaining = count
        var budget = cutAfter ?? .max
        var sentAny = false
        func emit(_ bytes: [UInt8]) -> Ending? {
            guard budget > 0 else { return nil }
            let part = bytes.count <= budget ? bytes : Array(bytes.prefix(budget))
            budget -= part.count
            let step = throttle?.bytes ?? max(part.count, 1)
            var offset = 0
            while offset < part.count {
                if sentAny, let period = throttle?.period, !sleep(period) { return .interrupted }
                let end = min(offset + step, part.count)
                guard send(Array(part[offset..<end])) else { return .peerClosed }
                sentAny = true
                offset = end
            }
            return nil
        }
        while remaining > 0, budget > 0 {
            let size = min(remaining, chunkSize.map { min($0, slice) } ?? slice)
            let payload = size == slice ? filler : Array(filler.prefix(size))
            let wire = chunkSize == nil ? payload : Array("\(String(size, radix: 16))\r\n".utf8) + payload + [13, 10]
            if let ending = emit(wire) { return ending }
            remaining -= size
        }
        return chunkSize == nil ? nil : emit(Array("0\r\n\r\n".utf8))
    }

    private func encodeChunked(_ body: [UInt8], size: Int) -> [UInt8] {
        var wire: [UInt8] = []
        var offset = 0
        while offset < body.count {
            let end = min(offset + size, body.count)
            wire += Array("\(String(end - offset, radix: 16))\r\n".utf8)
            wire += body[offset..<end]
            wire += [13, 10]
            offset = end
        }
        wire += Array("0\r\n\r\n".utf8)
        return wire
    }

    private func send(_ bytes: [UInt8]) -> Bool {
        let written = bytes.withUnsafeBytes { POSIX.write(descriptor, $0) }
        if written { bytesSent += bytes.count }
        return written
    }

    /// Waits `duration` of real time; false when the server shut down meanwhile.
    private func sleep(_ duration: Duration) -> Bool {
        guard duration > .zero else { return true }
        let deadline = ContinuousClock.now + duration
        while true {
            let remaining = ContinuousClock.now.duration(to: deadline)
            if remaining <= .zero { return true }
            // poll in slices; no overflow
            let milliseconds = min(remaining, .seconds(1_000_000)).inMillisecondsRoundedUp
            if POSIX.waitReadable([server.wakeDescriptors.read], timeoutMilliseconds: Int32(clamping: milliseconds))
                .contains(0)
            {
                return false
            }
        }
    }
}
