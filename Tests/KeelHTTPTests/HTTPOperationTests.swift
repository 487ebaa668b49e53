import Foundation
import KeelCore
import KeelHTTP
import Testing

/// The typed builders: idempotency is stated where the method has no safe default.
@Suite struct HTTPOperationTests {
    @Test func buildersSetMethodAndIdempotency() {
        let key = IdempotencyKey("key-1")
        let body = Data("{}".utf8)
        #expect(HTTPOperation.get("/a").method == "GET" && HTTPOperation.get("/a").idempotency == .idempotent)
        #expect(HTTPOperation.post("/a", body: body).idempotency == .unsafe)
        #expect(HTTPOperation.post("/a", body: body, idempotency: .keyed(key)).idempotency == .keyed(key))
        #expect(
            HTTPOperation.patch("/a", body: body).method == "PATCH"
                && HTTPOperation.patch("/a", body: body).idempotency == .unsafe)
        // PUT and DELETE have no default: the declaration is part of the call.
        #expect(HTTPOperation.put("/a", body: body, idempotency: .idempotent).method == "PUT")
        #expect(HTTPOperation.put("/a", body: body, idempotency: .unsafe).idempotency == .unsafe)
        #expect(HTTPOperation.delete("/a", idempotency: .idempotent).method == "DELETE")
        #expect(HTTPOperation.delete("/a", idempotency: .idempotent).mutates)
        #expect(!HTTPOperation.get("/a").mutates)
    }

    @Test func buildersCarryHeadersQueryAndCorrelation() {
        let correlation = CorrelationID.make(using: .seeded(4))
        let operation = HTTPOperation.get(
            "/notes", query: [URLQueryItem(name: "since", value: "1")],
            headers: ["X-Client": "ios"], correlationID: correlation)
        #expect(operation.query.first?.value == "1")
        #expect(operation.headers["x-client"] == "ios")
        #expect(operation.correlationID == correlation)
        #expect(operation.expectsJSON)
    }

    @Test func failuresCanBeMadeWithDefaultsForPreviewsAndTests() {
        let failure = HTTPFailure(kind: .conflict, outcome: .rejected, correlationID: .make(using: .seeded(1)))
        #expect(
            failure.status == nil && failure.attempts == 1 && failure.fieldErrors.isEmpty
                && failure.contractViolation == nil)
        #expect(failure.code == .conflict)
        #expect(UserFacingOutcome(failure: failure, mutates: true).action == .reviewConflict)
    }
}

/// Found in review: the synthesized `Decodable` of `IdempotencyKey` took any text, so a journal entry stored
/// by an app (JournalEntry is Codable) came back with an empty or non-ASCII key that then went out as is.
@Suite struct IdempotencyKeyCodingTests {
    @Test func aDecodedKeyIsCheckedAsAStoredOneIs() throws {
        let decoder = JSONDecoder()
        let key = IdempotencyKey("order-7f3c9a21-0001")
        let encoded = try JSONEncoder().encode(key)
        #expect(String(decoding: encoded, as: UTF8.self) == #"{"rawValue":"order-7f3c9a21-0001"}"#)
        #expect(try decoder.decode(IdempotencyKey.self, from: encoded) == key)
        #expect(try decoder.decode(IdempotencyKey.self, from: Data(#""order-7f3c9a21-0001""#.utf8)) == key)
        for damaged in [#"{"rawValue":""}"#, #"{"rawValue":"k\u00e9y"}"#, #"{"rawValue":"two words"}"#, #""""#] {
            #expect(throws: DecodingError.self, "\(damaged)") {
                try decoder.decode(IdempotencyKey.self, from: Data(damaged.utf8))
            }
        }
    }
}

@Suite struct DerivedIdempotencyKeyTests {
    /// The key is the namespace and 40 hex digits of SHA-256(namespace, 0, name): the values below are
    /// Python's `hashlib.sha256(b"publish\x00note-1")`, so a change of the derivation (which would let a
    /// reinstalled app publish a note a second time) fails here.
    @Test func aDerivedKeyIsTheDigestOfItsNameAndTheSameEveryTime() {
        let key = IdempotencyKey.derived(from: "note-1", namespace: "publish")
        #expect(key.rawValue == "publish-333dc71f216271edc0239bf0f01ffd3df57599de")
        #expect(
            IdempotencyKey.derived(from: "zoë", namespace: "publish").rawValue
                == "publish-f9440c11a2e9d18f5f7c76915220f568657ebc11")
        #expect(key == IdempotencyKey.derived(from: "note-1", namespace: "publish"))
        #expect(key != IdempotencyKey.derived(from: "note-2", namespace: "publish"))
        #expect(key != IdempotencyKey.derived(from: "note-1", namespace: "archive"))
        // Any name — empty, long, not ASCII — gives a key a server's 16…128 bounds accept.
        for name in ["", String(repeating: "x", count: 10_000), "\u{0}\u{7F}é😀"] {
            let derived = IdempotencyKey.derived(from: name, namespace: "publish").rawValue
            #expect((16...128).contains(derived.utf8.count) && IdempotencyKey(validating: derived) != nil)
        }
    }
}
