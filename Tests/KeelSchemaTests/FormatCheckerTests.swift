import Foundation
import Testing

@testable import KeelSchema
import KeelContract

/// The format checker directly (the official format suite runs in JSONSchemaSuiteTests, through the validator).
@Suite struct FormatCheckerTests {
    @Test func unknownFormatsAreNotChecked() {
        #expect(FormatChecker.check("no-such-format", "anything") == nil)
        #expect(FormatChecker.check("DATE", "2020-01-01") == nil)  // format names are case-sensitive
    }

    @Test func everySupportedFormatIsChecked() {
        for format in FormatChecker.supportedFormats {
            let checked =
                FormatChecker.check(format, "") != nil || FormatChecker.check(format, JSONNumber(Int64(0))) != nil
            #expect(checked, "\(format) is listed but not dispatched")
        }
    }

    @Test(arguments: [
        ("date-time", "2020-02-29T23:59:60Z", true), ("date-time", "2021-02-29T00:00:00Z", false),
        ("time", "00:29:60-23:30", true), ("time", "12:00:00", false),
        ("email", "a.b@[IPv6:2001:db8::1]", true), ("email", "a..b@example.com", false),
        ("hostname", "xn--bcher-kva.example", true), ("hostname", "xn--X", false),
        ("idn-hostname", "bücher.example", true), ("idn-hostname", "a\u{05D0}", false),
        ("ipv4", "10.0.0.1", true), ("ipv4", "010.0.0.1", false),
        ("ipv6", "::ffff:10.0.0.1", true), ("ipv6", "1::2::3", false),
        ("uri", "urn:isbn:0451450523", true), ("uri", "//example.com", false),
        ("uri-reference", "../a?b#c", true), ("iri", "http://例え.テスト/パス", true),
        ("uri-template", "/users/{id}{?fields*}", true), ("uri-template", "{a", false),
        ("duration", "P1Y2M3DT4H5M6S", true), ("duration", "P1Y2D", false),
        ("json-pointer", "/a~1b/0", true), ("relative-json-pointer", "1#", true),
        ("regex", "^(?<year>\\d{4})-\\k<year>$", true), ("regex", "(?i)abc", false),
        ("uuid", "123e4567-e89b-12d3-a456-426614174000", true),
    ])
    func representativeValues(format: String, value: String, valid: Bool) {
        #expect(FormatChecker.check(format, value) == valid)
    }
}
