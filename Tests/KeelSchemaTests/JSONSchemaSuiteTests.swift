import Foundation
import KeelContract
import KeelSchema
import Testing

/// The official JSON-Schema-Test-Suite for draft 2020-12 (MOB-API-001 schema validation).
@Suite struct JSONSchemaSuiteTests {
    @Test(.enabled(if: ConformanceSuite.isWanted, "KEEL_SKIP_CONFORMANCE=1"))
    func passesEveryRequiredCaseOfTheOfficialSuite() async throws {
        try ConformanceSuite.requirePresent()
        let cases = try ConformanceSuite.cases(in: "tests/draft2020-12")
        let failures = await ConformanceSuite.run(cases)
        print("JSON-Schema-Test-Suite draft2020-12: \(cases.count - failures.count)/\(cases.count)")
        #expect(cases.count == 1299, "the pinned suite has 1299 required cases")
        for failure in failures {
            print("  required miss: \(failure)")
            Issue.record(Comment(rawValue: failure))
        }
    }

    /// The optional (non-format) suite is not required, but its recorded result is: a regression in any of
    /// it fails here, and an improvement updates the numbers.
    @Test(.enabled(if: ConformanceSuite.isWanted, "KEEL_SKIP_CONFORMANCE=1"))
    func passesTheRecordedShareOfTheOptionalSuite() async throws {
        try ConformanceSuite.requirePresent()
        let cases = try ConformanceSuite.cases(in: "tests/draft2020-12/optional")
        let failures = await ConformanceSuite.run(cases)
        for failure in failures { print("  optional miss: \(failure)") }
        #expect(cases.count == 162, "the pinned optional suite has 162 cases")
        #expect(cases.count - failures.count == 161, "recorded: 161 of 162 optional cases pass")
    }

    @Test(.enabled(if: ConformanceSuite.isWanted, "KEEL_SKIP_CONFORMANCE=1"))
    func passesTheOptionalFormatSuiteAsAssertions() async throws {
        try ConformanceSuite.requirePresent()
        let cases = try ConformanceSuite.cases(in: "tests/draft2020-12/optional/format")
        let failures = await ConformanceSuite.run(cases, options: ValidationOptions(formatAssertion: true))
        print(
            "JSON-Schema-Test-Suite draft2020-12 optional/format (assertion): \(cases.count - failures.count)/\(cases.count)"
        )
        let required = ["date-time", "date", "time", "email", "uuid", "uri", "ipv4", "ipv6", "hostname"]
        for failure in failures {
            if required.contains(where: { failure.hasPrefix("\($0).json:") }) {
                Issue.record(Comment(rawValue: failure))
            } else {
                print("  optional format miss: \(failure)")
            }
        }
    }
}
