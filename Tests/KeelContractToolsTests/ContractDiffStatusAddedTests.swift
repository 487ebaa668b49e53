import KeelContractTools
import Testing

/// A status the revision answers an existing operation with, that installed clients were never written for:
/// a new success is a warning (they take it for the success they know), a new failure info (they read it by
/// its class); a status the base covered with its range or `default` is not new.
@Suite struct ContractDiffStatusAddedTests {
    /// A description whose `GET /notes` and `POST /notes` answer with `get` and `post` (YAML members of
    /// `responses`, one a line, indented for it), and a shared `Maintenance` response.
    static func spec(get: [String], post: [String] = ["'201': {description: created}"]) -> String {
        func lines(_ members: [String]) -> String { members.map { "        " + $0 }.joined(separator: "\n") }
        return """
            openapi: 3.1.0
            info: {title: Notes, version: 1.0.0}
            paths:
              /notes:
                get:
                  responses:
            \(lines(get))
                post:
                  responses:
            \(lines(post))
            components:
              responses:
                Maintenance:
                  description: down for maintenance
                  content:
                    application/json:
                      schema: {type: object, properties: {code: {type: string}}}
            """
    }

    static let ok = "'200': {description: ok}"

    /// `rule severity method path → status` of each finding, in the diff's order.
    static func findings(_ base: String, _ revision: String) throws -> [String] {
        try ContractDiffFixtureTests.changes(base, revision).map {
            "\($0.rule) \($0.severity) \($0.method ?? "-") \($0.path ?? "-") → \($0.status ?? "-")"
        }
    }

    @Test func aNewSuccessStatusIsAWarning() throws {
        let changes = try ContractDiffFixtureTests.changes(
            Self.spec(get: [Self.ok]), Self.spec(get: [Self.ok, "'202': {description: accepted}"]))
        #expect(changes.count == 1, "\(changes)")
        let change = try #require(changes.first)
        #expect(change.rule == "response-success-status-added")
        #expect(change.severity == .warning)
        #expect(change.method == "GET" && change.path == "/notes" && change.status == "202")
        #expect(change.pointer == nil && change.origin == nil)
        #expect(change.message.contains("success response 202 is new"), "\(change.message)")
    }

    /// Codes, ranges and `default` alike; a redirect is not a success either.
    @Test func aNewNonSuccessStatusIsInfo() throws {
        let added = [
            "'404': {description: gone}", "'5XX': {description: failed}", "'303': {description: elsewhere}",
            "default: {description: anything else}",
        ]
        #expect(
            try Self.findings(Self.spec(get: [Self.ok]), Self.spec(get: [Self.ok] + added)) == [
                "response-non-success-status-added info GET /notes → 303",
                "response-non-success-status-added info GET /notes → 404",
                "response-non-success-status-added info GET /notes → 5XX",
                "response-non-success-status-added info GET /notes → default",
            ])
        // A success range is a success.
        #expect(
            try Self.findings(Self.spec(get: [Self.ok]), Self.spec(get: [Self.ok, "'2XX': {description: ok}"])) == [
                "response-success-status-added warning GET /notes → 2XX"
            ])
    }

    /// A status the base's range or `default` covered is not new to installed clients: they were written for
    /// that answer. `default` covers failures only: a client reads any 2xx as a success, not by `default`.
    @Test func aStatusTheBaseAlreadyCoveredIsNotNew() throws {
        let ranges = Self.spec(get: [Self.ok, "'4XX': {description: refused}", "'2XX': {description: ok}"])
        #expect(
            try Self.findings(
                ranges,
                Self.spec(get: [
                    Self.ok, "'4XX': {description: refused}", "'2XX': {description: ok}", "'404': {description: gone}",
                    "'201': {description: created}",
                ])) == [])
        // A range in lower case is the range.
        #expect(
            try Self.findings(
                Self.spec(get: [Self.ok, "'4xx': {description: refused}"]),
                Self.spec(get: [Self.ok, "'4XX': {description: refused}", "'409': {description: conflict}"])) == [])
        let withDefault = Self.spec(get: [Self.ok, "default: {description: failed}"])
        #expect(
            try Self.findings(
                withDefault,
                Self.spec(get: [
                    Self.ok, "default: {description: failed}", "'503': {description: down}", "'4XX': {description: no}",
                    "'202': {description: accepted}",
                ])) == ["response-success-status-added warning GET /notes → 202"])
        // A range covers its codes, not the other way round: a new range answers codes nobody declared.
        #expect(
            try Self.findings(
                Self.spec(get: [Self.ok, "'404': {description: gone}"]),
                Self.spec(get: [Self.ok, "'404': {description: gone}", "'4XX': {description: refused}"])) == [
                    "response-non-success-status-added info GET /notes → 4XX"
                ])
    }

    /// The same statuses, in another order, beside an extension member of `responses`: nothing to report.
    @Test func unchangedStatusesReportNothing() throws {
        let statuses = [
            Self.ok, "'404': {description: gone}", "'5XX': {description: failed}", "default: {description: other}",
        ]
        #expect(try Self.findings(Self.spec(get: statuses), Self.spec(get: statuses.reversed())) == [])
        // An extension names no status (without a `default` that would cover anything new).
        let codes = [Self.ok, "'404': {description: gone}"]
        #expect(
            try Self.findings(Self.spec(get: codes), Self.spec(get: codes + ["x-internal: {owner: payments}"])) == [])
        #expect(try ContractDiffFixtureTests.changes(Self.spec(get: statuses), Self.spec(get: statuses)).isEmpty)
    }

    /// Findings come by path, method and status, whatever order the revision declares them in, and every run
    /// gives the same list.
    @Test func addedStatusesComeInAStableOrder() throws {
        let base = Self.spec(get: [Self.ok])
        let get = ["'503': {description: down}", Self.ok, "'201': {description: created}", "'400': {description: bad}"]
        let post = ["'413': {description: too large}", "'201': {description: created}", "'202': {description: later}"]
        let expected = [
            "response-success-status-added warning GET /notes → 201",
            "response-non-success-status-added info GET /notes → 400",
            "response-non-success-status-added info GET /notes → 503",
            "response-success-status-added warning POST /notes → 202",
            "response-non-success-status-added info POST /notes → 413",
        ]
        #expect(try Self.findings(base, Self.spec(get: get, post: post)) == expected)
        #expect(try Self.findings(base, Self.spec(get: get.reversed(), post: post.reversed())) == expected)
        for _ in 0..<5 { #expect(try Self.findings(base, Self.spec(get: get, post: post)) == expected) }
    }

    /// A response of `components/responses` added to several operations is one root cause, its origin the
    /// component (1.8 of the sample contract adds `Maintenance` as 503 to two operations).
    @Test func aSharedResponseAddedToSeveralOperationsIsOneEntry() throws {
        let maintenance = "'503': {$ref: '#/components/responses/Maintenance'}"
        let changes = try ContractDiffFixtureTests.changes(
            Self.spec(get: [Self.ok]),
            Self.spec(get: [Self.ok, maintenance], post: ["'201': {description: created}", maintenance]))
        #expect(changes.count == 2)
        #expect(
            changes.allSatisfy {
                $0.rule == "response-non-success-status-added"
                    && $0.origin == "revision.yaml#/components/responses/Maintenance"
            }, "\(changes)")
        let groups = ContractChangeGroup.grouping(changes)
        #expect(groups.count == 1 && groups.first?.operations == 2, "\(groups.map { $0.text(verbose: false) })")
        // Written into the operation, a new status has no shared origin.
        let inline = try ContractDiffFixtureTests.changes(
            Self.spec(get: [Self.ok]), Self.spec(get: [Self.ok, "'503': {description: down}"]))
        #expect(inline.count == 1 && inline.allSatisfy { $0.origin == nil })
    }
}
