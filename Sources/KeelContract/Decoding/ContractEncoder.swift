public import Foundation

/// Encodes contract models to JSON the way ``ContractDecoder`` reads them back.
///
/// Dates are written as RFC 3339 in UTC (`2026-11-30T08:00:00Z`), rounded to milliseconds, with the
/// milliseconds when there are any (`2026-11-30T08:00:00.250Z`); Foundation's default would write a number, which no
/// `format: date-time` contract accepts. Members are sorted by name by default: `JSONEncoder` does not keep
/// declaration order on every platform, and the same value should always be the same bytes (a request
/// body that is hashed or signed, a fixture compared in a test).
public struct ContractEncoder: Sendable {
    /// Default: compact, members sorted by name. Keep `.sortedKeys` when adding options
    /// (`[.prettyPrinted, .sortedKeys]`): the set replaces the default.
    public var outputFormatting: JSONEncoder.OutputFormatting

    /// An encoder with `outputFormatting`; the default is compact JSON with members sorted by name.
    public init(outputFormatting: JSONEncoder.OutputFormatting = [.sortedKeys]) {
        self.outputFormatting = outputFormatting
    }

    /// The JSON encoding of `value`.
    ///
    /// - Throws: `EncodingError` for a value JSON cannot represent (a non-finite number, a date outside the
    ///   years 0000…9999).
    public func encode<T: Encodable>(_ value: T) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = outputFormatting
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            guard let text = RFC3339.string(from: date) else {
                throw EncodingError.invalidValue(
                    date,
                    .init(
                        codingPath: encoder.codingPath,
                        debugDescription:
                            "\(date.timeIntervalSince1970) s since 1970 is outside the years RFC 3339 writes (0000…9999)"
                    ))
            }
            try container.encode(text)
        }
        return try encoder.encode(value)
    }
}
