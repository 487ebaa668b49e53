import Foundation
import KeelContract
import KeelCore
import KeelTesting

/// `POST /notes/{id}/publish`: the irreversible operation of the contract (since 1.4), at most once per key.
extension BackendHandler {
    func publish(_ noteID: String, _ request: RecordedRequest, account: String) throws -> TestResponse {
        let key = try Self.idempotencyKey(of: request)
        let correlation = request.headers["X-Correlation-ID"]
        return try withKeysClaimed(
            [account + "\u{0}publish\u{0}" + key], operation: correlation.map { account + "\u{0}" + $0 },
            busy: "a publication with this idempotency key is still being made"
        ) {
            if let stored = try store.publication(key: key, account: account) {
                guard stored.noteID == noteID else {
                    throw BackendFailure(
                        status: 422, code: "idempotency_key_reused",
                        message: "this idempotency key published another note; nothing was published",
                        errors: [("Idempotency-Key", "reused")])
                }
                // The replay answers for the operation it is sent under too.
                if let correlation {
                    try store.pool.writeSync { db in
                        try store.recordOperation(correlation, account: account, applied: true, in: db)
                    }
                }
                return Self.json(status: 200, stored.answer)
            }
            let id = Self.randomHex(configuration.random, bytes: 8)
            let answer = try store.publish(
                noteID: noteID, key: key, id: id, account: account, at: configuration.clock.now(),
                correlationID: correlation)
            holdLateAnswer()
            return Self.json(status: 200, answer)
        }
    }
}
