import Dispatch
import Foundation
import KeelContractTools
import KeelCore
import KeelReference
import KeelTesting

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// `keel backend`: runs Keel's reference backend in the foreground.
enum BackendCommand {
    static let command = Keel.Command(
        name: "backend",
        summary: "Run the reference backend (the sample notes contract, persisted in SQLite) on 127.0.0.1.",
        usage: """
            USAGE: keel backend --data <dir> [--port <port>] [--admin] [--stores <STORES.json>] [--exit-with-parent]

            Runs Keel's reference backend: contracts/notes-api.v1.8.yaml (sign-in, notes, idempotent batch
            mutations, publishing, a changes feed with an opaque cursor, operation status, version policy),
            persisted in <dir>/backend.sqlite so that it survives its own restart. Served by KeelTesting's
            HTTP/1.1 server on 127.0.0.1. Every failure is the contract's Error JSON with a stable code, a
            request the HTTP layer refuses too (then its connection closes): 400 bad_request (malformed
            request line, header, Content-Length or chunk; no Host; both Content-Length and
            Transfer-Encoding), 408 request_timeout, 413 payload_too_large, 414 uri_too_long, 431
            headers_too_large, 505 http_version_not_supported.

            The first line on standard output is 'listening http://127.0.0.1:<port>'; then one line per
            request to the contract's API (requests to /_admin are not logged): '<method> <path> <status>
            account=<account> traceparent=<value> tracestate=<value> correlation=<id>' ('-' where absent; a
            space, '%', '"', a control character or non-ASCII in a value is written %XX, so every field is one
            word); after a clean stop, a last line 'stopped'. Stops on SIGTERM, SIGINT or 'quit' on standard
            input (with --exit-with-parent also when the process that started it exits), after the requests in
            flight — those whose head has arrived — are answered (at most 10 s; answers held by delayAcksMs go
            out at once); a second SIGTERM or SIGINT ends it at once. Standard output that is not read holds
            no request: log lines wait in memory (beyond 10,000 they are dropped and counted), and a closed
            standard output ends the log, not the backend. The end of standard input does not stop it:
            started in the background of a CI step (stdin from /dev/null), it runs until it is told to stop.

            OPTIONS:
              --data <dir>   The backend's data directory (created when missing). Required. One backend
                             serves a directory at a time: a second one started on it exits 1.
              --port <port>  Port to listen on (default 0: a free port, printed at start).
              --admin        Serve the loopback-only endpoints for tests and demos:
                               GET  /_admin/applied      {"applied": {"<idempotency key>": <times applied>},
                                                          "entities": <notes that exist>} (keys are per
                                                          account: the most times for any one account)
                               GET  /_admin/applied-by-account  {"accounts": {"<account>": {"<key>": <times>}}}
                               POST /_admin/fault        {"mode": "none"|"stall"|"drop"|"unavailable"|"portal",
                                                          "retryAfter": <seconds, optional>,
                                                          "delayAcksMs": <optional>, "count": <optional>}
                                 none         normal service
                                 stall        requests are read and never answered; nothing is applied
                                 drop         requests are applied, then the connection closes unanswered
                                 unavailable  503 {"code": "maintenance"} (+ Retry-After); nothing applied
                                 portal       a captive portal's HTML login page for every path
                                 delayAcksMs  answers to POST /mutations and publications are held this
                                              long after applying
                                 count        the mode meets this many requests, then service is normal
                               (retryAfter ≤ 86400, delayAcksMs ≤ 600000; an admin body with a member not
                               listed is refused with 422, and a refused body changes nothing)
                             Admin requests from a web page are refused (403): an Origin or a Host that is
                             not 127.0.0.1, localhost or ::1.
                               POST /_admin/min-version  {"platform": "ios"|"android", "version": "<x.y.z>"|null,
                                                          "latest": "<x.y.z>"|null (optional)}: older versions
                                                          get 426 update_required; older than latest get
                                                          X-Update-Available; version is required, null
                                                          clears the minimum. With --stores, a raised
                                                          minimum that `keel release-gate` refuses is
                                                          refused: 409 {"code": "rollout_incomplete",
                                                          "reasons": [...]} and nothing changes (503
                                                          rollout_unverified when the file cannot be read)
                                                          — unless the body also says "incident": true (a
                                                          security incident: required anyway, the reasons
                                                          in the answer). Lowering or clearing one is never
                                                          asked about
                               GET  /_admin/notes        {"notes": [every note of every account, with
                                                          "account", "version" and "deleted"]}
                               GET  /_admin/published    {"published": {"<note id>": <publications>}}, every
                                                          account's together; ?account=NAME for one account's
                               GET  /_admin/requests     the last 1,000 requests with their account, status,
                                                          traceparent, tracestate, correlation id and
                                                          Idempotency-Key
              --stores <STORES.json>
                             Before POST /_admin/min-version requires a version, ask `keel release-gate`
                             about it with this file (read again at each request, so it can follow a
                             rollout): every production store of the platform must offer a release at
                             least that new to every user. A file that cannot be read at start is a
                             usage error; one that cannot be read later refuses the minimum (503
                             rollout_unverified).
              --exit-with-parent
                             Also stop when the process that started it exits (checked once a second), so
                             that a launcher killed without cleaning up (a demo stopped with Ctrl-C, a test
                             run that crashed) never leaves it holding its port. `keel demo` uses it.
              -h, --help     Show this help.

            EXIT STATUS: 0 after a clean stop, 1 when the data directory or the port cannot be used, 2 for
            usage errors.

            """,
        run: run
    )

    /// The gate of `--stores PATH`: `keel release-gate` on the file as it is at each request. The file must
    /// be a store catalog at start (a typo in a CI step fails the step, not the first switch).
    static func storesGate(_ path: String) throws -> ReferenceBackend.MinimumVersionGate {
        @Sendable func catalog() throws -> StoreCatalog {
            guard let data = readInputFile(path) else { throw UsageError("--stores \(path): cannot read the file") }
            do { return try StoreCatalog(json: Array(data)) } catch {
                throw UsageError("--stores \(path): \(error)")
            }
        }
        _ = try catalog()
        return { platformName, versionText in
            guard let platform = StoreCatalog.Platform(rawValue: platformName), let version = AppVersion(versionText)
            else { throw UsageError("\(platformName) \(versionText) is not a platform and a version") }
            let gate = try ReleaseGate(catalog: try catalog(), platform: platform, minimumVersion: version)
            return gate.reasons.map { reason in
                "\(reason.store)\(reason.release.map { " \($0)" } ?? ""): \(reason.why)"
            }
        }
    }

    static func run(_ raw: [String]) async throws -> Int32 {
        let arguments = try Arguments(
            raw, options: ["data", "port", "stores"], flags: ["admin", "exit-with-parent"])
        guard arguments.positionals.isEmpty else {
            throw UsageError("unexpected argument '\(arguments.positionals[0])'")
        }
        guard let data = arguments.value("data") else { throw UsageError("--data <dir> is required") }
        // An empty path would put the database in whatever directory the backend happens to start in.
        guard !data.isEmpty else { throw UsageError("--data needs a directory, not an empty path") }
        let port = try arguments.integer("port", default: 0, in: 0...65535)
        let gate = try arguments.value("stores").map(storesGate)
        // A reader of standard output that goes away (a harness that closed its end) ends the log, never the
        // backend: writes then fail with EPIPE instead of raising SIGPIPE.
        signal(SIGPIPE, SIG_IGN)
        let log = RequestLog()

        let backend: ReferenceBackend
        do {
            backend = try ReferenceBackend(
                configuration: .init(
                    dataDirectory: URL(fileURLWithPath: data), port: port, admin: arguments.has("admin"),
                    log: { log.write($0) }, minimumVersionGate: gate))
        } catch let error as CocoaError {
            // The data directory could not be created or used (a file of that name, no permission).
            // Foundation's text on Linux drops the underlying POSIX error ("error 512"): it is said here.
            var reason = error.localizedDescription
            if let underlying = error.userInfo[NSUnderlyingErrorKey] as? NSError,
                underlying.domain == NSPOSIXErrorDomain
            {
                reason = String(cString: strerror(Int32(underlying.code)))
            }
            let path = (error.userInfo[NSFilePathErrorKey] as? String).map { " (\($0))" } ?? ""
            return fail("--data \(data) cannot be used: \(reason)\(path)", status: 1)
        } catch let error as ReferenceBackend.DataDirectoryInUse {
            return fail("--data \(data) cannot be used: \(error)", status: 1)
        } catch let error as TestServerError {
            // A port in use, say: the server's own message, without the name of the type behind it.
            return fail(error.message, status: 1)
        } catch {
            return fail("\(error)", status: 1)
        }
        // Signals are handled before the banner: whoever reads it may stop the backend at once.
        let (stop, stopContinuation) = AsyncStream<Void>.makeStream()
        let signals = TerminationSignals { stopContinuation.finish() }
        log.start(with: "listening \(backend.baseURL.absoluteString)")

        // Blocking reads of stdin get a thread of their own. Only `quit` stops the backend: the contract
        // names SIGTERM, SIGINT and `quit`, and a backend started in the background of a script or by a
        // test harness reads its stdin from /dev/null, which ends at once.
        let reader = POSIXThread.spawn(name: "keel-backend-stdin") {
            forEachStandardInputLine { line in
                guard line.trimmingCharacters(in: .whitespaces) == "quit" else { return true }
                stopContinuation.finish()
                return false
            }
        }
        // Asked for (--exit-with-parent): the process that started it going away (a demo killed with Ctrl-C,
        // a test run that crashed) stops it too, so it never outlives its launcher holding a port. Watched
        // once a second. Not by default: a CI step that starts it in the background and ends must leave it
        // running for the next step, as the contract's stop conditions (signals, `quit`) say.
        var orphaned: (any DispatchSourceTimer)?
        if arguments.has("exit-with-parent") {
            let launcher = getppid()
            let timer = DispatchSource.makeTimerSource(queue: .global())
            timer.schedule(deadline: .now() + 1, repeating: 1)
            // (A launcher that is process 1 itself, as in a container, is never seen to go.)
            timer.setEventHandler { if getppid() != launcher { stopContinuation.finish() } }
            timer.resume()
            orphaned = timer
        }
        for await _ in stop {}
        orphaned?.cancel()
        // A second SIGTERM or Ctrl-C while the requests in flight finish ends the process at once.
        signals.restore()
        await backend.stop(timeout: .seconds(10))
        _ = reader  // the reader may stay blocked in read(2); the process exits anyway
        log.finish(with: "stopped", timeout: .seconds(2))
        return 0
    }
}
