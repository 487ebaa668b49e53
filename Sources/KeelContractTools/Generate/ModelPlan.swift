import Foundation
import KeelContract

/// A Swift type the generator declares, before it is text.
struct TypePlan {
    enum Kind {
        /// A struct with explicit coding: required members must be present, optional ones may be missing.
        case structure([PropertyPlan])
        /// A string enum whose undeclared values fail to decode (``ClosedEnum``).
        case closedEnum([EnumCasePlan])
        /// The known values of an extensible enum, used as `Extensible<Name>` (``ExtensibleEnum``).
        case extensibleEnum([EnumCasePlan])
        /// `oneOf` with a discriminator: an enum with one case per variant schema.
        case union(discriminator: String, variants: [VariantPlan])
        /// Anything else with a name in the contract: `typealias Name = [String]`.
        case alias(TypeUse)
    }

    /// The full name from the top level, e.g. `["Note", "Attachment"]`.
    var path: [String]
    var kind: Kind
    var documentation: [String]
    var nested: [TypePlan] = []

    var name: String { path[path.count - 1] }
}

/// How a declaration refers to a type.
indirect enum TypeUse: Equatable {
    case declared([String])
    /// `Extensible<Known>` for the known values declared at the path.
    case extensible([String])
    case builtin(Builtin)
    case array(TypeUse)
    case dictionary(TypeUse)
    /// An element that may be null inside an array or dictionary.
    case optional(TypeUse)
}

/// The library types generated code uses for schema types.
enum Builtin: String, CaseIterable {
    case string = "String", date = "Date", int = "Int", int32 = "Int32", int64 = "Int64", double = "Double", float = "Float"
    case bool = "Bool", json = "JSONValue"
}

struct PropertyPlan {
    /// The member name on the wire.
    var wireName: String
    var swiftName: String
    var type: TypeUse
    var required: Bool
    var nullable: Bool
    var documentation: [String]
}

struct EnumCasePlan {
    var swiftName: String
    var rawValue: String
}

struct VariantPlan {
    var swiftName: String
    /// The discriminator values that select this variant.
    var values: [String]
    var type: TypeUse
}

/// Something in the contract the generator cannot turn into correct Swift (yet).
public struct ContractGenerationDiagnostic: Sendable, Equatable, CustomStringConvertible {
    /// The file.
    public var file: String
    /// A JSON pointer fragment into it: `#/components/schemas/Shape`.
    public var location: String
    public var message: String
    public var description: String { "\(file) \(location): \(message)" }
}

/// Reads the schemas of a description into ``TypePlan``s: component schemas, and the inline request and
/// response bodies of operations that have an `operationId`.
struct ModelBuilder {
    let document: OpenAPIDocument
    private(set) var diagnostics: [ContractGenerationDiagnostic] = []
    private(set) var declarations: [TypePlan] = []

    /// The Swift name of each component schema that gets a declaration, by `file#pointer`.
    private var componentNames: [String: String] = [:]
    private var pending: [(key: String, name: String, schema: JSONValue, file: URL, pointer: String)] = []
    /// Every top-level name (components, operation bodies, hoisted helpers).
    private(set) var topLevelNames: Set<String> = []

    /// Names a nested type may not take: it would hide a top-level type or a name generated code uses.
    static let namesGeneratedCodeUses: Set<String> = Set(Builtin.allCases.map(\.rawValue)).union([
        "CodingKeys", "DiscriminatorKey", "Codable", "Hashable", "Sendable", "CodingKey", "Decoder", "Encoder", "DecodingError",
        "CaseIterable", "ClosedEnum", "ExtensibleEnum", "Extensible", "UndeclaredEnumValue", "Optional", "Array", "Dictionary",
    ])

    init(document: OpenAPIDocument) {
        self.document = document
    }

    // MARK: - Plan

    mutating func build() throws(ContractLoadError) {
        registerComponents()
        let bodies = try registerOperationBodies()
        var index = 0
        while index < pending.count {
            let item = pending[index]
            index += 1
            declareTopLevel(item.name, schema: item.schema, file: item.file, pointer: item.pointer)
        }
        for body in bodies {
            declareTopLevel(body.name, schema: body.schema.value, file: body.schema.file, pointer: body.schema.location)
        }
        checkValueCycles()
    }

    /// Component schemas of the root description in order, then those of other files that are referenced.
    private mutating func registerComponents() {
        if case .object(let schemas) = document.root["components"]?["schemas"] ?? .null {
            for (name, schema) in schemas {
                register(name: name, schema: schema, file: document.url)
            }
        }
        var referenced: [(file: URL, name: String)] = []
        var seen: Set<String> = []
        for (file, value) in document.documents.sorted(by: { $0.key.path < $1.key.path }) {
            Self.forEachReference(in: value) { reference in
                let (target, pointer) = Loader.split(reference, relativeTo: file)
                guard target != document.url, let name = Self.componentName(pointer), seen.insert(target.path + "#" + pointer).inserted else { return }
                referenced.append((target, name))
            }
        }
        for (file, name) in referenced {
            if let schema = document.documents[file]?["components"]?["schemas"]?[name] {
                register(name: name, schema: schema, file: file)
            }
        }
    }

    private mutating func register(name: String, schema: JSONValue, file: URL) {
        let pointer = "/components/schemas/" + JSONPointer.escape(name)
        let swiftName = SwiftNames.unique(SwiftNames.topLevelTypeName(name), in: &topLevelNames)
        componentNames[file.path + "#" + pointer] = swiftName
        pending.append((file.path + "#" + pointer, swiftName, schema, file, "#" + pointer))
    }

    /// Inline (not `$ref`) JSON bodies of operations with an `operationId` that need a declaration:
    /// `getChanges` → `GetChangesResponse`, `applyMutations` → `ApplyMutationsRequest`.
    private mutating func registerOperationBodies() throws(ContractLoadError) -> [(name: String, schema: OpenAPIDocument.SchemaSource)] {
        var bodies: [(name: String, schema: OpenAPIDocument.SchemaSource)] = []
        for operation in try document.operations() {
            guard let operationID = operation.operationID else { continue }
            let base = SwiftNames.topLevelTypeName(operationID)
            if let schema = operation.requestBody?.content.first(where: { Self.isJSON($0.name) })?.schema, needsDeclaration(schema.value) {
                bodies.append((SwiftNames.unique(base + "Request", in: &topLevelNames), schema))
            }
            let inline = operation.responses.filter(\.isSuccess).compactMap { response -> (String, OpenAPIDocument.SchemaSource)? in
                guard let schema = response.content.first(where: { Self.isJSON($0.name) })?.schema, needsDeclaration(schema.value) else { return nil }
                return (response.status, schema)
            }
            for (offset, (status, schema)) in inline.enumerated() {
                bodies.append((SwiftNames.unique(base + "Response" + (offset == 0 ? "" : status), in: &topLevelNames), schema))
            }
        }
        return bodies
    }

    static func isJSON(_ mediaType: String) -> Bool {
        let essence = mediaType.split(separator: ";")[0].trimmingCharacters(in: .whitespaces).lowercased()
        return essence == "application/json" || essence.hasSuffix("+json")
    }

    /// Whether an inline body schema declares a type of its own (scalars and `$ref`s do not).
    private func needsDeclaration(_ schema: JSONValue) -> Bool {
        guard schema["$ref"] == nil else { return false }
        switch form(schema) {
        case .object, .union, .closedEnum, .extensibleEnum, .array: return true
        default: return false
        }
    }

    // MARK: - Declarations

    private mutating func declareTopLevel(_ name: String, schema: JSONValue, file: URL, pointer: String) {
        let documentation = Self.documentation(schema)
        if schema["$ref"] == nil {
            switch form(schema) {
            case .object:
                if let plan = structure([name], schema: schema, file: file, pointer: pointer) { declarations.append(plan) }
                return
            case .closedEnum(let values):
                if let cases = enumCases(values, file: file, pointer: pointer) {
                    declarations.append(TypePlan(path: [name], kind: .closedEnum(cases), documentation: documentation))
                }
                return
            case .extensibleEnum(let values):
                if let cases = enumCases(values, file: file, pointer: pointer) {
                    declarations.append(TypePlan(path: [name], kind: .extensibleEnum(cases), documentation: documentation))
                }
                return
            case .union:
                if let plan = union([name], schema: schema, file: file, pointer: pointer) { declarations.append(plan) }
                return
            default:
                break
            }
        }
        // Arrays, dictionaries, scalars and references: a typealias; types its elements need are declared
        // beside it at the top level (a typealias cannot contain them).
        var scope = Scope(path: [], prefix: name)
        guard let (type, _) = use(schema, file: file, pointer: pointer, suggested: "Item", scope: &scope) else { return }
        declarations.append(TypePlan(path: [name], kind: .alias(type), documentation: documentation))
        declarations.append(contentsOf: scope.nested)
    }

    /// Where nested declarations go: inside a struct (`path` non-empty), or hoisted to the top level with
    /// a name prefix (beside a typealias).
    struct Scope {
        var path: [String]
        var prefix: String
        var taken: Set<String> = []
        var nested: [TypePlan] = []
    }

    private mutating func nestedPath(_ suggested: String, in scope: inout Scope) -> [String] {
        if scope.path.isEmpty {
            return [SwiftNames.unique(SwiftNames.topLevelTypeName(scope.prefix + suggested), in: &topLevelNames)]
        }
        // `Date`, `Error`, a top-level model's name or an enclosing type's: `DateValue`, `NoteValue`.
        let base = scope.taken.contains(suggested) || SwiftNames.shadowedTypes.contains(suggested) ? suggested + "Value" : suggested
        return scope.path + [SwiftNames.unique(base, in: &scope.taken)]
    }

    private mutating func structure(_ path: [String], schema: JSONValue, file: URL, pointer: String) -> TypePlan? {
        var members: [Member] = []
        var required: Set<String> = []
        var visiting: Set<String> = []
        guard gather(schema, file: file, pointer: pointer, into: &members, required: &required, visiting: &visiting) else { return nil }
        var scope = Scope(path: path, prefix: "")
        scope.taken = topLevelNames.union(Self.namesGeneratedCodeUses).union(path)
        var memberNames: Set<String> = []
        var properties: [PropertyPlan] = []
        var failed = false
        for member in members {
            guard let (type, nullable) = use(member.schema, file: member.file, pointer: member.pointer,
                                             suggested: SwiftNames.typeName(member.name), scope: &scope)
            else {
                failed = true
                continue
            }
            properties.append(PropertyPlan(
                wireName: member.name, swiftName: SwiftNames.unique(SwiftNames.memberName(member.name), in: &memberNames),
                type: type, required: required.contains(member.name), nullable: nullable, documentation: Self.documentation(member.schema)))
        }
        guard !failed else { return nil }
        return TypePlan(path: path, kind: .structure(properties), documentation: Self.documentation(schema), nested: scope.nested)
    }

    /// A property gathered from an object schema and its `allOf` parts.
    struct Member {
        var name: String
        var schema: JSONValue
        var file: URL
        var pointer: String
    }

    /// Collects the properties of `schema` and of every `allOf` part (following `$ref`s), in order.
    private mutating func gather(_ value: JSONValue, file: URL, pointer: String, into members: inout [Member],
                                 required: inout Set<String>, visiting: inout Set<String>) -> Bool {
        guard let (schema, schemaFile, location) = resolved(value, file: file, pointer: pointer) else { return false }
        guard visiting.insert(schemaFile.path + location).inserted else {
            diagnose(schemaFile, location, "allOf includes itself")
            return false
        }
        defer { visiting.remove(schemaFile.path + location) }
        if schema["oneOf"] != nil || (schema["anyOf"] != nil && !isOpenEnum(schema)) {
            diagnose(schemaFile, location, "oneOf/anyOf combined with properties or inside allOf is not supported yet")
            return false
        }
        if case .array(let names) = schema["required"] ?? .null {
            required.formUnion(names.compactMap(\.stringValue))
        }
        var succeeded = true
        if case .object(let properties) = schema["properties"] ?? .null {
            for (name, property) in properties {
                let propertyPointer = location + "/properties/" + JSONPointer.escape(name)
                if let existing = members.first(where: { $0.name == name }) {
                    if existing.schema != property {
                        diagnose(schemaFile, propertyPointer, "property \(name) is defined differently in two allOf parts (first at \(existing.pointer))")
                        succeeded = false
                    }
                    continue
                }
                members.append(Member(name: name, schema: property, file: schemaFile, pointer: propertyPointer))
            }
        }
        if case .array(let parts) = schema["allOf"] ?? .null {
            for (index, part) in parts.enumerated() {
                succeeded = gather(part, file: schemaFile, pointer: location + "/allOf/\(index)", into: &members,
                                   required: &required, visiting: &visiting) && succeeded
            }
        }
        return succeeded
    }

    private mutating func union(_ path: [String], schema: JSONValue, file: URL, pointer: String) -> TypePlan? {
        guard let property = schema["discriminator"]?["propertyName"]?.stringValue else {
            diagnose(file, pointer + "/discriminator", "a discriminator needs a propertyName")
            return nil
        }
        let keyword = schema["oneOf"] != nil ? "oneOf" : "anyOf"
        guard case .array(let alternatives) = schema[keyword] ?? .null else { return nil }
        // Mapping values are references or bare schema names; both name a component.
        var mapping: [(value: String, key: String)] = []
        if case .object(let entries) = schema["discriminator"]?["mapping"] ?? .null {
            for (value, target) in entries {
                guard let reference = target.stringValue else { continue }
                let full = reference.contains("#") || reference.contains("/") ? reference : "#/components/schemas/" + reference
                let (targetFile, targetPointer) = Loader.split(full, relativeTo: file)
                mapping.append((value, targetFile.path + "#" + targetPointer))
            }
        }
        var variants: [VariantPlan] = []
        var caseNames: Set<String> = []
        var used: Set<String> = []
        var failed = false
        for (index, alternative) in alternatives.enumerated() where !Self.isNullSchema(alternative) {
            let location = pointer + "/\(keyword)/\(index)"
            guard case .string(let reference) = alternative["$ref"] ?? .null else {
                diagnose(file, location, "a discriminated \(keyword) variant must be a $ref to a component schema (inline variants are not supported yet)")
                failed = true
                continue
            }
            let (targetFile, targetPointer) = Loader.split(reference, relativeTo: file)
            let key = targetFile.path + "#" + targetPointer
            guard let rawName = Self.componentName(targetPointer), let typeName = componentNames[key],
                let target = document.documents[targetFile].flatMap({ Loader.walk($0, targetPointer) })
            else {
                diagnose(file, location, "a discriminated \(keyword) variant must be a $ref to a component schema")
                failed = true
                continue
            }
            guard case .object = form(target) else {
                diagnose(file, location, "variant \(rawName) is not an object schema")
                failed = true
                continue
            }
            var members: [Member] = []
            var required: Set<String> = []
            var visiting: Set<String> = []
            guard gather(target, file: targetFile, pointer: "#" + targetPointer, into: &members, required: &required, visiting: &visiting) else {
                failed = true
                continue
            }
            if !members.contains(where: { $0.name == property }) || !required.contains(property) {
                diagnose(targetFile, "#" + targetPointer, "variant \(rawName) must declare the discriminator property \(property) as required")
                failed = true
                continue
            }
            let explicit = mapping.filter { $0.key == key }.map(\.value)
            let values = explicit.isEmpty ? [rawName] : explicit
            used.formUnion(values)
            variants.append(VariantPlan(swiftName: SwiftNames.unique(SwiftNames.memberName(rawName), in: &caseNames), values: values, type: .declared([typeName])))
        }
        for entry in mapping where !used.contains(entry.value) {
            diagnose(file, pointer + "/discriminator/mapping", "mapping value \(entry.value) names a schema that is not one of the \(keyword) variants")
            failed = true
        }
        guard !failed else { return nil }
        return TypePlan(path: path, kind: .union(discriminator: property, variants: variants), documentation: Self.documentation(schema))
    }

    private mutating func enumCases(_ values: [JSONValue], file: URL, pointer: String) -> [EnumCasePlan]? {
        var cases: [EnumCasePlan] = []
        var names: Set<String> = []
        var raws: Set<String> = []
        for value in values where value != .null {
            guard case .string(let raw) = value else {
                diagnose(file, pointer + "/enum", "enum values that are not strings (\(value)) are not supported yet")
                return nil
            }
            guard raws.insert(raw).inserted else { continue }
            cases.append(EnumCasePlan(swiftName: SwiftNames.unique(SwiftNames.memberName(raw), in: &names), rawValue: raw))
        }
        guard !cases.isEmpty else {
            diagnose(file, pointer + "/enum", "an enum without values")
            return nil
        }
        return cases
    }

    // MARK: - Uses

    /// The Swift type for the schema `value` and whether it may be null; types it needs are declared in
    /// `scope`, named after `suggested`. Nil after a diagnostic.
    private mutating func use(_ value: JSONValue, file: URL, pointer: String, suggested: String, scope: inout Scope) -> (TypeUse, Bool)? {
        if case .string(let reference) = value["$ref"] ?? .null {
            let (targetFile, targetPointer) = Loader.split(reference, relativeTo: file)
            if let name = componentNames[targetFile.path + "#" + targetPointer],
                let target = document.documents[targetFile].flatMap({ Loader.walk($0, targetPointer) })
            {
                let nullable = isNullable(target, file: targetFile)
                if target["$ref"] == nil, case .extensibleEnum = form(target) { return (.extensible([name]), nullable) }
                return (.declared([name]), nullable)
            }
            // A reference to something that is not a component: generate what it points at, here.
            guard let (target, resolvedFile, location) = resolved(value, file: file, pointer: pointer) else { return nil }
            return use(target, file: resolvedFile, pointer: location, suggested: suggested, scope: &scope)
        }
        let nullable = isNullable(value, file: file)
        switch form(value) {
        case .extensibleEnum(let values):
            guard let cases = enumCases(values, file: file, pointer: pointer) else { return nil }
            let path = nestedPath(suggested, in: &scope)
            scope.nested.append(TypePlan(path: path, kind: .extensibleEnum(cases), documentation: []))
            return (.extensible(path), nullable)
        case .closedEnum(let values):
            guard let cases = enumCases(values, file: file, pointer: pointer) else { return nil }
            let path = nestedPath(suggested, in: &scope)
            scope.nested.append(TypePlan(path: path, kind: .closedEnum(cases), documentation: []))
            return (.declared(path), nullable)
        case .union:
            let path = nestedPath(suggested, in: &scope)
            guard var plan = union(path, schema: value, file: file, pointer: pointer) else { return nil }
            plan.documentation = []
            scope.nested.append(plan)
            return (.declared(path), nullable)
        case .object:
            let path = nestedPath(suggested, in: &scope)
            guard var plan = structure(path, schema: value, file: file, pointer: pointer) else { return nil }
            plan.documentation = []
            scope.nested.append(plan)
            return (.declared(path), nullable)
        case .wrapped(let inner, let keyword):
            guard let (type, innerNullable) = use(inner, file: file, pointer: pointer + "/" + keyword, suggested: suggested, scope: &scope) else { return nil }
            return (type, nullable || innerNullable)
        case .dictionary(let values):
            guard let values else { return (.dictionary(.builtin(.json)), nullable) }
            guard let (type, valueNullable) = use(values, file: file, pointer: pointer + "/additionalProperties", suggested: suggested + "Value", scope: &scope) else { return nil }
            return (.dictionary(valueNullable ? .optional(type) : type), nullable)
        case .array(let items):
            guard let items else { return (.array(.builtin(.json)), nullable) }
            guard let (type, itemNullable) = use(items, file: file, pointer: pointer + "/items", suggested: suggested + "Item", scope: &scope) else { return nil }
            return (.array(itemNullable ? .optional(type) : type), nullable)
        case .scalar(let builtin):
            return (.builtin(builtin), nullable)
        case .unsupported(let message):
            diagnose(file, pointer, message)
            return nil
        }
    }

    // MARK: - Reading schemas

    enum Form {
        case extensibleEnum([JSONValue])
        case closedEnum([JSONValue])
        case union
        /// `oneOf`/`anyOf` of one schema and null, or `allOf` of one schema: the inner schema.
        case wrapped(JSONValue, keyword: String)
        case object
        /// Free-form (nil) or with an `additionalProperties` schema.
        case dictionary(JSONValue?)
        case array(JSONValue?)
        case scalar(Builtin)
        case unsupported(String)
    }

    /// What kind of Swift type a (non-`$ref`) schema becomes.
    func form(_ schema: JSONValue) -> Form {
        if case .array(let values) = schema["x-extensible-enum"] ?? .null { return .extensibleEnum(values) }
        if case .array(let values) = schema["enum"] ?? .null {
            return schema["x-extensible-enum"] == .bool(true) ? .extensibleEnum(values) : .closedEnum(values)
        }
        if isOpenEnum(schema), case .array(let values) = schema["anyOf"]?[0]?["enum"] ?? .null { return .extensibleEnum(values) }
        for keyword in ["oneOf", "anyOf"] {
            guard case .array(let alternatives) = schema[keyword] ?? .null else { continue }
            if schema["discriminator"] != nil { return .union }
            let remaining = alternatives.enumerated().filter { !Self.isNullSchema($0.element) }
            if remaining.count == 1 { return .wrapped(remaining[0].element, keyword: "\(keyword)/\(remaining[0].offset)") }
            return .unsupported("\(keyword) without a discriminator is not supported yet (supported: a discriminator with propertyName, "
                + "'one schema or null', and the open-enum pattern anyOf [{type: string, enum: [...]}, {type: string}])")
        }
        if case .array(let parts) = schema["allOf"] ?? .null {
            if parts.count == 1, schema["properties"] == nil { return .wrapped(parts[0], keyword: "allOf/0") }
            return .object
        }
        var types: [String] = []
        switch schema["type"] ?? .null {
        case .string(let type): types = [type]
        case .array(let list): types = list.compactMap(\.stringValue)
        default: break
        }
        types.removeAll { $0 == "null" }
        if types.isEmpty, schema["type"] != nil { return .unsupported("a schema that only allows null is not supported yet") }
        if types.count > 1 { return .unsupported("a value of several types (\(types.joined(separator: ", "))) is not supported yet") }
        // No type but properties: an object, as most descriptions mean it.
        let kind = types.first ?? (schema["properties"] != nil ? "object" : nil)
        switch kind {
        case "object":
            if case .object(let properties) = schema["properties"] ?? .null, !properties.isEmpty { return .object }
            if schema["additionalProperties"] == .bool(false) { return .object }
            if case .object = schema["additionalProperties"] ?? .null { return .dictionary(schema["additionalProperties"]) }
            return .dictionary(nil)
        case "array":
            return .array(schema["items"].flatMap { $0 == .bool(true) ? nil : $0 })
        case "string":
            return .scalar(schema["format"]?.stringValue == "date-time" ? .date : .string)
        case "integer":
            switch schema["format"]?.stringValue {
            case "int32": return .scalar(.int32)
            case "int64": return .scalar(.int64)
            default: return .scalar(.int)
            }
        case "number":
            return .scalar(schema["format"]?.stringValue == "float" ? .float : .double)
        case "boolean":
            return .scalar(.bool)
        case nil:
            if case .string = schema["const"] ?? .null { return .scalar(.string) }
            return .scalar(.json)
        case let other?:
            return .unsupported("type \(other) is not a JSON Schema type")
        }
    }

    /// The open-enum pattern: `anyOf: [{type: string, enum: [...]}, {type: string}]`.
    func isOpenEnum(_ schema: JSONValue) -> Bool {
        guard case .array(let alternatives) = schema["anyOf"] ?? .null, alternatives.count == 2 else { return false }
        return alternatives[0]["enum"] != nil && alternatives[1]["enum"] == nil && alternatives[1]["type"] == "string"
    }

    /// Whether a value of the schema may be null: 3.1 `type: [..., "null"]`, 3.0 `nullable: true`, a null
    /// in `enum`, or a null alternative of `oneOf`/`anyOf`; through `$ref`s and single-part `allOf`s.
    func isNullable(_ schema: JSONValue, file: URL, depth: Int = 0) -> Bool {
        guard depth < 32 else { return false }
        if case .string = schema["$ref"] ?? .null {
            guard let target = try? document.resolve(schema, in: file) else { return false }
            return isNullable(target.value, file: target.file, depth: depth + 1)
        }
        if case .array(let types) = schema["type"] ?? .null, types.contains("null") { return true }
        if document.isOpenAPI30, schema["nullable"] == .bool(true) { return true }
        if case .array(let values) = schema["enum"] ?? .null, values.contains(.null) { return true }
        for keyword in ["oneOf", "anyOf"] {
            if case .array(let alternatives) = schema[keyword] ?? .null, alternatives.contains(where: Self.isNullSchema) { return true }
        }
        if case .array(let parts) = schema["allOf"] ?? .null, parts.count == 1, schema["properties"] == nil {
            return isNullable(parts[0], file: file, depth: depth + 1)
        }
        return false
    }

    static func isNullSchema(_ schema: JSONValue) -> Bool {
        schema["type"] == "null" || schema["type"] == ["null"] || schema["enum"] == [.null] || schema["const"] == .null
    }

    /// `#/components/schemas/X` → `X` (only direct children of `components/schemas`).
    static func componentName(_ pointer: String) -> String? {
        guard let tokens = JSONPointer.tokens(pointer), tokens.count == 3, tokens[0] == "components", tokens[1] == "schemas" else { return nil }
        return tokens[2]
    }

    private mutating func resolved(_ value: JSONValue, file: URL, pointer: String) -> (JSONValue, URL, String)? {
        do {
            let target = try document.resolve(value, in: file)
            return (target.value, target.file, target.location.isEmpty ? pointer : target.location)
        } catch {
            diagnose(file, pointer, error.message)
            return nil
        }
    }

    private mutating func diagnose(_ file: URL, _ location: String, _ message: String) {
        diagnostics.append(ContractGenerationDiagnostic(file: displayName(file), location: location, message: message))
    }

    /// A file's name relative to the root description's directory (machine-independent output).
    func displayName(_ file: URL) -> String {
        let directory = document.url.deletingLastPathComponent().path + "/"
        return file.path.hasPrefix(directory) ? String(file.path.dropFirst(directory.count)) : file.lastPathComponent
    }

    static func documentation(_ schema: JSONValue) -> [String] {
        var lines: [String] = []
        for key in ["title", "description"] {
            guard let text = schema[key]?.stringValue else { continue }
            lines += text.split(separator: "\n", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
            while lines.last?.isEmpty == true { lines.removeLast() }
        }
        if schema["deprecated"] == .bool(true) { lines.append("Deprecated by the contract.") }
        return lines
    }

    /// Calls `body` with every `$ref` string under `value`.
    static func forEachReference(in value: JSONValue, _ body: (String) -> Void) {
        switch value {
        case .object(let object):
            if case .string(let reference) = object["$ref"] ?? .null { body(reference) }
            for (_, child) in object { forEachReference(in: child, body) }
        case .array(let elements):
            for element in elements { forEachReference(in: element, body) }
        default:
            break
        }
    }

    // MARK: - Recursion by value

    /// A struct that contains itself by value (directly or through other structs, optionals included)
    /// cannot be declared; arrays, dictionaries and union enums (declared `indirect`) break the cycle.
    private mutating func checkValueCycles() {
        var edges: [[String]: [[String]]] = [:]
        var locations: [[String]] = []
        func collect(_ plan: TypePlan) {
            locations.append(plan.path)
            switch plan.kind {
            case .structure(let properties):
                edges[plan.path] = properties.compactMap { if case .declared(let path) = $0.type { path } else { nil } }
            case .alias(.declared(let path)):
                edges[plan.path] = [path]
            default:
                break
            }
            plan.nested.forEach(collect)
        }
        declarations.forEach(collect)
        var state: [[String]: Bool] = [:]  // false: on the stack; true: done
        var stack: [[String]] = []
        var reported = false
        func visit(_ node: [String]) {
            if reported { return }
            if let finished = state[node] {
                if !finished, let start = stack.firstIndex(of: node) {
                    let cycle = (stack[start...] + [node]).map { $0.joined(separator: ".") }.joined(separator: " → ")
                    diagnostics.append(ContractGenerationDiagnostic(
                        file: displayName(document.url), location: "#/components/schemas",
                        message: "\(cycle): a struct that contains itself by value is not supported yet (an array of it works)"))
                    reported = true
                }
                return
            }
            state[node] = false
            stack.append(node)
            for next in edges[node] ?? [] { visit(next) }
            stack.removeLast()
            state[node] = true
        }
        for node in locations { visit(node) }
    }
}
