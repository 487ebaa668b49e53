public import KeelCore

/// A W3C Trace Context trace id: 16 bytes, never all zero, written as 32 lowercase hex digits.
public struct TraceID: Sendable, Hashable, HexIdentifier {
    /// The high and low 8 bytes.
    public let high: UInt64
    /// The low 8 bytes.
    public let low: UInt64

    /// The id from its two halves; nil when both are zero (the all-zero id is invalid).
    public init?(high: UInt64, low: UInt64) {
        guard high != 0 || low != 0 else { return nil }
        self.high = high
        self.low = low
    }

    /// The id written as 32 lowercase hex digits; nil for anything else or for all zeros.
    public init?(hex: some StringProtocol) {
        guard hex.utf8.count == 32, let high = Hex.value(hex.utf8.prefix(16)),
            let low = Hex.value(hex.utf8.dropFirst(16))
        else { return nil }
        self.init(high: high, low: low)
    }

    /// A new random id from `random` (drawn again in the 2⁻¹²⁸ case of all zeros).
    public static func random(using random: RandomSource) -> TraceID {
        while true {
            let (high, low) = random.nextPair()
            if let id = TraceID(high: high, low: low) { return id }
        }
    }

    /// 32 lowercase hex digits.
    public var description: String {
        Hex.text(high, low)
    }

}

/// A W3C Trace Context parent id (span id): 8 bytes, never all zero, written as 16 lowercase hex digits.
public struct SpanID: Sendable, Hashable, HexIdentifier {
    /// The 8 bytes.
    public let value: UInt64

    /// The id; nil for zero (the all-zero id is invalid).
    public init?(_ value: UInt64) {
        guard value != 0 else { return nil }
        self.value = value
    }

    /// The id written as 16 lowercase hex digits; nil for anything else or for all zeros.
    public init?(hex: some StringProtocol) {
        guard hex.utf8.count == 16, let value = Hex.value(hex.utf8[...]) else { return nil }
        self.init(value)
    }

    /// A new random id from `random` (drawn again in the 2⁻⁶⁴ case of zero).
    public static func random(using random: RandomSource) -> SpanID {
        while true {
            if let id = SpanID(random.next()) { return id }
        }
    }

    /// 16 lowercase hex digits.
    public var description: String { Hex.text(value) }

}

/// The `traceparent` header: version, trace id, parent id and flags.
///
/// Parsing follows the W3C Trace Context recommendation exactly (see ``parse(_:)``); what Keel sends is
/// always version `00` with only the sampled flag.
public struct TraceParent: Sendable, Hashable {
    /// The version read (`0` for what Keel sends).
    public let version: UInt8
    /// The trace id.
    public let traceID: TraceID
    /// The id of the caller's span: the parent of whatever this request starts.
    public let parentID: SpanID
    /// The trace flags as read (for version `00`, only bit 0, sampled, means anything).
    public let flags: UInt8

    /// Whether the caller recorded (or may have recorded) its part of the trace.
    public var sampled: Bool { flags & 1 == 1 }

    /// A version `00` traceparent; `flags` is `01` when `sampled`, `00` otherwise.
    public init(traceID: TraceID, parentID: SpanID, sampled: Bool) {
        version = 0
        self.traceID = traceID
        self.parentID = parentID
        flags = sampled ? 1 : 0
    }

    private init(version: UInt8, traceID: TraceID, parentID: SpanID, flags: UInt8) {
        self.version = version
        self.traceID = traceID
        self.parentID = parentID
        self.flags = flags
    }

    /// The header value Keel sends: version `00`, and of the flags only sampled.
    public var headerValue: String {
        // Written byte by byte: it is made for every attempt (keel-bench trace.overhead).
        String(unsafeUninitializedCapacity: 55) { buffer in
            let dash = UInt8(ascii: "-")
            buffer[0] = UInt8(ascii: "0")
            buffer[1] = UInt8(ascii: "0")
            buffer[2] = dash
            Hex.write(traceID.high, into: buffer, at: 3)
            Hex.write(traceID.low, into: buffer, at: 19)
            buffer[35] = dash
            Hex.write(parentID.value, into: buffer, at: 36)
            buffer[52] = dash
            buffer[53] = UInt8(ascii: "0")
            buffer[54] = sampled ? UInt8(ascii: "1") : UInt8(ascii: "0")
            return 55
        }
    }

    /// Parses a received `traceparent` value.
    ///
    /// The value is an HTTP field value, so spaces and tabs around it are removed first. Then: lowercase
    /// hex only and exact field lengths; version `ff` is invalid; version `00` must be exactly 55
    /// characters; a higher version is accepted when it is at least 55 characters long and, if longer,
    /// the 56th character is `-` (only its first four fields are read); an all-zero trace id or parent id
    /// is invalid.
    ///
    /// - Throws: ``TraceContextError`` saying what is wrong.
    public static func parse(_ value: String) throws(TraceContextError) -> TraceParent {
        let text = Array(value.trimmingSpacesAndTabs().utf8)
        func invalid(_ code: TraceContextError.Code, _ message: String) -> TraceContextError {
            TraceContextError(code: code, message: message)
        }
        guard text.count >= 2, let version = Hex.byte(text[0], text[1]) else {
            throw invalid(.malformedTraceparent, "the version is not two lowercase hex digits")
        }
        guard version != 0xff else { throw invalid(.invalidVersion, "version ff is invalid") }
        // Its four fields are ASCII: a value with other characters among its first 55 bytes is told so, not
        // told a length in bytes (found in an outside audit: 55 characters with an "é" were "not 56").
        guard text.prefix(55).allSatisfy({ $0 < 0x80 }) else {
            throw invalid(.malformedTraceparent, "a traceparent's fields are lowercase hex digits separated by '-'")
        }
        var length: Int { String(decoding: text, as: UTF8.self).unicodeScalars.count }
        if version == 0 {
            guard text.count == 55 else {
                throw invalid(
                    .malformedTraceparent, "a version 00 traceparent is exactly 55 characters, not \(length)")
            }
        } else {
            guard text.count >= 55 else {
                throw invalid(.malformedTraceparent, "a traceparent is at least 55 characters, not \(length)")
            }
            guard text.count == 55 || text[55] == UInt8(ascii: "-") else {
                throw invalid(.malformedTraceparent, "after the flags of a future version, a '-' must follow")
            }
        }
        guard text[2] == UInt8(ascii: "-"), text[35] == UInt8(ascii: "-"), text[52] == UInt8(ascii: "-") else {
            throw invalid(.malformedTraceparent, "the fields are not separated by '-' at the expected places")
        }
        guard let high = Hex.value(text[3..<19]), let low = Hex.value(text[19..<35]) else {
            throw invalid(.malformedTraceparent, "the trace id is not 32 lowercase hex digits")
        }
        guard let traceID = TraceID(high: high, low: low) else {
            throw invalid(.zeroTraceID, "the trace id is all zeros")
        }
        guard let parent = Hex.value(text[36..<52]) else {
            throw invalid(.malformedTraceparent, "the parent id is not 16 lowercase hex digits")
        }
        guard let parentID = SpanID(parent) else { throw invalid(.zeroParentID, "the parent id is all zeros") }
        guard let flags = Hex.byte(text[53], text[54]) else {
            throw invalid(.malformedTraceparent, "the flags are not two lowercase hex digits")
        }
        return TraceParent(version: version, traceID: traceID, parentID: parentID, flags: flags)
    }
}

/// The `tracestate` header: vendor-specific trace data, an ordered list of at most 32 `key=value` members.
public struct TraceState: Sendable, Hashable {
    /// One member.
    public struct Member: Sendable, Hashable, CustomStringConvertible {
        /// A simple key (`rojo`) or a multi-tenant one (`tenant@system`).
        public let key: String
        /// The value (1–256 printable ASCII characters, no `,` or `=`, not ending in a space).
        public let value: String

        /// `key=value`.
        public var description: String { "\(key)=\(value)" }
    }

    /// The members, in order (the most recently updated vendor first).
    public let members: [Member]

    /// At most this many members; a longer list is discarded whole.
    public static let maximumMembers = 32

    /// Whether there are no members.
    public var isEmpty: Bool { members.isEmpty }

    /// The header value: the members joined with `,`.
    public var headerValue: String { members.map(\.description).joined(separator: ",") }

    /// Parses a received `tracestate` value (possibly several header lines joined with `,`).
    ///
    /// Empty members (and the spaces and tabs around members) are skipped. A member that breaks the
    /// key/value grammar, a duplicate key, or more than 32 members makes the whole value invalid: a
    /// tracestate that cannot be parsed is never propagated.
    ///
    /// - Throws: ``TraceContextError`` saying what is wrong.
    public static func parse(_ value: String) throws(TraceContextError) -> TraceState {
        // Error messages quote what is wrong, shortened: a tracestate arrives from outside and may be huge.
        func quoted(_ text: String) -> String {
            text.count <= 64 ? text.debugDescription : String(text.prefix(64)).debugDescription + "…"
        }
        var members: [Member] = []
        var keys: Set<String> = []
        for raw in value.split(separator: ",", omittingEmptySubsequences: false) {
            let text = String(raw).trimmingSpacesAndTabs()
            if text.isEmpty { continue }
            guard let equals = text.firstIndex(of: "=") else {
                throw TraceContextError(
                    code: .invalidTracestate, message: "member \(quoted(text)) has no '='")
            }
            let key = String(text[..<equals])
            let memberValue = String(text[text.index(after: equals)...])
            guard isValidKey(key) else {
                throw TraceContextError(code: .invalidTracestate, message: "key \(quoted(key)) is not valid")
            }
            guard isValidValue(memberValue) else {
                throw TraceContextError(
                    code: .invalidTracestate, message: "the value of \(quoted(key)) is not valid")
            }
            guard keys.insert(key).inserted else {
                throw TraceContextError(code: .duplicateKey, message: "key \(quoted(key)) appears twice")
            }
            members.append(Member(key: key, value: memberValue))
            guard members.count <= maximumMembers else {
                throw TraceContextError(
                    code: .tooManyMembers, message: "more than \(maximumMembers) list members")
            }
        }
        return TraceState(members: members)
    }

    /// `lcalpha / DIGIT / "_" / "-" / "*" / "/"`.
    private static func isKeyCharacter(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "_"),
            UInt8(ascii: "-"), UInt8(ascii: "*"), UInt8(ascii: "/"):
            return true
        default:
            return false
        }
    }

    private static func isLowercaseLetter(_ byte: UInt8) -> Bool {
        byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z")
    }
    private static func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }

    /// `simple-key = lcalpha 0*255(keychar)`, or `tenant-id "@" system-id` with
    /// `tenant-id = (lcalpha / DIGIT) 0*240(keychar)` and `system-id = lcalpha 0*13(keychar)`.
    static func isValidKey(_ key: String) -> Bool {
        let bytes = Array(key.utf8)
        if let at = bytes.firstIndex(of: UInt8(ascii: "@")) {
            let tenant = bytes[..<at]
            let system = bytes[(at + 1)...]
            guard let tenantFirst = tenant.first, isLowercaseLetter(tenantFirst) || isDigit(tenantFirst),
                tenant.count <= 241, tenant.allSatisfy(isKeyCharacter),
                let systemFirst = system.first, isLowercaseLetter(systemFirst), system.count <= 14,
                system.allSatisfy(isKeyCharacter)
            else { return false }
            return true
        }
        guard let first = bytes.first, isLowercaseLetter(first), bytes.count <= 256 else { return false }
        return bytes.allSatisfy(isKeyCharacter)
    }

    /// `value = 0*255(chr) nblk-chr`: printable ASCII except `,` and `=`, spaces allowed but not last.
    static func isValidValue(_ value: String) -> Bool {
        let bytes = Array(value.utf8)
        guard let last = bytes.last, bytes.count <= 256, last != UInt8(ascii: " ") else { return false }
        return bytes.allSatisfy { byte in
            byte >= 0x20 && byte <= 0x7e && byte != UInt8(ascii: ",") && byte != UInt8(ascii: "=")
        }
    }
}

/// The trace an operation belongs to: the one an incoming context continues (a push payload, a deep
/// link), or a new one.
///
/// ```swift
/// // A deep link carried a trace: continue it (an invalid one starts a new trace instead).
/// operation.trace = TraceContext.continuing(traceparent: link.traceparent, tracestate: link.tracestate)
/// ```
public struct TraceContext: Sendable, Hashable, Codable {
    /// The trace id every attempt of the operation sends.
    public var traceID: TraceID
    /// The caller's span when continuing a trace (nil for a new trace).
    public var parentID: SpanID?
    /// Whether the trace is sampled; nil leaves it to ``TraceContextMiddleware``'s default.
    public var sampled: Bool?
    /// Vendor data carried along (only when continuing a trace that had some).
    public var traceState: TraceState?

    /// A trace with these parts.
    public init(traceID: TraceID, parentID: SpanID? = nil, sampled: Bool? = nil, traceState: TraceState? = nil) {
        self.traceID = traceID
        self.parentID = parentID
        self.sampled = sampled
        self.traceState = traceState
    }

    /// A new trace with a random id from `random`.
    public static func start(sampled: Bool? = nil, using random: RandomSource) -> TraceContext {
        TraceContext(traceID: .random(using: random), sampled: sampled)
    }

    /// The trace an incoming `traceparent` (and `tracestate`) continues; nil when the traceparent is
    /// invalid — start a new trace then, and drop the tracestate with it. An invalid tracestate beside a
    /// valid traceparent is dropped alone.
    public static func continuing(traceparent: String, tracestate: String? = nil) -> TraceContext? {
        guard let parent = try? TraceParent.parse(traceparent) else { return nil }
        let state = tracestate.flatMap { try? TraceState.parse($0) }
        return TraceContext(
            traceID: parent.traceID, parentID: parent.parentID, sampled: parent.sampled,
            traceState: state?.isEmpty == false ? state : nil)
    }

    private enum CodingKeys: String, CodingKey { case traceID, parentID, sampled, traceState }

    /// Encodes the ids as hex and the tracestate as its header value.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(traceID, forKey: .traceID)
        try container.encodeIfPresent(parentID, forKey: .parentID)
        try container.encodeIfPresent(sampled, forKey: .sampled)
        try container.encodeIfPresent(traceState?.headerValue, forKey: .traceState)
    }

    /// Decodes what ``encode(to:)`` wrote (an unparsable tracestate is dropped, as on the wire).
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        traceID = try container.decode(TraceID.self, forKey: .traceID)
        parentID = try container.decodeIfPresent(SpanID.self, forKey: .parentID)
        sampled = try container.decodeIfPresent(Bool.self, forKey: .sampled)
        traceState = try container.decodeIfPresent(String.self, forKey: .traceState).flatMap {
            try? TraceState.parse($0)
        }
    }
}

/// Why a received trace context was rejected.
public struct TraceContextError: KeelError, Equatable, CustomStringConvertible {
    /// Codes of ``TraceContextError``.
    public typealias Code = ErrorCode<TraceContextError>

    /// What is wrong.
    public let code: Code
    /// A developer-facing explanation.
    public let message: String

    /// The explanation.
    public var description: String { message }
}

extension ErrorCode where Domain == TraceContextError {
    /// The traceparent does not have the shape of the recommendation (lengths, separators, lowercase hex).
    public static var malformedTraceparent: Self { Self("malformedTraceparent") }
    /// Version `ff`, which the recommendation forbids.
    public static var invalidVersion: Self { Self("invalidVersion") }
    /// The trace id is all zeros.
    public static var zeroTraceID: Self { Self("zeroTraceID") }
    /// The parent id is all zeros.
    public static var zeroParentID: Self { Self("zeroParentID") }
    /// A tracestate member breaks the key/value grammar.
    public static var invalidTracestate: Self { Self("invalidTracestate") }
    /// A tracestate key appears twice.
    public static var duplicateKey: Self { Self("duplicateKey") }
    /// More than 32 tracestate members.
    public static var tooManyMembers: Self { Self("tooManyMembers") }
}

/// An id written as lowercase hex (``TraceID``, ``SpanID``); encoded as that string.
public protocol HexIdentifier: Codable, CustomStringConvertible {
    /// The id written as lowercase hex; nil for anything else.
    init?(hex: some StringProtocol)
}

extension HexIdentifier {
    /// Encodes the hex string.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }

    /// Decodes the hex string.
    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let id = Self(hex: text) else {
            throw DecodingError.dataCorrupted(
                .init(codingPath: decoder.codingPath, debugDescription: "not a lowercase hex \(Self.self)"))
        }
        self = id
    }
}
