import Foundation
import KeelCore
import KeelHTTP
import KeelTesting
import Testing

/// The response size limit must bound memory, not just the result: a body far over the limit is refused
/// without being downloaded (issue #10). Linux only: peak RSS comes from /proc.
///
/// The client's default transport keeps the promise (on Linux it is ``SocketTransport``; its own tests
/// prove it with 1 GiB bodies). ``URLSessionTransport`` cannot, and that is recorded rather than hidden:
/// FoundationNetworking keeps downloading after the task is cancelled (measured with a 1 GiB chunked
/// body: +1.1 GB peak RSS, and the server sent every byte). Those expectations are known issues here, and
/// the test says so the moment they start to hold.
@Suite(.serialized, .timeLimit(.minutes(2)), .enabled(if: PeakMemory.isAvailable, "needs /proc/self/clear_refs"))
struct ResponseSizeLimitTests {
    /// 256 MiB: large enough that downloading it all is unmistakable, small enough for every CI run.
    static let bodySize = 256 << 20
    static let limit = 16 << 20

    @Test(arguments: [false, true])
    func theDefaultClientRefusesABodyFarOverTheLimitWithoutDownloadingIt(chunked: Bool) async throws {
        let (peakGrowth, bytesSent) = try await download(
            chunked: chunked, transport: HTTPClient.Configuration.makeDefaultTransport())
        #expect(peakGrowth <= Self.limit + 32 << 20, "peak RSS grew by \(peakGrowth >> 20) MiB")
        #expect(
            bytesSent.map { $0 < Self.bodySize / 4 } == true,
            "bytes sent before the client hung up: \(bytesSent.map(String.init) ?? "all (it never hung up)")")
    }

    @Test(arguments: [false, true])
    func urlSessionTransportOnLinuxDoesNotStopTheDownload(chunked: Bool) async throws {
        let (peakGrowth, bytesSent) = try await download(chunked: chunked, transport: URLSessionTransport())
        withKnownIssue("FoundationNetworking keeps downloading after cancel on Linux", isIntermittent: true) {
            #expect(peakGrowth <= Self.limit + 32 << 20, "peak RSS grew by \(peakGrowth >> 20) MiB")
            #expect(bytesSent.map { $0 < Self.bodySize / 4 } == true)
        }
    }

    /// Downloads an oversized body through a client on `transport`; returns the peak RSS growth and the
    /// bytes the server had sent when the client hung up (nil if it never did).
    private func download(chunked: Bool, transport: any HTTPTransport) async throws -> (Int, Int?) {
        let server = try TestServer()
        let response = TestResponse(headers: ["Content-Type": "application/json"]).generatedBody(count: Self.bodySize)
        server.enqueue(chunked ? response.chunked(size: 64 * 1024) : response)
        let client = HTTPClient(
            configuration: .init(
                baseURL: server.baseURL, transport: transport,
                policy: CallPolicy(attemptTimeout: .seconds(60), deadline: .seconds(60), maximumAttempts: 2)
            ))
        let baseline = try PeakMemory.reset()
        do {
            _ = try await client.send(.get("/huge"))
            Issue.record("a body over the limit must fail")
        } catch {
            #expect(error.kind == .technical)
            #expect(error.attempts == 1)  // too large once is too large every time
        }
        let peak = try PeakMemory.peak()
        // A client that stopped reading closes the connection; one that read everything keeps it pooled.
        let closed = try? await server.awaitConnectionEvent(timeout: .seconds(5)) { $0.kind == .closedByClient }
        return (peak - baseline, closed?.bytesSent)
    }
}
