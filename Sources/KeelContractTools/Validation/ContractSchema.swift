import Foundation
public import KeelContract
public import KeelSchema

/// One schema of a contract (`#/components/schemas/Note`), compiled for validating instances:
/// example payloads in CI, captured responses in tests.
///
/// `$ref`s inside it resolve against the description and the files it references; nothing is fetched.
/// OpenAPI 3.0 semantics are honoured: `nullable: true` lets `null` through, and the boolean
/// `exclusiveMinimum`/`exclusiveMaximum` of 3.0 are read as the numeric forms of JSON Schema 2020-12.
public struct ContractSchema: Sendable {
    /// The schema and how to apply it, behind one reference.
    ///
    /// One reference on purpose: Swift 6.3.1's debug build returned a garbage schema from
    /// `schema(at:)` (a `throws(ContractLoadError)` function in another module) while the struct was
    /// three to four machine words, small enough to come back in registers (`ContractSchemaTests`
    /// crashed on a null pointer). A single reference comes back in one register, and works.
    private final class Storage: Sendable {
        let reference: String
        let schema: JSONSchema
        let openAPINullable: Bool

        init(reference: String, schema: JSONSchema, openAPINullable: Bool) {
            self.reference = reference
            self.schema = schema
            self.openAPINullable = openAPINullable
        }
    }

    private let storage: Storage

    /// The location inside the contract, as given (`#/components/schemas/Note`).
    public var reference: String { storage.reference }

    /// Validates `instance`; `formatAssertion` makes `format` an assertion (invalid dates fail).
    public func validate(_ instance: JSONValue, formatAssertion: Bool = false) -> ValidationResult {
        storage.schema.validate(
            instance,
            options: ValidationOptions(formatAssertion: formatAssertion, openAPINullable: storage.openAPINullable))
    }

    fileprivate init(reference: String, schema: JSONSchema, openAPINullable: Bool) {
        storage = Storage(reference: reference, schema: schema, openAPINullable: openAPINullable)
    }
}

extension OpenAPIDocument {
    /// The schema at `reference`, a fragment of this description such as `#/components/schemas/Note`.
    ///
    /// - Throws: ``ContractLoadError`` when the reference is not a fragment, points at nothing, or what it
    ///   points at is not a valid schema.
    public func schema(at reference: String) throws(ContractLoadError) -> ContractSchema {
        guard reference.hasPrefix("#") else {
            throw ContractLoadError(
                code: .invalidSchemaReference, file: url.path, location: reference,
                message: "a schema reference must be a fragment of the description, like #/components/schemas/Note")
        }
        let pointer = String(reference.dropFirst())
        guard let located = Loader.walk(root, pointer) else {
            throw ContractLoadError(
                code: .invalidSchemaReference, file: url.path, location: reference, message: "nothing at \(reference)")
        }
        // Only a schema validates anything: a response, `#/info` or the `schemas` map itself, read as a schema,
        // has no keyword a validator knows and lets every instance through (found in an outside audit).
        var isSchemaValue = false
        switch located {
        case .object: isSchemaValue = true
        case .bool: isSchemaValue = !isOpenAPI30
        default: break
        }
        guard isSchemaValue, Self.isSchemaLocation(pointer) else {
            throw ContractLoadError(
                code: .invalidSchemaReference, file: url.path, location: reference,
                message:
                    "\(reference) is not a schema: give one under #/components/schemas/NAME, or the `schema` of a parameter, header or media type"
            )
        }
        // The schema itself is checked as `keel schema validate` checks one (a misspelt `type`, a 3.0-style
        // boolean `exclusiveMinimum` in 3.1), in the dialect the description is written in.
        if let problem = JSONSchema.metaschemaErrors(of: isOpenAPI30 ? Self.as2020(located) : located).first {
            let location = problem.instanceLocation.isEmpty ? reference : reference + problem.instanceLocation
            throw ContractLoadError(
                code: .invalidSchemaReference, file: url.path, location: location,
                message: "not a valid schema: \(problem.message)")
        }
        var served: [String: JSONValue] = [:]
        for (file, document) in documents {
            served[file.absoluteString] = isOpenAPI30 ? Self.as2020(document) : document
        }
        let target =
            url.absoluteString + "#" + pointer.addingPercentEncoding(withAllowedCharacters: .urlFragmentAllowed)!
        let wrapper: JSONValue = ["$ref": .string(target)]
        let documentsByURI = served
        let schema: JSONSchema
        do {
            schema = try JSONSchema(
                wrapper, baseURI: "urn:keel:contract-schema", resolver: { uri in documentsByURI[uri] })
        } catch {
            throw ContractLoadError(
                code: .invalidSchemaReference, file: url.path, location: reference,
                message: "not a usable schema: \(error)")
        }
        return ContractSchema(reference: reference, schema: schema, openAPINullable: isOpenAPI30)
    }

    /// Whether `pointer` (a fragment's JSON pointer) names a place OpenAPI puts a schema: a named schema in
    /// `components/schemas` or something inside one, or the `schema` of a parameter, header or media type
    /// (and what is inside it).
    static func isSchemaLocation(_ pointer: String) -> Bool {
        let tokens = pointer.split(separator: "/", omittingEmptySubsequences: false).dropFirst().map {
            JSONPointer.unescape($0)
        }
        if tokens.count >= 3, tokens[0] == "components", tokens[1] == "schemas" { return true }
        guard let first = tokens.first, ["paths", "components", "webhooks"].contains(first) else { return false }
        return tokens.dropFirst().contains("schema")
    }

    /// Members whose values are literal data, never schemas (besides `x-…` extensions).
    private static let literalKeywords: Set<String> = ["example", "examples", "enum", "const", "default"]
    /// Members whose keys are names, not keywords.
    private static let nameMapKeywords: Set<String> = [
        "properties", "patternProperties", "dependentSchemas", "$defs", "definitions", "schemas",
    ]

    /// OpenAPI 3.0's boolean `exclusiveMinimum`/`exclusiveMaximum` (draft 4 style) rewritten as 2020-12's
    /// numbers, everywhere except inside literal values (`example`, `enum`, `const`, `default`, `x-…`), and
    /// the members beside a `$ref` (but `nullable`) dropped, as 3.0 ignores them.
    /// `namesAreData` marks maps whose keys are names, not keywords (`properties`, `components/schemas`…),
    /// so a property called `default` is still a schema.
    static func as2020(_ value: JSONValue, namesAreData: Bool = false) -> JSONValue {
        switch value {
        case .array(let elements):
            return .array(elements.map { as2020($0) })
        case .object(let object):
            var result = JSONObject()
            for (key, member) in object {
                if namesAreData {
                    result[key] = as2020(member)
                    continue
                }
                let literal = literalKeywords.contains(key) || key.hasPrefix("x-")
                let names = nameMapKeywords.contains(key)
                result[key] = literal ? member : as2020(member, namesAreData: names)
            }
            guard !namesAreData else { return .object(result) }
            // OpenAPI 3.0: "properties adjacent to a $ref SHALL be ignored" — `{$ref: S, maxLength: 1}` is S,
            // as `keel contract diff` reads it. `nullable` beside a `$ref` is kept: writers mean it, and the diff
            // reads it as the use's own change.
            if let reference = result["$ref"] {
                var kept: JSONObject = ["$ref": reference]
                kept["nullable"] = result["nullable"]
                return .object(kept)
            }
            for (flag, bound) in [("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")] {
                guard case .bool(let exclusive) = result[flag] ?? .null else { continue }
                if exclusive, let limit = result[bound] {
                    result[flag] = limit
                    result[bound] = nil
                } else {
                    result[flag] = nil
                }
            }
            return .object(result)
        default:
            return value
        }
    }
}
