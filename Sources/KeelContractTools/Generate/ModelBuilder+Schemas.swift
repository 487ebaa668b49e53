import Foundation
import KeelContract

/// How the generator reads a schema: what Swift type it becomes, whether it may be null.
extension ModelBuilder {
    enum Form {
        /// Values and where they are, relative to the schema (`/enum`, `/x-extensible-enum`, `/anyOf/0/enum`).
        case extensibleEnum([JSONValue], at: String)
        case closedEnum([JSONValue], at: String)
        case union
        /// `oneOf`/`anyOf` (the keyword) of several schemas without a discriminator: told apart by JSON kind
        /// when the builder can (``ModelBuilder/kindUnion(_:schema:keyword:file:pointer:)``).
        case kindUnion(String)
        /// `oneOf`/`anyOf` of one schema and null, or `allOf` of one schema: the inner schema.
        case wrapped(JSONValue, keyword: String)
        case object
        /// Free-form (nil) or with an `additionalProperties` schema.
        case dictionary(JSONValue?)
        case array(JSONValue?)
        case scalar(Builtin)
        case unsupported(String, at: String)
    }

    /// What kind of Swift type a schema becomes. A `$ref` reaches here only with 3.1 keywords beside it
    /// that shape an object (``refWithSiblings(_:file:)``).
    /// The first of `values` that the schema's declared `type` (`string` or `integer`, alone or with
    /// `null`) does not allow; nil when every value fits or the schema declares another type or none.
    static func enumValueOutsideType(_ schema: JSONValue, _ values: [JSONValue]) -> JSONValue? {
        let types: [String] =
            switch schema["type"] {
            case .string(let type)?: [type]
            case .array(let types)?: types.compactMap { if case .string(let type) = $0 { type } else { nil } }
            default: []
            }
        if types.contains("string") && !types.contains("integer") && !types.contains("number") {
            return values.first { if case .string = $0 { false } else { true } }
        }
        if types.contains("integer") && !types.contains("string") {
            return values.first {
                if case .number(let number) = $0 { number.int64 == nil && !number.isInteger } else { true }
            }
        }
        return nil
    }

    func form(_ schema: JSONValue) -> Form {
        if schema["$ref"] != nil { return .object }
        if case .array(let values) = schema["x-extensible-enum"] ?? .null {
            return .extensibleEnum(values, at: "/x-extensible-enum")
        }
        // `const` is a one-value enum: a marker member that must hold that value (`{const: account}`,
        // `{type: integer, const: 3}`), closed as an enum of one value is; a boolean is checked where it is a
        // member (``booleanMarker``). Other numbers, objects and arrays stay what their type says.
        if let constant = SchemaReading.constMarker(schema) {
            if case .bool = constant { return .scalar(.bool) }
            return .closedEnum([constant], at: "/const")
        }
        if case .array(let values) = schema["enum"] ?? .null {
            // Booleans: `Bool` (a one-value marker is checked where it is a member: ``booleanMarker``).
            let present = values.filter { $0 != .null }
            if !present.isEmpty, present.allSatisfy({ if case .bool = $0 { true } else { false } }) {
                return .scalar(.bool)
            }
            // The values must be of the declared type: `type: string` with `enum: [1.0, 2.0]` (quotes
            // forgotten in YAML) would otherwise become an Int enum that fails on every string the type allows.
            if let mismatch = Self.enumValueOutsideType(schema, present) {
                return .unsupported(
                    "enum value \(mismatch) is not of the declared type \(schema["type"].map { "\($0)" } ?? "")",
                    at: "/enum")
            }
            return schema["x-extensible-enum"] == .bool(true)
                ? .extensibleEnum(values, at: "/enum") : .closedEnum(values, at: "/enum")
        }
        // The open-enum pattern with its values inline (behind a `$ref`: ``referencedOpenEnum(_:file:)``).
        if let (values, known) = SchemaReading.openEnum(schema, resolve: { $0["$ref"] == nil ? $0 : nil }) {
            return .extensibleEnum(values, at: "/anyOf/\(known)/enum")
        }
        for keyword in ["oneOf", "anyOf"] {
            guard case .array(let alternatives) = schema[keyword] ?? .null else { continue }
            // Members beside a union would apply to every variant: not something one Swift type says yet.
            if (SchemaReading.memberKeywords + ["allOf"]).contains(where: { schema[$0] != nil }),
                !alternatives.allSatisfy(Self.onlyRequires)
            {
                return .unsupported(
                    "\(keyword) together with properties, required or allOf is not supported yet "
                        + "(move the shared members into each variant, or into an allOf part of each)",
                    at: "/\(keyword)")
            }
            if schema["discriminator"] != nil { return .union }
            let remaining = alternatives.enumerated().filter { !SchemaReading.isNullOnly($0.element) }
            if remaining.count == 1 {
                return .wrapped(remaining[0].element, keyword: "\(keyword)/\(remaining[0].offset)")
            }
            if schema["properties"] != nil, alternatives.allSatisfy(Self.onlyRequires) { break }
            return .kindUnion(keyword)
        }
        if case .array(let parts) = schema["allOf"] ?? .null {
            // Parts that only annotate or constrain (`{description: ...}`, `{nullable: true}`, `{minimum: 1}`) do
            // not shape the value: one other part is then a wrapper, unless the schema itself adds members.
            let shaping = parts.enumerated().filter { !Self.isNeutral($0.element) }
            let addsShape = SchemaReading.memberKeywords.contains { schema[$0] != nil }
            if shaping.count == 1, !addsShape {
                return .wrapped(shaping[0].element, keyword: "allOf/\(shaping[0].offset)")
            }
            return .object
        }
        var types = SchemaReading.types(schema)
        types.removeAll { $0 == "null" }
        if types.isEmpty, schema["type"] != nil {
            return .unsupported("a schema that only allows null is not supported yet", at: "/type")
        }
        if types.count > 1 {
            return .unsupported(
                "a value of several types (\(types.joined(separator: ", "))) is not supported yet", at: "/type")
        }
        // No type but properties: an object, as most descriptions mean it.
        let kind = types.first ?? (SchemaReading.memberKeywords.contains { schema[$0] != nil } ? "object" : nil)
        switch kind {
        case "object":
            if case .object(let properties) = schema["properties"] ?? .null, !properties.isEmpty { return .object }
            // A map: every member kept (`required` names then only constrain which keys appear).
            if case .object(let extra) = schema["additionalProperties"] ?? .null, !extra.isEmpty {
                return .dictionary(schema["additionalProperties"])
            }
            if schema["additionalProperties"] == .bool(false) || schema["required"] != nil { return .object }
            return .dictionary(nil)
        case "array":
            // Positions with their own schemas (`prefixItems`) have no single element type: any values.
            if schema["prefixItems"] != nil { return .array(nil) }
            return .array(schema["items"].flatMap { $0 == .bool(true) || $0 == [:] ? nil : $0 })
        case "string":
            return .scalar(schema["format"]?.stringValue == "date-time" ? .date : .string)
        case "integer":
            let sized = Builtin.integer(format: schema["format"]?.stringValue)
            // Without a size, the bounds may need more than `Int`: non-negative up to 2^64 - 1 is `UInt64`
            // (found in an outside audit: `Int` refused every value from 2^63 that the contract allows).
            if sized == .int, Self.needsUInt64(schema) { return .scalar(.uint64) }
            return .scalar(sized)
        case "number":
            return .scalar(.number(format: schema["format"]?.stringValue))
        case "boolean":
            return .scalar(.bool)
        case nil:
            return .scalar(.json)
        case let other?:
            return .unsupported("type \(other) is not a JSON Schema type", at: "/type")
        }
    }

    /// Keywords that annotate or only constrain a value: a schema of nothing else does not change its
    /// Swift type.
    static let neutralKeywords: Set<String> = [
        "description", "title", "nullable", "default", "example", "examples", "readOnly", "writeOnly", "deprecated",
        "externalDocs",
        "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minLength", "maxLength", "pattern",
        "minItems", "maxItems", "uniqueItems", "minProperties", "maxProperties", "$comment", "xml",
    ]

    static func isNeutral(_ schema: JSONValue) -> Bool {
        guard case .object(let object) = schema else { return schema == .bool(true) }
        return object.allSatisfy { neutralKeywords.contains($0.key) || $0.key.hasPrefix("x-") }
    }

    /// The open-enum pattern with the known values behind a reference, `anyOf: [{type: string}, {$ref: ModelIDs}]`
    /// in either order (a closed enum component made open at this use): its values and where they are.
    func referencedOpenEnum(_ schema: JSONValue, file: URL) -> ([JSONValue], at: String)? {
        let pattern = SchemaReading.openEnum(schema) {
            $0["$ref"] == nil ? nil : try? document.resolve($0, in: file).value
        }
        return pattern.map { ($0.values, "/anyOf/\($0.known)") }
    }

    /// A `$ref` to an object schema with keywords beside it that add to its shape (3.1 applies them;
    /// 3.0 ignores them, and so do non-objects, where `required` or `properties` constrain nothing).
    func refWithSiblings(_ schema: JSONValue, file: URL) -> Bool {
        guard !document.isOpenAPI30, schema["$ref"] != nil,
            (SchemaReading.memberKeywords + ["allOf"]).contains(where: { schema[$0] != nil }),
            let target = try? document.resolve(schema, in: file)
        else { return false }
        return isObjectSchema(target.value, file: target.file)
    }

    /// Whether `schema` is an object, directly or through references and wrappers.
    func isObjectSchema(_ schema: JSONValue, file: URL, depth: Int = 0) -> Bool {
        guard depth < 32 else { return false }
        if schema["$ref"] != nil {
            guard let target = try? document.resolve(schema, in: file) else { return false }
            return isObjectSchema(target.value, file: target.file, depth: depth + 1)
        }
        switch form(schema) {
        case .object: return true
        case .wrapped(let inner, _): return isObjectSchema(inner, file: file, depth: depth + 1)
        default: return false
        }
    }

    /// The JSON kind every value of `schema` has (null aside), through references and wrappers; nil when
    /// values of several kinds (or of any kind) are allowed.
    func jsonKind(_ schema: JSONValue, file: URL, depth: Int = 0) -> JSONKind? {
        guard depth < 32 else { return nil }
        if schema["$ref"] != nil {
            if refWithSiblings(schema, file: file) { return .object }
            guard let target = try? document.resolve(schema, in: file) else { return nil }
            return jsonKind(target.value, file: target.file, depth: depth + 1)
        }
        switch form(schema) {
        case .object, .dictionary: return .object
        case .array: return .array
        case .scalar(let builtin):
            switch builtin {
            case .string, .date: return .string
            case .int, .int8, .int16, .int32, .int64, .uint8, .uint16, .uint32, .uint64, .double, .float, .decimal:
                return .number
            case .bool: return .boolean
            case .json: return nil
            }
        case .closedEnum(let values, _), .extensibleEnum(let values, _):
            let kinds = Set(values.filter { $0 != .null }.map(JSONKind.init(of:)))
            return kinds.count == 1 ? kinds.first : nil
        case .wrapped(let inner, _): return jsonKind(inner, file: file, depth: depth + 1)
        case .union: return .object  // discriminated unions are of objects
        case .kindUnion, .unsupported: return nil
        }
    }

    /// The one value a boolean marker allows (`{type: boolean, enum: [true]}`, `{const: false}`), through
    /// references and wrappers; nil for a plain boolean or anything else.
    func booleanMarker(_ schema: JSONValue, file: URL, depth: Int = 0) -> Bool? {
        guard depth < 32 else { return nil }
        if schema["$ref"] != nil {
            guard let target = try? document.resolve(schema, in: file) else { return nil }
            return booleanMarker(target.value, file: target.file, depth: depth + 1)
        }
        if case .bool(let value)? = schema["const"] { return value }
        if case .array(let values) = schema["enum"] ?? .null {
            let present = values.filter { $0 != .null }
            if present.count == 1, case .bool(let value) = present[0] { return value }
            return nil
        }
        if case .wrapped(let inner, _) = form(schema) { return booleanMarker(inner, file: file, depth: depth + 1) }
        return nil
    }

    /// The members an object schema requires, through references and `allOf` parts.
    func requiredMembers(_ schema: JSONValue, file: URL, depth: Int = 0) -> Set<String> {
        guard depth < 32 else { return [] }
        var names: Set<String> = []
        if case .array(let list) = schema["required"] ?? .null { names.formUnion(list.compactMap(\.stringValue)) }
        if schema["$ref"] != nil, let target = try? document.resolve(schema, in: file) {
            names.formUnion(requiredMembers(target.value, file: target.file, depth: depth + 1))
        }
        if case .array(let parts) = schema["allOf"] ?? .null {
            for part in parts { names.formUnion(requiredMembers(part, file: file, depth: depth + 1)) }
        }
        return names
    }

    /// The open-enum pattern with its values inline: `anyOf: [{type: string, enum: [...]}, {type: string}]`.
    func isOpenEnum(_ schema: JSONValue) -> Bool {
        SchemaReading.openEnum(schema, resolve: { $0["$ref"] == nil ? $0 : nil }) != nil
    }

    /// Whether a value of the schema may be null: 3.1 `type: [..., "null"]`, 3.0 `nullable: true` (also
    /// beside a `$ref`, where 3.0 would ignore it: descriptions mean it), a null in `enum`, a null
    /// alternative of `oneOf`/`anyOf`; through `$ref`s and `allOf` wrappers.
    func isNullable(_ schema: JSONValue, file: URL, depth: Int = 0) -> Bool {
        guard depth < 32 else { return false }
        if SchemaReading.admitsNull(schema, openAPI30: document.isOpenAPI30) { return true }
        if case .string = schema["$ref"] ?? .null {
            guard let target = try? document.resolve(schema, in: file) else { return false }
            return isNullable(target.value, file: target.file, depth: depth + 1)
        }
        if case .wrapped(let inner, let keyword) = form(schema), keyword.hasPrefix("allOf") {
            if document.isOpenAPI30, case .array(let parts) = schema["allOf"] ?? .null,
                parts.contains(where: { $0["nullable"] == .bool(true) })
            {
                return true
            }
            return isNullable(inner, file: file, depth: depth + 1)
        }
        return false
    }

    /// Whether a member's schema is `readOnly` or `writeOnly` (its `required` then holds in one direction
    /// only), on the member, through `$ref`s, or on an `allOf` wrapper's parts.
    func isOneWay(_ schema: JSONValue, file: URL, depth: Int = 0) -> Bool {
        guard depth < 32 else { return false }
        if schema["readOnly"] == .bool(true) || schema["writeOnly"] == .bool(true) { return true }
        if case .string = schema["$ref"] ?? .null {
            guard let target = try? document.resolve(schema, in: file) else { return false }
            return isOneWay(target.value, file: target.file, depth: depth + 1)
        }
        if case .array(let parts) = schema["allOf"] ?? .null, case .wrapped = form(schema) {
            return parts.contains { isOneWay($0, file: file, depth: depth + 1) }
        }
        return false
    }

    /// `#/components/schemas/X` → `X` (only direct children of `components/schemas`).
    static func componentName(_ pointer: String) -> String? {
        guard let tokens = JSONPointer.tokens(pointer), tokens.count == 3, tokens[0] == "components",
            tokens[1] == "schemas"
        else { return nil }
        return tokens[2]
    }

    /// The schema's title and description as comment lines (never anything that could end the comment).
    static func documentation(_ schema: JSONValue) -> [String] {
        var lines: [String] = []
        for key in ["title", "description"] {
            guard let text = schema[key]?.stringValue else { continue }
            lines += SwiftNames.commentLines(text)
            while lines.last?.isEmpty == true { lines.removeLast() }
        }
        if schema["deprecated"] == .bool(true) { lines.append("Deprecated by the contract.") }
        return lines
    }

    /// Calls `body` with every `$ref` in a schema position of `schema` and its subschemas (not following
    /// the references), and with every reference in a discriminator mapping. Literal data (`example`,
    /// `default`, `enum`, extensions) is not searched: a `$ref` member there is data.
    /// `direct` is false where a schema is merged into another (a part of an `allOf` that adds members, a
    /// 3.1 `$ref` with members beside it when `siblingsMerge`) and for a mapping target; a part that is the
    /// whole value (`{allOf: [{$ref: Pet}], description: ...}`) is used as a value.
    static func forEachSchemaReference(
        in schema: JSONValue, direct: Bool = true, siblingsMerge: Bool = false,
        _ body: (_ reference: String, _ direct: Bool) -> Void
    ) {
        guard case .object(let object) = schema else { return }
        let addsShape = SchemaReading.memberKeywords.contains { object[$0] != nil }
        if case .string(let reference) = object["$ref"] ?? .null {
            body(reference, direct && !(siblingsMerge && (addsShape || object["allOf"] != nil)))
        }
        if case .object(let mapping) = object["discriminator"]?["mapping"] ?? .null {
            for (_, target) in mapping {
                if let reference = target.stringValue, reference.contains("#") || reference.contains("/") {
                    body(reference, false)
                }
            }
        }
        for (keyword, value) in object {
            switch keyword {
            case "properties", "patternProperties", "$defs", "definitions", "dependentSchemas":
                if case .object(let members) = value {
                    for (_, subschema) in members {
                        forEachSchemaReference(in: subschema, siblingsMerge: siblingsMerge, body)
                    }
                }
            case "allOf":
                if case .array(let subschemas) = value {
                    let wrapper = subschemas.filter { !isNeutral($0) }.count == 1 && !addsShape
                    for subschema in subschemas {
                        forEachSchemaReference(
                            in: subschema, direct: wrapper && direct, siblingsMerge: siblingsMerge, body)
                    }
                }
            case "anyOf", "oneOf", "prefixItems":
                if case .array(let subschemas) = value {
                    for subschema in subschemas {
                        forEachSchemaReference(in: subschema, siblingsMerge: siblingsMerge, body)
                    }
                }
            case "items":
                if case .array(let subschemas) = value {
                    for subschema in subschemas {
                        forEachSchemaReference(in: subschema, siblingsMerge: siblingsMerge, body)
                    }
                } else {
                    forEachSchemaReference(in: value, siblingsMerge: siblingsMerge, body)
                }
            case "additionalProperties", "additionalItems", "not", "if", "then", "else", "contains", "propertyNames",
                "unevaluatedItems", "unevaluatedProperties":
                forEachSchemaReference(in: value, siblingsMerge: siblingsMerge, body)
            default:
                break
            }
        }
    }

    /// `schema` without the keywords that only annotate (to compare two definitions of a member).
    static func withoutAnnotations(_ schema: JSONValue) -> JSONValue {
        guard case .object(let object) = schema else { return schema }
        let annotations: Set<String> = [
            "description", "title", "example", "examples", "deprecated", "externalDocs", "$comment",
        ]
        return .object(
            JSONObject(
                object.filter { !annotations.contains($0.key) && !$0.key.hasPrefix("x-") }.map { ($0.key, $0.value) }))
    }

    /// `{type: string}` (and annotations) narrowed to string values listed in `enum`: a subtype pinning
    /// its discriminator (`petType: {type: string, enum: [cat]}`).
    static func narrows(_ narrower: JSONValue, _ wider: JSONValue) -> Bool {
        func values(_ schema: JSONValue) -> [JSONValue]? {
            guard case .object(let object) = withoutAnnotations(schema),
                object.allSatisfy({ ["type", "enum", "const", "default"].contains($0.key) }),
                object["type"] == nil || object["type"] == "string"
            else { return nil }
            if case .array(let list) = object["enum"] ?? .null { return list }
            if let constant = object["const"] { return [constant] }
            return object["type"] == "string" ? [] : nil  // [] means any string
        }
        guard let narrow = values(narrower), !narrow.isEmpty, narrow.allSatisfy({ $0.stringValue != nil }),
            let wide = values(wider)
        else { return false }
        return wide.isEmpty || narrow.allSatisfy(wide.contains)
    }

    /// Whether an integer schema's bounds go beyond `Int64.max` while staying within 0…`UInt64.max`.
    static func needsUInt64(_ schema: JSONValue) -> Bool {
        func bound(_ name: String) -> JSONNumber? {
            if case .number(let number)? = schema[name] { return number }
            return nil
        }
        // The largest value allowed: `maximum`, or one below `exclusiveMaximum` (2^64 is then UInt64.max).
        let exclusive = bound("maximum") == nil
        guard let maximum = bound("maximum") ?? bound("exclusiveMaximum"),
            let int64Max = JSONNumber(literal: String(Int64.max)),
            let limit = JSONNumber(literal: exclusive ? "18446744073709551616" : String(UInt64.max)),
            maximum > int64Max, maximum <= limit
        else { return false }
        if let minimum = bound("minimum") { return minimum >= JSONNumber(Int64(0)) }
        if let minimum = bound("exclusiveMinimum") { return minimum >= JSONNumber(Int64(-1)) }
        return false
    }
}
