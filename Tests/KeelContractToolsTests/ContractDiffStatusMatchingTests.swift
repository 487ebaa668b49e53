import KeelContractTools
import Testing

/// A response of the base meets the revision's as installed clients read statuses: by the same key (a range in
/// any case), by its range (`201` under `2XX`), or — for a failure only — by `default`. What still answers a
/// status is no removal, and it is compared: its headers, media types and body are what clients now get.
@Suite struct ContractDiffStatusMatchingTests {
    /// A description whose `POST /notes` answers with `responses` (YAML members, one a line), with the schemas
    /// `Note` (a closed `kind`), `WideNote` (the same, one more kind), `Error` (`code`, `message`) and `Problem`
    /// (`code` only).
    static func spec(_ responses: [String]) -> String {
        """
        openapi: 3.1.0
        info: {title: Notes, version: 1.0.0}
        paths:
          /notes:
            post:
              responses:
        \(responses.map { "        " + $0 }.joined(separator: "\n"))
        components:
          schemas:
            Note:
              type: object
              required: [id, kind]
              properties:
                id: {type: string}
                kind: {type: string, enum: [text]}
            WideNote:
              type: object
              required: [id, kind]
              properties:
                id: {type: string}
                kind: {type: string, enum: [text, checklist]}
            Error:
              type: object
              required: [code, message]
              properties:
                code: {type: string}
                message: {type: string}
            Problem:
              type: object
              required: [code]
              properties:
                code: {type: string}
        """
    }

    /// The response `status` with a JSON body of the named schema, and `headers` (YAML flow members).
    static func response(_ status: String, _ schema: String, headers: String? = nil) -> String {
        let quoted = status == "default" ? status : "'\(status)'"
        return
            "\(quoted): {description: answer\(headers.map { ", headers: {\($0)}" } ?? ""), content: {application/json: {schema: {$ref: '#/components/schemas/\(schema)'}}}}"
    }

    static func findings(_ base: [String], _ revision: [String]) throws -> [String] {
        try ContractDiffStatusAddedTests.findings(spec(base), spec(revision))
    }

    /// `201` → `2XX`: the range still answers 201, so the success is not gone; that the range may also answer
    /// statuses installed clients were not written for (`202`) is the added-status warning.
    @Test func aCodeReplacedByItsRangeIsNotARemovedSuccess() throws {
        for range in ["2XX", "2xx"] {
            #expect(
                try Self.findings([Self.response("201", "Note")], [Self.response(range, "Note")]) == [
                    "response-success-status-added warning POST /notes → \(range)"
                ])
        }
    }

    /// After `201` → `2XX`, a client reading 201 gets what the `2XX` describes: its body, media types and
    /// headers are compared with the 201's, the findings at the status clients know.
    @Test func theBodyOfACodeReplacedByItsRangeIsStillCompared() throws {
        #expect(
            try Self.findings([Self.response("201", "Note")], [Self.response("2XX", "WideNote")]) == [
                "response-property-enum-value-added breaking POST /notes → 201",
                "response-success-status-added warning POST /notes → 2XX",
            ])
        let location = "Location: {required: true, schema: {type: string}}"
        #expect(
            try Self.findings([Self.response("201", "Note", headers: location)], [Self.response("2XX", "Note")]) == [
                "response-required-header-removed breaking POST /notes → 201",
                "response-success-status-added warning POST /notes → 2XX",
            ])
        let changes = try ContractDiffFixtureTests.changes(
            Self.spec([Self.response("201", "Note")]), Self.spec([Self.response("2XX", "WideNote")]))
        let enumValue = try #require(changes.first { $0.rule == "response-property-enum-value-added" })
        #expect(enumValue.pointer == "/properties/kind", "\(enumValue)")
        #expect(enumValue.origin == "revision.yaml#/components/schemas/WideNote/properties/kind", "\(enumValue)")
    }

    /// `2XX` → `2xx` is the same range: nothing to report, and its body is compared as any.
    @Test func aRangeInAnotherCaseIsTheSameRange() throws {
        #expect(try Self.findings([Self.response("2XX", "Note")], [Self.response("2xx", "Note")]) == [])
        #expect(
            try Self.findings(
                [Self.response("200", "Note"), Self.response("4xx", "Error")],
                [Self.response("200", "Note"), Self.response("4XX", "Error")]) == [])
        #expect(
            try Self.findings([Self.response("2XX", "Note")], [Self.response("2xx", "WideNote")]) == [
                "response-property-enum-value-added breaking POST /notes → 2XX"
            ])
    }

    /// A failure the revision still answers by its range or `default` is not gone (nor was a failure ever a
    /// breaking removal): installed clients read it as before. What they read is compared: a 404 now answered
    /// by a `default` without the `message` they read is breaking.
    @Test func aFailureReplacedByItsRangeOrDefaultIsComparedNotRemoved() throws {
        let ok = Self.response("201", "Note")
        for cover in ["4XX", "4xx", "default"] {
            #expect(
                try Self.findings([ok, Self.response("404", "Error")], [ok, Self.response(cover, "Error")]) == [
                    "response-non-success-status-added info POST /notes → \(cover)"
                ])
            #expect(
                try Self.findings([ok, Self.response("404", "Error")], [ok, Self.response(cover, "Problem")]) == [
                    "response-property-removed breaking POST /notes → 404",
                    "response-non-success-status-added info POST /notes → \(cover)",
                ])
        }
        // A failure range answered by `default`.
        #expect(
            try Self.findings(
                [ok, Self.response("4XX", "Error"), Self.response("default", "Error")],
                [ok, Self.response("default", "Problem")]) == [
                    "response-property-removed breaking POST /notes → 4XX",
                    "response-property-removed breaking POST /notes → default",
                ])
    }

    /// A success nothing in the revision answers is still gone: `default` answers no success (a client reads
    /// any 2xx as a success, not by `default`), nor does another code or a range of another class.
    @Test func aSuccessNothingAnswersIsStillARemovedSuccess() throws {
        let removed = "response-success-status-removed breaking POST /notes → 201"
        #expect(
            try Self.findings([Self.response("201", "Note")], [Self.response("200", "Note")]) == [
                "response-success-status-added warning POST /notes → 200", removed,
            ])
        #expect(
            try Self.findings(
                [Self.response("201", "Note"), Self.response("4XX", "Error")],
                [Self.response("4XX", "Error"), Self.response("default", "Note")]) == [
                    removed, "response-non-success-status-added info POST /notes → default",
                ])
        // A success range with nothing of its class left.
        #expect(
            try Self.findings(
                [Self.response("2XX", "Note"), Self.response("4XX", "Error")],
                [Self.response("4XX", "Error"), Self.response("default", "Note")]) == [
                    "response-success-status-removed breaking POST /notes → 2XX",
                    "response-non-success-status-added info POST /notes → default",
                ])
    }

    /// `2XX` → `200`: the server promises less, and clients get a subset of the successes they read; not a
    /// removed success, but the 200 they get must still be what they read as `2XX`. Likewise a `default`
    /// replaced by codes.
    @Test func aRangeReplacedByCodesIsNotARemovedSuccessButIsCompared() throws {
        #expect(try Self.findings([Self.response("2XX", "Note")], [Self.response("200", "Note")]) == [])
        #expect(
            try Self.findings(
                [Self.response("200", "Note"), Self.response("2XX", "Note")], [Self.response("200", "Note")]) == [])
        #expect(
            try Self.findings(
                [Self.response("2XX", "Note")], [Self.response("200", "Note"), Self.response("201", "WideNote")])
                == ["response-property-enum-value-added breaking POST /notes → 201"])
        // An exact code the base declared is read by its own response, not by the range it replaced.
        #expect(
            try Self.findings(
                [Self.response("201", "WideNote"), Self.response("2XX", "Note")], [Self.response("201", "WideNote")])
                == [])
        let ok = Self.response("201", "Note")
        #expect(
            try Self.findings(
                [ok, Self.response("default", "Error")],
                [ok, Self.response("404", "Error"), Self.response("500", "Problem")]) == [
                    "response-property-removed breaking POST /notes → 500"
                ])
    }
}
