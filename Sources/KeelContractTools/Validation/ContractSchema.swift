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
        guard Loader.walk(root, pointer) != nil else {
            throw ContractLoadError(
                code: .invalidSchemaReference, file: url.path, location: reference, message: "nothing at \(reference)")
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

    /// Members whose values are literal data, never schemas (besides `x-…` extensions).
    private static let literalKeywords: Set<String> = ["example", "examples", "enum", "const", "default"]
    /// Members whose keys are names, not keywords.
    private static let nameMapKeywords: Set<String> = [
        "properties", "patternProperties", "dependentSchemas", "$defs", "definitions", "schemas",
    ]

    /// OpenAPI 3.0's boolean `exclusiveMinimum`/`exclusiveMaximum` (draft 4 style) rewritten as 2020-12's
    /// numbers, everywhere except inside literal values (`example`, `enum`, `const`, `default`, `x-…`).
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
