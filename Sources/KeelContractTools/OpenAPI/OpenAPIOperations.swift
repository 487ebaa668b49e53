public import Foundation
public import KeelContract

/// Typed views of a description's operations: what a client calls, with what, and what comes back.
///
/// Read on demand from the raw tree with every `$ref` to a path item, parameter, request body or response
/// followed. Schemas stay ``JSONValue`` with the file they are in, so a `$ref` inside them still resolves
/// with ``OpenAPIDocument/resolve(_:in:)``.
extension OpenAPIDocument {
    /// One operation: a method on a path.
    public struct Operation: Sendable {
        /// The path template, e.g. `/notes/{id}`.
        public var path: String
        /// The method, lowercase (`get`, `post`, ...).
        public var method: String
        /// `operationId`, when the description gives one.
        public var operationID: String?
        /// Path-level parameters merged with the operation's own (an operation-level parameter with the
        /// same name and location replaces the path-level one), in declaration order.
        public var parameters: [Parameter]
        /// The request body, if any.
        public var requestBody: RequestBody?
        /// Responses by status code (`200`, `4XX`, `default`), in declaration order.
        public var responses: [Response]
        /// The names of the security schemes of each alternative requirement (the operation's own, else the
        /// document's); an empty list means anonymous access; `nil` means no requirement is declared.
        public var security: [[String]]?
        /// Where the operation is: `#/paths/~1notes~1{id}/get`.
        public var location: String
        /// Whether the description marks the operation `deprecated: true`.
        public var deprecated = false
        /// The scopes each alternative requirement asks of each scheme (`[["oauth": ["notes:write"]]]`), in
        /// the order of ``security``; nil when no requirement is declared.
        public var securityScopes: [[String: [String]]]? = nil
    }

    /// Where a parameter goes.
    public enum ParameterLocation: String, Sendable, CaseIterable {
        case path, query, header, cookie
    }

    /// One parameter of an operation.
    public struct Parameter: Sendable {
        /// The parameter's name as the description gives it (`id`, `since`).
        public var name: String
        /// Where the parameter goes: the description's `in` (path, query, header or cookie).
        public var location: ParameterLocation
        /// Path parameters are always required.
        public var required: Bool
        /// The schema, unresolved (it may be a `$ref`), and the file it is in.
        public var schema: SchemaSource?
        /// `style` as written (nil when the description gives none).
        public var style: String? = nil
        /// `explode` as written (nil when the description gives none).
        public var explode: Bool? = nil
        /// The media type its value is written in, when the description gives `content` instead of `schema`
        /// (``schema`` is then that media type's); nil for a value written by `style`.
        public var contentType: String? = nil

        /// How the value is written on the wire: `style`, or its default for the location (`form` in the
        /// query and cookies, `simple` in the path and headers).
        public var effectiveStyle: String {
            style ?? (location == .query || location == .cookie ? "form" : "simple")
        }

        /// Whether arrays and objects are written one member per name: `explode`, or true for `form`.
        public var effectiveExplode: Bool { explode ?? (effectiveStyle == "form") }
    }

    /// A request body.
    public struct RequestBody: Sendable {
        /// Whether the description marks the body `required: true` (false when it says nothing).
        public var required: Bool
        /// Schemas by media type, in declaration order.
        public var content: [MediaType]
    }

    /// A response.
    public struct Response: Sendable {
        /// `200`, `4XX` or `default`.
        public var status: String
        /// Schemas by media type, in declaration order (empty for a response without a body).
        public var content: [MediaType]
        /// The response's header fields, in declaration order (`Content-Type`, which OpenAPI says to
        /// ignore here, left out).
        public var headers: [Header] = []
        /// Where the response is written: `#/paths/~1notes/get/responses/503`, or a `$ref`'d response's own
        /// location (`#/components/responses/Maintenance`) in ``file``.
        public var location: String = ""
        /// The file the response is written in (the referenced one's, for a `$ref`).
        public var file: URL? = nil
        /// Whether this is a success (2xx) response.
        public var isSuccess: Bool { status.hasPrefix("2") }
    }

    /// One header field of a response.
    public struct Header: Sendable {
        /// The field's name as the description gives it (matched in any case).
        public var name: String
        /// Whether the description promises it in every such response (`required: true`).
        public var required: Bool
        /// The field's schema, unresolved (it may be a `$ref`), and the file it is in; nil when none is given.
        public var schema: SchemaSource?
    }

    /// One media type of a body.
    public struct MediaType: Sendable {
        /// `application/json`, ...
        public var name: String
        /// The media type's schema, unresolved (it may be a `$ref`), and the file it is in; nil when none is given.
        public var schema: SchemaSource?
    }

    /// A schema as written (possibly a `$ref`), the file it appears in and its location there.
    public struct SchemaSource: Sendable {
        /// The schema exactly as written; it may be a `$ref`, to resolve in ``file``.
        public var value: JSONValue
        /// The file the schema appears in, against which its `$ref`s resolve.
        public var file: URL
        /// `#/paths/~1notes/get/responses/200/content/application~1json/schema`.
        public var location: String {
            mediaType.map { container + "/" + JSONPointer.escape($0) + "/schema" } ?? container
        }
        // The location is put together only when asked for (the diff asks only for inline schemas, to tell
        // one written in a shared component; it walks thousands).
        private let container: String
        private let mediaType: String?

        init(value: JSONValue, file: URL, location: String) {
            self.value = value
            self.file = file
            container = location
            mediaType = nil
        }

        init(value: JSONValue, file: URL, content: String, mediaType: String) {
            self.value = value
            self.file = file
            container = content
            self.mediaType = mediaType
        }
    }

    /// Every operation, in the order the description lists paths and, within a path, methods.
    ///
    /// Parameters without a `name`, or with an `in` OpenAPI 3 does not define (`body` from a Swagger 2
    /// conversion), are left out.
    ///
    /// - Throws: ``ContractLoadError`` for a `$ref` that does not resolve.
    public func operations() throws(ContractLoadError) -> [Operation] {
        guard case .object(let paths) = root["paths"] ?? .null else { return [] }
        let documentSecurity = Self.securityRequirements(root["security"])
        var result: [Operation] = []
        for (path, itemValue) in paths {
            let item = try resolve(itemValue)
            // Where the path item is: its own file's location when it is a $ref.
            let pathLocation = item.location.isEmpty ? "#/paths/" + JSONPointer.escape(path) : item.location
            let shared = try parameters(
                item.value["parameters"], file: item.file, location: pathLocation + "/parameters")
            guard case .object(let members) = item.value else { continue }
            for (method, operationValue) in members where ContractDiff.methods.contains(method) {
                let location = pathLocation + "/" + method
                let operation = try resolve(operationValue, in: item.file)
                var merged = shared
                for parameter in try parameters(
                    operation.value["parameters"], file: operation.file, location: location + "/parameters")
                {
                    // The same parameter: same place and name (a header's name in any case).
                    if let index = merged.firstIndex(where: {
                        $0.location == parameter.location
                            && ($0.location == .header
                                ? $0.name.lowercased() == parameter.name.lowercased() : $0.name == parameter.name)
                    }) {
                        merged[index] = parameter
                    } else {
                        merged.append(parameter)
                    }
                }
                var body: RequestBody?
                if let bodyValue = operation.value["requestBody"] {
                    let resolved = try resolve(bodyValue, in: operation.file)
                    // Locations are where the content is: the referenced body's own, when it is a $ref.
                    let bodyLocation = resolved.location.isEmpty ? location + "/requestBody" : resolved.location
                    body = RequestBody(
                        required: resolved.value["required"] == .bool(true),
                        content: mediaTypes(
                            resolved.value["content"], file: resolved.file, location: bodyLocation + "/content"))
                }
                var responses: [Response] = []
                if case .object(let statuses) = operation.value["responses"] ?? .null {
                    for (status, responseValue) in statuses {
                        let resolved = try resolve(responseValue, in: operation.file)
                        let responseLocation =
                            resolved.location.isEmpty
                            ? location + "/responses/" + JSONPointer.escape(status) : resolved.location
                        responses.append(
                            Response(
                                status: status,
                                content: mediaTypes(
                                    resolved.value["content"], file: resolved.file,
                                    location: responseLocation + "/content"),
                                headers: try headers(
                                    resolved.value["headers"], file: resolved.file,
                                    location: responseLocation + "/headers"),
                                location: responseLocation, file: resolved.file))
                    }
                }
                let securityValue = operation.value["security"] ?? root["security"]
                result.append(
                    Operation(
                        path: path, method: method, operationID: operation.value["operationId"]?.stringValue,
                        parameters: merged, requestBody: body, responses: responses,
                        security: operation.value["security"] == nil
                            ? documentSecurity : Self.securityRequirements(operation.value["security"]),
                        location: location, deprecated: operation.value["deprecated"] == .bool(true),
                        securityScopes: Self.securityScopes(securityValue)))
            }
        }
        return result
    }

    private func parameters(_ value: JSONValue?, file: URL, location: String) throws(ContractLoadError) -> [Parameter] {
        guard case .array(let list) = value ?? .null else { return [] }
        var result: [Parameter] = []
        for (index, entry) in list.enumerated() {
            let resolved = try resolve(entry, in: file)
            let entryLocation = resolved.location.isEmpty ? "\(location)/\(index)" : resolved.location
            // Not an OpenAPI 3 parameter (no name, or `in: body` from a Swagger 2 conversion): nothing a
            // client sends as a parameter, so not part of this view (the loader accepted the file).
            guard let name = resolved.value["name"]?.stringValue, let raw = resolved.value["in"]?.stringValue,
                let place = ParameterLocation(rawValue: raw)
            else { continue }
            let (schema, contentType) = Self.valueSchema(resolved.value, file: resolved.file, location: entryLocation)
            var explode: Bool?
            if case .bool(let value) = resolved.value["explode"] ?? .null { explode = value }
            result.append(
                Parameter(
                    name: name, location: place, required: place == .path || resolved.value["required"] == .bool(true),
                    schema: schema, style: resolved.value["style"]?.stringValue, explode: explode,
                    contentType: contentType))
        }
        return result
    }

    private func headers(_ value: JSONValue?, file: URL, location: String) throws(ContractLoadError) -> [Header] {
        guard case .object(let fields) = value ?? .null else { return [] }
        var result: [Header] = []
        for (name, entry) in fields where name.lowercased() != "content-type" {
            let resolved = try resolve(entry, in: file)
            let entryLocation =
                resolved.location.isEmpty ? location + "/" + JSONPointer.escape(name) : resolved.location
            result.append(
                Header(
                    name: name, required: resolved.value["required"] == .bool(true),
                    schema: Self.valueSchema(resolved.value, file: resolved.file, location: entryLocation).schema))
        }
        return result
    }

    /// The schema of a parameter's or header's value: its `schema`, or, for one given by `content` (a map of
    /// exactly one media type), that media type's schema and the media type's name. (Found in an outside
    /// audit: `content` was not read, so nothing about such a value was ever compared.)
    static func valueSchema(_ value: JSONValue, file: URL, location: String) -> (
        schema: SchemaSource?, contentType: String?
    ) {
        if let schema = value["schema"] {
            return (SchemaSource(value: schema, file: file, location: location + "/schema"), nil)
        }
        guard case .object(let content) = value["content"] ?? .null, let type = content.keys.first,
            let media = content[type]
        else { return (nil, nil) }
        let schema = media["schema"].map {
            SchemaSource(
                value: $0, file: file,
                location: location + "/content/" + JSONPointer.escape(type) + "/schema")
        }
        return (schema, type)
    }

    private func mediaTypes(_ value: JSONValue?, file: URL, location: String) -> [MediaType] {
        guard case .object(let content) = value ?? .null else { return [] }
        return content.map { name, media in
            MediaType(
                name: name,
                schema: media["schema"].map { SchemaSource(value: $0, file: file, content: location, mediaType: name) })
        }
    }

    private static func securityScopes(_ value: JSONValue?) -> [[String: [String]]]? {
        guard case .array(let requirements) = value ?? .null else { return nil }
        return requirements.map { requirement in
            guard case .object(let schemes) = requirement else { return [:] }
            var scopes: [String: [String]] = [:]
            for (scheme, list) in schemes {
                if case .array(let names) = list {
                    scopes[scheme] = names.compactMap(\.stringValue)
                } else {
                    scopes[scheme] = []
                }
            }
            return scopes
        }
    }

    private static func securityRequirements(_ value: JSONValue?) -> [[String]]? {
        guard case .array(let requirements) = value ?? .null else { return nil }
        return requirements.map { requirement in
            guard case .object(let schemes) = requirement else { return [] }
            return schemes.keys.sorted()
        }
    }
}
