import Foundation
import KeelContract

/// Answers: can a client built against `base` keep working against a server that implements `revision`?
///
/// Every change gets a stable rule id, a severity, a location and a one-line message. `$ref`s are followed
/// on both sides, so renaming a component without changing its shape is not a change.
public struct ContractDiff: Sendable {
    /// The contract installed clients were built against.
    public let base: OpenAPIDocument
    /// The newer contract the server will implement.
    public let revision: OpenAPIDocument

    /// A comparison of `base` with `revision`; nothing is compared until ``changes()`` is called.
    public init(base: OpenAPIDocument, revision: OpenAPIDocument) {
        self.base = base
        self.revision = revision
    }

    /// Every change, in a stable order.
    public func changes() throws(ContractLoadError) -> [ContractChange] {
        var collector = Collector(base: base, revision: revision)
        try collector.compareDocuments()
        return collector.changes
    }

    static let methods = ["get", "put", "post", "delete", "options", "head", "patch", "trace"]
}

/// Walks both documents side by side.
struct Collector {
    let base: OpenAPIDocument
    let revision: OpenAPIDocument
    var changes: [ContractChange] = []
    /// Every pair of schemas compared (see SchemaPairs.swift), the pairs of named schemas by key, and the
    /// bodies and parameters of operations that use them.
    var pairs: [Pair] = []
    var pairIndex: [String: Int] = [:]
    var identityIndex: [String: Int] = [:]
    var identities = 0
    var uses: [Use] = []

    /// The named schema (reached through a `$ref`) that encloses a compared schema, and the length of the
    /// compared pointer at it: the origin of a change at `pointer` is `label` + what `pointer` adds.
    /// The label is built only when a change is recorded.
    struct OriginBase {
        let directory: String
        let file: URL
        let location: String
        let prefixLength: Int

        func text(at pointer: String) -> String {
            Collector.originLabel(directory: directory, file, location) + pointer.dropFirst(prefixLength)
        }
    }

    /// The revision's directory, with a trailing slash: origins name files relative to it.
    let revisionDirectory: String
    /// The paths of both descriptions' own files, asked of URL once (see ``path(of:)``).
    private let basePath: String
    private let revisionPath: String
    /// The security schemes the revision renamed (``securitySchemeRenames(base:revision:)``), worked out once
    /// for the diff rather than for every operation.
    let renamedSchemes: [String: String]

    init(base: OpenAPIDocument, revision: OpenAPIDocument) {
        self.base = base
        self.revision = revision
        revisionDirectory = revision.url.deletingLastPathComponent().path + "/"
        basePath = base.url.path
        revisionPath = revision.url.path
        renamedSchemes = Self.securitySchemeRenames(base: base, revision: revision)
    }

    /// `file.path`; for either description's own file, the path noted once. (Keys of schema pairs name their
    /// files, and URL.path decoded the URL again for each: 3 % of a diff, keel-bench contract.diff.)
    func path(of file: URL) -> String {
        file == base.url ? basePath : file == revision.url ? revisionPath : file.path
    }

    struct Place {
        var path: String?
        var method: String?
        var status: String?
    }

    /// A change outside schemas (an operation, a parameter, the document): no origin, unless it happens in a
    /// shared component (a parameter of `components/parameters` that became required).
    mutating func add(
        _ rule: String, _ severity: ContractChange.Severity, _ place: Place, _ pointer: String?, _ message: String,
        origin: String? = nil
    ) {
        changes.append(
            ContractChange(
                rule: rule, severity: severity, path: place.path, method: place.method?.uppercased(),
                status: place.status, pointer: pointer, message: message, origin: origin))
    }

    /// The origin of a parameter defined in `components/parameters` (by where its schema is); nil for one
    /// written in its operation or path.
    func origin(of parameter: OpenAPIDocument.Parameter) -> String? {
        guard let schema = parameter.schema, schema.location.hasSuffix("/schema") else { return nil }
        let location = String(schema.location.dropLast("/schema".count))
        guard Self.isShared(location) else { return nil }
        return Self.originLabel(directory: revisionDirectory, schema.file, location)
    }

    /// `file#pointer` of a schema of the revision, the file relative to the description's directory.
    static func originLabel(directory: String, _ file: URL, _ location: String) -> String {
        let path = file.path
        let name = path.hasPrefix(directory) ? String(path.dropFirst(directory.count)) : path
        return name + (location.hasPrefix("#") ? location : "#" + location)
    }

    /// The named schema enclosing a compared schema at `pointer`: itself when it is named (reached through a
    /// `$ref`), else the parent's; nil when no named schema encloses it.
    func origin(_ file: URL, _ location: String, at pointer: String, parent: OriginBase?) -> OriginBase? {
        location.isEmpty
            ? parent
            : OriginBase(directory: revisionDirectory, file: file, location: location, prefixLength: pointer.count)
    }

    // MARK: - Document, paths, operations

    mutating func compareDocuments() throws(ContractLoadError) {
        // Paths are matched by what goes on the wire: `/notes/{id}` and `/notes/{noteId}` are one path (the
        // template's parameter names are the description's own; its path parameters match by position).
        let basePaths = Set(objectMembers(base.root["paths"]).keys.map(Self.wirePath))
        let revisionPaths = Set(objectMembers(revision.root["paths"]).keys.map(Self.wirePath))
        let revisionOperations = Dictionary(
            try revision.operations().map { (Self.wirePath($0.path) + " " + $0.method, $0) },
            uniquingKeysWith: { first, _ in first })
        let baseOperationList = try base.operations()
        for operation in baseOperationList {
            let place = Place(path: operation.path, method: operation.method)
            let path = Self.wirePath(operation.path)
            guard revisionPaths.contains(path) else { continue }  // the whole path is reported below
            guard let revised = revisionOperations[path + " " + operation.method] else {
                add("api-operation-removed", .breaking, place, nil, "the operation is gone")
                continue
            }
            try compareOperation(operation, revised, place)
        }
        try emitUses()
        for path in objectMembers(base.root["paths"]).keys where !revisionPaths.contains(Self.wirePath(path)) {
            add("api-path-removed", .breaking, Place(path: path), nil, "the path is gone")
        }
        for path in objectMembers(revision.root["paths"]).keys where !basePaths.contains(Self.wirePath(path)) {
            add("api-path-added", .info, Place(path: path), nil, "a new path")
        }
        // A new method on a path that was there (found in an outside audit: it went unmentioned).
        let baseOperations = Set(baseOperationList.map { Self.wirePath($0.path) + " " + $0.method })
        for (key, operation) in revisionOperations
        where basePaths.contains(Self.wirePath(operation.path)) && !baseOperations.contains(key) {
            add(
                "api-operation-added", .info, Place(path: operation.path, method: operation.method), nil,
                "a new operation")
        }
        compareSecuritySchemes()
        compareVersions()
        changes.sort {
            ($0.path ?? "", $0.method ?? "", $0.status ?? "", $0.pointer ?? "", $0.rule) < (
                $1.path ?? "", $1.method ?? "", $1.status ?? "", $1.pointer ?? "", $1.rule
            )
        }
    }

    /// A security scheme both sides define, defined otherwise: what installed clients send (a bearer token in
    /// `Authorization`) is not what the server now reads (an API key in the query). Compared by what goes on
    /// the wire: `type`, and the `scheme` (case-insensitive), `in` and `name` (case-insensitive in a header) it
    /// uses.
    mutating func compareSecuritySchemes() {
        let old = objectMembers(base.root["components"]?["securitySchemes"])
        let new = objectMembers(revision.root["components"]?["securitySchemes"])
        func wire(_ value: JSONValue, in document: OpenAPIDocument) -> [String] {
            let resolved = (try? document.resolve(value))?.value ?? value
            // A header's name is matched in any case (RFC 9110); a query or cookie name is not.
            let place = resolved["in"]?.stringValue ?? ""
            let name = resolved["name"]?.stringValue ?? ""
            return [
                resolved["type"]?.stringValue ?? "", resolved["scheme"]?.stringValue?.lowercased() ?? "", place,
                place == "header" ? name.lowercased() : name,
            ]
        }
        for name in old.keys.sorted() {
            guard let oldScheme = old[name], let newScheme = new[name] else { continue }
            let (was, now) = (wire(oldScheme, in: base), wire(newScheme, in: revision))
            guard was == now else {
                func text(_ parts: [String]) -> String { parts.filter { !$0.isEmpty }.joined(separator: " ") }
                add(
                    "api-security-scheme-changed", .breaking, Place(), nil,
                    "security scheme \(name) changed from \(text(was)) to \(text(now)): what installed clients send is not what the server reads"
                )
                continue
            }
            // How installed clients get their credential: each OAuth flow they may use, and where its tokens
            // come from, or the OpenID Connect discovery document (found in an outside audit: not compared).
            let oldResolved = (try? base.resolve(oldScheme))?.value ?? oldScheme
            let newResolved = (try? revision.resolve(newScheme))?.value ?? newScheme
            if let oldURL = oldResolved["openIdConnectUrl"]?.stringValue,
                newResolved["openIdConnectUrl"]?.stringValue != oldURL
            {
                add(
                    "api-security-scheme-changed", .breaking, Place(), nil,
                    "security scheme \(name) now discovers OpenID Connect elsewhere than \(oldURL): installed clients ask the old one"
                )
            }
            let oldFlows = objectMembers(oldResolved["flows"])
            let newFlows = objectMembers(newResolved["flows"])
            for flow in oldFlows.keys.sorted() {
                guard let newFlow = newFlows[flow] else {
                    add(
                        "api-security-scheme-changed", .breaking, Place(), nil,
                        "security scheme \(name) no longer offers the OAuth \(flow) flow: installed clients that use it get no token"
                    )
                    continue
                }
                for endpoint in ["authorizationUrl", "tokenUrl"] {
                    let before = oldFlows[flow]?[endpoint]?.stringValue
                    guard let before, newFlow[endpoint]?.stringValue != before else { continue }
                    add(
                        "api-security-scheme-changed", .breaking, Place(), nil,
                        "security scheme \(name)'s OAuth \(flow) flow moved its \(endpoint) from \(before): installed clients ask the old one"
                    )
                }
            }
        }
    }

    /// Security schemes the revision renamed: a name only the revision has, whose definition (but for its
    /// description) is that of exactly one name only the base has, mapped to that name.
    static func securitySchemeRenames(base: OpenAPIDocument, revision: OpenAPIDocument) -> [String: String] {
        let old = objectMembers(base.root["components"]?["securitySchemes"])
        let new = objectMembers(revision.root["components"]?["securitySchemes"])
        func definition(_ value: JSONValue, in document: OpenAPIDocument) -> JSONValue {
            guard case .object(var members) = (try? document.resolve(value))?.value ?? value else { return value }
            members["description"] = nil
            return .object(members)
        }
        let gone = old.keys.filter { new[$0] == nil }.map { ($0, definition(old[$0]!, in: base)) }
        var renames: [String: String] = [:]
        for name in new.keys where old[name] == nil {
            let defined = definition(new[name]!, in: revision)
            let matches = gone.filter { $0.1 == defined }
            if matches.count == 1 { renames[name] = matches[0].0 }
        }
        return renames
    }

    mutating func compareVersions() {
        let baseVersion = base.contractVersion
        let revisionVersion = revision.contractVersion
        let hasBreaking = changes.contains { $0.severity == .breaking }
        // "No other change": no rule reported anything, and every file is the same but for info.version.
        if baseVersion != revisionVersion, changes.isEmpty, sameButForVersion() {
            add(
                "api-version-changed-without-changes", .info, Place(), nil,
                "info.version changed from \(baseVersion) to \(revisionVersion) with no other change")
        }
        if hasBreaking {
            let baseMajor = (try? ContractVersion(baseVersion))?.major
            let revisionMajor = (try? ContractVersion(revisionVersion))?.major
            if baseMajor == nil || revisionMajor == nil || baseMajor == revisionMajor {
                add(
                    "breaking-changes-without-major-version-bump", .warning, Place(), nil,
                    "breaking changes, but info.version went from \(baseVersion) to \(revisionVersion)")
            }
        }
    }

    /// Whether two media types name the same type: equal without their parameters, ignoring case
    /// (`Application/JSON; charset=utf-8` is `application/json`; RFC 9110 §8.3.1). Equal text, the common
    /// case, is decided without building anything.
    static func sameMediaType(_ a: String, _ b: String) -> Bool {
        a == b || mediaEssence(a) == mediaEssence(b)
    }

    /// `name` without its parameters, in lowercase.
    static func mediaEssence(_ name: String) -> String {
        let type = name.split(separator: ";", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        return type.trimmingCharacters(in: .whitespaces).lowercased()
    }

    /// Whether the two descriptions are the same files with the same content, but for `info.version`.
    func sameButForVersion() -> Bool {
        guard Self.withoutVersion(base.root) == Self.withoutVersion(revision.root),
            base.documents.count == revision.documents.count
        else { return false }
        let baseDirectory = base.url.deletingLastPathComponent().path
        let revisionDirectory = revision.url.deletingLastPathComponent().path
        for (file, value) in base.documents where file != base.url {
            let relative = String(file.path.dropFirst(baseDirectory.count))
            guard let other = revision.documents[URL(fileURLWithPath: revisionDirectory + relative)], other == value
            else { return false }
        }
        return true
    }

    /// A path template as the wire sees it: every `{name}` is `{}`.
    static func wirePath(_ template: String) -> String {
        if let ascii = asciiWirePath(template) { return ascii }
        var result = ""
        var inName = false
        for character in template {
            if inName {
                if character == "}" {
                    inName = false
                    result += "{}"
                }
            } else if character == "{" {
                inName = true
            } else {
                result.append(character)
            }
        }
        return inName ? template : result
    }

    /// ``wirePath(_:)`` of an ASCII template, by its bytes (no grapheme breaking, where every character is one
    /// byte); nil when the template is not ASCII.
    private static func asciiWirePath(_ template: String) -> String? {
        template.utf8.withContiguousStorageIfAvailable { bytes -> String? in
            guard bytes.allSatisfy({ $0 < 0x80 }) else { return nil }
            guard bytes.contains(UInt8(ascii: "{")) else { return template }
            var result: [UInt8] = []
            result.reserveCapacity(bytes.count)
            var inName = false
            for byte in bytes {
                if inName {
                    if byte == UInt8(ascii: "}") {
                        inName = false
                        result += [UInt8(ascii: "{"), UInt8(ascii: "}")]
                    }
                } else if byte == UInt8(ascii: "{") {
                    inName = true
                } else {
                    result.append(byte)
                }
            }
            return inName ? template : String(decoding: result, as: UTF8.self)
        } ?? nil
    }

    /// The names of `template`'s path parameters, in order.
    static func pathParameterNames(_ template: String) -> [String] {
        if let names = asciiPathParameterNames(template) { return names }
        var names: [String] = []
        var name: String?
        for character in template {
            if character == "{" {
                name = ""
            } else if character == "}", let complete = name {
                names.append(complete)
                name = nil
            } else if name != nil {
                name!.append(character)
            }
        }
        return names
    }

    /// ``pathParameterNames(_:)`` of an ASCII template, by its bytes; nil when the template is not ASCII.
    private static func asciiPathParameterNames(_ template: String) -> [String]? {
        template.utf8.withContiguousStorageIfAvailable { bytes -> [String]? in
            guard bytes.allSatisfy({ $0 < 0x80 }) else { return nil }
            var names: [String] = []
            var nameStart: Int?
            for (index, byte) in bytes.enumerated() {
                if byte == UInt8(ascii: "{") {
                    nameStart = index + 1
                } else if byte == UInt8(ascii: "}"), let start = nameStart {
                    names.append(String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self))
                    nameStart = nil
                }
            }
            return names
        } ?? nil
    }

    /// The document with `info.version` removed (to tell "only the version changed").
    static func withoutVersion(_ root: JSONValue) -> JSONValue {
        guard case .object(var object) = root, case .object(var info) = object["info"] ?? .null else { return root }
        info["version"] = nil
        object["info"] = .object(info)
        return .object(object)
    }

    mutating func compareOperation(_ old: OpenAPIDocument.Operation, _ new: OpenAPIDocument.Operation, _ place: Place)
        throws(ContractLoadError)
    {
        // Parameters (path-level ones merged with the operation's own by the typed view), matched as the wire
        // sees them: a header's name in any case is one header, and a path parameter is its place in the
        // template (renaming `{id}` to `{noteId}` changes no request).
        func match(_ parameter: OpenAPIDocument.Parameter, in operation: OpenAPIDocument.Operation) -> String {
            switch parameter.location {
            case .header: return "header:" + parameter.name.lowercased()
            case .path:
                guard let index = Self.pathParameterNames(operation.path).firstIndex(of: parameter.name) else {
                    return "path:" + parameter.name
                }
                return "path:#\(index)"
            default: return key(parameter)
            }
        }
        func key(_ parameter: OpenAPIDocument.Parameter) -> String {
            "\(parameter.location.rawValue):\(parameter.name)"
        }
        let oldParameters = Dictionary(
            old.parameters.map { (match($0, in: old), $0) }, uniquingKeysWith: { _, last in last })
        let newKeys = Set(new.parameters.map { match($0, in: new) })
        // A parameter the server no longer reads (removed, or moved to another place — `query` to `header`):
        // what installed clients send there is ignored without a word, which a warning makes someone decide.
        for parameter in old.parameters where !newKeys.contains(match(parameter, in: old)) {
            let moved = new.parameters.first { $0.name == parameter.name && $0.location != parameter.location }
            add(
                "request-parameter-removed", .warning, place, nil,
                "parameter \(key(parameter)) is no longer read"
                    + (moved.map {
                        ": it moved to \($0.location.rawValue) (installed clients still send it where it was)"
                    }
                        ?? ""))
        }
        for parameter in new.parameters {
            let name = key(parameter)
            guard let previous = oldParameters[match(parameter, in: new)] else {
                // A shared parameter added to many operations is one root cause (found in an outside audit:
                // three operations gaining one `components/parameters` entry were three ungrouped findings).
                add(
                    parameter.required ? "new-required-request-parameter" : "new-optional-request-parameter",
                    parameter.required ? .breaking : .info,
                    place, nil, "\(parameter.required ? "required" : "optional") parameter \(name) added",
                    origin: origin(of: parameter))
                continue
            }
            if parameter.required, !previous.required {
                add(
                    "request-parameter-became-required", .breaking, place, nil, "parameter \(name) is now required",
                    origin: origin(of: parameter))
            }
            // Written as a media type (`content`) instead of by style, or the other way, or as another media type:
            // installed clients write it the old way.
            let sameEncoding: Bool =
                switch (parameter.contentType, previous.contentType) {
                case (nil, nil): true
                case (let now?, let was?): Self.sameMediaType(now, was)  // by what they name, as for bodies
                default: false
                }
            if !sameEncoding {
                add(
                    "request-parameter-content-type-changed", .breaking, place, nil,
                    "parameter \(name) is now written \(parameter.contentType.map { "as \($0)" } ?? "by its style"), not \(previous.contentType.map { "as \($0)" } ?? "by its style"): installed clients write it the old way",
                    origin: origin(of: parameter))
            }
            // How the value is written on the wire (`style`, `explode`): installed clients write it the old way.
            // It matters for arrays and objects anywhere, and for any value in the path (label and matrix add
            // prefixes); a primitive in the query or a header is written the same in every style.
            // (Only looked into when either side writes `style` or `explode`: matched parameters are in the same
            // place, so their defaults agree, and most parameters write neither.)
            let declaresWriting =
                parameter.style != nil || parameter.explode != nil || previous.style != nil || previous.explode != nil
            let structured =
                declaresWriting
                && (parameter.schema.flatMap { try? revision.resolve($0.value, in: $0.file) }.map {
                    !Set(SchemaReading.types($0.value)).isDisjoint(with: ["array", "object"])
                } ?? false)
            if declaresWriting, structured || parameter.location == .path {
                if parameter.effectiveStyle != previous.effectiveStyle {
                    add(
                        "request-parameter-style-changed", .breaking, place, nil,
                        "parameter \(name) is now written in style \(parameter.effectiveStyle), not \(previous.effectiveStyle): installed clients write it the old way"
                    )
                } else if structured, parameter.effectiveExplode != previous.effectiveExplode {
                    add(
                        "request-parameter-explode-changed", .breaking, place, nil,
                        "parameter \(name) is now written with explode \(parameter.effectiveExplode): installed clients write it the old way"
                    )
                }
            }
            if let oldSchema = previous.schema, let newSchema = parameter.schema {
                try use(
                    oldSchema, newSchema, place, direction: .request,
                    role: .requestRoot(rulePrefix: "request-parameter"), subject: "parameter \(name)")
            }
        }

        // Request body. Media types are matched by what they name (`application/json; charset=utf-8` is
        // `application/json`): parameters and case do not make another type.
        if let newBody = new.requestBody {
            if let oldBody = old.requestBody {
                for newMedia in newBody.content {
                    guard
                        let oldSchema = oldBody.content.first(where: { Self.sameMediaType($0.name, newMedia.name) })?
                            .schema,
                        let newSchema = newMedia.schema
                    else { continue }
                    try use(
                        oldSchema, newSchema, place, direction: .request,
                        role: .requestRoot(rulePrefix: "request-body"), subject: "request body (\(newMedia.name))")
                }
                for oldMedia in oldBody.content
                where !newBody.content.contains(where: {
                    Self.sameMediaType($0.name, oldMedia.name)
                }) {
                    add(
                        "request-media-type-removed", .breaking, place, nil,
                        "request media type \(oldMedia.name) is no longer accepted")
                }
                if newBody.required, !oldBody.required {
                    add("request-body-became-required", .breaking, place, nil, "the request body is now required")
                }
            } else if newBody.required {
                add("request-body-required-added", .breaking, place, nil, "a required request body was added")
            }
        } else if old.requestBody != nil {
            // What installed clients send is no longer read: the server may refuse it, or drop it unsaved.
            add(
                "request-body-removed", .warning, place, nil,
                "the request body is no longer read: what installed clients send may be refused or ignored")
        }

        // Responses: what the client reads, each response of the base with the one of the revision that now
        // answers what clients read by it (``responsePairs(_:_:base:)``: a `201` answered by a `2XX` is compared).
        let baseStatuses = StatusKeys(old.responses)
        let (responsePairs, goneSuccesses) = Self.responsePairs(old.responses, new.responses, base: baseStatuses)
        for oldResponse in goneSuccesses {
            var responsePlace = place
            responsePlace.status = oldResponse.status
            add(
                "response-success-status-removed", .breaking, responsePlace, nil,
                "success response \(oldResponse.status) is gone")
        }
        for (oldResponse, newResponse, status) in responsePairs {
            var responsePlace = place
            responsePlace.status = status
            // Header fields (names in any case): one promised in every response and now gone, or no longer
            // promised, breaks a client that reads it; an optional one gone may still be read where present.
            for oldHeader in oldResponse.headers {
                let name = oldHeader.name.lowercased()
                guard let newHeader = newResponse.headers.first(where: { $0.name.lowercased() == name }) else {
                    add(
                        oldHeader.required ? "response-required-header-removed" : "response-optional-header-removed",
                        oldHeader.required ? .breaking : .warning, responsePlace, nil,
                        "\(oldHeader.required ? "required" : "optional") response header \(oldHeader.name) is gone")
                    continue
                }
                if oldHeader.required, !newHeader.required {
                    add(
                        "response-header-became-optional", .breaking, responsePlace, nil,
                        "response header \(oldHeader.name) is no longer sent in every response")
                }
                if let oldSchema = oldHeader.schema, let newSchema = newHeader.schema {
                    try use(
                        oldSchema, newSchema, responsePlace, direction: .response, role: .responseHeader,
                        subject: "response header \(newHeader.name)")
                }
            }
            for oldMedia in oldResponse.content {
                guard let newMedia = newResponse.content.first(where: { Self.sameMediaType($0.name, oldMedia.name) })
                else {
                    add(
                        "response-media-type-removed", .breaking, responsePlace, nil,
                        "response media type \(oldMedia.name) is gone")
                    continue
                }
                if let oldSchema = oldMedia.schema, let newSchema = newMedia.schema {
                    try use(
                        oldSchema, newSchema, responsePlace, direction: .response, role: .responseBody,
                        subject: "the response body")
                } else if let oldSchema = oldMedia.schema, newMedia.schema == nil,
                    !Self.admitsAnything(oldSchema.value)
                {
                    // No schema: any body may now come where old clients decode one shape (found in an outside
                    // audit: a schema on one side only was not compared).
                    add(
                        "response-media-type-schema-removed", .breaking, responsePlace, nil,
                        "the response body (\(oldMedia.name)) may now be anything: its schema is gone")
                }
            }
        }

        compareAddedStatuses(new.responses, base: baseStatuses, place)

        // Security: a client satisfies one alternative (a set of schemes; empty = anonymous). It keeps
        // working if some new alternative asks for no more than what it sends.
        func alternatives(_ security: [[String]]?) -> [Set<String>] {
            guard let security, !security.isEmpty else { return [[]] }
            return security.map(Set.init)
        }
        // A scheme renamed with its definition unchanged is the same credential on the wire (found in an outside
        // audit: `bearer` renamed `bearerAuth` was reported as new security).
        let renamed = renamedSchemes
        let newAlternatives = alternatives(new.security).map { Set($0.map { renamed[$0] ?? $0 }) }
        for sent in alternatives(old.security) where !newAlternatives.contains(where: { $0.isSubset(of: sent) }) {
            let required = newAlternatives.map {
                $0.isEmpty ? "anonymous access" : $0.sorted().joined(separator: " + ")
            }.joined(separator: " or ")
            add(
                "api-security-added", .breaking, place, nil,
                "clients that send \(sent.isEmpty ? "no credentials" : sent.sorted().joined(separator: " + ")) are refused: the operation now requires \(required)"
            )
        }
        // Scopes: an alternative installed clients satisfy by its schemes, but now asking more of one of them (an
        // OAuth scope their tokens were never granted). Found in an outside audit: scopes were not compared.
        if let oldScopes = old.securityScopes,
            let newScopes = new.securityScopes.map({ alternatives in
                // Named as the base names them (a renamed scheme is the same scheme: its scopes are compared).
                alternatives.map { Dictionary($0.map { (renamed[$0.key] ?? $0.key, $0.value) }) { $0 + $1 } }
            })
        {
            for sent in oldScopes {
                let satisfying = newScopes.filter { Set($0.keys).isSubset(of: Set(sent.keys)) }
                guard let first = satisfying.first else { continue }  // api-security-added said it
                let enough = satisfying.contains { asked in
                    asked.allSatisfy { scheme, scopes in Set(scopes).isSubset(of: Set(sent[scheme] ?? [])) }
                }
                guard !enough else { continue }
                let missing = first.flatMap { scheme, scopes in
                    scopes.filter { !(sent[scheme] ?? []).contains($0) }.map { "\(scheme): \($0)" }
                }.sorted()
                add(
                    "api-security-scope-added", .breaking, place, nil,
                    "clients granted \(sent.isEmpty ? "no scopes" : sent.keys.sorted().map { "\($0) [\((sent[$0] ?? []).joined(separator: ", "))]" }.joined(separator: " + ")) are refused: the operation now asks for \(missing.joined(separator: ", "))"
                )
            }
        }
        if new.deprecated, !old.deprecated {
            add("api-operation-deprecated", .info, place, nil, "the operation is deprecated")
        }
    }

    /// Statuses the revision answers an operation with that installed clients were never written for
    /// (an API owner's request: a new status went unmentioned, though a removed success is breaking).
    ///
    /// A status is new unless the base declared a response installed clients read it by
    /// (``StatusKeys/reader(of:)``, which ``responsePairs(_:_:base:)`` pairs responses by too): the same key (a
    /// range in any case, `4xx` is `4XX`), its range (`404` under `4XX`), or `default` for one that is not a
    /// success. `default` does not cover a new success: a client reads any 2xx as a success (Keel's
    /// `HTTPClient` returns it as a `Reply`), with the success body it knows, never by `default`. A covered
    /// status is not reported: the answer is not new to clients, only documented. Keys that name no status
    /// (`x-` extensions) are skipped. A response of `components/responses` added to several operations is one
    /// root cause, its origin.
    ///
    /// Severities, for an installed client (oasdiff has the same two ids, both info; an earlier oasdiff rated a
    /// new success an error):
    /// - `response-non-success-status-added` is info: an installed client reads a failure it does not know by
    ///   its class, as it must read any status the server may send (MOB-API-003: validation, conflict, rate
    ///   limit, technical failure), so the user sees the failure it is; a new failure status usually declares
    ///   what the server already answered (1.8's 413 and 503). Nothing to decide.
    /// - `response-success-status-added` is a warning: the installed client cannot tell the new success from
    ///   the one it knows. It reads the body as the one it knows (a 202 with a job handle where a 200 carried
    ///   the note, a 204 with none) and acts on it as that outcome: a mutation taken as applied that the
    ///   server only queued. Whether installed clients ever get it (a server may send it only to clients that
    ///   ask, `Prefer: respond-async`) the description does not say, so it is not breaking; someone must
    ///   decide, as for the other warnings, and `--fail-on warning` stops for that.
    mutating func compareAddedStatuses(_ new: [OpenAPIDocument.Response], base: StatusKeys, _ place: Place) {
        for response in new {
            guard Self.statusKey(response.status) != nil, base.reader(of: response.status) == nil else { continue }
            var responsePlace = place
            responsePlace.status = response.status
            let origin = response.file.flatMap { file in
                Self.isShared(response.location)
                    ? Self.originLabel(directory: revisionDirectory, file, response.location) : nil
            }
            if response.isSuccess {
                add(
                    "response-success-status-added", .warning, responsePlace, nil,
                    "success response \(response.status) is new: installed clients were not written for it and may read it as the success they know",
                    origin: origin)
            } else {
                add(
                    "response-non-success-status-added", .info, responsePlace, nil,
                    "non-success response \(response.status) is new: installed clients handle it by its class, as any answer they were not written for",
                    origin: origin)
            }
        }
    }

    /// The responses of the base paired with the revision's for comparison (headers, media types, schemas),
    /// and the successes of the base the revision no longer answers (`response-success-status-removed`).
    /// Statuses are matched as ``compareAddedStatuses(_:base:_:)`` matches them, from the other side.
    ///
    /// - A response of the base is paired with the revision's response installed clients would read its
    ///   statuses by (``StatusKeys/reader(of:)``): the same key (a range in any case: `2xx` is `2XX`), else its
    ///   range (`201` under `2XX`), else `default` for a status that is not a success. Never `default` for a
    ///   success: a client reads any 2xx as a success with the body it knows, not by `default`, so a `201`
    ///   answered only by `default` is gone. The findings of the pair are at the base's status (`201`).
    /// - Compared in the one direction that can hurt a client reading responses: the base's response is what
    ///   it expects, the revision's what it now gets. After `201` → `2XX`, a client reading `201` as a `Note`
    ///   may get any body the `2XX` describes, so the `2XX` body must hold nothing a `Note` decoder refuses
    ///   (a `Job` instead is breaking); that the wider range may also answer statuses it was not written for
    ///   (`202`) is ``compareAddedStatuses(_:base:_:)``'s warning, not a removal.
    /// - The other way, a response of the base replaced by narrower ones (`2XX` by `200` and `201`, `default` by
    ///   `500`, its key gone from the revision): each of them is paired with it, the findings at the
    ///   narrower status (`200`). The server promises less — clients get a subset of the statuses they were
    ///   written for, not breaking by itself — but what they get at `200` must still be what they read as
    ///   `2XX`. A status the revision adds under a range or `default` it still declares is not compared: as
    ///   for ``compareAddedStatuses(_:base:_:)``, it is documented, not new.
    /// - Gone: an exact success (`201`) nothing in the revision answers, as before. A success range (`2XX`)
    ///   only when the revision answers no status of its class: a range promises no particular status, so
    ///   `2XX` → `200` leaves clients a subset of what they read (the `200` body compared with the `2XX` one).
    ///   A failure nothing answers is not reported: installed clients read an unknown failure by its class.
    static func responsePairs(
        _ old: [OpenAPIDocument.Response], _ new: [OpenAPIDocument.Response], base: StatusKeys
    ) -> (
        pairs: [(old: OpenAPIDocument.Response, new: OpenAPIDocument.Response, status: String)],
        gone: [OpenAPIDocument.Response]
    ) {
        let revision = StatusKeys(new)
        var pairs: [(old: OpenAPIDocument.Response, new: OpenAPIDocument.Response, status: String)] = []
        var gone: [OpenAPIDocument.Response] = []
        for (index, oldResponse) in old.enumerated() {
            if let answer = revision.reader(of: oldResponse.status) {
                pairs.append((oldResponse, new[answer], oldResponse.status))
            } else if oldResponse.isSuccess {
                // A range promises no particular status: one of its codes still answered is no removal.
                if let key = base.keys[index], key.hasSuffix("XX"), revision.answersClass(of: key) { continue }
                gone.append(oldResponse)
            }
        }
        for (index, newResponse) in new.enumerated() {
            guard let key = revision.keys[index], !base.keys.contains(key),
                let readBy = base.reader(of: newResponse.status), !revision.keys.contains(base.keys[readBy])
            else { continue }
            pairs.append((old[readBy], newResponse, newResponse.status))
        }
        return (pairs, gone)
    }

    /// The keys of an operation's responses as installed clients read them (``statusKey(_:)``), in
    /// declaration order.
    struct StatusKeys {
        let statuses: [String]
        let keys: [String?]

        init(_ responses: [OpenAPIDocument.Response]) {
            statuses = responses.map(\.status)
            keys = statuses.map(Collector.statusKey)
        }

        /// The index of the response installed clients read `status` by: the same key (a range in any case,
        /// `4xx` is `4XX`), else its range (`404` under `4XX`), else `default` for a status that is not a
        /// success (a client reads any 2xx as a success, not by `default`). A key that names no status (an
        /// `x-` extension) is only itself.
        func reader(of status: String) -> Int? {
            guard let key = Collector.statusKey(status) else { return statuses.firstIndex(of: status) }
            if let same = keys.firstIndex(of: key) { return same }
            if key != "default", !key.hasSuffix("XX"), let range = keys.firstIndex(of: String(key.prefix(1)) + "XX") {
                return range
            }
            if !key.hasPrefix("2"), let fallback = keys.firstIndex(of: "default") { return fallback }
            return nil
        }

        /// Whether a response answers a status of the class of `range` (`2XX`): the range or one of its codes.
        func answersClass(of range: String) -> Bool { keys.contains { $0?.first == range.first } }
    }

    /// A response key as installed clients read it: `default`, a status code (`404`) or a range in capitals
    /// (`4xx` is `4XX`), of the classes HTTP defines (1xx to 5xx, RFC 9110 §15); nil for a key that names no
    /// status (an `x-` extension).
    static func statusKey(_ key: String) -> String? {
        if key == "default" { return key }
        let upper = key.uppercased()
        let digits = Array(upper.utf8)
        guard digits.count == 3, (UInt8(ascii: "1")...UInt8(ascii: "5")).contains(digits[0]) else { return nil }
        let rest = digits.dropFirst()
        guard rest.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) || upper.hasSuffix("XX")
        else { return nil }
        return upper
    }

    // MARK: - Schemas

    /// The facts about a schema that the rules compare, with 3.0 `nullable` and 3.1 type arrays unified.
    struct Shape {
        var types: Set<String>
        var nullable: Bool
        var properties: JSONObject
        var required: Set<String>
        var enumValues: [JSONValue]?
        var isExtensibleEnum: Bool
        var items: JSONValue?
        var value: JSONValue
        /// Members that come from a `$ref`'d `allOf` part: the part's location (in ``memberFiles``' file, or
        /// the schema's own). A change to such a member happens in the part, and its origin says so.
        var memberParts: [String: String] = [:]
        /// Members written in another file than the schema (an `allOf` part there): the file their schemas
        /// and `$ref`s are read in.
        var memberFiles: [String: URL] = [:]

        /// The file member `name`'s schema is read in: its part's, or `file` (the schema's own).
        func file(of name: String, else file: URL) -> URL { memberFiles[name] ?? file }
    }

    func shape(_ value: JSONValue, in file: URL, of document: OpenAPIDocument) -> Shape {
        let isOpenAPI30 = document.isOpenAPI30
        var types = Set(SchemaReading.types(value))
        let nullable = SchemaReading.admitsNull(value, openAPI30: isOpenAPI30)
        types.remove("null")
        var enumValues: [JSONValue]?
        var extensible = false
        if case .array(let list) = value["enum"] ?? .null {
            enumValues = list.filter { $0 != .null }
            extensible = value["x-extensible-enum"] == .bool(true)
        } else if let constant = SchemaReading.constMarker(value) {
            enumValues = [constant]  // a marker: an enum of one value, as the generator reads it
        }
        if case .array(let list) = value["x-extensible-enum"] ?? .null {
            enumValues = list
            extensible = true
            if types.isEmpty { types = ["string"] }
        }
        // The open-enum pattern: anyOf [{type: string, enum: [...]}, {type: string}], in either order.
        if let known = Self.openEnumValues(value, in: file, of: document) {
            enumValues = known
            extensible = true
            types = ["string"]
        }
        var required: Set<String> = []
        if case .array(let list) = value["required"] ?? .null { required = Set(list.compactMap { $0.stringValue }) }
        var properties = objectMembers(value["properties"])
        // `allOf` parts are one object, as the generator makes them one struct: their members and `required`
        // are the schema's own (parts in this file, `$ref`s followed; a member defined by two parts is both
        // definitions, ``conjunction(_:_:references:)``).
        var memberParts: [String: String] = [:]
        var memberFiles: [String: URL] = [:]
        var merged: Set<String> = []
        Self.mergeAllOf(
            value, in: file, of: document, into: &properties, required: &required, types: &types,
            parts: &memberParts, files: &memberFiles, root: file, merged: &merged, part: nil, depth: 0)
        return Shape(
            types: types, nullable: nullable, properties: properties, required: required,
            enumValues: enumValues, isExtensibleEnum: extensible, items: value["items"], value: value,
            memberParts: memberParts, memberFiles: memberFiles)
    }

    /// Adds the members, `required` names and object type of `value`'s `allOf` parts, in whatever file they
    /// are (a member from another file than `root` is noted in `files`, where its schema is read). A named
    /// part already merged (`merged`, by file and location) is not walked again: parts shared by several
    /// branches would otherwise be walked once per path to them, exponentially many.
    static func mergeAllOf(
        _ value: JSONValue, in file: URL, of document: OpenAPIDocument, into properties: inout JSONObject,
        required: inout Set<String>, types: inout Set<String>, parts origins: inout [String: String],
        files: inout [String: URL], root: URL, merged: inout Set<String>, part enclosing: String?, depth: Int
    ) {
        guard depth < 16, case .array(let parts) = value["allOf"] ?? .null else { return }
        for part in parts {
            guard let resolved = try? document.resolve(part, in: file) else { continue }
            if !resolved.location.isEmpty {
                guard merged.insert(resolved.file.path + "#" + resolved.location).inserted else { continue }
            }
            let schema = resolved.value
            // A part in another file is located in it: its origin and its members' `$ref`s are read there.
            let location = resolved.location.isEmpty ? enclosing : resolved.location
            for (name, member) in objectMembers(schema["properties"]) {
                guard let existing = properties[name] else {
                    properties[name] = member
                    if let location { origins[name] = location }
                    if resolved.file != root { files[name] = resolved.file }
                    continue
                }
                // Defined again by another part: a value must meet both (found in an outside audit: a part that
                // only constrained a member — `maxLength: 5` — was not seen). Keywords the first definition
                // lacks are added; of two numeric bounds the tighter holds. (From a part in another file than
                // the first definition's, keywords holding `$ref`s stay out: they would be read in that file.)
                let sameFile = resolved.file == (files[name] ?? root)
                properties[name] = Self.conjunction(existing, member, references: sameFile)
            }
            if case .array(let list) = schema["required"] ?? .null {
                required.formUnion(list.compactMap { $0.stringValue })
            }
            if SchemaReading.types(schema).contains("object") || schema["properties"] != nil { types.insert("object") }
            mergeAllOf(
                schema, in: resolved.file, of: document, into: &properties, required: &required, types: &types,
                parts: &origins, files: &files, root: root, merged: &merged, part: location, depth: depth + 1)
        }
    }

    /// `first` with what `second` adds to it, for a member two `allOf` parts define: keywords `first` lacks,
    /// and the tighter of two numeric bounds. (Two schemas that are not objects: `first`.)
    static func conjunction(_ first: JSONValue, _ second: JSONValue, references: Bool = true) -> JSONValue {
        guard case .object(var merged) = first, case .object(let more) = second else { return first }
        for (keyword, value) in more {
            if !references, keyword == "$ref" || containsReference(value) { continue }
            guard let present = merged[keyword] else {
                merged[keyword] = value
                continue
            }
            guard case .number(let a) = present, case .number(let b) = value else { continue }
            if ["maximum", "exclusiveMaximum", "maxLength", "maxItems", "maxProperties"].contains(keyword) {
                merged[keyword] = .number(min(a, b))
            } else if ["minimum", "exclusiveMinimum", "minLength", "minItems", "minProperties"].contains(keyword) {
                merged[keyword] = .number(max(a, b))
            }
        }
        return .object(merged)
    }

    /// Whether a member's schema says `keyword: true` (`readOnly`, `writeOnly`): on itself, through `$ref`s, or
    /// on a single-part `allOf` wrapper's part (as the generator reads it).
    static func isMarked(
        _ keyword: String, _ schema: JSONValue, in file: URL, of document: OpenAPIDocument, depth: Int = 0
    )
        -> Bool
    {
        guard depth < 32 else { return false }
        if schema[keyword] == .bool(true) { return true }
        if case .string = schema["$ref"] ?? .null {
            guard let target = try? document.resolve(schema, in: file) else { return false }
            return isMarked(keyword, target.value, in: target.file, of: document, depth: depth + 1)
        }
        if case .array(let parts) = schema["allOf"] ?? .null, parts.count == 1 {
            return isMarked(keyword, parts[0], in: file, of: document, depth: depth + 1)
        }
        return false
    }

    /// Whether comparing two schemas can report nothing, decided without building their shapes: they are
    /// equal JSON, hold no `$ref` (a reference is followed in its own document, so equal text can still
    /// name different schemas) and both documents read them the same way (3.0's `nullable` is not 3.1's).
    static func cannotDiffer(_ old: JSONValue, _ new: JSONValue, sameDialect: Bool) -> Bool {
        sameDialect && old.isEqual(to: new, withoutMember: "$ref")
    }

    /// A union's variants as a client tells them apart.
    struct Union {
        struct Variant {
            /// How a client tells it apart: `kind=circle`, `string`, `integer enum [1, 2]`, `object`.
            var name: String
            /// Its index in the union; nil for a discriminator value whose mapping names no variant of it.
            var index: Int?
            var schema: JSONValue?
        }

        /// `oneOf` or `anyOf`.
        var keyword: String
        var variants: [Variant]
        var names: [String] { variants.map(\.name) }
    }

    /// A union's variants, null excluded: with a discriminator, by its wire values (`kind=circle`; a variant
    /// without a mapping answers to its component's name); without one, by the kind of JSON value each variant
    /// holds (`string`, `integer enum [1, 2]`, `object`), with `$ref`s followed — so renaming, reordering or
    /// annotating variants is no change. Nil for a schema that is not a union (or is the open-enum pattern,
    /// compared as an enum).
    func variants(of schema: JSONValue, in file: URL, document: OpenAPIDocument) -> Union? {
        let keyword = schema["oneOf"] != nil ? "oneOf" : "anyOf"
        guard case .array(let alternatives) = schema[keyword] ?? .null else { return nil }
        if keyword == "anyOf", Self.openEnumValues(schema, in: file, of: document) != nil { return nil }
        let real = alternatives.enumerated().filter { !SchemaReading.isNullOnly($0.element) }
        guard let property = schema["discriminator"]?["propertyName"]?.stringValue else {
            return Union(
                keyword: keyword,
                variants: real.map {
                    Union.Variant(
                        name: kind(of: $0.element, in: file, document: document), index: $0.offset,
                        schema: $0.element)
                })
        }
        // Each `$ref` variant by the key of its target.
        var byTarget: [String: (Int, JSONValue)] = [:]
        for (index, alternative) in real {
            guard case .string(let reference) = alternative["$ref"] ?? .null else { continue }
            let (targetFile, pointer) = Loader.split(reference, relativeTo: file)
            byTarget[targetFile.path + "#" + pointer] =
                byTarget[targetFile.path + "#" + pointer] ?? (index, alternative)
        }
        var values: [Union.Variant] = []
        var mapped: Set<String> = []
        if case .object(let mapping) = schema["discriminator"]?["mapping"] ?? .null {
            for (value, target) in mapping {
                var variant: (Int, JSONValue)?
                if let reference = target.stringValue {
                    let (targetFile, pointer) = Loader.split(
                        SchemaReading.mappingReference(reference), relativeTo: file)
                    mapped.insert(targetFile.path + "#" + pointer)
                    variant = byTarget[targetFile.path + "#" + pointer]
                }
                values.append(Union.Variant(name: "\(property)=\(value)", index: variant?.0, schema: variant?.1))
            }
        }
        for (index, alternative) in real {
            guard case .string(let reference) = alternative["$ref"] ?? .null else { continue }
            let (targetFile, pointer) = Loader.split(reference, relativeTo: file)
            if !mapped.contains(targetFile.path + "#" + pointer), let name = JSONPointer.tokens(pointer)?.last {
                values.append(Union.Variant(name: "\(property)=\(name)", index: index, schema: alternative))
            }
        }
        return Union(keyword: keyword, variants: values)
    }

    /// The kind of JSON value a variant holds: its type, and whether it is an enum (a closed set of values) or
    /// a const. The values themselves are not part of it: a variant whose enum gains or loses a value is the
    /// same variant, paired with its counterpart and compared by the enum rules (which know an extensible
    /// enum from a closed one) — not a variant removed and another added.
    func kind(of variant: JSONValue, in file: URL, document: OpenAPIDocument) -> String {
        guard let schema = try? document.resolve(variant, in: file).value else { return variant.description }
        var types = SchemaReading.types(schema).filter { $0 != "null" }.sorted()
        if schema["type"] == nil, schema["properties"] != nil { types = ["object"] }
        var text = types.isEmpty ? "any value" : types.joined(separator: " or ")
        if case .array = schema["enum"] ?? .null { text += " enum" }
        if let constant = schema["const"] { text += " const \(constant)" }
        return text
    }

    /// The known values of the open-enum pattern, the known values possibly behind a `$ref`
    /// (`anyOf: [{type: string}, {$ref: ModelIDs}]`).
    static func openEnumValues(_ schema: JSONValue, in file: URL, of document: OpenAPIDocument) -> [JSONValue]? {
        SchemaReading.openEnum(schema) { try? document.resolve($0, in: file).value }?.values
    }

    /// New variants in `new` that `old` lacks: by name when the names are wire values, by count otherwise
    /// (two variants of the same kind are told apart by their shapes, which the other rules compare).
    func addedVariants(_ old: [String], _ new: [String], discriminated: Bool) -> [String] {
        if discriminated { return new.filter { !old.contains($0) } }
        var remaining = old
        var added: [String] = []
        for name in new {
            if let index = remaining.firstIndex(of: name) { remaining.remove(at: index) } else { added.append(name) }
        }
        return added
    }

    static func kebab(_ camel: String) -> String {
        camel.reduce(into: "") { text, character in
            if character.isUppercase { text += "-" + character.lowercased() } else { text.append(character) }
        }
    }
}

/// The members of an object value (empty for anything else), without copying them.
func objectMembers(_ value: JSONValue?) -> JSONObject {
    guard case .object(let object) = value ?? .null else { return JSONObject() }
    return object
}
