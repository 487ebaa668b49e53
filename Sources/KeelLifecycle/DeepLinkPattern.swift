import Foundation

/// A deep-link pattern such as `keel-notes://note/{noteID}`: a scheme, then `/`-separated segments (the
/// first is the host), each either literal or a `{parameter}` placeholder standing for a whole segment.
/// Scheme and host match case-insensitively, path segments exactly once percent-decoded (`n%65w` is `new`;
/// a `%2F` decodes within its segment, never into a separator); a query (`?a=b`) may supply parameters the
/// path does not. A placeholder's value is percent-decoded and must stay one segment: a value that decodes to
/// a `/`, to `.` or `..`, or to control characters does not match.
public struct DeepLinkPattern: Sendable, Hashable, CustomStringConvertible {
    enum Segment: Sendable, Hashable {
        case literal(String)
        case parameter(String)
    }

    let scheme: String
    let segments: [Segment]

    /// The pattern as written.
    public let description: String

    /// Parses `pattern`; nil when it has no `scheme://`, an empty segment, or a malformed placeholder.
    public init?(_ pattern: String) {
        guard let separator = pattern.range(of: "://") else { return nil }
        let scheme = pattern[..<separator.lowerBound]
        guard !scheme.isEmpty, scheme.allSatisfy({ $0.isLetter || $0.isNumber || "+-.".contains($0) }) else {
            return nil
        }
        var segments: [Segment] = []
        for raw in pattern[separator.upperBound...].split(separator: "/", omittingEmptySubsequences: false) {
            if raw.hasPrefix("{") || raw.hasSuffix("}") || raw.contains("{") || raw.contains("}") {
                guard raw.hasPrefix("{"), raw.hasSuffix("}"), raw.count > 2 else { return nil }
                let name = raw.dropFirst().dropLast()
                guard name.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" }) else { return nil }
                segments.append(.parameter(String(name)))
            } else {
                guard !raw.isEmpty else { return nil }
                // A path literal is kept decoded, as URLs are compared (the host is compared as written).
                let text = segments.isEmpty ? String(raw) : String(raw).removingPercentEncoding ?? String(raw)
                segments.append(.literal(text))
            }
        }
        guard case .literal = segments.first else { return nil }  // a host, never a placeholder
        self.scheme = scheme.lowercased()
        self.segments = segments
        description = pattern
    }

    /// The placeholders' names, in order.
    public var parameterNames: [String] {
        segments.compactMap {
            if case .parameter(let name) = $0 { return name }
            return nil
        }
    }

    /// The shape two patterns collide on: scheme and host lowercased, placeholders unnamed.
    var shape: String {
        scheme + "://"
            + segments.enumerated().map { index, segment in
                switch segment {
                case .literal(let text): return index == 0 ? text.lowercased() : text
                case .parameter: return "{}"
                }
            }.joined(separator: "/")
    }

    /// Whether this pattern is more specific than `other` for a URL both match: at the first segment where
    /// they differ, this one has a literal and `other` a placeholder (`app://notes/new` is more specific than
    /// `app://notes/{id}`).
    func isMoreSpecific(than other: DeepLinkPattern) -> Bool {
        for (mine, theirs) in zip(segments, other.segments) {
            switch (mine, theirs) {
            case (.literal, .parameter): return true
            case (.parameter, .literal): return false
            default: continue
            }
        }
        return false
    }

    /// Whether a decoded parameter value is one whole segment: never empty, a path (`%2F`), a dot segment, or
    /// control characters (`%00`, a line break) that an app building a path or a log line from it would act
    /// on. A placeholder's value must be; so must a query item's that becomes a route parameter
    /// (`Navigator`), while other query items (a tracking id, a return URL) are not the route's business.
    public static func isOneSegment(_ value: String) -> Bool {
        // Controls are C0, DEL and C1 (U+0085 is a line break too), and the line and paragraph separators
        // (found in an outside audit: U+0085 and U+2028 passed).
        !value.isEmpty && value != "." && value != ".."
            && !value.unicodeScalars.contains(where: {
                $0 == "/" || $0.value < 0x20 || (0x7F...0x9F).contains($0.value) || $0.value == 0x2028
                    || $0.value == 0x2029
            })
    }

    /// The parameters `url` carries when it matches, or nil when it does not match: the placeholders' values
    /// (each one segment, ``isOneSegment(_:)``) and the query's items (decoded, not checked).
    public func match(_ url: String) -> [String: String]? {
        guard let separator = url.range(of: "://"), url[..<separator.lowerBound].lowercased() == scheme else {
            return nil
        }
        var rest = Substring(url[separator.upperBound...])
        if let fragment = rest.firstIndex(of: "#") { rest = rest[..<fragment] }
        var query: Substring = ""
        if let mark = rest.firstIndex(of: "?") {
            query = rest[rest.index(after: mark)...]
            rest = rest[..<mark]
        }
        if rest.hasSuffix("/") { rest = rest.dropLast() }
        let parts = rest.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == segments.count else { return nil }
        var values: [String: String] = [:]
        for (index, (part, segment)) in zip(parts, segments).enumerated() {
            switch segment {
            case .literal(let text):
                // A path segment is compared decoded, as a placeholder's value is (found in an outside audit:
                // `n%65w` went to `{id}` instead of the literal `new`); it stays one segment whatever it decodes to.
                guard index == 0 ? part.lowercased() == text.lowercased() : String(part).removingPercentEncoding == text
                else { return nil }
            case .parameter(let name):
                // One whole segment, decoded: never a path (`%2F`), a dot segment, or control characters
                // (`%00`, a line break) that an app building a path or a log line from it would act on.
                guard let value = String(part).removingPercentEncoding, Self.isOneSegment(value) else { return nil }
                values[name] = value
            }
        }
        // The first of each name (placeholders come first).
        for (name, value) in Self.queryItems(query) where values[name] == nil { values[name] = value }
        return values
    }

    /// The query's items, decoded, in order (a name may come more than once).
    static func queryItems(_ query: Substring) -> [(name: String, value: String)] {
        query.split(separator: "&").compactMap { pair in
            let item = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard item.count == 2, let name = String(item[0]).removingPercentEncoding,
                let value = String(item[1]).removingPercentEncoding
            else { return nil }
            return (name, value)
        }
    }

    /// The names `url`'s query gives twice with different values: a route parameter among them says nothing
    /// certain (found in an outside audit: the first was taken, where `open` refuses a parameter given
    /// twice). Other query items (tracking ids) are not the route's business.
    public static func ambiguousQueryItems(_ url: String) -> Set<String> {
        // Read as `match(_:)` reads it: the fragment first cut off, then the query after the first `?`.
        let link = url.firstIndex(of: "#").map { url[..<$0] } ?? url[...]
        guard let mark = link.firstIndex(of: "?") else { return [] }
        let query = link[link.index(after: mark)...]
        var first: [String: String] = [:]
        var ambiguous: Set<String> = []
        for (name, value) in queryItems(query) {
            if let earlier = first[name] {
                if earlier != value { ambiguous.insert(name) }
            } else {
                first[name] = value
            }
        }
        return ambiguous
    }
}
