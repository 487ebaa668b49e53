public import Foundation

/// The `Retry-After` header (RFC 9110 §10.2.3): delta-seconds or an HTTP-date.
///
/// All three date forms are accepted (IMF-fixdate, obsolete RFC 850, asctime; see ``HTTPDate``). Values
/// that make no sense are handled without guessing:
/// - negative or non-numeric garbage → absent (nil), so the normal backoff applies;
/// - a date in the past → zero delay;
/// - absurdly large values are capped at ``maximumDelay`` (one day): a server asking a phone to wait a
///   year is treated as "much later", never as an overflow or a crash.
public enum RetryAfter {
    /// The longest delay Keel will take from a `Retry-After` header.
    public static let maximumDelay: Duration = .seconds(86_400)

    /// The delay `value` asks for, measured from `now` (the response's arrival, by the wall clock);
    /// nil when the header is absent or unusable.
    public static func delay(from value: String?, now: Date) -> Duration? {
        guard let raw = value?.trimmingCharacters(in: .whitespaces), !raw.isEmpty else { return nil }
        if raw.allSatisfy({ $0.isASCII && $0.isNumber }) {
            // Leading zeros say nothing ("0000000000000120" is two minutes); past twelve significant digits
            // the value is far beyond a day whatever it is.
            let significant = raw.drop(while: { $0 == "0" })
            guard significant.count <= 12, let seconds = Int64(significant.isEmpty ? "0" : significant) else {
                return maximumDelay
            }
            return min(.seconds(seconds), maximumDelay)
        }
        guard let date = HTTPDate.parse(raw, now: now) else { return nil }
        let interval = date.timeIntervalSince(now)
        if interval <= 0 { return .zero }
        return min(.milliseconds(Int64(min(interval, 86_400 * 2) * 1000)), maximumDelay)
    }
}
