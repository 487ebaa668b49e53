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
