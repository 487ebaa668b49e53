import Foundation
public import KeelContract
public import KeelCore

/// A compiled JSON Schema (draft 2020-12) that validates ``JSONValue`` instances.
///
/// Supported: every keyword of the core, applicator, validation, unevaluated, format-annotation /
/// format-assertion and content vocabularies; `$ref`, `$defs`, `$anchor`, `$dynamicRef`,
/// `$dynamicAnchor`; `$id` base-URI changes, embedded resources and URNs; custom metaschemas with
/// `$vocabulary`; OpenAPI 3.0's `nullable` (opt-in). References are all resolved when the schema is
/// created: a reference that cannot be resolved is a ``SchemaError``, never a surprise during validation.
/// Remote documents come only from the caller's ``Resolver`` (or the built-in 2020-12 metaschemas); Keel
/// never touches the network.
///
/// ```swift
/// let schema = try JSONSchema(JSONValue(parsing: schemaBytes))
/// let result = schema.validate(try JSONValue(parsing: responseBytes))
/// for error in result.errors { print(error.instanceLocation, error.keywordLocation, error.message) }
/// ```
public struct JSONSchema: Sendable {
    /// Looks up a schema document by absolute URI (without fragment). Return nil when unknown.
    public typealias Resolver = @Sendable (_ uri: String) throws -> JSONValue?

    /// The schema compiled into checks, with every reference resolved (one reference: see
    /// `ContractSchema.Storage` for why small multi-word results of typed-throwing functions are avoided).
    let program: CompiledProgram

    /// Compiles `schema`.
    ///
    /// - Parameters:
    ///   - baseURI: the retrieval URI of the schema, against which relative `$id`s and `$ref`s resolve.
    ///     Default: a URN unique to this schema.
    ///   - resolver: supplies remote documents referenced by `$ref`, `$dynamicRef` or `$schema`.
    ///   - checksMetaschema: whether to validate `schema` against the draft 2020-12 metaschema first
    ///     (when it declares no other `$schema`). Default true: `{"type": 5}` is a mistake, not a schema.
    /// - Throws: ``SchemaError`` for a schema that is not a schema (not an object or boolean, or invalid
    ///   against the metaschema), an unresolvable reference, or a resolver failure.
    public init(_ schema: JSONValue, baseURI: String? = nil, resolver: Resolver? = nil, checksMetaschema: Bool = true)
        throws(SchemaError)
    {
        let base = URIReference(baseURI ?? "urn:keel:schema:\(UUID().uuidString.lowercased())").withoutFragment
        guard base.isAbsolute else {
            throw SchemaError(code: .invalidSchema, message: "base URI \(base) is not absolute", location: "")
        }
        if checksMetaschema, let problem = Self.metaschemaErrors(of: schema).first {
            let location = problem.instanceLocation.isEmpty ? "#" : "#" + problem.instanceLocation
            throw SchemaError(
                code: .invalidSchema, message: "not a valid draft 2020-12 schema: \(problem.message)",
                location: location)
        }
        let registry = SchemaRegistry(resolver: resolver)
        try registry.load(schema, at: base)
        let root = try registry.node(for: base.description, from: base)
        try registry.resolveAllReferences()
        let vocabularies = registry.vocabularies(of: root)
        program = CompiledProgram(registry: registry, root: root, vocabularies: vocabularies)
    }

    /// The draft 2020-12 metaschema, compiled once.
    private static let metaschema: JSONSchema? = try? JSONSchema(
        .object(["$ref": .string(Metaschemas.draft202012)]), baseURI: "urn:keel:metaschema", checksMetaschema: false
    )

    /// How `schema` breaks the draft 2020-12 metaschema (empty when it is valid, or when it declares a
    /// different `$schema`, which is then checked by that metaschema's own rules).
    public static func metaschemaErrors(of schema: JSONValue) -> [ValidationError] {
        // Compared with its dot segments removed, as the registry resolves it (`…/2020-12/./schema` is the
        // 2020-12 metaschema, and is checked by it).
        if case .string(let declared) = schema["$schema"] ?? .null,
            Self.normalized(declared) != Metaschemas.draft202012
        {
            return []
        }
        guard let result = metaschema?.validate(schema) else { return [] }
        // A schema the metaschema check cannot decide (nested deeper than it follows) is not taken as sound.
        if let reason = result.undecided {
            return [ValidationError(instanceLocation: "", keywordLocation: "", message: "cannot be checked: \(reason)")]
        }
        return result.errors
    }

    /// `uri` without its fragment and with its dot segments removed.
    static func normalized(_ uri: String) -> String {
        var reference = URIReference(uri).withoutFragment
        reference.path = URIReference.removeDotSegments(reference.path)
        return reference.description
    }

    /// Validates `instance`, collecting every error.
    public func validate(_ instance: JSONValue, options: ValidationOptions = ValidationOptions()) -> ValidationResult {
        var evaluator = Evaluator(program: program, options: options)
        evaluator.run(instance)
        guard let reason = evaluator.undecided else { return ValidationResult(errors: evaluator.errors) }
        return ValidationResult(errors: [], undecided: reason)
    }

    /// Validates JSON text.
    ///
    /// - Throws: ``JSONParseError`` when `data` is not JSON.
    public func validate(json data: some Collection<UInt8>, options: ValidationOptions = ValidationOptions())
        throws(JSONParseError) -> ValidationResult
    {
        validate(try JSONValue(parsing: data), options: options)
    }
}

/// How to validate.
public struct ValidationOptions: Sendable {
    /// Whether `format` is an assertion (invalid formats fail) instead of an annotation. Default false,
    /// as draft 2020-12 specifies; a metaschema with the format-assertion vocabulary turns it on too.
    public var formatAssertion: Bool
    /// Whether OpenAPI 3.0's `nullable: true` is honoured: `null` then satisfies the whole schema it sits
    /// on (beside `type`, `enum`, `anyOf`/`oneOf`/`allOf` or `$ref`). Default false.
    public var openAPINullable: Bool

    /// Options; both default to off, as draft 2020-12 specifies.
    public init(formatAssertion: Bool = false, openAPINullable: Bool = false) {
        self.formatAssertion = formatAssertion
        self.openAPINullable = openAPINullable
    }
}

/// The outcome of validating one instance.
public struct ValidationResult: Sendable, Equatable {
    /// Every error found, in evaluation order. Empty when the instance is valid (or when undecided).
    public let errors: [ValidationError]
    /// Why the validation gave no answer: the schema and instance nest deeper than the validator follows,
    /// or would take more work than any real pair does. Neither valid nor invalid — never read as either
    /// (a `not` around a branch that only stopped would otherwise turn it into "valid").
    public let undecided: String?
    /// Whether the instance is valid (false when undecided).
    public var isValid: Bool { errors.isEmpty && undecided == nil }

    /// A result with `errors`; `undecided` when there is no answer.
    public init(errors: [ValidationError], undecided: String? = nil) {
        self.errors = errors
        self.undecided = undecided
    }
}

/// One way the instance breaks the schema.
public struct ValidationError: Sendable, Equatable, CustomStringConvertible {
    /// JSON pointer to the offending part of the instance (`""` for the whole instance, `/notes/3/status`).
    public let instanceLocation: String
    /// JSON pointer through the schema to the failing keyword, following references (`/properties/notes/items/$ref/required`).
    public let keywordLocation: String
    /// A short explanation (never more than a short excerpt of the instance).
    public let message: String

    /// One line: the instance location (`/` for the whole instance), the keyword location and the message.
    public var description: String {
        "\(instanceLocation.isEmpty ? "/" : instanceLocation)  \(keywordLocation)  \(message)"
    }
}

/// A schema that cannot be used.
public struct SchemaError: KeelError, Equatable, CustomStringConvertible {
    /// The kind of problem.
    public typealias Code = ErrorCode<SchemaError>

    /// The kind of problem.
    public let code: Code
    /// A short explanation naming the reference or keyword.
    public let message: String
    /// Where in the schema (absolute URI with JSON pointer fragment).
    public let location: String

    /// A developer-facing explanation: the location in the schema, when known, then the message.
    public var description: String { location.isEmpty ? message : "\(location): \(message)" }
}

extension ErrorCode where Domain == SchemaError {
    /// The document is not a schema (not an object or boolean), or a keyword has the wrong shape.
    public static var invalidSchema: Self { Self("invalidSchema") }
    /// A `$ref`, `$dynamicRef` or `$schema` points at something that does not exist.
    public static var unresolvableReference: Self { Self("unresolvableReference") }
    /// The resolver threw while fetching a remote document.
    public static var resolverFailed: Self { Self("resolverFailed") }
}
