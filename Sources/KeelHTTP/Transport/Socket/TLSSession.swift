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
    /// One TLS session over a connected non-blocking socket; every wait goes through the socket's
    /// deadline- and cancellation-aware `wait`.
    final class TLSSession {
        private let ssl: OpaquePointer
        private unowned let socket: ClientSocket

        /// Performs the handshake, verifying the chain and that the certificate names `host` (a DNS name,
        /// or an IPv4/IPv6 address checked against the certificate's IP entries).
        init(socket: ClientSocket, host: String, settings: TLSSettings, deadline: ContinuousClock.Instant)
            throws(ClientSocket.Failure)
        {
            guard let context = Self.context(for: settings) else {
                throw .tls(
                    "cannot load trusted certificates" + (settings.trustedCertificatesFile.map { " from \($0)" } ?? ""))
            }
            guard let ssl = SSL_new(context) else { throw .tls("cannot create a TLS session") }
            self.ssl = ssl
            self.socket = socket
            do throws(ClientSocket.Failure) {
                guard SSL_set_fd(ssl, socket.fileDescriptor) == 1 else { throw .tls("cannot attach TLS to the socket") }
                // An address must match an IP entry, a name a DNS entry; a failure to set either up would
                // leave the session checking only the chain, so it is refused instead.
                if Self.isAddress(host) {
                    guard X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host) == 1 else {
                        throw .tls("cannot verify the address \(host)")
                    }
                } else {
                    guard keel_ssl_set_server_name(ssl, host) == 1, SSL_set1_host(ssl, host) == 1 else {
                        throw .tls("cannot verify the host name \(host)")
                    }
                }
                while true {
                    ERR_clear_error()
                    let result = SSL_connect(ssl)
                    if result == 1 { break }
                    switch SSL_get_error(ssl, result) {
                    case SSL_ERROR_WANT_READ:
                        try socket.wait(for: Int16(POLLIN), deadline: deadline, timeout: .connectTimedOut)
                    case SSL_ERROR_WANT_WRITE:
                        try socket.wait(for: Int16(POLLOUT), deadline: deadline, timeout: .connectTimedOut)
                    default:
                        let verify = SSL_get_verify_result(ssl)
                        throw .tls(
                            verify != Int(X509_V_OK)
                                ? String(cString: X509_verify_cert_error_string(verify)) : Self.lastError())
                    }
                }
            } catch {
                SSL_free(ssl)
                throw error
            }
        }

        /// Writes from `offset`; returns how many bytes were written.
        func write(_ bytes: [UInt8], from offset: Int, deadline: ContinuousClock.Instant)
            throws(ClientSocket.Failure) -> Int
        {
            while true {
                ERR_clear_error()
                let chunk = Int32(min(bytes.count - offset, 1 << 20))
                let written = bytes.withUnsafeBytes { SSL_write(ssl, $0.baseAddress! + offset, chunk) }
                if written > 0 { return Int(written) }
                switch SSL_get_error(ssl, written) {
                case SSL_ERROR_WANT_WRITE: try socket.wait(for: Int16(POLLOUT), deadline: deadline, timeout: .timedOut)
                case SSL_ERROR_WANT_READ: try socket.wait(for: Int16(POLLIN), deadline: deadline, timeout: .timedOut)
                default: throw .broken("TLS write failed: \(Self.lastError())")
                }
            }
        }

        /// Reads decrypted bytes; 0 only for a clean end (the peer's close_notify). A stream cut without
        /// it is broken, never a short but complete body.
        func read(into buffer: inout [UInt8], deadline: ContinuousClock.Instant) throws(ClientSocket.Failure) -> Int {
            while true {
                ERR_clear_error()
                let count = buffer.withUnsafeMutableBytes { SSL_read(ssl, $0.baseAddress, Int32($0.count)) }
                if count > 0 { return Int(count) }
                switch SSL_get_error(ssl, count) {
                case SSL_ERROR_ZERO_RETURN: return 0
                case SSL_ERROR_WANT_READ: try socket.wait(for: Int16(POLLIN), deadline: deadline, timeout: .timedOut)
                case SSL_ERROR_WANT_WRITE: try socket.wait(for: Int16(POLLOUT), deadline: deadline, timeout: .timedOut)
                default: throw .broken("TLS read failed: \(Self.lastError())")
                }
            }
        }

        /// Ends the session: sends close_notify first when `notifyingPeer` (a healthy connection), then
        /// frees it. Never waits for the peer's answer.
        func close(notifyingPeer: Bool) {
            if notifyingPeer {
                ERR_clear_error()
                _ = SSL_shutdown(ssl)
            }
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

        /// Whether `host` is an IPv4 or IPv6 address in the form inet_pton accepts (`127.1` is not: it is
        /// then checked as a name, which no certificate's IP entry can satisfy).
        private static func isAddress(_ host: String) -> Bool {
            var address = in6_addr()
            return inet_pton(AF_INET, host, &address) == 1 || inet_pton(AF_INET6, host, &address) == 1
        }

        private static func lastError() -> String {
            let code = ERR_get_error()
            guard code != 0 else { return "the connection was cut without a TLS close" }
            var text = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(code, &text, text.count)
            return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
    }
#else
    /// TLS needs OpenSSL, which this platform's build does not link: use ``URLSessionTransport`` here.
    final class TLSSession {
        init(socket: ClientSocket, host: String, settings: TLSSettings, deadline: ContinuousClock.Instant)
            throws(ClientSocket.Failure)
        {
            throw .tls("SocketTransport has no TLS on this platform; use URLSessionTransport")
        }

        func write(_ bytes: [UInt8], from offset: Int, deadline: ContinuousClock.Instant)
            throws(ClientSocket.Failure) -> Int
        { throw .broken("no TLS") }

        func read(into buffer: inout [UInt8], deadline: ContinuousClock.Instant) throws(ClientSocket.Failure) -> Int {
            throw .broken("no TLS")
        }

        func close(notifyingPeer: Bool) {}
    }
#endif
