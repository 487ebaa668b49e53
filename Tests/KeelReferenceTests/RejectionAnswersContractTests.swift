import Foundation
import KeelContract
import KeelContractTools
import KeelCore
import KeelReference
import KeelTesting
import Testing

/// Every answer the reference backend gives is one its contract (`contracts/notes-api.v1.8.yaml`) declares,
/// in the contract's format. Found in an outside audit: a request the HTTP layer refused (a malformed head, a
/// body too large) was answered in plain text with no machine code; maintenance answered sign-in and operation
/// status, which declared no 503; `POST /mutations` answered a 413 it did not declare.
@Suite(.timeLimit(.minutes(1))) struct RejectionAnswersContractTests {
    static let contract = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("contracts/notes-api.v1.8.yaml")

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

    /// The schema the contract declares for `status` of `operationID` (its JSON body), and the response; nil
    /// when the operation declares no such status.
    static func declared(_ document: OpenAPIDocument, _ operationID: String, _ status: Int) throws -> (
        schema: ContractSchema, response: OpenAPIDocument.Response
    )? {
        guard let operation = try document.operations().first(where: { $0.operationID == operationID }),
            let response = operation.responses.first(where: { $0.status == String(status) }),
            let reference = response.content.first(where: { $0.name == "application/json" })?.schema?.value["$ref"]?
                .stringValue
        else { return nil }
        return (try document.schema(at: reference), response)
    }

    /// A request the contract's operation `operation` stands for, with its path parameters filled in.
    static func path(of operation: OpenAPIDocument.Operation) -> String {
        operation.path.replacingOccurrences(of: #"\{[^}]*\}"#, with: "x1", options: .regularExpression)
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

    /// Maintenance stands before routing: every operation of the contract answers it, so every one declares it.
    @Test func maintenanceIsDeclaredOnEveryOperationItAnswers() async throws {
        let document = try OpenAPIDocument.load(from: Self.contract)
        let harness = try BackendHarness()
        let token = try await harness.signIn("alice")
        _ = try await harness.call("POST", "/_admin/fault", json: #"{"mode": "unavailable", "retryAfter": 30}"#)
        let operations = try document.operations()
        #expect(["signIn", "getOperationStatus"].allSatisfy { id in operations.contains { $0.operationID == id } })
        for operation in operations {
            let name = operation.operationID ?? operation.location
            let answer = try await harness.call(
                operation.method.uppercased(), Self.path(of: operation),
                headers: ["Authorization": "Bearer \(token)", "Idempotency-Key": "maintenance-key-000001"],
                json: operation.requestBody == nil ? nil : #"{"account": "alice", "mutations": []}"#)
            #expect(answer.status == 503, "\(name): \(answer.status) \(answer.text)")
            guard let declared = try Self.declared(document, name, 503) else {
                Issue.record("\(name) answers 503 maintenance, which its contract does not declare")
                continue
            }
            #expect(declared.response.headers.contains { $0.name == "Retry-After" }, "\(name)")
            #expect(answer.headers["retry-after"] == "30", "\(name)")
            let verdict = declared.schema.validate(try #require(answer.body, "\(name): \(answer.text)"))
            #expect(verdict.isValid, "\(name): \(verdict.errors.map(\.message)) in \(answer.text)")
        }
        _ = try await harness.call("POST", "/_admin/fault", json: #"{"mode": "none"}"#)
    }

    /// A body larger than the server reads is refused with 413 on any operation that takes one: each declares it.
    @Test func aBodyTooLargeIsDeclaredOnEveryOperationThatTakesOne() throws {
        let document = try OpenAPIDocument.load(from: Self.contract)
        let harness = try BackendHarness()
        let operations = try document.operations().filter { $0.requestBody != nil }
        #expect(
            operations.contains { $0.operationID == "applyMutations" }
                && operations.contains { $0.operationID == "signIn" })
        for operation in operations {
            let name = operation.operationID ?? operation.location
            let head =
                "\(operation.method.uppercased()) \(Self.path(of: operation)) HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                + "Content-Type: application/json\r\nContent-Length: \(Self.tooLarge)\r\n\r\n"
            let answer = try Self.exchange(Array(head.utf8), port: harness.backend.port)
            #expect(answer.status == 413, "\(name): \(answer.status) \(answer.text)")
            guard let declared = try Self.declared(document, name, 413) else {
                Issue.record("\(name) answers 413, which its contract does not declare")
                continue
            }
            guard let body = try? JSONValue(parsing: answer.body) else {
                Issue.record("\(name): not JSON: \(answer.text)")
                continue
            }
            #expect(body["code"] == "payload_too_large", "\(name): \(answer.text)")
            let verdict = declared.schema.validate(body)
            #expect(verdict.isValid, "\(name): \(verdict.errors.map(\.message)) in \(answer.text)")
        }
    }
}
