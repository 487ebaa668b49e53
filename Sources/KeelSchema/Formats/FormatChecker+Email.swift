import Foundation

// MARK: - RFC 5321 email, RFC 6531 idn-email

extension FormatChecker {
    /// An RFC 5321 `Mailbox`: a dot-atom or quoted-string local part of at most 64 octets, `@`, then a host
    /// name or an address literal (`[192.0.2.1]`, `[IPv6:2001:db8::1]`). The international form (RFC 6531)
    /// also admits any non-ASCII character in the local part and an IDN host name.
    static func isEmail(_ value: String, international: Bool) -> Bool {
        let scalars = Array(value.unicodeScalars)
        guard let at = localPartEnd(scalars, international: international) else { return false }
        guard scalars[..<at].reduce(0, { $0 + UTF8.width($1) }) <= 64 else { return false }
        let domain = scalars[(at + 1)...]
        if domain.first == "[" {
            guard domain.count > 2, domain.last == "]", domain.allSatisfy(\.isASCII) else { return false }
            let literal = Array(String(String.UnicodeScalarView(domain.dropFirst().dropLast())).utf8)
            if literal.count > 5, String(decoding: literal[..<5], as: UTF8.self).lowercased() == "ipv6:" {
                return isIPv6(literal[5...])
            }
            return isIPv4(literal[...])
        }
        let host = String(String.UnicodeScalarView(domain))
        return international ? isIDNHostname(host) : isHostname(host)
    }

    /// The index of the `@` that ends a valid local part, or `nil` when the local part is malformed.
    private static func localPartEnd(_ scalars: [Unicode.Scalar], international: Bool) -> Int? {
        let isExtra = { (scalar: Unicode.Scalar) in international && !scalar.isASCII }
        if scalars.first == "\"" {
            var index = 1
            while index < scalars.count {
                let scalar = scalars[index]
                switch scalar.value {
                case 0x22:
                    return index + 1 < scalars.count && scalars[index + 1] == "@" ? index + 1 : nil
                case 0x5C:
                    guard index + 1 < scalars.count else { return nil }
                    let escaped = scalars[index + 1]
                    guard (0x20...0x7E).contains(escaped.value) || isExtra(escaped) else { return nil }
                    index += 2
                case 0x20, 0x21, 0x23...0x5B, 0x5D...0x7E:
                    index += 1
                default:
                    guard isExtra(scalar) else { return nil }
                    index += 1
                }
            }
            return nil
        }
        guard let at = scalars.firstIndex(of: "@"), at > 0 else { return nil }
        let atext = "!#$%&'*+-/=?^_`{|}~".unicodeScalars
        for atom in scalars[..<at].split(separator: ".", omittingEmptySubsequences: false) {
            guard !atom.isEmpty else { return nil }
            let isValidAtom = atom.allSatisfy { scalar in
                isAlpha(scalar) || isDigit(scalar) || atext.contains(scalar) || isExtra(scalar)
            }
            guard isValidAtom else { return nil }
        }
        return at
    }
}
