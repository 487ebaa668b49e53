import KeelContract

/// Readings of schema keywords that the diff and the generator must agree on.
enum SchemaReading {
    /// Keywords that add members to an object: beside a `$ref` or an `allOf` they shape the value.
    static let memberKeywords = ["properties", "required", "additionalProperties"]

    /// `type` as a list: `"string"` → `["string"]`, `[string, "null"]` → both; empty without `type`.
    static func types(_ schema: JSONValue) -> [String] {
        switch schema["type"] ?? .null {
        case .string(let type): [type]
        case .array(let list): list.compactMap(\.stringValue)
        default: []
        }
    }

    /// A schema that only allows `null`: `{type: null}`, `{type: [null]}`, `{enum: [null]}`, `{const: null}`.
    static func isNullOnly(_ schema: JSONValue) -> Bool {
        schema["type"] == "null" || schema["type"] == ["null"] || schema["enum"] == [.null] || schema["const"] == .null
    }

    /// Whether `schema` itself admits `null` — the one reading the generator (optional members), the diff
    /// ("became nullable") and `ContractSchema` validation share: OpenAPI 3.0 `nullable: true` means "this
    /// schema, or null" whatever else sits beside it (`type`, `enum`, `anyOf`/`oneOf`/`allOf`, `$ref`), as the
    /// 3.0 → 3.1 upgrade reads it; 3.1 `type: [..., "null"]`; a `null` in `enum`; a null-only alternative of
    /// `oneOf`/`anyOf`. `$ref` targets and `allOf` parts are the caller's to follow.
    static func admitsNull(_ schema: JSONValue, openAPI30: Bool) -> Bool {
        if openAPI30, schema["nullable"] == .bool(true) { return true }
        if types(schema).contains("null") { return true }
        if case .array(let values) = schema["enum"] ?? .null, values.contains(.null) { return true }
        for keyword in ["oneOf", "anyOf"] {
            if case .array(let alternatives) = schema[keyword] ?? .null, alternatives.contains(where: isNullOnly) {
                return true
            }
        }
        return false
    }

    /// The open-enum pattern, `anyOf: [{type: string, enum: [...]}, {type: string}]` in either order: the known
    /// values and the index of the alternative that holds them. `resolve` reads the known alternative (follow
    /// a `$ref`, or refuse one); nil when it is not the pattern.
    static func openEnum(_ schema: JSONValue, resolve: (JSONValue) -> JSONValue?) -> (values: [JSONValue], known: Int)?
    {
        guard case .array(let alternatives) = schema["anyOf"] ?? .null, alternatives.count == 2 else { return nil }
        for (known, open) in [(0, 1), (1, 0)] {
            guard alternatives[open]["enum"] == nil, alternatives[open]["type"] == "string",
                alternatives[open]["$ref"] == nil,
                let enumSchema = resolve(alternatives[known]), case .array(let values) = enumSchema["enum"] ?? .null,
                // Known values of strings: `anyOf: [{type: integer, enum: [1, 2]}, {type: string}]` is a union
                // of two kinds, not a string enum left open.
                isStringEnum(enumSchema, values)
            else { continue }
            return (values, known)
        }
        return nil
    }

    /// The value of a `const` marker — a member that must hold one value, an enum of one value — when the
    /// generated models check it: a string, an integer or a boolean, and only without an `enum` beside it.
    /// Other numbers, objects and arrays are models of their plain type; the generator and the diff read
    /// `const` alike through this.
    static func constMarker(_ schema: JSONValue) -> JSONValue? {
        guard schema["enum"] == nil, let constant = schema["const"] else { return nil }
        switch constant {
        case .string, .bool: return constant
        case .number(let number) where number.int64 != nil: return constant
        default: return nil
        }
    }

    /// Whether the known side of the open-enum pattern is a string enum: typed string (null allowed beside it,
    /// `type: [string, "null"]`), or untyped with string values.
    private static func isStringEnum(_ schema: JSONValue, _ values: [JSONValue]) -> Bool {
        let declared = types(schema).filter { $0 != "null" }
        if !declared.isEmpty { return declared == ["string"] }
        return values.allSatisfy { $0.stringValue != nil || $0 == .null }
    }

    /// A discriminator mapping value as a reference: a bare schema name (`Cat`) names a component schema.
    static func mappingReference(_ value: String) -> String {
        value.contains("#") || value.contains("/") ? value : "#/components/schemas/" + value
    }
}
