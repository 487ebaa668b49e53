import Foundation

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

    init(server: ServerCore, id: Int, descriptor: Int32) {
        self.server = server
        self.id = id
        self.descriptor = descriptor
    }

    private enum Ending {
        case closeGracefully
        case reset
        case peerClosed
        case alreadyClosed
    }

    func serve() {
        switch serveRequests() {
        case .closeGracefully:
            server.recordEvent(.closedByServer, connection: id)
        case .reset:
            POSIX.setLingerZero(descriptor)
            server.recordEvent(.resetByServer, connection: id)
        case .peerClosed:
            server.recordEvent(.closedByClient, connection: id)
        case .alreadyClosed:
            break  // the event was recorded where the connection ended
        }
        // The server closes the descriptor once this returns (see ServerCore.acceptLoop).
    }

    private func serveRequests() -> Ending {
        while true {
            // Wait for the next request to start arriving (or for the client to go away).
            if buffer.isEmpty {
                switch fill() {
                case .data: break
                case .endOfStream, .failed: return .peerClosed
                case .interrupted: return .closeGracefully
                }
            }
            if let startEffect = server.takeStartEffect() {
                switch startEffect.socketEffect {
                case .disconnectAtStart: return .closeGracefully
                case .resetAtStart: return .reset
                default: return stall(reading: false)
                }
            }
            let arrivalDate = Date()
            let arrivalInstant = ContinuousClock.now

            let head: RequestHead
            switch readHead() {
            case .head(let parsed): head = parsed
            case .peerClosed: return .peerClosed
            case .interrupted: return .closeGracefully
            case .rejected(let status, let reason): return reject(status: status, reason: reason)
            }

            if head.expectsContinue {
                _ = send(Array("HTTP/1.1 100 Continue\r\n\r\n".utf8))
            }

            var bodyLimit: Int? = nil
            if case .disconnectDuringRequestBody(let afterBytes) = server.peekEffect() { bodyLimit = afterBytes }

            let body: RequestBody
            switch readBody(of: head, stoppingAfter: bodyLimit) {
            case .body(let parsed): body = parsed
            case .rejected(let status, let reason): return reject(status: status, reason: reason)
            case .interrupted: return .closeGracefully
            }

            let index = requestIndex
            requestIndex += 1
            let response = server.record { sequenceNumber in
                RecordedRequest(
                    method: head.method, target: head.target, version: head.version, headers: head.headers,
                    body: Data(body.bytes), isChunked: head.isChunked, chunkSizes: body.chunkSizes,
                    isComplete: body.isComplete, connectionID: id, indexOnConnection: index,
                    sequenceNumber: sequenceNumber, arrivalDate: arrivalDate, arrivalInstant: arrivalInstant
                )
            }
            guard let response else {
                // Cut short by `disconnectDuringRequestBody`, or the client hung up mid-body.
                return body.peerClosed ? .peerClosed : .closeGracefully
            }

            switch response.socketEffect {
            case .disconnectAfterRequest: return .closeGracefully
            case .resetAfterRequest: return .reset
            case .noResponse: return stall(reading: true)
            case .halfCloseAfterRequest:
                POSIX.shutdown(descriptor, .write)
                return stall(reading: true)
            default: break
            }

            let clientWantsClose = head.wantsClose
            switch write(response, for: head, closing: clientWantsClose) {
            case .completed: break
            case .peerClosed: return .peerClosed
            case .interrupted: return .closeGracefully
            case .cut(let ending): return ending
            }

            switch response.socketEffect {
            case .disconnectAtEnd: return .closeGracefully
            case .shutdownInputAtEnd:
                POSIX.shutdown(descriptor, .read)
                buffer.removeAll()
            case .shutdownOutputAtEnd:
                POSIX.shutdown(descriptor, .write)
                return stall(reading: true)
            default:
                if clientWantsClose { return .closeGracefully }
            }
        }
    }

    // MARK: - Reading

    private enum FillResult { case data, endOfStream, failed, interrupted }

    /// Reads more bytes into the buffer, waiting until they arrive or the server shuts down.
    ///
    /// A plain blocking read: ``ServerCore/shutdown()`` shuts every open connection down, which ends
    /// the read, so no poll on the wake pipe is needed here (it would add a wake-up per request).
    private func fill() -> FillResult {
        let count = scratch.withUnsafeMutableBytes { POSIX.read(descriptor, into: $0) }
        if server.isShutDown { return .interrupted }
        guard let count else { return .failed }
        if count == 0 { return .endOfStream }
        buffer.append(contentsOf: scratch[0..<count])
        return .data
    }

    private enum HeadResult {
        case head(RequestHead)
        case peerClosed
        case interrupted
        case rejected(status: Int, reason: String)
    }

    private func readHead() -> HeadResult {
        let limit = server.configuration.maximumHeadBytes
        while true {
            if let end = headEnd() {
                guard end.headLength <= limit else {
                    return .rejected(status: 431, reason: "request head exceeds \(limit) bytes")
                }
                let headBytes = Array(buffer[0..<end.headLength])
                buffer.removeFirst(end.consumed)
                switch RequestHead.parse(headBytes) {
                case .success(let head): return .head(head)
                case .failure(let failure): return .rejected(status: failure.status, reason: failure.reason)
                }
            }
            if buffer.count > limit { return .rejected(status: 431, reason: "request head exceeds \(limit) bytes") }
            switch fill() {
            case .data: continue
            case .endOfStream, .failed: return .peerClosed
            case .interrupted: return .interrupted
            }
        }
    }

    /// Where the head ends: accepts CRLF CRLF and, leniently, LF LF.
    private func headEnd() -> (headLength: Int, consumed: Int)? {
        var index = 0
        while index < buffer.count {
            if buffer[index] == 10 {
                if index + 1 < buffer.count, buffer[index + 1] == 10 { return (index, index + 2) }
                if index + 2 < buffer.count, buffer[index + 1] == 13, buffer[index + 2] == 10 { return (index, index + 3) }
            }
            index += 1
        }
        return nil
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
        case interrupted
    }

    private func readBody(of head: RequestHead, stoppingAfter limit: Int?) -> BodyResult {
        var body = RequestBody()
        let maximum = server.configuration.maximumBodyBytes
        if head.isChunked {
            while true {
                guard let line = readLine() else { return incomplete(body) }
                let sizeText = line.prefix { $0 != ";" }.trimmingCharacters(in: .whitespaces)
                guard let size = Int(sizeText, radix: 16), size >= 0, !sizeText.isEmpty else {
                    return .rejected(status: 400, reason: "malformed chunk size \(line.debugDescription)")
                }
                if size == 0 {
                    // Trailer fields, then an empty line.
                    while true {
                        guard let trailer = readLine() else { return incomplete(body) }
                        if trailer.isEmpty { return .body(body) }
                    }
                }
                guard body.bytes.count + size <= maximum else { return .rejected(status: 413, reason: "request body too large") }
                body.chunkSizes.append(size)
                switch readExactly(size, into: &body, limit: limit) {
                case .done: break
                case .cut: return .body(body)
                case .interrupted: return .interrupted
                }
                guard let terminator = readLine(), terminator.isEmpty else {
                    return body.peerClosed ? incomplete(body) : .rejected(status: 400, reason: "chunk not followed by CRLF")
                }
            }
        }
        guard head.contentLength <= maximum else { return .rejected(status: 413, reason: "request body too large") }
        switch readExactly(head.contentLength, into: &body, limit: limit) {
        case .done, .cut: return .body(body)
        case .interrupted: return .interrupted
        }
    }

    private func incomplete(_ body: RequestBody) -> BodyResult {
        var body = body
        body.isComplete = false
        body.peerClosed = true
        return .body(body)
    }

    private enum ReadOutcome { case done, cut, interrupted }

    /// Appends `count` body bytes, or stops after `limit` body bytes in total (marking the body incomplete).
    private func readExactly(_ count: Int, into body: inout RequestBody, limit: Int?) -> ReadOutcome {
        var remaining = count
        while remaining > 0 {
            if let limit, body.bytes.count >= limit {
                body.isComplete = false
                return .cut
            }
            if buffer.isEmpty {
                switch fill() {
                case .data: break
                case .endOfStream, .failed:
                    body.isComplete = false
                    body.peerClosed = true
                    return .cut
                case .interrupted: return .interrupted
                }
            }
            var take = min(remaining, buffer.count)
            if let limit { take = min(take, limit - body.bytes.count) }
            body.bytes.append(contentsOf: buffer[0..<take])
            buffer.removeFirst(take)
            remaining -= take
        }
        return .done
    }

    /// One CRLF- (or LF-) terminated line, without the terminator; nil when the peer went away.
    private func readLine() -> String? {
        while true {
            if let newline = buffer.firstIndex(of: 10) {
                var line = Array(buffer[0..<newline])
                buffer.removeFirst(newline + 1)
                if line.last == 13 { line.removeLast() }
                return String(decoding: line, as: UTF8.self)
            }
            guard buffer.count < 64 * 1024, fill() == .data else { return nil }
        }
    }

    private func reject(status: Int, reason: String) -> Ending {
        server.recordEvent(.rejected(status: status, reason: reason), connection: id)
        let body = Array("TestServer rejected the request: \(reason)\n".utf8)
        let head = "HTTP/1.1 \(status) \(ReasonPhrase.standard(for: status))\r\nContent-Type: text/plain; charset=utf-8\r\n"
            + "Content-Length: \(body.count)\r\nConnection: close\r\n\r\n"
        _ = send(Array(head.utf8) + body)
        return .alreadyClosed
    }

    /// Holds the connection without answering until the client closes it or the server shuts down.
    /// With `reading`, bytes the client sends are read and discarded; without it they stay unread.
    private func stall(reading: Bool) -> Ending {
        while true {
            let ready = POSIX.waitReadable(
                reading ? [descriptor, server.wakeDescriptors.read] : [server.wakeDescriptors.read],
                timeoutMilliseconds: reading ? -1 : 50
            )
            if ready.contains(reading ? 1 : 0) { return .closeGracefully }
            if reading, ready.contains(0) {
                switch fill() {
                case .data: buffer.removeAll()
                case .endOfStream, .failed: return .peerClosed
                case .interrupted: return .closeGracefully
                }
            }
            if !reading, POSIX.peerHasClosed(descriptor) { return .peerClosed }
        }
    }

    // MARK: - Writing

    private enum WriteResult {
        case completed
        case peerClosed
        case interrupted
        case cut(Ending)
    }

    private func write(_ response: TestResponse, for head: RequestHead, closing: Bool) -> WriteResult {
        if !sleep(response.headersDelay) { return .interrupted }

        let sendsBody = head.method != "HEAD" && !(100...199).contains(response.status)
            && response.status != 204 && response.status != 304
        var headers = response.headers
        if let chunkSize = response.chunkSize, chunkSize > 0, sendsBody {
            if !headers.contains("Transfer-Encoding") { headers["Transfer-Encoding"] = "chunked" }
        } else if !headers.contains("Content-Length"), response.status != 204, !(100...199).contains(response.status) {
            headers["Content-Length"] = String(response.body.count)
        }
        let closesAfter = closing || response.socketEffect == .disconnectAtEnd
        if closesAfter, !headers.contains("Connection") { headers["Connection"] = "close" }

        var text = "HTTP/1.1 \(response.status) \(response.reason ?? ReasonPhrase.standard(for: response.status))\r\n"
        for field in headers { text += "\(field.name): \(field.value)\r\n" }
        text += "\r\n"
        let isPlain = response.bodyDelay == .zero && response.throttle == nil && response.chunkSize == nil
            && !response.socketEffect.cutsResponseBody
        if sendsBody, isPlain {
            // Head and body in one write: one segment, as a real server would send a small response.
            return send(Array(text.utf8) + response.body) ? .completed : .peerClosed
        }
        guard send(Array(text.utf8)) else { return .peerClosed }
        guard sendsBody else { return .completed }

        if !sleep(response.bodyDelay) { return .interrupted }

        var cutAfter: Int? = nil
        var cutEnding = Ending.closeGracefully
        switch response.socketEffect {
        case .disconnectDuringResponseBody(let afterBytes): cutAfter = afterBytes
        case .resetDuringResponseBody(let afterBytes):
            cutAfter = afterBytes
            cutEnding = .reset
        default: break
        }

        let body = [UInt8](response.body)
        let wire = response.chunkSize.map { encodeChunked(body, size: $0) } ?? body
        let limit = cutAfter.map { min($0, wire.count) } ?? wire.count
        let step = response.throttle?.bytes ?? max(limit, 1)
        var offset = 0
        while offset < limit {
            let end = min(offset + step, limit)
            guard send(Array(wire[offset..<end])) else { return .peerClosed }
            offset = end
            if offset < limit, let period = response.throttle?.period, !sleep(period) { return .interrupted }
        }
        if cutAfter != nil { return .cut(cutEnding) }
        return .completed
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
        bytes.withUnsafeBytes { POSIX.write(descriptor, $0) }
    }

    /// Waits `duration` of real time; false when the server shut down meanwhile.
    private func sleep(_ duration: Duration) -> Bool {
        guard duration > .zero else { return true }
        let deadline = ContinuousClock.now + duration
        while true {
            let remaining = ContinuousClock.now.duration(to: deadline)
            if remaining <= .zero { return true }
            let milliseconds = Int32(clamping: remaining.components.seconds * 1000 + remaining.components.attoseconds / 1_000_000_000_000_000 + 1)
            if POSIX.waitReadable([server.wakeDescriptors.read], timeoutMilliseconds: milliseconds).contains(0) { return false }
        }
    }
}
