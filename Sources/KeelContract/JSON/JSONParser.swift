import Foundation
public import KeelCore

/// Limits that keep hostile JSON from exhausting the stack or memory.
public struct JSONParsingLimits: Sendable, Equatable {
    /// Deepest nesting of arrays and objects accepted. Default 512.
    public var maximumDepth: Int
    /// Whether an object may repeat a key. Default false: a repeated key is an error, because two
    /// readers of the same document could otherwise disagree on its value.
    public var allowsDuplicateKeys: Bool

    /// Limits with the given depth and duplicate-key policy.
    public init(maximumDepth: Int = 512, allowsDuplicateKeys: Bool = false) {
        precondition(maximumDepth > 0, "maximumDepth must be positive")
        self.maximumDepth = maximumDepth
        self.allowsDuplicateKeys = allowsDuplicateKeys
    }
}

/// JSON text that could not be parsed, with where and why.
public struct JSONParseError: KeelError, Equatable, CustomStringConvertible {
    /// What kind of problem it is.
    public typealias Code = ErrorCode<JSONParseError>

    /// What kind of problem it is.
    public let code: Code
    /// Byte offset of the problem (0-based).
    public let offset: Int
    /// Line of the problem (1-based).
    public let line: Int
    /// Column of the problem, in bytes (1-based).
    public let column: Int
    /// A short explanation.
    public let message: String

    /// A developer-facing explanation: the line and column of the problem, then the message.
    public var description: String { "line \(line), column \(column): \(message)" }
}

extension JSONValue {
    /// Parses UTF-8 JSON text strictly (RFC 8259): one value, optional surrounding whitespace, an
    /// optional leading byte-order mark; nothing else.
    ///
    /// - Throws: ``JSONParseError`` with the position of the first problem.
    public init(parsing data: some Collection<UInt8>, limits: JSONParsingLimits = JSONParsingLimits())
        throws(JSONParseError)
    {
        let bytes = Array(data)
        var parser = JSONParser(bytes: bytes, limits: limits)
        self = try parser.parseDocument()
    }

    /// Parses JSON text given as a string.
    public init(parsing text: String, limits: JSONParsingLimits = JSONParsingLimits()) throws(JSONParseError) {
        try self.init(parsing: Array(text.utf8), limits: limits)
    }
}

/// A recursive-descent parser over UTF-8 bytes. Recursion depth is bounded by the limits.
struct JSONParser {
    let bytes: [UInt8]
    let limits: JSONParsingLimits
    var index = 0
    var depth = 0

    init(bytes: [UInt8], limits: JSONParsingLimits) {
        self.bytes = bytes
        self.limits = limits
    }

    mutating func parseDocument() throws(JSONParseError) -> JSONValue {
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { index = 3 }
        skipWhitespace()
        let value = try parseValue()
        skipWhitespace()
        guard index == bytes.count else {
            throw error(.trailingContent, "unexpected \(describeByte(at: index)) after the JSON value")
        }
        return value
    }

    private mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    private mutating func parseValue() throws(JSONParseError) -> JSONValue {
        guard index < bytes.count else { throw error(.unexpectedEnd, "expected a value, found the end of the text") }
        switch bytes[index] {
        case UInt8(ascii: "{"): return try parseObject()
        case UInt8(ascii: "["): return try parseArray()
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"): return try parseLiteral("true", .bool(true))
        case UInt8(ascii: "f"): return try parseLiteral("false", .bool(false))
        case UInt8(ascii: "n"): return try parseLiteral("null", .null)
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try parseNumber())
        case UInt8(ascii: "N"), UInt8(ascii: "I"):
            throw error(.invalidNumber, "NaN and Infinity are not JSON numbers")
        default:
            throw error(.unexpectedCharacter, "expected a value, found \(describeByte(at: index))")
        }
    }

    private mutating func parseLiteral(_ word: StaticString, _ value: JSONValue) throws(JSONParseError) -> JSONValue {
        let expected = UnsafeBufferPointer(start: word.utf8Start, count: word.utf8CodeUnitCount)
        guard bytes.count - index >= expected.count, bytes[index..<index + expected.count].elementsEqual(expected)
        else {
            let rest = bytes[index...]
            let truncated = rest.count < expected.count && expected.starts(with: rest)
            throw error(truncated ? .unexpectedEnd : .unexpectedCharacter, "expected '\(word)'")
        }
        index += expected.count
        return value
    }

    private mutating func enter() throws(JSONParseError) {
        depth += 1
        guard depth <= limits.maximumDepth else {
            throw error(.tooDeep, "nesting deeper than \(limits.maximumDepth) levels")
        }
        // The thread's stack, looked at once nesting is deep (most documents never are): a depth within the
        // limit can still be more than a small stack holds (a debug build's frames on a 512 KiB thread
        // overflowed at ~150 levels).
        if depth >= 32, depth % 8 == 0, ThreadStack.current.isNearlyExhausted() {
            throw error(.tooDeep, "nesting of \(depth) levels is more than this thread's stack holds")
        }
    }

    private mutating func parseArray() throws(JSONParseError) -> JSONValue {
        try enter()
        index += 1
        var elements: [JSONValue] = []
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
            index += 1
            depth -= 1
            return .array(elements)
        }
        while true {
            skipWhitespace()
            elements.append(try parseValue())
            skipWhitespace()
            guard index < bytes.count else { throw error(.unexpectedEnd, "unterminated array") }
            switch bytes[index] {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "]"):
                index += 1
                depth -= 1
                return .array(elements)
            default: throw error(.unexpectedCharacter, "expected ',' or ']' in array, found \(describeByte(at: index))")
            }
        }
    }

    private mutating func parseObject() throws(JSONParseError) -> JSONValue {
        try enter()
        index += 1
        var object = JSONObject()
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
            index += 1
            depth -= 1
            return .object(object)
        }
        while true {
            skipWhitespace()
            guard index < bytes.count else { throw error(.unexpectedEnd, "unterminated object") }
            guard bytes[index] == UInt8(ascii: "\"") else {
                throw error(.unexpectedCharacter, "expected a member name in quotes, found \(describeByte(at: index))")
            }
            let keyOffset = index
            let key = try parseString()
            skipWhitespace()
            guard index < bytes.count else { throw error(.unexpectedEnd, "unterminated object") }
            guard bytes[index] == UInt8(ascii: ":") else {
                throw error(.unexpectedCharacter, "expected ':' after member name, found \(describeByte(at: index))")
            }
            index += 1
            skipWhitespace()
            let value = try parseValue()
            if object.contains(key: key) {
                guard limits.allowsDuplicateKeys else {
                    throw error(.duplicateKey, "duplicate member \(key.debugDescription)", at: keyOffset)
                }
                object[key] = value
            } else {
                object.append(newKey: key, value)
            }
            skipWhitespace()
            guard index < bytes.count else { throw error(.unexpectedEnd, "unterminated object") }
            switch bytes[index] {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "}"):
                index += 1
                depth -= 1
                return .object(object)
            default:
                throw error(.unexpectedCharacter, "expected ',' or '}' in object, found \(describeByte(at: index))")
            }
        }
    }

    private mutating func parseNumber() throws(JSONParseError) -> JSONNumber {
        let start = index
        if bytes[index] == UInt8(ascii: "-") { index += 1 }
        guard index < bytes.count, isDigit(bytes[index]) else {
            throw error(index < bytes.count ? .invalidNumber : .unexpectedEnd, "expected a digit")
        }
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
            if index < bytes.count, isDigit(bytes[index]) {
                throw error(.invalidNumber, "leading zeros are not allowed in JSON numbers")
            }
        } else {
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            guard index < bytes.count, isDigit(bytes[index]) else {
                throw error(.invalidNumber, "expected a digit after '.'")
            }
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
                index += 1
            }
            guard index < bytes.count, isDigit(bytes[index]) else {
                throw error(.invalidNumber, "expected a digit in the exponent")
            }
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        guard let number = JSONNumber(literalBytes: bytes[start..<index]) else {
            throw error(.invalidNumber, "exponent out of range (beyond ±\(JSONNumber.maximumExponent))", at: start)
        }
        return number
    }

    private mutating func parseString() throws(JSONParseError) -> String {
        index += 1  // opening quote
        let contentStart = index
        var sawEscape = false
        var scalars: [UInt8] = []
        var runStart = index
        while true {
            guard index < bytes.count else { throw error(.unexpectedEnd, "unterminated string") }
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                if !sawEscape {
                    // No escapes: the (already validated) bytes are the string; skip the scratch copy.
                    let string = String(decoding: bytes[contentStart..<index], as: UTF8.self)
                    index += 1
                    return string
                }
                scalars += bytes[runStart..<index]
                index += 1
                break
            }
            if byte == UInt8(ascii: "\\") {
                sawEscape = true
                scalars += bytes[runStart..<index]
                try parseEscape(into: &scalars)
                runStart = index
                continue
            }
            if byte < 0x20 {
                throw error(
                    .controlCharacterInString, "control character U+\(hex4(UInt32(byte))) must be escaped in a string")
            }
            if byte < 0x80 {
                index += 1
            } else {
                try skipUTF8Sequence()
            }
        }
        return String(decoding: scalars, as: UTF8.self)
    }

    /// Checks one multi-byte UTF-8 sequence (RFC 3629: no overlongs, no surrogates, ≤ U+10FFFF).
    private mutating func skipUTF8Sequence() throws(JSONParseError) {
        let lead = bytes[index]
        let length: Int
        var lowerBound: UInt8 = 0x80
        var upperBound: UInt8 = 0xBF
        switch lead {
        case 0xC2...0xDF: length = 2
        case 0xE0:
            length = 3
            lowerBound = 0xA0
        case 0xE1...0xEC, 0xEE...0xEF: length = 3
        case 0xED:
            length = 3
            upperBound = 0x9F
        case 0xF0:
            length = 4
            lowerBound = 0x90
        case 0xF1...0xF3: length = 4
        case 0xF4:
            length = 4
            upperBound = 0x8F
        default: throw error(.invalidUTF8, "byte 0x\(String(lead, radix: 16)) is not valid UTF-8")
        }
        guard index + length <= bytes.count else { throw error(.invalidUTF8, "truncated UTF-8 sequence") }
        let second = bytes[index + 1]
        guard second >= lowerBound, second <= upperBound else { throw error(.invalidUTF8, "invalid UTF-8 sequence") }
        for offset in 2..<max(length, 2) where offset < length {
            guard bytes[index + offset] & 0xC0 == 0x80 else { throw error(.invalidUTF8, "invalid UTF-8 sequence") }
        }
        index += length
    }

    private mutating func parseEscape(into output: inout [UInt8]) throws(JSONParseError) {
        let escapeStart = index
        index += 1
        guard index < bytes.count else { throw error(.unexpectedEnd, "unterminated escape sequence") }
        let byte = bytes[index]
        index += 1
        switch byte {
        case UInt8(ascii: "\""): output.append(0x22)
        case UInt8(ascii: "\\"): output.append(0x5C)
        case UInt8(ascii: "/"): output.append(0x2F)
        case UInt8(ascii: "b"): output.append(0x08)
        case UInt8(ascii: "f"): output.append(0x0C)
        case UInt8(ascii: "n"): output.append(0x0A)
        case UInt8(ascii: "r"): output.append(0x0D)
        case UInt8(ascii: "t"): output.append(0x09)
        case UInt8(ascii: "u"):
            var scalar = try parseHex4()
            if (0xD800...0xDBFF).contains(scalar) {
                guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u")
                else {
                    throw error(.invalidEscape, "unpaired high surrogate \\u\(hex4(scalar))", at: escapeStart)
                }
                index += 2
                let low = try parseHex4()
                guard (0xDC00...0xDFFF).contains(low) else {
                    throw error(
                        .invalidEscape, "high surrogate \\u\(hex4(scalar)) not followed by a low surrogate",
                        at: escapeStart)
                }
                scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
            } else if (0xDC00...0xDFFF).contains(scalar) {
                throw error(.invalidEscape, "unpaired low surrogate \\u\(hex4(scalar))", at: escapeStart)
            }
            UTF8.encode(Unicode.Scalar(scalar)!) { output.append($0) }
        default:
            throw error(.invalidEscape, "invalid escape '\\\(describeByte(at: index - 1))'", at: escapeStart)
        }
    }

    private mutating func parseHex4() throws(JSONParseError) -> UInt32 {
        guard index + 4 <= bytes.count else { throw error(.unexpectedEnd, "truncated \\u escape") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            let digit: UInt32
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(byte - 48)
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(byte - 87)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(byte - 55)
            default: throw error(.invalidEscape, "invalid hex digit in \\u escape")
            }
            value = value * 16 + digit
            index += 1
        }
        return value
    }

    // MARK: - Errors

    private func isDigit(_ byte: UInt8) -> Bool { byte >= 48 && byte <= 57 }

    private func hex4(_ value: UInt32) -> String {
        let digits = String(value, radix: 16, uppercase: true)
        return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }

    private func describeByte(at position: Int) -> String {
        guard position < bytes.count else { return "the end of the text" }
        let byte = bytes[position]
        if byte >= 0x20 && byte < 0x7F { return "'\(Character(Unicode.Scalar(byte)))'" }
        return "byte 0x\(String(byte, radix: 16))"
    }

    private func error(_ code: JSONParseError.Code, _ message: String, at position: Int? = nil) -> JSONParseError {
        let offset = min(position ?? index, bytes.count)
        var line = 1
        var lineStart = 0
        for position in 0..<offset where bytes[position] == 0x0A {
            line += 1
            lineStart = position + 1
        }
        return JSONParseError(code: code, offset: offset, line: line, column: offset - lineStart + 1, message: message)
    }
}

extension ErrorCode where Domain == JSONParseError {
    /// The text ended inside a value.
    public static var unexpectedEnd: Self { Self("unexpectedEnd") }
    /// A character that cannot start or continue a value here.
    public static var unexpectedCharacter: Self { Self("unexpectedCharacter") }
    /// A number that is not valid JSON (leading zero, missing digits, `NaN`, `Infinity`).
    public static var invalidNumber: Self { Self("invalidNumber") }
    /// A bad escape sequence or an unpaired UTF-16 surrogate.
    public static var invalidEscape: Self { Self("invalidEscape") }
    /// An unescaped control character inside a string.
    public static var controlCharacterInString: Self { Self("controlCharacterInString") }
    /// Bytes that are not valid UTF-8.
    public static var invalidUTF8: Self { Self("invalidUTF8") }
    /// Nesting deeper than ``JSONParsingLimits/maximumDepth``.
    public static var tooDeep: Self { Self("tooDeep") }
    /// An object repeats a key.
    public static var duplicateKey: Self { Self("duplicateKey") }
    /// Something other than whitespace follows the value.
    public static var trailingContent: Self { Self("trailingContent") }
}

extension JSONParseError {
    /// Where the problem sits in `data` (the text that failed to parse) as a JSON Pointer (RFC 6901): the
    /// member or element being read when parsing stopped — for a duplicate member, that member itself; ""
    /// when it is the document. Tools that name bad input by pointer (`keel release-gate`) use it, so a
    /// repeated member is named like any other bad field rather than as the whole file.
    package func pointer(in data: some Collection<UInt8>) -> String {
        location(in: data).map { step in
            switch step {
            case .member(let name): "/" + JSONPointer.escape(name)
            case .element(let index): "/\(index)"
            }
        }.joined()
    }

    /// The same place as ``pointer(in:)`` in the dotted form of coding paths (`notes[3].title`), as
    /// ``ContractDecodingError/path`` names places.
    package func codingPath(in data: some Collection<UInt8>) -> String {
        var text = ""
        for step in location(in: data) {
            switch step {
            case .member(let name): text += text.isEmpty ? name : "." + name
            case .element(let index): text += "[\(index)]"
            }
        }
        return text
    }

    private func location(in data: some Collection<UInt8>) -> [PathStep] {
        var locator = JSONParser(bytes: Array(data), limits: JSONParsingLimits())
        return locator.location(before: offset, code: code)
    }
}

/// One step of a place in a document: a member of an object, or an element of an array.
private enum PathStep {
    case member(String)
    case element(Int)
}

/// One open container while ``JSONParser`` locates a position (``JSONParseError/pointer(in:)``).
private struct OpenContainer {
    /// Whether it is an object (else an array).
    let isObject: Bool
    /// An object's member name last read; nil while none is.
    var name: String?
    /// An array's element index.
    var index = 0
    /// Whether an object's member value is being read (after its colon); arrays are always reading one.
    var inValue = false
    /// Whether the value being read is complete (nothing of it is left to blame).
    var valueDone = false

    /// The place of a position inside `containers`, outermost first: every container names its member or
    /// element; the innermost one only while that value is being read (after it, the position is between
    /// values, in the container itself).
    static func location(_ containers: [OpenContainer]) -> [PathStep] {
        var steps: [PathStep] = []
        for (depth, container) in containers.enumerated() {
            let innermost = depth == containers.count - 1
            if innermost, container.valueDone || (container.isObject && !container.inValue) { break }
            steps.append(container.isObject ? .member(container.name ?? "") : .element(container.index))
        }
        return steps
    }
}

extension JSONParser {
    /// The place of the value being read at byte `end` when the parser stopped with `code`, from a scan of
    /// the text before it (text the parser accepted up to there). For a duplicate member, `end` is at its
    /// name, which is added.
    fileprivate mutating func location(before end: Int, code: JSONParseError.Code) -> [PathStep] {
        var open: [OpenContainer] = []
        /// Marks the innermost container's value complete.
        func done(_ open: inout [OpenContainer]) {
            if !open.isEmpty { open[open.count - 1].valueDone = true }
        }
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { index = 3 }
        let end = min(end, bytes.count)
        /// Whether a number or literal is being read (its end comes at whitespace or punctuation), and where
        /// it starts.
        var inScalar = false
        var scalarStart = 0
        while index < end {
            let byte = bytes[index]
            if inScalar,
                byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D || byte == UInt8(ascii: ",")
                    || byte == UInt8(ascii: "}") || byte == UInt8(ascii: "]")
            {
                inScalar = false
                done(&open)
            }
            switch byte {
            case UInt8(ascii: "{"): open.append(OpenContainer(isObject: true))
            case UInt8(ascii: "["): open.append(OpenContainer(isObject: false))
            case UInt8(ascii: "}"), UInt8(ascii: "]"):
                _ = open.popLast()
                done(&open)
            case UInt8(ascii: ","):
                if !open.isEmpty {
                    open[open.count - 1].index += 1
                    open[open.count - 1].name = nil
                    open[open.count - 1].inValue = false
                    open[open.count - 1].valueDone = false
                }
            case UInt8(ascii: ":"):
                if !open.isEmpty { open[open.count - 1].inValue = true }
            case UInt8(ascii: "\""):
                guard let text = try? parseString() else { return OpenContainer.location(open) }
                if let last = open.last, last.isObject, !last.inValue {
                    open[open.count - 1].name = text
                } else {
                    done(&open)
                }
                continue  // parseString moved past the closing quote
            case 0x20, 0x09, 0x0A, 0x0D: break
            default:  // a number or a literal
                if !inScalar { scalarStart = index }
                inScalar = true
            }
            index += 1
        }
        if inScalar, code != .invalidNumber {
            // The scan stopped right after a number or literal (the text ends there, or something other than
            // punctuation follows it): when it is a whole one, the parser had finished it.
            let text = String(decoding: bytes[scalarStart..<end], as: UTF8.self)
            if text == "true" || text == "false" || text == "null" || JSONNumber(literal: text) != nil { done(&open) }
        }
        var steps = OpenContainer.location(open)
        if code == .duplicateKey, index < bytes.count, bytes[index] == UInt8(ascii: "\""), let name = try? parseString()
        {
            steps.append(.member(name))
        }
        return steps
    }
}
