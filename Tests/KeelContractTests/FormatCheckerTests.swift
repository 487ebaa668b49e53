import Foundation
import Testing

@testable import KeelContract

/// Where the official JSON-Schema-Test-Suite's draft 2020-12 format cases live; overridable for other checkouts.
private let formatSuiteDirectory =
    ProcessInfo.processInfo.environment["KEEL_FORMAT_SUITE_DIR"]
    ?? "/work/shared/conformance/json-schema-test-suite/tests/draft2020-12/optional/format"

/// The formats the issue requires to pass every suite case; the others only report their counts.
private let requiredFormats: Set<String> = [
    "date-time", "date", "time", "email", "uuid", "uri", "ipv4", "ipv6", "hostname",
]

/// One string instance from the suite with the verdict it expects.
private struct FormatCase {
    let file: String
    let format: String
    let description: String
    let data: String
    let valid: Bool
}

/// Whether the suite directory exists; prints why the suite test is skipped when it does not.
private let formatSuiteIsPresent: Bool = {
    var isDirectory: ObjCBool = false
    let present = FileManager.default.fileExists(atPath: formatSuiteDirectory, isDirectory: &isDirectory)
    if !(present && isDirectory.boolValue) {
        print("notice: format suite not found at \(formatSuiteDirectory); skipping the official format cases")
        return false
    }
    return true
}()

/// Every case of the suite whose schema is only `{"$schema"?, "format": X}` and whose data is a string; formats
/// assert on strings only, so other instances say nothing about the checker.
private func loadFormatCases() throws -> [FormatCase] {
    let files = try FileManager.default.contentsOfDirectory(atPath: formatSuiteDirectory)
        .filter { $0.hasSuffix(".json") }
        .sorted()
    var cases: [FormatCase] = []
    for file in files {
        let url = URL(fileURLWithPath: formatSuiteDirectory).appendingPathComponent(file)
        let groups = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [[String: Any]],
            "\(file) is not an array of test groups"
        )
        for group in groups {
            guard let schema = group["schema"] as? [String: Any], let format = schema["format"] as? String,
                Set(schema.keys).isSubset(of: ["$schema", "format"]), let tests = group["tests"] as? [[String: Any]]
            else { continue }
            let groupDescription = group["description"] as? String ?? ""
            for test in tests {
                guard let data = test["data"] as? String, let valid = test["valid"] as? Bool else { continue }
                let description = test["description"] as? String ?? ""
                cases.append(
                    FormatCase(
                        file: file, format: format, description: "\(groupDescription): \(description)", data: data,
                        valid: valid))
            }
        }
    }
    return cases
}

@Suite struct FormatCheckerTests {
    @Test(.enabled(if: formatSuiteIsPresent, "JSON-Schema-Test-Suite format directory is absent"))
    func officialFormatSuite() throws {
        let cases = try loadFormatCases()
        #expect(!cases.isEmpty, "no string cases found in \(formatSuiteDirectory)")

        var passed: [String: Int] = [:]
        var total: [String: Int] = [:]
        var failures: [String: [String]] = [:]
        for testCase in cases {
            total[testCase.format, default: 0] += 1
            // Unknown formats always pass, so `nil` counts as valid.
            if (FormatChecker.check(testCase.format, testCase.data) ?? true) == testCase.valid {
                passed[testCase.format, default: 0] += 1
            } else {
                failures[testCase.format, default: []].append(
                    "\(testCase.file) \(testCase.description): \(testCase.data.debugDescription) should be "
                        + (testCase.valid ? "valid" : "invalid"))
            }
        }

        let passedCount = passed.values.reduce(0, +)
        print("format suite: \(passedCount)/\(cases.count) passed")
        for format in total.keys.sorted() {
            let marker = requiredFormats.contains(format) ? " (required)" : ""
            print("  \(format)\(marker): \(passed[format, default: 0])/\(total[format, default: 0])")
            for failure in failures[format, default: []] { print("    FAIL \(failure)") }
        }

        for format in requiredFormats.sorted() {
            #expect(total[format, default: 0] > 0, "the suite has no cases for required format \(format)")
            let formatFailures = failures[format, default: []]
            #expect(formatFailures.isEmpty, "\(format) failed:\n\(formatFailures.joined(separator: "\n"))")
        }
    }

    @Test func unknownFormatsAreNotChecked() {
        #expect(FormatChecker.check("no-such-format", "anything") == nil)
        #expect(FormatChecker.check("DATE", "2020-01-01") == nil)  // format names are case-sensitive
    }

    @Test func everySupportedFormatIsChecked() {
        for format in FormatChecker.supportedFormats {
            #expect(FormatChecker.check(format, "") != nil, "\(format) is listed but not dispatched")
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
