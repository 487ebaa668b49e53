import Foundation
import KeelContract
import KeelCore
import KeelHTTP
import Testing

@testable import KeelSync

/// An outbox entry read back from storage: every field is checked, and a damaged one is a typed error, never
/// a trap (the key is rebuilt by `IdempotencyKey(validating:)`, not the initializer that traps on a bad key).
@Suite struct OutboxEntryRecordTests {
    let entry = PendingMutation(
        id: "019adeef-0e7e-7967-a301-8e01a06bdd26", idempotencyKey: IdempotencyKey("key-0000000000000001"),
        correlationID: CorrelationID.make(using: .seeded(1)), entity: EntityRef(type: "note", id: "n1"),
        kind: .update, baseVersion: 3, fields: ["title": "Groceries"], previous: ["title": "Shopping"],
        operation: "editNote", createdAt: Date(timeIntervalSince1970: 1_764_676_800), sequence: 42)

    @Test func anEntryReadsBackAsItWasStored() throws {
        let read = try PendingMutation(json: entry.json)
        #expect(read == entry)
    }

    @Test(arguments: ["", "has a space", "line\nbreak", String(repeating: "k", count: 300)])
    func aDamagedIdempotencyKeyIsADamagedRecordNotATrap(_ key: String) throws {
        guard case .object(var object) = entry.json else { Issue.record("an entry is a JSON object"); return }
        object["key"] = .string(key)
        #expect(IdempotencyKey(validating: key) == nil)
        let error = #expect(throws: SyncError.self) { try PendingMutation(json: .object(object)) }
        #expect(error?.code == .damagedRecord)
    }

    /// Outbox record ids are stored: vaults written by earlier builds hold them in exactly this form, and their
    /// text order is the queue's order.
    @Test func outboxIDsAreTwentyDigitsAndSortAsTheirNumbers() {
        #expect(SyncRecords.outboxID(0) == "00000000000000000000")
        #expect(SyncRecords.outboxID(42) == "00000000000000000042")
        #expect(SyncRecords.outboxID(1_000_000_007) == "00000000001000000007")
        #expect(SyncRecords.outboxID(.max) == "18446744073709551615")
        let numbers: [UInt64] = [0, 9, 10, 99, 100, 12_345, 1 << 40, .max - 1, .max]
        #expect(numbers.map(SyncRecords.outboxID) == numbers.map(SyncRecords.outboxID).sorted())
        #expect(numbers.map(SyncRecords.outboxID).map { UInt64($0) } == numbers)
    }
}
