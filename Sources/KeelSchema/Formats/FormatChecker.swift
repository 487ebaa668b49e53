import Foundation
import KeelContract

/// Checks string formats of JSON Schema draft 2020-12 (RFC 3339, RFC 5321/5322 subset, RFC 4122, RFC 3986,
/// RFC 2673/4291, RFC 1123).
///
/// Every checker is a hand-written recogniser for the grammar the specification cites. None of them trims or
/// normalises its input: the vocabulary asserts on the exact string an instance holds, so a trailing newline
/// or a non-ASCII digit is a failure, not something to clean up.
///
/// Coverage notes:
/// - `hostname` accepts LDH labels (RFC 1123); a label starting with `xn--` must be a valid A-label, i.e.
///   decode as Punycode (RFC 3492), re-encode to itself and decode to a valid U-label.
/// - `idn-hostname` applies IDNA2008 (RFC 5890–5893). Foundation ships no IDNA tables, so the derived
///   property (RFC 5892 §2), the Bidi classes (RFC 5893) and the joining types used by the ZERO WIDTH
///   NON-JOINER rule are approximated from the Unicode properties the standard library exposes plus a few
///   script ranges. Unicode NFC is not enforced on U-labels.
/// - `regex` accepts ECMA-262 syntax (with the `u` flag's strictness): the pattern is first checked for
///   constructs ECMA-262 lacks (such as `(?i)` or `\a`), then translated to ICU syntax and compiled with
///   `NSRegularExpression`, which catches unbalanced groups, bad quantifiers and unknown back-references.
enum FormatChecker {
    /// The format names ``check(_:_:)`` recognises; any other name is an unknown format.
    static let supportedFormats: Set<String> = [
        "date-time", "date", "time", "duration", "email", "idn-email", "hostname", "idn-hostname", "ipv4", "ipv6",
        "uuid", "uri", "uri-reference", "iri", "iri-reference", "uri-template", "json-pointer",
        "relative-json-pointer", "regex", "int32", "int64",
    ]

    /// For numbers: `nil` when `format` says nothing of numbers, otherwise whether `number` conforms. The
    /// OpenAPI formats `int32` and `int64` (found in an outside audit: not checked, so a validated payload
    /// held an int32 member its generated `Int32` could not decode).
    static func check(_ format: String, _ number: JSONNumber) -> Bool? {
        switch format {
        case "int32": return number.exactInteger(Int32.self) != nil
        case "int64": return number.int64 != nil
        default: return nil
        }
    }

    /// `nil` when `format` is unknown (unknown formats always pass), otherwise whether `value` conforms.
    static func check(_ format: String, _ value: String) -> Bool? {
        switch format {
        case "date-time": return isDateTime(value)
        case "date": return isDate(value)
        case "time": return isTime(value)
        case "duration": return isDuration(value)
        case "email": return isEmail(value, international: false)
        case "idn-email": return isEmail(value, international: true)
        case "hostname": return isHostname(value)
        case "idn-hostname": return isIDNHostname(value)
        case "ipv4": return isIPv4(Array(value.utf8)[...])
        case "ipv6": return isIPv6(Array(value.utf8)[...])
        case "uuid": return isUUID(value)
        case "uri": return isURIReference(value, iri: false, absolute: true)
        case "uri-reference": return isURIReference(value, iri: false, absolute: false)
        case "iri": return isURIReference(value, iri: true, absolute: true)
        case "iri-reference": return isURIReference(value, iri: true, absolute: false)
        case "uri-template": return isURITemplate(value)
        case "json-pointer": return isJSONPointer(Array(value.unicodeScalars)[...])
        case "relative-json-pointer": return isRelativeJSONPointer(value)
        case "regex": return isRegex(value)
        default: return nil
        }
    }
}

// MARK: - ASCII helpers

extension FormatChecker {
    /// Whether `byte` is an ASCII digit; non-ASCII digits (Bengali, full-width, ...) never count.
    static func isDigit(_ byte: UInt8) -> Bool { byte >= 0x30 && byte <= 0x39 }

    /// Whether `byte` is an ASCII hexadecimal digit of either case.
    static func isHex(_ byte: UInt8) -> Bool {
        isDigit(byte) || (byte >= 0x41 && byte <= 0x46) || (byte >= 0x61 && byte <= 0x66)
    }

    /// Whether `scalar` is an ASCII hexadecimal digit of either case.
    static func isHex(_ scalar: Unicode.Scalar) -> Bool {
        scalar.isASCII && isHex(UInt8(scalar.value))
    }

    /// Whether `scalar` is an ASCII digit.
    static func isDigit(_ scalar: Unicode.Scalar) -> Bool {
        scalar.isASCII && isDigit(UInt8(scalar.value))
    }

    /// Whether `scalar` is an ASCII letter.
    static func isAlpha(_ scalar: Unicode.Scalar) -> Bool {
        ("a"..."z").contains(scalar) || ("A"..."Z").contains(scalar)
    }

    /// The decimal value of `count` ASCII digits at `start`, or `nil` when out of bounds or not digits.
    static func number(_ bytes: [UInt8], _ start: Int, _ count: Int) -> Int? {
        guard start >= 0, start + count <= bytes.count else { return nil }
        var value = 0
        for byte in bytes[start..<(start + count)] {
            guard isDigit(byte) else { return nil }
            value = value * 10 + Int(byte - 0x30)
        }
        return value
    }
}
