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
        #expect(read.laterBases.ranges.isEmpty)
    }

    /// The later changes' bases a first entry carries (what a damaged entity record is rebuilt from) read
    /// back range by range — `==` on changes leaves them out, so they are compared here — and a damaged range
    /// is a damaged record.
    @Test func theLaterBasesAFirstEntryCarriesReadBack() throws {
        var first = entry
        first.laterBases = LaterBases(ranges: [
            .init(first: 43, last: 90, base: 4), .init(first: 95, last: 95, base: nil),
            .init(first: 96, last: 120, base: 7),
        ])
        let read = try PendingMutation(json: first.json)
        #expect(read.laterBases.ranges == first.laterBases.ranges)
        #expect(read.laterBases.base(of: 60) == .some(4) && read.laterBases.base(of: 95) == .some(nil))
        #expect(read.laterBases.base(of: 92) == .none && read.laterBases.base(of: 121) == .none)
        for damaged: JSONValue in [[[43, 42, 4]], [[43, 90]], [[43, 90, "four"]], ["43-90"], 7] {
            guard case .object(var object) = first.json else { Issue.record("an entry is a JSON object"); return }
            object["later"] = damaged
            let error = #expect(throws: SyncError.self) { try PendingMutation(json: .object(object)) }
            #expect(error?.code == .damagedRecord)
        }
    }

    /// An entry is stored as written member by member (`encoded`): the same bytes as its JSON object
    /// serialized, for every optional member and for text that must be escaped, and it reads back.
    @Test func anEntryIsStoredAsTheBytesOfItsJSON() throws {
        var plain = entry
        plain.baseVersion = nil
        var full = PendingMutation(
            id: "019adeef-0e7e-7967-a301-8e01a06bdd27", idempotencyKey: IdempotencyKey("key-0000000000000002"),
            correlationID: CorrelationID.make(using: .seeded(2)),
            entity: EntityRef(type: "note \"quoted\"", id: "n\\2\u{1}é🙂"), kind: .delete, baseVersion: -7,
            fields: ["title": "tab\tnew\nline", "n": 1.5, "nested": ["a": [true, nil]]], previous: [:],
            operation: "deleteNote", createdAt: Date(timeIntervalSince1970: -12), sequence: .max,
            replaces: "019adeef-0e7e-7967-a301-8e01a06bdd26")
        full.attempts = 3
        full.failure = SyncFailure(
            kind: .timeout, outcome: .unknown, status: 503, errorCode: "busy", requestID: "r-1",
            retryAt: Date(timeIntervalSince1970: 1_764_676_801.5))
        full.laterBases = LaterBases(ranges: [
            .init(first: 43, last: 90, base: 4), .init(first: 95, last: 95, base: nil),
        ])
        for mutation in [entry, plain, full] {
            #expect(mutation.encoded == mutation.json.serialized())
            let read = try PendingMutation(json: SyncRecords.decode(SyncRecords.encode(mutation), "entry"))
            #expect(read == mutation)
        }
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
