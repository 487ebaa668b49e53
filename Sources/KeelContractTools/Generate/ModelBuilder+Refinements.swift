import KeelContract

/// A member that two `allOf` parts both define: a value must satisfy both definitions, so where they agree on
/// the value's shape (its type, its members) and differ only in what they validate (`pattern`, `enum`,
/// `minProperties`, `required` of a nested object, ...) the member is one schema holding both.
extension ModelBuilder {
    /// Why two definitions of a member have no schema for both; `path` is where inside the member
    /// (`ios` for `minimumVersions.ios`, `[]` for array items).
    struct Conflict: Error {
        enum Reason {
            /// Different JSON types: no value (but perhaps null) is both.
            case types(String, String)
            /// Two formats (`date` and `date-time`).
            case formats(String, String)
            /// Two `enum`s (or `const`s, or nullability) that no value satisfies together.
            case noCommonValue
            /// Keywords that shape the value (`$ref`, `oneOf`, tuples, ...) in one definition only or differently.
            case shape(String)
        }
        var reason: Reason
        var path: [String] = []

        /// The sentence for `property name` as first defined at `first`.
        func message(property name: String, first: String) -> String {
            let member = ([name] + path).joined(separator: ".").replacingOccurrences(of: ".[]", with: "[]")
            switch reason {
            case .types(let one, let other):
                return "property \(member) is of type \(one) in one allOf part (first at \(first)) and of type "
                    + "\(other) in another: no value is both"
            case .formats(let one, let other):
                return "property \(member) has format \(one) in one allOf part (first at \(first)) and format "
                    + "\(other) in another, which is not supported"
            case .noCommonValue:
                return "property \(member) allows no value in both allOf parts (first at \(first)): their enum "
                    + "or const values have none in common"
            case .shape(let keyword):
                return "property \(name) defined differently in two allOf parts (first at \(first)) is not "
                    + "supported yet (\(keyword) in \(member) is not the same in both)"
            }
        }
    }

    /// Keywords that only describe: the first definition's is kept, the other's fills in (`readOnly`,
    /// `writeOnly`, `deprecated` and `uniqueItems` hold when either says so).
    static let describingKeywords: Set<String> = [
        "description", "title", "example", "examples", "default", "deprecated", "externalDocs", "$comment", "xml",
        "readOnly", "writeOnly", "contentMediaType", "contentEncoding",
    ]
    /// Bounds that combine to the tighter one: the larger lower bound, the smaller upper bound.
    static let lowerBoundKeywords: Set<String> = [
        "minimum", "exclusiveMinimum", "minLength", "minItems", "minProperties", "minContains",
    ]
    static let upperBoundKeywords: Set<String> = [
        "maximum", "exclusiveMaximum", "maxLength", "maxItems", "maxProperties", "maxContains",
    ]
    /// Constraints the generated models do not check and that do not change a Swift type: both hold, the
    /// first definition's is kept (the combined schema only decides the type).
    static let uncheckedKeywords: Set<String> = [
        "pattern", "multipleOf", "uniqueItems", "not", "contains", "propertyNames", "dependentRequired",
    ]

    /// One schema for two definitions of a member that both hold (`allOf`), or why there is none: the types
    /// must be the same (`null` stays allowed only when both allow it); formats the same or one side's;
    /// `enum`/`const` values are intersected (an extensible enum constrains nothing, so a closed one beside it
    /// wins; two extensible ones know the values of both); bounds take the tighter one; `required` adds up;
    /// `properties`, `items` and `additionalProperties` combine member by member, recursively. Anything that
    /// shapes a value otherwise (`$ref`, `oneOf`, `allOf`, ...) must be the same on both sides.
    static func combined(_ first: JSONValue, _ second: JSONValue, openAPI30: Bool) throws(Conflict) -> JSONValue {
        if first == .bool(true) || first == [:] { return second }
        if second == .bool(true) || second == [:] { return first }
        guard case .object(let one) = first, case .object(let other) = second else {
            throw Conflict(reason: .shape(first == .bool(false) || second == .bool(false) ? "false" : "a schema"))
        }
        var merged = JSONObject()
        var keys = one.keys
        keys += other.keys.filter { !one.contains(key: $0) }
        for key in keys {
            let (a, b) = (one[key], other[key])
            guard let a, let b else {
                // On one side only: a constraint, a description, or what the other side leaves open.
                guard
                    describingKeywords.contains(key) || lowerBoundKeywords.contains(key)
                        || upperBoundKeywords.contains(key) || uncheckedKeywords.contains(key) || key.hasPrefix("x-")
                        || [
                            "type", "nullable", "format", "enum", "const", "properties", "required", "items",
                            "additionalProperties",
                        ].contains(key)
                else { throw Conflict(reason: .shape(key)) }
                merged[key] = a ?? b
                continue
            }
            switch key {
            case _ where ["readOnly", "writeOnly", "deprecated", "uniqueItems"].contains(key):
                merged[key] = a == .bool(true) || b == .bool(true) ? .bool(true) : a
            case _ where describingKeywords.contains(key) || uncheckedKeywords.contains(key):
                merged[key] = a
            case _ where key.hasPrefix("x-") && key != "x-extensible-enum":
                merged[key] = a
            case _ where lowerBoundKeywords.contains(key) || upperBoundKeywords.contains(key):
                merged[key] = try tighter(a, b, lower: lowerBoundKeywords.contains(key), keyword: key)
            case "type", "nullable", "enum", "const", "x-extensible-enum":
                break  // below, together
            case "format":
                guard a == b else { throw Conflict(reason: .formats(a.stringValue ?? "\(a)", b.stringValue ?? "\(b)")) }
                merged[key] = a
            case "required":
                guard case .array(let names) = a, case .array(let more) = b else { throw Conflict(reason: .shape(key)) }
                merged[key] = .array(names + more.filter { !names.contains($0) })
            case "properties":
                guard case .object(let members) = a, case .object(let others) = b else {
                    throw Conflict(reason: .shape(key))
                }
                var properties = JSONObject()
                for (name, schema) in members {
                    guard let again = others[name] else {
                        properties[name] = schema
                        continue
                    }
                    do {
                        properties[name] = try combined(schema, again, openAPI30: openAPI30)
                    } catch {
                        throw Conflict(reason: error.reason, path: [name] + error.path)
                    }
                }
                for (name, schema) in others where !members.contains(key: name) { properties[name] = schema }
                merged[key] = .object(properties)
            case "items", "additionalProperties":
                // `false` allows nothing more; the same tuple (`items: [...]`) is one; schemas combine.
                if a == .bool(false) || b == .bool(false) || withoutAnnotations(a) == withoutAnnotations(b) {
                    merged[key] = a == .bool(false) || b == .bool(false) ? .bool(false) : a
                    continue
                }
                do {
                    merged[key] = try combined(a, b, openAPI30: openAPI30)
                } catch {
                    throw Conflict(reason: error.reason, path: [key == "items" ? "[]" : key] + error.path)
                }
            default:
                // `$ref`, `oneOf`, `allOf`, `prefixItems`, `discriminator`, ...: the same on both sides.
                guard withoutAnnotations(a) == withoutAnnotations(b) else { throw Conflict(reason: .shape(key)) }
                merged[key] = a
            }
        }
        try combineValues(one, other, openAPI30: openAPI30, into: &merged)
        return .object(merged)
    }

    /// `type`, `nullable`, `enum`, `const` and `x-extensible-enum` of two definitions, into `merged`.
    private static func combineValues(
        _ one: JSONObject, _ other: JSONObject, openAPI30: Bool, into merged: inout JSONObject
    ) throws(Conflict) {
        let types = (SchemaReading.types(.object(one)), SchemaReading.types(.object(other)))
        let kinds = (types.0.filter { $0 != "null" }, types.1.filter { $0 != "null" })
        if one["type"] != nil, other["type"] != nil, Set(kinds.0) != Set(kinds.1) {
            throw Conflict(reason: .types(describe(kinds.0), describe(kinds.1)))
        }
        // Null is a value of both only when each side allows it or leaves the type open.
        func allowsNull(_ side: JSONObject) -> Bool {
            if SchemaReading.admitsNull(.object(side), openAPI30: openAPI30) { return true }
            guard case .array? = side["x-extensible-enum"] else {
                return ["type", "enum", "const", "$ref", "allOf", "anyOf", "oneOf"].allSatisfy { side[$0] == nil }
            }
            return false
        }
        let nullAllowed = allowsNull(one) && allowsNull(other)
        merged["type"] = one["type"] ?? other["type"]
        merged["nullable"] = nullAllowed ? one["nullable"] ?? other["nullable"] : nil
        if !nullAllowed, case .array(let list)? = merged["type"] {
            let kept = list.filter { $0 != "null" }
            merged["type"] = kept.count == 1 ? kept[0] : .array(kept)
        }
        for key in ["enum", "const", "x-extensible-enum"] { merged[key] = nil }
        let listed = (try values(one), try values(other))
        switch listed {
        case (nil, nil):
            break
        case (.some, nil), (nil, .some):
            // One side's values, in its own spelling (`const: cat`, `x-extensible-enum: [...]`). A bare
            // `x-extensible-enum: true` in the second definition annotates the first one's enum, as a part of
            // only annotations does; in the first (a string without values) it has nothing to annotate.
            let side = listed.0 != nil ? one : other
            for key in ["enum", "const", "x-extensible-enum"] { merged[key] = side[key] }
            if listed.0 != nil, one["enum"] != nil, other["x-extensible-enum"] == .bool(true) {
                merged["x-extensible-enum"] = .bool(true)
            }
        case (let a?, let b?):
            let combined: [JSONValue]
            switch (a.extensible, b.extensible) {
            case (false, false): combined = a.values.filter(b.values.contains)
            case (false, true): combined = a.values
            case (true, false): combined = b.values
            case (true, true): combined = a.values + b.values.filter { !a.values.contains($0) }
            }
            merged["enum"] = .array(combined)
            if a.extensible && b.extensible { merged["x-extensible-enum"] = .bool(true) }
        }
        if !nullAllowed {
            if case .array(let list)? = merged["enum"] { merged["enum"] = .array(list.filter { $0 != .null }) }
            if merged["const"] == .null { throw Conflict(reason: .noCommonValue) }
        }
        if merged["enum"] == [] { throw Conflict(reason: .noCommonValue) }
    }

    /// The values a definition allows by `enum`, `const` or `x-extensible-enum`, and whether more may come;
    /// nil when it lists none.
    private static func values(_ side: JSONObject) throws(Conflict) -> (values: [JSONValue], extensible: Bool)? {
        if case .array(let list)? = side["x-extensible-enum"] {
            guard side["enum"] == nil, side["const"] == nil else { throw Conflict(reason: .shape("x-extensible-enum")) }
            return (list, true)
        }
        if let constant = side["const"] {
            guard side["enum"] == nil else { throw Conflict(reason: .shape("const")) }
            return ([constant], false)
        }
        guard let list = side["enum"] else { return nil }
        guard case .array(let values) = list else { throw Conflict(reason: .shape("enum")) }
        return (values, side["x-extensible-enum"] == .bool(true))
    }

    /// The tighter of two bounds; OpenAPI 3.0's boolean `exclusiveMinimum`/`exclusiveMaximum` hold when either
    /// side says so.
    private static func tighter(_ a: JSONValue, _ b: JSONValue, lower: Bool, keyword: String) throws(Conflict)
        -> JSONValue
    {
        switch (a, b) {
        case (.number(let x), .number(let y)): return .number(lower ? max(x, y) : min(x, y))
        case (.bool(let x), .bool(let y)): return .bool(x || y)
        default:
            guard a == b else { throw Conflict(reason: .shape(keyword)) }
            return a
        }
    }

    private static func describe(_ kinds: [String]) -> String {
        kinds.isEmpty ? "null" : kinds.joined(separator: " or ")
    }

    /// What of a schema decides its Swift type: without descriptions and the constraints the models do not
    /// check (`pattern`, `minLength`, `minProperties`, ...), recursively through members and items. Two
    /// schemas with the same shape generate the same type.
    static func typeShape(_ schema: JSONValue) -> JSONValue {
        guard case .object(let object) = schema else { return schema }
        // Bounds stay: an integer's may make it `UInt64`; `readOnly`/`writeOnly` make a required member optional.
        let ignored = describingKeywords.union(uncheckedKeywords).union([
            "minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties", "minContains",
            "maxContains",
        ]).subtracting(["readOnly", "writeOnly"])
        var shape = JSONObject()
        for (key, value) in object where !ignored.contains(key) && (!key.hasPrefix("x-") || key == "x-extensible-enum")
        {
            switch (key, value) {
            case ("properties", .object(let members)):
                shape[key] = .object(JSONObject(members.map { ($0.key, typeShape($0.value)) }))
            case ("items", _), ("additionalProperties", _):
                shape[key] = typeShape(value)
            case ("required", .array(let names)), ("type", .array(let names)):
                shape[key] = .array(names.compactMap(\.stringValue).sorted().map(JSONValue.string))
            default:
                shape[key] = value
            }
        }
        return .object(shape)
    }

    /// Whether a `$ref` appears anywhere in `schema` (it is then read relative to its own file).
    static func containsReference(_ schema: JSONValue) -> Bool {
        switch schema {
        case .object(let object): object.contains { $0.key == "$ref" || containsReference($0.value) }
        case .array(let list): list.contains(where: containsReference)
        default: false
        }
    }
}
