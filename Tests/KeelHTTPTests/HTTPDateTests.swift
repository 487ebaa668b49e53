import Foundation
import KeelHTTP
import Testing

/// HTTP-date (RFC 9110 §5.6.7): the three forms, RFC 850's two-digit years, and thread safety.
@Suite struct HTTPDateTests {
    /// 2026-12-01T12:00:00Z.
    let now = Date(timeIntervalSince1970: 1_796_126_400)

    @Test(arguments: [
        ("Sun, 06 Nov 1994 08:49:37 GMT", 784_111_777.0),
        ("Sunday, 06-Nov-94 08:49:37 GMT", 784_111_777.0),
        ("Sun Nov  6 08:49:37 1994", 784_111_777.0),
        ("Thu, 29 Feb 2024 23:59:59 GMT", 1_709_251_199.0),
        ("Wed, 31 Dec 2025 23:59:60 GMT", 1_767_225_600.0),  // a leap second is grammatical
    ])
    func parsesEachForm(text: String, seconds: Double) {
        #expect(HTTPDate.parse(text, now: now) == Date(timeIntervalSince1970: seconds))
    }

    @Test func rfc850YearsFollowTheFiftyYearRule() throws {
        // In 2026: 70 → 2070 is 44 years ahead, within 50: it stays 2070. 80 → 2080 is 54 ahead: 1980.
        let seventy = try #require(HTTPDate.parse("Monday, 01-Jan-70 00:00:00 GMT", now: now))
        #expect(seventy == Date(timeIntervalSince1970: 3_155_760_000))  // 2070-01-01
        let eighty = try #require(HTTPDate.parse("Tuesday, 01-Jan-80 00:00:00 GMT", now: now))
        #expect(eighty == Date(timeIntervalSince1970: 315_532_800))  // 1980-01-01
        let current = try #require(HTTPDate.parse("Tuesday, 01-Dec-26 00:00:00 GMT", now: now))
        #expect(current == Date(timeIntervalSince1970: 1_796_083_200))  // 2026-12-01
        // Exactly at the edge: 2076-11-30 is less than 50 years after 2026-12-01, 2076-12-02 is more.
        #expect(
            HTTPDate.parse("Monday, 30-Nov-76 00:00:00 GMT", now: now).map {
                $0 > now.addingTimeInterval(49 * 365 * 86_400)
            } == true)
        #expect(HTTPDate.parse("Wednesday, 02-Dec-76 00:00:00 GMT", now: now).map { $0 < now } == true)
        // After the middle of a century the next one is near: in 2070, `10` is 2110 (40 years ahead), not 2010.
        let in2070 = Date(timeIntervalSince1970: 3_155_760_000)  // 2070-01-01
        let ten = try #require(HTTPDate.parse("Wednesday, 01-Jan-10 00:00:00 GMT", now: in2070))
        #expect(ten == Date(timeIntervalSince1970: 4_417_977_600))  // 2110-01-01
        // A day that exists in one century only: 29 February of `00` is 2000's (2100 is no leap year).
        let leap = try #require(HTTPDate.parse("Tuesday, 29-Feb-00 00:00:00 GMT", now: now))
        #expect(leap == Date(timeIntervalSince1970: 951_782_400))  // 2000-02-29
        let sixty = try #require(HTTPDate.parse("Thursday, 01-Jan-60 00:00:00 GMT", now: in2070))
        #expect(sixty == Date(timeIntervalSince1970: 2_840_140_800))  // 2060-01-01
    }

    @Test(arguments: [
        "Sun, 06 nov 1994 08:49:37 GMT",  // names are case-sensitive
        "Sun, 31 Nov 1994 08:49:37 GMT",  // no 31 November
        "Sun, 29 Feb 2023 08:49:37 GMT",  // not a leap year
        "Sun, 06 Nov 1994 24:00:00 GMT",
        "Sun, 06 Nov 1994 08:49:37 UTC",
        "Sun, 06 Nov 1994 08:49:37 GMT ",
        "Sun, 6 Nov 1994 08:49:37 GMT",
        "Funday, 06-Nov-94 08:49:37 GMT",
        "Sun Nov 6 08:49:37 1994",  // asctime pads a one-digit day with a space
        "Sun, 06 Nov 94 08:49:37 GMT",
        "",
        "Sun, 06 Nov 1994 08:49:37 GMTX",
    ])
    func rejectsWhatIsNotAnHTTPDate(text: String) {
        #expect(HTTPDate.parse(text, now: now) == nil)
    }

    @Test func parsingFromManyTasksAtOnceAgreesWithParsingAlone() async {
        let forms = ["Sun, 06 Nov 1994 08:49:37 GMT", "Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994"]
        let expected = Date(timeIntervalSince1970: 784_111_777)
        let now = self.now
        let wrong = await withTaskGroup(of: Int.self) { group in
            for task in 0..<16 {
                group.addTask {
                    var wrong = 0
                    for round in 0..<2_000 {
                        let text = forms[(task + round) % 3]
                        if HTTPDate.parse(text, now: now) != expected { wrong += 1 }
                        // The same through Retry-After, as the client uses it.
                        if RetryAfter.delay(from: text, now: expected.addingTimeInterval(-30)) != .seconds(30) {
                            wrong += 1
                        }
                    }
                    return wrong
                }
            }
            return await group.reduce(0, +)
        }
        #expect(wrong == 0)
    }
}
