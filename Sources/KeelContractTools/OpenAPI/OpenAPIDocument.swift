public import Foundation
public import KeelContract
public import KeelCore

/// An OpenAPI 3.0 or 3.1 description loaded from YAML or JSON, with `$ref`s resolvable across files.
///
/// The raw tree is kept as ``JSONValue``; typed views (operations, parameters, responses) are read from
/// it on demand, and every `$ref` — internal (`#/components/schemas/Note`) or to a file in the same
/// directory tree (`common.yaml#/components/schemas/Error`) — was checked to resolve when loading.
public struct OpenAPIDocument: Sendable {
    /// The file the description was loaded from.
    public let url: URL
    /// The description's root.
    public let root: JSONValue
    /// `openapi`: "3.0.x" or "3.1.x".
    public let openAPIVersion: String
    /// `info.version`: the contract version.
    public let contractVersion: String
    /// Every document loaded, by absolute file URL (the root and the files it references).
    let documents: [URL: JSONValue]
    /// Where the `#…` references of each file lead, as the loader found them when it checked them (only
    /// for files read from YAML, whose references are listed while reading): `resolve` looks a reference up
    /// instead of walking its pointer again. A reference not in it is walked.
    let localTargets: [URL: [String: Loader.Target]]
    /// `localTargets` of the description's own file, where nearly every reference is.
    private let rootTargets: [String: Loader.Target]

    /// Whether this is OpenAPI 3.0 (where `nullable` means "or null").
    public var isOpenAPI30: Bool { openAPIVersion.hasPrefix("3.0.") }

    /// Loads `url` and everything it references.
    ///
    /// - Throws: ``ContractLoadError`` naming the file and the location: unreadable, not YAML/JSON, no
    ///   `openapi` field, an unsupported version, or a dangling `$ref`.
    public static func load(from url: URL) throws(ContractLoadError) -> OpenAPIDocument {
        let file = url.standardizedFileURL
        var loader = Loader(rootDirectory: file.deletingLastPathComponent())
        let root = try loader.document(at: file, referencedFrom: nil)
        return try make(root: root, url: file, name: url.path, loader: &loader)
    }

    /// Loads several descriptions at the same time, each on its own thread (`keel contract diff` loads
    /// both sides this way), and returns them in the order of `urls`.
    ///
    /// - Throws: the ``ContractLoadError`` of the first description in `urls` that cannot be loaded.
    public static func load(from urls: [URL]) throws(ContractLoadError) -> [OpenAPIDocument] {
        let results = Locked<[Result<OpenAPIDocument, ContractLoadError>?]>(Array(repeating: nil, count: urls.count))
        DispatchQueue.concurrentPerform(iterations: urls.count) { index in
            let result = Result { () throws(ContractLoadError) in try load(from: urls[index]) }
            results.withLock { $0[index] = result }
        }
        var documents: [OpenAPIDocument] = []
        for result in results.withLock({ $0 }) {
            documents.append(try result!.get())
        }
        return documents
    }

    /// Parses description text (YAML or JSON) that has no file; references to other files are errors.
    public static func parse(_ text: String, name: String = "description.yaml") throws(ContractLoadError)
        -> OpenAPIDocument
    {
        let directory = URL(fileURLWithPath: "/nonexistent-keel-inline", isDirectory: true)
        let url = directory.appendingPathComponent(name)
        var loader = Loader(rootDirectory: directory)
        let root = try Loader.parse(Array(text.utf8), file: name)
        loader.documents[url] = root
        return try make(root: root, url: url, name: name, loader: &loader)
    }

    private static func make(root: JSONValue, url: URL, name: String, loader: inout Loader) throws(ContractLoadError)
        -> OpenAPIDocument
    {
        guard case .object = root else {
            throw ContractLoadError(
                code: .notADescription, file: name, location: "", message: "the description is not a mapping")
        }
        if case .number(let number) = root["openapi"] ?? .null {
            throw ContractLoadError(
                code: .unsupportedVersion, file: name, location: "#/openapi",
                message: "unsupported OpenAPI version \(number) (3.0.x and 3.1.x are supported, as strings)")
        }
        guard case .string(let openAPI) = root["openapi"] ?? .null else {
            throw ContractLoadError(
                code: .notADescription, file: name, location: "#/openapi",
                message: "no `openapi` field: not an OpenAPI description")
        }
        guard openAPI.hasPrefix("3.0.") || openAPI.hasPrefix("3.1.") else {
            throw ContractLoadError(
                code: .unsupportedVersion, file: name, location: "#/openapi",
                message: "unsupported OpenAPI version \(openAPI) (3.0.x and 3.1.x are supported)")
        }
        guard case .object(let members) = root else { preconditionFailure("checked above") }
        try DescriptionShape(file: name, isOpenAPI30: openAPI.hasPrefix("3.0.")).checkRoot(members)
        try loader.checkReferences(in: root, file: url)
        for (file, document) in loader.documents where file != url {
            try DescriptionShape(file: file.path, isOpenAPI30: openAPI.hasPrefix("3.0.")).checkReferencedFile(document)
        }
        return OpenAPIDocument(
            url: url, root: root, openAPIVersion: openAPI,
            contractVersion: root["info"]?["version"]?.stringValue ?? "", documents: loader.documents,
            localTargets: loader.localTargets)
    }

    private init(
        url: URL, root: JSONValue, openAPIVersion: String, contractVersion: String, documents: [URL: JSONValue],
        localTargets: [URL: [String: Loader.Target]]
    ) {
        self.url = url
        self.root = root
        self.openAPIVersion = openAPIVersion
        self.contractVersion = contractVersion
        self.documents = documents
        self.localTargets = localTargets
        rootTargets = localTargets[url] ?? [:]
    }

    // MARK: - References

    /// Follows `$ref`s from `value` (found in `file`) until a non-reference, returning it, the file it is in
    /// and its location. Cycles of pure references end with a ``ContractLoadError``.
    public func resolve(_ value: JSONValue, in file: URL? = nil) throws(ContractLoadError) -> (
        value: JSONValue, file: URL, location: String
    ) {
        var nullableBeside = false
        return try resolve(value, in: file, nullableBeside: &nullableBeside)
    }

    /// ``resolve(_:in:)``, also saying whether a `$ref` on the way has OpenAPI 3.0 `nullable: true` beside it:
    /// that use of the target admits `null` whatever the target says (the reading of
    /// `SchemaReading.admitsNull`, which the diff applies to the use).
    func resolve(_ value: JSONValue, in file: URL? = nil, nullableBeside: inout Bool) throws(ContractLoadError) -> (
        value: JSONValue, file: URL, location: String
    ) {
        var current = value
        var currentFile = file ?? url
        var location = ""
        var seen: Set<String> = []
        var hops = 0
        while case .string(let reference) = current["$ref"] ?? .null {
            if isOpenAPI30, current["nullable"] == .bool(true) { nullableBeside = true }
            let known =
                Loader.isNoted(reference)
                ? (currentFile == url ? rootTargets : localTargets[currentFile])?[reference] : nil
            let (targetFile, pointer) =
                known.map { (currentFile, $0.pointer) } ?? Loader.split(reference, relativeTo: currentFile)
            // Most references take one hop: record targets from the second hop on (a cycle is still
            // caught, one hop later), so the common case builds no key.
            hops += 1
            guard hops == 1 || seen.insert(targetFile.path + "#" + pointer).inserted else {
                throw ContractLoadError(
                    code: .referenceCycle, file: currentFile.path, location: pointer,
                    message: "$ref cycle without content: \(reference)")
            }
            guard let target = known?.value ?? documents[targetFile].flatMap({ Loader.walk($0, pointer) }) else {
                throw ContractLoadError(
                    code: .danglingReference, file: currentFile.path, location: location,
                    message: "dangling $ref \(reference)")
            }
            current = target
            currentFile = targetFile
            location = "#" + pointer
        }
        return (current, currentFile, location)
    }
}

/// A description that cannot be used, with the file and location.
public struct ContractLoadError: KeelError, Equatable {
    /// Codes of ``ContractLoadError``.
    public typealias Code = ErrorCode<ContractLoadError>

    /// What is wrong.
    public let code: Code
    /// The file.
    public let file: String
    /// Where in it: a JSON pointer fragment (`#/paths/~1notes/get`) or a line and column.
    public let location: String
    /// A short explanation.
    public let message: String
    /// A developer-facing explanation: the file, the location when known, and the message.
    public var description: String { location.isEmpty ? "\(file): \(message)" : "\(file) \(location): \(message)" }
}

/// Loads files, follows file references inside the root directory, and checks every `$ref`.
struct Loader {
    let rootDirectory: URL
    var documents: [URL: JSONValue] = [:]
    /// For documents read from YAML: the value of every `$ref` in them, listed while reading.
    var references: [URL: [String]] = [:]
    /// Where a `#…` reference of a file leads: its decoded pointer and the value there.
    struct Target: Sendable {
        let pointer: String
        let value: JSONValue
    }
    /// The targets of each file's `#…` references, noted while `checkListedReferences` follows them.
    var localTargets: [URL: [String: Target]] = [:]

    /// Whether `reference` is one whose target is noted in `localTargets`: a `#…` reference in ASCII. Strings
    /// are equal and hash alike when they are canonically equivalent, but references are compared by their
    /// bytes (as member names are): `#/x/Caf\u{E9}` and `#/x/Cafe\u{301}` are two references. Noted and
    /// looked up are only ASCII ones, and two ASCII strings are equal only when their bytes are.
    static func isNoted(_ reference: String) -> Bool {
        reference.utf8.first == UInt8(ascii: "#") && reference.utf8.allSatisfy { $0 < 0x80 }
    }

    init(rootDirectory: URL) { self.rootDirectory = rootDirectory }

    mutating func document(at url: URL, referencedFrom: String?) throws(ContractLoadError) -> JSONValue {
        if let loaded = documents[url] { return loaded }
        // Where the file really is: a symbolic link inside the tree (a file or a directory on the way) may point
        // anywhere. The root description itself is the one file named by whoever runs the tool.
        let resolved = url.resolvingSymlinksInPath()
        let root = rootDirectory.resolvingSymlinksInPath()
        guard
            referencedFrom == nil || resolved.path.hasPrefix(root.path + "/")
                || resolved.deletingLastPathComponent().path == root.path
        else {
            throw ContractLoadError(
                code: .outsideRoot, file: referencedFrom ?? url.path, location: "",
                message: "\(url.path) is outside the description's directory tree")
        }
        guard let data = FileManager.default.contents(atPath: url.path) else {
            throw ContractLoadError(
                code: .unreadableFile, file: referencedFrom ?? url.path, location: "",
                message: "cannot read \(url.path)")
        }
        let bytes = [UInt8](unsafeUninitializedCapacity: data.count) { buffer, initialized in
            initialized = data.copyBytes(to: buffer)
        }
        let value: JSONValue
        if Self.isJSON(bytes) {
            value = try Self.parse(bytes, file: url.path)
        } else {
            var listed: [String] = []
            do {
                value = try YAML.parse(bytes, references: &listed)
            } catch {
                throw Self.yamlError(error, file: url.path)
            }
            references[url] = listed
        }
        documents[url] = value
        return value
    }

    /// Whether the text starts with `{` (after whitespace and a byte order mark).
    static func isJSON(_ bytes: [UInt8]) -> Bool {
        bytes.first { ![0x20, 0x09, 0x0A, 0x0D, 0xEF, 0xBB, 0xBF].contains($0) } == UInt8(ascii: "{")
    }

    static func yamlError(_ error: YAMLError, file: String) -> ContractLoadError {
        ContractLoadError(
            code: .invalidYAML, file: file, location: "line \(error.line), column \(error.column)",
            message: "not valid YAML: \(error.message)")
    }

    /// JSON when the text starts with `{`, YAML otherwise (YAML is a superset, but JSON errors are clearer).
    static func parse(_ bytes: [UInt8], file: String) throws(ContractLoadError) -> JSONValue {
        if isJSON(bytes) {
            do {
                return try JSONValue(parsing: bytes)
            } catch {
                throw ContractLoadError(
                    code: .invalidJSON, file: file, location: "line \(error.line), column \(error.column)",
                    message: "not valid JSON: \(error.message)")
            }
        }
        do {
            return try YAML.parse(bytes)
        } catch {
            throw yamlError(error, file: file)
        }
    }

    /// Checks that every `$ref` under `value` resolves, loading referenced files (cycles are fine).
    mutating func checkReferences(in value: JSONValue, file: URL) throws(ContractLoadError) {
        if checkListedReferences(from: file) { return }
        // Some file was not read from YAML, or something does not resolve: walk the trees, which finds
        // the first problem in document order and says where it is.
        var visited: Set<String> = []
        var path: [String] = []
        try check(value, file: file, path: &path, visited: &visited)
    }

    /// Whether every `$ref` listed while reading `file`, and the files they lead to, resolves: no tree walk.
    /// False (nothing thrown) as soon as a file has no list or anything fails, for the walk to report.
    private mutating func checkListedReferences(from file: URL) -> Bool {
        var pending = [file]
        var reached: Set<URL> = [file]
        while let current = pending.popLast() {
            guard let listed = references[current] else { return false }
            var local: [String: Target] = [:]
            defer { localTargets[current] = local }
            for reference in listed {
                let isLocal = Self.isNoted(reference)
                // A reference met before in this file leads where it did.
                if isLocal, local[reference] != nil { continue }
                let (targetFile, pointer) = Self.split(reference, relativeTo: current)
                guard let document = try? document(at: targetFile, referencedFrom: current.path),
                    let target = Self.walk(document, pointer)
                else { return false }
                if isLocal { local[reference] = Target(pointer: pointer, value: target) }
                if reached.insert(targetFile).inserted { pending.append(targetFile) }
            }
        }
        return true
    }

    /// Walks the tree keeping the JSON pointer as a token stack (joined only for an error message).
    private mutating func check(_ value: JSONValue, file: URL, path: inout [String], visited: inout Set<String>)
        throws(ContractLoadError)
    {
        switch value {
        case .object(let object):
            if case .string(let reference) = object["$ref"] ?? .null {
                if Self.hasScheme(reference) {
                    let pointer = path.map { "/" + JSONPointer.escape($0) }.joined()
                    let scheme = reference.prefix { $0 != ":" }.lowercased()
                    // A URN (or another name that is no location) names a schema by its `$id`: not a file
                    // and not the network, and not something these tools look up (found in an outside audit:
                    // it was refused as a network reference).
                    if !["http", "https", "ftp", "file"].contains(scheme) {
                        throw ContractLoadError(
                            code: .unsupportedReference, file: file.path, location: "#" + pointer + "/$ref",
                            message:
                                "\(reference) names a schema by its $id, which these tools do not look up: refer to it by where it is (#/components/schemas/NAME, or a file path)"
                        )
                    }
                    throw ContractLoadError(
                        code: .outsideRoot, file: file.path, location: "#" + pointer + "/$ref",
                        message:
                            "\(reference) is not followed: references reach only files in the description's directory tree, never the network"
                    )
                }
                let (targetFile, targetPointer) = Self.split(reference, relativeTo: file)
                let document = try self.document(at: targetFile, referencedFrom: file.path)
                guard Self.walk(document, targetPointer) != nil else {
                    let pointer = path.map { "/" + JSONPointer.escape($0) }.joined()
                    // `#name` is a plain-name fragment: a schema's `$anchor`, not a place (outside audit: it read
                    // as "dangling").
                    if !targetPointer.isEmpty, !targetPointer.hasPrefix("/") {
                        throw ContractLoadError(
                            code: .unsupportedReference, file: file.path, location: "#" + pointer + "/$ref",
                            message:
                                "\(reference) names a schema by its $anchor, which these tools do not look up: refer to it by a JSON pointer (#/components/schemas/NAME)"
                        )
                    }
                    throw ContractLoadError(
                        code: .danglingReference, file: file.path, location: "#" + pointer + "/$ref",
                        message: "dangling $ref \(reference)")
                }
                // A referenced file's own references are checked once (cycles between files are fine).
                if targetFile != file, visited.insert(targetFile.path).inserted {
                    var inner: [String] = []
                    try check(document, file: targetFile, path: &inner, visited: &visited)
                }
            }
            for (key, child) in object where key != "$ref" {
                switch child {
                case .object, .array:
                    path.append(key)
                    try check(child, file: file, path: &path, visited: &visited)
                    path.removeLast()
                default:
                    break
                }
            }
        case .array(let elements):
            for (index, element) in elements.enumerated() {
                switch element {
                case .object, .array:
                    path.append(String(index))
                    try check(element, file: file, path: &path, visited: &visited)
                    path.removeLast()
                default:
                    break
                }
            }
        default:
            break
        }
    }

    /// Whether a reference is an absolute URI (`https://…`, `file:…`, `urn:…`) rather than a relative one.
    static func hasScheme(_ reference: String) -> Bool {
        guard let colon = reference.firstIndex(of: ":"), let first = reference.first, first.isASCII, first.isLetter
        else { return false }
        return reference[..<colon].allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "+-.".contains($0)) }
    }

    /// The file and JSON pointer a reference names.
    static func split(_ reference: String, relativeTo file: URL) -> (URL, String) {
        // The usual reference, `#/components/...`, stays in its file.
        if reference.utf8.first == UInt8(ascii: "#") {
            return (file, JSONPointer.decodeFragment(String(reference.dropFirst())))
        }
        let parts = reference.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false)
        // A URI reference: `my%20file.yaml` names `my file.yaml`.
        let path = String(parts[0]).removingPercentEncoding ?? String(parts[0])
        let fragment = parts.count > 1 ? String(parts[1]) : ""
        let pointer = JSONPointer.decodeFragment(fragment)
        let target =
            path.isEmpty
            ? file : URL(fileURLWithPath: path, relativeTo: file.deletingLastPathComponent()).standardizedFileURL
        return (target, pointer)
    }

    static func walk(_ value: JSONValue, _ pointer: String) -> JSONValue? {
        guard !pointer.isEmpty else { return value }
        guard pointer.hasPrefix("/") else { return nil }
        var current = value
        // Token by token, without building an array of them (a reference is walked when the loader checks it,
        // and again by `resolve` unless the loader noted its target).
        var rest = pointer.utf8.dropFirst()
        while true {
            let end = rest.firstIndex(of: UInt8(ascii: "/")) ?? rest.endIndex
            let token = JSONPointer.unescape(Substring(rest[..<end]))
            switch current {
            case .object(let object): guard let next = object[token] else { return nil }; current = next
            case .array(let array):
                guard let index = Int(token), array.indices.contains(index) else { return nil }; current = array[index]
            default: return nil
            }
            guard end < rest.endIndex else { return current }
            rest = rest[rest.index(after: end)...]
        }
    }
}

extension ErrorCode where Domain == ContractLoadError {
    /// The file is not an OpenAPI description (not a mapping, no `openapi` field).
    public static var notADescription: Self { Self("notADescription") }
    /// A member the tools read has the wrong type (`paths: 5`, a schema's `properties: 3`), or a member
    /// the specification requires is missing (`info`, `info.version`, 3.0's `paths` and `responses`).
    public static var malformedDescription: Self { Self("malformedDescription") }
    /// The `openapi` version is not 3.0.x or 3.1.x.
    public static var unsupportedVersion: Self { Self("unsupportedVersion") }
    /// The file could not be read.
    public static var unreadableFile: Self { Self("unreadableFile") }
    /// The file is not valid YAML.
    public static var invalidYAML: Self { Self("invalidYAML") }
    /// The file is not valid JSON.
    public static var invalidJSON: Self { Self("invalidJSON") }
    /// A `$ref` points at nothing.
    public static var danglingReference: Self { Self("danglingReference") }
    /// `$ref`s lead to each other without content.
    public static var referenceCycle: Self { Self("referenceCycle") }
    /// A file reference leaves the description's directory tree.
    public static var outsideRoot: Self { Self("outsideRoot") }
    /// A `$ref` names its schema by `$anchor` or `$id` (valid in OpenAPI 3.1), which the tools do not look
    /// up; a JSON pointer or a file path reaches the same schema.
    public static var unsupportedReference: Self { Self("unsupportedReference") }
    /// The schema asked for is not a usable schema of the description (not a fragment, nothing there,
    /// or not a schema).
    public static var invalidSchemaReference: Self { Self("invalidSchemaReference") }
}
