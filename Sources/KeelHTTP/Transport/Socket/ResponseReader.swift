import Foundation
package import KeelCore

/// Where a ``ResponseReader`` gets its bytes: a ``ClientSocket``, or (fuzzing, tests) any byte stream.
package protocol ResponseByteSource {
    /// Reads at most `buffer.count` bytes before `deadline`; 0 at end of stream.
    func read(into buffer: inout [UInt8], deadline: ContinuousClock.Instant) throws(ClientSocket.Failure) -> Int
}

extension ClientSocket: ResponseByteSource {}

/// Why a ``ResponseReader`` could not read a response. (Not nested in the generic reader: typed throws of
/// a type nested in a generic crash the Swift 6.3 optimizer.)
package enum ResponseReadFailure: Error {
    case socket(ClientSocket.Failure)
    case malformed(String)
    case tooLarge(String)
    /// The connection ended before any byte of a response.
    case closedWithoutResponse
}

/// Reads one HTTP/1.1 response from a byte source, within a size limit that bounds memory (RFC 9112
/// framing: Content-Length, chunked, or until the connection closes).
package struct ResponseReader<Source: ResponseByteSource> {
    let socket: Source
    let deadline: ContinuousClock.Instant
    let maximumHeadBytes: Int
    /// For long-lived streams: each read may wait this long for the next byte (a no-progress timeout)
    /// instead of everything sharing ``deadline``.
    package var progressTimeout: Duration?
    private var buffer: [UInt8] = []
    private var start = 0
    /// What each read fills; only the bytes a read returns are ever looked at, so it is not zeroed first
    /// (64 KiB of zeroes per exchange cost about a microsecond on every request).
    private var scratch = [UInt8](unsafeUninitializedCapacity: 64 * 1024) { _, count in count = 64 * 1024 }
    /// Whether any byte of a response arrived.
    private var receivedAnything = false

    package init(socket: Source, deadline: ContinuousClock.Instant, maximumHeadBytes: Int) {
        self.socket = socket
        self.deadline = deadline
        self.maximumHeadBytes = maximumHeadBytes
    }

    /// The response, and whether the connection may carry another request.
    package mutating func read(method: String, limit: Int) throws(ResponseReadFailure) -> (
        TransportResponse, reusable: Bool
    ) {
        let head = try readFinalHead()
        let hasNoBody =
            method == "HEAD" || (100...199).contains(head.status) || head.status == 204 || head.status == 304
        var body = Data()
        var delimitedByClose = false
        if hasNoBody {
            // Nothing to read.
        } else if head.headers.contains("Transfer-Encoding") {
            // Exactly `chunked`: other codings would have to be decoded (none is supported), and chunked twice is
            // forbidden (RFC 9112 §6.1) — accepting `gzip, chunked` handed gzip bytes on as the content (found in
            // an outside audit).
            let codings = head.headers.tokens(for: "Transfer-Encoding")
            guard codings == ["chunked"] else {
                throw .malformed("unsupported Transfer-Encoding \(codings.joined(separator: ", ").debugDescription)")
            }
            body = try readChunked(limit: limit)
        } else if let length = try contentLength(head.headers) {
            guard length <= limit else {
                throw .tooLarge("declared Content-Length \(length) exceeds \(limit) bytes; the body was not read")
            }
            body = try readExactly(length)
        } else {
            delimitedByClose = true
            body = try readUntilClose(limit: limit)
        }
        // Transfer-Encoding beside Content-Length may be an attempt to smuggle a response (RFC 9112 §6.3):
        // the body is read by Transfer-Encoding, and the connection is not used again. Nor after a 101.
        let closes =
            delimitedByClose || head.version != "HTTP/1.1" || head.status == 101
            || head.headers.tokens(for: "Connection").contains("close")
            || (head.headers.contains("Transfer-Encoding") && head.headers.contains("Content-Length"))
        let reusable = !closes && start == buffer.count  // nothing unexpected after the body
        return (TransportResponse(status: head.status, headers: head.headers, body: body), reusable)
    }

    // MARK: - Streaming

    /// How the body of a streamed response is delimited, and how far reading it has come.
    package enum StreamFraming {
        case none
        case length(remaining: Int)
        case chunked(remainingInChunk: Int)
        case untilClose
        case finished
    }

    /// The head of a response whose body will be read piece by piece (``nextBodyBytes(_:)``).
    package mutating func readStreamHead(method: String) throws(ResponseReadFailure) -> (
        status: Int, headers: HeaderFields, framing: StreamFraming
    ) {
        let head = try readFinalHead()
        let framing: StreamFraming
        if method == "HEAD" || (100...199).contains(head.status) || head.status == 204 || head.status == 304 {
            framing = .none
        } else if head.headers.contains("Transfer-Encoding") {
            guard head.headers.tokens(for: "Transfer-Encoding") == ["chunked"] else {
                throw .malformed("unsupported Transfer-Encoding")
            }
            framing = .chunked(remainingInChunk: 0)
        } else if let length = try contentLength(head.headers) {
            framing = .length(remaining: length)
        } else {
            framing = .untilClose
        }
        return (head.status, head.headers, framing)
    }

    /// The next bytes of the body as they arrive (at most `limit` at once), or nil at its clean end (the
    /// last chunk, the declared length, or the server closing a close-delimited body).
    package mutating func nextBodyBytes(_ framing: inout StreamFraming, limit: Int = 64 * 1024)
        throws(ResponseReadFailure) -> [UInt8]?
    {
        while true {
            switch framing {
            case .none, .finished:
                framing = .finished
                return nil
            case .length(let remaining):
                if remaining == 0 {
                    framing = .finished
                    return nil
                }
                if start == buffer.count {
                    guard try fill() else { throw .malformed("the body ended \(remaining) bytes short") }
                }
                let take = min(remaining, buffer.count - start, limit)
                defer { start += take }
                framing = .length(remaining: remaining - take)
                return Array(buffer[start..<start + take])
            case .untilClose:
                if start == buffer.count {
                    guard try fill() else {
                        framing = .finished
                        return nil
                    }
                }
                let take = min(buffer.count - start, limit)
                defer { start += take }
                return Array(buffer[start..<start + take])
            case .chunked(let remainingInChunk):
                if remainingInChunk > 0 {
                    if start == buffer.count {
                        guard try fill() else { throw .malformed("the stream ended inside a chunk") }
                    }
                    let take = min(remainingInChunk, buffer.count - start, limit)
                    let bytes = Array(buffer[start..<start + take])
                    start += take
                    if take == remainingInChunk {
                        guard try readLine(limit: 2, what: "chunk end").isEmpty else {
                            throw .malformed("chunk not followed by CRLF")
                        }
                    }
                    framing = .chunked(remainingInChunk: remainingInChunk - take)
                    return bytes
                }
                let size = try chunkSize()
                if size == 0 {
                    var trailerBytes = 0
                    while true {
                        let line = try readLine(limit: maximumHeadBytes - trailerBytes, what: "trailer")
                        trailerBytes += line.count + 2
                        if line.isEmpty { break }
                    }
                    framing = .finished
                    return nil
                }
                framing = .chunked(remainingInChunk: size)
            }
        }
    }

    /// Reads a chunk-size line.
    private mutating func chunkSize() throws(ResponseReadFailure) -> Int {
        let line = try readLine(limit: 1024, what: "chunk size")
        let beforeExtension = line.prefix { $0 != UInt8(ascii: ";") }
        let sizeText = beforeExtension.prefix { $0 != 32 && $0 != 9 }
        guard beforeExtension.dropFirst(sizeText.count).allSatisfy({ $0 == 32 || $0 == 9 }) else {
            throw .malformed("invalid chunk size line")
        }
        let isHexDigit = { (byte: UInt8) in
            (48...57).contains(byte) || (65...70).contains(byte) || (97...102).contains(byte)
        }
        guard !sizeText.isEmpty, sizeText.count <= 15, sizeText.allSatisfy(isHexDigit),
            let size = Int(String(decoding: sizeText, as: UTF8.self), radix: 16)
        else {
            throw .malformed("invalid chunk size line")
        }
        return size
    }

    // MARK: - Head

    private struct Head {
        var version: String
        var status: Int
        var headers: HeaderFields
    }

    /// The head of the real response: interim answers (100 Continue, 103 Early Hints) precede it; a few,
    /// not endlessly.
    private mutating func readFinalHead() throws(ResponseReadFailure) -> Head {
        var head = try readHead()
        var interim = 0
        while (100...199).contains(head.status) && head.status != 101 {
            interim += 1
            guard interim <= 8 else { throw .malformed("more than 8 interim (1xx) responses") }
            head = try readHead()
        }
        return head
    }

    private mutating func readHead() throws(ResponseReadFailure) -> Head {
        var lines: [String] = []
        var headBytes = 0
        while true {
            let line = try readLine(limit: maximumHeadBytes - headBytes, what: "response head")
            headBytes += line.count + 2
            if line.isEmpty {
                if lines.isEmpty { continue }  // tolerate stray empty lines before a status line
                break
            }
            lines.append(String(decoding: line, as: UTF8.self))
        }
        let statusLine = lines[0].split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)
        guard statusLine.count >= 2, statusLine[0] == "HTTP/1.1" || statusLine[0] == "HTTP/1.0",
            statusLine[1].count == 3, let status = Int(statusLine[1]), (100...999).contains(status)
        else {
            throw .malformed("not an HTTP/1.x status line: \(lines[0].prefix(80).debugDescription)")
        }
        var fields: [(name: String, value: String)] = []
        fields.reserveCapacity(lines.count - 1)
        for line in lines.dropFirst() {
            // An obsolete line folding (a line starting with a space or tab continues the field before it): a
            // client replaces it with a space (RFC 9112 §5.2). Before the first field there is nothing to fold.
            if line.first == " " || line.first == "\t" {
                guard !fields.isEmpty else {
                    throw .malformed("a folded line before any header field \(line.prefix(80).debugDescription)")
                }
                let continuation = line.trimmingSpacesAndTabs()
                if !continuation.isEmpty {
                    let previous = fields[fields.count - 1].value
                    fields[fields.count - 1].value = previous.isEmpty ? continuation : previous + " " + continuation
                }
                continue
            }
            guard let colon = line.firstIndex(of: ":"), colon != line.startIndex,
                !line[..<colon].contains(where: { $0 == " " || $0 == "\t" })
            else {
                throw .malformed("malformed header field \(line.prefix(80).debugDescription)")
            }
            fields.append((String(line[..<colon]), line[line.index(after: colon)...].trimmingSpacesAndTabs()))
        }
        var headers = HeaderFields()
        headers.reserveCapacity(fields.count)
        for field in fields { headers.append(name: field.name, value: field.value) }
        return Head(version: String(statusLine[0]), status: status, headers: headers)
    }

    /// One Content-Length, or several identical ones; anything else is malformed (RFC 9112 §6.3).
    private func contentLength(_ headers: HeaderFields) throws(ResponseReadFailure) -> Int? {
        let fields = headers.values(for: "Content-Length")
        guard !fields.isEmpty else { return nil }
        let values = fields.flatMap { $0.split(separator: ",") }.map { $0.trimmingSpacesAndTabs() }.filter {
            !$0.isEmpty
        }
        // A field with no length in it (`Content-Length:` or `Content-Length: ,`) is invalid, not absent (found
        // in an outside audit: a keep-alive answer was then read until the attempt timed out).
        guard let first = values.first else { throw .malformed("empty Content-Length") }
        guard values.allSatisfy({ $0 == first }), !first.isEmpty, first.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }),
            let length = Int(first.prefix(18))
        else {
            throw .malformed("invalid Content-Length \(values.joined(separator: ", ").prefix(80).debugDescription)")
        }
        return first.count > 18 ? Int.max : length
    }

    // MARK: - Bodies

    private mutating func readExactly(_ count: Int) throws(ResponseReadFailure) -> Data {
        var body = Data()
        body.reserveCapacity(min(count, 1 << 20))
        try append(count, to: &body)
        return body
    }

    /// Appends exactly `count` more bytes to `body`, straight from the buffer (no intermediate copy).
    private mutating func append(_ count: Int, to body: inout Data) throws(ResponseReadFailure) {
        var remaining = count
        while remaining > 0 {
            if start == buffer.count {
                guard try fill() else { throw .malformed("the body ended \(remaining) bytes short") }
            }
            let take = min(remaining, buffer.count - start)
            body.append(contentsOf: buffer[start..<start + take])
            start += take
            remaining -= take
        }
    }

    private mutating func readChunked(limit: Int) throws(ResponseReadFailure) -> Data {
        var body = Data()
        while true {
            // The size, then optional whitespace before a `;extension`; no whitespace inside the size.
            let size = try chunkSize()
            if size == 0 { break }
            guard body.count + size <= limit else {
                throw .tooLarge("chunked body exceeds \(limit) bytes; the rest was not read")
            }
            try append(size, to: &body)
            guard try readLine(limit: 2, what: "chunk end").isEmpty else {
                throw .malformed("chunk not followed by CRLF")
            }
        }
        // Trailer fields, up to the empty line.
        var trailerBytes = 0
        while true {
            let line = try readLine(limit: maximumHeadBytes - trailerBytes, what: "trailer")
            trailerBytes += line.count + 2
            if line.isEmpty { return body }
        }
    }

    private mutating func readUntilClose(limit: Int) throws(ResponseReadFailure) -> Data {
        var body = Data()
        while true {
            if start < buffer.count {
                guard body.count + buffer.count - start <= limit else {
                    throw .tooLarge("body exceeds \(limit) bytes; the rest was not read")
                }
                body.append(contentsOf: buffer[start...])
                start = buffer.count
            }
            guard try fill() else { return body }
        }
    }

    // MARK: - Bytes

    /// The next line without its CRLF (a bare LF is accepted), at most `limit` bytes.
    private mutating func readLine(limit: Int, what: String) throws(ResponseReadFailure) -> ArraySlice<UInt8> {
        var searchFrom = start
        while true {
            if let newline = buffer[searchFrom...].firstIndex(of: 10) {
                var end = newline
                if end > start && buffer[end - 1] == 13 { end -= 1 }
                let line = buffer[start..<end]
                start = newline + 1
                guard line.count <= limit else { throw .malformed("\(what) longer than \(limit) bytes") }
                return line
            }
            let scanned = buffer.count - start
            guard scanned <= limit else { throw .malformed("\(what) longer than \(limit) bytes") }
            guard try fill() else {
                guard scanned == 0 && what == "response head" && !receivedAnything else {
                    throw .malformed("the \(what) was cut off")
                }
                // Nothing at all came back. On a reused connection the server may have closed it while
                // idle (the connection broke); on a fresh one it closed without answering.
                throw .closedWithoutResponse
            }
            // `fill` drops consumed bytes: continue the search where it stopped, relative to `start`.
            searchFrom = start + scanned
        }
    }

    /// Reads more bytes into the buffer (dropping what was consumed); false at end of stream.
    private mutating func fill() throws(ResponseReadFailure) -> Bool {
        if start > 0 {
            buffer.removeFirst(start)
            start = 0
        }
        let count: Int
        do throws(ClientSocket.Failure) {
            count = try socket.read(
                into: &scratch, deadline: progressTimeout.map { ContinuousClock.now + $0 } ?? deadline)
        } catch {
            throw .socket(error)
        }
        if count == 0 { return false }
        receivedAnything = true
        buffer.append(contentsOf: scratch[0..<count])
        return true
    }
}
