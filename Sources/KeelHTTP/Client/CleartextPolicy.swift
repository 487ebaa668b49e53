#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif
import Foundation

/// Whether a request may go out over cleartext `http`: only to this device (loopback), unless the app opts in
/// with ``HTTPClient/Configuration/allowsCleartextHTTP`` — what App Transport Security enforces on Apple
/// platforms, for every platform and transport (``SocketTransport`` on Linux would otherwise send an
/// `Authorization` header a middleware added in the clear to any host; found in an outside security audit).
enum CleartextPolicy {
    /// Why a request to `url` is not sent, or nil when it may be: `https`, a loopback host, or `allowed`.
    static func refusal(for url: URL, allowed: Bool) -> String? {
        guard !allowed, url.scheme?.lowercased() == "http" else { return nil }
        // The host as written: a percent-escaped `localhost` is not taken for one.
        let host = URLComponents(url: url, resolvingAgainstBaseURL: true)?.percentEncodedHost ?? ""
        if isLoopback(host: host) { return nil }
        return
            "cleartext http to \(host.isEmpty ? "a URL without a host" : host), which is not this device (loopback): nothing was sent, so that no header (a bearer token) crosses the network unencrypted; use https, or set HTTPClient.Configuration.allowsCleartextHTTP for a development server"
    }

    /// Whether `host` (as a URL writes it, an IPv6 address in brackets or not) is this device: `localhost` in
    /// any case, an IPv4 address in 127.0.0.0/8 in its strict dotted-decimal form, or `::1` (also as
    /// `::ffff:127.x.y.z`). Anything else is not — `127.1`, `0177.0.0.1` (octal to some resolvers), a
    /// trailing dot, a zone id, a percent escape — whatever a resolver would make of it: refusing costs a
    /// developer an explicit address, taking a name for loopback could cost a token.
    package static func isLoopback(host: String) -> Bool {
        if host.lowercased() == "localhost" { return true }
        if let octets = ipv4(host) { return octets[0] == 127 }
        var address = host
        if address.hasPrefix("[") && address.hasSuffix("]") { address = String(address.dropFirst().dropLast()) }
        guard address.contains(":") else { return false }
        var bytes = in6_addr()
        guard inet_pton(AF_INET6, address, &bytes) == 1 else { return false }
        let octets = withUnsafeBytes(of: &bytes) { Array($0) }
        let loopback: [UInt8] = Array(repeating: 0, count: 15) + [1]
        let mappedPrefix: [UInt8] = Array(repeating: 0, count: 10) + [0xFF, 0xFF]
        return octets == loopback || (Array(octets.prefix(12)) == mappedPrefix && octets[12] == 127)
    }

    /// The four octets of `text` when it is an IPv4 address in strict dotted-decimal form (four decimal
    /// numbers of 0–255, no leading zeros), else nil.
    private static func ipv4(_ text: String) -> [Int]? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4 else { return nil }
        var octets: [Int] = []
        for part in parts {
            guard (1...3).contains(part.count), part.utf8.allSatisfy({ (48...57).contains($0) }),
                part.count == 1 || part.first != "0", let value = Int(part), value <= 255
            else { return nil }
            octets.append(value)
        }
        return octets
    }
}
