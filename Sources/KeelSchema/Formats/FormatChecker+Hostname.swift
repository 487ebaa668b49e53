import Foundation

// MARK: - RFC 1123 hostname, RFC 5890 idn-hostname

extension FormatChecker {
    /// An ASCII host name: dot-separated LDH labels of 1–63 octets, at most 253 octets, no trailing dot;
    /// `xn--` labels must be valid A-labels.
    static func isHostname(_ value: String) -> Bool {
        let scalars = Array(value.unicodeScalars)
        guard !scalars.isEmpty, scalars.count <= 253, scalars.allSatisfy(\.isASCII) else { return false }
        var labels: [[Unicode.Scalar]] = []
        for raw in scalars.split(separator: ".", omittingEmptySubsequences: false) {
            guard let label = IDNA.unicodeFormOfLDHLabel(raw) else { return false }
            labels.append(label)
        }
        return IDNA.satisfiesBidiRule(labels)
    }

    /// An internationalised host name: labels are LDH labels, A-labels or U-labels, separated by any of the
    /// four full stops IDNA2003 recognised (RFC 3490 §3.1); length limits apply to the A-label form.
    static func isIDNHostname(_ value: String) -> Bool {
        // An A-label is never shorter than its U-label (every code point gives at least one character), so
        // what is too long as written is too long encoded: refused before the label checks and Punycode,
        // which take time quadratic in a label's length (a 8,000-character label took 17 s).
        guard value.unicodeScalars.count <= 253 else { return false }
        let scalars = Array(value.unicodeScalars)
        let rawLabels = scalars.split(omittingEmptySubsequences: false) { scalar in
            scalar == "." || scalar == "\u{3002}" || scalar == "\u{FF0E}" || scalar == "\u{FF61}"
        }
        var asciiLength = rawLabels.count - 1
        var labels: [[Unicode.Scalar]] = []
        for raw in rawLabels {
            if raw.allSatisfy(\.isASCII) {
                guard let label = IDNA.unicodeFormOfLDHLabel(raw) else { return false }
                asciiLength += raw.count
                labels.append(label)
            } else {
                guard raw.count <= 59 else { return false }  // "xn--" and at least as many characters
                let label = raw.map(IDNA.asciiLowercased)
                guard IDNA.isValidULabel(label), let encoded = Punycode.encode(label), encoded.count + 4 <= 63 else {
                    return false
                }
                asciiLength += encoded.count + 4
                labels.append(label)
            }
        }
        return asciiLength <= 253 && IDNA.satisfiesBidiRule(labels)
    }
}

/// IDNA2008 label rules (RFC 5891 §5.4, RFC 5892, RFC 5893), approximated where Unicode tables are missing.
