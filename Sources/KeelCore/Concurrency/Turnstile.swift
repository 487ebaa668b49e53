/// One at a time, across awaits: an actor's multi-step transitions (close one vault and open the next, stop one
/// account's sync and start another's) must not interleave at their suspension points, which actor
/// isolation alone allows. Waiters go through in arrival order.
package final class Turnstile: Sendable {
    private let state = Locked<(busy: Bool, waiting: [CheckedContinuation<Void, Never>])>((false, []))

    package init() {}

    /// Waits for the turn.
    package func enter() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let admitted = state.withLock { state -> Bool in
                if state.busy {
                    state.waiting.append(continuation)
                    return false
                }
                state.busy = true
                return true
            }
            if admitted { continuation.resume() }
        }
    }

    /// Hands the turn to the next waiter, or frees it.
    package func leave() {
        let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard !state.waiting.isEmpty else {
                state.busy = false
                return nil
            }
            return state.waiting.removeFirst()
        }
        next?.resume()
    }
}
