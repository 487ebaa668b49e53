public import KeelCore
/// The version of the API contract an app is built against (the contract's `info.version`), sent on
/// every call so the backend knows which contract the client speaks (MOB-API-001).
///
/// Semantic versioning 2.0.0: `MAJOR.MINOR.PATCH`, optional `-prerelease` and `+build`. Ordering follows
/// SemVer precedence (build metadata is ignored; a prerelease sorts before its release).
public struct ContractVersion: Sendable, Hashable, Comparable, CustomStringConvertible, Codable {
    /// The header that carries the version when the contract does not name one.
    public static let defaultHeaderName = "API-Version"

    /// Incompatible changes.
    public let major: Int
    /// Backwards-compatible additions.
    public let minor: Int
    /// Backwards-compatible fixes.
    public let patch: Int
    /// Dot-separated prerelease identifiers (`["beta", "2"]` for `-beta.2`).
    public let prerelease: [String]
    /// Dot-separated build identifiers; ignored for ordering and equality of precedence.
    public let build: [String]
    /// The header name the contract declares for it.
    public let headerName: String

    /// Parses `text` as a semantic version.
    ///
    /// - Throws: ``ContractVersionError`` naming what is wrong.
    public init(_ text: String, headerName: String = ContractVersion.defaultHeaderName) throws(ContractVersionError) {
        func fail(_ reason: String) -> ContractVersionError {
            ContractVersionError(code: .notSemanticVersion, text: text, reason: reason)
        }
        guard !headerName.isEmpty, headerName.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: ":") })
        else {
            throw ContractVersionError(
                code: .invalidHeaderName, text: headerName, reason: "not a valid HTTP header name")
        }
        var rest = Substring(text)
        var build: [String] = []
        if let plus = rest.firstIndex(of: "+") {
            build = rest[rest.index(after: plus)...].split(separator: ".", omittingEmptySubsequences: false).map(
                String.init)
            rest = rest[..<plus]
            guard build.allSatisfy({ !$0.isEmpty && $0.allSatisfy(Self.isIdentifierCharacter) }) else {
                throw fail("build metadata must be dot-separated [0-9A-Za-z-] identifiers")
            }
        }
        var prerelease: [String] = []
        if let dash = rest.firstIndex(of: "-") {
            prerelease = rest[rest.index(after: dash)...].split(separator: ".", omittingEmptySubsequences: false).map(
                String.init)
            rest = rest[..<dash]
            for identifier in prerelease {
                guard !identifier.isEmpty, identifier.allSatisfy(Self.isIdentifierCharacter) else {
                    throw fail("prerelease must be dot-separated [0-9A-Za-z-] identifiers")
                }
                if identifier.allSatisfy(\.isASCIIDigit), identifier.count > 1, identifier.first == "0" {
                    throw fail("numeric prerelease identifier \(identifier) has a leading zero")
                }
            }
        }
        let core = rest.split(separator: ".", omittingEmptySubsequences: false)
        guard core.count == 3 else { throw fail("expected MAJOR.MINOR.PATCH") }
        var numbers: [Int] = []
        for part in core {
            guard !part.isEmpty, part.allSatisfy(\.isASCIIDigit) else {
                throw fail("\(part.debugDescription) is not a number")
            }
            guard part.count == 1 || part.first != "0" else { throw fail("\(part) has a leading zero") }
            guard let number = Int(part) else { throw fail("\(part) is too large") }
            numbers.append(number)
        }
        (major, minor, patch) = (numbers[0], numbers[1], numbers[2])
        self.prerelease = prerelease
        self.build = build
        self.headerName = headerName
    }

    /// The version as text: `MAJOR.MINOR.PATCH`, then `-prerelease` and `+build` when present.
    public var description: String {
        var text = "\(major).\(minor).\(patch)"
        if !prerelease.isEmpty { text += "-" + prerelease.joined(separator: ".") }
        if !build.isEmpty { text += "+" + build.joined(separator: ".") }
        return text
    }

    /// The header to send on every call: (``headerName``, the version text).
    public var header: (name: String, value: String) { (headerName, description) }

    /// Whether a client built for `self` can expect `other` to be compatible under SemVer (same major,
    /// not older). Major version 0 is unstable: only the same minor counts.
    public func isCompatible(with other: ContractVersion) -> Bool {
        guard major == other.major, other >= self else { return false }
        return major != 0 || minor == other.minor
    }

    /// Whether the two versions have the same precedence: major, minor, patch and prerelease are equal (build
    /// metadata and the header name are ignored).
    public static func == (lhs: ContractVersion, rhs: ContractVersion) -> Bool {
        (lhs.major, lhs.minor, lhs.patch) == (rhs.major, rhs.minor, rhs.patch) && lhs.prerelease == rhs.prerelease
    }

    /// Hashes what `==` compares: major, minor, patch and prerelease.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(major)
        hasher.combine(minor)
        hasher.combine(patch)
        hasher.combine(prerelease)
    }

    /// SemVer precedence: major, minor and patch numerically; a prerelease before its release; then prerelease
    /// identifiers in turn (numeric ones numerically and before others, others as text; fewer identifiers first).
    /// Build metadata is ignored.
    public static func < (lhs: ContractVersion, rhs: ContractVersion) -> Bool {
        if (lhs.major, lhs.minor, lhs.patch) != (rhs.major, rhs.minor, rhs.patch) {
            return (lhs.major, lhs.minor, lhs.patch) < (rhs.major, rhs.minor, rhs.patch)
        }
        if lhs.prerelease.isEmpty || rhs.prerelease.isEmpty { return !lhs.prerelease.isEmpty && rhs.prerelease.isEmpty }
        // Numeric means digits only (`-1` is alphanumeric), of any length: compared by length, then digit by
        // digit (SemVer forbids leading zeros), so identifiers beyond Int still order numerically.
        func isNumeric(_ identifier: String) -> Bool {
            !identifier.isEmpty && identifier.utf8.allSatisfy { $0 >= 0x30 && $0 <= 0x39 }
        }
        for (a, b) in zip(lhs.prerelease, rhs.prerelease) where a != b {
            switch (isNumeric(a), isNumeric(b)) {
            case (true, true): return a.utf8.count != b.utf8.count ? a.utf8.count < b.utf8.count : a < b
            case (true, false): return true
            case (false, true): return false
            case (false, false): return a.utf8.lexicographicallyPrecedes(b.utf8)
            }
        }
        return lhs.prerelease.count < rhs.prerelease.count
    }

    /// Decodes a version from its text form, with the default header name (``defaultHeaderName``).
    ///
    /// - Throws: `DecodingError.dataCorrupted` when the text is not a semantic version.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        do {
            try self.init(text)
        } catch {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: error.description)
        }
    }

    /// Encodes the version as its text form (``description``); the header name is not encoded.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }

    private static func isIdentifierCharacter(_ character: Character) -> Bool {
        character.isASCII && (character.isLetter || character.isNumber || character == "-")
    }
}

/// A contract version that is not a semantic version.
public struct ContractVersionError: KeelError, Equatable {
    /// Codes of ``ContractVersionError``.
    public typealias Code = ErrorCode<ContractVersionError>

    /// What is wrong.
    public let code: Code
    /// The rejected text.
    public let text: String
    /// What is wrong with it.
    public let reason: String
    /// A developer-facing explanation quoting the rejected text and saying what is wrong with it.
    public var description: String { "invalid contract version \(text.debugDescription): \(reason)" }
}

extension Character {
    fileprivate var isASCIIDigit: Bool { isASCII && isNumber }
}

extension ErrorCode where Domain == ContractVersionError {
    /// The text is not a semantic version (`MAJOR.MINOR.PATCH[-prerelease][+build]`).
    public static var notSemanticVersion: Self { Self("notSemanticVersion") }
    /// The header name is not a valid HTTP field name.
    public static var invalidHeaderName: Self { Self("invalidHeaderName") }
}
