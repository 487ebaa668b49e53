import Foundation
import KeelContract
import KeelContractFixtures
import KeelContractTools
import KeelTesting
import Testing

/// Base/revision pairs for the compatibility gate (issue #4), each asserting the exact rule ids found.
@Suite struct ContractDiffFixtureTests {
    static let base = """
        openapi: 3.1.0
        info: {title: Notes, version: 1.0.0}
        paths:
          /notes/{id}:
            get:
              parameters:
                - {name: id, in: path, required: true, schema: {type: string}}
                - {name: X-Trace, in: header, required: false, schema: {type: string}}
                - {name: view, in: query, schema: {type: string, enum: [full, compact]}}
              responses:
                '200':
                  content:
                    application/json:
                      schema: {$ref: '#/components/schemas/Note'}
            put:
              requestBody:
                content:
                  application/json:
                    schema: {$ref: '#/components/schemas/NoteInput'}
              responses:
                '200': {description: ok}
        components:
          schemas:
            Note:
              type: object
              required: [id, title, kind, visibility]
              properties:
                id: {type: string}
                title: {type: string}
                kind: {type: string, enum: [text, checklist], x-extensible-enum: true}
                visibility: {type: string, enum: [private, shared]}
                tags: {type: array, items: {type: string}}
            NoteInput:
              type: object
              required: [title]
              properties:
                title: {type: string, maxLength: 200, pattern: '^.+$'}
                body: {type: [string, 'null'], minLength: 0}
                visibility: {type: string, enum: [private, shared]}
                labels: {type: array, maxItems: 10, items: {type: string}}
                priority: {type: integer, minimum: 0}
        """

    struct Fixture: CustomTestStringConvertible, Sendable {
        let name: String
        let edits: [(String, String)]
        let version: String
        let expected: [String]
        var baseEdits: [(String, String)] = []
        var testDescription: String { name }
    }

    static func apply(_ edits: [(String, String)], to text: String) -> String {
        edits.reduce(text) { text, edit in
            precondition(text.contains(edit.0), "fixture edit does not apply: \(edit.0)")
            return text.replacingOccurrences(of: edit.0, with: edit.1)
        }
    }

    static let fixtures: [Fixture] = [
        Fixture(name: "identical", edits: [], version: "1.0.0", expected: []),
        Fixture(
            name: "component renamed, same shape", edits: [("Note:\n", "Memo:\n"), ("schemas/Note'", "schemas/Memo'")],
            version: "1.0.0", expected: []),
        Fixture(
            name: "path renamed", edits: [("/notes/{id}:", "/items/{id}:")], version: "2.0.0",
            expected: ["api-path-added", "api-path-removed"]),
        // Found in review: the names are the description's own, the wire carries neither.
        Fixture(
            name: "path parameter renamed",
            edits: [("/notes/{id}:", "/notes/{noteId}:"), ("{name: id, in: path", "{name: noteId, in: path")],
            version: "1.0.0", expected: []),
        Fixture(
            name: "header name case changed", edits: [("{name: X-Trace, in: header", "{name: x-trace, in: header")],
            version: "1.0.0", expected: []),
        Fixture(
            name: "operation removed", edits: [("    put:\n      requestBody:", "    x-put:\n      requestBody:")],
            version: "2.0.0", expected: ["api-operation-removed"]),
        // The 200 became a 404: the success is gone, and the 404 is an answer installed clients never had.
        Fixture(
            name: "success response removed",
            edits: [("        '200':\n          content:", "        '404':\n          content:")], version: "2.0.0",
            expected: ["response-success-status-removed", "response-non-success-status-added"]),
        Fixture(
            name: "success status added",
            edits: [
                (
                    "      '200': {description: ok}",
                    "      '200': {description: ok}\n        '202': {description: queued}"
                )
            ],
            version: "1.1.0", expected: ["response-success-status-added"]),
        Fixture(
            name: "non-success status added",
            edits: [
                (
                    "      '200': {description: ok}",
                    "      '200': {description: ok}\n        '409': {description: stale}"
                )
            ],
            version: "1.1.0", expected: ["response-non-success-status-added"]),
        // The 200 became the range 2XX: 200 is still answered (its body compared), the range may also answer
        // successes installed clients were not written for.
        Fixture(
            name: "success code replaced by its range",
            edits: [("        '200':\n          content:", "        '2XX':\n          content:")], version: "1.1.0",
            expected: ["response-success-status-added"]),
        Fixture(
            name: "success range written in another case",
            edits: [("        '2XX':\n          content:", "        '2xx':\n          content:")], version: "1.0.0",
            expected: [], baseEdits: [("        '200':\n          content:", "        '2XX':\n          content:")]),
        Fixture(
            name: "response media type removed",
            edits: [
                (
                    "            application/json:\n              schema: {$ref: '#/components/schemas/Note'}",
                    "            application/xml:\n              schema: {$ref: '#/components/schemas/Note'}"
                )
            ], version: "2.0.0", expected: ["response-media-type-removed"]),
        // Found in review: a member a response never carries (writeOnly), or a request never sends (readOnly),
        // is one-way, as the generator reads it.
        Fixture(
            name: "writeOnly response property removed",
            edits: [("        password: {type: string, writeOnly: true}\n", "")], version: "1.0.0", expected: [],
            baseEdits: [
                (
                    "        tags: {type: array, items: {type: string}}\n",
                    "        tags: {type: array, items: {type: string}}\n        password: {type: string, writeOnly: true}\n"
                )
            ]),
        Fixture(
            name: "required readOnly member added to a request body",
            edits: [
                ("      required: [title]\n", "      required: [title, id]\n"),
                (
                    "        labels: {type: array, maxItems: 10, items: {type: string}}\n",
                    "        labels: {type: array, maxItems: 10, items: {type: string}}\n        id: {type: string, readOnly: true}\n"
                ),
            ], version: "1.0.0", expected: []),
        // Found in an outside audit: each of these passed the gate as compatible.
        Fixture(
            name: "required response property became writeOnly",
            edits: [("        title: {type: string}\n", "        title: {type: string, writeOnly: true}\n")],
            version: "2.0.0", expected: ["response-property-became-write-only"]),
        Fixture(
            name: "writeOnly response property now sent as another type",
            edits: [("        password: {type: string, writeOnly: true}\n", "        password: {type: integer}\n")],
            version: "2.0.0", expected: ["response-property-type-changed"],
            baseEdits: [
                (
                    "        tags: {type: array, items: {type: string}}\n",
                    "        tags: {type: array, items: {type: string}}\n        password: {type: string, writeOnly: true}\n"
                )
            ]),
        Fixture(
            name: "required response member without a property schema became optional",
            edits: [("required: [id, title, kind, visibility, extra]", "required: [id, title, kind, visibility]")],
            version: "2.0.0", expected: ["response-property-became-optional"],
            baseEdits: [("required: [id, title, kind, visibility]", "required: [id, title, kind, visibility, extra]")]),
        Fixture(
            name: "required request member lost readOnly",
            edits: [("        id: {type: string, readOnly: true}\n", "        id: {type: string}\n")],
            version: "2.0.0", expected: ["request-property-became-required"],
            baseEdits: [
                ("      required: [title]\n", "      required: [title, id]\n"),
                (
                    "        labels: {type: array, maxItems: 10, items: {type: string}}\n",
                    "        labels: {type: array, maxItems: 10, items: {type: string}}\n        id: {type: string, readOnly: true}\n"
                ),
            ]),
        Fixture(
            name: "request additionalProperties schema added to an open object",
            edits: [
                (
                    "    NoteInput:\n      type: object\n",
                    "    NoteInput:\n      type: object\n      additionalProperties: {type: integer}\n"
                )
            ],
            version: "2.0.0", expected: ["request-body-additional-properties-narrowed"]),
        Fixture(
            name: "allOf part constrains a member the schema defines",
            edits: [
                (
                    "    NoteInput:\n      type: object\n",
                    "    NoteInput:\n      type: object\n      allOf: [{properties: {priority: {maximum: 5}}}]\n"
                )
            ],
            version: "2.0.0", expected: ["request-property-maximum-added"]),
        Fixture(
            name: "response media type lost its schema",
            edits: [
                (
                    "            application/json:\n              schema: {$ref: '#/components/schemas/Note'}",
                    "            application/json: {}"
                )
            ], version: "2.0.0", expected: ["response-media-type-schema-removed"]),
        Fixture(
            name: "query parameter now written as JSON content",
            edits: [
                (
                    "{name: view, in: query, schema: {type: string, enum: [full, compact]}}",
                    "{name: view, in: query, content: {application/json: {schema: {type: string, enum: [full, compact]}}}}"
                )
            ], version: "2.0.0", expected: ["request-parameter-content-type-changed"]),
        Fixture(
            name: "query parameter given by content narrowed",
            edits: [
                (
                    "content: {application/json: {schema: {type: string, enum: [full, compact]}}}",
                    "content: {application/json: {schema: {type: string, enum: [full]}}}"
                )
            ],
            version: "2.0.0", expected: ["request-parameter-enum-value-removed"],
            baseEdits: [
                (
                    "{name: view, in: query, schema: {type: string, enum: [full, compact]}}",
                    "{name: view, in: query, content: {application/json: {schema: {type: string, enum: [full, compact]}}}}"
                )
            ]),
        Fixture(
            name: "response property removed", edits: [("        tags: {type: array, items: {type: string}}\n", "")],
            version: "2.0.0", expected: ["response-property-removed"]),
        Fixture(
            name: "response property became optional",
            edits: [("required: [id, title, kind, visibility]", "required: [id, title, visibility]")], version: "2.0.0",
            expected: ["response-property-became-optional"]),
        Fixture(
            name: "response property became nullable",
            edits: [("        title: {type: string}\n", "        title: {type: [string, 'null']}\n")], version: "2.0.0",
            expected: ["response-property-became-nullable"]),
        Fixture(
            name: "response property type changed",
            edits: [("        id: {type: string}", "        id: {type: integer}")], version: "2.0.0",
            expected: ["response-property-type-changed"]),
        Fixture(
            name: "response body type changed",
            edits: [("    Note:\n      type: object", "    Note:\n      type: [object, array]")], version: "2.0.0",
            expected: ["response-body-type-changed"]),
        Fixture(
            name: "closed response enum value added",
            edits: [
                (
                    "        visibility: {type: string, enum: [private, shared]}\n        tags",
                    "        visibility: {type: string, enum: [private, shared, team]}\n        tags"
                )
            ], version: "2.0.0", expected: ["response-property-enum-value-added"]),
        Fixture(
            name: "extensible response enum value added",
            edits: [
                (
                    "enum: [text, checklist], x-extensible-enum: true",
                    "enum: [text, checklist, drawing], x-extensible-enum: true"
                )
            ], version: "1.1.0", expected: ["response-property-extensible-enum-value-added"]),
        Fixture(
            name: "open-enum pattern value added",
            edits: [
                (
                    "kind: {anyOf: [{type: string, enum: [text]}, {type: string}]}",
                    "kind: {anyOf: [{type: string, enum: [text, voice]}, {type: string}]}"
                )
            ],
            version: "1.1.0", expected: ["response-property-extensible-enum-value-added"],
            baseEdits: [
                (
                    "kind: {type: string, enum: [text, checklist], x-extensible-enum: true}",
                    "kind: {anyOf: [{type: string, enum: [text]}, {type: string}]}"
                )
            ]),
        Fixture(
            name: "x-extensible-enum list value added",
            edits: [
                (
                    "kind: {type: string, x-extensible-enum: [text]}",
                    "kind: {type: string, x-extensible-enum: [text, table]}"
                )
            ],
            version: "1.1.0", expected: ["response-property-extensible-enum-value-added"],
            baseEdits: [
                (
                    "kind: {type: string, enum: [text, checklist], x-extensible-enum: true}",
                    "kind: {type: string, x-extensible-enum: [text]}"
                )
            ]),
        Fixture(
            name: "new required request parameter",
            edits: [
                (
                    "        - {name: view, in: query,",
                    "        - {name: since, in: query, required: true, schema: {type: string}}\n        - {name: view, in: query,"
                )
            ], version: "2.0.0", expected: ["new-required-request-parameter"]),
        Fixture(
            name: "new optional request parameter",
            edits: [
                (
                    "        - {name: view, in: query,",
                    "        - {name: since, in: query, schema: {type: string}}\n        - {name: view, in: query,"
                )
            ], version: "1.1.0", expected: ["new-optional-request-parameter"]),
        Fixture(
            name: "request parameter became required",
            edits: [("{name: X-Trace, in: header, required: false,", "{name: X-Trace, in: header, required: true,")],
            version: "2.0.0", expected: ["request-parameter-became-required"]),
        Fixture(
            name: "request parameter type changed",
            edits: [
                (
                    "{name: id, in: path, required: true, schema: {type: string}}",
                    "{name: id, in: path, required: true, schema: {type: integer}}"
                )
            ], version: "2.0.0", expected: ["request-parameter-type-changed"]),
        Fixture(
            name: "request parameter enum value removed", edits: [("enum: [full, compact]", "enum: [full]")],
            version: "2.0.0", expected: ["request-parameter-enum-value-removed"]),
        Fixture(
            name: "new required request property",
            edits: [
                ("      required: [title]\n", "      required: [title, folder]\n"),
                (
                    "        priority: {type: integer, minimum: 0}",
                    "        priority: {type: integer, minimum: 0}\n        folder: {type: string}"
                ),
            ], version: "2.0.0", expected: ["new-required-request-property"]),
        Fixture(
            name: "request property became required",
            edits: [("      required: [title]\n", "      required: [title, body]\n")], version: "2.0.0",
            expected: ["request-property-became-required"]),
        Fixture(
            name: "request enum value removed",
            edits: [
                (
                    "        visibility: {type: string, enum: [private, shared]}\n        labels",
                    "        visibility: {type: string, enum: [private]}\n        labels"
                )
            ], version: "2.0.0", expected: ["request-property-enum-value-removed"]),
        Fixture(
            name: "request property type changed",
            edits: [("priority: {type: integer, minimum: 0}", "priority: {type: string}")], version: "2.0.0",
            expected: ["request-property-type-changed"]),
        // Found in review: narrowings of what a request accepts, and widenings of what a response sends,
        // that no rule looked at.
        Fixture(
            name: "request property without a type gets one",
            edits: [("priority: {description: anything}", "priority: {type: string}")], version: "2.0.0",
            expected: ["request-property-type-added"],
            baseEdits: [("priority: {type: integer, minimum: 0}", "priority: {description: anything}")]),
        Fixture(
            name: "request number limits tightened",
            edits: [
                (
                    "priority: {type: integer, minimum: 0}",
                    "priority: {type: integer, minimum: 0, multipleOf: 5, exclusiveMaximum: 100}"
                )
            ], version: "2.0.0",
            expected: ["request-property-multiple-of-added", "request-property-maximum-added"]),
        // Found in review of the above: the same bound written another way is no change.
        Fixture(
            name: "request bound rewritten as an exclusive one",
            edits: [("priority: {type: integer, minimum: 0}", "priority: {type: integer, exclusiveMinimum: -1}")],
            version: "1.0.0", expected: []),
        Fixture(
            name: "request bound made exclusive",
            edits: [("priority: {type: integer, minimum: 0}", "priority: {type: integer, exclusiveMinimum: 0}")],
            version: "2.0.0", expected: ["request-property-minimum-increased"]),
        Fixture(
            name: "request multipleOf that the old one implies is fine",
            edits: [
                (
                    "priority: {type: integer, minimum: 0, multipleOf: 10}",
                    "priority: {type: integer, minimum: 0, multipleOf: 5}"
                )
            ],
            version: "1.0.0", expected: [],
            baseEdits: [
                ("priority: {type: integer, minimum: 0}", "priority: {type: integer, minimum: 0, multipleOf: 10}")
            ]),
        Fixture(
            name: "request array and object limits tightened",
            edits: [
                (
                    "labels: {type: array, maxItems: 10, items: {type: string}}",
                    "labels: {type: array, maxItems: 10, uniqueItems: true, items: {type: string}}"
                ),
                (
                    "    NoteInput:\n      type: object\n",
                    "    NoteInput:\n      type: object\n      maxProperties: 4\n"
                ),
            ], version: "2.0.0",
            expected: ["request-property-unique-items-added", "request-body-max-properties-added"]),
        Fixture(
            name: "request property removed from a closed object",
            edits: [("        priority: {type: integer, minimum: 0}", "")], version: "2.0.0",
            expected: ["request-body-property-removed-from-closed-object"],
            baseEdits: [
                (
                    "    NoteInput:\n      type: object\n",
                    "    NoteInput:\n      type: object\n      additionalProperties: false\n"
                )
            ]),
        Fixture(
            name: "response property type dropped",
            edits: [("        id: {type: string}", "        id: {description: anything}")], version: "2.0.0",
            expected: ["response-property-type-removed"]),
        Fixture(
            name: "response array items dropped",
            edits: [("        tags: {type: array, items: {type: string}}", "        tags: {type: array}")],
            version: "2.0.0", expected: ["response-property-items-removed"]),
        Fixture(
            name: "response items that admitted anything dropped",
            edits: [("        tags: {type: array, items: {}}", "        tags: {type: array}")], version: "1.0.0",
            expected: [],
            baseEdits: [
                ("        tags: {type: array, items: {type: string}}", "        tags: {type: array, items: {}}")
            ]),
        Fixture(
            name: "response array made nullable through a union",
            edits: [
                (
                    "        tags: {type: array, items: {type: string}}",
                    "        tags: {oneOf: [{type: array, items: {type: string}}, {type: 'null'}]}"
                )
            ], version: "2.0.0", expected: ["response-property-became-nullable"]),
        Fixture(
            name: "response extra members widened",
            edits: [("meta: {type: object, additionalProperties: {type: string}}", "meta: {type: object}")],
            version: "2.0.0", expected: ["response-property-additional-properties-widened"],
            baseEdits: [
                (
                    "        tags: {type: array, items: {type: string}}",
                    "        tags: {type: array, items: {type: string}}\n        meta: {type: object, additionalProperties: {type: string}}"
                )
            ]),
        Fixture(
            name: "maxLength decreased", edits: [("maxLength: 200", "maxLength: 100")], version: "2.0.0",
            expected: ["request-property-max-length-decreased"]),
        Fixture(
            name: "maxLength relaxed is fine", edits: [("maxLength: 200", "maxLength: 300")], version: "1.1.0",
            expected: []),
        Fixture(
            name: "minLength increased", edits: [("minLength: 0", "minLength: 1")], version: "2.0.0",
            expected: ["request-property-min-length-increased"]),
        Fixture(
            name: "pattern changed", edits: [("pattern: '^.+$'", "pattern: '^[a-z]+$'")], version: "2.0.0",
            expected: ["request-property-pattern-changed"]),
        Fixture(
            name: "pattern added",
            edits: [
                (
                    "        priority: {type: integer, minimum: 0}",
                    "        priority: {type: integer, minimum: 0, pattern: '^1'}"
                )
            ], version: "2.0.0", expected: ["request-property-pattern-added"]),
        Fixture(
            name: "maxItems decreased", edits: [("maxItems: 10", "maxItems: 5")], version: "2.0.0",
            expected: ["request-property-max-items-decreased"]),
        Fixture(
            name: "minimum increased", edits: [("minimum: 0", "minimum: 1")], version: "2.0.0",
            expected: ["request-property-minimum-increased"]),
        Fixture(
            name: "maximum added",
            edits: [("priority: {type: integer, minimum: 0}", "priority: {type: integer, minimum: 0, maximum: 5}")],
            version: "2.0.0", expected: ["request-property-maximum-added"]),
        Fixture(
            name: "request property no longer nullable",
            edits: [("body: {type: [string, 'null'], minLength: 0}", "body: {type: string, minLength: 0}")],
            version: "2.0.0", expected: ["request-property-became-not-nullable"]),
        Fixture(
            name: "request enum added",
            edits: [
                (
                    "        priority: {type: integer, minimum: 0}",
                    "        priority: {type: integer, minimum: 0, enum: [0, 1, 2]}"
                )
            ],
            version: "2.0.0", expected: ["request-property-enum-added"]),
        Fixture(
            name: "request const added",
            edits: [
                (
                    "        body: {type: [string, 'null'], minLength: 0}",
                    "        body: {type: [string, 'null'], minLength: 0, const: fixed}"
                )
            ],
            version: "2.0.0", expected: ["request-property-enum-added"]),
        Fixture(
            name: "request extensible enum added is no narrowing",
            edits: [
                (
                    "        priority: {type: integer, minimum: 0}",
                    "        priority: {type: integer, minimum: 0, enum: [0, 1], x-extensible-enum: true}"
                )
            ],
            version: "1.1.0", expected: []),
        Fixture(
            name: "request media type removed",
            edits: [
                (
                    "          application/json:\n            schema: {$ref: '#/components/schemas/NoteInput'}",
                    "          multipart/form-data:\n            schema: {$ref: '#/components/schemas/NoteInput'}"
                )
            ], version: "2.0.0", expected: ["request-media-type-removed"]),
        Fixture(
            name: "request body became required",
            edits: [("    put:\n      requestBody:\n", "    put:\n      requestBody:\n        required: true\n")],
            version: "2.0.0", expected: ["request-body-became-required"]),
        Fixture(
            name: "security added",
            edits: [
                ("    get:\n      parameters:", "    get:\n      security: [{oauth: [notes.read]}]\n      parameters:")
            ], version: "2.0.0", expected: ["api-security-added"]),
        Fixture(
            name: "version changed without changes", edits: [], version: "1.0.1",
            expected: ["api-version-changed-without-changes"]),
        Fixture(
            name: "breaking change without a major bump",
            edits: [("        tags: {type: array, items: {type: string}}\n", "")], version: "1.1.0",
            expected: ["breaking-changes-without-major-version-bump", "response-property-removed"]),
        Fixture(
            name: "new optional response property is fine",
            edits: [
                (
                    "        tags: {type: array, items: {type: string}}\n",
                    "        tags: {type: array, items: {type: string}}\n        pinned: {type: boolean}\n"
                )
            ], version: "1.1.0", expected: []),
        Fixture(
            name: "request property became optional is fine",
            edits: [("      required: [title]\n", "      required: []\n")], version: "1.1.0", expected: []),
        Fixture(
            name: "response property became required is fine",
            edits: [("required: [id, title, kind, visibility]", "required: [id, title, kind, visibility, tags]")],
            version: "1.1.0", expected: []),
        Fixture(
            name: "closed response enum value removed is fine",
            edits: [
                (
                    "        visibility: {type: string, enum: [private, shared]}\n        tags",
                    "        visibility: {type: string, enum: [private]}\n        tags"
                )
            ], version: "1.1.0", expected: []),
        Fixture(
            name: "path added",
            edits: [
                (
                    "components:\n",
                    "  /folders:\n    get:\n      responses:\n        '200': {description: ok}\ncomponents:\n"
                )
            ], version: "1.1.0", expected: ["api-path-added"]),
        Fixture(
            name: "response union variant added",
            edits: [
                (
                    "        tags: {type: array, items: {type: string}}\n        content: {oneOf: [{type: string}, {type: integer}]}",
                    "        tags: {type: array, items: {type: string}}\n        content: {oneOf: [{type: string}, {type: integer}, {type: boolean}]}"
                )
            ],
            version: "2.0.0", expected: ["response-property-one-of-added"],
            baseEdits: [
                (
                    "        tags: {type: array, items: {type: string}}\n",
                    "        tags: {type: array, items: {type: string}}\n        content: {oneOf: [{type: string}, {type: integer}]}\n"
                )
            ]),
        Fixture(
            name: "discriminator value added to a response union",
            edits: [
                (
                    "mapping: {round: '#/components/schemas/Note'}",
                    "mapping: {round: '#/components/schemas/Note', disc: '#/components/schemas/Note'}"
                )
            ],
            version: "2.0.0", expected: ["response-property-one-of-added"],
            baseEdits: [
                (
                    "        tags: {type: array, items: {type: string}}\n",
                    "        tags: {type: array, items: {type: string}}\n        shape: {oneOf: [{$ref: '#/components/schemas/Note'}], discriminator: {propertyName: kind, mapping: {round: '#/components/schemas/Note'}}}\n"
                )
            ]),
        Fixture(
            name: "request union variant removed",
            edits: [("priority: {oneOf: [{type: integer}, {type: string}]}", "priority: {oneOf: [{type: integer}]}")],
            version: "2.0.0", expected: ["request-property-one-of-removed"],
            baseEdits: [
                ("priority: {type: integer, minimum: 0}", "priority: {oneOf: [{type: integer}, {type: string}]}")
            ]),
        Fixture(
            name: "request union variant added is fine",
            edits: [
                (
                    "priority: {oneOf: [{type: integer}, {type: string}]}",
                    "priority: {oneOf: [{type: integer}, {type: string}, {type: boolean}]}"
                )
            ],
            version: "1.1.0", expected: [],
            baseEdits: [
                ("priority: {type: integer, minimum: 0}", "priority: {oneOf: [{type: integer}, {type: string}]}")
            ]),
        Fixture(
            name: "OpenAPI 3.0 nullable added to a response property",
            edits: [("title: {type: string, nullable: false}", "title: {type: string, nullable: true}")],
            version: "2.0.0", expected: ["response-property-became-nullable"],
            baseEdits: [
                ("openapi: 3.1.0", "openapi: 3.0.3"),
                ("        title: {type: string}\n", "        title: {type: string, nullable: false}\n"),
                ("body: {type: [string, 'null'], minLength: 0}", "body: {type: string, minLength: 0}"),
            ]),
        // Found in review: a parameter that left (or moved to another place) was never reported, and a
        // request body removed was silent.
        Fixture(
            name: "query parameter removed",
            edits: [("        - {name: view, in: query, schema: {type: string, enum: [full, compact]}}\n", "")],
            version: "1.1.0", expected: ["request-parameter-removed"]),
        Fixture(
            name: "parameter moved from the query to a header",
            edits: [("{name: view, in: query,", "{name: view, in: header,")],
            version: "1.1.0", expected: ["request-parameter-removed", "new-optional-request-parameter"]),
        Fixture(
            name: "request body removed",
            edits: [
                (
                    "      requestBody:\n        content:\n          application/json:\n            schema: {$ref: '#/components/schemas/NoteInput'}\n",
                    ""
                )
            ], version: "1.1.0", expected: ["request-body-removed"]),
        // Found in review: `application/json; charset=utf-8` read as another media type — the old one "gone",
        // and the schema under it never compared.
        Fixture(
            name: "media type parameters and case name the same type, whose schema is still compared",
            edits: [
                (
                    "            application/json:\n              schema: {$ref: '#/components/schemas/Note'}",
                    "            Application/JSON; charset=utf-8:\n              schema: {$ref: '#/components/schemas/Note'}"
                ),
                ("        tags: {type: array, items: {type: string}}\n", ""),
            ], version: "1.1.0",
            expected: ["breaking-changes-without-major-version-bump", "response-property-removed"]),
        // Found in review: `format` and `additionalProperties` were never compared.
        Fixture(
            name: "response format removed",
            edits: [("id: {type: string, format: uuid}", "id: {type: string}")], version: "2.0.0",
            expected: ["response-property-format-removed"],
            baseEdits: [("        id: {type: string}\n", "        id: {type: string, format: uuid}\n")]),
        Fixture(
            name: "response format narrowed is no change for the client",
            edits: [("format: int64", "format: int32")], version: "1.1.0", expected: [],
            baseEdits: [("        id: {type: string}\n", "        id: {type: integer, format: int64}\n")]),
        Fixture(
            name: "request format added",
            edits: [("priority: {type: integer, minimum: 0}", "priority: {type: integer, minimum: 0, format: int32}")],
            version: "2.0.0", expected: ["request-property-format-added"]),
        Fixture(
            name: "request format widened accepts all it did",
            edits: [("format: int32", "format: int64")], version: "1.1.0", expected: [],
            baseEdits: [
                ("priority: {type: integer, minimum: 0}", "priority: {type: integer, minimum: 0, format: int32}")
            ]),
        Fixture(
            name: "request closed to members it does not name",
            edits: [
                (
                    "    NoteInput:\n      type: object\n",
                    "    NoteInput:\n      type: object\n      additionalProperties: false\n"
                )
            ],
            version: "2.0.0", expected: ["request-body-additional-properties-disallowed"]),
        Fixture(
            name: "request additional properties tightened",
            edits: [("additionalProperties: {type: string}", "additionalProperties: {type: string, maxLength: 10}")],
            version: "2.0.0", expected: ["request-property-max-length-added"],
            baseEdits: [
                (
                    "    NoteInput:\n      type: object\n",
                    "    NoteInput:\n      type: object\n      additionalProperties: {type: string}\n"
                )
            ]),
        // Found in an outside audit: JSON Schema's integer is a number whose fraction is zero, so a request
        // widened from integer to number, or a response narrowed from number to integer, breaks no client
        // (oasdiff: type generalized / specialized); both were reported breaking.
        Fixture(
            name: "request property widened from integer to number",
            edits: [("priority: {type: integer, minimum: 0}", "priority: {type: number, minimum: 0}")],
            version: "1.0.0", expected: ["request-property-type-generalized"]),
        Fixture(
            name: "request parameter widened from a string to a string or an integer",
            edits: [
                (
                    "{name: X-Trace, in: header, required: false, schema: {type: string}}",
                    "{name: X-Trace, in: header, required: false, schema: {type: [string, integer]}}"
                )
            ],
            version: "1.0.0", expected: ["request-parameter-type-generalized"]),
        Fixture(
            name: "response property narrowed from number to integer",
            edits: [("        score: {type: number}\n", "        score: {type: integer}\n")], version: "1.0.0",
            expected: ["response-property-type-specialized"], baseEdits: [Self.scoreAdded]),
        Fixture(
            name: "response property widened from integer to number",
            edits: [("        score: {type: integer}\n", "        score: {type: number}\n")], version: "2.0.0",
            expected: ["response-property-type-changed"],
            baseEdits: [Self.scoreAdded, ("score: {type: number}", "score: {type: integer}")]),
        Fixture(
            name: "request property narrowed from number to integer",
            edits: [("priority: {type: number, minimum: 0}", "priority: {type: integer, minimum: 0}")],
            version: "2.0.0", expected: ["request-property-type-changed"],
            baseEdits: [("priority: {type: integer, minimum: 0}", "priority: {type: number, minimum: 0}")]),
        // Found in an outside audit: in OpenAPI 3.1 the keywords beside a `$ref` apply (JSON Schema 2020-12),
        // and a constraint added there was not seen.
        Fixture(
            name: "enum added beside a $ref in a request (3.1)",
            edits: [
                (
                    "mood: {$ref: '#/components/schemas/Mood'}",
                    "mood: {$ref: '#/components/schemas/Mood', enum: [happy]}"
                )
            ],
            version: "2.0.0", expected: ["request-property-enum-added"], baseEdits: Self.moodAdded),
        // Found in review: where the target and the keyword beside its `$ref` both give a bound, the tighter
        // holds; read as the sibling's, removing a looser sibling was reported as a tightened limit.
        Fixture(
            name: "a looser bound beside a $ref removed is no change (3.1)",
            edits: [
                ("mood: {$ref: '#/components/schemas/Mood', maxLength: 5}", "mood: {$ref: '#/components/schemas/Mood'}")
            ],
            version: "1.0.0", expected: [],
            baseEdits: Self.moodAdded + [
                (
                    "mood: {$ref: '#/components/schemas/Mood'}",
                    "mood: {$ref: '#/components/schemas/Mood', maxLength: 5}"
                ),
                ("    Mood: {type: string}\n", "    Mood: {type: string, maxLength: 3}\n"),
            ]),
        Fixture(
            name: "a description beside a $ref is no change (3.1)",
            edits: [
                (
                    "mood: {$ref: '#/components/schemas/Mood'}",
                    "mood: {$ref: '#/components/schemas/Mood', description: how}"
                )
            ],
            version: "1.0.0", expected: [], baseEdits: Self.moodAdded),
        // Found in an outside audit: bounds were compared as Doubles, so a maximum lowered by one above 2^53
        // was no change.
        Fixture(
            name: "maximum lowered by one above 2^53",
            edits: [("maximum: 9007199254740993", "maximum: 9007199254740992")], version: "2.0.0",
            expected: ["request-property-maximum-decreased"],
            baseEdits: [
                ("priority: {type: integer, minimum: 0}", "priority: {type: integer, maximum: 9007199254740993}")
            ]),
        // Found in an outside audit: these changes went unreported.
        Fixture(
            name: "optional request property removed from an open object",
            edits: [("        labels: {type: array, maxItems: 10, items: {type: string}}\n", "")], version: "1.1.0",
            expected: ["request-property-removed"]),
        // Found in review: a request body rewritten as a union of variants read as every member removed.
        Fixture(
            name: "request object rewritten as a one-variant union keeps its members",
            edits: [
                (
                    "    NoteInput:\n      type: object\n",
                    "    NoteInput:\n      oneOf: [{$ref: '#/components/schemas/NoteInputV1'}]\n    NoteInputV1:\n      type: object\n"
                )
            ],
            version: "1.0.0", expected: []),
        Fixture(
            name: "operation added to a path that was there",
            edits: [
                (
                    "    put:\n      requestBody:",
                    "    delete:\n      responses:\n        '204': {description: gone}\n    put:\n      requestBody:"
                )
            ],
            version: "1.0.0", expected: ["api-operation-added"]),
        Fixture(
            name: "operation deprecated",
            edits: [("    put:\n      requestBody:", "    put:\n      deprecated: true\n      requestBody:")],
            version: "1.0.0", expected: ["api-operation-deprecated"]),
        Fixture(
            name: "array parameter style changed",
            edits: [("{name: ids, in: query, schema:", "{name: ids, in: query, style: pipeDelimited, schema:")],
            version: "2.0.0", expected: ["request-parameter-style-changed"], baseEdits: [Self.idsAdded]),
        Fixture(
            name: "array parameter explode changed",
            edits: [("{name: ids, in: query, schema:", "{name: ids, in: query, explode: false, schema:")],
            version: "2.0.0", expected: ["request-parameter-explode-changed"], baseEdits: [Self.idsAdded]),
        Fixture(
            name: "explode written out as its default is no change",
            edits: [("{name: ids, in: query, schema:", "{name: ids, in: query, style: form, explode: true, schema:")],
            version: "1.0.0", expected: [], baseEdits: [Self.idsAdded]),
        Fixture(
            name: "OAuth scope added to the requirement",
            edits: [("security: [{oauth: [read]}]", "security: [{oauth: [read, write]}]")], version: "2.0.0",
            expected: ["api-security-scope-added", "api-security-scope-added"], baseEdits: Self.oauthAdded),
        Fixture(
            name: "OAuth scope dropped from the requirement is no change",
            edits: [("security: [{oauth: [read]}]", "security: [{oauth: []}]")], version: "1.0.0",
            expected: [], baseEdits: Self.oauthAdded),
        // Found in review: a query parameter's name is matched exactly (only a header's in any case).
        Fixture(
            name: "API key in the query renamed in another case",
            edits: [("name: api_key}", "name: API_KEY}")], version: "2.0.0", expected: ["api-security-scheme-changed"],
            baseEdits: Self.oauthAdded + [
                (
                    "oauth: {type: oauth2, flows: {clientCredentials: {tokenUrl: 'https://auth.example/token', scopes: {read: r, write: w}}}}",
                    "oauth: {type: apiKey, in: query, name: api_key}"
                ),
                ("security: [{oauth: [read]}]", "security: [{oauth: []}]"),
            ]),
        Fixture(
            name: "API key header renamed in another case is no change",
            edits: [("name: X-Api-Key}", "name: x-api-key}")], version: "1.0.0", expected: [],
            baseEdits: Self.oauthAdded + [
                (
                    "oauth: {type: oauth2, flows: {clientCredentials: {tokenUrl: 'https://auth.example/token', scopes: {read: r, write: w}}}}",
                    "oauth: {type: apiKey, in: header, name: X-Api-Key}"
                ),
                ("security: [{oauth: [read]}]", "security: [{oauth: []}]"),
            ]),
        Fixture(
            name: "security scheme redefined",
            edits: [
                (
                    "oauth: {type: oauth2, flows: {clientCredentials: {tokenUrl: 'https://auth.example/token', scopes: {read: r, write: w}}}}",
                    "oauth: {type: apiKey, in: header, name: X-Key}"
                )
            ], version: "2.0.0", expected: ["api-security-scheme-changed"], baseEdits: Self.oauthAdded),
        Fixture(
            name: "request property not added",
            edits: [
                (
                    "title: {type: string, maxLength: 200, pattern: '^.+$'}",
                    "title: {type: string, maxLength: 200, pattern: '^.+$', not: {const: x}}"
                )
            ],
            version: "2.0.0", expected: ["request-property-not-added"]),
        Fixture(
            name: "response tuple element type changed",
            edits: [
                (
                    "tags: {type: array, prefixItems: [{type: string}]}",
                    "tags: {type: array, prefixItems: [{type: integer}]}"
                )
            ],
            version: "2.0.0", expected: ["response-property-type-changed"],
            baseEdits: [
                (
                    "        tags: {type: array, items: {type: string}}\n",
                    "        tags: {type: array, prefixItems: [{type: string}]}\n"
                )
            ]),
        // Found in an outside audit: a scheme renamed with the same definition was reported as new security,
        // and OAuth flows were not compared.
        Fixture(
            name: "security scheme renamed, same definition",
            edits: [
                ("security: [{oauth: [read]}]", "security: [{auth: [read]}]"),
                ("    oauth: {type: oauth2", "    auth: {type: oauth2"),
            ],
            version: "1.0.0", expected: [], baseEdits: Self.oauthAdded),
        // Found in a review of the fix: the scopes were still compared by the old name, so a scope added under
        // the new name went unreported.
        Fixture(
            name: "security scheme renamed and a scope added",
            edits: [
                ("security: [{oauth: [read]}]", "security: [{auth: [read, write]}]"),
                ("    oauth: {type: oauth2", "    auth: {type: oauth2"),
            ],
            version: "2.0.0", expected: ["api-security-scope-added", "api-security-scope-added"],
            baseEdits: Self.oauthAdded),
        Fixture(
            name: "parameter content type given with a charset is no change",
            edits: [("content: {application/json: {schema:", "content: {'application/json; charset=utf-8': {schema:")],
            version: "1.0.0", expected: [],
            baseEdits: [
                (
                    "{name: view, in: query, schema: {type: string, enum: [full, compact]}}",
                    "{name: view, in: query, content: {application/json: {schema: {type: string, enum: [full, compact]}}}}"
                )
            ]),
        Fixture(
            name: "OAuth flow replaced",
            edits: [
                (
                    "flows: {clientCredentials: {tokenUrl: 'https://auth.example/token',",
                    "flows: {authorizationCode: {authorizationUrl: 'https://auth.example/authorize', tokenUrl: 'https://auth.example/token',"
                )
            ], version: "2.0.0", expected: ["api-security-scheme-changed"], baseEdits: Self.oauthAdded),
        Fixture(
            name: "OAuth token URL moved",
            edits: [("tokenUrl: 'https://auth.example/token'", "tokenUrl: 'https://login.example/token'")],
            version: "2.0.0", expected: ["api-security-scheme-changed"], baseEdits: Self.oauthAdded),
        Fixture(
            name: "OAuth flow added beside the old one is no change",
            edits: [
                (
                    "flows: {clientCredentials:",
                    "flows: {implicit: {authorizationUrl: 'https://auth.example/authorize', scopes: {read: r}}, clientCredentials:"
                )
            ], version: "1.0.0", expected: [], baseEdits: Self.oauthAdded),
        // Found in an outside audit: response header fields were not compared at all.
        Fixture(
            name: "required response header removed",
            edits: [("            ETag: {required: true, schema: {type: string}}\n", "")], version: "2.0.0",
            expected: ["response-required-header-removed"], baseEdits: [Self.headersAdded]),
        Fixture(
            name: "optional response header removed",
            edits: [("            X-Rate: {schema: {type: integer}}\n", "")], version: "1.1.0",
            expected: ["response-optional-header-removed"], baseEdits: [Self.headersAdded]),
        Fixture(
            name: "response header became optional",
            edits: [("ETag: {required: true, schema", "etag: {required: false, schema")], version: "2.0.0",
            expected: ["response-header-became-optional"], baseEdits: [Self.headersAdded]),
        Fixture(
            name: "response header type changed",
            edits: [("X-Rate: {schema: {type: integer}}", "x-rate: {schema: {type: string}}")], version: "2.0.0",
            expected: ["response-header-type-changed"], baseEdits: [Self.headersAdded]),
        Fixture(
            name: "response header added and made required",
            edits: [("X-Rate: {schema", "X-Rate: {required: true, schema")],
            version: "1.0.0", expected: [], baseEdits: [Self.headersAdded]),
    ]

    /// An array query parameter `ids` on `GET /notes/{id}`, for the fixtures that change how it is written.
    static let idsAdded = (
        "        - {name: view, in: query,",
        "        - {name: ids, in: query, schema: {type: array, items: {type: string}}}\n        - {name: view, in: query,"
    )

    /// An OAuth scheme, required with scope `read` by every operation, for the security fixtures.
    static let oauthAdded = [
        (
            "info: {title: Notes, version: 1.0.0}\n",
            "info: {title: Notes, version: 1.0.0}\nsecurity: [{oauth: [read]}]\n"
        ),
        (
            "components:\n  schemas:\n",
            "components:\n  securitySchemes:\n    oauth: {type: oauth2, flows: {clientCredentials: {tokenUrl: 'https://auth.example/token', scopes: {read: r, write: w}}}}\n  schemas:\n"
        ),
    ]

    /// A request member `mood` that refers to a named schema, for the fixtures that add keywords beside it.
    static let moodAdded = [
        (
            "        priority: {type: integer, minimum: 0}",
            "        priority: {type: integer, minimum: 0}\n        mood: {$ref: '#/components/schemas/Mood'}"
        ),
        ("    NoteInput:\n", "    Mood: {type: string}\n    NoteInput:\n"),
    ]

    /// A response member `score` (a number), for the fixtures that change its type.
    static let scoreAdded = (
        "        tags: {type: array, items: {type: string}}\n",
        "        tags: {type: array, items: {type: string}}\n        score: {type: number}\n"
    )

    /// Header fields on `GET /notes/{id}`'s 200 answer, for the fixtures that change them.
    static let headersAdded = (
        "        '200':\n          content:\n",
        "        '200':\n          headers:\n            ETag: {required: true, schema: {type: string}}\n            X-Rate: {schema: {type: integer}}\n          content:\n"
    )

    @Test(arguments: fixtures)
    func reportsExactlyTheExpectedRules(fixture: Fixture) throws {
        let baseText = Self.apply(fixture.baseEdits, to: Self.base)
        var revisionText = Self.apply(fixture.edits, to: baseText)
        revisionText = revisionText.replacingOccurrences(of: "version: 1.0.0}", with: "version: \(fixture.version)}")
        let base = try OpenAPIDocument.parse(baseText, name: "base.yaml")
        let revision = try OpenAPIDocument.parse(revisionText, name: "revision.yaml")
        let changes = try ContractDiff(base: base, revision: revision).changes()
        #expect(changes.map(\.rule).sorted() == fixture.expected.sorted(), "\(changes)")
        // The severity decides what the CI gate lets through: each finding must carry the rating its rule
        // has for an installed client, not just the right name.
        for change in changes {
            let expected = try #require(Self.severities[change.rule], "no recorded severity for \(change.rule)")
            #expect(change.severity == expected, "\(change.rule) rated \(change.severity), expected \(expected)")
        }
    }

    /// What each rule the fixtures find means for a client built against the base.
    static let severities: [String: ContractChange.Severity] = {
        var table: [String: ContractChange.Severity] = [:]
        // Anything that makes the server refuse what an installed client sends, or send what it can't read.
        for rule in [
            "api-operation-removed", "api-path-removed", "api-security-added", "new-required-request-parameter",
            "new-required-request-property", "request-body-became-required", "request-parameter-became-required",
            "request-parameter-enum-value-removed", "request-parameter-type-changed",
            "request-property-became-not-nullable",
            "request-property-became-required", "request-property-enum-value-removed", "request-property-enum-added",
            "request-media-type-removed",
            "request-property-max-items-decreased",
            "request-property-max-length-decreased", "request-property-maximum-added",
            "request-property-min-length-increased",
            "request-property-minimum-increased", "request-property-one-of-removed", "request-property-pattern-added",
            "request-property-pattern-changed", "request-property-type-changed", "response-body-type-changed",
            "response-media-type-removed", "response-property-became-nullable", "response-property-became-optional",
            "response-property-enum-value-added", "response-property-one-of-added", "response-property-removed",
            "response-property-type-changed", "response-success-status-removed", "response-property-format-removed",
            "request-property-format-added", "request-body-additional-properties-disallowed",
            "request-property-max-length-added", "request-property-type-added", "request-property-multiple-of-added",
            "request-property-unique-items-added",
            "request-body-max-properties-added", "request-body-property-removed-from-closed-object",
            "response-property-type-removed", "response-property-items-removed",
            "response-property-additional-properties-widened", "response-required-header-removed",
            "response-header-became-optional", "response-header-type-changed", "request-property-maximum-decreased",
            "request-parameter-style-changed", "request-parameter-explode-changed", "api-security-scope-added",
            "api-security-scheme-changed", "response-property-became-write-only",
            "request-body-additional-properties-narrowed", "response-media-type-schema-removed",
            "request-parameter-content-type-changed", "request-property-not-added",
        ] {
            table[rule] = .breaking
        }
        // What an installed client sends is no longer read: someone must decide whether that loses anything.
        for rule in [
            "breaking-changes-without-major-version-bump", "request-parameter-removed", "request-body-removed",
            "response-optional-header-removed", "request-property-removed",
            // A success installed clients cannot tell from the one they know: when they get it, the description
            // does not say.
            "response-success-status-added",
        ] {
            table[rule] = .warning
        }
        for rule in [
            "api-path-added", "api-version-changed-without-changes", "new-optional-request-parameter",
            "response-property-extensible-enum-value-added", "request-property-type-generalized",
            "request-parameter-type-generalized", "response-property-type-specialized", "api-operation-added",
            "api-operation-deprecated", "response-non-success-status-added",
        ] {
            table[rule] = .info
        }
        return table
    }()

    /// Schemas that are equal text are only skipped when that is safe: a nested `$ref` is followed in each
    /// description, and 3.0's `nullable` means nothing in 3.1.
    @Test func equalSchemaTextCanStillDiffer() throws {
        func description(_ openAPI: String, authorName: String) -> String {
            """
            openapi: \(openAPI)
            info: {title: Notes, version: 1.0.0}
            paths:
              /notes:
                post:
                  requestBody:
                    content:
                      application/json:
                        schema:
                          type: object
                          properties:
                            title: {type: string, nullable: true}
                            author: {$ref: '#/components/schemas/Author'}
                  responses:
                    '204': {description: done}
            components:
              schemas:
                Author:
                  type: object
                  properties:
                    name: \(authorName)
            """
        }
        let base = try OpenAPIDocument.parse(description("3.1.0", authorName: "{type: string}"), name: "base.yaml")
        let tighter = try OpenAPIDocument.parse(
            description("3.1.0", authorName: "{type: string, maxLength: 10}"), name: "revision.yaml")
        #expect(
            try ContractDiff(base: base, revision: tighter).changes().map(\.rule).sorted()
                == ["breaking-changes-without-major-version-bump", "request-property-max-length-added"])
        let base30 = try OpenAPIDocument.parse(description("3.0.3", authorName: "{type: string}"), name: "base.yaml")
        let rules = try ContractDiff(base: base30, revision: base).changes().map(\.rule)
        #expect(rules.contains("request-property-became-not-nullable"), "\(rules)")
    }

    /// Found in an outside audit: in 3.1, keywords beside a `$ref` to another file were dropped — a `maxLength`
    /// or `enum` added there passed the gate. Plain keywords join the target; siblings with `$ref`s of their
    /// own still cannot (their location is this file's).
    @Test func keywordsBesideAReferenceToAnotherFileAreCompared() throws {
        let directory = try TemporaryDirectory(prefix: "keel-diff-siblings")
        for (side, mood) in [
            ("base", "{$ref: 'ext/common.yaml#/Mood'}"), ("revision", "{$ref: 'ext/common.yaml#/Mood', maxLength: 5}"),
        ] {
            try FileManager.default.createDirectory(at: directory.url("\(side)/ext"), withIntermediateDirectories: true)
            try Data(
                """
                openapi: 3.1.0
                info: {title: Notes, version: 2.0.0}
                paths:
                  /notes:
                    put:
                      requestBody:
                        content:
                          application/json:
                            schema: {type: object, properties: {mood: \(mood)}}
                      responses:
                        '200': {description: ok}
                """.utf8
            ).write(to: directory.url("\(side)/api.yaml"))
            try Data("Mood: {type: string}\n".utf8).write(to: directory.url("\(side)/ext/common.yaml"))
        }
        let documents = try OpenAPIDocument.load(from: [
            directory.url("base/api.yaml"), directory.url("revision/api.yaml"),
        ])
        let changes = try ContractDiff(base: documents[0], revision: documents[1]).changes()
        #expect(
            changes.map(\.rule) == [
                "breaking-changes-without-major-version-bump", "request-property-max-length-added",
            ],
            "\(changes)")
    }

    /// A schema in another file whose own `$ref`s are relative to that file: followed from there, on both
    /// sides (they used to be resolved against the root description and reported as dangling).
    @Test func referencesInsideAnotherFileAreFollowedFromThatFile() throws {
        let directory = try TemporaryDirectory(prefix: "keel-diff-files")
        for (side, tagType) in [("base", "string"), ("revision", "integer")] {
            try FileManager.default.createDirectory(at: directory.url("\(side)/ext"), withIntermediateDirectories: true)
            try Data(
                """
                openapi: 3.1.0
                info: {title: Notes, version: 1.0.0}
                paths:
                  /notes:
                    get:
                      responses:
                        '200':
                          description: ok
                          content:
                            application/json:
                              schema: {$ref: 'ext/schemas.yaml#/Note'}
                """.utf8
            ).write(to: directory.url("\(side)/api.yaml"))
            try Data("Note:\n  type: object\n  properties:\n    tag: {$ref: 'common.yaml#/Tag'}\n".utf8).write(
                to: directory.url("\(side)/ext/schemas.yaml"))
            try Data("Tag: {type: \(tagType)}\n".utf8).write(to: directory.url("\(side)/ext/common.yaml"))
        }
        let documents = try OpenAPIDocument.load(from: [
            directory.url("base/api.yaml"), directory.url("revision/api.yaml"),
        ])
        let changes = try ContractDiff(base: documents[0], revision: documents[1]).changes()
        #expect(
            changes.map(\.rule) == ["breaking-changes-without-major-version-bump", "response-property-type-changed"],
            "\(changes)")
        #expect(changes.last?.pointer == "/properties/tag")
    }

    /// The findings of `revision` against `base` (files named base.yaml and revision.yaml), the version
    /// warning left out.
    static func changes(_ base: String, _ revision: String) throws -> [ContractChange] {
        try ContractDiff(
            base: try OpenAPIDocument.parse(base, name: "base.yaml"),
            revision: try OpenAPIDocument.parse(revision, name: "revision.yaml")
        ).changes().filter { $0.rule != "breaking-changes-without-major-version-bump" }
    }

    static func rules(_ base: String, _ revision: String) throws -> [String] {
        let changes = try ContractDiff(
            base: try OpenAPIDocument.parse(base, name: "base.yaml"),
            revision: try OpenAPIDocument.parse(revision, name: "revision.yaml")
        ).changes()
        return changes.map(\.rule).filter { $0 != "breaking-changes-without-major-version-bump" }.sorted()
    }

    /// A description with one operation whose 200 response has `schema`.
    static func response(_ schema: String, openAPI: String = "3.1.0", components: String = "{}") -> String {
        """
        openapi: \(openAPI)
        info: {title: t, version: 1.0.0}
        paths:
          /m:
            get:
              responses:
                '200':
                  description: ok
                  content:
                    application/json:
                      schema: \(schema)
        components:
          schemas: \(components)
        """
    }

    static func union(_ variants: String, components: String = "{}", discriminator: String = "") -> String {
        """
        openapi: 3.1.0
        info: {title: t, version: 1.0.0}
        paths:
          /shapes:
            get:
              responses:
                '200':
                  description: ok
                  content:
                    application/json:
                      schema: {oneOf: \(variants)\(discriminator)}
            post:
              requestBody:
                content:
                  application/json:
                    schema: {oneOf: \(variants)\(discriminator)}
              responses: {'204': {description: ok}}
        components:
          schemas: \(components)
        """
    }

    /// The diff agrees with the generator (#16): what the generator makes a closed Swift enum — a union told
    /// apart by JSON kind, an integer enum, a boolean marker — is breaking to widen in a response.
    @Test func whatTheGeneratorClosesIsBreakingToWidenInAResponse() throws {
        let customers =
            "{Customer: {type: object, required: [id, created], properties: {id: {type: string}, created: {type: integer}}}, "
            + "DeletedCustomer: {type: object, required: [id, deleted], properties: {id: {type: string}, deleted: {type: boolean, enum: [true]}}}}"
        let expandable = "[{type: string, maxLength: 5000}, {$ref: '#/components/schemas/Customer'}]"
        let withDeleted =
            "[{type: string, maxLength: 5000}, {$ref: '#/components/schemas/Customer'}, {$ref: '#/components/schemas/DeletedCustomer'}]"
        // The expandable field gains its deleted form: a new case of the generated enum.
        #expect(
            try Self.rules(
                Self.union(expandable, components: customers), Self.union(withDeleted, components: customers))
                == ["response-body-one-of-added"])
        // The id's schema changing inside its variant follows the normal rules (a wider maxLength: nothing).
        #expect(
            try Self.rules(
                Self.union(expandable, components: customers),
                Self.union(expandable.replacingOccurrences(of: "5000", with: "6000"), components: customers)) == [])
        // An integer enum that grows, and a boolean marker that may now be false: breaking in a response.
        func body(_ schema: String) -> String {
            Self.response("{type: object, required: [value], properties: {value: \(schema)}}", openAPI: "3.0.0")
        }
        #expect(
            try Self.rules(body("{type: integer, enum: [1, 2]}"), body("{type: integer, enum: [1, 2, 3]}"))
                == ["response-property-enum-value-added"])
        #expect(
            try Self.rules(body("{type: boolean, enum: [true]}"), body("{type: boolean, enum: [true, false]}")).contains
            {
                $0.hasPrefix("response-") && $0.hasSuffix("enum-value-added")
            })
        // `const` markers are enums of one value (the generator's reading): another value, or none at all
        // (the member may now hold anything of its type), is breaking in a response.
        for (old, new, rule) in [
            ("{type: integer, const: 7}", "{type: integer, const: 8}", "response-property-enum-value-added"),
            ("{type: string, const: account}", "{type: string, const: customer}", "response-property-enum-value-added"),
            ("{type: boolean, const: true}", "{type: boolean, const: false}", "response-property-enum-value-added"),
            ("{type: boolean, enum: [true]}", "{type: boolean}", "response-property-enum-removed"),
            ("{type: string, enum: [a, b]}", "{type: string}", "response-property-enum-removed"),
            ("{type: string, const: hello}", "{type: string, const: hello}", nil),
            ("{type: number, const: 1.5}", "{type: number, const: 2.5}", nil),  // a Double: not checked
            ("{type: number, const: 1.5}", "{type: number}", nil),
            ("{type: string, enum: [a], x-extensible-enum: true}", "{type: string}", nil),
        ] {
            #expect(try Self.rules(body(old), body(new)) == (rule.map { [$0] } ?? []), "\(old) → \(new)")
        }
        // The open-enum pattern with null beside the known values (3.1, as the 3.0 upgrade writes nullable).
        func open(_ values: String) -> String {
            Self.response(
                "{type: object, properties: {kind: {anyOf: [{type: [string, 'null'], enum: [\(values), null]}, {type: string}]}}}",
                openAPI: "3.1.0")
        }
        #expect(try Self.rules(open("a, b"), open("a, b, c")) == ["response-property-extensible-enum-value-added"])
    }

    /// Members inherited from `allOf` parts are compared like the schema's own (the generator makes one
    /// struct of them): a closed enum that grows there, or a member no longer sent, breaks old clients; a
    /// member moved from one part to another changes nothing.
    @Test func membersOfAllOfPartsAreComparedAsTheSchemasOwn() throws {
        func spec(status: String, part: String = "", base: String = "") -> String {
            """
            openapi: 3.0.0
            info: {title: t, version: 1.0.0}
            paths:
              /charges/{id}:
                get:
                  parameters: [{name: id, in: path, required: true, schema: {type: string}}]
                  responses:
                    '200':
                      description: ok
                      content:
                        application/json:
                          schema: {$ref: '#/components/schemas/Charge'}
            components:
              schemas:
                Charge:
                  allOf:
                    - {$ref: '#/components/schemas/Base'}
                    - type: object
                      required: [amount]
                      properties:
                        amount: {type: integer}\(part)
                Base:
                  type: object
                  required: [id, status]
                  properties:
                    id: {type: string}
                    status: {type: string, enum: [\(status)]}\(base)
            """
        }
        let changes = try ContractDiff(
            base: try OpenAPIDocument.parse(spec(status: "active"), name: "base.yaml"),
            revision: try OpenAPIDocument.parse(spec(status: "active, archived"), name: "revision.yaml")
        ).changes().filter { $0.rule != "breaking-changes-without-major-version-bump" }
        #expect(changes.map(\.rule) == ["response-property-enum-value-added"])
        #expect(changes.first?.pointer == "/properties/status", "\(changes)")
        // The change happens in the part: its origin is the part's member, so Charge and Base used elsewhere
        // are one root cause. A member removed from the part, likewise.
        #expect(changes.first?.origin == "revision.yaml#/components/schemas/Base/properties/status")
        let removed = try ContractDiff(
            base: try OpenAPIDocument.parse(
                spec(status: "active", base: "\n        email: {type: string}"), name: "base.yaml"),
            revision: try OpenAPIDocument.parse(spec(status: "active"), name: "revision.yaml")
        ).changes().filter { $0.rule != "breaking-changes-without-major-version-bump" }
        #expect(removed.map(\.rule) == ["response-property-removed"])
        #expect(removed.first?.origin == "revision.yaml#/components/schemas/Base/properties/email")
        let moved = spec(status: "active", part: "\n            email: {type: string}")
        #expect(moved.contains("            email: {type: string}\n"))
        #expect(try Self.rules(spec(status: "active", base: "\n        email: {type: string}"), moved) == [])
    }

    /// Found in review: union variants told apart by names that are not on the wire, or by JSON text.
    @Test func unionVariantsAreComparedAsClientsTellThemApart() throws {
        let shapes =
            "{Circle: {type: object, properties: {r: {type: number}}}, Square: {type: object, properties: {s: {type: number}}}}"
        let renamed =
            "{Round: {type: object, properties: {r: {type: number}}}, Square: {type: object, properties: {s: {type: number}}}}"
        // Renamed behind a $ref and reordered, without a discriminator: nothing on the wire changed.
        #expect(
            try Self.rules(
                Self.union(
                    "[{$ref: '#/components/schemas/Circle'}, {$ref: '#/components/schemas/Square'}]", components: shapes
                ),
                Self.union(
                    "[{$ref: '#/components/schemas/Square'}, {$ref: '#/components/schemas/Round'}]", components: renamed
                )) == [])
        // Inline variants reordered, annotated, loosened: no variant added or removed.
        #expect(
            try Self.rules(
                Self.union("[{type: string, format: date}, {type: integer, maximum: 10}]"),
                Self.union("[{maximum: 20, type: integer, description: a count}, {format: date, type: string}]")) == [])
        // An explicit null variant where the union was already nullable changes nothing; one more real kind does.
        #expect(
            try Self.rules(
                Self.union("[{type: string}, {type: 'null'}]"), Self.union("[{type: string}, {const: null}]")) == [])
        #expect(
            try Self.rules(Self.union("[{type: string}]"), Self.union("[{type: string}, {type: boolean}]"))
                == ["response-body-one-of-added"])
        #expect(
            try Self.rules(Self.union("[{type: string}, {type: boolean}]"), Self.union("[{type: string}]"))
                == ["request-body-one-of-removed"])
        // With a discriminator the names are wire values: a renamed component is a new value.
        let discriminator = ", discriminator: {propertyName: kind}"
        #expect(
            try Self.rules(
                Self.union("[{$ref: '#/components/schemas/Circle'}]", components: shapes, discriminator: discriminator),
                Self.union("[{$ref: '#/components/schemas/Round'}]", components: renamed, discriminator: discriminator))
                == ["request-body-one-of-removed", "response-body-one-of-added"])
        // Becoming "X or null" is becoming nullable.
        #expect(
            try Self.rules(Self.union("[{type: string}]"), Self.union("[{type: string}, {type: 'null'}]")) == [
                "response-body-became-nullable"
            ])
    }

    /// A variant's own schema follows the normal rules through the union (#16), in responses and requests,
    /// with and without a discriminator, even where nothing else reaches it.
    @Test func changesInsideUnionVariantsAreFoundThroughTheUnion() throws {
        func spec(reasons: String, limit: Int) -> String {
            """
            openapi: 3.1.0
            info: {title: t, version: 1.0.0}
            paths:
              /things/{id}:
                get:
                  responses:
                    '200':
                      description: ok
                      content: {application/json: {schema: {$ref: '#/components/schemas/Thing'}}}
                post:
                  requestBody:
                    content: {application/json: {schema: {$ref: '#/components/schemas/Thing'}}}
                  responses: {'204': {description: ok}}
            components:
              schemas:
                Thing:
                  type: object
                  properties:
                    owner: {anyOf: [{type: string, maxLength: \(limit)}, {$ref: '#/components/schemas/Gone'}]}
                    pet:
                      oneOf: [{$ref: '#/components/schemas/Cat'}]
                      discriminator: {propertyName: kind, mapping: {cat: '#/components/schemas/Cat'}}
                Gone:
                  type: object
                  required: [id, deleted]
                  properties:
                    id: {type: string}
                    deleted: {type: boolean, enum: [true]}
                    reason: {type: string, enum: [\(reasons)]}
                Cat:
                  type: object
                  required: [kind]
                  properties: {kind: {type: string}, lives: {type: integer, maximum: \(limit)}}
            """
        }
        let changes = try ContractDiff(
            base: try OpenAPIDocument.parse(spec(reasons: "merged", limit: 20), name: "base.yaml"),
            revision: try OpenAPIDocument.parse(spec(reasons: "merged, expired", limit: 10), name: "revision.yaml")
        ).changes().filter { $0.rule != "breaking-changes-without-major-version-bump" }
        let found = changes.map { "\($0.method ?? "") \($0.rule) \($0.pointer ?? "") \($0.origin ?? "-")" }
        #expect(
            found == [
                "GET response-property-enum-value-added /properties/owner/anyOf/1/properties/reason revision.yaml#/components/schemas/Gone/properties/reason",
                "POST request-property-max-length-decreased /properties/owner/anyOf/0 revision.yaml#/components/schemas/Thing/properties/owner/anyOf/0",
                "POST request-property-maximum-decreased /properties/pet/oneOf/0/properties/lives revision.yaml#/components/schemas/Cat/properties/lives",
            ], "\(found)")
        #expect(
            changes.map(\.message) == [
                "new value \"expired\" of a closed enum: old clients fail to decode it",
                "request body (application/json) property /properties/owner/anyOf/0: maxLength 20 → 10",
                "request body (application/json) property /properties/pet/oneOf/0/properties/lives: maximum 20 → 10",
            ])
    }

    /// Expandable fields make every resource reachable from every operation, through itself too: each
    /// change is compared once, found in every operation that can receive it, once per operation (at the
    /// shortest way in), and the report groups it into one entry.
    @Test func aChangeReachedThroughExpandableFieldsIsOneRootCauseAcrossOperations() throws {
        let base = PaymentsAPI.yaml(resources: 40)
        let revision = base.replacingOccurrences(
            of: "object: {type: string, enum: [resource_7]}\n",
            with: "object: {type: string, enum: [resource_7, gone]}\n")
        #expect(revision != base)
        let changes = try Self.changes(base, revision)
        // Every GET reaches the deleted form of resource 7 (owner of resource 0, through parents from the others).
        #expect(Set(changes.compactMap(\.path)).count == 40)
        #expect(Set(changes.map(\.rule)) == ["response-property-enum-value-added"])
        #expect(Dictionary(grouping: changes, by: { $0.path ?? "" }).values.allSatisfy { $0.count == 1 })
        #expect(
            changes.first { $0.path == "/v1/resource_0/{id}" }?.pointer == "/properties/owner/anyOf/2/properties/object"
        )
        let groups = ContractChangeGroup.grouping(changes)
        #expect(groups.count == 1)
        #expect(groups.first?.origin == "revision.yaml#/components/schemas/deleted_resource_7/properties/object")
    }

    /// OpenAPI 3.0 `nullable: true` beside a `$ref` makes that use nullable (as the generator and validation
    /// read it): adding it in a response, or dropping it in a request, is breaking at the use, with the
    /// enclosing schema as origin; a target that already admits null makes the keyword change nothing.
    @Test func nullableBesideAReferenceIsTheUsesOwnChange() throws {
        func spec(owner: String, payer: String, tag: String) -> String {
            """
            openapi: 3.0.3
            info: {title: Refs, version: 1.0.0}
            paths:
              /charges:
                get:
                  responses:
                    '200':
                      content:
                        application/json:
                          schema: {$ref: '#/components/schemas/Charge'}
                post:
                  requestBody:
                    content:
                      application/json:
                        schema: {$ref: '#/components/schemas/ChargeInput'}
                  responses:
                    '204': {description: ok}
            components:
              schemas:
                Account:
                  type: object
                  required: [id]
                  properties: {id: {type: string}}
                Tag: {type: string, nullable: true}
                Charge:
                  type: object
                  properties:
                    owner: \(owner)
                    tag: \(tag)
                ChargeInput:
                  type: object
                  properties:
                    payer: \(payer)
            """
        }
        let plain = "{$ref: '#/components/schemas/Account'}"
        let nullable = "{$ref: '#/components/schemas/Account', nullable: true}"
        let tag = "{$ref: '#/components/schemas/Tag'}"
        let tagNullable = "{$ref: '#/components/schemas/Tag', nullable: true}"
        let found = try Self.changes(
            spec(owner: plain, payer: nullable, tag: tag), spec(owner: nullable, payer: plain, tag: tagNullable))
        #expect(
            found.map { "\($0.method ?? "") \($0.rule) \($0.pointer ?? "") \($0.origin ?? "-")" } == [
                "GET response-property-became-nullable /properties/owner revision.yaml#/components/schemas/Charge/properties/owner",
                "POST request-property-became-not-nullable /properties/payer revision.yaml#/components/schemas/ChargeInput/properties/payer",
            ], "\(found)")
        #expect(
            try Self.changes(
                spec(owner: nullable, payer: nullable, tag: tag), spec(owner: nullable, payer: nullable, tag: tag)
            ).isEmpty)
    }

    /// `allOf` with a single `$ref` and a description (the 3.0 way to document a reference) is the
    /// referenced schema: a new value of the wrapped enum is found at the member, and `nullable: true` on the
    /// wrapper is the member's own.
    @Test func aSinglePartAllOfWrapperIsTheSchemaItWraps() throws {
        func spec(status: String, level: String, wrapper: String) -> String {
            """
            openapi: 3.0.3
            info: {title: Wrappers, version: 1.0.0}
            paths:
              /x:
                get:
                  responses:
                    '200':
                      content:
                        application/json:
                          schema: {$ref: '#/components/schemas/X'}
            components:
              schemas:
                Status: {type: string, enum: [\(status)]}
                Level: {type: integer, enum: [\(level)]}
                X:
                  type: object
                  properties:
                    s: {allOf: [{$ref: '#/components/schemas/Status'}], description: wrapped\(wrapper)}
                    l: {allOf: [{$ref: '#/components/schemas/Level'}]}
            """
        }
        let found = try ContractDiff(
            base: try OpenAPIDocument.parse(spec(status: "a, b", level: "1, 2", wrapper: ""), name: "base.yaml"),
            revision: try OpenAPIDocument.parse(
                spec(status: "a, b, c", level: "1, 2, 3", wrapper: ", nullable: true"), name: "revision.yaml")
        ).changes().filter { $0.rule != "breaking-changes-without-major-version-bump" }
        #expect(
            Set(
                found.map {
                    "\($0.rule) \($0.pointer ?? "") \($0.message.contains("\"c\"") || $0.message.contains("3"))"
                })
                == [
                    "response-property-enum-value-added /properties/s true",
                    "response-property-enum-value-added /properties/l true",
                    "response-property-became-nullable /properties/s false",
                ], "\(found.map(\.description))")
    }

    /// A plain member that becomes a union (or the other way) is read as a union of one variant, itself: a
    /// response that may now send another kind, or a request that no longer accepts one, is breaking; the
    /// variants of the same kind are compared with each other; widening a request, or narrowing a response,
    /// is not reported.
    @Test func aMemberThatBecomesAUnionIsComparedAsAUnionOfItself() throws {
        func spec(_ members: [String: String]) -> String {
            """
            openapi: 3.0.3
            info: {title: Unions, version: 1.0.0}
            paths:
              /charges:
                get:
                  responses:
                    '200':
                      content:
                        application/json:
                          schema:
                            type: object
                            properties:
                              id: \(members["id"]!)
                              owner: \(members["owner"]!)
                post:
                  requestBody:
                    content:
                      application/json:
                        schema:
                          type: object
                          properties:
                            k: \(members["k"]!)
                            u: \(members["u"]!)
                            w: \(members["w"]!)
                  responses:
                    '204': {description: ok}
            components:
              schemas:
                Account:
                  type: object
                  required: [id]
                  properties: {id: {type: string}}
            """
        }
        let account = "{$ref: '#/components/schemas/Account'}"
        let expandable = "{anyOf: [{type: string}, \(account)]}"
        let base = spec([
            "id": "{type: string}", "owner": account, "k": "{type: string}", "u": expandable, "w": "{type: string}",
        ])
        let revision = spec([
            "id": expandable, "owner": expandable, "k": "{anyOf: [{type: integer}, {type: boolean}]}", "u": account,
            "w": "{anyOf: [{type: string, maxLength: 10}, {type: integer}]}",
        ])
        let found = try Self.changes(base, revision)
        #expect(
            found.map { "\($0.method ?? "") \($0.rule) \($0.pointer ?? "")" } == [
                "GET response-property-any-of-added /properties/id",
                "GET response-property-any-of-added /properties/owner",
                "POST request-property-any-of-removed /properties/k",
                "POST request-property-any-of-removed /properties/u",
                "POST request-property-max-length-added /properties/w/anyOf/0",
            ], "\(found.map(\.description))")
        // Each names the kind that is new to the response, or no longer accepted by the request.
        let kinds = ["(object)", "(string)", "(string)", "(string)", "maxLength 10"]
        for (change, kind) in zip(found, kinds) { #expect(change.message.contains(kind), "\(change.message)") }
    }

    /// A change in a shared parameter or response (`components/parameters`, `components/responses`, their
    /// schemas written inline) is one root cause, its origin the component: one entry however many
    /// operations use it.
    @Test func sharedParametersAndResponsesAreOriginsToo() throws {
        func spec(values: String, required: Bool, codes: String) -> String {
            let paths = (0..<4).map { index in
                """
                  /items\(index):
                    get:
                      parameters: [{$ref: '#/components/parameters/View'}, {$ref: '#/components/parameters/Limit'}]
                      responses:
                        '200': {description: ok}
                        default: {$ref: '#/components/responses/Error'}
                """
            }.joined(separator: "\n")
            return """
                openapi: 3.0.3
                info: {title: Shared, version: 1.0.0}
                paths:
                \(paths)
                components:
                  parameters:
                    View: {name: view, in: query, schema: {type: string, enum: [\(values)]}}
                    Limit: {name: limit, in: query, required: \(required), schema: {type: integer}}
                  responses:
                    Error:
                      description: failed
                      content:
                        application/json:
                          schema: {type: object, properties: {code: {type: string, enum: [\(codes)]}}}
                """
        }
        let changes = try ContractDiff(
            base: try OpenAPIDocument.parse(
                spec(values: "full, compact", required: false, codes: "a"), name: "base.yaml"),
            revision: try OpenAPIDocument.parse(
                spec(values: "full", required: true, codes: "a, b"), name: "revision.yaml")
        ).changes().filter { $0.rule != "breaking-changes-without-major-version-bump" }
        #expect(changes.count == 12)
        let groups = ContractChangeGroup.grouping(changes)
        #expect(
            groups.map { "\($0.rule) \($0.origin ?? "-") \($0.operations)" }.sorted() == [
                "request-parameter-became-required revision.yaml#/components/parameters/Limit 4",
                "request-parameter-enum-value-removed revision.yaml#/components/parameters/View/schema 4",
                "response-property-enum-value-added revision.yaml#/components/responses/Error/content/application~1json/schema/properties/code 4",
            ], "\(groups.map { $0.text(verbose: false) })")
    }

    /// A shared parameter added to several operations is one root cause, its origin the component; one
    /// written into each operation has none (found in an outside audit: three findings, `origin: null`).
    @Test func aSharedParameterAddedToSeveralOperationsIsOneEntry() throws {
        func spec(added: String) -> String {
            let paths = (0..<3).map { index in
                """
                  /items\(index):
                    get:
                      parameters: [\(added)]
                      responses:
                        '200': {description: ok}
                """
            }.joined(separator: "\n")
            return """
                openapi: 3.0.3
                info: {title: Shared, version: 1.0.0}
                paths:
                \(paths)
                components:
                  parameters:
                    Tenant: {name: tenant, in: header, required: true, schema: {type: string}}
                """
        }
        let changes = try ContractDiff(
            base: try OpenAPIDocument.parse(spec(added: ""), name: "base.yaml"),
            revision: try OpenAPIDocument.parse(
                spec(added: "{$ref: '#/components/parameters/Tenant'}"), name: "revision.yaml")
        ).changes().filter { $0.rule == "new-required-request-parameter" }
        #expect(changes.count == 3)
        #expect(changes.allSatisfy { $0.origin == "revision.yaml#/components/parameters/Tenant" }, "\(changes)")
        let groups = ContractChangeGroup.grouping(changes)
        #expect(groups.count == 1 && groups.first?.operations == 3, "\(groups.map { $0.text(verbose: false) })")
        // Written inline in each operation, the same parameter is three places with no shared origin.
        let inline = try ContractDiff(
            base: try OpenAPIDocument.parse(spec(added: ""), name: "base.yaml"),
            revision: try OpenAPIDocument.parse(
                spec(added: "{name: tenant, in: header, required: true, schema: {type: string}}"), name: "revision.yaml"
            )
        ).changes().filter { $0.rule == "new-required-request-parameter" }
        #expect(inline.count == 3 && inline.allSatisfy { $0.origin == nil })
    }

    /// One change to a shared schema is one root cause whichever way each operation reaches it (the body
    /// itself, array items, a member): the messages name different places, the entry is one.
    @Test func oneChangeSeenFromDifferentPlacesIsOneEntry() throws {
        func spec(amount: String) -> String {
            """
            openapi: 3.1.0
            info: {title: Charges, version: 1.0.0}
            paths:
              /charge:
                get: {responses: {'200': {content: {application/json: {schema: {$ref: '#/components/schemas/Charge'}}}}}}
              /charges:
                get: {responses: {'200': {content: {application/json: {schema: {type: array, items: {$ref: '#/components/schemas/Charge'}}}}}}}
              /order:
                get: {responses: {'200': {content: {application/json: {schema: {type: object, properties: {charge: {$ref: '#/components/schemas/Charge'}}}}}}}}
            components:
              schemas:
                Charge: {type: object, properties: {amount: \(amount)}}
            """
        }
        let changes = try Self.changes(spec(amount: "{type: number}"), spec(amount: "{type: [number, 'null']}"))
        #expect(Set(changes.map(\.message)).count == 3)  // each names its place
        let groups = ContractChangeGroup.grouping(changes)
        #expect(groups.count == 1 && groups.first?.changes.count == 3 && groups.first?.operations == 3)
        #expect(groups.first?.origin == "revision.yaml#/components/schemas/Charge/properties/amount")
    }

    /// Two new values of one shared enum are two root causes: each gets its entry, named in it, with all of
    /// its places; neither is folded into the other's entry.
    @Test func twoNewValuesOfOneSharedEnumAreTwoEntries() throws {
        let base = PaymentsAPI.yaml(resources: 12)
        let revision = base.replacingOccurrences(
            of: "object: {type: string, enum: [resource_7]}\n",
            with: "object: {type: string, enum: [resource_7, gone, archived]}\n")
        #expect(revision != base)
        let changes = try Self.changes(base, revision)
        let groups = ContractChangeGroup.grouping(changes)
        #expect(groups.count == 2)
        for (group, value) in zip(groups, ["gone", "archived"]) {
            #expect(group.changes.allSatisfy { $0.message.contains("\"\(value)\"") }, "\(value)")
            #expect(group.text(verbose: false).contains("new value \"\(value)\""))
            #expect(group.changes.count == changes.count / 2)
        }
    }

    /// The open-enum pattern with its known values behind a reference: a new value is an extensible-enum
    /// addition, not a new union variant.
    @Test func aNewValueBehindAReferencedOpenEnumIsInfo() throws {
        func spec(_ values: String) -> String {
            Self.response(
                "{type: object, properties: {model: {anyOf: [{type: string}, {$ref: '#/components/schemas/IDs'}]}}}",
                components: "{IDs: {type: string, enum: \(values)}}")
        }
        #expect(try Self.rules(spec("[a, b]"), spec("[a, b, c]")) == ["response-property-extensible-enum-value-added"])
    }

    /// Found in review: security alternatives were flattened into one set of schemes.
    @Test func securityIsComparedByAlternatives() throws {
        func spec(_ security: String) -> String {
            "openapi: 3.1.0\ninfo: {title: t, version: 1.0.0}\npaths:\n  /a:\n    get:\n      security: \(security)\n      responses: {'200': {description: ok}}\n"
        }
        #expect(try Self.rules(spec("[{k: []}]"), spec("[{k: []}, {o: []}]")) == [])  // a new way in
        // anonymous access dropped
        #expect(try Self.rules(spec("[{k: []}, {}]"), spec("[{k: []}]")) == ["api-security-added"])
        #expect(try Self.rules(spec("[]"), spec("[{k: []}]")) == ["api-security-added"])
        #expect(try Self.rules(spec("[{k: [], o: []}]"), spec("[{k: []}]")) == [])  // asks for less
    }

    /// Found in review: a Swagger 2 style `in: body` parameter stopped the whole diff.
    @Test func aParameterOpenAPI3DoesNotDefineDoesNotStopTheDiff() throws {
        let spec =
            "openapi: 3.0.3\ninfo: {title: t, version: 1.0.0}\npaths:\n  /a:\n    get:\n      parameters:\n        - {name: x, in: body, schema: {type: string}}\n      responses: {'200': {description: ok}}\n"
        #expect(try Self.rules(spec, spec) == [])
    }

    /// Found in review: a version bump said "no other change" next to a change in a referenced file.
    @Test func aChangeInAReferencedFileIsAnotherChange() throws {
        let directory = try TemporaryDirectory(prefix: "keel-diff-version")
        for (side, version, required) in [("base", "1.0.0", "[name]"), ("revision", "1.0.1", "[]")] {
            try FileManager.default.createDirectory(at: directory.url(side), withIntermediateDirectories: true)
            try Data(
                """
                openapi: 3.1.0
                info: {title: t, version: \(version)}
                paths:
                  /a:
                    get:
                      responses:
                        '200': {description: ok, content: {application/json: {schema: {$ref: 'item.yaml'}}}}
                """.utf8
            ).write(to: directory.url("\(side)/api.yaml"))
            try Data("type: object\nrequired: \(required)\nproperties: {name: {type: string}}\n".utf8).write(
                to: directory.url("\(side)/item.yaml"))
        }
        let documents = try OpenAPIDocument.load(from: [
            directory.url("base/api.yaml"), directory.url("revision/api.yaml"),
        ])
        let rules = try ContractDiff(base: documents[0], revision: documents[1]).changes().map(\.rule)
        #expect(rules.contains("response-property-became-optional"))
        #expect(!rules.contains("api-version-changed-without-changes"), "\(rules)")
    }

    /// Found in review: `allOf` parts written in another file were left out of the merged object, so every
    /// change in them went unreported (the generator merges them, so models and gate disagreed), and moving
    /// an inline member into such a part was reported as its removal.
    @Test func allOfPartsInAnotherFileAreTheSchemasOwnMembers() throws {
        let directory = try TemporaryDirectory(prefix: "keel-diff-allof-files")
        let common = [
            "base": """
            Base:
              type: object
              required: [id]
              properties:
                id: {type: string}
                status: {type: string, enum: [a, b]}
                owner: {$ref: 'owner.yaml#/Owner'}
            BaseInput:
              type: object
              properties:
                owner: {type: string}
            """,
            "revision": """
            Base:
              type: object
              properties:
                id: {type: string}
                status: {type: string, enum: [a, b, c]}
                owner: {$ref: 'owner.yaml#/Owner'}
            BaseInput:
              type: object
              required: [owner, tenant]
              properties:
                owner: {type: string}
                tenant: {type: string}
            """,
        ]
        for side in ["base", "revision"] {
            try FileManager.default.createDirectory(at: directory.url("\(side)/ext"), withIntermediateDirectories: true)
            try Data(
                (Self.readAndWrite(read: "Note", write: "NoteInput")
                    + """
                        Note:
                          allOf:
                            - {$ref: 'ext/common.yaml#/Base'}
                            - {type: object, properties: {title: {type: string}}}
                        NoteInput:
                          allOf:
                            - {$ref: 'ext/common.yaml#/BaseInput'}
                            - {type: object, properties: {title: {type: string}}}

                    """).utf8
            ).write(to: directory.url("\(side)/api.yaml"))
            try Data(common[side]!.utf8).write(to: directory.url("\(side)/ext/common.yaml"))
            // A `$ref` inside the part is read from the part's own file.
            let ownerType = side == "base" ? "string" : "integer"
            try Data("Owner: {type: \(ownerType)}\n".utf8).write(to: directory.url("\(side)/ext/owner.yaml"))
        }
        let documents = try OpenAPIDocument.load(from: [
            directory.url("base/api.yaml"), directory.url("revision/api.yaml"),
        ])
        let changes = try ContractDiff(base: documents[0], revision: documents[1]).changes()
        let breaking = changes.filter { $0.severity == .breaking }.map(\.rule).sorted()
        #expect(
            breaking == [
                "new-required-request-property",
                "request-property-became-required", "response-property-became-optional",
                "response-property-enum-value-added", "response-property-type-changed",
            ], "\(changes)")
    }

    /// Found in review: parts shared by several `allOf` branches were walked once per path to them, so a
    /// dozen schemas took minutes. Each named part is merged once.
    @Test(.timeLimit(.minutes(1))) func sharedAllOfPartsAreMergedOnce() throws {
        let schemas = Self.sharedAllOfSchemas(levels: 14)
        func spec(_ lastType: String) -> String {
            """
            openapi: 3.1.0
            info: {title: T, version: 1.0.0}
            paths:
              /s:
                get:
                  responses:
                    '200': {description: ok, content: {application/json: {schema: {$ref: '#/components/schemas/S0'}}}}
            components:
              schemas:

            """ + schemas.replacingOccurrences(of: "last: {type: string}", with: "last: {type: \(lastType)}")
        }
        // 3^14 walks before (minutes: the time limit ends it); one per part now.
        let changes = try Self.changes(spec("string"), spec("integer"))
        #expect(changes.contains { $0.rule == "response-property-type-changed" }, "\(changes)")
    }

    /// Found in review: an enum inside a union (the usual 3.1 nullable form, `oneOf: [{$ref: Kind}, {type:
    /// 'null'}]`) was named by its values, so a new value made it "a variant removed and one added": an
    /// extensible enum's new value (MOB-API-001's allowed change) failed the gate, and a closed one's was
    /// misnamed. The variant is the same; its enum changes, under the enum rules.
    @Test func anEnumInsideAUnionChangesAsAnEnum() throws {
        func spec(_ values: String, extensible: Bool) -> String {
            Self.readAndWrite(read: "Note", write: "Note")
                + """
                    Note:
                      type: object
                      properties:
                        kind:
                          oneOf: [{$ref: '#/components/schemas/Kind'}, {type: 'null'}]
                    Kind: {type: string, enum: [\(values)]\(extensible ? ", x-extensible-enum: true" : "")}
                """
        }
        let extensible = try Self.changes(spec("a, b", extensible: true), spec("a, b, c", extensible: true))
        #expect(!extensible.contains { $0.severity == .breaking }, "\(extensible)")
        #expect(extensible.map(\.rule) == ["response-property-extensible-enum-value-added"], "\(extensible)")
        let added = try Self.changes(spec("a, b", extensible: false), spec("a, b, c", extensible: false))
        #expect(added.map(\.rule) == ["response-property-enum-value-added"], "\(added)")
        let removed = try Self.changes(spec("a, b, c", extensible: false), spec("a, b", extensible: false))
        #expect(removed.map(\.rule) == ["request-property-enum-value-removed"], "\(removed)")
        // Two enum variants of one kind, reordered: each pairs with the one sharing its values — no change.
        func union(_ first: String, _ second: String) -> String {
            spec("a, b", extensible: false).replacingOccurrences(
                of: "oneOf: [{$ref: '#/components/schemas/Kind'}, {type: 'null'}]",
                with: "oneOf: [{type: string, enum: [\(first)]}, {type: string, enum: [\(second)]}, {type: integer}]")
        }
        #expect(try Self.changes(union("a, b", "c, d"), union("c, d", "a, b")).isEmpty)
        let grown = try Self.changes(union("a, b", "c, d"), union("c, d, e", "a, b"))
        #expect(grown.map(\.rule) == ["response-property-enum-value-added"], "\(grown)")
    }

    /// A 3.1 description whose `GET /notes` answers the component `read` and whose `POST /notes` takes the
    /// component `write`, up to `components: schemas:` (append the schemas, indented by 4).
    static func readAndWrite(read: String, write: String) -> String {
        """
        openapi: 3.1.0
        info: {title: Notes, version: 1.0.0}
        paths:
          /notes:
            get:
              responses:
                '200': {description: ok, content: {application/json: {schema: {$ref: '#/components/schemas/\(read)'}}}}
            post:
              requestBody: {content: {application/json: {schema: {$ref: '#/components/schemas/\(write)'}}}}
              responses:
                '200': {description: ok}
        components:
          schemas:

        """
    }

    /// Schemas `S0`…`S<levels>` (under `components: schemas:`, indented by 4): each has a member `p<i>` and
    /// three `allOf` parts that are all the next one, which has `last` at the end — 3^levels paths to it.
    static func sharedAllOfSchemas(levels: Int) -> String {
        var schemas = ""
        for index in 0..<levels {
            let next = "{$ref: '#/components/schemas/S\(index + 1)'}"
            schemas += "    S\(index):\n      type: object\n      properties: {p\(index): {type: string}}\n"
            schemas += "      allOf: [\(next), \(next), \(next)]\n"
        }
        return schemas + "    S\(levels):\n      type: object\n      properties: {last: {type: string}}\n"
    }

    /// Found in an outside audit: a path with a line break and an escape sequence printed a fake finding
    /// line of its own in the text report. Every report line stays one line, control characters escaped.
    @Test func aReportLineStaysOneLineWhateverThePathHolds() throws {
        let base = try OpenAPIDocument.parse(
            #"{"openapi": "3.1.0", "info": {"title": "t", "version": "1.0.0"}, "paths": {"/a\u001b[31m\nINFO fake": {"get": {"responses": {"200": {"description": "ok"}}}}}}"#,
            name: "base.json")
        let revision = try OpenAPIDocument.parse(
            #"{"openapi": "3.1.0", "info": {"title": "t", "version": "2.0.0"}, "paths": {}}"#, name: "revision.json")
        let changes = try ContractDiff(base: base, revision: revision).changes()
        let text = ContractChangeGroup.grouping(changes).map { $0.text(verbose: true) }.joined()
        #expect(text.split(separator: "\n").count == changes.count, "\(text)")
        #expect(text.contains(#"/a\u{1B}[31m\nINFO fake"#) && !text.contains("\u{1B}"), "\(text)")
    }

    @Test func thereAreAtLeastFortyFixtures() {
        #expect(Self.fixtures.count >= 40)
        #expect(Set(Self.fixtures.map(\.name)).count == Self.fixtures.count)
    }
}
