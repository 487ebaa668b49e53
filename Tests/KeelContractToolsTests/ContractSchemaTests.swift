import Foundation
import KeelContract
import KeelContractTools
import KeelTesting
import Testing

/// Validating instances against a schema taken from a contract (issue #4, `keel contract validate`).
@Suite struct ContractSchemaTests {
    static let notes31 = """
        openapi: 3.1.0
        info: {title: notes, version: 1.0.0}
        paths: {}
        components:
          schemas:
            Note:
              type: object
              required: [id, visibility]
              properties:
                id: {type: string}
                visibility: {$ref: '#/components/schemas/Visibility'}
                deletedAt: {type: [string, "null"]}
                tags: {type: array, items: {$ref: '#/components/schemas/Tag'}}
            Visibility: {type: string, enum: [private, shared]}
            Tag: {type: string, minLength: 1}
        """

    @Test func aSchemaOfTheContractValidatesThroughItsReferences() throws {
        let note = try OpenAPIDocument.parse(Self.notes31).schema(at: "#/components/schemas/Note")
        #expect(note.validate(["id": "n1", "visibility": "shared", "deletedAt": nil, "tags": ["a"]]).isValid)
        let wrongEnum = note.validate(["id": "n1", "visibility": "public"])
        #expect(wrongEnum.errors.map(\.instanceLocation) == ["/visibility"])
        let emptyTag = note.validate(["id": "n1", "visibility": "private", "tags": ["ok", ""]])
        #expect(emptyTag.errors.map(\.instanceLocation) == ["/tags/1"])
        let missing = note.validate(["visibility": "private"])
        #expect(missing.errors.count == 1 && missing.errors[0].message.contains("id"), "\(missing.errors)")
    }

    @Test func openAPI30NullableAndBooleanExclusiveBoundsAreHonoured() throws {
        let document = try OpenAPIDocument.parse(
            """
            openapi: 3.0.3
            info: {title: x, version: 1.0.0}
            paths: {}
            components:
              schemas:
                Item:
                  type: object
                  properties:
                    note: {type: string, nullable: true}
                    title: {type: string}
                    price: {type: number, minimum: 0, exclusiveMinimum: true}
                    stock: {type: integer, maximum: 10, exclusiveMaximum: false}
                    default: {type: integer, minimum: 1, exclusiveMinimum: true}
                  example: {price: 0, exclusiveMinimum: true}
            """)
        let item = try document.schema(at: "#/components/schemas/Item")
        #expect(item.validate(["note": nil, "price": 1, "stock": 10]).isValid)
        #expect(item.validate(["title": nil]).errors.map(\.instanceLocation) == ["/title"])
        #expect(item.validate(["price": 0]).errors.map(\.instanceLocation) == ["/price"])  // exclusive
        #expect(item.validate(["stock": 11]).errors.map(\.instanceLocation) == ["/stock"])
        // A property named like a keyword is still a schema, rewritten like the others.
        #expect(item.validate(["default": 1]).errors.map(\.instanceLocation) == ["/default"])
        #expect(item.validate(["default": 2]).isValid)
    }

    /// OpenAPI 3.0 `nullable: true` admits null for the whole schema it sits on — beside `enum`, `anyOf`,
    /// `allOf` and `$ref` as beside `type` — as the generated models and `ContractDecoder` do; 3.1 ignores it.
    @Test func openAPI30NullableAdmitsNullBesideEnumUnionsAndReferences() throws {
        let text = """
            openapi: 3.0.0
            info: {title: x, version: 1.0.0}
            paths: {}
            components:
              schemas:
                Customer: {type: object, required: [id], properties: {id: {type: string}}}
                Charge:
                  type: object
                  properties:
                    capture: {type: string, enum: [auto, required], nullable: true}
                    customer: {nullable: true, anyOf: [{type: string, maxLength: 5000}, {$ref: '#/components/schemas/Customer'}]}
                    owner: {nullable: true, allOf: [{$ref: '#/components/schemas/Customer'}]}
                    payer: {$ref: '#/components/schemas/Customer', nullable: true}
                    mode: {type: string, enum: [live, test]}
                    source: {anyOf: [{type: string}, {$ref: '#/components/schemas/Customer'}]}
            """
        let charge = try OpenAPIDocument.parse(text).schema(at: "#/components/schemas/Charge")
        #expect(charge.validate(["capture": nil, "customer": nil, "owner": nil, "payer": nil]).isValid)
        #expect(charge.validate(["capture": "auto", "customer": "cus_1", "payer": ["id": "cus_2"]]).isValid)
        // Without nullable, null is still refused, and a nullable schema still checks its non-null values.
        #expect(Set(charge.validate(["mode": nil]).errors.map(\.instanceLocation)) == ["/mode"])
        #expect(!charge.validate(["source": nil]).isValid)
        #expect(!charge.validate(["capture": "manual"]).isValid)
        #expect(!charge.validate(["payer": ["name": "no id"]]).isValid)
        // In 3.1, `nullable` is not a keyword: null is refused.
        let charge31 = try OpenAPIDocument.parse(
            text.replacingOccurrences(of: "openapi: 3.0.0", with: "openapi: 3.1.0")
        )
        .schema(at: "#/components/schemas/Charge")
        #expect(!charge31.validate(["capture": nil]).isValid)
    }

    @Test func referencesIntoOtherFilesOfTheContractResolve() throws {
        let directory = try TemporaryDirectory(prefix: "keel-contract-schema")
        try Data(
            """
            components:
              schemas:
                Error:
                  type: object
                  required: [code]
                  properties: {code: {type: string, pattern: '^[A-Z_]+$'}}
            """.utf8
        ).write(to: directory.url("errors.yaml"))
        try Data(
            """
            openapi: 3.1.0
            info: {title: x, version: 1.0.0}
            paths: {}
            components:
              schemas:
                Failure: {$ref: 'errors.yaml#/components/schemas/Error'}
            """.utf8
        ).write(to: directory.url("api.yaml"))
        let failure = try OpenAPIDocument.load(from: directory.url("api.yaml")).schema(
            at: "#/components/schemas/Failure")
        #expect(failure.validate(["code": "NOTE_NOT_FOUND"]).isValid)
        #expect(failure.validate(["code": "not found"]).errors.map(\.instanceLocation) == ["/code"])
    }

    @Test func aReferenceThatIsNotAFragmentOrPointsAtNothingIsATypedError() throws {
        let document = try OpenAPIDocument.parse(Self.notes31)
        for reference in [
            "components/schemas/Note", "#/components/schemas/Missing", "other.yaml#/components/schemas/Note",
        ] {
            do {
                _ = try document.schema(at: reference)
                Issue.record("\(reference) must be refused")
            } catch {
                #expect(error.location == reference, "\(error)")
            }
        }
    }

    @Test func theSampleContractsNoteSchemaAcceptsANoteAndRefusesAnUnknownVisibility() throws {
        let contract = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
            .appendingPathComponent("contracts/notes-api.v1.yaml")
        let note = try OpenAPIDocument.load(from: contract).schema(at: "#/components/schemas/Note")
        let valid: JSONValue = [
            "id": "6f1c2a9e-0d3b-4c55-9a51-3b8e2f7d1c40", "title": "Groceries", "body": "milk", "kind": "checklist",
            "visibility": "private", "version": 3, "updatedAt": "2026-11-30T07:00:00Z",
        ]
        #expect(note.validate(valid, formatAssertion: true).isValid)
        guard case .object(var object) = valid else { return }
        object["visibility"] = "public"
        #expect(note.validate(.object(object)).errors.map(\.instanceLocation) == ["/visibility"])
        // `kind` is extensible for decoding, but a value the contract does not list yet is still a finding.
        object["visibility"] = "private"
        object["kind"] = "drawing"
        #expect(note.validate(.object(object)).errors.map(\.instanceLocation) == ["/kind"])
    }
}
