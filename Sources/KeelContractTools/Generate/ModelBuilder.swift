import Foundation
import KeelContract

/// Reads the schemas of a description into ``TypePlan``s: component schemas, schemas that `$ref`s point at
/// outside `components/schemas` (a whole file, `#/components/schemas/A/properties/b`), and the inline
/// request and response bodies of operations that have an `operationId`.
///
/// Every top-level name is chosen before any type is built, so a nested type can never take (and hide) a
/// top-level one, and a recursive reference always finds its target's name.
struct ModelBuilder {
    let document: OpenAPIDocument
    private(set) var diagnostics: [ContractGenerationDiagnostic] = []
    private(set) var declarations: [TypePlan] = []
    /// Every top-level name (declared types and the helpers hoisted beside typealiases).
    private(set) var topLevelNames: Set<String> = []

    /// The Swift name of each schema that gets a top-level declaration, by `file#pointer`.
    private var declaredTargets: [String: String] = [:]
    private var pending: [(name: String, schema: JSONValue, file: URL, pointer: String)] = []
    /// Names nested types may not take: every top-level name and the names generated code uses.
    private var reserved: Set<String> = []
    /// Schemas being expanded inline through a `$ref` (a cycle among them is reported, not followed).
    private var expanding: Set<String> = []
    /// The schema declared under each top-level name (what a `$ref` to that name stands for).
    private var declaredSchemas: [String: (schema: JSONValue, file: URL)] = [:]
    /// Schemas a `$ref` uses as a value somewhere (not only as an `allOf` part or a mapping target).
    private var directlyUsed: Set<String> = []
    /// Inline schemas whose struct is being built, by `file#pointer`: reached again (an `allOf` that merges
    /// an enclosing schema), they are the same type.
    private var building: [String: [String]] = [:]
    /// The schema whose members are being gathered (where a too-deep `allOf` chain is reported).
    private var gatherOrigin: (file: URL, pointer: String)?
    /// The `allOf` parts (file and location) whose members one `gather` has already collected: a part shared
    /// by several branches is collected once, not once per path to it (exponentially many).
    private var gathered: Set<String> = []
    /// The type of each member a top-level struct declares itself, by `file#pointer` of the member's schema:
    /// a struct that gathers the same member through an `allOf` part uses that type (`Resource.Parent`)
    /// instead of declaring a copy of it.
    private var memberTypes: [String: (schema: JSONValue, type: TypeUse, nullable: Bool)] = [:]

    /// Names a nested type may not take: it would hide a top-level type or a name generated code uses.
    static let namesGeneratedCodeUses: Set<String> = Set(Builtin.allCases.map(\.rawValue)).union([
        "CodingKeys", "DiscriminatorKey", "Codable", "Hashable", "Sendable", "CodingKey", "Decoder", "Encoder",
        "DecodingError",
        "CaseIterable", "ClosedEnum", "ExtensibleEnum", "Extensible", "Nullable", "UndeclaredEnumValue", "Optional",
        "Array", "Dictionary", "ClosedIntegerEnum", "JSONKind",
    ]).union(SwiftNames.shadowedTypes)

    init(document: OpenAPIDocument) {
        self.document = document
    }

    // MARK: - Plan

    mutating func build() throws(ContractLoadError) {
        // Names that are one text in two Unicode forms (`café` composed and decomposed, `K` and the Kelvin
        // sign): JSON and Keel's runtime keep them apart by their bytes, Swift's strings do not — the generator
        // would merge two members into one, or point two references at one type (found in an outside audit).
        // Refused, naming both.
        for (file, root) in document.documents.sorted(by: { $0.key.path < $1.key.path }) {
            findEquivalentNames(root, file: file, pointer: "#")
        }
        guard diagnostics.isEmpty else { return }
        let operations = try document.operations()
        let targets = schemaReferenceTargets(operations)
        registerComponents(targets)
        registerOperationBodies(operations)
        registerReferenceTargets(targets)
        reserved = topLevelNames.union(Self.namesGeneratedCodeUses)
        // Built parts first (so a struct reuses its allOf parts' member types), declared in document order.
        var built: [Int: [TypePlan]] = [:]
        for index in buildOrder() {
            let item = pending[index]
            declareTopLevel(item.name, schema: item.schema, file: item.file, pointer: item.pointer)
            built[index] = declarations
            declarations = []
        }
        declarations = pending.indices.flatMap { built[$0] ?? [] }
        checkCycles()
        // A schema reached from several places reports the same problem once.
        var seen: Set<String> = []
        diagnostics = diagnostics.filter { seen.insert($0.description).inserted }
    }

    /// The order to build `pending` in: each after the declared schemas it names as parts, otherwise document
    /// order.
    private func buildOrder() -> [Int] {
        var index: [String: Int] = [:]
        for (position, item) in pending.enumerated() { index[item.file.path + item.pointer] = position }
        var order: [Int] = []
        var state = [UInt8](repeating: 0, count: pending.count)  // 0 new, 1 visiting, 2 done
        var stack: [(item: Int, parts: [Int], next: Int)] = []
        for start in pending.indices where state[start] == 0 {
            state[start] = 1
            stack.append((start, parts(of: start), 0))
            while let top = stack.last {
                if top.next < top.parts.count {
                    stack[stack.count - 1].next += 1
                    let part = top.parts[top.next]
                    if state[part] == 0 {
                        state[part] = 1
                        stack.append((part, parts(of: part), 0))
                    }
                } else {
                    stack.removeLast()
                    state[top.item] = 2
                    order.append(top.item)
                }
            }
        }
        return order

        // The `$ref`s of its `allOf`, and in 3.1 its own `$ref` with members beside it (also a part).
        func parts(of position: Int) -> [Int] {
            let item = pending[position]
            let schema = unwrapped(item.schema).schema
            var parts: [JSONValue] = []
            if case .array(let list) = schema["allOf"] ?? .null { parts = list }
            if refWithSiblings(schema, file: item.file) { parts.append(schema) }
            return parts.compactMap { part in
                guard case .string(let reference) = part["$ref"] ?? .null else { return nil }
                let (file, pointer) = Loader.split(reference, relativeTo: item.file)
                return index[file.path + "#" + pointer]
            }
        }
    }

    /// The targets of every `$ref` in a schema position, reached from the component schemas and the
    /// operations' parameters and bodies, following references transitively; each once, in a stable order.
    private mutating func schemaReferenceTargets(_ operations: [OpenAPIDocument.Operation]) -> [(URL, String)] {
        // (schema, file, whether its own top-level $ref is a use as a value): a component's own entry
        // (`Pet: {$ref: './Pet.yaml'}`) only names the schema; its uses are counted where it is used.
        var work: [(JSONValue, URL, Bool)] = []
        var aliases: [(String, String)] = []
        if case .object(let schemas) = document.root["components"]?["schemas"] ?? .null {
            for (name, schema) in schemas {
                work.append((schema, document.url, false))
                if case .string(let reference) = schema["$ref"] ?? .null, !refWithSiblings(schema, file: document.url) {
                    aliases.append(
                        (
                            document.url.path + "#/components/schemas/" + JSONPointer.escape(name),
                            canonicalKey(reference, from: document.url)
                        ))
                }
            }
        }
        for operation in operations {
            let sources =
                operation.parameters.compactMap(\.schema) + (operation.requestBody?.content ?? []).compactMap(\.schema)
                + operation.responses.flatMap { $0.content.compactMap(\.schema) }
            for source in sources { work.append((source.value, source.file, true)) }
        }
        var targets: [(URL, String)] = []
        var seen: Set<String> = []
        var next = 0
        while next < work.count {
            let (schema, file, topLevelIsUse) = work[next]
            next += 1
            Self.forEachSchemaReference(in: schema, direct: topLevelIsUse, siblingsMerge: !document.isOpenAPI30) {
                reference, direct in
                // A `$ref` is a reference; a mapping value may be a bare name (`Cat`), or a file (`Cat.yaml`).
                let full = reference.contains(".") ? reference : SchemaReading.mappingReference(reference)
                let (target, pointer) = Loader.split(full, relativeTo: file)
                if direct { directlyUsed.insert(canonicalKey(full, from: file)) }
                guard seen.insert(target.path + "#" + pointer).inserted,
                    let value = document.documents[target].flatMap({ Loader.walk($0, pointer) })
                else { return }
                targets.append((target, pointer))
                // A target's own top-level $ref (a chain of names) is followed by canonicalKey, not a new use.
                work.append((value, target, false))
            }
        }
        // A component used as a value makes what it names used as a value.
        var changed = true
        while changed {
            changed = false
            for (component, target) in aliases
            where directlyUsed.contains(component) && directlyUsed.insert(target).inserted { changed = true }
        }
        return targets
    }

    /// Component schemas of the root description in order, then those of other files that are referenced.
    /// A component that is only a `$ref` to a schema without a name of its own (`Pet: {$ref: './schemas/Pet.yaml'}`,
    /// the usual split layout) gives that schema its name.
    private mutating func registerComponents(_ targets: [(URL, String)]) {
        if case .object(let schemas) = document.root["components"]?["schemas"] ?? .null {
            for (name, schema) in schemas {
                let pointer = "/components/schemas/" + JSONPointer.escape(name)
                if case .string(let reference) = schema["$ref"] ?? .null, !refWithSiblings(schema, file: document.url) {
                    let (file, targetPointer) = Loader.split(reference, relativeTo: document.url)
                    let key = file.path + "#" + targetPointer
                    let isRootComponent = file == document.url && Self.componentName(targetPointer) != nil
                    if !isRootComponent, declaredTargets[key] == nil,
                        let target = document.documents[file].flatMap({ Loader.walk($0, targetPointer) }),
                        target["$ref"] == nil, needsDeclaration(target, file: file)
                    {
                        let swiftName = SwiftNames.unique(SwiftNames.topLevelTypeName(name), in: &topLevelNames)
                        declaredTargets[document.url.path + "#" + pointer] = swiftName
                        declaredTargets[key] = swiftName
                        declaredSchemas[swiftName] = (target, file)
                        pending.append((swiftName, target, file, "#" + targetPointer))
                        continue
                    }
                }
                register(SwiftNames.topLevelTypeName(name), schema: schema, file: document.url, pointer: pointer)
            }
        }
        for (file, pointer) in targets where file != document.url && declaredTargets[file.path + "#" + pointer] == nil {
            guard let name = Self.componentName(pointer),
                let schema = document.documents[file]?["components"]?["schemas"]?[name]
            else { continue }
            register(SwiftNames.topLevelTypeName(name), schema: schema, file: file, pointer: pointer)
        }
    }

    /// Schemas outside `components/schemas` that a `$ref` names and that need a type of their own (objects,
    /// enums, unions): declared once at the top level, named after the file or the last pointer token
    /// that is a name (not `schema`, `items`, a number, a media type).
    private mutating func registerReferenceTargets(_ targets: [(URL, String)]) {
        for (file, pointer) in targets
        where Self.componentName(pointer) == nil && declaredTargets[file.path + "#" + pointer] == nil {
            guard let target = document.documents[file].flatMap({ Loader.walk($0, pointer) }),
                target["$ref"] == nil || refWithSiblings(target, file: file),
                needsDeclaration(target, file: file)
            else { continue }
            let structural: Set<String> = [
                "schema", "schemas", "items", "properties", "additionalProperties", "allOf", "anyOf", "oneOf",
                "content", "responses", "requestBody", "parameters", "components", "paths", "$defs", "definitions",
            ]
            let token =
                JSONPointer.tokens(pointer)?.last { Int($0) == nil && !structural.contains($0) && !$0.contains("/") }
                ?? ""
            let base = token.isEmpty ? file.deletingPathExtension().lastPathComponent : token
            register(SwiftNames.topLevelTypeName(base), schema: target, file: file, pointer: pointer)
        }
    }

    private mutating func register(_ name: String, schema: JSONValue, file: URL, pointer: String) {
        let swiftName = SwiftNames.unique(name, in: &topLevelNames)
        declaredTargets[file.path + "#" + pointer] = swiftName
        declaredSchemas[swiftName] = (schema, file)
        pending.append((swiftName, schema, file, "#" + pointer))
    }

    /// Inline JSON bodies of operations with an `operationId` that need a declaration:
    /// `getChanges` → `GetChangesResponse`, `applyMutations` → `ApplyMutationsRequest`.
    private mutating func registerOperationBodies(_ operations: [OpenAPIDocument.Operation]) {
        for operation in operations {
            guard let operationID = operation.operationID else { continue }
            let base = SwiftNames.topLevelTypeName(operationID)
            var bodies: [(String, OpenAPIDocument.SchemaSource)] = []
            if let schema = operation.requestBody?.content.first(where: { Self.isJSON($0.name) })?.schema {
                bodies.append(("Request", schema))
            }
            let responses = operation.responses.filter(\.isSuccess).compactMap { response in
                response.content.first(where: { Self.isJSON($0.name) })?.schema.map { (response.status, $0) }
            }
            var first = true
            for (status, schema) in responses {
                bodies.append(("Response" + (first ? "" : status), schema))
                first = false
            }
            for (suffix, schema) in bodies {
                let key = schema.file.path + schema.location
                var reportable = false
                if case .unsupported = form(schema.value) { reportable = schema.value["$ref"] == nil }
                guard declaredTargets[key] == nil,
                    schema.value["$ref"] == nil || refWithSiblings(schema.value, file: schema.file),
                    needsDeclaration(schema.value, file: schema.file) || Self.isArray(schema.value) || reportable
                else { continue }
                // A shared `components/responses/Paged` is named after itself, not the first operation using it.
                var name = base + suffix
                if let tokens = JSONPointer.tokens(String(schema.location.dropFirst())), tokens.count > 2,
                    tokens[0] == "components",
                    ["responses", "requestBodies"].contains(tokens[1])
                {
                    let kind = tokens[1] == "responses" ? "Response" : "Request"
                    let component = SwiftNames.topLevelTypeName(tokens[2])
                    name = component.hasSuffix(kind) ? component : component + kind
                }
                let swiftName = SwiftNames.unique(name, in: &topLevelNames)
                declaredTargets[key] = swiftName
                declaredSchemas[swiftName] = (schema.value, schema.file)
                pending.append((swiftName, schema.value, schema.file, schema.location))
            }
        }
    }

    static func isJSON(_ mediaType: String) -> Bool {
        let essence = mediaType.split(separator: ";")[0].trimmingCharacters(in: .whitespaces).lowercased()
        return essence == "application/json" || essence.hasSuffix("+json")
    }

    static func isArray(_ schema: JSONValue) -> Bool {
        if case .array(let types) = schema["type"] ?? .null { return types.contains("array") }
        return schema["type"] == "array"
    }

    /// Whether a schema declares a type of its own (scalars, arrays and plain `$ref`s do not).
    func needsDeclaration(_ schema: JSONValue, file: URL) -> Bool {
        guard schema["$ref"] == nil || refWithSiblings(schema, file: file) else { return false }
        switch form(schema) {
        case .object, .union, .kindUnion, .closedEnum, .extensibleEnum: return true
        default: return false
        }
    }

    // MARK: - Declarations

    private mutating func declareTopLevel(
        _ name: String, schema original: JSONValue, file: URL, pointer originalPointer: String
    ) {
        let documentation = Self.documentation(original)
        // `X: {allOf: [{type: object, ...}]}`: the inline schema inside a wrapper is X itself.
        let (schema, wrapperPath) = unwrapped(original)
        let pointer = originalPointer + wrapperPath
        let discriminated = [original, schema].contains {
            $0["discriminator"] != nil && $0["oneOf"] == nil && $0["anyOf"] == nil
        }
        if discriminated, directlyUsed.contains(file.path + (originalPointer.isEmpty ? "#" : originalPointer)) {
            diagnoseInheritance(file, originalPointer)
            return
        }
        let source = (displayName(file), pointer)
        if let (values, at) = referencedOpenEnum(schema, file: file) {
            if let cases = enumCases(values, file: file, pointer: pointer + at, extensible: true) {
                declarations.append(
                    TypePlan(
                        path: [name], kind: .extensibleEnum(cases), documentation: documentation, file: source.0,
                        location: pointer))
            }
            return
        }
        if schema["$ref"] == nil || refWithSiblings(schema, file: file) {
            switch form(schema) {
            case .object:
                if let plan = structure([name], schema: schema, file: file, pointer: pointer) {
                    declarations.append(plan)
                }
                return
            case .closedEnum(let values, let at):
                if let cases = enumCases(values, file: file, pointer: pointer + at) {
                    declarations.append(
                        TypePlan(
                            path: [name], kind: .closedEnum(cases), documentation: documentation, file: source.0,
                            location: pointer))
                }
                return
            case .extensibleEnum(let values, let at):
                if let cases = enumCases(values, file: file, pointer: pointer + at, extensible: true) {
                    declarations.append(
                        TypePlan(
                            path: [name], kind: .extensibleEnum(cases), documentation: documentation, file: source.0,
                            location: pointer))
                }
                return
            case .union:
                if let plan = union([name], schema: schema, file: file, pointer: pointer) { declarations.append(plan) }
                return
            case .kindUnion(let keyword):
                if var plan = kindUnion([name], schema: schema, keyword: keyword, file: file, pointer: pointer) {
                    plan.documentation = documentation
                    declarations.append(plan)
                }
                return
            default:
                break
            }
        }
        // Arrays, dictionaries, scalars and references: a typealias; types its elements need are declared
        // beside it at the top level (a typealias cannot contain them).
        var scope = Scope(path: [], prefix: name)
        guard
            let (type, _) = use(schema, file: file, pointer: pointer, suggested: "", scope: &scope, isDeclaration: true)
        else { return }
        declarations.append(
            TypePlan(path: [name], kind: .alias(type), documentation: documentation, file: source.0, location: pointer))
        declarations.append(contentsOf: scope.nested)
    }

    /// Where nested declarations go: inside a type (`path` non-empty), or hoisted to the top level with a
    /// name prefix (beside a typealias).
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
        let enclosing = scope.path
        let reserved = self.reserved
        func clashes(_ name: String) -> Bool { reserved.contains(name) || enclosing.contains(name) }
        let base = clashes(suggested) ? suggested + "Value" : suggested
        var candidate = base
        var counter = 2
        while clashes(candidate) || scope.taken.contains(candidate) {
            candidate = base + String(counter)
            counter += 1
        }
        scope.taken.insert(candidate)
        return scope.path + [candidate]
    }

    private mutating func structure(_ path: [String], schema: JSONValue, file: URL, pointer: String) -> TypePlan? {
        building[file.path + pointer] = path
        defer { building[file.path + pointer] = nil }
        var members: [Member] = []
        var required: Set<String> = []
        var visiting: Set<String> = []
        gatherOrigin = (file, pointer)
        gathered = []
        guard gather(schema, file: file, pointer: pointer, into: &members, required: &required, visiting: &visiting)
        else { return nil }
        // A required member without a schema in `properties` may hold any value: a `JSONValue`, still required.
        for name in required.sorted() where !members.contains(where: { $0.name == name }) {
            members.append(Member(name: name, schema: [:], file: file, pointer: pointer + "/required"))
        }
        var scope = Scope(path: path, prefix: "")
        var memberNames: Set<String> = []
        var properties: [PropertyPlan] = []
        var failed = false
        for member in members {
            let key = member.file.path + member.pointer
            let type: TypeUse
            let nullable: Bool
            if let known = memberTypes[key], known.schema == member.schema {
                (type, nullable) = (known.type, known.nullable)
            } else {
                guard
                    let (memberType, memberNullable) = use(
                        member.schema, file: member.file, pointer: member.pointer,
                        suggested: SwiftNames.typeName(member.name), scope: &scope)
                else {
                    failed = true
                    continue
                }
                (type, nullable) = (memberType, memberNullable)
                // The struct's own member (not one gathered from a part): others may share its type.
                if path.count == 1, member.file == file, member.pointer.hasPrefix(pointer + "/") {
                    memberTypes[key] = (member.schema, type, nullable)
                }
            }
            // `required` with readOnly (or writeOnly) holds for responses (or requests) only, and one
            // model serves both directions: such a member may be missing.
            let oneWay = isOneWay(member.schema, file: member.file)
            properties.append(
                PropertyPlan(
                    wireName: member.name,
                    swiftName: SwiftNames.unique(SwiftNames.memberName(member.name), in: &memberNames),
                    type: type, required: required.contains(member.name) && !oneWay, nullable: nullable,
                    documentation: Self.documentation(member.schema),
                    marker: type == .builtin(.bool) ? booleanMarker(member.schema, file: member.file) : nil))
        }
        guard !failed else { return nil }
        return TypePlan(
            path: path, kind: .structure(properties), documentation: Self.documentation(schema), nested: scope.nested,
            file: displayName(file), location: pointer)
    }

    /// A property gathered from an object schema and its `allOf` parts.
    struct Member {
        var name: String
        var schema: JSONValue
        var file: URL
        var pointer: String
    }

    /// Collects the properties of `value` and of every `allOf` part (following `$ref`s), in order.
    private mutating func gather(
        _ value: JSONValue, file: URL, pointer: String, into members: inout [Member],
        required: inout Set<String>, visiting: inout Set<String>
    ) -> Bool {
        guard visiting.count < 256 else {
            let origin = gatherOrigin ?? (file, pointer)
            diagnose(origin.file, origin.pointer, "an allOf chain more than 256 levels deep is not supported yet")
            return false
        }
        var succeeded = true
        if value["$ref"] != nil {
            guard let (target, targetFile, location) = resolved(value, file: file, pointer: pointer) else {
                return false
            }
            if !Self.isNeutral(target), !isObjectSchema(target, file: targetFile) {
                if case .dictionary = form(target) {
                } else {
                    // Reported at the part that brings it in: the target may be used correctly elsewhere.
                    diagnose(
                        file, pointer,
                        "allOf that combines an object with something that is not an object is not supported yet")
                    return false
                }
            }
            let part = targetFile.path + location
            guard visiting.insert(part).inserted else {
                diagnose(targetFile, location, "an allOf that includes itself (a cycle) is not supported")
                return false
            }
            if gathered.insert(part).inserted {
                succeeded = gather(
                    target, file: targetFile, pointer: location, into: &members, required: &required,
                    visiting: &visiting)
            }
            visiting.remove(part)
            // In 3.1 the keywords beside a $ref apply too (`required: [title]` next to `$ref: Base`).
            guard refWithSiblings(value, file: file) else { return succeeded }
        } else if !Self.isNeutral(value), !isObjectSchema(value, file: file) {
            // Every part of an object must be an object (or only annotate): `allOf: [{type: string}, {$ref: Base}]`
            // has no Swift type. (A map part is reported below: its extra members would be dropped.)
            if case .dictionary = form(value) {
            } else {
                diagnose(
                    file, pointer,
                    "allOf that combines an object with something that is not an object is not supported yet")
                return false
            }
        }
        for keyword in ["oneOf", "anyOf"] {
            guard case .array(let alternatives) = value[keyword] ?? .null, !isOpenEnum(value) else { continue }
            // Alternatives that only require members ("at least one of") constrain values, not their shape.
            if alternatives.allSatisfy({ Self.onlyRequires($0) }) { continue }
            diagnose(
                file, pointer + "/" + keyword,
                "\(keyword) combined with properties or inside allOf is not supported yet")
            return false
        }
        if case .array(let names) = value["required"] ?? .null {
            required.formUnion(names.compactMap(\.stringValue))
        }
        if case .object(let extra) = value["additionalProperties"] ?? .null, !extra.isEmpty {
            diagnose(
                file, pointer + "/additionalProperties",
                "an additionalProperties schema on an object with declared members is not supported yet (the extra members would be dropped)"
            )
            succeeded = false
        }
        if case .object(let properties) = value["properties"] ?? .null {
            for (name, property) in properties {
                let propertyPointer = pointer + "/properties/" + JSONPointer.escape(name)
                if let index = members.firstIndex(where: { $0.name == name }) {
                    let existing = members[index]
                    if Self.withoutAnnotations(existing.schema) == Self.withoutAnnotations(property)
                        || Self.narrows(existing.schema, property)
                    {
                        continue  // the same member (or the first is already the narrower one)
                    }
                    if Self.narrows(property, existing.schema) {
                        members[index] = Member(name: name, schema: property, file: file, pointer: propertyPointer)
                        continue
                    }
                    // Only annotations or constraints (`{description: ...}`, `{readOnly: true}`): the same member, annotated.
                    if Self.isNeutral(property), case .object(var merged) = existing.schema,
                        case .object(let added) = property
                    {
                        for (key, value) in added where merged[key] == nil { merged[key] = value }
                        members[index].schema = .object(merged)
                        continue
                    }
                    // Both definitions hold (`allOf`): one that only adds validation (`pattern`, `enum`,
                    // `minProperties`, `required` of a nested object, ...) gives one schema for both. A `$ref`
                    // inside is read relative to its file: two files' definitions combine only without one.
                    guard
                        existing.file == file
                            || !(Self.containsReference(existing.schema) || Self.containsReference(property))
                    else {
                        diagnose(
                            file, propertyPointer,
                            "property \(name) defined differently in two allOf parts (first at \(existing.pointer)) is not supported yet"
                        )
                        succeeded = false
                        continue
                    }
                    do {
                        let combined = try Self.combined(
                            existing.schema, property, openAPI30: document.isOpenAPI30)
                        // Only checks the models do not make (`pattern`, `minProperties`, ...) added: the first
                        // definition's type, and a part's nested type (`ErrorModel.MinimumVersions`), fit every
                        // value both allow. Otherwise the member has the combined schema.
                        if Self.typeShape(combined) != Self.typeShape(existing.schema) {
                            members[index] = Member(
                                name: name, schema: combined, file: file, pointer: propertyPointer)
                        }
                    } catch {
                        diagnose(file, propertyPointer, error.message(property: name, first: existing.pointer))
                        succeeded = false
                    }
                    continue
                }
                members.append(Member(name: name, schema: property, file: file, pointer: propertyPointer))
            }
        }
        if case .array(let parts) = value["allOf"] ?? .null {
            for (index, part) in parts.enumerated() {
                succeeded =
                    gather(
                        part, file: file, pointer: pointer + "/allOf/\(index)", into: &members,
                        required: &required, visiting: &visiting) && succeeded
            }
        }
        return succeeded
    }

    static func onlyRequires(_ schema: JSONValue) -> Bool {
        guard case .object(let object) = schema else { return false }
        return !object.isEmpty && object.allSatisfy { ["required", "description", "title"].contains($0.key) }
    }

    private mutating func union(_ path: [String], schema: JSONValue, file: URL, pointer: String) -> TypePlan? {
        guard let property = schema["discriminator"]?["propertyName"]?.stringValue else {
            diagnose(file, pointer + "/discriminator", "a discriminator needs a propertyName")
            return nil
        }
        let keyword = schema["oneOf"] != nil ? "oneOf" : "anyOf"
        guard case .array(let alternatives) = schema[keyword] ?? .null else { return nil }
        // Mapping values are references or bare schema names; both name a schema.
        var mapping: [(value: String, key: String)] = []
        if case .object(let entries) = schema["discriminator"]?["mapping"] ?? .null {
            for (value, target) in entries {
                guard let reference = target.stringValue else { continue }
                mapping.append((value, canonicalKey(SchemaReading.mappingReference(reference), from: file)))
            }
        }
        // An explicit mapping wins over a variant's implicit name.
        let claimed = Set(mapping.map(\.value))
        var variants: [VariantPlan] = []
        var variantKeys: Set<String> = []
        var caseNames: Set<String> = []
        var failed = false
        for (index, alternative) in alternatives.enumerated() where !SchemaReading.isNullOnly(alternative) {
            let location = pointer + "/\(keyword)/\(index)"
            guard case .string(let reference) = alternative["$ref"] ?? .null else {
                diagnose(
                    file, location,
                    "a discriminated \(keyword) variant must be a $ref to a schema (inline variants are not supported yet)"
                )
                failed = true
                continue
            }
            guard case .object(let keywords) = alternative,
                keywords.allSatisfy({ $0.key == "$ref" || Self.neutralKeywords.contains($0.key) })
            else {
                diagnose(
                    file, location,
                    "keywords beside a variant's $ref are not supported yet (make the variant a schema of its own)")
                failed = true
                continue
            }
            let (targetFile, targetPointer) = Loader.split(reference, relativeTo: file)
            let key = targetFile.path + "#" + targetPointer
            // Mapping values and variants are compared where their references end (`Dog` may be `{$ref: './Dog.yaml'}`).
            let canonical = canonicalKey(reference, from: file)
            guard variantKeys.insert(canonical).inserted else { continue }  // listed twice: one case
            guard let typeName = declaredTargets[key],
                let target = document.documents[targetFile].flatMap({ Loader.walk($0, targetPointer) })
            else {
                diagnose(file, location, "a discriminated \(keyword) variant must be a $ref to a component schema")
                failed = true
                continue
            }
            let rawName = Self.componentName(targetPointer) ?? typeName
            var members: [Member] = []
            var required: Set<String> = []
            var visiting: Set<String> = []
            gathered = []
            guard isObjectSchema(target, file: targetFile) else {
                diagnose(file, location, "variant \(rawName) is not an object schema")
                failed = true
                continue
            }
            guard
                gather(
                    target, file: targetFile, pointer: "#" + targetPointer, into: &members, required: &required,
                    visiting: &visiting)
            else {
                failed = true  // what is wrong with the variant was reported where it is
                continue
            }
            if !members.contains(where: { $0.name == property }) || !required.contains(property) {
                diagnose(
                    targetFile, "#" + targetPointer,
                    "variant \(rawName) must declare the discriminator property \(property) as required")
                failed = true
                continue
            }
            let explicit = mapping.filter { $0.key == canonical }.map(\.value)
            // The implicit value is a component schema's name; anything else has no name on the wire.
            guard !explicit.isEmpty || Self.componentName(targetPointer) != nil else {
                diagnose(
                    file, location,
                    "variant \(reference) is not a component schema: give it a value in discriminator.mapping")
                failed = true
                continue
            }
            let values = explicit.isEmpty ? (claimed.contains(rawName) ? [] : [rawName]) : explicit
            guard !values.isEmpty else {
                diagnose(
                    file, pointer + "/discriminator/mapping",
                    "variant \(rawName) cannot be selected: its name is mapped to another variant")
                failed = true
                continue
            }
            if let taken = values.first(where: { value in variants.contains { $0.values.contains(value) } }) {
                diagnose(
                    file, location,
                    "two variants answer to the discriminator value \(taken.debugDescription): give them distinct values in discriminator.mapping"
                )
                failed = true
                continue
            }
            variants.append(
                VariantPlan(
                    swiftName: SwiftNames.unique(SwiftNames.memberName(rawName), in: &caseNames), values: values,
                    type: .declared([typeName])))
        }
        for entry in mapping where !variantKeys.contains(entry.key) {
            diagnose(
                file, pointer + "/discriminator/mapping",
                "mapping value \(entry.value) names a schema that is not one of the \(keyword) variants")
            failed = true
        }
        guard !failed else { return nil }
        guard !variants.isEmpty else {
            diagnose(file, pointer, "a discriminated \(keyword) without variants")
            return nil
        }
        return TypePlan(
            path: path, kind: .union(discriminator: property, variants: variants),
            documentation: Self.documentation(schema),
            file: displayName(file), location: pointer)
    }

    /// A union without a discriminator, told apart by the JSON kind of the value: one case per variant, at
    /// most one variant per kind, except objects, which may be several when each requires a member no other
    /// requires (the value then selects the first variant whose distinguishing members are all present). Null alternatives make
    /// the union nullable instead of being a case. Two variants that are both numbers (`integer` and `number`
    /// are one JSON kind), both strings, or objects that cannot be told apart are refused, with the place.
    mutating func kindUnion(_ path: [String], schema: JSONValue, keyword: String, file: URL, pointer: String)
        -> TypePlan?
    {
        guard case .array(let alternatives) = schema[keyword] ?? .null else { return nil }
        var scope = Scope(path: path, prefix: "")
        var found: [(index: Int, kind: JSONKind, required: Set<String>)] = []
        var failed = false
        for (index, alternative) in alternatives.enumerated() where !SchemaReading.isNullOnly(alternative) {
            guard let kind = jsonKind(alternative, file: file) else {
                diagnose(
                    file, pointer + "/\(keyword)/\(index)",
                    "\(keyword) without a discriminator is supported when each variant has one JSON kind; this variant "
                        + "allows several (or any): give it a type, or add a discriminator")
                failed = true
                continue
            }
            found.append((index, kind, kind == .object ? requiredMembers(alternative, file: file) : []))
        }
        guard !failed else { return nil }
        // The members that select an object variant: required by it and by no other object variant (empty
        // when it is the only one).
        let objects = found.filter { $0.kind == .object }
        func selecting(_ index: Int) -> Set<String> {
            guard objects.count > 1, let entry = objects.first(where: { $0.index == index }) else { return [] }
            return entry.required.subtracting(
                objects.filter { $0.index != index }.reduce(into: Set<String>()) { $0.formUnion($1.required) })
        }
        for kind in JSONKind.allCases {
            let same = found.filter { $0.kind == kind }
            guard same.count > 1 else { continue }
            // Each object variant needs a required member no other variant requires (disjoint sets are the
            // simple case; `customer` vs `deleted_customer`, both requiring `id`, are told apart by `created`
            // and `deleted`).
            guard kind != .object || same.contains(where: { selecting($0.index).isEmpty }) else { continue }
            let what =
                kind == .object
                ? "objects whose required members do not tell them apart (each needs required members no other has)"
                : kind == .number ? "numbers (integer and number are one JSON kind)" : "\(kind.rawValue)s"
            diagnose(
                file, pointer + "/\(keyword)",
                "\(keyword) without a discriminator is supported when its variants are told apart by JSON kind; "
                    + "variants \(same.map { String($0.index) }.joined(separator: ", ")) are all \(what): add a discriminator"
            )
            failed = true
        }
        guard !failed else { return nil }
        // The expandable-field pattern (an id, or the object it names) reads as `.id(...)` / `.expanded(...)`.
        let expandable =
            found.count == 2 && Set(found.map(\.kind)) == [.string, .object]
            && alternatives[found.first { $0.kind == .object }!.index]["$ref"] != nil
        var names: Set<String> = []
        var variants: [KindVariantPlan] = []
        for entry in found {
            let alternative = alternatives[entry.index]
            var name: String
            switch entry.kind {
            case .string: name = expandable ? "id" : "string"
            case .number:
                let type = jsonKindScalar(alternative, file: file)
                name = type?.isInteger == true ? "integer" : "number"
            case .boolean: name = "bool"
            case .array: name = "array"
            case .null: name = "null"
            case .object:
                if expandable {
                    name = "expanded"
                } else if case .string(let reference) = alternative["$ref"] ?? .null,
                    let last = reference.split(separator: "/").last
                {
                    name = SwiftNames.memberName(String(last).replacingOccurrences(of: ".yaml", with: ""))
                } else {
                    name = "object"
                }
            }
            name = SwiftNames.unique(name, in: &names)
            guard
                let (type, _) = use(
                    alternative, file: file, pointer: pointer + "/\(keyword)/\(entry.index)",
                    suggested: SwiftNames.typeName(name), scope: &scope)
            else {
                failed = true
                continue
            }
            variants.append(
                KindVariantPlan(
                    swiftName: name, kind: entry.kind, type: type, required: selecting(entry.index).sorted()))
        }
        guard !failed, !variants.isEmpty else { return nil }
        return TypePlan(
            path: path, kind: .kindUnion(variants), documentation: [], nested: scope.nested, file: displayName(file),
            location: pointer)
    }

    /// The scalar type of a number variant (to name it `integer` or `number`).
    private func jsonKindScalar(_ schema: JSONValue, file: URL, depth: Int = 0) -> Builtin? {
        guard depth < 32 else { return nil }
        if schema["$ref"] != nil {
            guard let target = try? document.resolve(schema, in: file) else { return nil }
            return jsonKindScalar(target.value, file: target.file, depth: depth + 1)
        }
        switch form(schema) {
        case .scalar(let builtin): return builtin
        case .wrapped(let inner, _): return jsonKindScalar(inner, file: file, depth: depth + 1)
        default: return nil
        }
    }

    /// The inline schema inside wrappers (`{allOf: [X], description: ...}`, `{oneOf: [X, {type: null}]}`) and its
    /// pointer relative to the outermost (`/allOf/0`).
    func unwrapped(_ schema: JSONValue) -> (schema: JSONValue, path: String) {
        var schema = schema
        var path = ""
        while schema["$ref"] == nil, case .wrapped(let inner, let keyword) = form(schema), inner["$ref"] == nil {
            schema = inner
            path += "/" + keyword
        }
        return (schema, path)
    }

    /// `file#pointer` of the schema a reference finally names, through references that are only names
    /// (not a 3.1 `$ref` with members beside it, which is a schema of its own).
    private func canonicalKey(_ reference: String, from file: URL) -> String {
        var (targetFile, pointer) = Loader.split(reference, relativeTo: file)
        var seen: Set<String> = []
        while seen.insert(targetFile.path + "#" + pointer).inserted,
            let value = document.documents[targetFile].flatMap({ Loader.walk($0, pointer) }),
            case .string(let next) = value["$ref"] ?? .null, !refWithSiblings(value, file: targetFile)
        {
            (targetFile, pointer) = Loader.split(next, relativeTo: targetFile)
        }
        return targetFile.path + "#" + pointer
    }

    private mutating func enumCases(_ values: [JSONValue], file: URL, pointer: String, extensible: Bool = false)
        -> [EnumCasePlan]?
    {
        var cases: [EnumCasePlan] = []
        var names: Set<String> = []
        // By bytes, as closed enums match at run time: `café` in NFC and in NFD are two values, two cases.
        var raws: Set<[UInt8]> = []
        // Strings, or integers (`ClosedIntegerEnum`, cases `value1`, `valueMinus1`); not a mix, not fractions.
        func isInteger(_ value: JSONValue) -> Bool {
            if case .number(let number) = value {
                number.int64 != nil && Int64(Int.min) <= number.int64!
            } else {
                false
            }
        }
        let present = values.filter { $0 != .null }
        let integers = present.allSatisfy(isInteger)
        // The value that breaks the enum's kind, named (found in an outside audit: `[0, 2^63]` named the 0):
        // among numbers, the first that is no Int; among strings, the first that is not a string.
        if !integers, case .number? = present.first, let misfit = present.first(where: { !isInteger($0) }) {
            let reason =
                if case .number = misfit { "is not an integer a Swift Int can hold" } else { "is not an integer" }
            diagnose(
                file, pointer,
                "enum value \(misfit) \(reason): enum values must be all strings or all integers")
            return nil
        }
        for value in values where value != .null {
            if integers, case .number(let number) = value, let integer = number.int64 {
                let raw = String(integer)
                guard raws.insert(Array(raw.utf8)).inserted else { continue }
                let name = "value" + (integer < 0 ? "Minus" + String(integer.magnitude) : raw)
                cases.append(
                    EnumCasePlan(swiftName: SwiftNames.unique(name, in: &names), rawValue: raw, integer: true))
                continue
            }
            guard case .string(let raw) = value else {
                diagnose(
                    file, pointer,
                    "enum values that are neither all strings nor all integers (\(value)) are not supported yet")
                return nil
            }
            guard raws.insert(Array(raw.utf8)).inserted else { continue }
            cases.append(
                EnumCasePlan(swiftName: SwiftNames.unique(SwiftNames.caseName(raw), in: &names), rawValue: raw))
        }
        if extensible, cases.first?.integer == true {
            diagnose(file, pointer, "an extensible enum of integers is not supported yet (closed integer enums are)")
            return nil
        }
        guard !cases.isEmpty else {
            diagnose(
                file, pointer,
                values.isEmpty
                    ? "an enum without values is not supported yet"
                    : "a schema that only allows null is not supported yet")
            return nil
        }
        return cases
    }

    // MARK: - Uses

    /// The Swift type for the schema `value` and whether it may be null; types it needs are declared in
    /// `scope`, named after `suggested`. Nil after a diagnostic.
    /// `isDeclaration`: `value` is the schema a top-level typealias is being declared for (so its own name
    /// is not a use of it).
    private mutating func use(
        _ value: JSONValue, file: URL, pointer: String, suggested: String, scope: inout Scope,
        isDeclaration: Bool = false
    ) -> (TypeUse, Bool)? {
        if case .string(let reference) = value["$ref"] ?? .null, !refWithSiblings(value, file: file) {
            let (targetFile, targetPointer) = Loader.split(reference, relativeTo: file)
            let key = targetFile.path + "#" + targetPointer
            if let name = declaredTargets[key] {
                // `nullable: true` beside the $ref counts too (3.0 descriptions write it there).
                let nullable = isNullable(value, file: file)
                // What was declared under the name (for `Status: {$ref: './Status.yaml'}`, the file's enum).
                if let (schema, schemaFile) = declaredSchemas[name] {
                    let declared = unwrapped(schema).schema
                    if declared["$ref"] == nil, case .extensibleEnum = form(declared) {
                        return (.extensible([name]), nullable)
                    }
                    if referencedOpenEnum(declared, file: schemaFile) != nil { return (.extensible([name]), nullable) }
                }
                return (.declared([name]), nullable)
            }
            // Something without a declaration of its own (a scalar, an array, a chain of references): its
            // type, here. A cycle through such schemas cannot be written down.
            guard let (target, resolvedFile, location) = resolved(value, file: file, pointer: pointer) else {
                return nil
            }
            let targetKey = resolvedFile.path + location
            guard expanding.insert(targetKey).inserted else {
                diagnose(
                    resolvedFile, location,
                    "a schema that contains itself through a $ref outside components/schemas is not supported yet (make it a component schema)"
                )
                return nil
            }
            defer { expanding.remove(targetKey) }
            return use(target, file: resolvedFile, pointer: location, suggested: suggested, scope: &scope)
        }
        let nullable = isNullable(value, file: file)
        // A schema that a $ref elsewhere names has a top-level type: here too, so the two are one type.
        if !isDeclaration, let name = declaredTargets[file.path + pointer] {
            if case .extensibleEnum = form(value) { return (.extensible([name]), nullable) }
            return (.declared([name]), nullable)
        }
        if value["discriminator"] != nil, value["oneOf"] == nil, value["anyOf"] == nil {
            diagnoseInheritance(file, pointer)
            return nil
        }
        if let (values, at) = referencedOpenEnum(value, file: file) {
            guard let cases = enumCases(values, file: file, pointer: pointer + at, extensible: true) else { return nil }
            let path = nestedPath(suggested, in: &scope)
            scope.nested.append(
                TypePlan(
                    path: path, kind: .extensibleEnum(cases), documentation: [], file: displayName(file),
                    location: pointer))
            return (.extensible(path), nullable)
        }
        switch form(value) {
        case .extensibleEnum(let values, let at):
            guard let cases = enumCases(values, file: file, pointer: pointer + at, extensible: true) else { return nil }
            let path = nestedPath(suggested, in: &scope)
            scope.nested.append(
                TypePlan(
                    path: path, kind: .extensibleEnum(cases), documentation: [], file: displayName(file),
                    location: pointer))
            return (.extensible(path), nullable)
        case .closedEnum(let values, let at):
            guard let cases = enumCases(values, file: file, pointer: pointer + at) else { return nil }
            let path = nestedPath(suggested, in: &scope)
            scope.nested.append(
                TypePlan(
                    path: path, kind: .closedEnum(cases), documentation: [], file: displayName(file), location: pointer)
            )
            return (.declared(path), nullable)
        case .union:
            let path = nestedPath(suggested, in: &scope)
            guard var plan = union(path, schema: value, file: file, pointer: pointer) else { return nil }
            plan.documentation = []
            scope.nested.append(plan)
            return (.declared(path), nullable)
        case .kindUnion(let keyword):
            let path = nestedPath(suggested, in: &scope)
            guard let plan = kindUnion(path, schema: value, keyword: keyword, file: file, pointer: pointer) else {
                return nil
            }
            scope.nested.append(plan)
            return (.declared(path), nullable)
        case .object:
            // The struct of this very schema is being built further out (recursion through an allOf merge):
            // the same type. By value, the cycle check reports it; through an array or a map it is fine.
            if let path = building[file.path + pointer] { return (.declared(path), nullable) }
            let path = nestedPath(suggested, in: &scope)
            guard var plan = structure(path, schema: value, file: file, pointer: pointer) else { return nil }
            plan.documentation = []
            scope.nested.append(plan)
            return (.declared(path), nullable)
        case .wrapped(let inner, let keyword):
            guard
                let (type, innerNullable) = use(
                    inner, file: file, pointer: pointer + "/" + keyword, suggested: suggested, scope: &scope)
            else { return nil }
            return (type, nullable || innerNullable)
        case .dictionary(let values):
            guard let values else { return (.dictionary(.builtin(.json)), nullable) }
            guard
                let (type, valueNullable) = use(
                    values, file: file, pointer: pointer + "/additionalProperties", suggested: suggested + "Value",
                    scope: &scope)
            else { return nil }
            return (.dictionary(valueNullable ? .optional(type) : type), nullable)
        case .array(let items):
            guard let items else { return (.array(.builtin(.json)), nullable) }
            guard
                let (type, itemNullable) = use(
                    items, file: file, pointer: pointer + "/items", suggested: suggested + "Item", scope: &scope)
            else { return nil }
            return (.array(itemNullable ? .optional(type) : type), nullable)
        case .scalar(let builtin):
            return (.builtin(builtin), nullable)
        case .unsupported(let message, let at):
            diagnose(file, pointer + at, message)
            return nil
        }
    }

    // MARK: - Diagnostics

    private mutating func resolved(_ value: JSONValue, file: URL, pointer: String) -> (JSONValue, URL, String)? {
        do {
            let target = try document.resolve(value, in: file)
            return (target.value, target.file, target.location.isEmpty ? pointer : target.location)
        } catch {
            diagnose(file, pointer, error.message)
            return nil
        }
    }

    /// A base schema with a discriminator (the `allOf` inheritance style) used as a value: a subtype received
    /// there would decode as the base and lose its own members.
    private mutating func diagnoseInheritance(_ file: URL, _ pointer: String) {
        diagnose(
            file, pointer + "/discriminator",
            "a discriminator without oneOf, on a schema used as a value (not only as an allOf part), is not "
                + "supported yet: a subtype received there would lose its own members; where it is used, list the subtypes in oneOf with the discriminator"
        )
    }

    /// Reports every object under `value` with two member names that Swift's `String` takes for equal while
    /// their bytes differ.
    private mutating func findEquivalentNames(_ value: JSONValue, file: URL, pointer: String) {
        switch value {
        case .object(let object):
            var byText: [String: String] = [:]
            for (name, member) in object {
                if let earlier = byText[name], !earlier.utf8.elementsEqual(name.utf8) {
                    diagnose(
                        file, pointer,
                        "the member names \(earlier.debugDescription) and \(name.debugDescription) are the same text in different Unicode forms; generated Swift cannot keep them apart — write both alike"
                    )
                } else if byText[name] == nil {
                    byText[name] = name
                }
                findEquivalentNames(member, file: file, pointer: pointer + "/" + JSONPointer.escape(name))
            }
        case .array(let items):
            for (index, item) in items.enumerated() {
                findEquivalentNames(item, file: file, pointer: pointer + "/\(index)")
            }
        default: break
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

    /// A struct that contains itself by value (directly or through other structs, optionals included)
    /// cannot be declared, nor can a typealias that refers to itself (`typealias A = [A]`); arrays inside a
    /// struct and union enums (declared `indirect`) break a cycle.
    private mutating func checkCycles() {
        var all: [TypePlan] = []
        func collect(_ plan: TypePlan) {
            all.append(plan)
            plan.nested.forEach(collect)
        }
        declarations.forEach(collect)
        let byName = Dictionary(
            all.map { ($0.path.joined(separator: "."), $0) }, uniquingKeysWith: { first, _ in first })
        var valueEdges: [String: [String]] = [:]
        var aliasEdges: [String: [String]] = [:]
        for plan in all {
            let node = plan.path.joined(separator: ".")
            switch plan.kind {
            case .structure(let properties):
                valueEdges[node] = properties.compactMap {
                    if case .declared(let path) = $0.type { path.joined(separator: ".") } else { nil }
                }
            case .alias(let use):
                if case .declared(let path) = use { valueEdges[node] = [path.joined(separator: ".")] }
                aliasEdges[node] = Self.declaredPaths(in: use).filter {
                    if case .alias = byName[$0]?.kind { true } else { false }
                }
            default:
                break
            }
        }
        let order = all.map { $0.path.joined(separator: ".") }
        for cycle in TypeCycles.find(order: order, edges: aliasEdges) {
            let plan = byName[cycle[0]]!
            diagnostics.append(
                ContractGenerationDiagnostic(
                    file: plan.file, location: plan.location,
                    message:
                        "\(cycle.joined(separator: " → ")) → \(cycle[0]): a type alias that refers to itself is not supported yet"
                ))
        }
        for cycle in TypeCycles.find(order: order, edges: valueEdges) where !cycle.allSatisfy({ aliasEdges[$0] != nil })
        {
            let plan = byName[cycle[0]]!
            diagnostics.append(
                ContractGenerationDiagnostic(
                    file: plan.file, location: plan.location,
                    message:
                        "\(cycle.joined(separator: " → ")) → \(cycle[0]): a struct that contains itself by value is not supported yet (an array of it works)"
                ))
        }
    }

    static func declaredPaths(in use: TypeUse) -> [String] {
        switch use {
        case .declared(let path), .extensible(let path): [path.joined(separator: ".")]
        case .array(let inner), .dictionary(let inner), .optional(let inner): declaredPaths(in: inner)
        case .builtin: []
        }
    }
}
