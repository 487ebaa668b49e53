// The libyaml adapter: the only file in KeelContractTools that calls the CYAML shim.
import CYAML
public import KeelContract
public import KeelCore

/// Reads YAML (the subset API descriptions use) into ``JSONValue``, with YAML 1.2 core-schema scalars.
///
/// - Block and flow collections, every scalar style (plain, quoted, literal `|`, folded `>`), comments.
/// - Core schema: `null`/`~`/empty, `true`/`false` (any case pattern the spec lists), decimal, `0o` octal
///   and `0x` hex integers, floats like `1e3`; `on`, `yes`, `no` stay strings (YAML 1.1's booleans are not
///   booleans here). Quoted scalars are always strings.
/// - Anchors and aliases, with a limit on how many nodes aliases may expand to (against alias bombs).
/// - A repeated mapping key is an error, never "last one wins".
/// - One document per file; mapping keys must be scalars.
public enum YAML {
    /// Limits for hostile documents.
    public struct Limits: Sendable {
        /// Most nodes (scalars and collections) the document may expand to, aliases included.
        public var maximumNodes: Int
        /// Deepest nesting accepted.
        public var maximumDepth: Int
        /// Limits with the given node count and depth; the defaults suit API descriptions.
        public init(maximumNodes: Int = 1_000_000, maximumDepth: Int = 256) {
            self.maximumNodes = maximumNodes
            self.maximumDepth = maximumDepth
        }
    }

    /// Parses `text` into a JSON value.
    ///
    /// - Throws: ``YAMLError`` with line and column.
    public static func parse(_ text: String, limits: Limits = Limits()) throws(YAMLError) -> JSONValue {
        try parse(Array(text.utf8), limits: limits)
    }

    /// Parses UTF-8 bytes into a JSON value.
    public static func parse(_ bytes: [UInt8], limits: Limits = Limits()) throws(YAMLError) -> JSONValue {
        var references: [String] = []
        return try parse(bytes, limits: limits, references: &references)
    }

    /// Parses UTF-8 bytes into a JSON value, appending to `references` the string value of every `$ref`
    /// mapping member, in the order they are read (the loader checks them without walking the tree).
    package static func parse(_ bytes: [UInt8], limits: Limits = Limits(), references: inout [String]) throws(YAMLError)
        -> JSONValue
    {
        var builder = Builder(limits: limits)
        defer { references += builder.references }
        var parser = yaml_parser_t()
        guard yaml_parser_initialize(&parser) == 1 else {
            throw YAMLError(code: .parserUnavailable, message: "cannot initialize the YAML parser", line: 0, column: 0)
        }
        defer { yaml_parser_delete(&parser) }
        // libyaml's events are copied out (their text into one buffer) and freed at once, a batch at a time,
        // and then built. Building each event as it came interleaved libyaml's scanner with the builder on
        // every event, and libyaml ran ~1.4 × slower inside the loader than alone (each evicted the other's
        // code and data from the CPU caches); holding libyaml's events for a batch instead made its
        // allocations slow (keel-bench contract.diff).
        var batch = Batch()
        return try bytes.withUnsafeBufferPointer { buffer throws(YAMLError) -> JSONValue in
            yaml_parser_set_input_string(&parser, buffer.baseAddress, buffer.count)
            while true {
                batch.removeAll()
                var failed = false
                while batch.events.count < Batch.capacity {
                    var event = yaml_event_t()
                    guard yaml_parser_parse(&parser, &event) == 1 else {
                        failed = true
                        break
                    }
                    batch.append(&event)
                    yaml_event_delete(&event)
                    if batch.events.last!.type == YAML_STREAM_END_EVENT.rawValue { break }
                }
                // Events before a syntax error are built first: an error they raise comes earlier in the text.
                let result = try batch.text.withUnsafeBufferPointer { text throws(YAMLError) -> JSONValue? in
                    for event in batch.events {
                        if let result = try builder.consume(event, text: text) { return result }
                    }
                    return nil
                }
                if let result { return result }
                if failed {
                    let problem = parser.problem.map { String(cString: $0) } ?? "invalid YAML"
                    // libyaml's reader (the encoding: a byte that is not UTF-8) gives a byte offset, not a mark
                    // (left at line 1, column 1): the place is counted from the offset (outside audit).
                    if parser.error == YAML_READER_ERROR {
                        let (line, column) = Self.place(ofOffset: Int(parser.problem_offset), in: buffer)
                        throw YAMLError(code: .syntax, message: problem, line: line, column: column)
                    }
                    throw YAMLError(
                        code: .syntax, message: problem, line: Int(parser.problem_mark.line) + 1,
                        column: Int(parser.problem_mark.column) + 1)
                }
            }
        }
    }

    /// The 1-based line and column of byte `offset` in `bytes` (columns counted in characters, as libyaml
    /// counts them: a UTF-8 continuation byte starts none).
    static func place(ofOffset offset: Int, in bytes: UnsafeBufferPointer<UInt8>) -> (line: Int, column: Int) {
        var line = 1
        var column = 1
        for byte in bytes.prefix(min(max(offset, 0), bytes.count)) {
            if byte == 10 {
                line += 1
                column = 1
            } else if byte & 0xC0 != 0x80 {
                column += 1
            }
        }
        return (line, column)
    }

    /// What the builder needs of one libyaml event, its text in the batch's buffer.
    fileprivate struct Event {
        /// libyaml's `yaml_event_type_t`, as its raw value (a switch over the imported enum compared
        /// through its `Equatable` conformance, event by event).
        let type: UInt32
        let line: Int
        let column: Int
        /// A plain (unquoted, not block) scalar.
        let plain: Bool
        /// A scalar's value or an alias's anchor name.
        let value: Range<Int>
        let anchor: Range<Int>?
        let tag: Range<Int>?
    }

    /// Events copied out of libyaml.
    private struct Batch {
        static let capacity = 512
        private(set) var events: [Event] = []
        private(set) var text: [UInt8] = []

        init() {
            events.reserveCapacity(Self.capacity)
            text.reserveCapacity(64 * 1024)
        }

        mutating func removeAll() {
            events.removeAll(keepingCapacity: true)
            text.removeAll(keepingCapacity: true)
        }

        mutating func append(_ event: inout yaml_event_t) {
            var value = 0..<0
            var plain = false
            switch event.type.rawValue {
            case YAML_SCALAR_EVENT.rawValue:
                value = copy(keel_yaml_event_scalar_value(&event), count: keel_yaml_event_scalar_length(&event))
                plain = keel_yaml_event_scalar_style(&event) == YAML_PLAIN_SCALAR_STYLE
            case YAML_ALIAS_EVENT.rawValue:
                value = copy(keel_yaml_event_alias_anchor(&event))
            default: break
            }
            let anchor: Range<Int>? =
                event.type.rawValue == YAML_ALIAS_EVENT.rawValue ? nil : keel_yaml_event_anchor(&event).map { copy($0) }
            let tag =
                event.type.rawValue == YAML_SCALAR_EVENT.rawValue ? keel_yaml_event_tag(&event).map { copy($0) } : nil
            events.append(
                Event(
                    type: event.type.rawValue, line: Int(event.start_mark.line) + 1,
                    column: Int(event.start_mark.column) + 1,
                    plain: plain, value: value, anchor: anchor, tag: tag))
        }

        /// Copies `count` bytes (up to the terminating NUL when nil) into `text`; returns where they are.
        private mutating func copy(_ pointer: UnsafePointer<UInt8>?, count: Int? = nil) -> Range<Int> {
            guard let pointer else { return 0..<0 }
            let start = text.count
            text.append(contentsOf: UnsafeBufferPointer(start: pointer, count: count ?? strlen(pointer)))
            return start..<text.count
        }
    }

    /// Turns the event stream into a value tree.
    private struct Builder {
        let limits: Limits

        /// One open collection. Its elements (or a mapping's keys and values) sit at the end of the
        /// shared `keys` and `values` buffers from `keyStart` and `valueStart` on, so building a
        /// collection allocates once, at its exact size, when it ends.
        private struct Frame {
            let isMapping: Bool
            let keyStart: Int
            let valueStart: Int
            let anchor: String?
            /// Whether `keys.last` is a key still waiting for its value.
            var hasPendingKey = false
            /// The keys read so far with their offsets, once a mapping has too many to scan for duplicates:
            /// the index its ``JSONObject`` takes over (keys compared by their UTF-8 bytes).
            var positions: [JSONObject.MemberName: Int]?
        }

        /// Where an event starts (1-based), to make the error that names it. (A plain value rather than a
        /// closure: building the closure per event cost a generic-metadata lookup each time.)
        struct Mark {
            let line: Int
            let column: Int

            func error(_ code: YAMLError.Code, _ message: String) -> YAMLError {
                YAMLError(code: code, message: message, line: line, column: column)
            }
        }

        /// Mappings with more keys than this check new keys for duplicates with a hash index: those the
        /// object keeps for its lookups.
        private static let scannedKeys = JSONObject.indexThreshold

        private var stack: [Frame] = []
        private let keys = Scratch<String>()
        private let values = Scratch<JSONValue>()
        /// Anchored values with their node count and depth (a scalar 0, a collection 1 + its deepest child):
        /// an alias adds both where it appears.
        private var anchors: [String: (value: JSONValue, nodes: Int, depth: Int)] = [:]
        private var nodes = 0
        private var documents = 0
        private var result: JSONValue?
        /// The value of every `$ref` member with a string value.
        private(set) var references: [String] = []

        init(limits: Limits) { self.limits = limits }

        mutating func consume(_ event: Event, text: UnsafeBufferPointer<UInt8>) throws(YAMLError) -> JSONValue? {
            let mark = Mark(line: event.line, column: event.column)
            func string(_ range: Range<Int>?) -> String? {
                range.map { String(decoding: UnsafeBufferPointer(rebasing: text[$0]), as: UTF8.self) }
            }

            switch event.type {
            case YAML_STREAM_START_EVENT.rawValue:
                return nil
            case YAML_DOCUMENT_START_EVENT.rawValue:
                documents += 1
                guard documents == 1 else {
                    throw mark.error(
                        .multipleDocuments, "more than one YAML document; an API description is one document")
                }
                return nil
            case YAML_DOCUMENT_END_EVENT.rawValue:
                return nil
            case YAML_STREAM_END_EVENT.rawValue:
                return result ?? .null
            case YAML_ALIAS_EVENT.rawValue:
                guard let name = string(event.value), let anchored = anchors[name] else {
                    throw mark.error(.syntax, "alias to an undefined anchor")
                }
                try count(anchored.nodes, at: mark)
                // The anchored tree goes where the alias is: nested past the limit there, it is too deep, as
                // written out it would have been (a chain of aliases would otherwise nest without bound).
                guard stack.count + anchored.depth <= limits.maximumDepth else {
                    throw mark.error(.tooDeep, "nesting deeper than \(limits.maximumDepth) levels (through an alias)")
                }
                try add(anchored.value, at: mark)
            case YAML_SCALAR_EVENT.rawValue:
                let bytes = UnsafeBufferPointer(rebasing: text[event.value])
                // A plain `<<` key is YAML 1.1's merge key: read as a member named "<<", the merged members
                // would be lost without a word. Refused instead; a quoted "<<" is an ordinary name.
                if event.plain, bytes.count == 2, bytes[0] == UInt8(ascii: "<"), bytes[1] == UInt8(ascii: "<"),
                    let top = stack.last, top.isMapping, !top.hasPendingKey
                {
                    throw mark.error(
                        .mergeKey,
                        "merge keys (<<) are not supported: write the merged members out (or quote \"<<\" for a member of that name)"
                    )
                }
                let value: JSONValue
                if let tag = string(event.tag) {
                    value = try resolve(String(decoding: bytes, as: UTF8.self), plain: event.plain, tag: tag, at: mark)
                } else {
                    value = try resolve(bytes, plain: event.plain, at: mark)
                }
                try count(1, at: mark)
                if let anchor = string(event.anchor) { anchors[anchor] = (value, 1, 0) }
                try add(value, at: mark)
            case YAML_SEQUENCE_START_EVENT.rawValue, YAML_MAPPING_START_EVENT.rawValue:
                guard stack.count < limits.maximumDepth else {
                    throw mark.error(.tooDeep, "nesting deeper than \(limits.maximumDepth) levels")
                }
                try count(1, at: mark)
                stack.append(
                    Frame(
                        isMapping: event.type == YAML_MAPPING_START_EVENT.rawValue, keyStart: keys.count,
                        valueStart: values.count, anchor: string(event.anchor)))
            case YAML_SEQUENCE_END_EVENT.rawValue, YAML_MAPPING_END_EVENT.rawValue:
                let frame = stack.removeLast()
                let value: JSONValue
                if frame.isMapping {
                    guard !frame.hasPendingKey else {
                        throw mark.error(.syntax, "mapping ends after a key without a value")
                    }
                    var positions = frame.positions
                    value = keys.moveOut(from: frame.keyStart) { keys in
                        values.moveOut(from: frame.valueStart) { values in
                            .object(JSONObject(movingUniqueKeys: keys, values: values, positions: positions.take()))
                        }
                    }
                } else {
                    value = values.moveOut(from: frame.valueStart) { values in
                        .array(
                            Array(unsafeUninitializedCapacity: values.count) { buffer, initialized in
                                if !values.isEmpty {
                                    buffer.baseAddress!.moveInitialize(from: values.baseAddress!, count: values.count)
                                }
                                initialized = values.count
                            })
                    }
                }
                if let anchor = frame.anchor {
                    let size = Self.size(value)
                    anchors[anchor] = (value, size.nodes, size.depth)
                }
                try add(value, at: mark)
            default:
                return nil
            }
            return nil
        }

        private mutating func count(_ added: Int, at mark: Mark) throws(YAMLError) {
            nodes += added
            guard nodes <= limits.maximumNodes else {
                throw mark.error(
                    .tooManyNodes, "the document expands to more than \(limits.maximumNodes) nodes (alias bomb?)")
            }
        }

        private mutating func add(_ value: consuming JSONValue, at mark: Mark)
            throws(YAMLError)
        {
            let top = stack.count - 1
            guard top >= 0 else {
                result = value
                return
            }
            guard stack[top].isMapping else {
                values.append(value)
                return
            }
            if stack[top].hasPendingKey {
                // The key was checked against the mapping's other keys when it was read.
                if case .string(let target) = value, JSONObject.sameName(keys[keys.count - 1], "$ref") {
                    references.append(target)
                }
                values.append(value)
                stack[top].hasPendingKey = false
                return
            }
            let key: String
            switch value {
            case .string(let text): key = text
            case .number(let number): key = number.literal
            case .bool(let flag): key = flag ? "true" : "false"
            case .null: key = "null"
            default: throw mark.error(.nonScalarKey, "a mapping key must be a scalar")
            }
            let keyStart = stack[top].keyStart
            let offset = keys.count - keyStart
            if stack[top].positions != nil {
                guard stack[top].positions!.updateValue(offset, forKey: JSONObject.MemberName(name: key)) == nil else {
                    throw mark.error(.duplicateKey, "duplicate key \(key.debugDescription)")
                }
            } else {
                for index in keyStart..<keys.count where JSONObject.sameName(keys[index], key) {
                    throw mark.error(.duplicateKey, "duplicate key \(key.debugDescription)")
                }
                if offset == Self.scannedKeys {
                    var positions = [JSONObject.MemberName: Int](minimumCapacity: 4 * Self.scannedKeys)
                    for index in keyStart..<keys.count {
                        positions[JSONObject.MemberName(name: keys[index])] = index - keyStart
                    }
                    positions[JSONObject.MemberName(name: key)] = offset
                    stack[top].positions = positions
                }
            }
            keys.append(key)
            stack[top].hasPendingKey = true
        }

        /// How many nodes `value` has and how deep it nests (0 for a scalar, 1 + the deepest element for a
        /// collection), in one walk. Every value built is within the depth limit, so this recursion is too.
        static func size(_ value: JSONValue) -> (nodes: Int, depth: Int) {
            func add(_ total: inout (nodes: Int, depth: Int), _ child: JSONValue) {
                let size = size(child)
                total = (total.nodes + size.nodes, max(total.depth, size.depth + 1))
            }
            var total = (nodes: 1, depth: 0)
            switch value {
            case .array(let elements):
                total.depth = 1
                for element in elements { add(&total, element) }
            case .object(let object):
                total.depth = 1
                for (_, member) in object { add(&total, member) }
            default: break
            }
            return total
        }

        /// An untagged scalar straight from libyaml's buffer: the common case (a word or a quoted string)
        /// becomes a string without building any other text; the rest goes through the core schema.
        private func resolve(
            _ bytes: UnsafeBufferPointer<UInt8>, plain: Bool, at mark: Mark
        ) throws(YAMLError) -> JSONValue {
            guard plain else { return .string(String(decoding: bytes, as: UTF8.self)) }
            guard let lead = bytes.first else { return .null }
            switch lead {
            case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "+"), UInt8(ascii: "."):
                // Plain decimal integers (`64`, `200`) are already JSON number literals.
                if lead != UInt8(ascii: "0") || bytes.count == 1, bytes.count <= 18,
                    bytes.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") })
                {
                    return .number(JSONNumber(literal: String(decoding: bytes, as: UTF8.self))!)
                }
                return try resolve(String(decoding: bytes, as: UTF8.self), plain: true, tag: nil, at: mark)
            case UInt8(ascii: "~"), UInt8(ascii: "n"), UInt8(ascii: "N"), UInt8(ascii: "t"), UInt8(ascii: "T"),
                UInt8(ascii: "f"), UInt8(ascii: "F"):
                // Possibly `null`, `true`, `false` in one of their spellings (at most five bytes): compare
                // the bytes packed in an integer, without making a string first.
                if bytes.count <= 5 {
                    var packed: UInt64 = 0
                    for byte in bytes { packed = packed << 8 | UInt64(byte) }
                    if Self.nullWords.contains(packed) { return .null }
                    if Self.trueWords.contains(packed) { return .bool(true) }
                    if Self.falseWords.contains(packed) { return .bool(false) }
                }
                return .string(String(decoding: bytes, as: UTF8.self))
            default:
                return .string(String(decoding: bytes, as: UTF8.self))
            }
        }

        /// The core schema's spellings of null, true and false, each packed big-endian into an integer.
        private static let nullWords = ["~", "null", "Null", "NULL"].map(packed)
        private static let trueWords = ["true", "True", "TRUE"].map(packed)
        private static let falseWords = ["false", "False", "FALSE"].map(packed)

        private static func packed(_ word: String) -> UInt64 { word.utf8.reduce(0) { $0 << 8 | UInt64($1) } }

        /// YAML 1.2 core schema for plain scalars; quoted scalars are strings.
        private func resolve(_ raw: String, plain: Bool, tag: String?, at mark: Mark)
            throws(YAMLError) -> JSONValue
        {
            switch tag {
            case nil, "!": break
            case "tag:yaml.org,2002:str": return .string(raw)
            case "tag:yaml.org,2002:null": return .null
            case "tag:yaml.org,2002:bool", "tag:yaml.org,2002:int", "tag:yaml.org,2002:float":
                let value = try resolve(raw, plain: true, tag: nil, at: mark)
                guard value != .string(raw) else {
                    throw mark.error(
                        .invalidScalar, "\(raw.debugDescription) is not a \(tag!.split(separator: ":").last!)")
                }
                return value
            default:
                throw mark.error(.unsupportedTag, "unsupported tag \(tag!)")
            }
            guard plain else { return .string(raw) }
            switch raw {
            case "", "~", "null", "Null", "NULL": return .null
            case "true", "True", "TRUE": return .bool(true)
            case "false", "False", "FALSE": return .bool(false)
            case ".inf", ".Inf", ".INF", "+.inf", "-.inf", ".nan", ".NaN", ".NAN":
                throw mark.error(.invalidScalar, "\(raw) is not representable in JSON")
            default: break
            }
            if let number = Self.number(raw) { return .number(number) }
            return .string(raw)
        }

        /// Core-schema integers and floats, normalized to a JSON number literal.
        static func number(_ raw: String) -> JSONNumber? {
            // Most plain scalars are words; reject them before any other work (a hot path when loading).
            guard let lead = raw.utf8.first,
                lead == UInt8(ascii: "-") || lead == UInt8(ascii: "+") || lead == UInt8(ascii: ".")
                    || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(lead)
            else { return nil }
            if raw.hasPrefix("0o"), raw.count > 2, let value = UInt64(raw.dropFirst(2), radix: 8) {
                return JSONNumber(literal: String(value))
            }
            if raw.hasPrefix("0x"), raw.count > 2, let value = UInt64(raw.dropFirst(2), radix: 16) {
                return JSONNumber(literal: String(value))
            }
            var text = Substring(raw)
            var sign = ""
            if text.first == "-" || text.first == "+" {
                sign = text.first == "-" ? "-" : ""
                text = text.dropFirst()
            }
            guard let first = text.first, first.isASCII, first.isNumber || first == "." else { return nil }
            var mantissa = text
            var exponent = ""
            if let e = text.firstIndex(where: { $0 == "e" || $0 == "E" }) {
                mantissa = text[..<e]
                exponent = String(text[e...])
            }
            let parts = mantissa.split(separator: ".", omittingEmptySubsequences: false)
            guard parts.count <= 2, parts.allSatisfy({ $0.allSatisfy { $0.isASCII && $0.isNumber } }),
                !(parts[0].isEmpty && (parts.count == 1 || parts[1].isEmpty))
            else { return nil }
            var integer = String(parts[0].drop { $0 == "0" })
            if integer.isEmpty { integer = "0" }
            var literal = sign + integer
            if parts.count == 2, !parts[1].isEmpty { literal += "." + parts[1] }
            if !exponent.isEmpty { literal += exponent }
            return JSONNumber(literal: literal)
        }
    }
}

/// A stack in memory managed by hand, so that a finished collection's elements can be moved out of it
/// into their array or object (copying them out of an `Array` would retain and release each one).
private final class Scratch<Element> {
    private var base: UnsafeMutablePointer<Element>
    private var capacity = 1024
    private(set) var count = 0

    init() { base = .allocate(capacity: capacity) }

    deinit {
        base.deinitialize(count: count)
        base.deallocate()
    }

    func append(_ element: consuming Element) {
        if count == capacity {
            let larger = UnsafeMutablePointer<Element>.allocate(capacity: capacity * 2)
            larger.moveInitialize(from: base, count: count)
            base.deallocate()
            base = larger
            capacity *= 2
        }
        (base + count).initialize(to: element)
        count += 1
    }

    subscript(index: Int) -> Element { base[index] }

    /// Hands `body` the elements from `start` on, which it must move out (deinitialize), and drops them.
    func moveOut<Result>(from start: Int, _ body: (UnsafeMutableBufferPointer<Element>) -> Result) -> Result {
        let result = body(UnsafeMutableBufferPointer(start: base + start, count: count - start))
        count = start
        return result
    }
}

/// YAML that cannot be read, with where.
public struct YAMLError: KeelError, Equatable {
    /// Codes of ``YAMLError``.
    public typealias Code = ErrorCode<YAMLError>

    /// What is wrong.
    public let code: Code
    /// A short explanation.
    public let message: String
    /// 1-based line and column.
    public let line: Int
    /// The column of the problem (1-based).
    public let column: Int
    /// A developer-facing explanation: the line and column of the problem, then the message.
    public var description: String { "line \(line), column \(column): \(message)" }
}

extension ErrorCode where Domain == YAMLError {
    /// libyaml could not be initialized.
    public static var parserUnavailable: Self { Self("parserUnavailable") }
    /// Not well-formed YAML (libyaml's syntax errors, an alias to an undefined anchor).
    public static var syntax: Self { Self("syntax") }
    /// More than one document in the stream.
    public static var multipleDocuments: Self { Self("multipleDocuments") }
    /// Nesting deeper than the limit.
    public static var tooDeep: Self { Self("tooDeep") }
    /// Aliases expand to more nodes than the limit (an alias bomb).
    public static var tooManyNodes: Self { Self("tooManyNodes") }
    /// A mapping key that is not a scalar.
    public static var nonScalarKey: Self { Self("nonScalarKey") }
    /// A mapping repeats a key.
    public static var duplicateKey: Self { Self("duplicateKey") }
    /// A tagged scalar that is not of its tag's type, or a value JSON cannot represent.
    public static var invalidScalar: Self { Self("invalidScalar") }
    /// A tag outside the YAML 1.2 core schema.
    public static var unsupportedTag: Self { Self("unsupportedTag") }
    /// A YAML 1.1 merge key (`<<: *anchor`), which Keel does not expand.
    public static var mergeKey: Self { Self("mergeKey") }
}
