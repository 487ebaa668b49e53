import Foundation
import KeelTesting

/// `keel serve`: runs the fault-injecting test server in the foreground, for trying an app (or the iOS
/// simulator) against scripted responses and socket faults by hand.
enum ServeCommand {
    static let command = Keel.Command(
        name: "serve",
        summary: "Run the fault-injecting HTTP test server on 127.0.0.1.",
        usage: """
            USAGE: keel serve [--port <port>] [--script <file.json>] [--captive-portal login|<url>]

            Runs KeelTesting's TestServer on 127.0.0.1 until you type 'quit', standard input ends, or it
            gets SIGINT/SIGTERM. (To run it in the background, keep its input open: tail -f /dev/null | keel serve.)
            Prints 'listening on <base-url>' first, then one line per request received:
              #<n> <method> <target> connection=<id> body=<bytes>B[ incomplete]

            OPTIONS:
              --port <port>            Port to listen on (default 0: a free port, printed at start).
              --script <file.json>     Responses to answer with, in order: a JSON array of objects with
                                       status, headers, body, chunkSize, headersDelayMs, bodyDelayMs,
                                       throttle {bytes, periodMs}, effect and afterBytes (any other
                                       member is refused, so a typo never answers a default). Effects:
                                       \(ResponseScript.effectNames.joined(separator: ", ")).
                                       After the script runs out, requests get 404.
              --captive-portal <mode>  Act as a captive portal for every path: 'login' answers 200 with an
                                       HTML login page, a URL answers 302 to it.
              -h, --help               Show this help.

            """,
        run: run
    )

    static func run(_ raw: [String]) async throws -> Int32 {
        let arguments = try Arguments(raw, options: ["port", "script", "captive-portal"])
        guard arguments.positionals.isEmpty else {
            throw UsageError("unexpected argument '\(arguments.positionals[0])'")
        }
        let port = try arguments.integer("port", default: 0, in: 0...65535)
        var dispatcher: TestServer.Dispatcher?
        if let mode = arguments.value("captive-portal") {
            if mode == "login" {
                dispatcher = .captivePortal(.loginPage)
            } else if let url = URL(string: mode), url.scheme == "http" || url.scheme == "https", url.host != nil {
                dispatcher = .captivePortal(.redirect(to: url))
            } else {
                throw UsageError("--captive-portal needs 'login' or an http(s) URL, not '\(mode)'")
            }
        }
        var script: [TestResponse] = []
        if let path = arguments.value("script") {
            // A captive portal answers every request itself: a script would never be played.
            guard dispatcher == nil else {
                throw UsageError("--script and --captive-portal cannot be combined: the portal answers every request")
            }
            do {
                script = try ResponseScript.load(path: path)
            } catch {
                return fail("\(error)")
            }
        }

        // A reader of standard output that goes away (`keel serve | head -1`) ends the log, never the server:
        // writes then fail with EPIPE instead of raising SIGPIPE.
        signal(SIGPIPE, SIG_IGN)
        let server: TestServer
        do {
            server = try TestServer(configuration: .init(port: port), dispatcher: dispatcher)
        } catch let error as TestServerError {
            return fail(error.message, status: 1)
        } catch {
            return fail("\(error)", status: 1)
        }
        script.forEach(server.enqueue)
        // Signals are handled before the banner: whoever reads it may stop the server at once.
        let (quitSignal, quitContinuation) = AsyncStream<Void>.makeStream()
        let signals = TerminationSignals { quitContinuation.finish() }
        say("listening on \(server.baseURL.absoluteString)")

        // Blocking reads of stdin get a thread of their own, not one of the few cooperative-pool threads.
        // End of input stops the server too, so a parent that dies cannot leave it running forever.
        let reader = POSIXThread.spawn(name: "keel-serve-stdin") {
            forEachStandardInputLine { $0.trimmingCharacters(in: .whitespaces) != "quit" }
            quitContinuation.finish()
        }
        let log = Task {
            while !Task.isCancelled {
                guard let request = try? await server.takeRequest(timeout: .seconds(3600)) else { continue }
                let incomplete = request.isComplete ? "" : " incomplete"
                say(
                    "#\(request.sequenceNumber) \(request.method) \(request.target) connection=\(request.connectionID) body=\(request.body.count)B\(incomplete)"
                )
            }
        }
        for await _ in quitSignal {}
        signals.restore()
        _ = reader  // after a signal the reader may stay blocked in read(2); the process exits anyway
        log.cancel()
        server.shutdown()
        say("stopped after \(server.requestCount) request(s)")
        return 0
    }
}
