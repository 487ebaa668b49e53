import Foundation
import KeelCore
import KeelTesting

/// "TestServer GET round trip vs raw socket echo": what the test server's HTTP parsing, recording and
/// scripting cost on top of the bare loopback round trip every network test pays anyway.
///
/// Both sides use one kept-alive loopback connection and the same raw client: the baseline server
/// echoes the request bytes back; the candidate is a `TestServer` answering `200` with a 2-byte body.
enum TestServerRoundTrip {
    static let request = Array("GET /notes/1 HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/json\r\n\r\n".utf8)

    static let benchmark = Benchmark(
        name: "testserver-get-round-trip",
        unit: "µs per round trip",
        goal: "ratio ≤ 4 (server overhead must not dominate network tests)",
        operations: 2000,
        prepare: {
            // Three threads (client, echo, TestServer) on two cores: whether a side's server thread shared the
            // client's core or not (a cross-core wake-up costs tens of µs in a VM) moved the ratio from 1.7 to
            // 5.0 between runs of one build. On one CPU, both sides pay the same switch and the ratio is the
            // server's own work (this benchmark runs in a process of its own, so the pin ends with it).
            ThreadPlacement.pinAllThreadsToOneCPU()
            let echo = try EchoServer()
            let server = try TestServer(dispatcher: TestServer.Dispatcher { _ in TestResponse(body: "ok") })
            let echoClient = try RoundTripClient(port: echo.port)
            let httpClient = try RoundTripClient(port: UInt16(server.port))
            return Benchmark.Sides(
                baseline: { try echoClient.roundTrip(request, until: .count(request.count)) },
                candidate: { try httpClient.roundTrip(request, until: .suffix(Array("\r\n\r\nok".utf8))) },
                teardown: {
                    echoClient.close()
                    httpClient.close()
                    server.shutdown()
                    echo.shutdown()
                }
            )
        }
    )
}

/// A blocking client that sends a request and reads until the expected answer has arrived.
final class RoundTripClient {
    enum End {
        case count(Int)
        case suffix([UInt8])
    }

    private let descriptor: Int32
    private var buffer = [UInt8](repeating: 0, count: 64 * 1024)

    init(port: UInt16) throws {
        descriptor = try POSIX.connect(host: "127.0.0.1", port: port)
    }

    func roundTrip(_ bytes: [UInt8], until end: End) throws {
        guard bytes.withUnsafeBytes({ POSIX.write(descriptor, $0) }) else { throw BenchError("write failed") }
        var received: [UInt8] = []
        while true {
            guard let count = buffer.withUnsafeMutableBytes({ POSIX.read(descriptor, into: $0) }), count > 0 else {
                throw BenchError("connection closed mid-answer")
            }
            received += buffer[0..<count]
            switch end {
            case .count(let total): if received.count >= total { return }
            case .suffix(let suffix):
                if received.count >= suffix.count, received.suffix(suffix.count).elementsEqual(suffix) { return }
            }
        }
    }

    func close() { POSIX.close(descriptor) }
}

/// The baseline: a thread that echoes whatever one connection sends.
final class EchoServer: @unchecked Sendable {
    // @unchecked Sendable: the benchmark creates, uses and shuts it down from one thread; the echo
    // thread only touches its own local descriptors.
    let port: UInt16
    private let listener: Int32
    private var thread: POSIXThread?

    init() throws {
        let socket = try POSIX.makeListeningSocket(host: "127.0.0.1", port: 0)
        listener = socket.fd
        port = socket.port
        let listener = socket.fd
        thread = POSIXThread.spawn(name: "bench-echo") {
            _ = POSIX.waitReadable([listener], timeoutMilliseconds: 10_000)
            guard case .connection(let connection) = POSIX.accept(listener) else { return }
            var buffer = [UInt8](repeating: 0, count: 64 * 1024)
            while let count = buffer.withUnsafeMutableBytes({ POSIX.read(connection, into: $0) }), count > 0 {
                guard buffer[0..<count].withUnsafeBytes({ POSIX.write(connection, $0) }) else { break }
            }
            POSIX.close(connection)
        }
    }

    /// Waits for the echo thread, which ends when the client closes its connection.
    func shutdown() {
        thread?.join()
        thread = nil
        POSIX.close(listener)
    }
}

struct BenchError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
