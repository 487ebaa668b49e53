import Foundation

// MARK: - RFC 3339 date, time, date-time; RFC 3339 appendix A duration

extension FormatChecker {
    /// `full-date "T" full-time` (RFC 3339 §5.6); the `T` may be lower case (§5.6 note).
    static func isDateTime(_ value: String) -> Bool {
        let bytes = Array(value.utf8)
        guard bytes.count > 11, isFullDate(bytes, at: 0) else { return false }
        guard bytes[10] == UInt8(ascii: "T") || bytes[10] == UInt8(ascii: "t") else { return false }
        return isFullTime(bytes, at: 11)
    }

    /// `full-date` alone: exactly `YYYY-MM-DD`.
    static func isDate(_ value: String) -> Bool {
        let bytes = Array(value.utf8)
        return bytes.count == 10 && isFullDate(bytes, at: 0)
    }

    /// `full-time`: a partial time followed by a mandatory offset.
    static func isTime(_ value: String) -> Bool {
        isFullTime(Array(value.utf8), at: 0)
    }

    /// Whether the ten bytes at `start` form a real calendar date (proleptic Gregorian leap years).
    private static func isFullDate(_ bytes: [UInt8], at start: Int) -> Bool {
        guard bytes.count >= start + 10, bytes[start + 4] == UInt8(ascii: "-"), bytes[start + 7] == UInt8(ascii: "-"),
            let year = number(bytes, start, 4), let month = number(bytes, start + 5, 2),
            let day = number(bytes, start + 8, 2)
        else { return false }
        guard (1...12).contains(month), day >= 1 else { return false }
        let isLeapYear = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
        let daysInMonth = [31, isLeapYear ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
        return day <= daysInMonth[month - 1]
    }

    /// Whether `bytes[start...]` is exactly `time-hour ":" time-minute ":" time-second [time-secfrac] time-offset`.
    private static func isFullTime(_ bytes: [UInt8], at start: Int) -> Bool {
        let colon = UInt8(ascii: ":")
        guard bytes.count >= start + 9, bytes[start + 2] == colon, bytes[start + 5] == colon,
            let hour = number(bytes, start, 2), let minute = number(bytes, start + 3, 2),
            let second = number(bytes, start + 6, 2)
        else { return false }
        var index = start + 8
        if bytes[index] == UInt8(ascii: ".") {
            index += 1
            let digitsStart = index
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
            guard index > digitsStart, index < bytes.count else { return false }
        }
        // Minutes east of UTC; needed to place a leap second, which only exists at 23:59:60 UTC.
        var offsetMinutes = 0
        switch bytes[index] {
        case UInt8(ascii: "Z"), UInt8(ascii: "z"):
            index += 1
        case UInt8(ascii: "+"), UInt8(ascii: "-"):
            guard bytes.count >= index + 6, bytes[index + 3] == colon, let offsetHour = number(bytes, index + 1, 2),
                let offsetMinute = number(bytes, index + 4, 2), offsetHour <= 23, offsetMinute <= 59
            else { return false }
            offsetMinutes = (offsetHour * 60 + offsetMinute) * (bytes[index] == UInt8(ascii: "-") ? -1 : 1)
            index += 6
        default:
            return false
        }
        guard index == bytes.count, hour <= 23, minute <= 59, second <= 60 else { return false }
        if second == 60 {
            let utcMinuteOfDay = ((hour * 60 + minute - offsetMinutes) % 1440 + 1440) % 1440
            return utcMinuteOfDay == 23 * 60 + 59
        }
        return true
    }

    /// `duration` from RFC 3339 appendix A: `P` then weeks alone, or date units (a contiguous run of Y, M, D)
    /// optionally followed by `T` and a non-empty contiguous run of H, M, S; integers only.
    static func isDuration(_ value: String) -> Bool {
        let bytes = Array(value.utf8)
        guard bytes.count > 1, bytes[0] == UInt8(ascii: "P") else { return false }
        let body = bytes[1...]
        let timeMarker = body.firstIndex(of: UInt8(ascii: "T"))
        guard let dateUnits = durationUnits(body[..<(timeMarker ?? body.endIndex)]) else { return false }
        if dateUnits == [UInt8(ascii: "W")] { return timeMarker == nil }
        guard isContiguousRun(dateUnits, of: "YMD") else { return false }
        guard let timeMarker else { return !dateUnits.isEmpty }
        guard let timeUnits = durationUnits(body[(timeMarker + 1)...]), !timeUnits.isEmpty else { return false }
        return isContiguousRun(timeUnits, of: "HMS")
    }

    /// The unit letters of a sequence of `1*DIGIT unit` pairs, or `nil` when a unit lacks digits or vice versa.
    private static func durationUnits(_ part: ArraySlice<UInt8>) -> [UInt8]? {
        var units: [UInt8] = []
        var digitCount = 0
        for byte in part {
            if isDigit(byte) {
                digitCount += 1
            } else {
                guard digitCount > 0 else { return nil }
                units.append(byte)
                digitCount = 0
            }
        }
        return digitCount == 0 ? units : nil
    }

    /// Whether `units` appear in `order` without gaps or repeats (`YM`, `MD` but not `YD` or `DY`).
    private static func isContiguousRun(_ units: [UInt8], of order: String) -> Bool {
        let order = Array(order.utf8)
        var previous: Int?
        for unit in units {
            guard let position = order.firstIndex(of: unit) else { return false }
            if let previous, position != previous + 1 { return false }
            previous = position
        }
        return true
    }
}
