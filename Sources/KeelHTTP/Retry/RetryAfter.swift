public import Foundation

/// The `Retry-After` header (RFC 9110 §10.2.3): delta-seconds or an HTTP-date.
///
/// All three date forms are accepted (IMF-fixdate, obsolete RFC 850, asctime). Values that make no sense
/// are handled without guessing:
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
            guard let seconds = Int64(raw.prefix(12)) else { return maximumDelay }
            return min(.seconds(seconds), maximumDelay)
        }
        guard let date = httpDate(raw) else { return nil }
        let interval = date.timeIntervalSince(now)
        if interval <= 0 { return .zero }
        return min(.milliseconds(Int64(min(interval, 86_400 * 2) * 1000)), maximumDelay)
    }

    /// Parses an HTTP-date in any of the three forms RFC 9110 requires recipients to accept.
    public static func httpDate(_ text: String) -> Date? {
        for format in formats {
            if let date = format.date(from: text) { return date }
        }
        return nil
    }

    private static let formats: [DateFormatter] = [
        "EEE, dd MMM yyyy HH:mm:ss 'GMT'",  // IMF-fixdate: Sun, 06 Nov 1994 08:49:37 GMT
        "EEEE, dd-MMM-yy HH:mm:ss 'GMT'",  // obsolete RFC 850: Sunday, 06-Nov-94 08:49:37 GMT
        "EEE MMM d HH:mm:ss yyyy",  // asctime: Sun Nov  6 08:49:37 1994
    ].map { pattern in
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = pattern
        formatter.isLenient = false
        // RFC 850's two-digit years: RFC 9110 says interpret as the most recent year with those digits
        // not more than 50 years ahead; anchoring the century window at 1970 gives 1970…2069.
        formatter.twoDigitStartDate = Date(timeIntervalSince1970: 0)
        return formatter
    }
}
