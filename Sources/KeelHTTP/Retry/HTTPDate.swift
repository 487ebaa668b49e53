public import Foundation

/// HTTP-date (RFC 9110 §5.6.7) in the three forms recipients must accept, parsed by hand: no
/// `DateFormatter` (corelibs formatters are not thread-safe on Linux, and a shared one raced), no locale,
/// no allocation beyond the input's bytes. Thread-safe: it is a pure function.
///
/// - IMF-fixdate: `Sun, 06 Nov 1994 08:49:37 GMT`
/// - obsolete RFC 850: `Sunday, 06-Nov-94 08:49:37 GMT` — the two-digit year is read as RFC 9110 says:
///   the latest year with those digits that is not more than 50 years in the future (in 2026, `70` is 2070
///   and `80` is 1980; in 2070, `10` is 2110);
/// - obsolete asctime: `Sun Nov  6 08:49:37 1994`.
///
/// Names are case-sensitive, as the grammar says; the day name must be a day name (its agreement with the
/// date is not checked); fields must be in range (second 60 is allowed for a leap second).
public enum HTTPDate {
    /// The instant `text` names, or nil when it is not an HTTP-date. `now` anchors RFC 850's two-digit years.
    public static func parse(_ text: String, now: Date) -> Date? {
        var scanner = Scanner(Array(text.utf8))
        if let date = scanner.imfFixdate() { return date }
        scanner.position = 0
        if let date = scanner.rfc850(now: now) { return date }
        scanner.position = 0
        return scanner.asctime()
    }

    private static let shortDays = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]
    private static let longDays = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// The date of `year-month-day hh:mm:ss` UTC, or nil when a field is out of range.
    static func date(year: Int, month: Int, day: Int, hour: Int, minute: Int, second: Int) -> Date? {
        guard (1...12).contains(month), (1...daysIn(month: month, year: year)).contains(day),
            (0...23).contains(hour), (0...59).contains(minute), (0...60).contains(second)
        else { return nil }
        let days = daysFromCivil(year: year, month: month, day: day)
        return Date(timeIntervalSince1970: TimeInterval(days * 86_400 + hour * 3600 + minute * 60 + second))
    }

    private static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's `days_from_civil`).
    private static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The UTC calendar year of `date`.
    private static func year(of date: Date) -> Int {
        // Inverse of daysFromCivil for the year only (Hinnant's civil_from_days).
        let days = Int((date.timeIntervalSince1970 / 86_400).rounded(.down)) + 719_468
        let era = (days >= 0 ? days : days - 146_096) / 146_097
        let dayOfEra = days - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        return yearOfEra + era * 400 + (monthIndex >= 10 ? 1 : 0)
    }

    private struct Scanner {
        let bytes: [UInt8]
        var position = 0

        init(_ bytes: [UInt8]) { self.bytes = bytes }

        // MARK: Forms

        /// `Sun, 06 Nov 1994 08:49:37 GMT`
        mutating func imfFixdate() -> Date? {
            guard word(in: HTTPDate.shortDays) != nil, literal(", "), let day = digits(2), literal(" "),
                let month = month(), literal(" "), let year = digits(4), literal(" "), let time = time(),
                literal(" GMT"), atEnd
            else { return nil }
            return HTTPDate.date(year: year, month: month, day: day, hour: time.0, minute: time.1, second: time.2)
        }

        /// `Sunday, 06-Nov-94 08:49:37 GMT`
        mutating func rfc850(now: Date) -> Date? {
            guard word(in: HTTPDate.longDays) != nil, literal(", "), let day = digits(2), literal("-"),
                let month = month(), literal("-"), let twoDigits = digits(2), literal(" "), let time = time(),
                literal(" GMT"), atEnd
            else { return nil }
            let currentYear = HTTPDate.year(of: now)
            // The latest year with these two digits that is not more than 50 years in the future: from the next
            // century down ("more than 50 years in the future" compares instants, against now + 50 years). From
            // this century down only, in 2070 `10` was read as 2010 instead of 2110 (found in an outside audit).
            var year = currentYear - currentYear % 100 + 100 + twoDigits
            guard let limit = Self.fiftyYears(after: now) else { return nil }
            // A date that does not exist in a century (29 February of 2100) is not that century's: the next
            // one down is tried (found in a review: `29-Feb-00` read in 2026 was refused).
            for _ in 0..<2 {
                let candidate = HTTPDate.date(
                    year: year, month: month, day: day, hour: time.0, minute: time.1, second: time.2)
                if let candidate, candidate <= limit { break }
                year -= 100
            }
            return HTTPDate.date(year: year, month: month, day: day, hour: time.0, minute: time.1, second: time.2)
        }

        /// `Sun Nov  6 08:49:37 1994`
        mutating func asctime() -> Date? {
            guard word(in: HTTPDate.shortDays) != nil, literal(" "), let month = month(), literal(" ") else {
                return nil
            }
            let day: Int
            if literal(" ") {
                guard let single = digits(1) else { return nil }
                day = single
            } else {
                guard let double = digits(2) else { return nil }
                day = double
            }
            guard literal(" "), let time = time(), literal(" "), let year = digits(4), atEnd else { return nil }
            return HTTPDate.date(year: year, month: month, day: day, hour: time.0, minute: time.1, second: time.2)
        }

        // MARK: Pieces

        static func fiftyYears(after now: Date) -> Date? {
            let seconds = Int(now.timeIntervalSince1970.rounded(.down))
            let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
            let secondOfDay = seconds - days * 86_400
            let year = HTTPDate.year(of: now)
            // Day of year kept by going through the calendar date of `now`.
            let startOfYear = HTTPDate.daysFromCivil(year: year, month: 1, day: 1)
            let dayOfYear = days - startOfYear
            let target = HTTPDate.daysFromCivil(year: year + 50, month: 1, day: 1) + dayOfYear
            return Date(timeIntervalSince1970: TimeInterval(target * 86_400 + secondOfDay))
        }

        var atEnd: Bool { position == bytes.count }

        mutating func literal(_ text: StaticString) -> Bool {
            let count = text.utf8CodeUnitCount
            guard position + count <= bytes.count else { return false }
            let matches = text.withUTF8Buffer { expected in
                (0..<count).allSatisfy { bytes[position + $0] == expected[$0] }
            }
            if matches { position += count }
            return matches
        }

        /// Exactly `count` ASCII digits.
        mutating func digits(_ count: Int) -> Int? {
            guard position + count <= bytes.count else { return nil }
            var value = 0
            for offset in 0..<count {
                let byte = bytes[position + offset]
                guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
                value = value * 10 + Int(byte - UInt8(ascii: "0"))
            }
            position += count
            return value
        }

        /// One of `words` (case-sensitive); its index.
        mutating func word(in words: [String]) -> Int? {
            for (index, word) in words.enumerated() {
                let utf8 = Array(word.utf8)
                if position + utf8.count <= bytes.count, bytes[position..<position + utf8.count].elementsEqual(utf8) {
                    position += utf8.count
                    return index
                }
            }
            return nil
        }

        /// A month name: 1...12.
        mutating func month() -> Int? {
            word(in: HTTPDate.months).map { $0 + 1 }
        }

        /// `hh:mm:ss`
        mutating func time() -> (Int, Int, Int)? {
            guard let hour = digits(2), literal(":"), let minute = digits(2), literal(":"), let second = digits(2)
            else {
                return nil
            }
            return (hour, minute, second)
        }
    }
}
