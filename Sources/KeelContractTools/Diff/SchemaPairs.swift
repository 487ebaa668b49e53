import Foundation
import KeelContract

// MARK: - Schemas, each pair compared once

/// A schema is compared with its counterpart once per diff, however many operations reach it: the pair's own
/// findings (relative to the pair) and its edges to the named pairs inside it (members, items, union
/// variants that are `$ref`s) make a graph. Each operation's body then collects the findings of every pair
/// it reaches, by the shortest way in, with the pointer of that way. Union variants are followed too, so a
/// change inside an expandable field's object is found in every response that can hold it, without
/// following every expandable field again from every operation.
extension Collector {
    /// Which way a schema travels: the client reads a response and sends a request.
    enum Direction: UInt8 {
        case response, request
    }

    /// Where a pair of schemas stands: the body or parameter of an operation (whose rules name the body or
    /// the parameter), or a schema inside one (a member, an item, a variant: `-property-` rules).
    enum Role: Hashable {
        case member
        case responseBody
        case responseHeader
        case requestRoot(rulePrefix: String)

        var tag: String {
            switch self {
            case .member: "m"
            case .responseBody: "b"
            case .responseHeader: "h"
            case .requestRoot(let prefix): "r" + prefix
            }
        }
    }

    /// A schema resolved through its `$ref`s: the value, its file, and its location (empty when inline).
    typealias Resolved = (value: JSONValue, file: URL, location: String)

    /// A finding inside a pair, its pointer relative to the pair's schema.
    struct Finding {
        /// How the message reads once the place is known.
        enum Message {
            /// As is.
            case plain(String)
            /// After what is compared: `response property /p`, `the response body`, `parameter query:q
            /// property /p`.
            case afterSubject(String)
            /// After the request body or parameter (requests only).
            case afterRequestSubject(String)
        }

        var rule: String
        var severity: ContractChange.Severity
        var pointer: String
        var message: Message
        var origin: String?
    }

    /// Two schemas compared: what differs inside them, and the named pairs they contain.
    struct Pair {
        /// The same for pairs of the same two schemas in the same direction, whatever their role: a schema
        /// reached again inside itself (a body that contains itself) is not entered twice.
        var identity: Int
        var old: Resolved
        var new: Resolved
        var direction: Direction
        var role: Role
        var findings: [Finding] = []
        var edges: [(pointer: String, pair: Int)] = []
    }

    /// A body or parameter of an operation, compared as the root pair `pair`.
    struct Use {
        var place: Place
        var pair: Int
        var subject: String
    }

    /// Records that `place` compares `old` with `new` (a body or a parameter): reported by ``emitUses()``.
    mutating func use(
        _ oldSchema: OpenAPIDocument.SchemaSource, _ newSchema: OpenAPIDocument.SchemaSource, _ place: Place,
        direction: Direction, role: Role, subject: String
    ) throws(ContractLoadError) {
        var ignored = false
        var old = try Self.resolve(Self.unwrappingSingleAllOf(oldSchema.value), in: oldSchema.file, of: base, &ignored)
        var new = try Self.resolve(
            Self.unwrappingSingleAllOf(newSchema.value), in: newSchema.file, of: revision, &ignored)
        // A schema written inline in a shared component (`components/parameters`, `components/responses`,
        // `components/requestBodies`) is named by where it is: one change there is one root cause, however
        // many operations use the component, as for a named schema.
        if old.location.isEmpty, new.location.isEmpty, Self.isShared(oldSchema.location),
            Self.isShared(newSchema.location)
        {
            old.location = oldSchema.location
            new.location = newSchema.location
        }
        uses.append(Use(place: place, pair: pairID(old, new, direction, role), subject: subject))
    }

    /// Whether `location` is inside the document's components (shared by whatever references it).
    static func isShared(_ location: String) -> Bool { location.hasPrefix("#/components/") }

    /// The pair of `old` and `new`: one per two named schemas, direction and role; a new one for anything
    /// inline (an operation's own schema is compared where it is).
    mutating func pairID(_ old: Resolved, _ new: Resolved, _ direction: Direction, _ role: Role) -> Int {
        var identity = identities
        if !old.location.isEmpty, !new.location.isEmpty {
            let schemas =
                "\(direction.rawValue)|\(path(of: old.file))\(old.location)|\(path(of: new.file))\(new.location)"
            let key = role.tag + schemas
            if let id = pairIndex[key] { return id }
            pairIndex[key] = pairs.count
            if let known = identityIndex[schemas] { identity = known } else { identityIndex[schemas] = identity }
        }
        if identity == identities { identities += 1 }
        pairs.append(Pair(identity: identity, old: old, new: new, direction: direction, role: role))
        return pairs.count - 1
    }

    /// Compares every pair reached from the uses (each once), then adds the findings of each use.
    mutating func emitUses() throws(ContractLoadError) {
        var next = 0
        while next < pairs.count {
            try compare(next)
            next += 1
        }
        // A pair is worth entering when it, or a pair it reaches, has a finding.
        var worthEntering = pairs.map { !$0.findings.isEmpty }
        var enclosing = [[Int]](repeating: [], count: pairs.count)
        for (index, pair) in pairs.enumerated() {
            for edge in pair.edges { enclosing[edge.pair].append(index) }
        }
        var work = worthEntering.indices.filter { worthEntering[$0] }
        while let pair = work.popLast() {
            for outer in enclosing[pair] where !worthEntering[outer] {
                worthEntering[outer] = true
                work.append(outer)
            }
        }
        // The graph in flat arrays (a breadth-first walk per use copies nothing).
        var graph = Graph(identities: identities)
        for pair in pairs {
            graph.identity.append(pair.identity)
            graph.hasFindings.append(!pair.findings.isEmpty)
            for edge in pair.edges where worthEntering[edge.pair] {
                graph.target.append(edge.pair)
                graph.pointer.append(edge.pointer)
            }
            graph.start.append(graph.target.count)
        }
        var expansions: [Int: [(pointer: String, finding: Finding)]] = [:]
        for use in uses where worthEntering[use.pair] {
            let found: [(pointer: String, finding: Finding)]
            if let known = expansions[use.pair] {
                found = known
            } else {
                found = expand(use.pair, &graph)
                expansions[use.pair] = found
            }
            let direction = pairs[use.pair].direction
            for (pointer, finding) in found {
                let text: String
                let cause: String
                switch finding.message {
                case .plain(let message):
                    text = message
                    cause = message
                case .afterSubject(let message):
                    cause = message
                    switch direction {
                    case .response where pairs[use.pair].role == .responseHeader:
                        text = (pointer.isEmpty ? use.subject : "\(use.subject) property \(pointer)") + message
                    case .response:
                        text = (pointer.isEmpty ? "the response body" : "response property \(pointer)") + message
                    case .request:
                        text = (pointer.isEmpty ? use.subject : "\(use.subject) property \(pointer)") + message
                    }
                case .afterRequestSubject(let message):
                    text = use.subject + message
                    cause = message
                }
                changes.append(
                    ContractChange(
                        rule: finding.rule, severity: finding.severity, path: use.place.path,
                        method: use.place.method?.uppercased(), status: use.place.status,
                        pointer: pointer.isEmpty ? nil : pointer, message: text, origin: finding.origin, cause: cause))
            }
        }
    }

    /// The pair graph as flat arrays: pair `i`'s edges are `start[i]..<start[i + 1]` of `target` and
    /// `pointer` (only edges to pairs worth entering).
    struct Graph {
        var identity: [Int] = []
        var hasFindings: [Bool] = []
        var start: [Int] = [0]
        var target: [Int] = []
        var pointer: [String] = []
        /// Per identity, the root of the walk that last reached it.
        var stamp: [Int]

        init(identities: Int) { stamp = [Int](repeating: -1, count: identities) }
    }

    /// The findings of every pair `root` reaches, each pair once, at the pointer of the shortest way in
    /// (breadth first; among ways of one length, the first in member order).
    private func expand(_ root: Int, _ graph: inout Graph) -> [(pointer: String, finding: Finding)] {
        // Ways in as (pair, entry it was reached from, edge); pointers are built only for pairs with findings.
        var entries: [(pair: Int, from: Int, edge: Int)] = [(root, -1, -1)]
        graph.stamp[graph.identity[root]] = root
        // The full pointer of an entry with findings, built from the edges up to the nearest entry whose
        // pointer is known (the root's is ""), and kept for the entries below it. Built by a loop, not by
        // recursion (a chain of references 20,000 schemas deep overflowed the stack), and kept only for
        // entries with findings: kept for every entry on the way, a deep chain held a pointer of every length.
        var fullPointers: [String?] = [""]
        func fullPointer(_ index: Int) -> String {
            var edges: [Int] = []
            var known = index
            while fullPointers[known] == nil {
                edges.append(entries[known].edge)
                known = entries[known].from
            }
            var pointer = fullPointers[known]!  // the loop stops at a known pointer
            for edge in edges.reversed() { pointer += graph.pointer[edge] }
            fullPointers[index] = pointer
            return pointer
        }
        var head = 0
        var found: [(pointer: String, finding: Finding)] = []
        while head < entries.count {
            let pair = entries[head].pair
            if graph.hasFindings[pair] {
                let prefix = fullPointer(head)
                for finding in pairs[pair].findings { found.append((prefix + finding.pointer, finding)) }
            }
            for edge in graph.start[pair]..<graph.start[pair + 1] {
                let target = graph.target[edge]
                guard graph.stamp[graph.identity[target]] != root else { continue }
                graph.stamp[graph.identity[target]] = root
                entries.append((target, head, edge))
                fullPointers.append(nil)
            }
            head += 1
        }
        return found
    }

    /// Compares pair `id`: its findings and edges.
    private mutating func compare(_ id: Int) throws(ContractLoadError) {
        let pair = pairs[id]
        var walk = Walk(direction: pair.direction, role: pair.role)
        let origin = origin(pair.new.file, pair.new.location, at: "", parent: nil)
        switch pair.direction {
        case .response: try compareResponse(pair.old, pair.new, pointer: "", origin: origin, &walk)
        case .request: try compareRequest(pair.old, pair.new, pointer: "", origin: origin, &walk)
        }
        pairs[id].findings = walk.findings
        pairs[id].edges = walk.edges
    }

    /// What comparing one pair collects.
    struct Walk {
        let direction: Direction
        let role: Role
        var findings: [Finding] = []
        var edges: [(pointer: String, pair: Int)] = []

        /// Whether `pointer` is the body or parameter itself (its rules name it).
        func isRoot(_ pointer: String) -> Bool { pointer.isEmpty && role != .member }

        /// What a response rule names at `pointer`: `body` or `header` at the root, else `property`.
        func responsePart(_ pointer: String) -> String {
            guard isRoot(pointer) else { return "property" }
            return role == .responseHeader ? "header" : "body"
        }

        /// A finding at `pointer`; its origin is `origin` at the same pointer.
        mutating func add(
            _ rule: String, _ severity: ContractChange.Severity, _ pointer: String, _ message: Finding.Message,
            origin: OriginBase?
        ) {
            findings.append(
                Finding(
                    rule: rule, severity: severity, pointer: pointer, message: message,
                    origin: origin?.text(at: pointer)))
        }
    }

    /// A schema inside the pair being compared: an edge when both sides are named schemas (compared as a
    /// pair of their own), compared here otherwise.
    private mutating func child(
        _ oldValue: JSONValue, _ oldFile: URL, _ newValue: JSONValue, _ newFile: URL, pointer: String,
        origin parent: OriginBase?, _ walk: inout Walk
    ) throws(ContractLoadError) {
        let oldValue = Self.unwrappingSingleAllOf(oldValue)
        let newValue = Self.unwrappingSingleAllOf(newValue)
        // OpenAPI 3.0 `nullable: true` beside a `$ref` makes this use of the schema nullable, whatever the
        // target says (SchemaReading.admitsNull): the generator's optionality and validation read it so.
        var referenceNull = (old: false, new: false)
        let old = try Self.resolve(oldValue, in: oldFile, of: base, &referenceNull.old)
        let new = try Self.resolve(newValue, in: newFile, of: revision, &referenceNull.new)
        if !old.location.isEmpty, !new.location.isEmpty {
            // The pair of named schemas is compared once for all its uses; what the use adds is compared here.
            if referenceNull.old != referenceNull.new {
                let targetNull = (
                    old: SchemaReading.admitsNull(old.value, openAPI30: base.isOpenAPI30),
                    new: SchemaReading.admitsNull(new.value, openAPI30: revision.isOpenAPI30)
                )
                let wasNull = referenceNull.old || targetNull.old
                let isNull = referenceNull.new || targetNull.new
                switch walk.direction {
                // Unless the target's own change explains it (that is reported in the pair, at its origin).
                case .response where isNull && !wasNull && !(targetNull.new && !targetNull.old):
                    walk.add(
                        "response-property-became-nullable", .breaking, pointer, .afterSubject(" may now be null"),
                        origin: parent)
                case .request where wasNull && !isNull && !(targetNull.old && !targetNull.new):
                    walk.add(
                        "request-property-became-not-nullable", .breaking, pointer,
                        .afterSubject(" may no longer be null"), origin: parent)
                default: break
                }
            }
            walk.edges.append((pointer, pairID(old, new, walk.direction, .member)))
            return
        }
        // Named on one side only: compared here (the inline side is finite, so this ends).
        let here = origin(new.file, new.location, at: pointer, parent: parent)
        switch walk.direction {
        case .response:
            try compareResponse(old, new, pointer: pointer, origin: here, referenceNull: referenceNull, &walk)
        case .request:
            try compareRequest(old, new, pointer: pointer, origin: here, referenceNull: referenceNull, &walk)
        }
    }

    /// `value` resolved through its `$ref`s, as the diff reads it. In OpenAPI 3.1 (JSON Schema 2020-12) the
    /// keywords beside a `$ref` apply too: `{$ref: S, enum: [a]}` admits only what both admit. Such a schema
    /// is read as the target with those keywords added (where both give one: `required` joined, `enum`
    /// intersected, the tighter bound, the target's for the rest) — an inline schema, compared where it is
    /// used, so that an `enum` or a `required` added beside a `$ref` is a change (found in an outside audit:
    /// they were not seen). In 3.0 the members
    /// beside a `$ref` are ignored, as the specification says (`nullable` aside, read by `nullableBeside`).
    static func resolve(_ value: JSONValue, in file: URL, of document: OpenAPIDocument, _ nullableBeside: inout Bool)
        throws(ContractLoadError) -> Resolved
    {
        let resolved = try document.resolve(value, in: file, nullableBeside: &nullableBeside)
        // Most references stand alone, or beside a description: nothing is built for them (keel-bench
        // contract.diff walks thousands).
        func constrains(_ key: String) -> Bool {
            key != "$ref" && !annotationKeywords.contains(key) && !key.hasPrefix("x-") && !key.hasPrefix("$")
        }
        guard !document.isOpenAPI30, case .object(let schema) = value, schema.count > 1, schema["$ref"] != nil,
            schema.keys.contains(where: constrains)
        else { return resolved }
        let siblings = schema.filter { key, _ in constrains(key) }
        // A target in another file is read in its file: siblings with `$ref`s of their own (which this file's
        // location resolves) cannot join it, and are compared as before; plain keywords (`maxLength`, an `enum`)
        // can (found in an outside audit: beside a reference to another file they were not seen).
        guard !siblings.isEmpty,
            resolved.file == file || !Self.containsReference(.object(JSONObject(siblings.map { ($0.key, $0.value) }))),
            case .object(var merged) = resolved.value
        else {
            return resolved
        }
        // Both apply, so where both say something the stricter holds: an `enum` is what both admit, a bound the
        // tighter one, `required` both lists; a member both describe, and any other keyword both give, keeps the
        // target's (read as it was: an under-report at worst, never a change that is not one).
        for (key, sibling) in siblings {
            guard let own = merged[key] else {
                merged[key] = sibling
                continue
            }
            switch (key, own, sibling) {
            case ("required", .array(let own), .array(let added)):
                merged[key] = .array(own + added.filter { !own.contains($0) })
            case ("properties", .object(var own), .object(let added)):
                for (name, member) in added where own[name] == nil { own[name] = member }
                merged[key] = .object(own)
            case ("enum", .array(let own), .array(let allowed)):
                merged[key] = .array(own.filter { allowed.contains($0) })
            case ("maximum", .number(let own), .number(let other)),
                ("exclusiveMaximum", .number(let own), .number(let other)),
                ("maxLength", .number(let own), .number(let other)), ("maxItems", .number(let own), .number(let other)),
                ("maxProperties", .number(let own), .number(let other)):
                merged[key] = .number(min(own, other))
            case ("minimum", .number(let own), .number(let other)),
                ("exclusiveMinimum", .number(let own), .number(let other)),
                ("minLength", .number(let own), .number(let other)), ("minItems", .number(let own), .number(let other)),
                ("minProperties", .number(let own), .number(let other)):
                merged[key] = .number(max(own, other))
            default:
                break  // the target's
            }
        }
        return (.object(merged), resolved.file, "")
    }

    /// Whether `value` holds a `$ref` or `$dynamicRef` anywhere.
    static func containsReference(_ value: JSONValue, depth: Int = 0) -> Bool {
        guard depth < 64 else { return true }
        switch value {
        case .object(let members):
            return members.contains { key, member in
                key == "$ref" || key == "$dynamicRef" || containsReference(member, depth: depth + 1)
            }
        case .array(let elements): return elements.contains { containsReference($0, depth: depth + 1) }
        default: return false
        }
    }

    /// `allOf` with a single part and nothing beside it but annotations (`description`, `nullable`, `title`,
    /// …): the OpenAPI 3.0 way to put a description or `nullable` on a `$ref`. Read as the part itself — the
    /// referenced schema, compared as such (a new value of a wrapped enum is that enum's new value) — with
    /// `nullable: true` carried beside it. Anything else is returned as it is (``ContractDiff/mergeAllOf``
    /// reads the parts of real compositions).
    static func unwrappingSingleAllOf(_ value: JSONValue) -> JSONValue {
        guard case .object(let wrapper) = value, case .array(let parts)? = wrapper["allOf"], parts.count == 1,
            wrapper.keys.allSatisfy({ annotationKeywords.contains($0) || $0.hasPrefix("x-") }),
            case .object(var part) = parts[0]
        else { return value }
        if wrapper["nullable"] == .bool(true) { part["nullable"] = .bool(true) }
        return .object(part)
    }

    /// Keywords that say nothing about which values a schema admits (3.0 `nullable` aside, which
    /// ``unwrappingSingleAllOf(_:)`` carries).
    static let annotationKeywords: Set<String> = [
        "allOf", "description", "title", "nullable", "readOnly", "writeOnly", "deprecated", "example", "examples",
        "default", "externalDocs",
    ]

    /// The origin of member `name` of `shape` (the schema at `pointer`): in the `allOf` part it comes from, in
    /// that part's file (`file` when it is the schema's own), else the schema's own.
    private func memberOrigin(_ name: String, in shape: Shape, _ file: URL, _ pointer: String, _ here: OriginBase?)
        -> OriginBase?
    {
        memberOrigin(name, shape.memberParts[name], shape.file(of: name, else: file), pointer, here)
    }

    /// The origin of member `name` of the schema at `pointer`: in the `allOf` part it comes from (`part`, a
    /// location in `file`), else the schema's own.
    private func memberOrigin(_ name: String, _ part: String?, _ file: URL, _ pointer: String, _ here: OriginBase?)
        -> OriginBase?
    {
        guard let part else { return here }
        return OriginBase(directory: revisionDirectory, file: file, location: part, prefixLength: pointer.count)
    }

    /// Compares the union variants that correspond — by discriminator value, or by JSON kind and `$ref` name
    /// — each with its counterpart (added and removed variants are reported by the caller).
    private mutating func compareVariants(
        _ old: Resolved, _ new: Resolved, _ oldVariants: Union, _ newVariants: Union, pointer: String,
        origin: OriginBase?, _ walk: inout Walk
    ) throws(ContractLoadError) {
        // Variants of one kind are told apart by their `$ref`'s name first (reordered), then by order (renamed).
        func referenceName(_ schema: JSONValue?) -> Substring? {
            schema?["$ref"]?.stringValue.flatMap { $0.split(separator: "/").last }
        }
        var unmatched = oldVariants.variants.map(Optional.some)
        var matches: [(old: JSONValue, new: JSONValue, index: Int)] = []
        var pending: [Union.Variant] = []
        for variant in newVariants.variants {
            let name = referenceName(variant.schema)
            if let name,
                let at = unmatched.firstIndex(where: { $0?.name == variant.name && referenceName($0?.schema) == name })
            {
                if let old = unmatched[at]?.schema, let new = variant.schema, let index = variant.index {
                    matches.append((old, new, index))
                }
                unmatched[at] = nil
            } else {
                pending.append(variant)
            }
        }
        // Variants of one kind that are enums are told apart by the values they share (the values are not part
        // of the kind, so that a value added to one is a change of that enum): the counterpart is the one with
        // the most values in common, then the first.
        let (base, revision) = (self.base, self.revision)
        func values(_ schema: JSONValue?, _ file: URL, _ document: OpenAPIDocument) -> Set<JSONValue> {
            guard let schema, case .array(let list)? = (try? document.resolve(schema, in: file))?.value["enum"]
            else { return [] }
            return Set(list)
        }
        for variant in pending {
            let mine = values(variant.schema, new.file, revision)
            var best: (index: Int, shared: Int)?
            for index in unmatched.indices where unmatched[index]?.name == variant.name {
                let shared =
                    mine.isEmpty ? 0 : values(unmatched[index]?.schema, old.file, base).intersection(mine).count
                // The earlier wins a tie.
                if best.map({ shared > $0.shared }) ?? true { best = (index, shared) }
            }
            guard let at = best?.index else { continue }
            if let old = unmatched[at]?.schema, let new = variant.schema, let index = variant.index {
                matches.append((old, new, index))
            }
            unmatched[at] = nil
        }
        for match in matches.sorted(by: { $0.index < $1.index }) {
            // A plain schema read as a union of itself (``unions(_:_:_:_:)``) is at the pointer itself.
            let variantPointer =
                newVariants.keyword.isEmpty ? pointer : pointer + "/\(newVariants.keyword)/\(match.index)"
            try child(match.old, old.file, match.new, new.file, pointer: variantPointer, origin: origin, &walk)
        }
    }

    /// The unions to compare: both schemas' own, or — for a plain schema that became a union without a
    /// discriminator (an id that becomes "an id or the expanded object", a string that becomes "an integer or
    /// a boolean"), or such a union that became a plain schema — the plain side read as a union of one
    /// variant, itself (its keyword empty: it is no union in the document; `oneSided`). The union rules then
    /// say what changed — a response that may now send a variant of another kind, a request that no longer
    /// accepts one — and the variants of the same kind are compared. Nil when neither is a union.
    private func unions(_ a: Shape, _ old: Resolved, _ b: Shape, _ new: Resolved) -> (
        old: Union, new: Union, oneSided: Bool
    )? {
        func isPlain(_ shape: Shape) -> Bool {
            shape.value["discriminator"] == nil && (!shape.types.isEmpty || shape.value["properties"] != nil)
        }
        func itself(_ shape: Shape, _ file: URL, _ document: OpenAPIDocument) -> Union {
            Union(
                keyword: "",
                variants: [
                    Union.Variant(
                        name: kind(of: shape.value, in: file, document: document), index: 0, schema: shape.value)
                ])
        }
        switch (
            variants(of: a.value, in: old.file, document: base), variants(of: b.value, in: new.file, document: revision)
        ) {
        case (let oldUnion?, let newUnion?): return (oldUnion, newUnion, false)
        case (nil, let newUnion?) where isPlain(a) && b.value["discriminator"] == nil:
            return (itself(a, old.file, base), newUnion, true)
        case (let oldUnion?, nil) where isPlain(b) && a.value["discriminator"] == nil:
            return (oldUnion, itself(b, new.file, revision), true)
        default: return nil
        }
    }

    /// The shapes the rules compare, a `$ref`'s own `nullable` (`referenceNull`, from `resolve`) included;
    /// nil when the two schemas cannot differ.
    private func shapes(_ old: Resolved, _ new: Resolved, referenceNull: (old: Bool, new: Bool)) -> (Shape, Shape)? {
        if referenceNull.old == referenceNull.new,
            Self.cannotDiffer(old.value, new.value, sameDialect: base.isOpenAPI30 == revision.isOpenAPI30)
        {
            return nil
        }
        var a = shape(old.value, in: old.file, of: base)
        var b = shape(new.value, in: new.file, of: revision)
        a.nullable = a.nullable || referenceNull.old
        b.nullable = b.nullable || referenceNull.new
        return (a, b)
    }

    /// The types of `a` (old) and `b` (new) compared for the side that reads (the client in a response, the
    /// server in a request): `<prefix>-type-changed` (breaking) when what the writer gives is not all of a type
    /// the reader takes, else `<prefix>-type-<relaxed>` (info) when the types differ.
    static func compareTypes(
        _ a: Shape, _ b: Shape, readerTakes: Set<String>, writerGives: Set<String>, prefix: String, relaxed: String,
        relaxedWording: String, pointer: String, origin here: OriginBase?, _ walk: inout Walk
    ) {
        guard !a.types.isEmpty, !b.types.isEmpty else { return }
        if !types(readerTakes, cover: writerGives) {
            walk.add(
                "\(prefix)-type-changed", .breaking, pointer,
                .afterSubject(" changed type from \(a.types.sorted()) to \(b.types.sorted())"), origin: here)
        } else if a.types != b.types {
            walk.add(
                "\(prefix)-type-\(relaxed)", .info, pointer,
                .afterSubject(" \(relaxedWording) its type from \(a.types.sorted()) to \(b.types.sorted())"),
                origin: here)
        }
    }

    /// Whether every value of one of the types `narrower` is a value of one of `wider`: JSON Schema's
    /// `integer` is a `number` whose fraction is zero, so `number` covers it.
    static func types(_ wider: Set<String>, cover narrower: Set<String>) -> Bool {
        narrower.allSatisfy { wider.contains($0) || ($0 == "integer" && wider.contains("number")) }
    }

    /// Responses: the client reads what the server sends.
    private mutating func compareResponse(
        _ old: Resolved, _ new: Resolved, pointer: String, origin here: OriginBase?,
        referenceNull: (old: Bool, new: Bool) = (false, false), _ walk: inout Walk
    ) throws(ContractLoadError) {
        guard let (a, b) = shapes(old, new, referenceNull: referenceNull) else { return }
        let part = walk.responsePart(pointer)
        // Fewer values than before (`number` → `integer`) are values an old client reads.
        Self.compareTypes(
            a, b, readerTakes: a.types, writerGives: b.types, prefix: "response-\(part)", relaxed: "specialized",
            relaxedWording: "narrowed", pointer: pointer, origin: here, &walk)
        // A type the schema no longer states: any JSON value may now come where old clients decode one type.
        if !a.types.isEmpty, b.types.isEmpty, Self.isUnconstrained(b.value) {
            walk.add(
                "response-\(part)-type-removed", .breaking, pointer,
                .afterSubject(" may now be any JSON value, not only \(a.types.sorted().joined(separator: " or "))"),
                origin: here)
        }
        if b.nullable, !a.nullable {
            walk.add(
                "response-\(part)-became-nullable", .breaking, pointer,
                .afterSubject(" may now be null"), origin: here)
        }
        // Elements, or extra members, whose schema is gone: any value may now come where old clients decode one.
        // (A schema that admits anything — `{}`, `true` — is no schema to lose; a composition on the new side
        // is compared by its own rules.)
        if let oldItems = a.items, !Self.admitsAnything(oldItems), b.items == nil,
            b.types.isEmpty || b.types.contains("array"), Self.isComposed(b.value) == false
        {
            walk.add(
                "response-\(part)-items-removed", .breaking, pointer,
                .afterSubject("'s elements may now be any JSON value"), origin: here)
        }
        if let oldExtra = a.value["additionalProperties"], case .object = oldExtra, !Self.admitsAnything(oldExtra),
            b.value["additionalProperties"].map(Self.admitsAnything) ?? true, Self.isComposed(b.value) == false
        {
            walk.add(
                "response-\(part)-additional-properties-widened",
                .breaking, pointer, .afterSubject("'s extra members may now be any JSON value"), origin: here)
        }
        if let oldValues = a.enumValues, !a.isExtensibleEnum, b.enumValues == nil, !b.types.isEmpty,
            b.types.isSubset(of: a.types) || a.types.isEmpty
        {
            // A closed enum (or a marker) that became its plain type: any value of it may now come.
            walk.add(
                "response-\(part)-enum-removed", .breaking, pointer,
                .afterSubject(
                    " may now be any \(b.types.sorted().joined(separator: " or ")), not only \(oldValues.map(\.description).joined(separator: ", ")): old clients fail to decode other values"
                ), origin: here)
        }
        if let oldValues = a.enumValues, let newValues = b.enumValues {
            // Looked up in a set: two enums of 10,000 values took 18 s compared by scanning (an outside audit).
            let known = Set(oldValues)
            for value in newValues where !known.contains(value) {
                if a.isExtensibleEnum {
                    walk.add(
                        "response-property-extensible-enum-value-added", .info, pointer,
                        .plain("new value \(value) of an extensible enum"), origin: here)
                } else {
                    walk.add(
                        "response-property-enum-value-added", .breaking, pointer,
                        .plain("new value \(value) of a closed enum: old clients fail to decode it"), origin: here)
                }
            }
        }
        // A `format` the client relies on (a date-time it parses, a uuid, an int32 it stores): a value of
        // another format, or of any, may now come. One the old includes (int64 → int32) is no change for it.
        if let oldFormat = a.value["format"]?.stringValue {
            let newFormat = b.value["format"]?.stringValue
            if newFormat != oldFormat, !(newFormat.map { Self.formatIncludes(oldFormat, $0) } ?? false) {
                walk.add(
                    newFormat == nil ? "response-\(part)-format-removed" : "response-\(part)-format-changed",
                    .breaking, pointer,
                    .afterSubject(
                        newFormat.map { " changed format from \(oldFormat) to \($0)" }
                            ?? " is no longer promised to be \(oldFormat)"), origin: here)
            }
        }
        try compareAdditionalProperties(a, old, b, new, pointer: pointer, origin: here, &walk)
        if let (oldUnion, newUnion, oneSided) = unions(a, old, b, new) {
            let discriminated = b.value["discriminator"] != nil
            for variant in addedVariants(oldUnion.names, newUnion.names, discriminated: discriminated) {
                let keyword = newUnion.keyword.isEmpty ? oldUnion.keyword : newUnion.keyword
                let rule = "response-\(part)-\(keyword == "oneOf" ? "one-of" : "any-of")-added"
                walk.add(
                    rule, .breaking, pointer,
                    .afterSubject(
                        " may now be \(discriminated ? variant : "a new variant (\(variant))"): old clients cannot decode it (a union is closed, like an enum)"
                    ), origin: here)
            }
            try compareVariants(old, new, oldUnion, newUnion, pointer: pointer, origin: here, &walk)
            // A union on one side only: everything else was compared variant by variant.
            if oneSided { return }
        }
        for (name, oldProperty) in a.properties.sorted(by: { $0.key < $1.key }) {
            let childPointer = pointer + "/properties/" + JSONPointer.escape(name)
            // A member of an allOf part changes in the part (a removed one, where it was).
            // (A member gone from the revision is placed where the base had it, named in the revision's terms.)
            let owner =
                b.memberParts[name] != nil
                ? memberOrigin(name, in: b, new.file, pointer, here)
                : memberOrigin(name, a.memberParts[name], new.file, pointer, here)
            let wasWriteOnly = Self.isMarked("writeOnly", oldProperty, in: a.file(of: name, else: old.file), of: base)
            let isWriteOnly = b.properties[name].map {
                Self.isMarked("writeOnly", $0, in: b.file(of: name, else: new.file), of: revision)
            }
            if wasWriteOnly {
                // Never in a response before. Now sent (found in an outside audit: not compared at all): old
                // clients read it as an optional member of the type they know, so its type must still be that.
                if let newProperty = b.properties[name], isWriteOnly == false {
                    try child(
                        oldProperty, a.file(of: name, else: old.file), newProperty, b.file(of: name, else: new.file),
                        pointer: childPointer, origin: owner, &walk)
                }
                continue
            }
            guard let newProperty = b.properties[name] else {
                walk.add(
                    "response-property-removed", .breaking, childPointer, .plain("property \(name) is no longer sent"),
                    origin: owner)
                continue
            }
            if isWriteOnly == true {
                // No longer sent: a member old clients require goes missing (found in an outside audit).
                if a.required.contains(name) {
                    walk.add(
                        "response-property-became-write-only", .breaking, childPointer,
                        .plain("property \(name) is no longer sent (writeOnly): old clients require it"),
                        origin: owner)
                }
                continue
            }
            if a.required.contains(name), !b.required.contains(name) {
                walk.add(
                    "response-property-became-optional", .breaking, childPointer,
                    .plain("property \(name) may now be missing"), origin: owner)
            }
            try child(
                oldProperty, a.file(of: name, else: old.file), newProperty, b.file(of: name, else: new.file),
                pointer: childPointer, origin: owner, &walk)
        }
        // A required member the schema names no property for (any value, but present): old clients require
        // it, so it may not go missing (found in an outside audit: only named properties were compared).
        for name in a.required.subtracting(b.required).sorted() where a.properties[name] == nil {
            walk.add(
                "response-property-became-optional", .breaking, pointer + "/properties/" + JSONPointer.escape(name),
                .plain("property \(name) may now be missing"),
                origin: memberOrigin(name, in: b, new.file, pointer, here))
        }
        if let oldItems = a.items, let newItems = b.items {
            try child(oldItems, old.file, newItems, new.file, pointer: pointer + "/items", origin: here, &walk)
        }
        try comparePrefixItems(a, old, b, new, pointer: pointer, origin: here, &walk)
    }

    /// Whether `schema` admits every value: `true` or `{}`.
    static func admitsAnything(_ schema: JSONValue) -> Bool {
        if schema == .bool(true) { return true }
        if case .object(let members) = schema { return members.isEmpty }
        return false
    }

    /// Whether `schema` is a composition or a reference (its shape comes from elsewhere).
    static func isComposed(_ schema: JSONValue) -> Bool {
        ["oneOf", "anyOf", "allOf", "$ref"].contains { schema[$0] != nil }
    }

    /// Whether a schema without a `type` admits any JSON value: no composition, enum or const that would
    /// give its values a shape (those are compared by their own rules).
    static func isUnconstrained(_ schema: JSONValue) -> Bool {
        !isComposed(schema)
            && ["not", "enum", "const", "properties", "items", "x-extensible-enum"].allSatisfy { schema[$0] == nil }
    }

    /// Whether every value of format `narrow` is also of format `wide` (an int32 is an int64, a float a
    /// double): the widenings a client never notices.
    static func formatIncludes(_ wide: String, _ narrow: String) -> Bool {
        (wide == "int64" && narrow == "int32") || (wide == "double" && narrow == "float")
    }

    /// A tuple's elements (`prefixItems`), each compared with the one in its place (found in an outside audit:
    /// never compared).
    private mutating func comparePrefixItems(
        _ a: Shape, _ old: Resolved, _ b: Shape, _ new: Resolved, pointer: String, origin here: OriginBase?,
        _ walk: inout Walk
    ) throws(ContractLoadError) {
        guard case .array(let oldElements)? = a.value["prefixItems"],
            case .array(let newElements)? = b.value["prefixItems"]
        else { return }
        for index in 0..<min(oldElements.count, newElements.count) {
            try child(
                oldElements[index], old.file, newElements[index], new.file,
                pointer: pointer + "/prefixItems/\(index)", origin: here, &walk)
        }
    }

    /// `additionalProperties` schemas on both sides: compared as a member (in the pair's direction).
    private mutating func compareAdditionalProperties(
        _ a: Shape, _ old: Resolved, _ b: Shape, _ new: Resolved, pointer: String, origin here: OriginBase?,
        _ walk: inout Walk
    ) throws(ContractLoadError) {
        guard case .object(let oldSchema)? = a.value["additionalProperties"],
            case .object(let newSchema)? = b.value["additionalProperties"]
        else { return }
        try child(
            .object(oldSchema), old.file, .object(newSchema), new.file, pointer: pointer + "/additionalProperties",
            origin: here, &walk)
    }

    /// Requests: the client sends what the server must accept.
    private mutating func compareRequest(
        _ old: Resolved, _ new: Resolved, pointer: String, origin here: OriginBase?,
        referenceNull: (old: Bool, new: Bool) = (false, false), _ walk: inout Walk
    ) throws(ContractLoadError) {
        guard let (a, b) = shapes(old, new, referenceNull: referenceNull) else { return }
        let prefix: String
        if walk.isRoot(pointer), case .requestRoot(let rulePrefix) = walk.role {
            prefix = rulePrefix
        } else {
            prefix = "request-property"
        }
        // More values accepted than before (`integer` → `number`): whatever old clients send still is.
        Self.compareTypes(
            a, b, readerTakes: b.types, writerGives: a.types, prefix: prefix, relaxed: "generalized",
            relaxedWording: "widened", pointer: pointer, origin: here, &walk)
        // Any value was accepted; now one type: what old clients send may be of another.
        if a.types.isEmpty, !b.types.isEmpty, Self.isUnconstrained(a.value) {
            walk.add(
                "\(prefix)-type-added", .breaking, pointer,
                .afterSubject(" must now be \(b.types.sorted().joined(separator: " or "))"), origin: here)
        }
        if a.nullable, !b.nullable {
            walk.add(
                "\(prefix)-became-not-nullable", .breaking, pointer, .afterSubject(" may no longer be null"),
                origin: here)
        }
        if let oldValues = a.enumValues {
            let newValues = Set(b.enumValues ?? oldValues)
            for value in oldValues where !newValues.contains(value) {
                walk.add(
                    "\(prefix)-enum-value-removed", .breaking, pointer, .afterSubject(" no longer accepts \(value)"),
                    origin: here)
            }
        } else if let newValues = b.enumValues, !b.isExtensibleEnum {
            // Any value was accepted; now only these (an `enum` or a `const` added): what old clients send may be
            // refused.
            walk.add(
                "\(prefix)-enum-added", .breaking, pointer,
                .afterSubject(" now accepts only \(newValues.map(\.description).joined(separator: ", "))"), origin: here
            )
        }
        if let (oldUnion, newUnion, oneSided) = unions(a, old, b, new) {
            let discriminated = a.value["discriminator"] != nil
            let keyword = oldUnion.keyword.isEmpty ? newUnion.keyword : oldUnion.keyword
            for variant in addedVariants(newUnion.names, oldUnion.names, discriminated: discriminated) {
                walk.add(
                    "\(prefix)-\(keyword == "oneOf" ? "one-of" : "any-of")-removed", .breaking, pointer,
                    .afterSubject(
                        " no longer accepts \(discriminated ? variant : "one of its variants (\(variant))")"),
                    origin: here)
            }
            try compareVariants(old, new, oldUnion, newUnion, pointer: pointer, origin: here, &walk)
            // A union on one side only: everything else was compared variant by variant.
            if oneSided { return }
        }
        func number(_ name: String, _ shape: Shape) -> JSONNumber? {
            if case .number(let number) = shape.value[name] ?? .null { return number }
            return nil
        }
        // Numeric bounds are compared as what they admit: a value and whether it is exclusive, from `minimum`
        // with 3.0's boolean `exclusiveMinimum` or from 2020-12's numeric `exclusiveMinimum` (the tighter of
        // both); for an integer, `exclusiveMinimum: 0` is `minimum: 1`. Compared exactly, as written (found in
        // an outside audit: as Doubles, 2^53 + 1 → 2^53 was no change, and a bound beyond Double read "inf").
        func bound(_ shape: Shape, lower: Bool) -> (value: JSONNumber, exclusive: Bool)? {
            var result: (value: JSONNumber, exclusive: Bool)?
            if let value = number(lower ? "minimum" : "maximum", shape) {
                result = (value, shape.value[lower ? "exclusiveMinimum" : "exclusiveMaximum"] == .bool(true))
            }
            if let value = number(lower ? "exclusiveMinimum" : "exclusiveMaximum", shape),
                result.map({ lower ? value >= $0.value : value <= $0.value }) ?? true
            {
                result = (value, true)
            }
            if let found = result, found.exclusive, shape.types == ["integer"], let integer = found.value.int64,
                lower ? integer < .max : integer > .min
            {
                result = (JSONNumber(lower ? integer + 1 : integer - 1), false)
            }
            return result
        }
        for lower in [true, false] {
            guard let newBound = bound(b, lower: lower) else { continue }
            let oldBound = bound(a, lower: lower)
            let tightened =
                oldBound.map { old in
                    let stricter = lower ? newBound.value > old.value : newBound.value < old.value
                    return stricter || (newBound.value == old.value && newBound.exclusive && !old.exclusive)
                } ?? true
            guard tightened else { continue }
            let keyword = lower ? "minimum" : "maximum"
            // `maximum 20 → 10`; an exclusive bound is named so (`exclusiveMinimum 0`).
            func text(_ bound: (value: JSONNumber, exclusive: Bool), named: Bool) -> String {
                let name = bound.exclusive ? (lower ? "exclusiveMinimum" : "exclusiveMaximum") : keyword
                return (named ? name + " " : "") + bound.value.description
            }
            let sameKind = oldBound.map { $0.exclusive == newBound.exclusive } ?? true
            let change = oldBound == nil ? "added" : (lower ? "increased" : "decreased")
            walk.add(
                "\(prefix)-\(keyword)-\(change)", .breaking, pointer,
                .afterSubject(
                    ": "
                        + (oldBound.map { text($0, named: true) + " → " + text(newBound, named: !sameKind) }
                            ?? text(newBound, named: true))), origin: here)
        }
        for (keyword, tighterWhenLower) in [
            ("maxLength", true), ("maxItems", true), ("minLength", false), ("minItems", false),
            ("maxProperties", true), ("minProperties", false),
        ] {
            let oldLimit = number(keyword, a)
            let newLimit = number(keyword, b)
            guard let newLimit else { continue }
            let tightened: Bool
            if let oldLimit {
                tightened = tighterWhenLower ? newLimit < oldLimit : newLimit > oldLimit
            } else {
                tightened = true
            }
            if tightened {
                let change = tighterWhenLower ? "decreased" : "increased"
                let rule = "\(prefix)-\(Self.kebab(keyword))-\(oldLimit == nil ? "added" : change)"
                walk.add(
                    rule, .breaking, pointer,
                    .afterSubject(": \(keyword) \(oldLimit.map { "\($0) → " } ?? "")\(newLimit)"), origin: here)
            }
        }
        // A multiple the value must now be of: unless the old one was already a multiple of it, what old clients
        // send may not be (0.01 → 0.05 refuses 0.02).
        if let newMultiple = number("multipleOf", b), JSONNumber(Int64(0)) < newMultiple {
            let oldMultiple = number("multipleOf", a)
            // Exactly: every multiple of the old one is a multiple of the new one when the old is one of it.
            let implied = oldMultiple.map { old in JSONNumber(Int64(0)) < old && old.isMultiple(of: newMultiple) }
            if implied != true {
                walk.add(
                    "\(prefix)-multiple-of-\(oldMultiple == nil ? "added" : "changed")", .breaking, pointer,
                    .afterSubject(" must now be a multiple of \(number("multipleOf", b)!)"), origin: here)
            }
        }
        if b.value["uniqueItems"] == .bool(true), a.value["uniqueItems"] != .bool(true) {
            walk.add(
                "\(prefix)-unique-items-added", .breaking, pointer, .afterSubject(" must now hold no repeated element"),
                origin: here)
        }
        if let newPattern = b.value["pattern"]?.stringValue, newPattern != a.value["pattern"]?.stringValue {
            walk.add(
                "\(prefix)-pattern-\(a.value["pattern"] == nil ? "added" : "changed")", .breaking, pointer,
                .afterSubject(" must now match \(newPattern.debugDescription)"), origin: here)
        }
        // A `format` the server now checks: what installed clients send may not be of it (a widening, such
        // as int32 → int64, accepts everything it did).
        if let newFormat = b.value["format"]?.stringValue {
            let oldFormat = a.value["format"]?.stringValue
            if newFormat != oldFormat, !(oldFormat.map { Self.formatIncludes(newFormat, $0) } ?? false) {
                walk.add(
                    "\(prefix)-format-\(oldFormat == nil ? "added" : "changed")", .breaking, pointer,
                    .afterSubject(
                        oldFormat.map { " changed format from \($0) to \(newFormat)" } ?? " must now be \(newFormat)"),
                    origin: here)
            }
        }
        // A `not` added or changed: values the server accepted may now be refused (found in an outside audit:
        // never compared). Whether a changed one refuses more is not worked out: someone looks.
        if let newNot = b.value["not"], a.value["not"] != newNot {
            walk.add(
                "\(prefix)-not-\(a.value["not"] == nil ? "added" : "changed")", .breaking, pointer,
                .afterSubject(" now refuses the values its `not` describes"), origin: here)
        }
        // Members the schema does not name: refused now where they were accepted.
        if b.value["additionalProperties"] == .bool(false), a.value["additionalProperties"] != .bool(false),
            b.types.isEmpty || b.types.contains("object")
        {
            walk.add(
                "\(prefix)-additional-properties-disallowed", .breaking, pointer,
                .afterSubject(" no longer accepts members it does not name"), origin: here)
        }
        // Members it does not name were accepted as anything; now they must match a schema (found in an outside
        // audit: only `false` was seen).
        if case .object(let newExtra)? = b.value["additionalProperties"], !Self.admitsAnything(.object(newExtra)),
            a.value["additionalProperties"].map(Self.admitsAnything) ?? true,
            b.types.isEmpty || b.types.contains("object")
        {
            walk.add(
                "\(prefix)-additional-properties-narrowed", .breaking, pointer,
                .afterSubject("'s members it does not name must now match a schema"), origin: here)
        }
        try compareAdditionalProperties(a, old, b, new, pointer: pointer, origin: here, &walk)
        // A closed object (no members it does not name) that no longer names a member: old clients that send it
        // are refused.
        if b.value["additionalProperties"] == .bool(false), b.types.isEmpty || b.types.contains("object") {
            for name in a.properties.keys.sorted() where b.properties[name] == nil {
                if Self.isMarked("readOnly", a.properties[name]!, in: a.file(of: name, else: old.file), of: base) {
                    continue  // never sent by a client
                }
                walk.add(
                    "\(prefix)-property-removed-from-closed-object", .breaking,
                    pointer + "/properties/" + JSONPointer.escape(name),
                    .afterRequestSubject(" no longer accepts property \(name) (it accepts no member it does not name)"),
                    origin: memberOrigin(name, a.memberParts[name], new.file, pointer, here))
            }
        } else if b.types.isEmpty || b.types.contains("object"), b.value["oneOf"] == nil, b.value["anyOf"] == nil {
            // (A union's members are its variants', compared variant by variant: not read as removed here.)
            // An open object that no longer names a member: what installed clients send there is accepted and
            // ignored — dropped unsaved, without a word. Someone decides whether that loses anything, as for a
            // parameter no longer read (oasdiff warns too; found in an outside audit).
            for name in a.properties.keys.sorted() where b.properties[name] == nil {
                if Self.isMarked("readOnly", a.properties[name]!, in: a.file(of: name, else: old.file), of: base) {
                    continue  // never sent by a client
                }
                walk.add(
                    "request-property-removed", .warning, pointer + "/properties/" + JSONPointer.escape(name),
                    .afterRequestSubject(
                        " no longer reads property \(name): what installed clients send there is ignored"),
                    origin: memberOrigin(name, a.memberParts[name], new.file, pointer, here))
            }
        }
        for name in b.required.sorted() {
            // A readOnly member is never sent by a client: its `required` holds for responses only.
            if let property = b.properties[name],
                Self.isMarked("readOnly", property, in: b.file(of: name, else: new.file), of: revision)
            {
                continue
            }
            // Required of clients before too — unless it was readOnly then, so never sent by one (found in an
            // outside audit: a required member that lost readOnly was not seen).
            if a.required.contains(name) {
                guard let property = a.properties[name],
                    Self.isMarked("readOnly", property, in: a.file(of: name, else: old.file), of: base)
                else { continue }
            }
            let childPointer = pointer + "/properties/" + JSONPointer.escape(name)
            let owner = memberOrigin(name, in: b, new.file, pointer, here)
            if a.properties[name] == nil {
                walk.add(
                    "new-required-request-property", .breaking, childPointer,
                    .afterRequestSubject(" needs a new property \(name)"), origin: owner)
            } else {
                walk.add(
                    "request-property-became-required", .breaking, childPointer,
                    .afterRequestSubject(" property \(name) is now required"), origin: owner)
            }
        }
        for (name, newProperty) in b.properties.sorted(by: { $0.key < $1.key }) {
            guard let oldProperty = a.properties[name] else { continue }
            try child(
                oldProperty, a.file(of: name, else: old.file), newProperty, b.file(of: name, else: new.file),
                pointer: pointer + "/properties/" + JSONPointer.escape(name),
                origin: memberOrigin(name, in: b, new.file, pointer, here), &walk)
        }
        if let oldItems = a.items, let newItems = b.items {
            try child(oldItems, old.file, newItems, new.file, pointer: pointer + "/items", origin: here, &walk)
        }
        try comparePrefixItems(a, old, b, new, pointer: pointer, origin: here, &walk)
    }
}
