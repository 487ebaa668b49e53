public import Foundation
public import KeelCore
import KeelContract
import KeelCrypto

/// One call the app makes: what to send, and whether it may be repeated (MOB-API-002).
///
/// Idempotency is declared, never guessed. `GET`, `HEAD` and `OPTIONS` are idempotent by default;
/// `POST` and `PATCH` are unsafe by default; `PUT` and `DELETE` must be declared explicitly (they are
/// idempotent by the HTTP spec, but many backends implement them otherwise).
///
/// Prefer the typed builders, which make a missing declaration unwritable:
///
/// ```swift
/// let read = HTTPOperation.get("/notes/7")
/// let create = HTTPOperation.post("/notes", body: json, idempotency: .keyed(.make(using: random)))
/// let replace = HTTPOperation.put("/notes/7", body: json, idempotency: .idempotent)   // must be stated
/// let remove = HTTPOperation.delete("/notes/7", idempotency: .idempotent)             // must be stated
/// ```
///
/// The raw initializer stays for other methods; there, leaving out the idempotency of a method that
/// has no safe default traps.
///
/// ## Topics
/// - ``get(_:query:headers:correlationID:)``
/// - ``post(_:body:idempotency:query:headers:correlationID:)``
/// - ``put(_:body:idempotency:query:headers:correlationID:)``
/// - ``patch(_:body:idempotency:query:headers:correlationID:)``
/// - ``delete(_:idempotency:query:headers:correlationID:)``
/// - ``init(method:path:query:headers:body:idempotency:expectsJSON:correlationID:)``
public struct HTTPOperation: Sendable {
    /// Whether repeating the request is safe.
    public enum Idempotency: Sendable, Equatable {
        /// Repeating it has no further effect (reads, and writes the backend guarantees idempotent).
        case idempotent
        /// It carries an `Idempotency-Key`; the backend applies it at most once per key. The key is made
        /// once per operation (persist it with the operation to resume after a relaunch).
        case keyed(IdempotencyKey)
        /// Repeating it could apply it twice. Retried only when the request provably never left.
        case unsafe
    }

    /// The method (`GET`, `POST`, ...).
    public var method: String
    /// The path relative to the client's base URL (`/notes/7`), in its URL form: a `%XX` escape is sent as
    /// written (`/notes/a%2Fb` is one segment, `a/b`), and any other byte a URL path cannot carry is
    /// percent-encoded (`/notes/café` is sent as `/notes/caf%C3%A9`). Put a value into a path with
    /// ``pathSegment(_:)``: an id with a `/`, `%` or `?` in it then stays one segment.
    public var path: String
    /// Query items, in order.
    public var query: [URLQueryItem]
    /// Extra header fields.
    public var headers: HeaderFields
    /// The request body.
    public var body: Data?
    /// Whether it may be repeated.
    public var idempotency: Idempotency
    /// Whether a successful response must be JSON (an HTML page instead means a captive portal).
    public var expectsJSON: Bool
    /// The user operation this call belongs to; minted once by the client when nil.
    public var correlationID: CorrelationID?
    /// The operation's id in the ``OperationJournal`` (the app's own id for it, e.g. its outbox entry);
    /// nil: the correlation id — for the first call of a user operation that spans several (OBS-LOG-004);
    /// each other call of it is journaled under the correlation id followed by `~` and a suffix of its own
    /// (method, path, body and key), so that no call's entry takes another's place.
    public var operationID: String?
    /// SHA-256 of the body (lowercase hex), as the ``OperationJournal`` keeps it; nil without a body.
    var bodyDigest: String? { body.map { SHA256Digest.hex([UInt8]($0)) } }

    /// The trace this operation continues (from a push payload or a deep link; see
    /// ``TraceContext/continuing(traceparent:tracestate:)``), or a new trace with a sampling decision.
    /// Nil: the client starts a new trace for the call. Sent only by ``TraceContextMiddleware``, and only
    /// to its allowlisted origins.
    public var trace: TraceContext?

    /// Whether a successful answer states the version policy (an `X-Update-Available`, or none: supported).
    /// False for a reachability probe, which anything on the way may answer: its 2xx says nothing about
    /// which app versions the backend accepts, and must not end a required update or a block.
    var successStatesVersionPolicy = true

    /// An operation. `idempotency` may be omitted for GET/HEAD/OPTIONS (idempotent) and POST/PATCH
    /// (unsafe); for PUT, DELETE and other methods omitting it is a programming error.
    public init(
        method: String,
        path: String,
        query: [URLQueryItem] = [],
        headers: HeaderFields = [:],
        body: Data? = nil,
        idempotency: Idempotency? = nil,
        expectsJSON: Bool = true,
        correlationID: CorrelationID? = nil
    ) {
        let upper = method.uppercased()
        let resolved: Idempotency
        if let idempotency {
            resolved = idempotency
        } else {
            switch upper {
            case _ where Self.readMethods.contains(upper): resolved = .idempotent
            case "POST", "PATCH": resolved = .unsafe
            default:
                preconditionFailure(
                    "HTTPOperation: \(upper) \(path) must declare its idempotency (.idempotent, .keyed or .unsafe)")
            }
        }
        self.method = upper
        self.path = path
        self.query = query
        self.headers = headers
        self.body = body
        self.idempotency = resolved
        self.expectsJSON = expectsJSON
        self.correlationID = correlationID
    }

    // MARK: - Typed builders

    /// A GET of `path` (idempotent).
    public static func get(
        _ path: String, query: [URLQueryItem] = [], headers: HeaderFields = [:], correlationID: CorrelationID? = nil
    ) -> HTTPOperation {
        HTTPOperation(
            method: "GET", path: path, query: query, headers: headers, idempotency: .idempotent,
            correlationID: correlationID)
    }

    /// A POST of `body` to `path`; unsafe unless it carries a key (`.keyed`) or the backend guarantees
    /// idempotency.
    public static func post(
        _ path: String, body: Data?, idempotency: Idempotency = .unsafe, query: [URLQueryItem] = [],
        headers: HeaderFields = [:], correlationID: CorrelationID? = nil
    ) -> HTTPOperation {
        HTTPOperation(
            method: "POST", path: path, query: query, headers: headers, body: body, idempotency: idempotency,
            correlationID: correlationID)
    }

    /// A PUT of `body` to `path`. Its idempotency must be stated: the HTTP spec says idempotent, many
    /// backends disagree.
    public static func put(
        _ path: String, body: Data?, idempotency: Idempotency, query: [URLQueryItem] = [],
        headers: HeaderFields = [:], correlationID: CorrelationID? = nil
    ) -> HTTPOperation {
        HTTPOperation(
            method: "PUT", path: path, query: query, headers: headers, body: body, idempotency: idempotency,
            correlationID: correlationID)
    }

    /// A PATCH of `body` to `path`; unsafe unless stated otherwise.
    public static func patch(
        _ path: String, body: Data?, idempotency: Idempotency = .unsafe, query: [URLQueryItem] = [],
        headers: HeaderFields = [:], correlationID: CorrelationID? = nil
    ) -> HTTPOperation {
        HTTPOperation(
            method: "PATCH", path: path, query: query, headers: headers, body: body, idempotency: idempotency,
            correlationID: correlationID)
    }

    /// A DELETE of `path`. Its idempotency must be stated (a second DELETE may answer 404, or delete
    /// something else that took the id).
    public static func delete(
        _ path: String, idempotency: Idempotency, query: [URLQueryItem] = [], headers: HeaderFields = [:],
        correlationID: CorrelationID? = nil
    ) -> HTTPOperation {
        HTTPOperation(
            method: "DELETE", path: path, query: query, headers: headers, idempotency: idempotency,
            correlationID: correlationID)
    }

    // MARK: - Properties

    /// Whether the operation changes state on the server (anything but GET, HEAD, OPTIONS).
    public var mutates: Bool { !Self.readMethods.contains(method) }

    /// The methods that only read: idempotent by default, and never mutating.
    private static let readMethods: Set<String> = ["GET", "HEAD", "OPTIONS"]

    /// Whether a retry after the request may have reached the server is allowed.
    var allowsRetryAfterSending: Bool {
        switch idempotency {
        case .idempotent, .keyed: true
        case .unsafe: false
        }
    }

    /// Whether it carries an `Idempotency-Key`.
    var isKeyed: Bool {
        if case .keyed = idempotency { true } else { false }
    }
}

/// The value of an `Idempotency-Key` header: made once per operation, sent on every attempt.
public struct IdempotencyKey: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The key text.
    public let rawValue: String

    /// A key chosen by the app. Precondition: 1–255 visible ASCII characters (use ``init(validating:)`` for
    /// text read back from storage, which may be damaged).
    public init(_ rawValue: String) {
        precondition(Self.isValid(rawValue), "IdempotencyKey must be 1–255 visible ASCII characters")
        self.rawValue = rawValue
    }

    /// A key read back from storage: nil unless it is 1–255 visible ASCII characters, so damaged data is
    /// refused instead of trapping.
    public init?(validating rawValue: String) {
        guard Self.isValid(rawValue) else { return nil }
        self.rawValue = rawValue
    }

    private static func isValid(_ rawValue: String) -> Bool {
        !rawValue.isEmpty && rawValue.utf8.count <= 255 && rawValue.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F }
    }

    /// A fresh random key (128 bits, hex).
    public static func make(using random: RandomSource) -> IdempotencyKey {
        IdempotencyKey(CorrelationID.make(using: random).rawValue)
    }

    /// The key of one effect named by the app rather than drawn at random: `namespace`, a dash and 40 hex
    /// digits of the SHA-256 digest of `namespace`, a zero byte and `name`. The same effect always gets the
    /// same key — after a reinstall or a lost ledger too — so a server that applies each key once applies the
    /// effect once ("publish this note": `derived(from: noteID, namespace: "publish")`). Any `name` gives a key
    /// of 42–105 visible ASCII characters, inside the usual 16–128 bounds of an `Idempotency-Key`.
    ///
    /// Precondition: `namespace` is 1–64 ASCII letters, digits, `.`, `_` or `-` (a literal of the app's).
    /// Use it only where doing the effect twice is the harm; an effect the user may repeat on purpose (a
    /// second payment of the same amount) needs a new random key (``make(using:)``) each time.
    public static func derived(from name: String, namespace: String) -> IdempotencyKey {
        precondition(
            (1...64).contains(namespace.utf8.count)
                && namespace.utf8.allSatisfy { byte in
                    (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
                        || byte == 0x2E || byte == 0x5F || byte == 0x2D
                },
            "an IdempotencyKey namespace is 1–64 ASCII letters, digits, '.', '_' or '-'")
        let digest = SHA256Digest.hex(Array(namespace.utf8) + [0] + Array(name.utf8))
        return IdempotencyKey(namespace + "-" + digest.prefix(40))
    }

    /// The key text (``rawValue``), the value of the `Idempotency-Key` header.
    public var description: String { rawValue }

    private enum CodingKeys: String, CodingKey { case rawValue }

    /// Decodes a key as it is encoded (`{"rawValue": "…"}`), or as a plain string, checking it as
    /// ``init(validating:)`` does: a stored key that is empty, too long or not visible ASCII (damaged data, a
    /// hand-edited file) is a `DecodingError`, never a key sent as is.
    public init(from decoder: any Decoder) throws {
        let text: String
        if let keyed = try? decoder.container(keyedBy: CodingKeys.self) {
            text = try keyed.decode(String.self, forKey: .rawValue)
        } else {
            text = try decoder.singleValueContainer().decode(String.self)
        }
        guard let key = IdempotencyKey(validating: text) else {
            throw DecodingError.dataCorrupted(
                .init(
                    codingPath: decoder.codingPath,
                    debugDescription: "an idempotency key is 1–255 visible ASCII characters"))
        }
        self = key
    }

    /// Encodes the key as `{"rawValue": "…"}` (the form earlier versions wrote and read).
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(rawValue, forKey: .rawValue)
    }
}

extension HTTPOperation {
    /// `value` as one path segment: every byte but RFC 3986's unreserved characters (letters, digits, `-`,
    /// `.`, `_`, `~`) percent-encoded, so `/` and `%` in an id cannot split the path or read as an escape.
    ///
    /// ```swift
    /// HTTPOperation.get("/notes/" + HTTPOperation.pathSegment(id))   // "a/b?c" → /notes/a%2Fb%3Fc
    /// ```
    ///
    /// A segment of `.` or `..` is still refused when the call is made (servers resolve it).
    public static func pathSegment(_ value: String) -> String {
        var result = ""
        result.reserveCapacity(value.utf8.count)
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
                UInt8(ascii: "~"):
                result.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                result += Hex.percentEscape(byte)
            }
        }
        return result
    }
}
