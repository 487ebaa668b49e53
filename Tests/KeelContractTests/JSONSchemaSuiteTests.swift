import Foundation
import KeelContract
import Testing

/// The official JSON-Schema-Test-Suite for draft 2020-12 (MOB-API-001 schema validation).
@Suite struct JSONSchemaSuiteTests {
    @Test(.enabled(if: ConformanceSuite.isPresent))
    func passesEveryRequiredCaseOfTheOfficialSuite() throws {
        let cases = try ConformanceSuite.cases(in: "tests/draft2020-12")
        let failures = ConformanceSuite.run(cases)
        print("JSON-Schema-Test-Suite draft2020-12: \(cases.count - failures.count)/\(cases.count)")
        #expect(cases.count == 1299, "the pinned suite has 1299 required cases")
        for failure in failures {
            print("  required miss: \(failure)")
            Issue.record(Comment(rawValue: failure))
        }
    }

    @Test(.enabled(if: ConformanceSuite.isPresent))
    func reportsTheOptionalSuite() throws {
        let cases = try ConformanceSuite.cases(in: "tests/draft2020-12/optional")
        let failures = ConformanceSuite.run(cases)
        print("JSON-Schema-Test-Suite draft2020-12 optional: \(cases.count - failures.count)/\(cases.count)")
        for failure in failures { print("  optional miss: \(failure)") }
        #expect(cases.count > 0)
    }

    @Test(.enabled(if: ConformanceSuite.isPresent))
    func passesTheOptionalFormatSuiteAsAssertions() throws {
        let cases = try ConformanceSuite.cases(in: "tests/draft2020-12/optional/format")
        let failures = ConformanceSuite.run(cases, options: ValidationOptions(formatAssertion: true))
        print("JSON-Schema-Test-Suite draft2020-12 optional/format (assertion): \(cases.count - failures.count)/\(cases.count)")
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
