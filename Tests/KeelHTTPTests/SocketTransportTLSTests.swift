import Foundation
import KeelHTTP
import KeelTesting
import Testing

/// SocketTransport's TLS (OpenSSL) against a real TLS server: `openssl s_server` in a child process with a
/// certificate made for the test. The chain must be trusted and the certificate must name the host.
@Suite(.serialized, .timeLimit(.minutes(1))) struct SocketTransportTLSTests {
    static let openssl = "/usr/bin/openssl"

    /// A certificate and key for `names` (subjectAltName entries such as `DNS:localhost`).
    private static func certificate(in directory: TemporaryDirectory, names: String) async throws -> (
        cert: String, key: String
    ) {
        // Required, not skipped: scripts/setup installs the openssl tool.
        try #require(FileManager.default.isExecutableFile(atPath: openssl), "\(openssl) is missing; run scripts/setup")
        let cert = directory.url("cert-\(abs(names.hashValue)).pem").path
        let key = directory.url("key-\(abs(names.hashValue)).pem").path
        let maker = try ChildProcess.launch(
            executable: openssl,
            arguments: [
                "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert, "-days", "1",
                "-subj", "/CN=keel-test", "-addext", "subjectAltName=\(names)",
            ])
        #expect(try await maker.waitForExit(timeout: .seconds(30)) == .exited(0))
        return (cert, key)
    }

    /// `openssl s_server -www` on a free port; returns the process and the port.
    private static func tlsServer(cert: String, key: String) async throws -> (ChildProcess, Int) {
        let server = try ChildProcess.launch(
            executable: openssl, arguments: ["s_server", "-accept", "0", "-cert", cert, "-key", key, "-www"])
        let line = try await server.waitForLine(timeout: .seconds(20)) { $0.hasPrefix("ACCEPT") }
        let port = try #require(line.split(separator: ":").last.flatMap { Int($0) }, "no port in \(line)")
        return (server, port)
    }

    private func get(_ url: String, trusting file: String?) async throws(TransportError) -> TransportResponse {
        let transport = SocketTransport(configuration: .init(trustedCertificatesFile: file))
        return try await transport.send(
            TransportRequest(
                method: "GET", url: URL(string: url)!, transportTimeout: .seconds(10), reusesConnections: false))
    }

    @Test
    func aTrustedCertificateThatNamesTheHostIsAccepted() async throws {
        let directory = try TemporaryDirectory()
        let (cert, key) = try await Self.certificate(in: directory, names: "DNS:localhost,IP:127.0.0.1")
        let (server, port) = try await Self.tlsServer(cert: cert, key: key)
        defer { server.kill() }
        for host in ["localhost", "127.0.0.1"] {
            let response = try await get("https://\(host):\(port)/", trusting: cert)
            #expect(response.status == 200, "\(host)")
            #expect(String(decoding: response.body, as: UTF8.self).contains("s_server"), "\(host)")
        }
    }

    /// Cancelling an HTTPS exchange shuts its socket down; closing must not then write a TLS close to it
    /// (OpenSSL writes with write(2), and the SIGPIPE would kill the process).
    @Test
    func cancellingATLSExchangeEndsItWithoutKillingTheProcess() async throws {
        let directory = try TemporaryDirectory()
        let (cert, key) = try await Self.certificate(in: directory, names: "DNS:localhost")
        // Without -www, s_server answers nothing: the exchange waits for a response until cancelled.
        let server = try ChildProcess.launch(
            executable: Self.openssl, arguments: ["s_server", "-accept", "0", "-cert", cert, "-key", key])
        defer { server.kill() }
        let line = try await server.waitForLine(timeout: .seconds(20)) { $0.hasPrefix("ACCEPT") }
        let port = try #require(line.split(separator: ":").last.flatMap { Int($0) })
        for _ in 0..<3 {
            let call = Task { () async -> TransportError? in
                do throws(TransportError) {
                    _ = try await get("https://localhost:\(port)/", trusting: cert)
                    return nil
                } catch {
                    return error
                }
            }
            try await Task.sleep(for: .milliseconds(300))
            call.cancel()
            let error = await call.value
            #expect(error?.code == .cancelled, "\(String(describing: error))")
        }
    }

    @Test
    func anUntrustedCertificateIsRefusedBeforeAnythingIsSent() async throws {
        let directory = try TemporaryDirectory()
        let (cert, key) = try await Self.certificate(in: directory, names: "DNS:localhost")
        let (server, port) = try await Self.tlsServer(cert: cert, key: key)
        defer { server.kill() }
        do {
            _ = try await get("https://localhost:\(port)/", trusting: nil)  // the system store does not know it
            Issue.record("a self-signed certificate must not be trusted")
        } catch {
            #expect(error.code == .secureConnectionFailed && !error.requestMayHaveBeenSent, "\(error)")
        }
    }

    @Test
    func aCertificateForAnotherHostIsRefused() async throws {
        let directory = try TemporaryDirectory()
        let (cert, key) = try await Self.certificate(in: directory, names: "DNS:api.example.com")
        let (server, port) = try await Self.tlsServer(cert: cert, key: key)
        defer { server.kill() }
        do {
            _ = try await get("https://localhost:\(port)/", trusting: cert)  // trusted, but not for this host
            Issue.record("a certificate for another host must be refused")
        } catch {
            #expect(error.code == .secureConnectionFailed && !error.requestMayHaveBeenSent, "\(error)")
        }
    }
}
