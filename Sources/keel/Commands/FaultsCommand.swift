import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
import KeelCore
import KeelTesting

/// `keel faults`: scripts each network fault on a real loopback server and shows what this platform's
/// `URLSession` reports for it. The table is what Keel's failure taxonomy has to interpret.
enum FaultsCommand {
    static let command = Keel.Command(
        name: "faults",
        summary: "Show how this platform's URLSession reports each scripted network fault.",
        usage: """
            USAGE: keel faults [--timeout <seconds>] [--only <name>]... [--json]

            Starts a TestServer on 127.0.0.1, scripts one fault per request (server silence, resets,
            truncated bodies, slow bodies, redirects, a captive portal, ...), sends each a real URLSession
            request, and prints what the client saw: a status and body size, or the URLError code.

            OPTIONS:
              --timeout <seconds>  Per-request timeout in whole seconds, 1 to 60 (default 1). FoundationNetworking
                                   truncates URLSession timeouts to whole seconds; 0.5 would time out at once.
              --only <name>        Run only this fault (repeatable). Names are the first column.
              --json               One JSON object per fault instead of the table.
              -h, --help           Show this help.

            """,
        run: run
    )

    struct Fault {
        let name: String
        let method: String
        let body: Data?
        let response: TestResponse?
        let dispatcher: TestServer.Dispatcher?

        init(_ name: String, method: String = "GET", body: Data? = nil, _ response: TestResponse) {
            self.name = name
            self.method = method
            self.body = body
            self.response = response
            self.dispatcher = nil
        }

        init(_ name: String, dispatcher: TestServer.Dispatcher) {
            self.name = name
            self.method = "GET"
            self.body = nil
            self.response = nil
            self.dispatcher = dispatcher
        }
    }

    static let faults: [Fault] = {
        let text = TestResponse(body: "0123456789abcdef")
        let upload = Data(repeating: UInt8(ascii: "x"), count: 256 * 1024)
        return [
            Fault("ok", text),
            Fault("ok-chunked", text.chunked(size: 4)),
            Fault("slow-headers", text.delayingHeaders(by: .milliseconds(200))),
            Fault("throttled-body", text.throttled(bytes: 4, per: .milliseconds(20))),
            Fault("disconnect-at-end", text.with(.disconnectAtEnd)),
            Fault("disconnect-at-start", text.with(.disconnectAtStart)),
            Fault("disconnect-after-request", text.with(.disconnectAfterRequest)),
            Fault(
                "disconnect-during-request-body", method: "POST", body: upload,
                text.with(.disconnectDuringRequestBody(afterBytes: 1024))),
            Fault("disconnect-during-response-body", text.with(.disconnectDuringResponseBody(afterBytes: 6))),
            Fault("half-close-after-request", text.with(.halfCloseAfterRequest)),
            Fault("no-response", text.with(.noResponse)),
            Fault("stall-at-start", text.with(.stallAtStart)),
            Fault("reset-at-start", text.with(.resetAtStart)),
            Fault("reset-after-request", text.with(.resetAfterRequest)),
            Fault("reset-during-response-body", text.with(.resetDuringResponseBody(afterBytes: 6))),
            Fault("shutdown-input-at-end", text.with(.shutdownInputAtEnd)),
            Fault("shutdown-output-at-end", text.with(.shutdownOutputAtEnd)),
            Fault("status-503-retry-after", TestResponse(status: 503, headers: ["Retry-After": "2"], body: "down")),
            Fault("redirect-same-origin", .redirect(to: "/elsewhere", status: 302)),
            Fault("captive-portal-login", dispatcher: .captivePortal(.loginPage)),
            // The portal's login host is a closed loopback port: no DNS lookup, no outside network.
            Fault(
                "captive-portal-redirect",
                dispatcher: .captivePortal(.redirect(to: URL(string: "http://127.0.0.1:1/login")!))),
        ]
    }()

    struct Observation: Encodable {
        var fault: String
        var observed: String
        var status: Int?
        var bodyBytes: Int?
        var urlErrorCode: Int?
        var finalURLPath: String?
        var milliseconds: Int
    }

    static func run(_ raw: [String]) async throws -> Int32 {
        let arguments = try Arguments(raw, options: ["timeout"], repeatable: ["only"], flags: ["json"])
        guard arguments.positionals.isEmpty else {
            throw UsageError("unexpected argument '\(arguments.positionals[0])'")
        }
        let timeout = Double(try arguments.integer("timeout", default: 1, in: 1...60))
        let only = arguments.values["only"] ?? []
        if let unknown = only.first(where: { name in !faults.contains { $0.name == name } }) {
            throw UsageError("unknown fault '\(unknown)'; known: \(faults.map(\.name).joined(separator: ", "))")
        }
        let selected = only.isEmpty ? faults : faults.filter { only.contains($0.name) }

        let json = arguments.has("json")
        if !json {
            say("fault".padding(toLength: 34, withPad: " ", startingAt: 0) + "what URLSession reported")
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        for fault in selected {
            let observation = try await observe(fault, timeout: timeout)
            if json {
                say(String(decoding: try encoder.encode(observation), as: UTF8.self))
            } else {
                say(
                    fault.name.padding(toLength: 34, withPad: " ", startingAt: 0) + observation.observed
                        + "  (\(observation.milliseconds) ms)")
            }
        }
        return 0
    }

    static func observe(_ fault: Fault, timeout: Double) async throws -> Observation {
        let server = try TestServer(dispatcher: fault.dispatcher)
        defer { server.shutdown() }
        if let response = fault.response {
            server.enqueue(response)
            server.enqueue(TestResponse(body: "redirected"))  // for the redirect fault's second request
        }
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = timeout
        configuration.timeoutIntervalForResource = timeout * 4
        let session = URLSession(configuration: configuration)
        defer { session.invalidateAndCancel() }
        var request = URLRequest(url: server.url("/fault/\(fault.name)"))
        request.httpMethod = fault.method
        request.httpBody = fault.body

        let start = ContinuousClock.now
        func elapsed() -> Int {
            let duration = ContinuousClock.now - start
            return Int(duration.inMilliseconds)
        }
        do {
            let (data, response) = try await session.data(for: request)
            let http = response as? HTTPURLResponse
            let status = http?.statusCode ?? 0
            let path = response.url?.path ?? ""
            var observed = "HTTP \(status), \(data.count) body bytes"
            if path != request.url?.path { observed += ", after redirect to \(path)" }
            return Observation(
                fault: fault.name, observed: observed, status: status, bodyBytes: data.count, urlErrorCode: nil,
                finalURLPath: path, milliseconds: elapsed()
            )
        } catch let error as URLError {
            return Observation(
                fault: fault.name, observed: "URLError \(error.code.rawValue) (\(name(of: error.code)))", status: nil,
                bodyBytes: nil, urlErrorCode: error.code.rawValue, finalURLPath: nil, milliseconds: elapsed()
            )
        }
    }

    static func name(of code: URLError.Code) -> String {
        switch code {
        case .timedOut: "timedOut"
        case .networkConnectionLost: "networkConnectionLost"
        case .cannotConnectToHost: "cannotConnectToHost"
        case .badServerResponse: "badServerResponse"
        case .notConnectedToInternet: "notConnectedToInternet"
        case .cannotFindHost: "cannotFindHost"
        case .cancelled: "cancelled"
        case .cannotParseResponse: "cannotParseResponse"
        case .zeroByteResource: "zeroByteResource"
        case .secureConnectionFailed: "secureConnectionFailed"
        case .httpTooManyRedirects: "httpTooManyRedirects"
        case .redirectToNonExistentLocation: "redirectToNonExistentLocation"
        case .dnsLookupFailed: "dnsLookupFailed"
        case .unknown: "unknown"
        default: "code \(code.rawValue)"
        }
    }
}
