import Foundation
import KeelContract
import KeelContractTools
import KeelCore
import KeelReference
import KeelTesting
import Testing

/// Every failure the reference backend answers is in its contract's format (`contracts/notes-api.v1.7.yaml`):
/// the Error body with a stable machine code. Found in an outside audit: a request the HTTP layer refused (a
/// malformed head, a body too large) was answered in plain text with no machine code.
@Suite(.timeLimit(.minutes(1))) struct RejectionAnswersContractTests {
    static let contract = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("contracts/notes-api.v1.7.yaml")

    /// An answer read off the wire: status, header fields (names in lower case), body, and whether the server
    /// closed the connection after it.
    struct RawAnswer {
        var status = 0
        var headers: [String: String] = [:]
        var body = Data()
        var closed = false
        var text: String { String(decoding: body, as: UTF8.self) }
    }

    /// Sends `bytes` to the backend as they are (what URLSession would never send) and reads the answer until
    /// the server closes the connection (at most 5 s without a byte).
    static func exchange(_ bytes: [UInt8], port: Int) throws -> RawAnswer {
        let socket = try POSIX.connect(host: "127.0.0.1", port: UInt16(port))
        defer { POSIX.close(socket) }
        _ = POSIX.writeAll(socket, bytes)
        var received: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        var answer = RawAnswer()
        while POSIX.waitReadable([socket], timeoutMilliseconds: 5000).contains(0) {
            guard let count = chunk.withUnsafeMutableBytes({ POSIX.read(socket, into: $0) }) else { break }
            if count == 0 {
                answer.closed = true
                break
            }
            received += chunk[..<count]
        }
        let separator = Array("\r\n\r\n".utf8)
        guard let end = received.indices.first(where: { received[$0...].starts(with: separator) }) else {
            return answer
        }
        let lines = String(decoding: received[..<end], as: UTF8.self).components(separatedBy: "\r\n")
        answer.status = Int(lines[0].split(separator: " ").dropFirst().first ?? "") ?? 0
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            answer.headers[line[..<colon].lowercased()] = line[line.index(after: colon)...]
                .trimmingCharacters(in: .whitespaces)
        }
        answer.body = Data(received[(end + separator.count)...])
        return answer
    }

    static let tooLarge = 100_000_000  // more than the server reads (64 MiB)

    /// Each request the HTTP layer refuses, the status it is refused with and the code the contract's Error
    /// carries for it.
    static let refused: [(name: String, bytes: [UInt8], status: Int, code: String)] = [
        (
            "malformed Content-Length", Array("POST /mutations HTTP/1.1\r\nHost: x\r\nContent-Length: 1x\r\n\r\n".utf8),
            400, "bad_request"
        ),
        (
            "control character in a header", Array("GET /changes HTTP/1.1\r\nHost: x\r\nX-Ctl: a\u{01}b\r\n\r\n".utf8),
            400, "bad_request"
        ),
        ("no Host", Array("GET /changes HTTP/1.1\r\n\r\n".utf8), 400, "bad_request"),
        (
            "both Content-Length and Transfer-Encoding",
            Array(
                "POST /mutations HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n".utf8),
            400, "bad_request"
        ),
        (
            "malformed chunk",
            Array("POST /mutations HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n".utf8), 400,
            "bad_request"
        ),
        (
            "invalid UTF-8 in the head",
            Array("GET /changes HTTP/1.1\r\nHost: x\r\nX-Name: ".utf8) + [0xFF, 0xFE] + Array("\r\n\r\n".utf8), 400,
            "bad_request"
        ),
        (
            "a declared body too large",
            Array("POST /mutations HTTP/1.1\r\nHost: x\r\nContent-Length: \(tooLarge)\r\n\r\n".utf8), 413,
            "payload_too_large"
        ),
        (
            "a chunk too large",
            Array("POST /mutations HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n".utf8)
                + Array("\(String(tooLarge, radix: 16))\r\n".utf8), 413, "payload_too_large"
        ),
        (
            "a request line too long",
            Array("GET /notes/\(String(repeating: "a", count: 70_000)) HTTP/1.1\r\nHost: x\r\n\r\n".utf8), 414,
            "uri_too_long"
        ),
        (
            "a head too large",
            Array("GET /changes HTTP/1.1\r\nHost: x\r\nX-Big: \(String(repeating: "a", count: 70_000))\r\n\r\n".utf8),
            431, "headers_too_large"
        ),
        (
            "another HTTP version", Array("GET /changes HTTP/2.0\r\nHost: x\r\n\r\n".utf8), 505,
            "http_version_not_supported"
        ),
    ]

    @Test func everyRequestTheHTTPLayerRefusesIsAnsweredWithTheContractsErrorAndItsCode() throws {
        let error = try OpenAPIDocument.load(from: Self.contract).schema(at: "#/components/schemas/Error")
        let harness = try BackendHarness()
        for refused in Self.refused {
            let answer = try Self.exchange(refused.bytes, port: harness.backend.port)
            #expect(answer.status == refused.status, "\(refused.name): \(answer.status) \(answer.text)")
            #expect(answer.headers["content-type"] == "application/json", "\(refused.name): \(answer.headers)")
            #expect(answer.headers["content-length"] == String(answer.body.count), "\(refused.name)")
            // Refused at the HTTP layer, the connection closes after the answer (as it always did).
            #expect(answer.headers["connection"] == "close", "\(refused.name): \(answer.headers)")
            #expect(answer.closed, "\(refused.name): the connection stayed open")
            guard let body = try? JSONValue(parsing: answer.body) else {
                Issue.record("\(refused.name): not JSON: \(answer.text)")
                continue
            }
            #expect(body["code"] == .string(refused.code), "\(refused.name): \(answer.text)")
            #expect(body["message"]?.stringValue?.isEmpty == false, "\(refused.name): \(answer.text)")
            let verdict = error.validate(body)
            #expect(verdict.isValid, "\(refused.name): \(verdict.errors.map(\.message)) in \(answer.text)")
        }
        // Nothing refused reached the backend, and it still serves.
        #expect(harness.backend.requestLog.isEmpty, "\(harness.backend.requestLog)")
        let served = Array("GET /changes HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".utf8)
        let answer = try Self.exchange(served, port: harness.backend.port)
        #expect(answer.status == 401 && answer.closed, "\(answer.status) \(answer.text)")
        #expect(answer.headers["content-type"] == "application/json")
    }
}
