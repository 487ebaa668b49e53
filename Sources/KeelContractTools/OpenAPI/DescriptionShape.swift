import Foundation
import KeelContract

/// The shape of an OpenAPI description: every member the contract tools read has the type the
/// specification gives it, and the members it requires are there.
///
/// Without this check a mis-edited or truncated description read as an empty one (`paths: 5` had no
/// paths, a schema with `properties: 3` had no properties), and `keel contract diff` reported a base like
/// that as "everything is new" — exit 0 — instead of refusing the input. Members the tools do not read,
/// and extensions (`x-…`), are not checked.
///
/// The walk carries no location: a problem is thrown as ``Malformed`` and each member it passes through on
/// the way out adds its name, so a sound description (the common case, megabytes of it) costs one pass
/// with no pointer ever built.
struct DescriptionShape {
    let file: String
    let isOpenAPI30: Bool

    /// A problem, with the location's tokens innermost first (reversed when reported).
    struct Malformed: Error {
        var tokens: [String] = []
        let message: String
    }

    /// Checks a description's root.
    func checkRoot(_ root: JSONObject) throws(ContractLoadError) {
        try reporting {
            let info = try require("info", in: root)
            try within("info") {
                try object(info) { info throws in
                    for name in ["title", "version"] {
                        let value = try require(name, in: info)
                        try within(name) { try string(value) }
                    }
                }
            }
            if isOpenAPI30 { _ = try require("paths", in: root) }
            if let paths = root["paths"] {
                try within("paths") {
                    try object(paths) { paths throws in
                        for (path, item) in paths where !path.hasPrefix("x-") {
                            try within(path) {
                                guard path.hasPrefix("/") else {
                                    throw Malformed(message: "a path must start with `/`")
                                }
                                try pathItem(item)
                            }
                        }
                    }
                }
            }
            if let components = root["components"] { try within("components") { try self.components(components) } }
            if let security = root["security"] { try within("security") { try securityRequirements(security) } }
        }
    }

    /// Checks the `components` of a file that another file references (its paths are not the description's).
    func checkReferencedFile(_ root: JSONValue) throws(ContractLoadError) {
        guard case .object(let object) = root, let components = object["components"] else { return }
        try reporting { try within("components") { try self.components(components) } }
    }

    private func reporting(_ body: () throws -> Void) throws(ContractLoadError) {
        do { try body() } catch let error as Malformed {
            let pointer = error.tokens.reversed().map { "/" + JSONPointer.escape($0) }.joined()
            throw ContractLoadError(
                code: .malformedDescription, file: file, location: "#" + pointer, message: error.message)
        } catch {
            preconditionFailure("the shape check throws only Malformed, not \(error)")
        }
    }

    /// Runs `body` for the member `token`: a problem inside it is located under `token`.
    @inline(__always)
    private func within(_ token: @autoclosure () -> String, _ body: () throws -> Void) throws {
        do { try body() } catch var located as Malformed {
            located.tokens.append(token())
            throw located
        }
    }

    // MARK: - Objects of the description

    private static let methods: Set<String> = ["get", "put", "post", "delete", "options", "head", "patch", "trace"]

    private func pathItem(_ value: JSONValue) throws {
        try object(value) { item throws in
            if let reference = item["$ref"] { try within("$ref") { try string(reference) } }
            if let parameters = item["parameters"] { try within("parameters") { try self.parameters(parameters) } }
            for (name, operation) in item where Self.methods.contains(name) {
                try within(name) { try self.operation(operation) }
            }
        }
    }

    private func operation(_ value: JSONValue) throws {
        try object(value) { operation throws in
            if let id = operation["operationId"] { try within("operationId") { try string(id) } }
            if let parameters = operation["parameters"] {
                try within("parameters") { try self.parameters(parameters) }
            }
            if let body = operation["requestBody"] { try within("requestBody") { try requestBody(body) } }
            if isOpenAPI30 { _ = try require("responses", in: operation) }
            if let responses = operation["responses"] {
                try within("responses") {
                    try object(responses) { responses throws in
                        for (status, response) in responses where !status.hasPrefix("x-") {
                            try within(status) { try self.response(response) }
                        }
                    }
                }
            }
            if let security = operation["security"] { try within("security") { try securityRequirements(security) } }
        }
    }

    private func parameters(_ value: JSONValue) throws {
        try array(value) { element throws in try parameter(element) }
    }

    private func parameter(_ value: JSONValue) throws {
        try object(value) { parameter throws in
            if let reference = parameter["$ref"] { return try within("$ref") { try string(reference) } }
            let name = try require("name", in: parameter)
            try within("name") { try string(name) }
            // Any location name: one OpenAPI 3 does not define (Swagger 2's `body`) is skipped by the diff,
            // not refused (a review decision; see ContractDiffFixtureTests).
            let location = try require("in", in: parameter)
            try within("in") { try string(location) }
            if let required = parameter["required"] { try within("required") { try bool(required) } }
            if let schema = parameter["schema"] { try within("schema") { try self.schema(schema) } }
            if let content = parameter["content"] { try within("content") { try self.content(content) } }
        }
    }

    private func requestBody(_ value: JSONValue) throws {
        try object(value) { body throws in
            if let reference = body["$ref"] { return try within("$ref") { try string(reference) } }
            let content = try require("content", in: body)
            try within("content") { try self.content(content) }
            if let required = body["required"] { try within("required") { try bool(required) } }
        }
    }

    private func response(_ value: JSONValue) throws {
        try object(value) { response throws in
            if let reference = response["$ref"] { return try within("$ref") { try string(reference) } }
            if let content = response["content"] { try within("content") { try self.content(content) } }
            if let headers = response["headers"] {
                try within("headers") {
                    try object(headers) { headers throws in
                        for (name, header) in headers {
                            try within(name) {
                                try object(header) { header throws in
                                    if let schema = header["schema"] {
                                        try within("schema") { try self.schema(schema) }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }

    private func content(_ value: JSONValue) throws {
        try object(value) { content throws in
            for (mediaType, entry) in content {
                try within(mediaType) {
                    try object(entry) { entry throws in
                        if let schema = entry["schema"] { try within("schema") { try self.schema(schema) } }
                    }
                }
            }
        }
    }

    private func components(_ value: JSONValue) throws {
        try object(value) { components throws in
            let sections: [(String, (JSONValue) throws -> Void)] = [
                ("schemas", schema), ("parameters", parameter), ("responses", response),
                ("requestBodies", requestBody), ("pathItems", pathItem),
            ]
            for (name, check) in sections {
                guard let section = components[name] else { continue }
                try within(name) {
                    try object(section) { entries throws in
                        try entries.forEachMember { key, entry in try within(key) { try check(entry) } }
                    }
                }
            }
            if let schemes = components["securitySchemes"] {
                try within("securitySchemes") {
                    try object(schemes) { schemes throws in
                        for (name, scheme) in schemes { try within(name) { try object(scheme) { _ in } } }
                    }
                }
            }
        }
    }

    private func securityRequirements(_ value: JSONValue) throws {
        try array(value) { requirement throws in
            try object(requirement) { requirement throws in
                for (name, scopes) in requirement {
                    try within(name) { try array(scopes) { scope throws in try string(scope) } }
                }
            }
        }
    }

    // MARK: - Schemas

    /// What a schema keyword holds, for the keywords whose type the tools rely on.
    private enum Keyword {
        case schema, schemaOrBool, schemaList, nonEmptySchemaList, schemaMap, count, number, positiveNumber
        case string, bool, type, stringList, list, numberOrBool, discriminator
    }

    private static let keywords: [String: Keyword] = [
        "items": .schema, "not": .schema, "contains": .schema, "propertyNames": .schema, "if": .schema,
        "then": .schema, "else": .schema, "unevaluatedItems": .schema, "unevaluatedProperties": .schema,
        "contentSchema": .schema, "additionalProperties": .schemaOrBool, "additionalItems": .schemaOrBool,
        "allOf": .nonEmptySchemaList, "anyOf": .nonEmptySchemaList, "oneOf": .nonEmptySchemaList,
        "prefixItems": .schemaList, "properties": .schemaMap, "patternProperties": .schemaMap, "$defs": .schemaMap,
        "definitions": .schemaMap, "dependentSchemas": .schemaMap, "maxLength": .count, "minLength": .count,
        "maxItems": .count, "minItems": .count, "maxProperties": .count, "minProperties": .count,
        "maxContains": .count, "minContains": .count, "minimum": .number, "maximum": .number,
        "multipleOf": .positiveNumber, "$ref": .string, "pattern": .string, "format": .string, "title": .string,
        "description": .string, "nullable": .bool, "readOnly": .bool, "writeOnly": .bool, "deprecated": .bool,
        "uniqueItems": .bool, "type": .type, "required": .stringList, "enum": .list,
        "exclusiveMinimum": .numberOrBool, "exclusiveMaximum": .numberOrBool, "discriminator": .discriminator,
    ]

    private static let keywordTable = KeywordTable(keywords)

    /// The keywords in a small open-addressed table keyed by length and first and last byte: every member
    /// of every schema is looked up, and hashing each name with `Hasher` cost more than the rest of the walk.
    private struct KeywordTable {
        private var slots: [(name: String, kind: Keyword)?] = Array(repeating: nil, count: 256)

        init(_ keywords: [String: Keyword]) {
            for (name, kind) in keywords {
                var slot = Self.slot(name)
                while slots[slot] != nil { slot = (slot + 1) & 255 }
                slots[slot] = (name, kind)
            }
        }

        private static func slot(_ name: String) -> Int {
            let bytes = name.utf8
            return (bytes.count &* 31 &+ Int(bytes.first ?? 0) &* 7 &+ Int(bytes.last ?? 0)) & 255
        }

        func kind(of name: String) -> Keyword? {
            var slot = Self.slot(name)
            while let entry = slots[slot] {
                // `==` answers at once for equal short strings; the byte count rules out canonical equivalents.
                if entry.name.utf8.count == name.utf8.count, entry.name == name { return entry.kind }
                slot = (slot + 1) & 255
            }
            return nil
        }
    }

    /// A schema: an object (or, in 3.1, `true`/`false`) whose keywords have their types, recursively.
    private func schema(_ value: JSONValue) throws {
        if case .bool = value, !isOpenAPI30 { return }
        guard case .object(let schema) = value else {
            throw Malformed(
                message: isOpenAPI30 ? "a schema must be a mapping" : "a schema must be a mapping or a boolean")
        }
        try schema.forEachMember { keyword, member in
            guard let kind = Self.keywordTable.kind(of: keyword) else { return }
            try within(keyword) { try check(member, as: kind, keyword: keyword) }
        }
    }

    private func check(_ member: JSONValue, as kind: Keyword, keyword: String) throws {
        switch kind {
        case .schema: try schema(member)
        case .schemaOrBool:
            if case .bool = member { return }
            try schema(member)
        case .schemaList, .nonEmptySchemaList:
            try array(member) { element throws in try schema(element) }
            if kind == .nonEmptySchemaList, case .array(let elements) = member, elements.isEmpty {
                throw Malformed(message: "`\(keyword)` must list at least one schema")
            }
        case .schemaMap:
            try object(member) { entries throws in
                try entries.forEachMember { name, entry in try within(name) { try schema(entry) } }
            }
        case .count:
            // Most counts are written as plain digits; anything else (`1.0`, `1e2`, `-1`) is read exactly.
            if case .number(let number) = member, number.literal.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }) { return }
            guard case .number(let number) = member, let count = number.int64, count >= 0 else {
                throw Malformed(message: "`\(keyword)` must be a non-negative integer")
            }
        case .number, .positiveNumber:
            guard case .number(let number) = member else { throw Malformed(message: "`\(keyword)` must be a number") }
            if kind == .positiveNumber, !(JSONNumber(Int64(0)) < number) {
                throw Malformed(message: "`\(keyword)` must be greater than 0")
            }
        case .string: try string(member)
        case .bool: try bool(member)
        case .type:
            if case .string = member { return }
            guard case .array(let types) = member, !types.isEmpty,
                types.allSatisfy({ if case .string = $0 { true } else { false } })
            else { throw Malformed(message: "`type` must be a type name or a list of them") }
        case .stringList: try array(member) { name throws in try string(name) }
        case .list: try array(member) { _ in }
        case .numberOrBool:
            switch member {
            case .bool, .number: return
            default: throw Malformed(message: "`\(keyword)` must be a number (3.1) or a boolean (3.0)")
            }
        case .discriminator:
            try object(member) { discriminator throws in
                let property = try require("propertyName", in: discriminator)
                try within("propertyName") { try string(property) }
                if let mapping = discriminator["mapping"] {
                    try within("mapping") {
                        try object(mapping) { mapping throws in
                            for (value, target) in mapping { try within(value) { try string(target) } }
                        }
                    }
                }
            }
        }
    }

    // MARK: - Members

    private func require(_ name: String, in object: JSONObject) throws -> JSONValue {
        guard let value = object[name] else { throw Malformed(message: "`\(name)` is required here") }
        return value
    }

    private func object(_ value: JSONValue, _ body: (JSONObject) throws -> Void) throws {
        guard case .object(let object) = value else {
            throw Malformed(message: "must be a mapping, not \(value.kindPhrase(yaml: true))")
        }
        try body(object)
    }

    private func array(_ value: JSONValue, _ element: (JSONValue) throws -> Void) throws {
        guard case .array(let elements) = value else {
            throw Malformed(message: "must be a list, not \(value.kindPhrase(yaml: true))")
        }
        for (index, value) in elements.enumerated() { try within(String(index)) { try element(value) } }
    }

    private func string(_ value: JSONValue) throws {
        guard case .string = value else {
            throw Malformed(message: "must be a string, not \(value.kindPhrase(yaml: true))")
        }
    }

    private func bool(_ value: JSONValue) throws {
        guard case .bool = value else {
            throw Malformed(message: "must be true or false, not \(value.kindPhrase(yaml: true))")
        }
    }
}
