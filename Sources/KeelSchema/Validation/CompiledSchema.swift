import Foundation
import KeelContract

/// One schema object compiled into direct checks: every keyword read, typed and resolved once, when the
/// ``JSONSchema`` is created, so validation never looks a keyword up by name, never resolves a reference
/// and never builds a location string unless it reports an error.
///
/// Subschemas of the tree are owned by their parent; `$ref` and `$dynamicRef` edges (which may form
/// cycles) point at nodes owned by the ``CompiledProgram``.
final class CompiledNode: @unchecked Sendable {
    // @unchecked Sendable: every field is written while the program compiles (single-threaded, inside
    // JSONSchema.init) and only read afterwards.

    /// What kind of schema this is.
    enum Form { case alwaysValid, neverValid, keywords }

    /// A subschema and the keyword path from its parent to it (`/properties/title`, `/allOf/2`).
    struct Edge {
        let node: CompiledNode
        let segment: String
    }

    /// A `$ref` or `$dynamicRef`: its target, compiled (nil when it could not be resolved, which
    /// compilation normally refuses), and for a dynamic reference that may go dynamic, the anchor name.
    struct Reference {
        let text: String
        unowned(unsafe) let target: CompiledNode?
        let segment: String
        let dynamicAnchor: String?
    }

    /// A property named by `properties`.
    struct Property {
        let name: String
        let edge: Edge
    }

    struct PatternProperty {
        let regex: NSRegularExpressionBox
        let edge: Edge
    }

    enum Dependency {
        case names([String])
        case schema(Edge)
    }

    /// Bits of ``typeMask``.
    enum TypeBit {
        static let null: UInt8 = 1
        static let boolean: UInt8 = 2
        static let object: UInt8 = 4
        static let array: UInt8 = 8
        static let number: UInt8 = 16
        static let string: UInt8 = 32
        static let integer: UInt8 = 64
    }

    var form = Form.keywords
    /// Index of the base URI in effect inside this schema (its dynamic-scope resource).
    var resource = 0

    // Core and applicators (in place).
    var reference: Reference?
    var dynamicReference: Reference?
    var allOf: [Edge] = []
    var anyOf: [Edge] = []
    var oneOf: [Edge] = []
    var not: Edge?
    var condition: Edge?
    var then: Edge?
    var otherwise: Edge?
    var dependencies: [(property: String, dependency: Dependency, segment: String)] = []
    var dependentSchemas: [(property: String, edge: Edge)] = []

    // Applicators on objects.
    var properties: [Property] = []
    var patternProperties: [PatternProperty] = []
    var additionalProperties: Edge?
    var additionalPropertiesIsFalse = false
    var propertyNames: Edge?

    // Applicators on arrays.
    var prefixItems: [Edge] = []
    var items: Edge?
    var itemsIsFalse = false
    var contains: Edge?
    var minContains = 1
    var minContainsSegment = ""
    var maxContains: Int?

    // Unevaluated.
    var unevaluatedItems: Edge?
    var unevaluatedProperties: Edge?

    // Assertions.
    var typeMask: UInt8?
    var typeNames: [String] = []
    var nullable = false
    var constant: JSONValue?
    var enumeration: [JSONValue]?
    var multipleOf: JSONNumber?
    var maximum: JSONNumber?
    var exclusiveMaximum: JSONNumber?
    var minimum: JSONNumber?
    var exclusiveMinimum: JSONNumber?
    var maxLength: Int?
    var minLength: Int?
    var pattern: (text: String, regex: NSRegularExpressionBox)?
    var maxItems: Int?
    var minItems: Int?
    var uniqueItems = false
    var maxProperties: Int?
    var minProperties: Int?
    var required: [String] = []
    var dependentRequired: [(property: String, names: [String])] = []
    var format: String?

    /// Summaries that let evaluation skip whole groups of keywords.
    var hasInPlaceApplicators = false
    var hasObjectKeywords = false
    var hasArrayKeywords = false
    var hasNumberKeywords = false
    var hasStringKeywords = false

    init(form: Form) { self.form = form }
}

/// Every compiled node of one ``JSONSchema`` (reference targets are owned here), the resource table for
/// the dynamic scope, and the compiled targets of `$dynamicAnchor`s by resource.
final class CompiledProgram: @unchecked Sendable {
    // @unchecked Sendable: built in `init`, read-only afterwards.
    private(set) var root: CompiledNode!
    /// Nodes reached through references, kept alive here (edges to them are unowned).
    private var owned: [CompiledNode] = []
    /// The compiled node of each reference target, by location and outer base.
    private var targets: [String: CompiledNode] = [:]
    /// Reference targets made but not yet filled.
    private var pending: [(CompiledNode, SchemaNode)] = []
    private var resourceIndices: [String: Int] = [:]
    /// `$dynamicAnchor` targets: resource index → anchor name → node.
    private(set) var dynamicTargets: [Int: [String: CompiledNode]] = [:]
    /// Whether evaluated properties and items must be recorded (some schema has an `unevaluated*` keyword
    /// and the vocabulary is on); otherwise the sets would be built for nothing.
    let collectsAnnotations: Bool
    /// Whether the root's metaschema turns the format-assertion vocabulary on.
    let formatAssertion: Bool

    private let registry: SchemaRegistry
    private let vocabularies: Vocabularies
    private static let validNode = CompiledNode(form: .alwaysValid)
    private static let invalidNode = CompiledNode(form: .neverValid)

    init(registry: SchemaRegistry, root: SchemaNode, vocabularies: Vocabularies) {
        self.registry = registry
        self.vocabularies = vocabularies
        self.collectsAnnotations = vocabularies.unevaluated && registry.usesUnevaluated
        self.formatAssertion = vocabularies.formatAssertion
        self.root = target(root)
        fillPending()
        var byResource: [String: [String: CompiledNode]] = [:]
        for key in registry.dynamicAnchors.sorted() {
            guard let hash = key.lastIndex(of: "#") else { continue }
            let resourceURI = String(key[..<hash])
            let name = String(key[key.index(after: hash)...])
            guard let node = try? registry.node(for: "#" + name, from: URIReference(resourceURI)) else { continue }
            byResource[resourceURI, default: [:]][name] = target(node)
        }
        fillPending()
        for (uri, anchors) in byResource {
            // A resource no compiled node lives in is never on the dynamic scope.
            if let index = resourceIndices[uri] { dynamicTargets[index] = anchors }
        }
    }

    /// The compiled node for a reference target (or the root), compiled once however often it is referenced.
    /// It is filled later, from ``fillPending()``: following a chain of `$ref`s by recursion would take a
    /// stack frame per link (50,000 links overflowed the stack).
    private func target(_ node: SchemaNode) -> CompiledNode {
        let key = node.location + " " + node.outerBase.description
        if let compiled = targets[key] { return compiled }
        let compiled = makeNode(for: node.value)
        targets[key] = compiled
        owned.append(compiled)
        pending.append((compiled, node))
        return compiled
    }

    /// Fills every reference target made so far, and those their references make, in a loop.
    private func fillPending() {
        while let (compiled, node) = pending.popLast() { fill(compiled, from: node) }
    }

    private func makeNode(for value: JSONValue) -> CompiledNode {
        switch value {
        case .bool(false): return CompiledNode(form: .neverValid)
        case .object: return CompiledNode(form: .keywords)
        default: return CompiledNode(form: .alwaysValid)  // true (or not a schema: "anything goes")
        }
    }

    /// A subschema of the tree, at `keyword` (and `member`, for maps and arrays) below a schema whose
    /// base is `base` and whose location's pointer is `pointer` (the same locations the registry indexed,
    /// so reference targets are found by them).
    private func child(
        _ value: JSONValue, base: URIReference, pointer: String, _ keyword: String, _ member: String? = nil
    ) -> CompiledNode.Edge {
        // Member names appear escaped in locations and in reported keyword paths, as JSON pointers require.
        let segment = "/" + JSONPointer.escape(keyword) + (member.map { "/" + JSONPointer.escape($0) } ?? "")
        let compiled: CompiledNode
        switch value {
        case .bool(false): compiled = Self.invalidNode
        case .object:
            compiled = CompiledNode(form: .keywords)
            fill(
                compiled,
                from: SchemaNode(value: value, outerBase: base, location: "\(base.description)#\(pointer)\(segment)"))
        default: compiled = Self.validNode  // true (or not a schema: "anything goes")
        }
        return CompiledNode.Edge(node: compiled, segment: segment)
    }

    private func resourceIndex(_ uri: String) -> Int {
        if let index = resourceIndices[uri] { return index }
        let index = resourceIndices.count
        resourceIndices[uri] = index
        return index
    }

    // MARK: - Compiling one schema object

    private func fill(_ compiled: CompiledNode, from node: SchemaNode) {
        guard case .object(let schema) = node.value else { return }
        let base = node.base
        compiled.resource = resourceIndex(base.description)
        let pointer =
            node.location.firstIndex(of: "#").map { String(node.location[node.location.index(after: $0)...]) }
            ?? ""
        func edge(_ keyword: String, _ member: String?, _ value: JSONValue) -> CompiledNode.Edge {
            child(value, base: base, pointer: pointer, keyword, member)
        }

        for keyword in ["$ref", "$dynamicRef"] {
            guard case .string(let text) = schema[keyword] ?? .null else { continue }
            let dynamic = keyword == "$dynamicRef"
            let resolved =
                registry.referenceTargets[node.location + "/" + keyword]
                ?? (try? registry.node(for: text, from: base))
            var anchor: String?
            if dynamic {
                let uri = base.resolving(text)
                let fragment = uri.fragment ?? ""
                // Only a dynamic anchor "bookended" by a $dynamicAnchor at the initial target goes dynamic.
                if !fragment.isEmpty, !fragment.hasPrefix("/"),
                    registry.hasDynamicAnchor(uri.withoutFragment.description, fragment)
                {
                    anchor = fragment
                }
            }
            let reference = CompiledNode.Reference(
                text: text, target: resolved.map(target), segment: "/" + keyword, dynamicAnchor: anchor)
            if dynamic { compiled.dynamicReference = reference } else { compiled.reference = reference }
        }

        if vocabularies.applicator {
            compileApplicators(schema, into: compiled, edge: edge)
        }
        if vocabularies.validation {
            compileAssertions(schema, into: compiled)
        }
        if case .string(let format) = schema["format"] ?? .null { compiled.format = format }
        if vocabularies.unevaluated {
            compiled.unevaluatedItems = schema["unevaluatedItems"].map { edge("unevaluatedItems", nil, $0) }
            compiled.unevaluatedProperties = schema["unevaluatedProperties"].map {
                edge("unevaluatedProperties", nil, $0)
            }
        }
        compiled.hasInPlaceApplicators =
            !compiled.allOf.isEmpty || !compiled.anyOf.isEmpty || !compiled.oneOf.isEmpty || compiled.not != nil
            || compiled.condition != nil || !compiled.dependencies.isEmpty || !compiled.dependentSchemas.isEmpty
        compiled.hasObjectKeywords =
            !compiled.properties.isEmpty || !compiled.patternProperties.isEmpty
            || compiled.additionalProperties != nil || compiled.propertyNames != nil || compiled.maxProperties != nil
            || compiled.minProperties != nil || !compiled.required.isEmpty || !compiled.dependentRequired.isEmpty
            || compiled.unevaluatedProperties != nil
        compiled.hasArrayKeywords =
            !compiled.prefixItems.isEmpty || compiled.items != nil || compiled.contains != nil
            || compiled.maxItems != nil || compiled.minItems != nil || compiled.uniqueItems
            || compiled.unevaluatedItems != nil
        compiled.hasNumberKeywords =
            compiled.multipleOf != nil || compiled.maximum != nil || compiled.exclusiveMaximum != nil
            || compiled.minimum != nil || compiled.exclusiveMinimum != nil
        compiled.hasStringKeywords =
            compiled.maxLength != nil || compiled.minLength != nil || compiled.pattern != nil || compiled.format != nil
    }

    private func compileApplicators(
        _ schema: JSONObject, into compiled: CompiledNode,
        edge: (String, String?, JSONValue) -> CompiledNode.Edge
    ) {
        for keyword in ["allOf", "anyOf", "oneOf"] {
            guard case .array(let subschemas) = schema[keyword] ?? .null else { continue }
            let edges = subschemas.enumerated().map { edge(keyword, "\($0.offset)", $0.element) }
            switch keyword {
            case "allOf": compiled.allOf = edges
            case "anyOf": compiled.anyOf = edges
            default: compiled.oneOf = edges
            }
        }
        compiled.not = schema["not"].map { edge("not", nil, $0) }
        if let condition = schema["if"] {
            compiled.condition = edge("if", nil, condition)
            compiled.then = schema["then"].map { edge("then", nil, $0) }
            compiled.otherwise = schema["else"].map { edge("else", nil, $0) }
        }
        if case .object(let dependencies) = schema["dependencies"] ?? .null {
            // Draft 7 `dependencies` (array → dependentRequired, schema → dependentSchemas), kept for old documents.
            for (property, dependency) in dependencies {
                let segment = "/dependencies/" + JSONPointer.escape(property)
                if case .array(let names) = dependency {
                    compiled.dependencies.append((property, .names(names.compactMap(\.stringValue)), segment))
                } else {
                    let built = edge("dependencies", property, dependency)
                    compiled.dependencies.append((property, .schema(built), segment))
                }
            }
        }
        if case .object(let dependents) = schema["dependentSchemas"] ?? .null {
            for (property, subschema) in dependents {
                compiled.dependentSchemas.append((property, edge("dependentSchemas", property, subschema)))
            }
        }
        if case .object(let properties) = schema["properties"] ?? .null {
            for (name, subschema) in properties {
                compiled.properties.append(.init(name: name, edge: edge("properties", name, subschema)))
            }
        }
        if case .object(let patterns) = schema["patternProperties"] ?? .null {
            for (pattern, subschema) in patterns {
                compiled.patternProperties.append(
                    .init(regex: registry.regex(for: pattern), edge: edge("patternProperties", pattern, subschema)))
            }
        }
        if let additional = schema["additionalProperties"] {
            compiled.additionalProperties = edge("additionalProperties", nil, additional)
            compiled.additionalPropertiesIsFalse = additional == .bool(false)
        }
        compiled.propertyNames = schema["propertyNames"].map { edge("propertyNames", nil, $0) }
        if case .array(let prefix) = schema["prefixItems"] ?? .null {
            compiled.prefixItems = prefix.enumerated().map { edge("prefixItems", "\($0.offset)", $0.element) }
        }
        if let items = schema["items"] {
            compiled.items = edge("items", nil, items)
            compiled.itemsIsFalse = items == .bool(false)
        }
        if let contains = schema["contains"] {
            compiled.contains = edge("contains", nil, contains)
            let declaredMinimum = vocabularies.validation ? schema["minContains"].flatMap(nonNegativeInteger) : nil
            compiled.minContains = declaredMinimum ?? 1
            compiled.minContainsSegment =
                compiled.minContains == 1 && schema["minContains"] == nil ? "/contains" : "/minContains"
            if vocabularies.validation { compiled.maxContains = schema["maxContains"].flatMap(nonNegativeInteger) }
        }
    }

    private func compileAssertions(_ schema: JSONObject, into compiled: CompiledNode) {
        if let type = schema["type"] {
            let names: [String]
            switch type {
            case .string(let name): names = [name]
            case .array(let list): names = list.compactMap(\.stringValue)
            default: names = []
            }
            var mask: UInt8 = 0
            for name in names {
                switch name {
                case "null": mask |= CompiledNode.TypeBit.null
                case "boolean": mask |= CompiledNode.TypeBit.boolean
                case "object": mask |= CompiledNode.TypeBit.object
                case "array": mask |= CompiledNode.TypeBit.array
                case "number": mask |= CompiledNode.TypeBit.number
                case "string": mask |= CompiledNode.TypeBit.string
                case "integer": mask |= CompiledNode.TypeBit.integer
                default: break
                }
            }
            compiled.typeMask = mask
            compiled.typeNames = names
        }
        // OpenAPI 3.0: `nullable: true` means "this schema, or null", beside `type`, `enum`, `anyOf`/
        // `oneOf`/`allOf` and `$ref` alike (honoured only with ValidationOptions.openAPINullable).
        compiled.nullable = schema["nullable"] == .bool(true)
        compiled.constant = schema["const"]
        if case .array(let values) = schema["enum"] ?? .null { compiled.enumeration = values }
        func number(_ keyword: String) -> JSONNumber? {
            if case .number(let value) = schema[keyword] ?? .null { return value }
            return nil
        }
        if let divisor = number("multipleOf"), divisor > JSONNumber(Int64(0)) { compiled.multipleOf = divisor }
        compiled.maximum = number("maximum")
        compiled.exclusiveMaximum = number("exclusiveMaximum")
        compiled.minimum = number("minimum")
        compiled.exclusiveMinimum = number("exclusiveMinimum")
        compiled.maxLength = schema["maxLength"].flatMap(nonNegativeInteger)
        compiled.minLength = schema["minLength"].flatMap(nonNegativeInteger)
        if case .string(let pattern) = schema["pattern"] ?? .null {
            compiled.pattern = (pattern, registry.regex(for: pattern))
        }
        compiled.maxItems = schema["maxItems"].flatMap(nonNegativeInteger)
        compiled.minItems = schema["minItems"].flatMap(nonNegativeInteger)
        compiled.uniqueItems = schema["uniqueItems"] == .bool(true)
        compiled.maxProperties = schema["maxProperties"].flatMap(nonNegativeInteger)
        compiled.minProperties = schema["minProperties"].flatMap(nonNegativeInteger)
        if case .array(let required) = schema["required"] ?? .null {
            compiled.required = required.compactMap(\.stringValue)
        }
        if case .object(let dependencies) = schema["dependentRequired"] ?? .null {
            for (property, requirement) in dependencies {
                guard case .array(let names) = requirement else { continue }
                compiled.dependentRequired.append((property, names.compactMap(\.stringValue)))
            }
        }
    }
}

/// The value of a keyword that must be a non-negative integer, or nil. One too large for `Int` (`1e19`)
/// is `Int.max`: no string, array or object reaches it, so `minLength: 1e19` fails everything instead of
/// being ignored.
func nonNegativeInteger(_ value: JSONValue) -> Int? {
    guard case .number(let number) = value else { return nil }
    if let integer = number.int64 { return integer >= 0 ? Int(clamping: integer) : nil }
    return number.isInteger && number.double > 0 ? Int.max : nil
}
