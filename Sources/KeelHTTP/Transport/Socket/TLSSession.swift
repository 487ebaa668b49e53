// The TLS adapter of SocketTransport: OpenSSL's libssl on Linux (CTLS). Certificate chains are verified
// against the system's trust store (or the configured bundle) and the certificate must name the host.
#if canImport(CTLS)
    import CTLS
#endif
#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#endif
import KeelCore

/// What TLS connections trust.
struct TLSSettings: Sendable, Hashable {
    /// A PEM file of trusted certificates; nil for the system's trust store.
    var trustedCertificatesFile: String?
}

#if canImport(CTLS)
    /// One TLS session over a connected socket.
    final class TLSSession {
        private let ssl: OpaquePointer

        /// Performs the handshake, verifying the chain and that the certificate names `host`.
        init(descriptor: Int32, host: String, settings: TLSSettings, deadline: ContinuousClock.Instant)
            throws(ClientSocket.Failure)
        {
            guard let context = Self.context(for: settings) else {
                throw .tls(
                    "cannot load trusted certificates" + (settings.trustedCertificatesFile.map { " from \($0)" } ?? ""))
            }
            guard let ssl = SSL_new(context) else { throw .tls("cannot create a TLS session") }
            self.ssl = ssl
            SSL_set_fd(ssl, descriptor)
            let isAddress = host.contains(":") || host.allSatisfy { $0.isNumber || $0 == "." }
            if isAddress {
                X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host)
            } else {
                _ = keel_ssl_set_server_name(ssl, host)
                SSL_set1_host(ssl, host)
            }
            // The socket is blocking; the deadline bounds the handshake through the receive timeout.
            Self.setReceiveTimeout(descriptor, until: deadline)
            ERR_clear_error()
            guard SSL_connect(ssl) == 1 else {
                let verify = SSL_get_verify_result(ssl)
                let reason =
                    verify != X509_V_OK
                    ? String(cString: X509_verify_cert_error_string(verify)) : Self.lastError()
                SSL_free(ssl)
                throw .tls(reason)
            }
        }

        func write(_ bytes: [UInt8], from offset: Int, socket: ClientSocket, deadline: ContinuousClock.Instant)
            throws(ClientSocket.Failure) -> Int
        {
            try socket.wait(for: Int16(POLLOUT), deadline: deadline, timeout: .timedOut)
            let written = bytes.withUnsafeBytes { buffer in
                SSL_write(ssl, buffer.baseAddress! + offset, Int32(buffer.count - offset))
            }
            guard written > 0 else { throw .broken("TLS write failed: \(Self.lastError())") }
            return Int(written)
        }

        func read(into buffer: inout [UInt8], socket: ClientSocket, deadline: ContinuousClock.Instant)
            throws(ClientSocket.Failure) -> Int
        {
            // Decrypted bytes may already wait inside OpenSSL: only poll the socket when none do.
            if SSL_pending(ssl) == 0 {
                try socket.wait(for: Int16(POLLIN), deadline: deadline, timeout: .timedOut)
            }
            Self.setReceiveTimeout(socket.fileDescriptor, until: deadline)
            let count = buffer.withUnsafeMutableBytes { SSL_read(ssl, $0.baseAddress, Int32($0.count)) }
            if count > 0 { return Int(count) }
            switch SSL_get_error(ssl, count) {
            case SSL_ERROR_ZERO_RETURN: return 0
            case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE: throw .timedOut
            default:
                // A peer that closes without close_notify ends the stream as well; framing decides.
                if ERR_peek_error() == 0 { return 0 }
                throw .broken("TLS read failed: \(Self.lastError())")
            }
        }

        func close() {
            _ = SSL_shutdown(ssl)
            SSL_free(ssl)
        }

        // MARK: - Shared contexts

        /// One context per trust setting, made once (loading the system store is not free).
        private static let contexts = Locked<[TLSSettings: OpaquePointer]>([:])

        private static func context(for settings: TLSSettings) -> OpaquePointer? {
            contexts.withLock { contexts in
                if let existing = contexts[settings] { return existing }
                guard let context = SSL_CTX_new(TLS_client_method()) else { return nil }
                _ = keel_ssl_ctx_require_tls12(context)
                SSL_CTX_set_verify(context, SSL_VERIFY_PEER, nil)
                let loaded =
                    settings.trustedCertificatesFile.map { SSL_CTX_load_verify_locations(context, $0, nil) }
                    ?? SSL_CTX_set_default_verify_paths(context)
                guard loaded == 1 else {
                    SSL_CTX_free(context)
                    return nil
                }
                contexts[settings] = context
                return context
            }
        }

        private static func setReceiveTimeout(_ descriptor: Int32, until deadline: ContinuousClock.Instant) {
            let remaining = max(ContinuousClock.now.duration(to: deadline), .milliseconds(1))
            let (seconds, attoseconds) = remaining.components
            var value = timeval(tv_sec: Int(seconds), tv_usec: Int(attoseconds / 1_000_000_000_000))
            _ = setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &value, socklen_t(MemoryLayout<timeval>.size))
        }

        private static func lastError() -> String {
            let code = ERR_get_error()
            guard code != 0 else { return "the peer closed the connection" }
            var text = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(code, &text, text.count)
            return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
    }
#else
    /// TLS needs OpenSSL, which this platform's build does not link: use ``URLSessionTransport`` here.
    final class TLSSession {
        init(descriptor: Int32, host: String, settings: TLSSettings, deadline: ContinuousClock.Instant)
            throws(ClientSocket.Failure)
        {
            throw .tls("SocketTransport has no TLS on this platform; use URLSessionTransport")
        }

        func write(_ bytes: [UInt8], from offset: Int, socket: ClientSocket, deadline: ContinuousClock.Instant)
            throws(ClientSocket.Failure) -> Int
        { throw .tls("no TLS") }

        func read(into buffer: inout [UInt8], socket: ClientSocket, deadline: ContinuousClock.Instant)
            throws(ClientSocket.Failure) -> Int
        { throw .tls("no TLS") }

        func close() {}
    }
#endif
