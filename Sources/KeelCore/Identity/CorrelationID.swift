/// The identifier of one user-level operation (OBS-LOG-004, MOB-API-004).
///
/// A correlation id is minted once, when the user's operation starts, persisted with the operation and
/// reused by every attempt, retry and post-relaunch resumption. It is never invented later as a
/// placeholder: there is no "unknown" or all-zero value, and restoring one from storage validates it.
///
/// The text form is 32 lowercase hexadecimal digits (128 random bits), the same shape as a W3C Trace
/// Context trace-id, so one value can serve as both.
public struct CorrelationID: Sendable, Hashable, Codable, CustomStringConvertible {
    /// 32 lowercase hexadecimal digits, not all zero.
    public let rawValue: String

    /// Mints a new id from `generator`. Call this once per user operation.
    public static func make(using generator: inout some RandomNumberGenerator) -> CorrelationID {
        while true {
            let high = generator.next() as UInt64
            if let id = from(high, generator.next()) { return id }
        }
    }

    /// The id of two random words; nil for the all-zero draw (never a valid id).
    private static func from(_ high: UInt64, _ low: UInt64) -> CorrelationID? {
        high | low == 0 ? nil : CorrelationID(uncheckedRawValue: Hex.text(high, low))
    }

    /// Mints a new id from `source`. Call this once per user operation.
    public static func make(using source: RandomSource) -> CorrelationID {
        while true {
            let (high, low) = source.nextPair()
            if let id = from(high, low) { return id }
        }
    }

    /// Restores an id read back from storage or a header.
    ///
    /// - Throws: ``CorrelationIDError`` when `rawValue` is not 32 lowercase hex digits or is all zeros.
    public init(validating rawValue: String) throws(CorrelationIDError) {
        let utf8 = rawValue.utf8
        guard utf8.count == 32, utf8.allSatisfy(Hex.isLowercaseDigit) else {
            throw CorrelationIDError(
                code: .malformed, value: rawValue, reason: "expected 32 lowercase hexadecimal digits")
        }
        guard utf8.contains(where: { $0 != UInt8(ascii: "0") }) else {
            throw CorrelationIDError(
                code: .placeholder, value: rawValue, reason: "an all-zero id is a placeholder, not an id")
        }
        self.rawValue = rawValue
    }

    private init(uncheckedRawValue: String) { self.rawValue = uncheckedRawValue }

    /// The id's 32 lowercase hexadecimal digits (``rawValue``).
    public var description: String { rawValue }

    /// Decodes an id from a string and validates it like ``init(validating:)``.
    ///
    /// - Throws: `DecodingError.dataCorrupted` when the string is not 32 lowercase hex digits or is all zeros.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let raw = try container.decode(String.self)
        do {
            try self.init(validating: raw)
        } catch {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: error.description)
        }
    }

    /// Encodes the id as its ``rawValue`` string.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }

}

/// A stored or received correlation id that is not well formed.
public struct CorrelationIDError: KeelError, Equatable {
    /// Codes of ``CorrelationIDError``.
    public typealias Code = ErrorCode<CorrelationIDError>

    /// What is wrong.
    public let code: Code
    /// The rejected text.
    public let value: String
    /// What is wrong with it.
    public let reason: String

    /// A developer-facing explanation quoting the rejected text and saying what is wrong with it.
    public var description: String { "invalid correlation id \(value.debugDescription): \(reason)" }
}

extension ErrorCode where Domain == CorrelationIDError {
    /// Not 32 lowercase hexadecimal digits.
    public static var malformed: Self { Self("malformed") }
    /// All zeros: a placeholder, not an id.
    public static var placeholder: Self { Self("placeholder") }
}
