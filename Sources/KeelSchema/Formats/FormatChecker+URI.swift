import Foundation

// MARK: - RFC 3986 uri / uri-reference, RFC 3987 iri / iri-reference

extension FormatChecker {
    /// Parses `value` as a URI reference (RFC 3986 §4.1) or, with `iri`, an IRI reference (RFC 3987 §2.2);
    /// `absolute` demands a scheme. Host names are checked syntactically only (`reg-name`), as the RFC does.
    static func isURIReference(_ value: String, iri: Bool, absolute: Bool) -> Bool {
        let scalars = Array(value.unicodeScalars)
        let fragmentStart = scalars.firstIndex(of: "#")
        let queryEnd = fragmentStart ?? scalars.count
        let queryStart = scalars[..<queryEnd].firstIndex(of: "?")
        let hierarchyEnd = queryStart ?? queryEnd
        var pathStart = 0
        let firstDelimiter = scalars[..<hierarchyEnd].firstIndex { $0 == ":" || $0 == "/" }
        if let firstDelimiter, scalars[firstDelimiter] == ":" {
            // A colon before any slash can only end a scheme: a relative reference may not have one in its
            // first segment (`path-noscheme`).
            guard isScheme(scalars[..<firstDelimiter]) else { return false }
            pathStart = firstDelimiter + 1
        } else if absolute {
            return false
        }
        var path = scalars[pathStart..<hierarchyEnd]
        if path.starts(with: ["/", "/"] as [Unicode.Scalar]) {
            let authorityEnd = path.dropFirst(2).firstIndex(of: "/") ?? hierarchyEnd
            guard isAuthority(scalars[(pathStart + 2)..<authorityEnd], iri: iri) else { return false }
            path = scalars[authorityEnd..<hierarchyEnd]
        }
        guard isComponent(path, iri: iri, extra: ":@/") else { return false }
        if let queryStart {
            guard isComponent(scalars[(queryStart + 1)..<queryEnd], iri: iri, extra: ":@/?", privateUse: iri) else {
                return false
            }
        }
        if let fragmentStart {
            guard isComponent(scalars[(fragmentStart + 1)...], iri: iri, extra: ":@/?") else { return false }
        }
        return true
    }

    /// `scheme = ALPHA *( ALPHA / DIGIT / "+" / "-" / "." )`.
    private static func isScheme(_ scheme: ArraySlice<Unicode.Scalar>) -> Bool {
        guard let first = scheme.first, isAlpha(first) else { return false }
        return scheme.allSatisfy { isAlpha($0) || isDigit($0) || $0 == "+" || $0 == "-" || $0 == "." }
    }

    /// `authority = [ userinfo "@" ] host [ ":" port ]` with an IP-literal, IPv4 or reg-name host.
    private static func isAuthority(_ authority: ArraySlice<Unicode.Scalar>, iri: Bool) -> Bool {
        var hostAndPort = authority
        if let at = authority.firstIndex(of: "@") {
            guard isComponent(authority[..<at], iri: iri, extra: ":") else { return false }
            hostAndPort = authority[(at + 1)...]
        }
        var port: ArraySlice<Unicode.Scalar> = []
        if hostAndPort.first == "[" {
            guard let close = hostAndPort.firstIndex(of: "]"),
                isIPLiteral(hostAndPort[(hostAndPort.startIndex + 1)..<close])
            else { return false }
            let rest = hostAndPort[(close + 1)...]
            if let colon = rest.first {
                guard colon == ":" else { return false }
                port = rest.dropFirst()
            }
        } else {
            let colon = hostAndPort.firstIndex(of: ":")
            guard isComponent(hostAndPort[..<(colon ?? hostAndPort.endIndex)], iri: iri, extra: "") else {
                return false
            }
            if let colon { port = hostAndPort[(colon + 1)...] }
        }
        return port.allSatisfy(isDigit)
    }

    /// `IP-literal = "[" ( IPv6address / IPvFuture ) "]"`, given the text between the brackets.
    private static func isIPLiteral(_ literal: ArraySlice<Unicode.Scalar>) -> Bool {
        guard literal.allSatisfy(\.isASCII) else { return false }
        if literal.first == "v" || literal.first == "V" {
            let body = literal.dropFirst()
            guard let dot = body.firstIndex(of: "."), dot > body.startIndex, body[..<dot].allSatisfy(isHex) else {
                return false
            }
            let tail = body[(dot + 1)...]
            return !tail.isEmpty && tail.allSatisfy { isUnreserved($0) || isSubDelimiter($0) || $0 == ":" }
        }
        return isIPv6(ArraySlice(literal.map { UInt8(truncatingIfNeeded: $0.value) }))
    }

    /// Whether every character is unreserved, a sub-delimiter, a percent-encoding, in `extra`, or (for IRIs)
    /// a `ucschar`, plus `iprivate` where `privateUse` allows it (the query).
    private static func isComponent(
        _ component: ArraySlice<Unicode.Scalar>, iri: Bool, extra: String, privateUse: Bool = false
    ) -> Bool {
        var index = component.startIndex
        while index < component.endIndex {
            let scalar = component[index]
            if scalar == "%" {
                guard index + 2 < component.endIndex, isHex(component[index + 1]), isHex(component[index + 2]) else {
                    return false
                }
                index += 3
                continue
            }
            guard
                isUnreserved(scalar) || isSubDelimiter(scalar) || extra.unicodeScalars.contains(scalar)
                    || (iri && isUCSChar(scalar)) || (privateUse && isPrivateUse(scalar))
            else { return false }
            index += 1
        }
        return true
    }

    /// `unreserved = ALPHA / DIGIT / "-" / "." / "_" / "~"`.
    static func isUnreserved(_ scalar: Unicode.Scalar) -> Bool {
        isAlpha(scalar) || isDigit(scalar) || scalar == "-" || scalar == "." || scalar == "_" || scalar == "~"
    }

    /// `sub-delims = "!" / "$" / "&" / "'" / "(" / ")" / "*" / "+" / "," / ";" / "="`.
    private static func isSubDelimiter(_ scalar: Unicode.Scalar) -> Bool {
        "!$&'()*+,;=".unicodeScalars.contains(scalar)
    }

    /// RFC 3987 `ucschar`: non-ASCII characters outside controls, surrogates, specials and non-characters.
    static func isUCSChar(_ scalar: Unicode.Scalar) -> Bool {
        let value = scalar.value
        switch value {
        case 0xA0...0xD7FF, 0xF900...0xFDCF, 0xFDF0...0xFFEF: return true
        case 0x10000...0xDFFFD: return value & 0xFFFF <= 0xFFFD
        case 0xE1000...0xEFFFD: return value & 0xFFFF <= 0xFFFD
        default: return false
        }
    }

    /// RFC 3987 `iprivate`: private-use characters, allowed only in queries.
    static func isPrivateUse(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0xE000...0xF8FF, 0xF0000...0xFFFFD, 0x100000...0x10FFFD: return true
        default: return false
        }
    }
}
