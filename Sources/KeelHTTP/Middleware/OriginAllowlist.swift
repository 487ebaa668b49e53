public import Foundation
public import KeelCore

/// A closed set of origins (scheme, host, port), for headers that must reach only the app's own backends
/// (`Authorization`, trace context).
///
/// Matching is exact and deliberately unforgiving:
/// - hosts compare ASCII case-insensitively and otherwise byte for byte: `api.example.com.evil.net`
///   and `evil.net` with a path of `/api.example.com` are other hosts, and the fully qualified
///   `api.example.com.` (trailing dot) is not `api.example.com` — a request to it gets no header;
/// - the port is the effective one (`https` without a port is 443), so `https://h` and `https://h:8443`
///   are different origins;
/// - user information in a URL (`https://api.example.com@evil.net`) is not part of the host, as URL
///   parsing says; only the real host counts.
///
/// ```swift
/// let api = try OriginAllowlist(["https://api.example.com", "https://uploads.example.com:8443"])
/// api.contains(URL(string: "https://API.example.com/v1/notes")!)   // true
/// ```
public struct OriginAllowlist: Sendable, Hashable {
    /// One origin: scheme and host lower-cased, port made explicit.
    public struct Origin: Sendable, Hashable, CustomStringConvertible {
        /// `http` or `https`.
        public let scheme: String
        /// The host, lower-cased.
        public let host: String
        /// The effective port.
        public let port: Int

        /// The origin of `url`; nil when it has no scheme or host, or a scheme other than http(s).
        public init?(_ url: URL) {
            guard let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
                let host = url.host, !host.isEmpty
            else { return nil }
            self.scheme = scheme
            self.host = host.lowercased()
            self.port = url.port ?? (scheme == "https" ? 443 : 80)
        }

        /// The origin as `scheme://host:port`, with the port always written.
        public var description: String { "\(scheme)://\(host):\(port)" }
    }

    /// The origins.
    public let origins: Set<Origin>

    /// The origins of `urls` (paths are ignored).
    ///
    /// - Throws: ``OriginAllowlistError`` naming the first entry that is not an http(s) URL with a host.
    public init(_ urls: [String]) throws(OriginAllowlistError) {
        var origins: Set<Origin> = []
        for text in urls {
            guard let url = URL(string: text), let origin = Origin(url) else {
                throw OriginAllowlistError(code: .notAnOrigin, entry: text)
            }
            origins.insert(origin)
        }
        self.origins = origins
    }

    /// The origins of `urls`.
    public init(_ urls: [URL]) {
        origins = Set(urls.compactMap(Origin.init))
    }

    /// Whether `url`'s origin is in the list.
    public func contains(_ url: URL) -> Bool {
        Origin(url).map(origins.contains) ?? false
    }
}

/// An allowlist entry that is not an origin.
public struct OriginAllowlistError: KeelError, Equatable {
    /// Codes of ``OriginAllowlistError``.
    public typealias Code = ErrorCode<OriginAllowlistError>

    /// What is wrong.
    public let code: Code
    /// The entry as given.
    public let entry: String

    /// A developer-facing explanation quoting the rejected entry.
    public var description: String { "\(entry.debugDescription) is not an http(s) URL with a host" }
}

extension ErrorCode where Domain == OriginAllowlistError {
    /// Not an http(s) URL with a host.
    public static var notAnOrigin: Self { Self("notAnOrigin") }
}
