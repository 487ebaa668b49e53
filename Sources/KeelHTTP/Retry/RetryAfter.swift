public import Foundation

/// The `Retry-After` header (RFC 9110 §10.2.3): delta-seconds or an HTTP-date.
///
/// All three date forms are accepted (IMF-fixdate, obsolete RFC 850, asctime; see ``HTTPDate``). Values
/// that make no sense are handled without guessing:
/// - negative or non-numeric garbage → absent (nil), so the normal backoff applies;
/// - a date in the past → zero delay;
/// - absurdly large values are capped at ``maximumDelay`` (one day) for waiting: a server asking a phone to
///   wait a year is treated as "much later", never as an overflow or a crash. The instant shown to the user
///   (``instant(from:now:)``, a failure's `retryAt`) is the one the server named, up to a year.
public enum RetryAfter {
    /// The longest delay Keel will take from a `Retry-After` header.
    public static let maximumDelay: Duration = .seconds(86_400)

    /// The delay `value` asks for, measured from `now` (the response's arrival, by the wall clock), capped
    /// at ``maximumDelay``; nil when the header is absent or unusable.
    public static func delay(from value: String?, now: Date) -> Duration? {
        requested(from: value, now: now).map { min($0, maximumDelay) }
    }

    /// The instant `value` names, for telling the user when to try again: ``delay(from:now:)`` without its
    /// one-day cap (a three-day maintenance window is three days), up to ``maximumInstantDelay``; nil when
    /// the header is absent or unusable.
    public static func instant(from value: String?, now: Date) -> Date? {
        requested(from: value, now: now).map { now.addingTimeInterval($0.inSeconds) }
    }

    /// The longest wait ``instant(from:now:)`` reports (a year): beyond it, no one plans by the instant.
    public static let maximumInstantDelay: Duration = .seconds(366 * 86_400)

    /// What `value` asks for, capped at ``maximumInstantDelay``.
    private static func requested(from value: String?, now: Date) -> Duration? {
        guard let raw = value?.trimmingCharacters(in: .whitespaces), !raw.isEmpty else { return nil }
        let longest = maximumInstantDelay.components.seconds
        if raw.allSatisfy({ $0.isASCII && $0.isNumber }) {
            // Leading zeros say nothing ("0000000000000120" is two minutes); past twelve significant digits
            // the value is far beyond a year whatever it is.
            let significant = raw.drop(while: { $0 == "0" })
            guard significant.count <= 12, let seconds = Int64(significant.isEmpty ? "0" : significant) else {
                return maximumInstantDelay
            }
            return .seconds(min(seconds, longest))
        }
        guard let date = HTTPDate.parse(raw, now: now) else { return nil }
        let interval = date.timeIntervalSince(now)
        if interval <= 0 { return .zero }
        return .milliseconds(Int64(min(interval, Double(longest)) * 1000))
    }
}
