import Foundation
import KeelContract
import KeelCore

/// A schema position: its value and the base URI in effect *around* it (before its own `$id` applies).
struct SchemaNode {
    let value: JSONValue
    let outerBase: URIReference
    /// Absolute location for messages and cycle detection (`uri#/json/pointer`, or `uri#anchor`).
    let location: String

    /// The base URI inside this schema: its `$id` resolved against the outer base, or the outer base.
    var base: URIReference {
        if case .string(let id) = value["$id"] ?? .null { return outerBase.resolving(id).withoutFragment }
        return outerBase
    }
}

/// Every schema resource, anchor and dynamic anchor reachable from a root schema, with all references
/// resolved up front. Immutable once ``JSONSchema`` finishes its initializer.
final class SchemaRegistry: @unchecked Sendable {
    // @unchecked Sendable: mutated only during JSONSchema.init (single-threaded); read-only afterwards,
    // except `regexCache`, which is guarded by its own lock.
    private(set) var resources: [String: SchemaNode] = [:]
    private(set) var anchors: [String: SchemaNode] = [:]
    private(set) var dynamicAnchors: Set<String> = []
    /// Whether any indexed schema uses `unevaluatedProperties` or `unevaluatedItems`: only then does
    /// evaluation need to collect which properties and items were evaluated (the annotations they read).
    private(set) var usesUnevaluated = false
    /// The target of every `$ref` and `$dynamicRef` (its initial target, before dynamic scope), by the
    /// keyword's location (`<schema location>/$ref`), resolved once while compiling.
    private(set) var referenceTargets: [String: SchemaNode] = [:]
    private var pendingReferences: [(reference: String, base: URIReference, location: String)] = []
    private var pendingMetaschemas: [(uri: String, location: String)] = []
    private var loadedDocuments: Set<String> = []
    /// Locations already indexed (so a pointer target inside a walked tree is not indexed twice).
    private var indexedLocations: Set<String> = []
    /// Set when compilation ends: from then on lookups never load or index anything, so validation
    /// is read-only and safe from any number of threads.
    private var isSealed = false
    private let resolver: JSONSchema.Resolver?
    /// Compiled patterns by their exact UTF-8 bytes (canonically equivalent patterns are different regexes).
    private let regexCache = Locked<[[UInt8]: NSRegularExpressionBox]>([:])

    init(resolver: JSONSchema.Resolver?) { self.resolver = resolver }

    // MARK: - Loading

    /// Indexes `document`, retrieved from `uri`, and everything embedded in it.
    func load(_ document: JSONValue, at uri: URIReference) throws(SchemaError) {
        let key = uri.withoutFragment.description
        guard !loadedDocuments.contains(key) else { return }
        loadedDocuments.insert(key)
        switch document {
        case .bool, .object: break
        default:
            throw SchemaError(
                code: .invalidSchema, message: "a schema must be an object or a boolean, not \(document.kind)",
                location: key)
        }
        let node = SchemaNode(value: document, outerBase: uri.withoutFragment, location: key + "#")
        resources[key] = node
        try index(node, pointer: "")
    }

    /// The subschema-bearing keywords of draft 2020-12 (plus `definitions` for older documents).
    static let singleSchemaKeywords: Set<String> = [
        "additionalProperties", "items", "contains", "not", "if", "then", "else", "propertyNames",
        "unevaluatedItems", "unevaluatedProperties", "contentSchema",
    ]
    static let schemaMapKeywords: Set<String> = [
        "properties", "patternProperties", "$defs", "definitions", "dependentSchemas", "dependencies",
    ]
    static let schemaArrayKeywords: Set<String> = ["allOf", "anyOf", "oneOf", "prefixItems"]

    private func index(_ node: SchemaNode, pointer: String) throws(SchemaError) {
        guard case .object(let object) = node.value else { return }
        guard indexedLocations.insert(node.location).inserted else { return }
        if object["unevaluatedProperties"] != nil || object["unevaluatedItems"] != nil { usesUnevaluated = true }
        // Patterns are compiled now: an invalid one is a broken schema, not a silent "nothing matches".
        if case .string(let pattern) = object["pattern"] ?? .null { try checkPattern(pattern, at: node.location) }
        if case .object(let patterns) = object["patternProperties"] ?? .null {
            for pattern in patterns.keys { try checkPattern(pattern, at: node.location) }
        }
        let base = node.base
        let resourceKey = base.description
        if object["$id"] != nil {
            if case .string = object["$id"]! {
            } else {
                throw SchemaError(code: .invalidSchema, message: "$id must be a string", location: node.location)
            }
            if resources[resourceKey] == nil { resources[resourceKey] = node }
        }
        for keyword in ["$anchor", "$dynamicAnchor"] {
            guard let anchor = object[keyword] else { continue }
            guard case .string(let name) = anchor, !name.isEmpty else {
                throw SchemaError(
                    code: .invalidSchema, message: "\(keyword) must be a non-empty string", location: node.location)
            }
            anchors["\(resourceKey)#\(name)"] = node
            if keyword == "$dynamicAnchor" { dynamicAnchors.insert("\(resourceKey)#\(name)") }
        }
        for keyword in ["$ref", "$dynamicRef"] {
            guard let reference = object[keyword] else { continue }
            guard case .string(let text) = reference else {
                throw SchemaError(code: .invalidSchema, message: "\(keyword) must be a string", location: node.location)
            }
            pendingReferences.append((text, base, node.location + "/" + keyword))
        }
        if case .string(let metaschema) = object["$schema"] ?? .null {
            pendingMetaschemas.append((base.resolving(metaschema).withoutFragment.description, node.location))
        }
        for (keyword, child) in object {
            let childPointer = pointer + "/" + JSONPointer.escape(keyword)
            if Self.singleSchemaKeywords.contains(keyword) {
                try index(
                    SchemaNode(value: child, outerBase: base, location: "\(resourceKey)#\(childPointer)"),
                    pointer: childPointer)
            } else if Self.schemaMapKeywords.contains(keyword), case .object(let members) = child {
                for (name, schema) in members {
                    let memberPointer = childPointer + "/" + JSONPointer.escape(name)
                    try index(
                        SchemaNode(value: schema, outerBase: base, location: "\(resourceKey)#\(memberPointer)"),
                        pointer: memberPointer)
                }
            } else if Self.schemaArrayKeywords.contains(keyword), case .array(let elements) = child {
                for (position, schema) in elements.enumerated() {
                    let elementPointer = childPointer + "/\(position)"
                    try index(
                        SchemaNode(value: schema, outerBase: base, location: "\(resourceKey)#\(elementPointer)"),
                        pointer: elementPointer)
                }
            }
        }
    }

    /// Compiles `pattern` into the regex cache (where validation finds it), refusing an invalid one.
    private func checkPattern(_ pattern: String, at location: String) throws(SchemaError) {
        if regex(for: pattern).regex == nil {
            throw SchemaError(
                code: .invalidSchema, message: "invalid regular expression \(pattern.debugDescription)",
                location: location)
        }
    }

    /// The compiled form of the ECMA-262 `pattern`: looked up once per registry (patterns met while
    /// compiling the schema are cached then; validation only reads them), compiled once per process while
    /// ``CompiledPatterns`` keeps it.
    func regex(for pattern: String) -> NSRegularExpressionBox {
        let key = Array(pattern.utf8)
        if let cached = regexCache.withLock({ $0[key] }) { return cached }
        let compiled = CompiledPatterns.shared.box(for: ECMAScriptPattern.translate(pattern))
        return regexCache.withLock { cache in
            if let cached = cache[key] { return cached }
            cache[key] = compiled
            return compiled
        }
    }

    /// Resolves every collected reference, loading remote documents (which may add more references).
    func resolveAllReferences() throws(SchemaError) {
        defer { isSealed = true }
        while let (uri, location) = pendingMetaschemas.popLast() {
            _ = try resource(uri, referencedFrom: location)
        }
        while let (reference, base, location) = pendingReferences.popLast() {
            referenceTargets[location] = try node(for: reference, from: base, referencedFrom: location)
            while let (uri, metaLocation) = pendingMetaschemas.popLast() {
                _ = try resource(uri, referencedFrom: metaLocation)
            }
        }
    }

    // MARK: - Lookup

    /// The resource at `uri` (no fragment), loading it from the built-in metaschemas or the resolver.
    private func resource(_ uri: String, referencedFrom location: String) throws(SchemaError) -> SchemaNode {
        if let node = resources[uri] { return node }
        guard !isSealed else {
            throw SchemaError(code: .unresolvableReference, message: "cannot resolve \(uri)", location: location)
        }
        var document: JSONValue?
        if let builtIn = Metaschemas.document(for: uri) {
            document = builtIn
        } else if let resolver {
            do {
                document = try resolver(uri)
            } catch {
                throw SchemaError(
                    code: .resolverFailed, message: "fetching \(uri) failed: \(error)", location: location)
            }
        }
        guard let document else {
            throw SchemaError(
                code: .unresolvableReference, message: "cannot resolve \(uri): no such schema document",
                location: location)
        }
        try load(document, at: URIReference(uri))
        guard let node = resources[uri] else {
            throw SchemaError(code: .unresolvableReference, message: "cannot resolve \(uri)", location: location)
        }
        return node
    }

    /// The schema `reference` points to, resolved against `base`.
    func node(for reference: String, from base: URIReference, referencedFrom location: String = "") throws(SchemaError)
        -> SchemaNode
    {
        let target = base.resolving(reference)
        let resourceURI = target.withoutFragment.description
        let fragment = JSONPointer.decodeFragment(target.fragment ?? "")
        let resource = try resource(resourceURI, referencedFrom: location)
        if fragment.isEmpty { return resource }
        if fragment.hasPrefix("/") {
            guard let node = walk(from: resource, pointer: fragment, resourceURI: resourceURI) else {
                throw SchemaError(
                    code: .unresolvableReference,
                    message: "cannot resolve \(reference): no schema at \(resourceURI)#\(fragment)", location: location)
            }
            // A reference to a string, a number or an array would make every instance "valid" against
            // nothing: a broken schema, not a silent pass.
            switch node.value {
            case .object, .bool: break
            default:
                throw SchemaError(
                    code: .invalidSchema,
                    message: "\(reference) points at \(node.value.kindPhrase()), not a schema (an object or a boolean)",
                    location: location)
            }
            // A pointer may land where the normal walk never looks (an OpenAPI `components` section,
            // an unknown keyword): index that subtree now, while compiling, so its own references are
            // resolved up front too.
            if !isSealed { try index(node, pointer: fragment) }
            return node
        }
        guard let node = anchors["\(resourceURI)#\(fragment)"] else {
            throw SchemaError(
                code: .unresolvableReference,
                message: "cannot resolve \(reference): no anchor \"\(fragment)\" in \(resourceURI)", location: location)
        }
        return node
    }

    /// Whether `uri#name` is a `$dynamicAnchor`.
    func hasDynamicAnchor(_ resourceURI: String, _ name: String) -> Bool {
        dynamicAnchors.contains("\(resourceURI)#\(name)")
    }

    /// Follows a JSON pointer from a resource, tracking `$id`s of the schemas passed on the way.
    private func walk(from resource: SchemaNode, pointer: String, resourceURI: String) -> SchemaNode? {
        guard let tokens = JSONPointer.tokens(pointer) else { return nil }
        var current = resource
        var expectation = Expectation.schema
        for token in tokens {
            let base = expectation == .schema ? current.base : current.outerBase
            let child: JSONValue?
            switch current.value {
            case .object(let object): child = object[token]
            case .array(let array): child = Int(token).flatMap { array.indices.contains($0) ? array[$0] : nil }
            default: child = nil
            }
            guard let child else { return nil }
            switch expectation {
            case .schema:
                if Self.singleSchemaKeywords.contains(token) {
                    expectation = .schema
                } else if Self.schemaMapKeywords.contains(token) || Self.schemaArrayKeywords.contains(token) {
                    expectation = .container
                } else {
                    expectation = .other
                }
            case .container: expectation = .schema
            case .other: expectation = .other
            }
            current = SchemaNode(value: child, outerBase: base, location: "\(resourceURI)#\(pointer)")
        }
        return current
    }

    private enum Expectation { case schema, container, other }

    // MARK: - Vocabularies

    /// The vocabularies in force for `root`: those of its `$schema`'s `$vocabulary`, or all standard ones.
    func vocabularies(of root: SchemaNode) -> Vocabularies {
        guard case .string(let metaschema) = root.value["$schema"] ?? .null,
            let meta = resources[root.base.resolving(metaschema).withoutFragment.description],
            case .object(let declared) = meta.value["$vocabulary"] ?? .null
        else { return Vocabularies() }
        let uris = Set(declared.keys)
        return Vocabularies(
            applicator: uris.contains(Vocabularies.applicatorURI),
            validation: uris.contains(Vocabularies.validationURI),
            unevaluated: uris.contains(Vocabularies.unevaluatedURI),
            formatAssertion: uris.contains(Vocabularies.formatAssertionURI)
        )
    }
}

/// Which 2020-12 vocabularies a schema's metaschema turns on.
struct Vocabularies {
    static let applicatorURI = "https://json-schema.org/draft/2020-12/vocab/applicator"
    static let validationURI = "https://json-schema.org/draft/2020-12/vocab/validation"
    static let unevaluatedURI = "https://json-schema.org/draft/2020-12/vocab/unevaluated"
    static let formatAssertionURI = "https://json-schema.org/draft/2020-12/vocab/format-assertion"

    var applicator = true
    var validation = true
    var unevaluated = true
    var formatAssertion = false
}
