/// Whether the API can actually be reached: the OS saying "connected" is not proof (MOB-API-003).
public enum Reachability: Sendable, Equatable {
    /// The probe answered exactly as the API does.
    case reachable
    /// Something answered in the API's place (a login page, a redirect, a wrong answer).
    case captivePortal
    /// No route to the API.
    case offline
    /// The API itself answered, with an error (it is reachable but not healthy).
    case unavailable
    /// The probe did not finish in time.
    case timedOut
}

extension HTTPClient {
    /// Probes `path` (a `generate_204`-style endpoint of the API) once and judges the answer: only the
    /// expected status with an empty body counts as reachable; any other answer means something else is
    /// answering for the API.
    public func probeReachability(
        path: String = "/generate_204", expectedStatus: Int = 204, timeout: Duration = .seconds(5)
    ) async -> Reachability {
        let policy = CallPolicy(
            attemptTimeout: timeout, deadline: timeout, maximumAttempts: 1, maximumResponseBytes: 64 * 1024)
        var probe = HTTPOperation(method: "GET", path: path, expectsJSON: false)
        probe.successStatesVersionPolicy = false
        do {
            let reply = try await send(probe, policy: policy)
            return reply.status == expectedStatus && reply.body.isEmpty ? .reachable : .captivePortal
        } catch {
            switch error.kind {
            case .offline: return .offline
            case .timeout, .cancelled: return .timedOut
            case .captivePortal: return .captivePortal
            default:
                // A 5xx or 429 is the API answering; any other wrong answer is something else answering.
                // (511 is a portal's: the client reports it as one, above.)
                return error.status.map { ((500...599).contains($0) && $0 != 511) || $0 == 429 } == true
                    ? .unavailable : .captivePortal
            }
        }
    }
}
