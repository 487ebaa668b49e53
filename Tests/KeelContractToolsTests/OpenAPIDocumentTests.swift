import Foundation
import KeelContract
import KeelContractTools
import KeelTesting
import Testing

/// Loading OpenAPI descriptions (issue #4): YAML or JSON, across files, with every `$ref` checked.
@Suite struct OpenAPIDocumentTests {
    let directory: TemporaryDirectory

    init() throws {
        directory = try TemporaryDirectory(prefix: "keel-openapi")
        try FileManager.default.createDirectory(at: directory.url("shared"), withIntermediateDirectories: true)
    }

    private func write(_ name: String, _ text: String) throws -> URL {
        let url = directory.url(name)
        try Data(text.utf8).write(to: url)
        return url
    }

    @Test func loadsYAMLWithRefsIntoOtherFilesAndCycles() throws {
        _ = try write(
            "shared/errors.yaml",
            """
            components:
              schemas:
                Error:
                  type: object
                  properties:
                    code: {type: string}
                    cause: {$ref: '#/components/schemas/Error'}
            """)
        let url = try write(
            "api.yaml",
            """
            openapi: 3.1.0
            info: {title: Notes, version: 1.4.0}
            paths:
              /notes/{id}:
                get:
                  responses:
                    '200':
                      content:
                        application/json:
                          schema: {$ref: '#/components/schemas/Note'}
                    '404':
                      content:
                        application/json:
                          schema: {$ref: 'shared/errors.yaml#/components/schemas/Error'}
            components:
              schemas:
                Note:
                  type: object
                  properties:
                    parent: {$ref: '#/components/schemas/Note'}
            """)
        let document = try OpenAPIDocument.load(from: url)
        #expect(document.openAPIVersion == "3.1.0")
        #expect(document.contractVersion == "1.4.0")
        #expect(!document.isOpenAPI30)
        let reference = try #require(
            document.root["paths"]?["/notes/{id}"]?["get"]?["responses"]?["404"]?["content"]?["application/json"]?[
                "schema"])
        let resolved = try document.resolve(reference)
        #expect(resolved.value["type"] == "object")
        #expect(resolved.file.lastPathComponent == "errors.yaml")
        #expect(resolved.location == "#/components/schemas/Error")
    }

    @Test func severalDescriptionsLoadAtOnceInOrderAndTheFirstFailureInOrderIsReported() throws {
        var urls: [URL] = []
        for index in 0..<4 {
            let url = directory.url("d\(index).yaml")
            try Data("openapi: 3.1.0\ninfo: {title: T, version: \(index).0.0}\npaths: {}\n".utf8).write(to: url)
            urls.append(url)
        }
        #expect(try OpenAPIDocument.load(from: urls).map(\.contractVersion) == ["0.0.0", "1.0.0", "2.0.0", "3.0.0"])
        try Data("openapi: 3.1.0\npaths: [\n".utf8).write(to: urls[1])
        try Data("not: openapi\n".utf8).write(to: urls[3])
        #expect {
            _ = try OpenAPIDocument.load(from: urls)
        } throws: { error in
            (error as? ContractLoadError)?.file.hasSuffix("d1.yaml") == true
        }
    }

    @Test func loadsJSONToo() throws {
        let url = try write(
            "api.json", #"{"openapi": "3.0.3", "info": {"title": "x", "version": "2.0.0"}, "paths": {}}"#)
        let document = try OpenAPIDocument.load(from: url)
        #expect(document.isOpenAPI30)
        #expect(document.contractVersion == "2.0.0")
    }

    @Test func aDanglingRefNamesTheFileAndTheLocation() throws {
        let url = try write(
            "dangling.yaml",
            """
            openapi: 3.0.3
            info: {title: x, version: 1.0.0}
            paths:
              /a:
                get:
                  responses:
                    '200': {$ref: '#/components/responses/Missing'}
            """)
        #expect {
            _ = try OpenAPIDocument.load(from: url)
        } throws: { error in
            guard let error = error as? ContractLoadError else { return false }
            return error.file.hasSuffix("dangling.yaml") && error.location == "#/paths/~1a/get/responses/200/$ref"
                && error.message.contains("#/components/responses/Missing")
        }
    }

    @Test(arguments: [
        ("nothing: here", "no `openapi` field"),
        ("openapi: 2.0\ninfo: {}", "unsupported OpenAPI version"),
        ("openapi: 3.1.0\npaths: [1,", "not valid YAML"),
        ("{\"openapi\": \"3.1.0\",", "not valid JSON"),
        ("- a\n- b", "not a mapping"),
    ])
    func invalidInputIsATypedErrorNamingTheFile(text: String, message: String) throws {
        let url = try write("bad.yaml", text)
        #expect {
            _ = try OpenAPIDocument.load(from: url)
        } throws: { error in
            guard let error = error as? ContractLoadError else { return false }
            return error.file.hasSuffix("bad.yaml") && error.message.contains(message)
        }
    }

    /// A description whose members have the wrong type used to read as an empty one (`paths: 5` had no
    /// paths), so a diff against it reported "everything is new" or "everything is gone" instead of
    /// refusing the input.
    @Test(arguments: [
        ("openapi: 3.0.0", "#", "`info` is required"),
        ("openapi: 3.1.0\ninfo: x\npaths: {}", "#/info", "must be a mapping, not a string"),
        ("openapi: 3.1.0\ninfo: {title: x}\npaths: {}", "#/info", "`version` is required"),
        ("openapi: 3.1.0\ninfo: {title: x, version: 1}\npaths: {}", "#/info/version", "must be a string"),
        ("openapi: 3.0.3\ninfo: {title: x, version: '1'}", "#", "`paths` is required"),
        ("openapi: 3.0.3\ninfo: {title: x, version: '1'}\npaths: 5", "#/paths", "must be a mapping, not a number"),
        ("openapi: 3.1.0\ninfo: {title: x, version: '1'}\npaths: {a: {}}", "#/paths/a", "must start with `/`"),
        ("openapi: 3.1.0\ninfo: {title: x, version: '1'}\npaths: {/a: {get: 7}}", "#/paths/~1a/get", "mapping"),
        (
            "openapi: 3.0.3\ninfo: {title: x, version: '1'}\npaths: {/a: {get: {description: d}}}",
            "#/paths/~1a/get", "`responses` is required"
        ),
        (
            "openapi: 3.1.0\ninfo: {title: x, version: '1'}\npaths: {/a: {get: {responses: [1, 2]}}}",
            "#/paths/~1a/get/responses", "must be a mapping, not a list"
        ),
        (
            "openapi: 3.1.0\ninfo: {title: x, version: '1'}\npaths: {/a: {parameters: {a: 1}}}",
            "#/paths/~1a/parameters", "must be a list"
        ),
        (
            "openapi: 3.1.0\ninfo: {title: x, version: '1'}\npaths: {/a: {get: {parameters: [{in: query}]}}}",
            "#/paths/~1a/get/parameters/0", "`name` is required"
        ),
        (
            "openapi: 3.1.0\ninfo: {title: x, version: '1'}\npaths: {/a: {get: {responses: {'200': {description: ok, content: {application/json: {schema: 5}}}}}}}",
            "#/paths/~1a/get/responses/200/content/application~1json/schema", "a schema must be a mapping"
        ),
        (
            "openapi: 3.1.0\ninfo: {title: x, version: '1'}\ncomponents: {schemas: {A: {type: object, properties: 3}}}",
            "#/components/schemas/A/properties", "must be a mapping"
        ),
        (
            "openapi: 3.1.0\ninfo: {title: x, version: '1'}\ncomponents: {schemas: {A: {type: object, required: 5}}}",
            "#/components/schemas/A/required", "must be a list"
        ),
        (
            "openapi: 3.1.0\ninfo: {title: x, version: '1'}\ncomponents: {schemas: {A: {type: string, maxLength: -1}}}",
            "#/components/schemas/A/maxLength", "non-negative integer"
        ),
        (
            "openapi: 3.1.0\ninfo: {title: x, version: '1'}\ncomponents: {schemas: {A: {type: number, multipleOf: 0}}}",
            "#/components/schemas/A/multipleOf", "greater than 0"
        ),
        (
            "openapi: 3.1.0\ninfo: {title: x, version: '1'}\ncomponents: {schemas: {A: {type: [string, 3]}}}",
            "#/components/schemas/A/type", "a type name or a list"
        ),
        (
            "openapi: 3.1.0\ninfo: {title: x, version: '1'}\ncomponents: {schemas: {A: {oneOf: []}}}",
            "#/components/schemas/A/oneOf", "at least one schema"
        ),
        (
            "openapi: 3.1.0\ninfo: {title: x, version: '1'}\ncomponents: {schemas: {A: {oneOf: [{type: string}], discriminator: {mapping: {}}}}}",
            "#/components/schemas/A/discriminator", "`propertyName` is required"
        ),
        (
            "openapi: 3.0.3\ninfo: {title: x, version: '1'}\npaths: {}\ncomponents: {schemas: {A: {type: object, properties: {b: true}}}}",
            "#/components/schemas/A/properties/b", "a schema must be a mapping"
        ),
    ])
    func aMalformedDescriptionIsRefusedAtTheMember(text: String, location: String, message: String) throws {
        let url = try write("malformed.yaml", text)
        #expect {
            _ = try OpenAPIDocument.load(from: url)
        } throws: { error in
            guard let error = error as? ContractLoadError else { return false }
            return error.code == .malformedDescription && error.file.hasSuffix("malformed.yaml")
                && error.location == location && error.message.contains(message)
        }
    }

    /// What the specification allows stays accepted: 3.1 without paths, boolean schemas in 3.1, extensions
    /// of any shape, 3.0's boolean `exclusiveMinimum`, `additionalProperties: false`.
    @Test func wellFormedShapesStayAccepted() throws {
        let url = try write(
            "fine.yaml",
            """
            openapi: 3.1.0
            info: {title: x, version: '1', x-logo: 5}
            x-anything: [1, 2]
            components:
              schemas:
                A: {type: object, properties: {b: true, c: false}, additionalProperties: false, x-weird: 3}
                B: {type: [string, 'null'], exclusiveMinimum: 1, enum: [a, 1, null]}
            """)
        #expect(try OpenAPIDocument.load(from: url).contractVersion == "1")
        let old = try write(
            "old.yaml",
            """
            openapi: 3.0.3
            info: {title: x, version: '2'}
            paths:
              x-note: just a note
              /a:
                x-owner: [team]
                get:
                  responses: {'204': {description: done}, x-extra: 1}
            components:
              schemas:
                N: {type: number, minimum: 0, exclusiveMinimum: true, nullable: true}
            """)
        #expect(try OpenAPIDocument.load(from: old).contractVersion == "2")
    }

    /// A file another one references is checked too, where the shape is known: its components.
    @Test func aReferencedFileWithMalformedComponentsIsRefused() throws {
        _ = try write("common.yaml", "components:\n  schemas:\n    Error: {type: object, properties: [code]}\n")
        let url = try write(
            "api.yaml",
            """
            openapi: 3.1.0
            info: {title: x, version: '1'}
            paths:
              /a:
                get:
                  responses:
                    '400': {description: bad, content: {application/json: {schema: {$ref: 'common.yaml#/components/schemas/Error'}}}}
            """)
        #expect {
            _ = try OpenAPIDocument.load(from: url)
        } throws: { error in
            guard let error = error as? ContractLoadError else { return false }
            return error.code == .malformedDescription && error.file.hasSuffix("common.yaml")
                && error.location == "#/components/schemas/Error/properties"
        }
    }

    @Test func networkReferencesAreRefusedAsSuch() throws {
        let url = try write(
            "remote.yaml",
            """
            openapi: 3.1.0
            info: {title: x, version: '1'}
            components:
              schemas:
                A: {$ref: 'https://example.com/schemas.yaml#/A'}
            """)
        #expect {
            _ = try OpenAPIDocument.load(from: url)
        } throws: { error in
            guard let error = error as? ContractLoadError else { return false }
            return error.code == .outsideRoot && error.location == "#/components/schemas/A/$ref"
                && error.message.contains("https://example.com/schemas.yaml#/A is not followed")
        }
    }

    /// Found in an outside audit: OpenAPI 3.1 may name a schema by `$anchor` (`#foo`) or `$id` (`urn:x:s`);
    /// the tools do not look those up, and said "dangling" or "never the network". They say what it is.
    @Test func referencesByAnchorOrIdAreRefusedSayingSo() throws {
        for (reference, said) in [("'#note'", "by its $anchor"), ("'urn:example:note'", "by its $id")] {
            let url = try write(
                "named.yaml",
                """
                openapi: 3.1.0
                info: {title: x, version: '1'}
                components:
                  schemas:
                    A: {$ref: \(reference)}
                    Note: {$id: 'urn:example:note', $anchor: note, type: string}
                """)
            #expect {
                _ = try OpenAPIDocument.load(from: url)
            } throws: { error in
                guard let error = error as? ContractLoadError else { return false }
                return error.code == .unsupportedReference && error.location == "#/components/schemas/A/$ref"
                    && error.message.contains(said)
            }
        }
    }

    /// A description `name` whose one schema, `A`, is a reference to `target`.
    private func writeReferring(_ name: String, to target: String) throws -> URL {
        try write(
            name,
            """
            openapi: 3.1.0
            info: {title: x, version: 1.0.0}
            components:
              schemas:
                A: {$ref: '\(target)'}
            """)
    }

    @Test func referencesOutsideTheDescriptionTreeAreRefused() throws {
        let url = try writeReferring("escape.yaml", to: "../../../etc/passwd#/x")
        #expect {
            _ = try OpenAPIDocument.load(from: url)
        } throws: { error in
            (error as? ContractLoadError)?.message.contains("outside the description's directory tree") == true
        }
    }

    @Test func aSymbolicLinkInTheTreeDoesNotLeadOutOfIt() throws {
        // The path of a reference stays inside the tree; where a link inside it points does not have to.
        let outside = try TemporaryDirectory(prefix: "keel-openapi-outside")
        try Data("components: {schemas: {Secret: {type: string}}}".utf8).write(to: outside.url("secret.yaml"))
        try FileManager.default.createSymbolicLink(
            at: directory.url("linked.yaml"), withDestinationURL: outside.url("secret.yaml"))
        try FileManager.default.createSymbolicLink(
            at: directory.url("elsewhere"), withDestinationURL: outside.url("secret.yaml").deletingLastPathComponent())
        for target in ["linked.yaml", "elsewhere/secret.yaml"] {
            let url = try writeReferring("through-link.yaml", to: target + "#/components/schemas/Secret")
            do {
                _ = try OpenAPIDocument.load(from: url)
                Issue.record("\(target) leads out of the tree and must be refused")
            } catch {
                #expect(error.code == .outsideRoot, "\(target): \(error)")
            }
        }
        // A link that stays inside the tree is followed.
        try Data("components: {schemas: {Inside: {type: string}}}".utf8).write(to: directory.url("inside.yaml"))
        try FileManager.default.createSymbolicLink(
            at: directory.url("alias.yaml"), withDestinationURL: directory.url("inside.yaml"))
        _ = try OpenAPIDocument.load(
            from: try writeReferring("through-inner-link.yaml", to: "alias.yaml#/components/schemas/Inside"))
    }

    /// References are compared by their bytes, as member names are, also where the loader notes their
    /// targets for `resolve`: a decomposed `é` is not the precomposed one, and a cycle read from a file is
    /// still an error.
    @Test func referencesAreTheirBytesAndResolveAsWrittenWhenLoadedFromAFile() throws {
        let precomposed = "Caf\u{E9}"
        let decomposed = "Cafe\u{301}"
        // Responses naming both forms and a cycle; the schemas they may find go after `components/schemas`.
        func description(_ schemas: String) -> String {
            """
            openapi: 3.1.0
            info: {title: x, version: 1.0.0}
            paths:
              /a:
                get:
                  responses:
                    '200': {description: ok, content: {application/json: {schema: {$ref: '#/components/schemas/\(precomposed)'}}}}
                    '201': {description: ok, content: {application/json: {schema: {$ref: '#/components/schemas/\(decomposed)'}}}}
                    '202': {description: ok, content: {application/json: {schema: {$ref: '#/components/schemas/Loop'}}}}
            components:
              schemas:
                Loop: {$ref: '#/components/schemas/Back'}
                Back: {$ref: '#/components/schemas/Loop'}

            """ + schemas
        }
        let dangling = try write("unicode-dangling.yaml", description("    \(precomposed): {type: string}\n"))
        #expect {
            _ = try OpenAPIDocument.load(from: dangling)
        } throws: { error in
            (error as? ContractLoadError)?.code == .danglingReference
        }

        let both = try write(
            "unicode-both.yaml",
            description("    \(precomposed): {type: string}\n    \(decomposed): {type: integer}\n"))
        let document = try OpenAPIDocument.load(from: both)
        let first = try document.resolve(["$ref": .string("#/components/schemas/\(precomposed)")])
        let second = try document.resolve(["$ref": .string("#/components/schemas/\(decomposed)")])
        #expect(first.value == ["type": "string"])
        #expect(second.value == ["type": "integer"])
        #expect(second.location == "#/components/schemas/\(decomposed)")
        #expect(throws: ContractLoadError.self) { try document.resolve(["$ref": "#/components/schemas/Loop"]) }
    }

    @Test func aCycleOfPureReferencesIsAnErrorNotAHang() throws {
        let document = try OpenAPIDocument.parse(
            """
            openapi: 3.1.0
            info: {title: x, version: 1.0.0}
            components:
              schemas:
                A: {$ref: '#/components/schemas/B'}
                B: {$ref: '#/components/schemas/A'}
                Itself: {$ref: '#/components/schemas/Itself'}
                C: {$ref: '#/components/schemas/D'}
                D: {$ref: '#/components/schemas/E'}
                E: {$ref: '#/components/schemas/C'}
            """)
        #expect(throws: ContractLoadError.self) { try document.resolve(["$ref": "#/components/schemas/A"]) }
        #expect(throws: ContractLoadError.self) { try document.resolve(["$ref": "#/components/schemas/Itself"]) }
        #expect(throws: ContractLoadError.self) { try document.resolve(["$ref": "#/components/schemas/C"]) }
    }
}
