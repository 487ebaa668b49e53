import Foundation
import KeelCore
import KeelHTTP
import KeelTesting
import Testing

/// W3C Trace Context (MOB-API-004): parsing exactly as the recommendation says, and propagation per
/// attempt only to allowlisted origins.
@Suite struct TraceParentParsingTests {
    static let traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
    static let parentID = "00f067aa0ba902b7"
    static let valid = "00-\(traceID)-\(parentID)-01"

    @Test func aVersion00ValueIsReadFieldByField() throws {
        let parent = try TraceParent.parse(Self.valid)
        #expect(parent.version == 0)
        #expect(parent.traceID.description == Self.traceID)
        #expect(parent.parentID.description == Self.parentID)
        #expect(parent.flags == 1)
        #expect(parent.sampled)
        #expect(parent.headerValue == Self.valid)
    }

    @Test func spacesAndTabsAroundTheFieldValueAreIgnored() throws {
        #expect(try TraceParent.parse(" \t" + Self.valid + "\t ").traceID.description == Self.traceID)
    }

    @Test func flagsOtherThanSampledAreIgnoredForVersion00() throws {
        let parent = try TraceParent.parse("00-\(Self.traceID)-\(Self.parentID)-fe")
        #expect(parent.flags == 0xfe)
        #expect(!parent.sampled)
        #expect(parent.headerValue.hasSuffix("-00"))  // what Keel sends carries only the sampled bit
        #expect(try TraceParent.parse("00-\(Self.traceID)-\(Self.parentID)-03").sampled)
    }

    @Test(arguments: [
        ("00-\(traceID)-\(parentID)-01-", "malformedTraceparent"),  // version 00 is exactly 55 characters
        ("00-\(traceID)-\(parentID)-1", "malformedTraceparent"),
        ("00-\(traceID.uppercased())-\(parentID)-01", "malformedTraceparent"),  // lowercase hex only
        ("00-\(traceID)-\(parentID.uppercased())-01", "malformedTraceparent"),
        ("00-\(traceID)-\(parentID)-0A", "malformedTraceparent"),
        ("ff-\(traceID)-\(parentID)-01", "invalidVersion"),
        ("0G-\(traceID)-\(parentID)-01", "malformedTraceparent"),
        ("00-00000000000000000000000000000000-\(parentID)-01", "zeroTraceID"),
        ("00-\(traceID)-0000000000000000-01", "zeroParentID"),
        ("00_\(traceID)-\(parentID)-01", "malformedTraceparent"),
        ("00-\(traceID)_\(parentID)-01", "malformedTraceparent"),
        ("00-\(traceID.dropLast())x-\(parentID)-01", "malformedTraceparent"),
        ("cc-\(traceID)-\(parentID)-01x", "malformedTraceparent"),  // a longer future version needs '-' at 56
        ("cc-\(traceID)-\(parentID)", "malformedTraceparent"),
        ("", "malformedTraceparent"),
        ("00-\(traceID)-\(parentID)-01 x", "malformedTraceparent"),
    ])
    func invalidValuesAreRejectedWithTheirReason(value: String, code: String) {
        #expect {
            try TraceParent.parse(value)
        } throws: { error in
            (error as? TraceContextError)?.code.name == code
        }
    }

    /// Found in an outside audit: a value of 55 characters with an "é" among them was refused as "not 56
    /// characters" — its length in bytes. It is told what is wrong with it; lengths are told in characters.
    @Test func whatIsWrongIsToldInCharacters() {
        let accented = "00-\(Self.traceID)-\(Self.parentID.dropLast())\u{E9}-01"
        let error = #expect(throws: TraceContextError.self) { try TraceParent.parse(accented) }
        #expect(error?.message.contains("lowercase hex digits") == true, "\(String(describing: error))")
        let long = #expect(throws: TraceContextError.self) { try TraceParent.parse(Self.valid + "\u{E9}") }
        #expect(long?.message.hasSuffix("not 56") == true, "\(String(describing: long))")
    }

    @Test func aHigherVersionIsReadForItsFirstFourFields() throws {
        let exact = try TraceParent.parse("cc-\(Self.traceID)-\(Self.parentID)-01")
        #expect(exact.version == 0xcc)
        let longer = try TraceParent.parse("cc-\(Self.traceID)-\(Self.parentID)-01-what-the-future-holds")
        #expect(longer.traceID.description == Self.traceID)
        #expect(longer.parentID.description == Self.parentID)
        #expect(longer.sampled)
        #expect(longer.headerValue == Self.valid)  // propagated as version 00
    }
}

@Suite struct TraceStateParsingTests {
    @Test func membersKeepTheirOrderAndEmptyOnesAreSkipped() throws {
        let state = try TraceState.parse(" rojo=00f067aa0ba902b7 ,, \t,congo=t61rcWkgMzE, tenant1@vendor=x y")
        #expect(
            state.members.map(\.description) == ["rojo=00f067aa0ba902b7", "congo=t61rcWkgMzE", "tenant1@vendor=x y"])
        #expect(state.headerValue == "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE,tenant1@vendor=x y")
        #expect(try TraceState.parse(" , ").isEmpty)
    }

    @Test func thirtyTwoMembersAreKeptAndThirtyThreeDiscardTheWholeList() throws {
        let members = (1...33).map { "k\($0)=v\($0)" }
        #expect(try TraceState.parse(members.prefix(32).joined(separator: ",")).members.count == 32)
        #expect(throws: TraceContextError.self) { try TraceState.parse(members.joined(separator: ",")) }
        #expect {
            try TraceState.parse(members.joined(separator: ","))
        } throws: { ($0 as? TraceContextError)?.code == .tooManyMembers }
    }

    /// The reason quotes what is wrong, shortened: a tracestate comes from outside and may be huge.
    @Test func aHugeMalformedMemberIsQuotedShortened() {
        let huge = String(repeating: "x", count: 100_000)
        #expect {
            try TraceState.parse("a=1," + huge)
        } throws: { error in
            guard let error = error as? TraceContextError else { return false }
            return error.code == .invalidTracestate && error.message.count < 120
                && error.message.hasPrefix("member \"" + String(repeating: "x", count: 64) + "\"…")
        }
    }

    @Test func aDuplicateKeyDiscardsTheWholeList() {
        #expect {
            try TraceState.parse("a=1,b=2,a=3")
        } throws: { ($0 as? TraceContextError)?.code == .duplicateKey }
    }

    @Test(arguments: [
        "Rojo=1",  // keys are lowercase
        "1abc=1",  // a simple key starts with a letter
        "a b=1", "a=", "a=b=c", "a=x\ty", "a=x\u{7f}", "a=x,,b", "a=caf\u{e9}", "novalue", "=1",
        "@vendor=1", "tenant@=1", "tenant@1vendor=1", "tenant@vendorvendor1234=1",  // system id: letter, ≤14
        String(repeating: "a", count: 257) + "=1",  // key ≤ 256
        "a=" + String(repeating: "v", count: 257),  // value ≤ 256
        String(repeating: "t", count: 242) + "@v=1",  // tenant id ≤ 241
    ])
    func aMalformedMemberDiscardsTheWholeList(value: String) {
        #expect(throws: TraceContextError.self) { try TraceState.parse("ok=1," + value) }
    }

    @Test func theGrammarsLongestKeysAndValuesAreAccepted() throws {
        let long = String(repeating: "a", count: 256) + "=" + String(repeating: "v", count: 256)
        let tenant = String(repeating: "9", count: 241) + "@" + "abcdefghijklmn" + "=x"
        let state = try TraceState.parse(long + "," + tenant + ",a_-*/=~!")
        #expect(state.members.count == 3)
    }
}

@Suite struct TraceContextTests {
    @Test func anInvalidTraceparentStartsANewTraceAndDropsTheTracestate() {
        #expect(TraceContext.continuing(traceparent: "00-zz", tracestate: "rojo=1") == nil)
    }

    @Test func anInvalidTracestateIsDroppedAloneBesideAValidTraceparent() throws {
        let context = try #require(
            TraceContext.continuing(traceparent: TraceParentParsingTests.valid, tracestate: "a=1,a=2"))
        #expect(context.traceID.description == TraceParentParsingTests.traceID)
        #expect(context.parentID?.description == TraceParentParsingTests.parentID)
        #expect(context.sampled == true)
        #expect(context.traceState == nil)
        let kept = try #require(TraceContext.continuing(traceparent: TraceParentParsingTests.valid, tracestate: "a=1"))
        #expect(kept.traceState?.headerValue == "a=1")
    }

    @Test func idsComeFromTheInjectedRandomSourceAndAreNeverZero() throws {
        let first = (0..<100).map { _ in TraceID.random(using: .seeded(9)) }
        #expect(Set(first).count == 1)  // deterministic for a seed
        let source = RandomSource.seeded(10)
        let ids = (0..<1000).map { _ in SpanID.random(using: source) }
        #expect(Set(ids).count == 1000)
        #expect(TraceID(high: 0, low: 0) == nil)
        #expect(SpanID(0) == nil)
        #expect(TraceID(hex: "4BF92F3577B34DA6A3CE929D0E0E4736") == nil)
    }

    @Test func aContextSurvivesEncodingForTheJournal() throws {
        let context = try #require(
            TraceContext.continuing(traceparent: TraceParentParsingTests.valid, tracestate: "rojo=1,congo=2"))
        let decoded = try JSONDecoder().decode(TraceContext.self, from: JSONEncoder().encode(context))
        #expect(decoded == context)
    }
}

/// End to end through HTTPClient with two real servers: one allowlisted, one not.
@Suite(.timeLimit(.minutes(1))) struct TracePropagationTests {
    static func parts(_ header: String?) -> [String] { header?.split(separator: "-").map(String.init) ?? [] }

    /// The ids on the wire come from the injected random sources — the client's for the trace id, the
    /// middleware's for each parent id —, never from the system's: the same seeds give the same headers, byte
    /// for byte, and another seed other ones (found in an outside audit: only the id types were checked).
    @Test func theIDsOnTheWireComeFromTheInjectedRandomSources() async throws {
        func traceparents(clientSeed: UInt64, middlewareSeed: UInt64) async throws -> [String] {
            let api = try TestServer()
            let tracing = TraceContextMiddleware(
                allowlist: OriginAllowlist([api.baseURL]), random: .seeded(middlewareSeed))
            let harness = try Harness(seed: clientSeed, server: api, middleware: [tracing])
            for _ in 0..<2 {
                api.enqueue(.json("{}"))
                _ = try #require(await harness.send(.get("/notes")).success)
            }
            return api.requests.compactMap { $0.headers["traceparent"] }
        }
        let first = try await traceparents(clientSeed: 3, middlewareSeed: 4)
        #expect(first.count == 2 && first[0] != first[1])
        #expect(try await traceparents(clientSeed: 3, middlewareSeed: 4) == first)
        let otherTrace = try await traceparents(clientSeed: 30, middlewareSeed: 4)
        #expect(otherTrace.map { Self.parts($0)[1] } != first.map { Self.parts($0)[1] })
        #expect(otherTrace.map { Self.parts($0)[2] } == first.map { Self.parts($0)[2] })
        let otherParents = try await traceparents(clientSeed: 3, middlewareSeed: 40)
        #expect(otherParents.map { Self.parts($0)[1] } == first.map { Self.parts($0)[1] })
        #expect(otherParents.map { Self.parts($0)[2] } != first.map { Self.parts($0)[2] })
    }

    @Test func oneOperationWithThreeAttemptsSharesATraceIDWithAFreshParentEach() async throws {
        let api = try TestServer()
        let tracing = TraceContextMiddleware(allowlist: OriginAllowlist([api.baseURL]), random: .seeded(5))
        let harness = try Harness(policy: CallPolicy(maximumAttempts: 3), server: api, middleware: [tracing])
        api.enqueue(TestResponse(status: 503))
        api.enqueue(TestResponse(status: 503))
        api.enqueue(.json("{}"))
        _ = try #require(await harness.send(.get("/notes")).success)
        let headers = api.requests.map { $0.headers.values(for: "traceparent") }
        #expect(headers.count == 3)
        #expect(headers.allSatisfy { $0.count == 1 })  // exactly one traceparent per attempt
        let fields = headers.map { Self.parts($0.first) }
        #expect(fields.allSatisfy { $0.count == 4 && $0[0] == "00" && $0[3] == "00" })
        #expect(Set(fields.map { $0[1] }).count == 1)  // one trace
        #expect(Set(fields.map { $0[2] }).count == 3)  // a new parent id per attempt
        #expect(fields.allSatisfy { TraceID(hex: $0[1]) != nil && SpanID(hex: $0[2]) != nil })
        #expect(api.requests.allSatisfy { !$0.headers.contains("tracestate") })  // none to carry
    }

    @Test func aContinuedTraceKeepsItsIDSampledFlagAndTracestate() async throws {
        let api = try TestServer()
        let tracing = TraceContextMiddleware(allowlist: OriginAllowlist([api.baseURL]), random: .seeded(6))
        let harness = try Harness(server: api, middleware: [tracing])
        api.enqueue(.json("{}"))
        var operation = HTTPOperation.get("/notes/7")
        operation.trace = TraceContext.continuing(
            traceparent: TraceParentParsingTests.valid, tracestate: "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE")
        _ = try #require(await harness.send(operation).success)
        let request = try #require(api.requests.first)
        let fields = Self.parts(request.headers["traceparent"])
        #expect(fields[1] == TraceParentParsingTests.traceID)
        #expect(fields[2] != TraceParentParsingTests.parentID)  // our own span, child of the caller's
        #expect(fields[3] == "01")
        #expect(request.headers["tracestate"] == "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE")
    }

    @Test func nothingReachesAnOriginOutsideTheAllowlistNotEvenWhatTheAppSetByHand() async throws {
        let api = try TestServer()
        let elsewhere = try TestServer()
        let tracing = TraceContextMiddleware(allowlist: OriginAllowlist([api.baseURL]), random: .seeded(7))
        let harness = try Harness(server: elsewhere, middleware: [tracing])
        elsewhere.enqueue(.json("{}"))
        var operation = HTTPOperation.get("/collect")
        operation.headers["traceparent"] = TraceParentParsingTests.valid
        operation.headers["tracestate"] = "rojo=1"
        operation.trace = TraceContext.continuing(traceparent: TraceParentParsingTests.valid, tracestate: "rojo=1")
        _ = try #require(await harness.send(operation).success)
        let request = try #require(elsewhere.requests.first)
        #expect(!request.headers.contains("traceparent"))
        #expect(!request.headers.contains("tracestate"))
    }

    @Test func redirectsInEitherDirectionCarryNoTraceContextOffTheAllowlist() async throws {
        let api = try TestServer()
        let elsewhere = try TestServer()
        let allowlist = OriginAllowlist([api.baseURL])
        let harness = try Harness(
            server: api, middleware: [TraceContextMiddleware(allowlist: allowlist, random: .seeded(8))])
        api.enqueue(TestResponse(status: 307, headers: ["Location": elsewhere.url("/collect").absoluteString]))
        let failure = try #require(await harness.send(.get("/notes")).failure)
        #expect(failure.kind == .captivePortal)
        #expect(api.requests.first?.headers.contains("traceparent") == true)
        #expect(elsewhere.requestCount == 0)  // the redirect is not followed: nothing reaches the other origin
        let reverse = try Harness(
            server: elsewhere, middleware: [TraceContextMiddleware(allowlist: allowlist, random: .seeded(9))])
        elsewhere.enqueue(TestResponse(status: 302, headers: ["Location": api.url("/notes").absoluteString]))
        _ = try #require(await reverse.send(.get("/start")).failure)
        #expect(elsewhere.requests.first?.headers.contains("traceparent") == false)
        #expect(api.requestCount == 1)  // only the first harness's request
    }
}
