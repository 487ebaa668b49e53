import Foundation
import KeelContract

/// The shape of an OpenAPI description: every member the contract tools read has the type the
/// specification gives it, and the members it requires are there.
///
/// Without this check a mis-edited or truncated description read as an empty one (`paths: 5` had no
/// paths, a schema with `properties: 3` had no properties), and `keel contract diff` reported a base like
/// that as "everything is new" — exit 0 — instead of refusing the input. Members the tools do not read,
/// and extensions (`x-…`), are not checked.
struct DescriptionShape {
    let file: String
    let isOpenAPI30: Bool

    /// Checks a description's root.
    func checkRoot(_ root: JSONObject) throws(ContractLoadError) {
        let at = Pointer()
        let info = try require("info", in: root, at: at)
        try object(info, at: at.appending("info")) { info, at throws(ContractLoadError) in
            for name in ["title", "version"] {
                try string(try require(name, in: info, at: at), at: at.appending(name))
            }
        }
        if isOpenAPI30 { _ = try require("paths", in: root, at: at) }
        if let paths = root["paths"] {
            try object(paths, at: at.appending("paths")) { paths, at throws(ContractLoadError) in
                for (path, item) in paths where !path.hasPrefix("x-") {
                    guard path.hasPrefix("/") else {
                        throw malformed(at.appending(path), "a path must start with `/`")
                    }
                    try pathItem(item, at: at.appending(path))
                }
            }
        }
        if let components = root["components"] { try self.components(components, at: at.appending("components")) }
        if let security = root["security"] { try securityRequirements(security, at: at.appending("security")) }
    }

    /// Checks the `components` of a file that another file references (its paths are not the description's).
    func checkReferencedFile(_ root: JSONValue) throws(ContractLoadError) {
        guard case .object(let object) = root, let components = object["components"] else { return }
        try self.components(components, at: Pointer().appending("components"))
    }

    // MARK: - Objects of the description

    private static let methods: Set<String> = ["get", "put", "post", "delete", "options", "head", "patch", "trace"]

    private func pathItem(_ value: JSONValue, at: Pointer) throws(ContractLoadError) {
        try object(value, at: at) { item, at throws(ContractLoadError) in
            if let reference = item["$ref"] { try string(reference, at: at.appending("$ref")) }
            if let parameters = item["parameters"] { try self.parameters(parameters, at: at.appending("parameters")) }
            for (name, operation) in item where Self.methods.contains(name) {
                try self.operation(operation, at: at.appending(name))
            }
        }
    }

    private func operation(_ value: JSONValue, at: Pointer) throws(ContractLoadError) {
        try object(value, at: at) { operation, at throws(ContractLoadError) in
            if let id = operation["operationId"] { try string(id, at: at.appending("operationId")) }
            if let parameters = operation["parameters"] {
                try self.parameters(parameters, at: at.appending("parameters"))
            }
            if let body = operation["requestBody"] { try requestBody(body, at: at.appending("requestBody")) }
            if isOpenAPI30 { _ = try require("responses", in: operation, at: at) }
            if let responses = operation["responses"] {
                try object(responses, at: at.appending("responses")) { responses, at throws(ContractLoadError) in
                    for (status, response) in responses where !status.hasPrefix("x-") {
                        try self.response(response, at: at.appending(status))
                    }
                }
            }
            if let security = operation["security"] { try securityRequirements(security, at: at.appending("security")) }
        }
    }

    private func parameters(_ value: JSONValue, at: Pointer) throws(ContractLoadError) {
        try array(value, at: at) { element, at throws(ContractLoadError) in try parameter(element, at: at) }
    }

    private func parameter(_ value: JSONValue, at: Pointer) throws(ContractLoadError) {
        try object(value, at: at) { parameter, at throws(ContractLoadError) in
            if let reference = parameter["$ref"] { return try string(reference, at: at.appending("$ref")) }
            try string(try require("name", in: parameter, at: at), at: at.appending("name"))
            // Any location name: one OpenAPI 3 does not define (Swagger 2's `body`) is skipped by the diff,
            // not refused (a review decision; see ContractDiffFixtureTests).
            try string(try require("in", in: parameter, at: at), at: at.appending("in"))
            if let required = parameter["required"] { try bool(required, at: at.appending("required")) }
            if let schema = parameter["schema"] { try self.schema(schema, at: at.appending("schema")) }
            if let content = parameter["content"] { try self.content(content, at: at.appending("content")) }
        }
    }

    private func requestBody(_ value: JSONValue, at: Pointer) throws(ContractLoadError) {
        try object(value, at: at) { body, at throws(ContractLoadError) in
            if let reference = body["$ref"] { return try string(reference, at: at.appending("$ref")) }
            try content(try require("content", in: body, at: at), at: at.appending("content"))
            if let required = body["required"] { try bool(required, at: at.appending("required")) }
        }
    }

    private func response(_ value: JSONValue, at: Pointer) throws(ContractLoadError) {
        try object(value, at: at) { response, at throws(ContractLoadError) in
            if let reference = response["$ref"] { return try string(reference, at: at.appending("$ref")) }
            if let content = response["content"] { try self.content(content, at: at.appending("content")) }
            if let headers = response["headers"] {
                try object(headers, at: at.appending("headers")) { headers, at throws(ContractLoadError) in
                    for (name, header) in headers {
                        try object(header, at: at.appending(name)) { header, at throws(ContractLoadError) in
                            if let schema = header["schema"] { try self.schema(schema, at: at.appending("schema")) }
                        }
                    }
                }
            }
        }
    }

    private func content(_ value: JSONValue, at: Pointer) throws(ContractLoadError) {
        try object(value, at: at) { content, at throws(ContractLoadError) in
            for (mediaType, entry) in content {
                try object(entry, at: at.appending(mediaType)) { entry, at throws(ContractLoadError) in
                    if let schema = entry["schema"] { try self.schema(schema, at: at.appending("schema")) }
                }
            }
        }
    }

    private func components(_ value: JSONValue, at: Pointer) throws(ContractLoadError) {
        try object(value, at: at) { components, at throws(ContractLoadError) in
            let sections: [(String, (JSONValue, Pointer) throws(ContractLoadError) -> Void)] = [
                ("schemas", schema), ("parameters", parameter), ("responses", response),
                ("requestBodies", requestBody), ("pathItems", pathItem),
            ]
            for (name, check) in sections {
                guard let section = components[name] else { continue }
                try object(section, at: at.appending(name)) { entries, at throws(ContractLoadError) in
                    for (key, entry) in entries { try check(entry, at.appending(key)) }
                }
            }
            if let schemes = components["securitySchemes"] {
                try object(schemes, at: at.appending("securitySchemes")) { schemes, at throws(ContractLoadError) in
                    for (name, scheme) in schemes { try object(scheme, at: at.appending(name)) { _, _ in } }
                }
            }
        }
    }

    private func securityRequirements(_ value: JSONValue, at: Pointer) throws(ContractLoadError) {
        try array(value, at: at) { requirement, at throws(ContractLoadError) in
            try object(requirement, at: at) { requirement, at throws(ContractLoadError) in
                for (name, scopes) in requirement {
                    try array(scopes, at: at.appending(name)) { scope, at throws(ContractLoadError) in
                        try string(scope, at: at)
                    }
                }
            }
        }
    }

    // MARK: - Schemas

    private static let schemaKeywords: Set<String> = [
        "items", "additionalProperties", "not", "contains", "propertyNames", "if", "then", "else",
        "additionalItems", "unevaluatedItems", "unevaluatedProperties", "contentSchema",
    ]
    private static let schemaListKeywords: Set<String> = ["allOf", "anyOf", "oneOf", "prefixItems"]
    private static let schemaMapKeywords: Set<String> = [
        "properties", "patternProperties", "$defs", "definitions", "dependentSchemas",
    ]
    private static let countKeywords: Set<String> = [
        "maxLength", "minLength", "maxItems", "minItems", "maxProperties", "minProperties", "maxContains",
        "minContains",
    ]
    private static let numberKeywords: Set<String> = ["minimum", "maximum", "multipleOf"]
    private static let stringKeywords: Set<String> = ["$ref", "pattern", "format", "title", "description"]
    private static let boolKeywords: Set<String> = ["nullable", "readOnly", "writeOnly", "deprecated", "uniqueItems"]

    /// A schema: an object (or, in 3.1, `true`/`false`) whose keywords have their types, recursively.
    private func schema(_ value: JSONValue, at: Pointer) throws(ContractLoadError) {
        if case .bool = value, !isOpenAPI30 { return }
        guard case .object(let schema) = value else {
            throw malformed(at, isOpenAPI30 ? "a schema must be a mapping" : "a schema must be a mapping or a boolean")
        }
        for (keyword, member) in schema {
            let at = at.appending(keyword)
            if Self.schemaKeywords.contains(keyword) {
                if keyword == "additionalProperties" || keyword == "additionalItems", case .bool = member { continue }
                try self.schema(member, at: at)
            } else if Self.schemaListKeywords.contains(keyword) {
                try array(member, at: at) { element, at throws(ContractLoadError) in try self.schema(element, at: at) }
                if keyword != "prefixItems", case .array(let elements) = member, elements.isEmpty {
                    throw malformed(at, "`\(keyword)` must list at least one schema")
                }
            } else if Self.schemaMapKeywords.contains(keyword) {
                try object(member, at: at) { entries, at throws(ContractLoadError) in
                    for (name, entry) in entries { try self.schema(entry, at: at.appending(name)) }
                }
            } else if Self.countKeywords.contains(keyword) {
                guard case .number(let number) = member, let count = number.int64, count >= 0 else {
                    throw malformed(at, "`\(keyword)` must be a non-negative integer")
                }
            } else if Self.numberKeywords.contains(keyword) {
                guard case .number(let number) = member else { throw malformed(at, "`\(keyword)` must be a number") }
                if keyword == "multipleOf", !(JSONNumber(Int64(0)) < number) {
                    throw malformed(at, "`multipleOf` must be greater than 0")
                }
            } else if Self.stringKeywords.contains(keyword) {
                try string(member, at: at)
            } else if Self.boolKeywords.contains(keyword) {
                try bool(member, at: at)
            } else {
                try otherKeyword(keyword, member, at: at)
            }
        }
    }

    private func otherKeyword(_ keyword: String, _ member: JSONValue, at: Pointer) throws(ContractLoadError) {
        switch keyword {
        case "type":
            if case .string = member { return }
            guard case .array(let types) = member, !types.isEmpty,
                types.allSatisfy({ if case .string = $0 { true } else { false } })
            else { throw malformed(at, "`type` must be a type name or a list of them") }
        case "required":
            try array(member, at: at) { name, at throws(ContractLoadError) in try string(name, at: at) }
        case "enum":
            try array(member, at: at) { _, _ in }
        case "exclusiveMinimum", "exclusiveMaximum":
            switch member {
            case .bool, .number: return
            default: throw malformed(at, "`\(keyword)` must be a number (3.1) or a boolean (3.0)")
            }
        case "discriminator":
            try object(member, at: at) { discriminator, at throws(ContractLoadError) in
                try string(try require("propertyName", in: discriminator, at: at), at: at.appending("propertyName"))
                if let mapping = discriminator["mapping"] {
                    try object(mapping, at: at.appending("mapping")) { mapping, at throws(ContractLoadError) in
                        for (value, target) in mapping { try string(target, at: at.appending(value)) }
                    }
                }
            }
        default:
            return
        }
    }

    // MARK: - Members

    /// A JSON pointer under construction, as tokens.
    struct Pointer {
        private var tokens: [String] = []

        func appending(_ token: String) -> Pointer {
            var copy = self
            copy.tokens.append(token)
            return copy
        }

        var fragment: String { "#" + tokens.map { "/" + JSONPointer.escape($0) }.joined() }
    }

    private func malformed(_ at: Pointer, _ message: String) -> ContractLoadError {
        ContractLoadError(code: .malformedDescription, file: file, location: at.fragment, message: message)
    }

    private func require(_ name: String, in object: JSONObject, at: Pointer) throws(ContractLoadError) -> JSONValue {
        guard let value = object[name] else {
            throw malformed(at, "`\(name)` is required here")
        }
        return value
    }

    private func object(
        _ value: JSONValue, at: Pointer, _ body: (JSONObject, Pointer) throws(ContractLoadError) -> Void
    ) throws(ContractLoadError) {
        guard case .object(let object) = value else { throw malformed(at, "must be a mapping, not \(kind(of: value))") }
        try body(object, at)
    }

    private func array(
        _ value: JSONValue, at: Pointer, _ element: (JSONValue, Pointer) throws(ContractLoadError) -> Void
    ) throws(ContractLoadError) {
        guard case .array(let elements) = value else { throw malformed(at, "must be a list, not \(kind(of: value))") }
        for (index, value) in elements.enumerated() { try element(value, at.appending(String(index))) }
    }

    private func string(_ value: JSONValue, at: Pointer) throws(ContractLoadError) {
        guard case .string = value else { throw malformed(at, "must be a string, not \(kind(of: value))") }
    }

    private func bool(_ value: JSONValue, at: Pointer) throws(ContractLoadError) {
        guard case .bool = value else { throw malformed(at, "must be true or false, not \(kind(of: value))") }
    }

    private func kind(of value: JSONValue) -> String {
        switch value {
        case .null: "null"
        case .bool: "a boolean"
        case .number: "a number"
        case .string: "a string"
        case .array: "a list"
        case .object: "a mapping"
        }
    }
}
