import Foundation
import KeelContract
import KeelSchema
import Testing

// MARK: - Fixture: the v1 client's models

/// Note kinds; the contract marks this enum extensible (`x-extensible-enum`).
enum NoteKind: String, ExtensibleEnum { case text, checklist }

/// Note visibility; the contract marks this enum closed.
enum Visibility: String, ClosedEnum { case `private`, shared }

/// A note as the v1 client knows it.
struct NoteV1: Codable, Equatable {
    var id: Int
    var title: String
    var kind: Extensible<NoteKind>
    var visibility: Visibility
    var tags: [String]
}

struct NotePageV1: Codable, Equatable {
    var notes: [NoteV1]
    var next: String?
}

/// The schema of the v1.1 server's note page (adds `pinned` and the `drawing` kind).
let notePageSchemaV11: JSONValue = [
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "required": ["notes"],
    "properties": [
        "notes": ["type": "array", "items": ["$ref": "#/$defs/note"]],
        "next": ["type": ["string", "null"]],
    ],
    "$defs": [
        "note": [
            "type": "object",
            "required": ["id", "title", "kind", "visibility"],
            "properties": [
                "id": ["type": "integer", "minimum": 1],
                "title": ["type": "string", "maxLength": 200],
                "kind": ["type": "string"],
                "visibility": ["enum": ["private", "shared"]],
                "tags": ["type": "array", "items": ["type": "string"]],
                "pinned": ["type": "boolean"],
            ],
        ]
    ],
]

/// The contract checks of MOB-API-001: an old client against a newer server.
@Suite struct OldClientContractTests {
    /// A v1.1 response: a new field at two depths (`pinned`, `meta.cursor`) and a new extensible value (`drawing`).
    let responseV11 = #"""
        {"notes": [
           {"id": 1, "title": "Groceries", "kind": "checklist", "visibility": "private", "tags": ["home"], "pinned": true,
            "meta": {"cursor": {"v": 2}, "history": [{"at": 1}]}},
           {"id": 2, "title": "Sketch", "kind": "drawing", "visibility": "shared", "tags": [], "pinned": false}
         ],
         "next": null,
         "server": {"region": "eu-1", "features": ["drawings"]}}
        """#

    @Test func oldClientDecodesNewFieldsAndKeepsANewExtensibleValueVisible() throws {
        let page = try ContractDecoder().decode(NotePageV1.self, from: Data(responseV11.utf8))
        #expect(page.notes.count == 2)
        #expect(page.notes[0].kind == .known(.checklist))
        #expect(page.notes[1].kind == .unknown("drawing"))  // fallback, not a guess
        #expect(page.notes[1].kind.isUnknown)
        #expect(page.notes[1].kind.knownValue == nil)
        // The unknown value goes back to the server unchanged.
        let reencoded = try JSONEncoder().encode(page.notes[1])
        #expect(try JSONValue(parsing: reencoded)["kind"] == "drawing")
    }

    @Test func undeclaredValueOfAClosedEnumFailsWithTypeValueAndPath() throws {
        let response =
            #"{"notes": [{"id":1,"title":"a","kind":"text","visibility":"private","tags":[]},"#
            + #"{"id":2,"title":"b","kind":"text","visibility":"private","tags":[]},"#
            + #"{"id":3,"title":"c","kind":"text","visibility":"private","tags":[]},"#
            + #"{"id":4,"title":"d","kind":"text","visibility":"team","tags":[]}]}"#
        do {
            _ = try ContractDecoder().decode(NotePageV1.self, from: Data(response.utf8))
            Issue.record("an undeclared closed-enum value must not decode")
        } catch {
            #expect(error.code == .undeclaredEnumValue)
            #expect(error.path == "notes[3].visibility")
            #expect(error.typeName == "Visibility")
            #expect(error.value == "team")
            #expect(error.description.contains("notes[3].visibility"))
        }
    }

    @Test func closedEnumFailureIsNotSwallowedByOptionalOrAnUnknownFallback() throws {
        struct Lenient: Codable { var visibility: Visibility? }
        // nil is for absent or null, never for "unknown".
        #expect(try ContractDecoder().decode(Lenient.self, from: Data(#"{}"#.utf8)).visibility == nil)
        #expect(try ContractDecoder().decode(Lenient.self, from: Data(#"{"visibility": null}"#.utf8)).visibility == nil)
        do {
            _ = try ContractDecoder().decode(Lenient.self, from: Data(#"{"visibility": "team"}"#.utf8))
            Issue.record("an optional closed enum must still reject an undeclared value")
        } catch {
            #expect(error.code == .undeclaredEnumValue)
            #expect(error.path == "visibility")
        }
        // Even plain JSONDecoder cannot map it to a case: the failure comes from the type itself.
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(Visibility.self, from: Data(#""team""#.utf8)) }
    }

    @Test func wrappingAClosedEnumInExtensibleIsAProgrammingError() async {
        // Otherwise `Extensible<Visibility>` would silently turn an undeclared closed value into `.unknown`.
        await #expect(processExitsWith: .failure) {
            enum Both: String, ClosedEnum, ExtensibleEnum { case a }
            _ = try? JSONDecoder().decode(Extensible<Both>.self, from: Data(#""b""#.utf8))
        }
    }

    @Test func schemaValidationReportsAWrongTypeAndAMissingRequiredMember() throws {
        let schema = try JSONSchema(notePageSchemaV11)
        #expect(schema.validate(try JSONValue(parsing: responseV11)).isValid)

        let broken = try JSONValue(
            parsing: #"{"notes": [{"id": "7", "kind": "text", "visibility": "private"}], "next": 3}"#)
        let result = schema.validate(broken)
        #expect(!result.isValid)
        let found = Set(result.errors.map { "\($0.instanceLocation) \($0.keywordLocation)" })
        #expect(found.contains("/notes/0/id /properties/notes/items/$ref/properties/id/type"))
        #expect(found.contains("/notes/0 /properties/notes/items/$ref/required"))
        #expect(found.contains("/next /properties/next/type"))
        #expect(result.errors.contains { $0.message == #"missing required property "title""# })
        #expect(result.errors.count == 3)  // all errors, not just the first
    }

    @Test func schemaValidationRejectsAnUndeclaredClosedEnumValue() throws {
        let schema = try JSONSchema(notePageSchemaV11)
        let instance = try JSONValue(
            parsing: #"{"notes": [{"id": 1, "title": "t", "kind": "text", "visibility": "team"}]}"#)
        let result = schema.validate(instance)
        #expect(result.errors.map(\.instanceLocation) == ["/notes/0/visibility"])
        #expect(result.errors.first?.keywordLocation.hasSuffix("/visibility/enum") == true)
    }
}
