import Foundation
import KeelCore

/// The parsed request line and header fields of one HTTP/1.x request.
package struct RequestHead {
    var method: String
    var target: String
    var version: String
    var headers: HeaderFields
    package var contentLength: Int
    var isChunked: Bool

    package struct Failure: Error {
        package var status: Int
        package var reason: String
    }

    /// Whether the client asked for `100 Continue` before sending the body.
    package var expectsContinue: Bool {
        version == "HTTP/1.1" && headers["Expect"]?.lowercased() == "100-continue" && (isChunked || contentLength > 0)
    }

    /// Whether the connection must close after this exchange (`Connection: close`, or HTTP/1.0 without keep-alive).
    package var wantsClose: Bool {
        let tokens = headers.tokens(for: "Connection")
        if tokens.contains("close") { return true }
        return version == "HTTP/1.0" && !tokens.contains("keep-alive")
    }

    /// The size of a chunk from its size line (RFC 9112 §7.1): hex digits first, then nothing, or optional
    /// whitespace and extensions after `;`; nil for anything else (a space before the digits, a control
    /// character such as a bare CR anywhere in the line).
    package static func chunkSize(line: some Collection<UInt8>) -> Int? {
        let digits = line.prefix { isHexDigit($0) }
        guard !digits.isEmpty, digits.count <= 15 else { return nil }
        let rest = line.dropFirst(digits.count)
        guard !rest.contains(where: { ($0 < 0x20 && $0 != 9) || $0 == 0x7F }) else { return nil }
        let afterSpace = rest.drop { $0 == 32 || $0 == 9 }
        guard afterSpace.isEmpty || afterSpace.first == 59 else { return nil }  // ";"
        return Int(String(decoding: digits, as: UTF8.self), radix: 16)
    }

    /// Whether `line` is a trailer field: a token name, a colon, and a value without control characters.
    package static func isField(line: some Collection<UInt8>) -> Bool {
        guard let colon = line.firstIndex(of: 58), HeaderFields.isToken(line[..<colon]) else { return false }
        return !line[colon...].contains(where: { ($0 < 0x20 && $0 != 9) || $0 == 0x7F })
    }

    /// The index of the next LF at or after `start` in `buffer`, or its end index.
    static func nextLineFeed(in buffer: UnsafeBufferPointer<UInt8>, from start: Int) -> Int {
        guard let base = buffer.baseAddress, start < buffer.endIndex else { return buffer.endIndex }
        guard let found = memchr(base + start, 10, buffer.endIndex - start) else { return buffer.endIndex }
        return base.distance(to: found.assumingMemoryBound(to: UInt8.self))
    }

    /// Whether the bytes of `buffer` in `range` are all ASCII (eight at a time).
    private static func isASCII(_ buffer: UnsafeBufferPointer<UInt8>, _ range: Range<Int>) -> Bool {
        guard let base = buffer.baseAddress else { return true }
        var index = range.lowerBound
        var words: UInt64 = 0
        while range.upperBound - index >= 8 {
            words |= UnsafeRawPointer(base + index).loadUnaligned(as: UInt64.self)
            index += 8
        }
        var bytes: UInt8 = 0
        while index < range.upperBound {
            bytes |= base[index]
            index += 1
        }
        return words & 0x8080_8080_8080_8080 == 0 && bytes < 0x80
    }

    private static func isHexDigit(_ byte: UInt8) -> Bool {
        (48...57).contains(byte) || (65...70).contains(byte) || (97...102).contains(byte)
    }

    /// Parses the bytes before the empty line. Rejects what RFC 9112 says a server must reject.
    ///
    /// Works on bytes (a head is ASCII but for field values): lines split on LF, each line checked to be
    /// UTF-8, optional whitespace around a value is SP and HTAB only (RFC 9110 §5.6.3).
    package static func parse(_ bytes: [UInt8]) -> Result<RequestHead, Failure> {
        // Over the bytes in place, by position: slices of the array retained and released its storage for
        // every line, name and value, which cost more than the parsing (keel-bench trace.overhead).
        bytes.withUnsafeBufferPointer { parse(buffer: $0) }
    }

    private static func parse(buffer: UnsafeBufferPointer<UInt8>) -> Result<RequestHead, Failure> {
        typealias Bytes = Slice<UnsafeBufferPointer<UInt8>>
        var lines: [Range<Int>] = []
        lines.reserveCapacity(16)
        var lineStart = buffer.startIndex
        while true {
            let lineBreak = nextLineFeed(in: buffer, from: lineStart)
            var lineEnd = lineBreak
            if lineEnd > lineStart, buffer[lineEnd - 1] == 13 { lineEnd -= 1 }
            guard
                isASCII(buffer, lineStart..<lineEnd)
                    || String(validating: buffer[lineStart..<lineEnd], as: UTF8.self) != nil
            else {
                return .failure(Failure(status: 400, reason: "request head is not valid UTF-8"))
            }
            lines.append(lineStart..<lineEnd)
            if lineBreak == buffer.endIndex { break }
            lineStart = lineBreak + 1
        }
        // RFC 9112 §2.2: a server SHOULD ignore at least one empty line before the request line.
        let firstLine = lines.firstIndex { !$0.isEmpty } ?? lines.endIndex
        guard firstLine < lines.endIndex else { return .failure(Failure(status: 400, reason: "empty request")) }
        // method SP target SP version: exactly two spaces.
        let requestRange = lines[firstLine]
        var spaceCount = 0
        var firstSpace = requestRange.lowerBound
        var secondSpace = requestRange.lowerBound
        for index in requestRange where buffer[index] == 32 {
            spaceCount += 1
            if spaceCount == 1 { firstSpace = index } else if spaceCount == 2 { secondSpace = index } else { break }
        }
        guard spaceCount == 2 else {
            return .failure(
                Failure(
                    status: 400,
                    reason:
                        "malformed request line \(String(decoding: buffer[requestRange], as: UTF8.self).debugDescription)"
                ))
        }
        let methodBytes = buffer[requestRange.lowerBound..<firstSpace]
        let targetBytes = buffer[(firstSpace + 1)..<secondSpace]
        let versionBytes = buffer[(secondSpace + 1)..<requestRange.upperBound]
        let method = String(decoding: methodBytes, as: UTF8.self)
        let target = String(decoding: targetBytes, as: UTF8.self)
        let version = String(decoding: versionBytes, as: UTF8.self)
        guard HeaderFields.isToken(methodBytes) else {
            return .failure(Failure(status: 400, reason: "malformed method \(method.debugDescription)"))
        }
        // No controls, DEL or spaces; beyond ASCII, no Unicode whitespace either.
        guard !targetBytes.isEmpty, !targetBytes.contains(where: { $0 < 0x21 || $0 == 0x7F }),
            isASCII(buffer, targetBytes.startIndex..<targetBytes.endIndex) || !target.contains(where: \.isWhitespace)
        else {
            return .failure(Failure(status: 400, reason: "malformed request target"))
        }
        guard version == "HTTP/1.1" || version == "HTTP/1.0" else {
            let status = version.hasPrefix("HTTP/") ? 505 : 400
            return .failure(Failure(status: status, reason: "unsupported protocol version \(version.debugDescription)"))
        }

        var headers = HeaderFields()
        headers.reserveCapacity(lines.count - firstLine - 1)
        // The fields the framing depends on, noted on the way (each lookup afterwards would scan every name).
        var hosts = 0
        var hasTransferEncoding = false
        var hasContentLength = false
        for range in lines[(firstLine + 1)...] {
            let line: Bytes = buffer[range]
            guard let colon = line.firstIndex(of: 58) else {  // ":"
                return .failure(Failure(status: 400, reason: "header line without a colon"))
            }
            let nameBytes = line[..<colon]
            guard HeaderFields.isToken(nameBytes) else {
                // Also rejects obsolete line folding and whitespace before the colon (RFC 9112 §5.1, §5.2).
                return .failure(
                    Failure(
                        status: 400,
                        reason: "malformed header name \(String(decoding: nameBytes, as: UTF8.self).debugDescription)"))
            }
            let name = String(decoding: nameBytes, as: UTF8.self)
            switch nameBytes.count {
            case 4: if HeaderFields.equalIgnoringCase(name, "host") { hosts += 1 }
            case 14: if HeaderFields.equalIgnoringCase(name, "content-length") { hasContentLength = true }
            case 17: if HeaderFields.equalIgnoringCase(name, "transfer-encoding") { hasTransferEncoding = true }
            default: break
            }
            var valueStart = colon + 1
            var valueEnd = line.endIndex
            while valueStart < valueEnd, buffer[valueStart] == 32 || buffer[valueStart] == 9 { valueStart += 1 }
            while valueEnd > valueStart, buffer[valueEnd - 1] == 32 || buffer[valueEnd - 1] == 9 { valueEnd -= 1 }
            let value = buffer[valueStart..<valueEnd]
            // RFC 9110 §5.5: a field value is visible characters, SP, HTAB and obs-text; any other control
            // (NUL, CR, a bare 0x01, DEL) is refused, never passed on to the code under test.
            guard !value.contains(where: { ($0 < 0x20 && $0 != 9) || $0 == 0x7F }) else {
                return .failure(Failure(status: 400, reason: "header \(name) contains a control character"))
            }
            headers.append(name: name, value: String(decoding: value, as: UTF8.self))
        }
        if version == "HTTP/1.1", hosts == 0 {
            return .failure(Failure(status: 400, reason: "HTTP/1.1 request without Host"))
        }
        if hosts > 1 {
            return .failure(Failure(status: 400, reason: "more than one Host header"))
        }

        let transferCodings = hasTransferEncoding ? headers.tokens(for: "Transfer-Encoding") : []
        let isChunked = transferCodings.last == "chunked"
        if !transferCodings.isEmpty && !isChunked {
            // RFC 9112 §6.3: chunked not the final coding leaves the body's length unknown: 400, then close.
            return .failure(Failure(status: 400, reason: "chunked is not the final transfer coding"))
        }
        let lengths = hasContentLength ? headers.values(for: "Content-Length") : []
        if isChunked, !lengths.isEmpty {
            // RFC 9112 §6.1: both framings at once is a smuggling vector; reject rather than guess.
            return .failure(Failure(status: 400, reason: "both Transfer-Encoding and Content-Length"))
        }
        var contentLength = 0
        if let first = lengths.first {
            guard Set(lengths).count == 1, !first.isEmpty, first.count <= 18,
                first.allSatisfy({ $0.isASCII && $0.isNumber }), let value = Int(first)
            else {
                return .failure(Failure(status: 400, reason: "malformed Content-Length"))
            }
            contentLength = value
        }
        return .success(
            RequestHead(
                method: method, target: target, version: version, headers: headers,
                contentLength: contentLength, isChunked: isChunked
            ))
    }
}
