import Foundation
import KeelCore
import KeelHTTP
import KeelStore
import KeelSync
import KeelTesting
import Testing

/// A journal that cannot write (a full disk): the client must not send what it could not record.
private struct RefusingJournal: OperationJournal {
    struct DiskFull: Error {}
    func record(_ entry: JournalEntry) async throws { throw DiskFull() }
    func complete(_ operationID: String, state: JournalEntry.State, requestID: String?) async throws {}
    func unresolved() async throws -> [JournalEntry] { [] }
    func entry(_ operationID: String) async throws -> JournalEntry? { nil }
}

/// A journal that records but cannot be read back (a damaged entry, an I/O error): it cannot say whether
/// an operation sent again was sent before.
private struct UnreadableJournal: OperationJournal {
    struct Unreadable: Error {}
    let recorded = Locked(0)
    func record(_ entry: JournalEntry) async throws { recorded.withLock { $0 += 1 } }
    func complete(_ operationID: String, state: JournalEntry.State, requestID: String?) async throws {}
    func unresolved() async throws -> [JournalEntry] { [] }
    func entry(_ operationID: String) async throws -> JournalEntry? { throw Unreadable() }
}

/// A journal that reads an earlier send as unknown but cannot record the new one (a full disk after a
/// relaunch).
private struct FullJournalWithAnUnknownEntry: OperationJournal {
    struct DiskFull: Error {}
    let earlier: JournalEntry
    func record(_ entry: JournalEntry) async throws { throw DiskFull() }
    func complete(_ operationID: String, state: JournalEntry.State, requestID: String?) async throws {}
    func unresolved() async throws -> [JournalEntry] { [earlier] }
    func entry(_ operationID: String) async throws -> JournalEntry? {
        operationID == earlier.operationID ? earlier : nil
    }
}

/// A backend that applies each Idempotency-Key at most once and answers the operation-status endpoint,
/// as the sample contract (1.2) says.
private final class IdempotentBackend: Sendable {
    let applied = Locked<[String: Int]>([:])  // key or correlation id → times applied
    let statuses = Locked<[String: String]>([:])  // correlation id → status answer

    func respond(_ request: RecordedRequest) -> TestResponse {
        if request.method == "GET", request.path.hasPrefix("/operations/") {
            let id = String(request.path.dropFirst("/operations/".count))
            guard let status = statuses.withLock({ $0[id] }) else {
                return TestResponse(
                    status: 404, headers: ["X-Request-ID": "r-404"], body: #"{"code": "operation_not_found"}"#)
            }
            return TestResponse(status: 200, headers: ["X-Request-ID": "r-status"], body: #"{"status": "\#(status)"}"#)
        }
        let id = request.headers["Idempotency-Key"] ?? request.headers["X-Correlation-ID"] ?? "?"
        applied.withLock { $0[id, default: 0] += 1 }
        return TestResponse(status: 200, headers: ["X-Request-ID": "r-applied"], body: "{}")
    }
}

@Suite(.timeLimit(.minutes(1))) struct OperationJournalTests {
    let directory: TemporaryDirectory
    init() throws { directory = try TemporaryDirectory(prefix: "keel-journal") }

    var path: String { directory.url("journal.sqlite").path }

    /// A POST of one user operation (`correlation`) that has no operation id of its own.
    static func call(_ path: String, _ body: String, _ correlation: CorrelationID) -> HTTPOperation {
        var operation = HTTPOperation.post(path, body: Data(body.utf8))
        operation.correlationID = correlation
        return operation
    }

    func makeClient(_ server: TestServer, journal: any OperationJournal) -> HTTPClient {
        HTTPClient(
            configuration: .init(
                baseURL: server.baseURL, random: .seeded(3), policy: CallPolicy(maximumAttempts: 1), journal: journal))
    }

    static let body = Data(#"{"mutations": [{"id": "m1"}]}"#.utf8)

    @Test func anEntryIsDurableBeforeTheFirstByteLeavesAndSettledAfter() async throws {
        let server = try TestServer()
        let journal = try SQLiteOperationJournal(path: path)
        let observer = try SQLiteOperationJournal(path: path)  // another connection, like another process
        let seen = Locked<[JournalEntry.State?]>([])
        server.setDispatcher(
            TestServer.Dispatcher { _ in
                // While the server holds the request, the entry is already on disk as `sending`.
                let semaphore = DispatchSemaphore(value: 0)
                Task {
                    let entry = try? await observer.unresolved().first
                    seen.withLock { $0.append(entry?.state) }
                    semaphore.signal()
                }
                semaphore.wait()
                return TestResponse(status: 201, headers: ["X-Request-ID": "req-1"], body: "{}")
            })
        var operation = HTTPOperation.post("/mutations", body: Self.body)
        operation.operationID = "outbox-1"
        _ = try await makeClient(server, journal: journal).send(operation)
        #expect(seen.withLock { $0 } == [.sending])
        let entry = try #require(try await journal.entry("outbox-1"))
        #expect(entry.state == .succeeded)
        #expect(entry.requestID == "req-1")
        #expect(entry.method == "POST" && entry.path == "/mutations")
        #expect(entry.bodyDigest?.count == 64)
        #expect(try await journal.unresolved().isEmpty)
    }

    @Test func failuresSettleAsFailedOrUnknownByTheirOutcome() async throws {
        let server = try TestServer()
        let journal = try SQLiteOperationJournal(path: path)
        let client = makeClient(server, journal: journal)
        server.enqueue(TestResponse(status: 422, body: #"{"code": "validation"}"#))
        server.enqueue(TestResponse(socketEffect: .disconnectAfterRequest))
        var refused = HTTPOperation.post("/mutations", body: Self.body)
        refused.operationID = "refused"
        var lost = HTTPOperation.post("/mutations", body: Self.body)
        lost.operationID = "lost"
        await #expect(throws: HTTPFailure.self) { try await client.send(refused) }
        await #expect(throws: HTTPFailure.self) { try await client.send(lost) }
        #expect(try await journal.entry("refused")?.state == .failed(.validation))
        let unknown = try #require(try await journal.entry("lost"))
        #expect(unknown.state == .unknown)
        #expect(unknown.requestID == nil)  // no answer, no request id: never a placeholder
        #expect(try await journal.unresolved().map(\.operationID) == ["lost"])
        // Reads are not journaled.
        server.enqueue(.json("{}"))
        _ = try await client.send(.get("/notes"))
        #expect(try await journal.all().count == 2)
    }

    @Test func aCallCutByTheBackgroundBudgetIsJournaledAsItStands() async throws {
        let server = try TestServer()
        server.enqueue(TestResponse(socketEffect: .noResponse))
        let journal = try SQLiteOperationJournal(path: path)
        let budget = ManualBackgroundBudget(remaining: .seconds(30))
        let client = HTTPClient(
            configuration: .init(
                baseURL: server.baseURL, random: .seeded(3), policy: CallPolicy(maximumAttempts: 1), journal: journal,
                backgroundBudget: budget))
        var operation = HTTPOperation.post("/mutations", body: Self.body)
        operation.operationID = "background"
        let call = Task { try await client.send(operation) }
        _ = try await server.takeRequest()
        budget.expire()  // the OS takes the time away while the server holds the request
        await #expect(throws: HTTPFailure.self) { try await call.value }
        #expect(try await journal.entry("background")?.state == .unknown)  // kept for reconcile, not lost
    }

    @Test func retentionRemovesSettledEntriesButNeverAnUnresolvedOne() async throws {
        let journal = try SQLiteOperationJournal(path: path)
        let old = Date(timeIntervalSince1970: 1_000)
        let entries: [(String, JournalEntry.State)] = [
            ("done", .succeeded), ("refused", .failed(.validation)), ("open", .unknown),
        ]
        for (index, (id, state)) in entries.enumerated() {
            try await journal.record(
                JournalEntry(
                    operationID: id, idempotencyKey: nil,
                    correlationID: CorrelationID.make(using: .seeded(UInt64(index))),
                    method: "POST", path: "/m", bodyDigest: nil, createdAt: old, state: .sending))
            try await journal.complete(id, state: state, requestID: nil)
        }
        try await journal.removeSettled(before: Date(timeIntervalSince1970: 2_000))
        #expect(try await journal.all().map(\.operationID) == ["open"])
    }

    /// Found in an outside audit: the journal was made with the process's default mode (0644), readable by
    /// every user of the machine, with each call's path, keys and body digest. It is its owner's only, WAL too,
    /// and a journal an older Keel made is narrowed when opened.
    @Test func theJournalIsReadableByItsOwnerOnly() async throws {
        let journal = try SQLiteOperationJournal(path: path)
        try await journal.record(
            JournalEntry(
                operationID: "op", idempotencyKey: nil, correlationID: CorrelationID.make(using: .seeded(1)),
                method: "POST", path: "/m", bodyDigest: nil, createdAt: Date(), state: .sending))
        func mode(_ file: String) throws -> Int {
            try #require(FileManager.default.attributesOfItem(atPath: file)[.posixPermissions] as? Int)
        }
        #expect(try mode(path) == 0o600)
        #expect(try mode(path + "-wal") == 0o600)
        let older = path + ".older.sqlite"
        #expect(FileManager.default.createFile(atPath: older, contents: nil, attributes: [.posixPermissions: 0o644]))
        _ = try SQLiteOperationJournal(path: older)
        #expect(try mode(older) == 0o600)
    }

    @Test func anOperationThatCannotBeJournaledIsNotSent() async throws {
        let server = try TestServer()
        let failure = await #expect(throws: HTTPFailure.self) {
            try await makeClient(server, journal: RefusingJournal()).send(.post("/mutations", body: Self.body))
        }
        #expect(failure?.outcome == .notSent)
        #expect(server.requestCount == 0)
    }

    @Test func anOperationSentAgainIsNotSentWhenTheJournalCannotSayWhetherItWasSentBefore() async throws {
        // Overwriting an entry it could not read could turn an earlier "may have been applied" into a later
        // "not applied"; the call stops first, having sent nothing, and says what is known: an earlier send
        // may have been applied.
        let server = try TestServer()
        let journal = UnreadableJournal()
        var operation = HTTPOperation.post(
            "/mutations", body: Self.body, idempotency: .keyed(IdempotencyKey("k-0123456789abcdef")))
        operation.operationID = "operation-1"
        let sent = operation
        let failure = await #expect(throws: HTTPFailure.self) {
            try await makeClient(server, journal: journal).send(sent)
        }
        #expect(failure?.outcome == .unknown)
        #expect(server.requestCount == 0)
        #expect(journal.recorded.withLock { $0 } == 0)
    }

    /// An operation without an idempotency key is never put on the wire again once a send of it may have been
    /// applied (its outcome unknown, or confirmed): a second payment is worse than an unanswered first. Only
    /// reconcile, which asks the server, settles it.
    @Test func anUnsafeOperationThatMayHaveBeenAppliedIsNeverSentAgain() async throws {
        let server = try TestServer()
        let journal = try SQLiteOperationJournal(path: path)
        let client = makeClient(server, journal: journal)
        server.enqueue(TestResponse(socketEffect: .disconnectAfterRequest))
        var lost = HTTPOperation.post("/payments", body: Self.body)
        lost.operationID = "pay-lost"
        let first = lost
        await #expect(throws: HTTPFailure.self) { try await client.send(first) }
        #expect(try await journal.entry("pay-lost")?.state == .unknown)
        // The user taps Retry (or the app's outbox replays it), in this process or after a relaunch.
        for sender in [client, makeClient(server, journal: journal)] {
            let again = await #expect(throws: HTTPFailure.self) { try await sender.send(first) }
            #expect(again?.outcome == .unknown && again?.kind == .inProgress && again?.attempts == 0)
            #expect(again?.requestID == nil)
        }
        #expect(server.requestCount == 1)
        #expect(try await journal.entry("pay-lost")?.state == .unknown)
        // Confirmed before: not sent again, and the confirmation stays.
        server.enqueue(TestResponse(status: 201, headers: ["X-Request-ID": "r-paid"], body: "{}"))
        var paid = HTTPOperation.post("/payments", body: Self.body)
        paid.operationID = "pay-done"
        let done = paid
        _ = try await client.send(done)
        let again = await #expect(throws: HTTPFailure.self) { try await client.send(done) }
        #expect(again?.outcome == .unknown && again?.attempts == 0)
        #expect(server.requestCount == 2)
        #expect(try await journal.entry("pay-done")?.state == .succeeded)
        // A relaunch that kept only the operation's correlation id (no operation id) finds it the same way.
        server.enqueue(TestResponse(socketEffect: .disconnectAfterRequest))
        var byCorrelation = HTTPOperation.post("/payments", body: Self.body)
        byCorrelation.correlationID = try CorrelationID(validating: "0123456789abcdef0123456789abcdef")
        let kept = byCorrelation
        await #expect(throws: HTTPFailure.self) { try await client.send(kept) }
        let resent = await #expect(throws: HTTPFailure.self) {
            try await makeClient(server, journal: journal).send(kept)
        }
        #expect(resent?.outcome == .unknown && resent?.attempts == 0)
        #expect(server.requestCount == 3)
        #expect(try await journal.entry("0123456789abcdef0123456789abcdef")?.state == .unknown)
    }

    /// Found in review of the above: one user operation may span several different calls under one
    /// correlation id (OBS-LOG-004); without an operation id, only the very same request (method, path, body,
    /// key) counts as sent again — another call of the operation is sent, alone or at the same time.
    @Test func otherCallsOfOneUserOperationAreNotTakenForResends() async throws {
        let server = try TestServer()
        let journal = try SQLiteOperationJournal(path: path)
        let client = makeClient(server, journal: journal)
        let correlation = try CorrelationID(validating: "00112233445566778899aabbccddeeff")
        server.enqueue(TestResponse(status: 201, body: Data("{}".utf8)))
        server.enqueue(TestResponse(status: 201, body: Data("{}".utf8)))
        _ = try await client.send(Self.call("/orders", #"{"item": 1}"#, correlation))
        _ = try await client.send(Self.call("/payments", #"{"amount": 5}"#, correlation))  // another call: sent
        #expect(server.requestCount == 2)
        // The same request again: refused, it was applied.
        let again = await #expect(throws: HTTPFailure.self) {
            try await client.send(Self.call("/payments", #"{"amount": 5}"#, correlation))
        }
        #expect(again?.attempts == 0 && server.requestCount == 2)
        // Two different calls at the same time: both go.
        server.enqueue(TestResponse(status: 201, body: Data("{}".utf8)).delayingHeaders(by: .milliseconds(300)))
        server.enqueue(TestResponse(status: 201, body: Data("{}".utf8)))
        let first = Task { try await client.send(Self.call("/a", "{}", correlation)) }
        _ = try await server.takeRequest()
        _ = try await server.takeRequest()
        _ = try await server.takeRequest()
        _ = try await client.send(Self.call("/b", "{}", correlation))
        _ = try await first.value
        #expect(server.requestCount == 4)
        // Four calls, four entries (none took another's place, also while two ran at once).
        let entries = try await journal.all()
        #expect(
            Set(entries.map(\.path)) == ["/orders", "/payments", "/a", "/b"]
                && Set(entries.map(\.operationID)).count == 4)
        #expect(entries.allSatisfy { $0.state == .succeeded })
    }

    /// Found in review: without an operation id, every call of one user operation was journaled under its
    /// correlation id, so a second call wrote over the first one's entry — an `unknown` payment was then
    /// neither reconciled nor guarded, and the first call could be sent again.
    @Test func eachCallOfOneUserOperationKeepsAJournalEntryOfItsOwn() async throws {
        let server = try TestServer()
        let journal = try SQLiteOperationJournal(path: path)
        let client = makeClient(server, journal: journal)
        let correlation = try CorrelationID(validating: "ffeeddccbbaa99887766554433221100")
        // The order's answer is lost (the connection drops after the request arrived): unknown.
        server.enqueue(TestResponse(socketEffect: .disconnectAfterRequest))
        let lost = await #expect(throws: HTTPFailure.self) {
            try await client.send(Self.call("/orders", #"{"item": 1}"#, correlation))
        }
        #expect(lost?.outcome == .unknown)
        // The payment of the same user operation goes through.
        server.enqueue(TestResponse(status: 201, body: Data("{}".utf8)))
        _ = try await client.send(Self.call("/payments", #"{"amount": 5}"#, correlation))
        let entries = try await journal.all()
        #expect(entries.count == 2)
        let order = try #require(entries.first { $0.path == "/orders" })
        let payment = try #require(entries.first { $0.path == "/payments" })
        #expect(order.operationID == correlation.rawValue && order.state == .unknown)
        #expect(payment.operationID.hasPrefix(correlation.rawValue + "~") && payment.state == .succeeded)
        #expect(order.correlationID == correlation && payment.correlationID == correlation)
        // The order is still guarded (it may have been applied) and still waits for reconcile.
        let again = await #expect(throws: HTTPFailure.self) {
            try await client.send(Self.call("/orders", #"{"item": 1}"#, correlation))
        }
        #expect(again?.attempts == 0 && again?.outcome == .unknown)
        #expect(server.requestCount == 2)
        #expect(try await journal.unresolved().map(\.operationID) == [correlation.rawValue])
        // The payment, sent again, is found under its own key: applied already, not sent.
        let paidAgain = await #expect(throws: HTTPFailure.self) {
            try await client.send(Self.call("/payments", #"{"amount": 5}"#, correlation))
        }
        #expect(paidAgain?.attempts == 0 && server.requestCount == 2)
        #expect(try await journal.all().count == 2)
    }

    /// Found in review of the keying above: a call journaled under its own key (another call of the operation
    /// held the correlation id's) was looked up only under the correlation id when sent again — once that
    /// entry was gone (settled and removed), an unknown payment was sent a second time.
    @Test func aResendFindsItsEarlierSendUnderItsOwnKey() async throws {
        let server = try TestServer()
        let journal = try SQLiteOperationJournal(path: path)
        let client = makeClient(server, journal: journal)
        let correlation = try CorrelationID(validating: "0f1e2d3c4b5a69788796a5b4c3d2e1f0")
        server.enqueue(TestResponse(status: 201, body: Data("{}".utf8)))
        // The operation's first call: the correlation id's own entry.
        _ = try await client.send(Self.call("/orders", "{}", correlation))
        server.enqueue(TestResponse(socketEffect: .disconnectAfterRequest))
        let lost = await #expect(throws: HTTPFailure.self) {
            try await client.send(Self.call("/payments", "{}", correlation))
        }
        #expect(lost?.outcome == .unknown)
        try await journal.removeSettled(before: Date().addingTimeInterval(3600))  // the order's entry goes
        #expect(try await journal.all().map(\.path) == ["/payments"])
        let again = await #expect(throws: HTTPFailure.self) {
            try await client.send(Self.call("/payments", "{}", correlation))
        }
        #expect(again?.attempts == 0 && again?.outcome == .unknown)
        #expect(server.requestCount == 2)
    }

    /// Found in review: the status endpoint answers about a correlation id, and with an order and its payment
    /// under one, the payment's "applied" settled the order — which may never have arrived — as succeeded.
    @Test func reconcileDoesNotTakeAnotherCallsAnswerForThisOne() async throws {
        let server = try TestServer()
        let backend = IdempotentBackend()
        let journal = try SQLiteOperationJournal(path: path)
        let client = makeClient(server, journal: journal)
        let correlation = try CorrelationID(validating: "a0b1c2d3e4f5061728394a5b6c7d8e9f")
        server.enqueue(TestResponse(socketEffect: .disconnectAfterRequest))
        _ = await #expect(throws: HTTPFailure.self) { try await client.send(Self.call("/orders", "{}", correlation)) }
        server.enqueue(TestResponse(status: 201, body: Data("{}".utf8)))
        _ = try await client.send(Self.call("/payments", "{}", correlation))
        backend.statuses.withLock { $0[correlation.rawValue] = "applied" }  // because of the payment
        server.setDispatcher(TestServer.Dispatcher(backend.respond))
        let settled = try await client.reconcile()
        #expect(settled.map { "\($0.path)=\($0.state)" } == ["/orders=unknown"])
        // "Not applied" for the correlation id holds for every call of it.
        backend.statuses.withLock { $0[correlation.rawValue] = "notApplied" }
        #expect(try await client.reconcile().map { "\($0.path)=\($0.state)" } == ["/orders=notApplied"])
    }

    /// A keyed operation may be sent again, but a re-send that fails takes back nothing an earlier one got:
    /// a confirmed entry stays confirmed, and the failure says it may have been applied, never "not sent".
    @Test func aFailedResendOfAConfirmedKeyedOperationKeepsItConfirmed() async throws {
        let server = try TestServer()
        let journal = try SQLiteOperationJournal(path: path)
        let client = makeClient(server, journal: journal)
        server.enqueue(TestResponse(status: 201, headers: ["X-Request-ID": "r-1"], body: "{}"))
        var operation = HTTPOperation.post(
            "/mutations", body: Self.body, idempotency: .keyed(IdempotencyKey("k-confirmed-0123456789")))
        operation.operationID = "keyed-done"
        let sent = operation
        _ = try await client.send(sent)
        server.shutdown()  // offline now: the re-send never leaves
        let failure = await #expect(throws: HTTPFailure.self) { try await client.send(sent) }
        #expect(failure?.outcome == .unknown)
        let entry = try #require(try await journal.entry("keyed-done"))
        #expect(entry.state == .succeeded && entry.requestID == "r-1")
    }

    /// A double tap: the second send of an operation whose first send is still on its way is refused at once,
    /// and nothing reaches the server twice; reconcile leaves the running send alone.
    @Test func theSameOperationIsNeverOnTheWireTwiceAtOnce() async throws {
        let server = try TestServer()
        let journal = try SQLiteOperationJournal(path: path)
        let client = makeClient(server, journal: journal)
        server.enqueue(TestResponse(status: 201, body: Data("{}".utf8)).delayingHeaders(by: .seconds(1)))
        var operation = HTTPOperation.post(
            "/mutations", body: Self.body, idempotency: .keyed(IdempotencyKey("k-double-tap-0123456789")))
        operation.operationID = "double-tap"
        let sent = operation
        let first = Task { try await client.send(sent) }
        _ = try await server.takeRequest()
        let second = await #expect(throws: HTTPFailure.self) { try await client.send(sent) }
        #expect(second?.kind == .inProgress && second?.outcome == .unknown && second?.attempts == 0)
        #expect(try await client.reconcile().isEmpty)  // in flight here: its own call settles it
        _ = try await first.value
        #expect(server.requestCount == 1)
        #expect(try await journal.entry("double-tap")?.state == .succeeded)
    }

    @Test func aJournalThatCannotRecordAResendOfAnUnknownOperationSaysItMayHaveBeenApplied() async throws {
        let server = try TestServer()
        let earlier = JournalEntry(
            operationID: "resend", idempotencyKey: IdempotencyKey("k-resend-0123456789"),
            correlationID: try CorrelationID(validating: "fedcba9876543210fedcba9876543210"), method: "POST",
            path: "/mutations",
            bodyDigest: nil, createdAt: Date(timeIntervalSince1970: 0), state: .unknown)
        var operation = HTTPOperation.post("/mutations", body: Self.body, idempotency: .keyed(earlier.idempotencyKey!))
        operation.operationID = "resend"
        let sent = operation
        let failure = await #expect(throws: HTTPFailure.self) {
            try await makeClient(server, journal: FullJournalWithAnUnknownEntry(earlier: earlier)).send(sent)
        }
        #expect(failure?.outcome == .unknown)
        #expect(server.requestCount == 0)
    }

    /// First launch: a keyed POST `operationID` reaches `server`, whose backend applies it, but the answer is
    /// lost; the journal says unknown. Returns the operation, to be rebuilt after the relaunch.
    private func sendAppliedWithTheAnswerLost(
        _ server: TestServer, _ backend: IdempotentBackend, operationID: String, key: IdempotencyKey
    ) async throws -> HTTPOperation {
        var operation = HTTPOperation.post("/mutations", body: Self.body, idempotency: .keyed(key))
        operation.operationID = operationID
        server.setDispatcher(
            TestServer.Dispatcher { request in
                _ = backend.respond(request)
                return TestResponse(socketEffect: .disconnectAfterRequest)
            })
        let journal = try SQLiteOperationJournal(path: path)
        let sent = operation
        await #expect(throws: HTTPFailure.self) { try await makeClient(server, journal: journal).send(sent) }
        #expect(try await journal.entry(operationID)?.state == .unknown)
        return operation
    }

    @Test func afterARelaunchAKeyedOperationIsResentWithItsKeyAndAppliedOnce() async throws {
        let server = try TestServer()
        let backend = IdempotentBackend()
        let key = IdempotencyKey.make(using: .seeded(11))
        let operation = try await sendAppliedWithTheAnswerLost(server, backend, operationID: "outbox-7", key: key)
        // Relaunch: a new journal and client on the same file.
        server.setDispatcher(TestServer.Dispatcher(backend.respond))
        let journal = try SQLiteOperationJournal(path: path)
        let client = makeClient(server, journal: journal)
        let original = operation
        let settled = try await client.reconcile(rebuild: { entry in entry.operationID == "outbox-7" ? original : nil })
        #expect(settled.map(\.state) == [.succeeded])
        #expect(settled.first?.requestID == "r-applied")
        let posts = server.requests.filter { $0.method == "POST" }
        #expect(posts.count == 2)
        #expect(Set(posts.map { $0.headers["Idempotency-Key"] }) == [key.rawValue])  // the same key
        #expect(Set(posts.map { $0.headers["X-Correlation-ID"] }).count == 1)  // and the same operation
        #expect(backend.applied.withLock { $0[key.rawValue] } == 2)  // the backend dedupes the second
        #expect(try await journal.unresolved().isEmpty)
    }

    /// MOB-API-003/004: a re-send that does not get through cannot settle an operation whose first send may
    /// have been applied: offline, an expired token's 401 and a 503 all leave it unknown and visible.
    @Test(arguments: ["offline", "401", "503"])
    func aFailedResendAfterARelaunchLeavesTheOperationUnknown(relaunch: String) async throws {
        let server = try TestServer()
        let operation = try await sendAppliedWithTheAnswerLost(
            server, IdempotentBackend(), operationID: "outbox-8", key: IdempotencyKey.make(using: .seeded(13)))
        let journal = try SQLiteOperationJournal(path: path)
        let client: HTTPClient
        let refusing = try RefusingPort()  // nothing listens: every send fails before a byte leaves
        switch relaunch {
        case "offline":
            client = HTTPClient(
                configuration: .init(
                    baseURL: refusing.baseURL, random: .seeded(3), policy: CallPolicy(maximumAttempts: 1),
                    journal: journal))
        case "401":
            server.setDispatcher(TestServer.Dispatcher { _ in TestResponse(status: 401, body: "{}") })
            client = makeClient(server, journal: journal)
        default:
            server.setDispatcher(TestServer.Dispatcher { _ in TestResponse(status: 503, body: "{}") })
            client = makeClient(server, journal: journal)
        }
        let original = operation
        let settled = try await client.reconcile(rebuild: { _ in original })
        #expect(settled.map(\.state) == [.unknown])
        #expect(try await journal.unresolved().map(\.operationID) == ["outbox-8"])
        // The app retrying it itself is told the same: not "nothing was changed".
        let failure = await #expect(throws: HTTPFailure.self) { try await client.send(original) }
        #expect(failure?.outcome == .unknown)
        #expect(try await journal.entry("outbox-8")?.state == .unknown)
    }

    /// A 404 is "never arrived" only when it is the backend's own answer (its error code), not a gateway's,
    /// a portal's or an HTML page's.
    @Test func aForeign404LeavesAnUnkeyedOperationUnknown() async throws {
        let server = try TestServer()
        let journal = try SQLiteOperationJournal(path: path)
        let client = makeClient(server, journal: journal)
        for id in ["html", "other-code", "generic", "ours"] {
            server.enqueue(TestResponse(socketEffect: .disconnectAfterRequest))
            var operation = HTTPOperation.post("/payments", body: Self.body)
            operation.operationID = id
            await #expect(throws: HTTPFailure.self) { try await client.send(operation) }
        }
        server.enqueue(
            TestResponse(status: 404, headers: ["Content-Type": "text/html"], body: "<html>Not Found</html>"))
        server.enqueue(TestResponse(status: 404, body: #"{"code": "route_missing"}"#))
        // The code a backend answers for any missing route (the reference backend's own among them): a backend
        // without the status endpoint, or a mistyped path, must not settle a payment as never applied.
        server.enqueue(TestResponse(status: 404, body: #"{"code": "not_found"}"#))
        server.enqueue(TestResponse(status: 404, body: #"{"code": "operation_not_found"}"#))
        let settled = try await client.reconcile()
        #expect(
            settled.map { "\($0.operationID)=\($0.state)" } == [
                "html=unknown", "other-code=unknown", "generic=unknown", "ours=notApplied",
            ])
    }

    /// Found in review: one row the journal could not read back (damaged, or written by a newer release)
    /// made `unresolved()` throw, and with it `reconcile()`: no operation was reconciled any more.
    @Test func anUnreadableEntryDoesNotKeepTheOthersFromBeingReconciled() async throws {
        let server = try TestServer()
        let backend = IdempotentBackend()
        let journal = try SQLiteOperationJournal(path: path)
        let client = makeClient(server, journal: journal)
        for id in ["before", "damaged", "after"] {
            server.enqueue(TestResponse(socketEffect: .disconnectAfterRequest))
            var operation = HTTPOperation.post("/payments", body: Self.body)
            operation.operationID = id
            await #expect(throws: HTTPFailure.self) { try await client.send(operation) }
        }
        let entries = try await journal.all()
        for entry in entries { backend.statuses.withLock { $0[entry.correlationID.rawValue] = "applied" } }
        let file = try DatabasePool(path: path)
        try await file.write { db in
            try db.execute(
                "UPDATE keel_operation_journal SET correlation_id = 'not a correlation id' WHERE operation_id = 'damaged'"
            )
        }
        await file.close()
        server.setDispatcher(TestServer.Dispatcher(backend.respond))
        let settled = try await client.reconcile()
        #expect(settled.map { "\($0.operationID)=\($0.state)" } == ["before=succeeded", "after=succeeded"])
        let unreadable = try await journal.unreadable()
        #expect(unreadable.map(\.operationID) == ["damaged"])
        #expect(unreadable.first?.reason.contains("correlation id") == true)
        // Still there, untouched, and never sent again (its own lookup cannot say it was not applied).
        var again = HTTPOperation.post("/payments", body: Self.body)
        again.operationID = "damaged"
        let retried = again
        let refused = await #expect(throws: HTTPFailure.self) { try await client.send(retried) }
        #expect(refused?.outcome == .unknown && refused?.attempts == 0)
        #expect(server.requests.filter { $0.method == "POST" }.count == 3)
        #expect(try await journal.unreadable().map(\.operationID) == ["damaged"])
        #expect(try await journal.all().map(\.operationID) == ["before", "after"])
    }

    @Test func anUnkeyedOperationIsLookedUpNeverResent() async throws {
        let server = try TestServer()
        let backend = IdempotentBackend()
        let journal = try SQLiteOperationJournal(path: path)
        let client = makeClient(server, journal: journal)
        for id in ["applied", "never-arrived", "said-not-applied", "no-answer"] {
            server.enqueue(TestResponse(socketEffect: .disconnectAfterRequest))
            var operation = HTTPOperation.post("/payments", body: Self.body)
            operation.operationID = id
            await #expect(throws: HTTPFailure.self) { try await client.send(operation) }
        }
        let entries = try await journal.all()
        func correlation(_ id: String) -> String { entries.first { $0.operationID == id }!.correlationID.rawValue }
        backend.statuses.withLock {
            $0[correlation("applied")] = "applied"
            $0[correlation("said-not-applied")] = "notApplied"
            $0[correlation("no-answer")] = "inProgress"
        }
        server.setDispatcher(TestServer.Dispatcher(backend.respond))
        let settled = try await client.reconcile(rebuild: { _ in HTTPOperation.post("/payments", body: Self.body) })
        #expect(
            settled.map { "\($0.operationID)=\($0.state)" } == [
                "applied=succeeded", "never-arrived=notApplied", "said-not-applied=notApplied", "no-answer=unknown",
            ])
        #expect(server.requests.filter { $0.method == "POST" }.count == 4)  // only the first sends: none re-sent
        #expect(try await journal.unresolved().map(\.operationID) == ["no-answer"])  // still visible
        // Found in an outside audit: the lookup's own request id replaced the operation's, though the lookup
        // settled nothing; support would look up the wrong exchange.
        #expect(try await journal.entry("no-answer")?.requestID == nil)
        #expect(try await journal.entry("applied")?.requestID == "r-status")
    }

    /// Found in an outside audit: reconcile wrote its finding over whatever the entry held by then. A
    /// background task's client on the same journal had its answer ("succeeded") while the backend, asked
    /// before that request committed, said it knew no such operation: reconcile wrote "not applied", and the
    /// app would offer to pay again.
    @Test func reconcileNeverWritesOverAnAnswerThatCameInMeanwhile() async throws {
        let server = try TestServer()
        let journal = try SQLiteOperationJournal(path: path)
        let client = makeClient(server, journal: journal)
        var operation = HTTPOperation.post("/payments", body: Self.body)
        operation.operationID = "x"
        server.enqueue(TestResponse(socketEffect: .disconnectAfterRequest))
        await #expect(throws: HTTPFailure.self) { try await client.send(operation) }
        #expect(try await journal.entry("x")?.state == .unknown)
        // The other client's answer lands in the journal while the status lookup is on its way.
        let other = try DatabasePool(path: path)
        server.setDispatcher(
            TestServer.Dispatcher { _ in
                try? other.writeSync { db in
                    try db.execute(
                        "UPDATE keel_operation_journal SET state = 'succeeded', request_id = 'r-own' WHERE operation_id = 'x'"
                    )
                }
                return TestResponse(status: 404, body: #"{"code": "operation_not_found"}"#)
            })
        let settled = try await client.reconcile()
        #expect(settled.map(\.state) == [.succeeded])
        let entry = try #require(try await journal.entry("x"))
        #expect(entry.state == .succeeded && entry.requestID == "r-own")
        await other.close()
    }

    /// A keyed POST /mutations journaled as operation `k` whose answer was lost (`unknown`), a server whose
    /// status lookup fails too, and the client and journal that sent it.
    func unknownKeyedOperation(seed: UInt64) async throws -> (
        server: TestServer, journal: SQLiteOperationJournal, client: HTTPClient, key: IdempotencyKey
    ) {
        let server = try TestServer()
        let journal = try SQLiteOperationJournal(path: path)
        let client = makeClient(server, journal: journal)
        let key = IdempotencyKey.make(using: .seeded(seed))
        var operation = HTTPOperation.post("/mutations", body: Self.body, idempotency: .keyed(key))
        operation.operationID = "k"
        server.enqueue(TestResponse(socketEffect: .disconnectAfterRequest))
        await #expect(throws: HTTPFailure.self) { try await client.send(operation) }
        server.setDispatcher(TestServer.Dispatcher { _ in TestResponse(status: 500) })
        return (server, journal, client, key)
    }

    @Test func aRebuiltOperationWithAnotherBodyIsNotSentUnderTheSameKey() async throws {
        let (server, _, client, key) = try await unknownKeyedOperation(seed: 12)
        let settled = try await client.reconcile(rebuild: { _ in
            HTTPOperation.post("/mutations", body: Data(#"{"other": true}"#.utf8), idempotency: .keyed(key))
        })
        #expect(settled.map(\.state) == [.unknown])
        #expect(server.requests.filter { $0.method == "POST" }.count == 1)
    }

    /// Found in review: a mutating stream went out without a journal entry (nothing for reconcile after a
    /// kill, and no guard against sending an `unknown` operation again). With a journal it is refused before
    /// anything is sent; a reading stream is not affected.
    @Test func aMutatingStreamIsRefusedWhenAJournalIsConfigured() async throws {
        let server = try TestServer()
        server.setDispatcher(TestServer.Dispatcher { _ in TestResponse(body: "{\"n\": 1}\n") })
        let journal = try SQLiteOperationJournal(path: path)
        let client = makeClient(server, journal: journal)
        var failure: HTTPFailure?
        do {
            for try await _ in client.events(.post("/imports", body: Self.body), format: .newlineDelimitedJSON) {}
        } catch { failure = error as? HTTPFailure }
        #expect(failure?.outcome == .notSent && failure?.kind == .technical)
        #expect(failure?.detail.unredacted.contains("a stream is not journaled") == true)
        #expect(server.requestCount == 0)
        var events = 0
        for try await _ in client.events(.get("/feed"), format: .newlineDelimitedJSON) { events += 1 }
        #expect(events == 1 && server.requestCount == 1)
        #expect(try await journal.unresolved().isEmpty)
    }

    /// Found in review: reconcile re-sent a keyed operation the app rebuilt with the same key and body but to
    /// another endpoint (where the key may be applied as new), and a send under an operation id that the
    /// journal holds for another request overwrote what the entry said was sent.
    @Test func aRebuiltOrReusedOperationForAnotherEndpointIsNotSentUnderItsEntry() async throws {
        let (server, journal, client, key) = try await unknownKeyedOperation(seed: 13)
        let settled = try await client.reconcile(rebuild: { _ in
            HTTPOperation.post("/v2/mutations", body: Self.body, idempotency: .keyed(key))
        })
        #expect(settled.map(\.state) == [.unknown])
        #expect(server.requests.filter { $0.method == "POST" }.map(\.path) == ["/mutations"])
        // The app sends another request under the same operation id: refused, nothing sent, the entry intact.
        var other = HTTPOperation.post("/v2/mutations", body: Self.body, idempotency: .keyed(key))
        other.operationID = "k"
        await #expect {
            try await client.send(other)
        } throws: { error in
            guard let failure = error as? HTTPFailure else { return false }
            return failure.outcome == .notSent && failure.attempts == 0
                && failure.detail.unredacted.contains("journaled for another request")
        }
        #expect(server.requests.filter { $0.method == "POST" }.count == 1)
        let entry = try #require(try await journal.entry("k"))
        #expect(entry.path == "/mutations" && entry.state == .unknown)
    }
}
