import Foundation
import KeelCore

/// The running part of a ``TestServer``: sockets, threads and shared state.
final class ServerCore: Sendable {
    let port: UInt16
    let serial: Int
    let configuration: TestServer.Configuration

    let listenDescriptor: Int32
    /// Written once on shutdown and never read: every wait in the server polls it and wakes.
    let wakeDescriptors: (read: Int32, write: Int32)
    let state = WaitableState(State())
    let threads = Locked(Threads())

    private static let serials = Locked(1)

    struct State {
        var queue: [TestResponse] = []
        var dispatcher: TestServer.Dispatcher?
        var requests: [RecordedRequest] = []
        /// Requests received (recorded or not).
        var requestTotal = 0
        /// Requests answered by a dispatcher or the queue whose response is not written yet.
        var inFlight = 0
        /// Set by ``drain(timeout:)``: new connections are refused, so the exchanges in flight can finish, and
        /// every response written from then on closes its connection.
        var isDraining = false
        /// Set by ``drain(timeout:)`` in the same step that found nothing in flight: from then on no exchange
        /// begins (a request arriving on a kept-alive connection is never handed to the dispatcher), so the
        /// shutdown that follows cuts no exchange that was answered in part or applied but not answered.
        var refusesExchanges = false
        var takenCount = 0
        var events: [ConnectionEvent] = []
        var nextConnectionID = 1
        var isShutDown = false

        /// The most connection events a server that does not record requests keeps (the newest).
        static let eventsKeptWithoutRecording = 1024

        /// Appends `event`; unless `keepingAll`, only the newest ``eventsKeptWithoutRecording`` are kept, so a
        /// long-running server's memory does not grow with its connections.
        mutating func append(_ event: ConnectionEvent, keepingAll: Bool) {
            events.append(event)
            if !keepingAll, events.count > 2 * Self.eventsKeptWithoutRecording {
                events.removeFirst(events.count - Self.eventsKeptWithoutRecording)
            }
        }
    }

    struct Threads {
        var acceptor: POSIXThread?
        var connections: [Int: POSIXThread] = [:]
        /// Descriptors of connections still being served; closed (and removed) only under the lock, so
        /// shutdown never touches a descriptor number the system has already handed to someone else.
        var openDescriptors: [Int: Int32] = [:]
        var finished: [Int] = []
    }

    init(configuration: TestServer.Configuration, dispatcher: TestServer.Dispatcher?) throws {
        self.configuration = configuration
        let listener: (fd: Int32, port: UInt16)
        do {
            listener = try POSIX.makeListeningSocket(host: "127.0.0.1", port: UInt16(configuration.port))
        } catch {
            throw TestServerError(code: .cannotListen, message: "cannot listen on 127.0.0.1: \(error)")
        }
        do {
            wakeDescriptors = try POSIX.makePipe()
        } catch {
            POSIX.close(listener.fd)
            throw TestServerError(code: .cannotStart, message: "cannot create the wake pipe: \(error)")
        }
        listenDescriptor = listener.fd
        serial = Self.serials.withLock { next in
            defer { next += 1 }
            return next
        }
        port = listener.port
        state.withLock { $0.dispatcher = dispatcher }
        let acceptor = POSIXThread.spawn(name: "kts\(serial)a") { [self] in acceptLoop() }
        threads.withLock { $0.acceptor = acceptor }
    }

    // MARK: - Stopping

    func shutdown() {
        let alreadyDown = state.withLock { state in
            defer { state.isShutDown = true }
            return state.isShutDown
        }
        guard !alreadyDown else { return }
        _ = POSIX.writeAll(wakeDescriptors.write, [1])
        let (acceptor, connections) = threads.withLock { threads in
            defer {
                threads.acceptor = nil
                threads.connections = [:]
            }
            for descriptor in threads.openDescriptors.values { POSIX.shutdown(descriptor, .both) }
            return (threads.acceptor, threads.connections)
        }
        if let acceptor { acceptor.join() }  // user code never runs on the accept thread
        // The connection thread running this shutdown (a dispatcher that stops the server) cannot join
        // itself: detached, its resources go when it ends (found in an outside review: it was leaked).
        for thread in connections.values {
            if thread.isCurrent { thread.detach() } else { thread.join() }
        }
        POSIX.close(listenDescriptor)
        state.failAllWaiters(with: TestServerError(code: .shutDown, message: "the server was shut down"))
        // The wake pipe stays open until deinit: a connection thread that called shutdown (through a
        // dispatcher) is still running and polls it.
    }

    deinit {
        POSIX.close(wakeDescriptors.read)
        POSIX.close(wakeDescriptors.write)
    }

    var isShutDown: Bool { state.withLock { $0.isShutDown } }

    // MARK: - Accepting

    private func acceptLoop() {
        while true {
            let ready = POSIX.waitReadable([listenDescriptor, wakeDescriptors.read], timeoutMilliseconds: -1)
            if ready.contains(1) || state.withLock({ $0.isShutDown || $0.isDraining }) { return }
            guard ready.contains(0) else { continue }
            let descriptor: Int32
            switch POSIX.accept(listenDescriptor) {
            case .connection(let accepted): descriptor = accepted
            case .nothing: continue
            case .failed:
                // Out of descriptors or similar: back off instead of spinning, still honouring shutdown.
                if POSIX.waitReadable([wakeDescriptors.read], timeoutMilliseconds: 50).contains(0) { return }
                continue
            }
            reapFinishedConnections()
            // Register under the threads lock and re-check shutdown inside it: shutdown flags the state
            // first and then takes this lock, so a connection is either seen by shutdown or never served.
            let accepted = threads.withLock { registry -> Accepted in
                let id: Int? = state.withLock { state in
                    guard !state.isShutDown, !state.isDraining else { return nil }
                    defer { state.nextConnectionID += 1 }
                    state.append(
                        ConnectionEvent(
                            connectionID: state.nextConnectionID, kind: .opened, instant: .now, bytesSent: 0),
                        keepingAll: configuration.recordsRequests)
                    return state.nextConnectionID
                }
                guard let id else { return .refused }
                let connection = Connection(server: self, id: id, descriptor: descriptor)
                let spawned = configuration.spawnsConnectionThread("kts\(serial)c") { [self] in
                    connection.serve()
                    threads.withLock { registry in
                        POSIX.close(descriptor)
                        registry.openDescriptors[id] = nil
                        registry.finished.append(id)
                    }
                }
                guard case .success(let thread) = spawned else { return .noThread(id) }
                registry.connections[id] = thread
                registry.openDescriptors[id] = descriptor
                return .served
            }
            switch accepted {
            case .served: break
            case .refused:
                POSIX.close(descriptor)
                return
            case .noThread(let id):
                // No thread to serve it (the process is at its thread or memory limit): the connection is
                // closed — a client sees a reset, as from any overloaded server — and the server goes on.
                POSIX.setLingerZero(descriptor)
                POSIX.close(descriptor)
                recordEvent(.resetByServer, connection: id, bytesSent: 0)
            }
        }
    }

    /// What became of an accepted connection.
    private enum Accepted {
        case served
        /// The server is stopping: the connection is closed.
        case refused
        /// No thread could be created for connection `id`.
        case noThread(Int)
    }

    /// Joins connection threads that have ended, so a long-running server does not accumulate them.
    private func reapFinishedConnections() {
        let done = threads.withLock { threads in
            defer { threads.finished.removeAll() }
            return threads.finished.compactMap { threads.connections.removeValue(forKey: $0) }
        }
        for thread in done { thread.join() }
    }

    // MARK: - Used by connections

    /// Whether the next queued response acts before its request is read.
    var nextResponseActsAtStart: Bool {
        state.withLock { $0.dispatcher == nil && $0.queue.first?.socketEffect.actsAtStart == true }
    }

    /// The next queued response if it acts before the request is read; consumes it.
    func takeStartEffect() -> TestResponse? {
        state.withLock { state in
            guard state.dispatcher == nil, let next = state.queue.first, next.socketEffect.actsAtStart else {
                return nil
            }
            return state.queue.removeFirst()
        }
    }

    /// In queue mode, takes the response for the request whose head just arrived (responses go out in
    /// the order request heads arrive, even across concurrent connections). Nil in dispatcher mode.
    func reserveResponse() -> (response: TestResponse, fromQueue: Bool)? {
        state.withLock { state in
            guard state.dispatcher == nil else { return nil }
            return state.queue.isEmpty
                ? (configuration.responseWhenQueueIsEmpty, false) : (state.queue.removeFirst(), true)
        }
    }

    /// Puts back a response ``reserveResponse()`` took for a request that was refused before it was recorded:
    /// it answers the next request instead.
    func giveBack(_ response: TestResponse) {
        state.withLock { state in
            guard state.dispatcher == nil else { return }
            state.queue.insert(response, at: 0)
        }
    }

    /// Records a request (numbering it) and returns its response: the reserved one, or the dispatcher's
    /// answer for a complete request. An incomplete request gets none.
    func record(reserved: TestResponse?, _ makeRequest: (_ sequenceNumber: Int) -> RecordedRequest) -> TestResponse? {
        let (request, dispatcher) = state.withLock { state in
            let request = makeRequest(state.requestTotal)
            state.requestTotal += 1
            if configuration.recordsRequests { state.requests.append(request) }
            return (request, state.dispatcher)
        }
        guard request.isComplete else { return nil }
        if let reserved { return reserved }
        return dispatcher?.respond(request) ?? configuration.responseWhenQueueIsEmpty
    }

    /// Called by a connection when a request's head has arrived: the exchange is in flight until
    /// ``finishExchange()``. False once a drain has stopped taking exchanges: the request must not be handed
    /// on (nothing of it is dispatched, recorded or answered; the connection closes).
    func beginExchange() -> Bool {
        state.withLock { state in
            guard !state.refusesExchanges, !state.isShutDown else { return false }
            state.inFlight += 1
            return true
        }
    }

    /// Whether a drain has started: responses close their connections.
    var isDraining: Bool { state.withLock { $0.isDraining } }

    /// Called by a connection once the exchange ``beginExchange()`` started has ended: its response written,
    /// or the exchange over without one.
    func finishExchange() {
        state.withLock { $0.inFlight -= 1 }
    }

    /// Stops accepting connections (the listening socket is shut, so a connect is refused at once instead of
    /// waiting in the backlog), waits (real time, at most `timeout`) until no response is being prepared or
    /// written — and, in the same step, stops taking new exchanges — then shuts down.
    func drain(timeout: Duration) async {
        state.withLock { state in
            // Under the lock `shutdown()` takes before it closes the descriptor: never a shutdown(2) of a
            // descriptor already closed (or its number handed to another socket) by a concurrent shutdown.
            if !state.isDraining, !state.isShutDown {
                // On Linux this refuses connects at once; elsewhere (Darwin) it does nothing and connects
                // wait in the backlog until the shutdown after the drain closes the socket.
                POSIX.shutdown(listenDescriptor, .both)
            }
            state.isDraining = true
        }
        _ = try? await state.wait(timeout: timeout, for: "in-flight exchanges to finish") { state -> Bool? in
            guard state.inFlight == 0 else { return nil }
            state.refusesExchanges = true
            return true
        }
        shutdown()
    }

    func recordEvent(_ kind: ConnectionEvent.Kind, connection: Int, bytesSent: Int) {
        state.withLock {
            $0.append(
                ConnectionEvent(connectionID: connection, kind: kind, instant: .now, bytesSent: bytesSent),
                keepingAll: configuration.recordsRequests)
        }
    }
}
