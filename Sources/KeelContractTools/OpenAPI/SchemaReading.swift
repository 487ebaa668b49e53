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

    /// The open-enum pattern, `anyOf: [{type: string, enum: [...]}, {type: string}]` in either order: the known
    /// values and the index of the alternative that holds them. `resolve` reads the known alternative (follow
    /// a `$ref`, or refuse one); nil when it is not the pattern.
    static func openEnum(_ schema: JSONValue, resolve: (JSONValue) -> JSONValue?) -> (values: [JSONValue], known: Int)?
    {
        guard case .array(let alternatives) = schema["anyOf"] ?? .null, alternatives.count == 2 else { return nil }
        for (known, open) in [(0, 1), (1, 0)] {
            guard alternatives[open]["enum"] == nil, alternatives[open]["type"] == "string",
                alternatives[open]["$ref"] == nil,
                let enumSchema = resolve(alternatives[known]), case .array(let values) = enumSchema["enum"] ?? .null
            else { continue }
            return (values, known)
        }
        return nil
    }

    /// A discriminator mapping value as a reference: a bare schema name (`Cat`) names a component schema.
    static func mappingReference(_ value: String) -> String {
        value.contains("#") || value.contains("/") ? value : "#/components/schemas/" + value
    }
}
