/// A URI reference split per RFC 3986 §3, with reference resolution (§5.2) and dot-segment removal.
///
/// Foundation's `URL` normalizes too eagerly and does not resolve against URNs the way JSON Schema
/// needs (`urn:uuid:…#foo`), so schema identifiers use this small, exact implementation.
struct URIReference: Hashable, CustomStringConvertible {
    var scheme: String?
    var authority: String?
    var path: String
    var query: String?
    var fragment: String?

    /// Splits `text` into its five components (RFC 3986 appendix B).
    init(_ text: String) {
        var rest = Substring(text)
        if let hash = rest.firstIndex(of: "#") {
            fragment = String(rest[rest.index(after: hash)...])
            rest = rest[..<hash]
        }
        if let question = rest.firstIndex(of: "?") {
            query = String(rest[rest.index(after: question)...])
            rest = rest[..<question]
        }
        if let colon = rest.firstIndex(of: ":"), !rest[..<colon].contains("/"), !rest[..<colon].isEmpty,
            rest[..<colon].first!.isLetter
        {
            scheme = String(rest[..<colon]).lowercased()
            rest = rest[rest.index(after: colon)...]
        }
        if rest.hasPrefix("//") {
            rest = rest.dropFirst(2)
            let end = rest.firstIndex(of: "/") ?? rest.endIndex
            authority = String(rest[..<end])
            rest = rest[end...]
        }
        path = String(rest)
    }

    private init(scheme: String?, authority: String?, path: String, query: String?, fragment: String?) {
        self.scheme = scheme
        self.authority = authority
        self.path = path
        self.query = query
        self.fragment = fragment
    }

    var isAbsolute: Bool { scheme != nil }

    /// This reference without its fragment (an empty fragment counts as none).
    var withoutFragment: URIReference {
        var copy = self
        copy.fragment = nil
        return copy
    }

    /// Resolves `reference` against this (absolute) base, RFC 3986 §5.2.2.
    func resolving(_ reference: String) -> URIReference {
        let r = URIReference(reference)
        if r.scheme != nil {
            return URIReference(
                scheme: r.scheme, authority: r.authority, path: Self.removeDotSegments(r.path), query: r.query,
                fragment: r.fragment)
        }
        if r.authority != nil {
            return URIReference(
                scheme: scheme, authority: r.authority, path: Self.removeDotSegments(r.path), query: r.query,
                fragment: r.fragment)
        }
        if r.path.isEmpty {
            return URIReference(
                scheme: scheme, authority: authority, path: path, query: r.query ?? query, fragment: r.fragment)
        }
        if r.path.hasPrefix("/") {
            return URIReference(
                scheme: scheme, authority: authority, path: Self.removeDotSegments(r.path), query: r.query,
                fragment: r.fragment)
        }
        let merged: String
        if authority != nil && path.isEmpty {
            merged = "/" + r.path
        } else if let slash = path.lastIndex(of: "/") {
            merged = path[...slash] + r.path
        } else {
            merged = r.path
        }
        return URIReference(
            scheme: scheme, authority: authority, path: Self.removeDotSegments(merged), query: r.query,
            fragment: r.fragment)
    }

    /// RFC 3986 §5.2.4.
    static func removeDotSegments(_ path: String) -> String {
        guard path.contains(".") else { return path }
        var input = Substring(path)
        var output: [Substring] = []
        var result = ""
        while !input.isEmpty {
            if input.hasPrefix("../") {
                input = input.dropFirst(3)
            } else if input.hasPrefix("./") {
                input = input.dropFirst(2)
            } else if input.hasPrefix("/./") {
                input = input.dropFirst(2)
            } else if input == "/." {
                input = "/"
            } else if input.hasPrefix("/../") {
                input = input.dropFirst(3)
                if !output.isEmpty { output.removeLast() }
            } else if input == "/.." {
                input = "/"
                if !output.isEmpty { output.removeLast() }
            } else if input == "." || input == ".." {
                input = ""
            } else {
                let start = input.startIndex
                var end = input.index(after: start)
                while end < input.endIndex, input[end] != "/" { end = input.index(after: end) }
                output.append(input[start..<end])
                input = input[end...]
            }
        }
        result = output.joined()
        return result
    }

    var description: String {
        var text = ""
        if let scheme { text += scheme + ":" }
        if let authority { text += "//" + authority }
        text += path
        if let query { text += "?" + query }
        if let fragment, !fragment.isEmpty { text += "#" + fragment }
        return text
    }
}
