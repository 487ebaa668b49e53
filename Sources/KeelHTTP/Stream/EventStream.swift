import Foundation
import KeelCore

/// One event of a long-lived stream.
public struct StreamEvent: Sendable, Equatable {
    /// The event's data: one line of newline-delimited JSON, or the `data:` lines of a server-sent event
    /// joined with line feeds.
    public let data: String
    /// The server-sent event's type (`event:`); nil for newline-delimited JSON and for unnamed events.
    public let type: String?
    /// The server-sent event's id (`id:`), when it has one.
    public let id: String?

    /// An event.
    public init(data: String, type: String? = nil, id: String? = nil) {
        self.data = data
        self.type = type
        self.id = id
    }

    /// About what it holds in memory: its text and a fixed share for the value itself.
    var bufferedSize: Int { data.utf8.count + (type?.utf8.count ?? 0) + (id?.utf8.count ?? 0) + 64 }
}

/// How a stream's body is split into events.
public enum StreamFormat: Sendable, Equatable {
    /// Newline-delimited JSON: one event per non-empty line.
    case newlineDelimitedJSON
    /// Server-sent events (`text/event-stream`): `data:`, `event:` and `id:` fields, a blank line ends an
    /// event, `:` lines are comments.
    case serverSentEvents
}

/// The limits of a long-lived stream (the exception of MOB-API-002): finite connect and no-progress
/// timeouts and a completion condition, but no overall timeout.
public struct StreamPolicy: Sendable {
    /// The longest connecting (and the middleware preparing the request) may take.
    public var connectTimeout: Duration
    /// The longest the stream may go without a byte (the response head included); then it ends with
    /// kind `timeout`.
    public var noProgressTimeout: Duration
    /// Longer events are a malformed stream (the memory one event may take).
    public var maximumEventBytes: Int
    /// The completion condition: after an event for which this is true the stream ends (and the connection
    /// closes). The server closing cleanly at an event boundary ends it too.
    public var isTerminal: @Sendable (StreamEvent) -> Bool

    /// Limits; by default a 15 s connect timeout, 60 s without progress, events up to 1 MiB, and no
    /// terminal event.
    public init(
        connectTimeout: Duration = .seconds(15), noProgressTimeout: Duration = .seconds(60),
        maximumEventBytes: Int = 1 << 20, isTerminal: @escaping @Sendable (StreamEvent) -> Bool = { _ in false }
    ) {
        precondition(connectTimeout > .zero && noProgressTimeout > .zero, "StreamPolicy timeouts must be positive")
        self.connectTimeout = connectTimeout
        self.noProgressTimeout = noProgressTimeout
        self.maximumEventBytes = maximumEventBytes
        self.isTerminal = isTerminal
    }
}

extension HTTPClient {
    /// Opens a long-lived stream (server-sent events or newline-delimited JSON over one response) and
    /// delivers its events as they arrive.
    ///
    /// The sequence ends when an event satisfies ``StreamPolicy/isTerminal`` or the server closes cleanly
    /// at an event boundary. It throws ``HTTPFailure``: `timeout` when connecting or any wait for the next
    /// byte takes longer than the policy allows, `technical` when the server closes mid-event or sends
    /// something malformed, and the kind of a non-2xx answer. Stopping the iteration (or cancelling the
    /// task) closes the connection. Middleware (authentication, trace context) prepares the request as for
    /// any call; nothing is retried. Needs a ``StreamingHTTPTransport`` (the default on Linux).
    ///
    /// Outcomes are those of any call (MOB-API-003): `unknown` when the request may have reached the server
    /// and the operation mutates (no answer, a 500/502/504, or a stream broken off after the server accepted
    /// it), `notSent` when nothing left. A stream leaves no operation-journal entry: with a journal configured,
    /// a mutating stream is refused (`technical`, `notSent`) before anything is sent.
    public func events(
        _ operation: HTTPOperation, format: StreamFormat, policy: StreamPolicy = StreamPolicy()
    ) -> AsyncThrowingStream<StreamEvent, any Error> {
        // Bounded: a reader slower than the server holds the stream back (and, through the transport's own
        // bounded buffer and TCP, the server) instead of piling events up in memory.
        let events = StreamHandoff<StreamEvent>(capacity: Self.eventBufferBytes)
        let budgetExpired = Locked(false)
        let task = Task {
            do throws(HTTPFailure) {
                try await self.runStream(
                    operation, format: format, policy: policy, budgetExpired: budgetExpired, into: events)
            } catch {
                events.finish(throwing: error)
            }
        }
        // In the background the stream lives only as long as the time the OS granted (MOB-API-004): when it
        // runs out, the stream ends with `cancelled` and its connection closes.
        let watcher = configuration.backgroundBudget.map { budget in
            Task {
                await budget.expired()
                guard !Task.isCancelled else { return }
                budgetExpired.withLock { $0 = true }
                task.cancel()
            }
        }
        return events.stream(onTermination: {
            task.cancel()
            watcher?.cancel()
        })
    }

    /// How many bytes of events may wait for a reader that is slower than the server (1 MiB).
    static let eventBufferBytes = 1 << 20

    /// How much of a stream's error body is read to tell what the error is.
    static let errorBodyLimit = 64 << 10

    private func runStream(
        _ operation: HTTPOperation, format: StreamFormat, policy: StreamPolicy, budgetExpired: Locked<Bool>,
        into events: StreamHandoff<StreamEvent>
    ) async throws(HTTPFailure) {
        var call = Call(client: self, operation: operation, policy: configuration.policy)
        let correlationID = call.correlationID
        func failure(
            _ kind: HTTPFailure.Kind, _ outcome: HTTPFailure.Outcome, _ detail: String, status: Int? = nil,
            requestID: String? = nil
        ) -> HTTPFailure {
            // Cancelled because the OS's time ran out, however the cancellation reached us: say so.
            let expired = kind == .cancelled && budgetExpired.withLock { $0 }
            let said = detail.contains("background time budget expired")
            return HTTPFailure(
                kind: kind, outcome: outcome, status: status, requestID: requestID, correlationID: correlationID,
                detail: Redacted(expired && !said ? "the background time budget expired: \(detail)" : detail))
        }
        guard let transport = configuration.transport as? any StreamingHTTPTransport else {
            throw failure(.technical, .notSent, "the transport cannot stream (use SocketTransport)")
        }
        // A mutating stream leaves no journal entry (the journal records `send(_:)`'s calls): with a journal
        // configured, one would mutate with no record before its first byte, nothing for `reconcile()` after a
        // kill, and no guard against sending an `unknown` operation again. It is refused (found in review):
        // mutate with `send(_:)`, then stream what it started.
        if operation.mutates, configuration.journal != nil {
            throw failure(
                .technical, .notSent,
                "\(operation.method) \(operation.path) mutates, and a stream is not journaled: with an operation journal, send the mutation with send(_:) and stream its progress with GET"
            )
        }
        // Connecting has one limit, `connectTimeout`, for the middleware and the connection together (found in
        // review: each had one of its own), and no more than the OS's background budget leaves.
        let connectLimit =
            configuration.backgroundBudget?.remaining().map { min($0, policy.connectTimeout) } ?? policy.connectTimeout
        let (request, left) = try await call.preparedRequest(clock: configuration.clock, within: connectLimit)
        guard left > .zero else {
            throw failure(
                .timeout, .notSent,
                connectLimit < policy.connectTimeout
                    ? "the background time budget left \(connectLimit) to connect, and preparing the request used it up"
                    : "connecting took longer than \(connectLimit) (preparing the request used it up)")
        }
        let opened: TransportStream
        do {
            opened = try await transport.openStream(
                request, connectTimeout: left, noProgressTimeout: policy.noProgressTimeout)
        } catch {
            // As for any call: a request that may have reached the server may have been applied.
            throw failure(
                Self.kind(of: error), error.requestMayHaveBeenSent ? .unknown : .notSent, error.description)
        }
        // However the stream ends (a terminal event, a failure, cancellation), the connection closes now,
        // not when the server next sends something or the no-progress timer fires.
        defer { opened.close() }
        let requestID = opened.headers[configuration.requestIDHeader]
        guard (200...299).contains(opened.status) else {
            // Read as any call's answer (kind from status and error body, Retry-After, the version policy),
            // from the start of its body: an error body is small, and one that stalls ends at the no-progress
            // timeout with what came.
            var body = Data()
            do {
                for try await bytes in opened.body {
                    body.append(contentsOf: bytes.prefix(Self.errorBodyLimit - body.count))
                    if body.count >= Self.errorBodyLimit { break }
                }
            } catch {
                // A cut-off error body is read as far as it came.
            }
            // Cancelled (or out of background time) while the error answer came in: that is how it ended.
            if Task.isCancelled {
                // As for any call, a 500, 502 or 504 (or a redirect) may come after a mutation was applied.
                let mayHaveApplied = operation.mutates && Call.mayFollowApplying(opened.status)
                throw failure(
                    .cancelled, mayHaveApplied ? .unknown : .rejected, "cancelled while the error answer came in",
                    status: opened.status, requestID: requestID)
            }
            if let portal = call.streamPortalFailure(status: opened.status, headers: opened.headers, firstBytes: body) {
                throw portal
            }
            throw call.streamStatusFailure(
                TransportResponse(status: opened.status, headers: opened.headers, body: body))
        }
        if let portal = call.streamPortalFailure(status: opened.status, headers: opened.headers, firstBytes: Data()) {
            throw portal
        }
        // Without a Content-Type, the first bytes tell a portal's page from events.
        var sniffing = opened.headers["Content-Type"] == nil
        // The server accepted the request: a mutation broken off now may be applied, or half done.
        let brokenOff: HTTPFailure.Outcome = operation.mutates ? .unknown : .rejected
        var parser = EventParser(format: format, maximumEventBytes: policy.maximumEventBytes)
        do {
            reading: for try await bytes in opened.body {
                if sniffing {
                    sniffing = false
                    if let portal = call.streamPortalFailure(
                        status: opened.status, headers: opened.headers, firstBytes: Data(bytes))
                    {
                        throw portal
                    }
                }
                for event in try parser.feed(bytes) {
                    // Waits while the reader is behind. Stops when the reader went away (nobody to tell), or
                    // when this task was cancelled while it waited (the OS's time ran out: said below).
                    guard await events.send(event, weight: event.bufferedSize) else {
                        if events.isActive { break reading }
                        return
                    }
                    if policy.isTerminal(event) {
                        events.finish()
                        return
                    }
                }
            }
            if Task.isCancelled {
                if budgetExpired.withLock({ $0 }) {
                    throw failure(.cancelled, brokenOff, "the background time budget expired", requestID: requestID)
                }
                events.finish()
                return
            }
            try parser.finish()
            events.finish()
        } catch let error as HTTPFailure {
            throw error
        } catch let error as TransportError {
            throw failure(Self.kind(of: error), brokenOff, error.description, requestID: requestID)
        } catch let error as EventParser.Malformed {
            throw failure(.technical, brokenOff, error.reason, requestID: requestID)
        } catch {
            throw failure(.technical, brokenOff, "\(error)", requestID: requestID)
        }
    }

    private static func kind(of error: TransportError) -> HTTPFailure.Kind {
        error.code == .cancelled ? .cancelled : Call.kind(of: error)
    }
}

/// Splits a stream's bytes into events, keeping a partial line or event across reads.
struct EventParser {
    struct Malformed: Error { let reason: String }

    let format: StreamFormat
    let maximumEventBytes: Int
    private var line: [UInt8] = []
    private var data: [String] = []
    private var type: String?
    private var id: String?
    private var eventBytes = 0
    /// Whether a server-sent event has fields not yet dispatched.
    private var pending = false
    /// Server-sent events: the last byte ended a line with CR (a LF right after it belongs to that ending).
    private var afterCR = false
    /// Server-sent events: how many bytes of a leading UTF-8 byte order mark were seen (3: done, or none).
    private var byteOrderMark = 0

    init(format: StreamFormat, maximumEventBytes: Int) {
        self.format = format
        self.maximumEventBytes = maximumEventBytes
    }

    mutating func feed(_ bytes: [UInt8]) throws(Malformed) -> [StreamEvent] {
        var events: [StreamEvent] = []
        let serverSent = format == .serverSentEvents
        for byte in bytes {
            if serverSent {
                // One leading byte order mark is not part of the first field (`\u{FEFF}data` is no field).
                if byteOrderMark < 3 {
                    if byte == [0xEF, 0xBB, 0xBF][byteOrderMark] {
                        byteOrderMark += 1
                        continue
                    }
                    line += [0xEF, 0xBB, 0xBF].prefix(byteOrderMark)
                    byteOrderMark = 3
                }
                // A line ends with CRLF, LF or a lone CR.
                if byte == 10, afterCR {
                    afterCR = false
                    continue
                }
                afterCR = byte == 13
            }
            guard byte == 10 || (serverSent && byte == 13) else {
                line.append(byte)
                guard line.count + eventBytes <= maximumEventBytes else {
                    throw Malformed(reason: "an event longer than \(maximumEventBytes) bytes")
                }
                continue
            }
            if !serverSent, line.last == 13 { line.removeLast() }
            let text = String(decoding: line, as: UTF8.self)
            eventBytes += line.count + 1
            line.removeAll(keepingCapacity: true)
            if let event = take(text) { events.append(event) }
        }
        return events
    }

    /// The end of the body: clean only at an event boundary.
    func finish() throws(Malformed) {
        if !line.isEmpty || pending { throw Malformed(reason: "the stream closed in the middle of an event") }
    }

    private mutating func take(_ text: String) -> StreamEvent? {
        switch format {
        case .newlineDelimitedJSON:
            eventBytes = 0
            return text.isEmpty ? nil : StreamEvent(data: text)
        case .serverSentEvents:
            if text.isEmpty {
                defer {
                    data = []
                    type = nil
                    pending = false
                    eventBytes = 0
                }
                // Only an event with data is dispatched; the id is kept as the spec's last event id.
                guard !data.isEmpty else { return nil }
                return StreamEvent(data: data.joined(separator: "\n"), type: type, id: id)
            }
            // Code points, not characters: a colon or space followed by a combining mark is one Swift
            // `Character` with it, and the field would not be found (found in an outside audit).
            let scalars = text.unicodeScalars
            if scalars.first == ":" { return nil }  // a comment (often a keep-alive)
            pending = true
            let field: Substring
            var value: Substring
            if let colon = scalars.firstIndex(of: ":") {
                field = text[..<colon]
                var start = scalars.index(after: colon)
                if start < scalars.endIndex, scalars[start] == " " { start = scalars.index(after: start) }
                value = Substring(scalars[start...])
            } else {
                field = Substring(text)
                value = ""
            }
            switch field {
            case "data": data.append(String(value))
            // An empty `event:` is the default type, as no field at all (found in an outside audit: type "").
            case "event": type = value.isEmpty ? nil : String(value)
            case "id" where !value.contains("\u{0}"): id = String(value)
            default: break  // `retry` and unknown fields are ignored
            }
            return nil
        }
    }
}
