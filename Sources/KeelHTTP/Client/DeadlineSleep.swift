import Dispatch
import KeelCore

/// Sleeping until a call's deadline, the way the client's timers do it: mostly cancelled long before they
/// fire.
///
/// Every attempt races its transport against a timer, and nearly every timer is cancelled because the
/// answer came first. `Task.sleep` keeps a cancelled sleep's job and dispatch timer alive until the deadline
/// it was given (about 0.7 KB per attempt, for the whole attempt timeout: tens of MB in a process making a
/// thousand calls a second with 30-second timeouts, and a timer heap that grows with them). On the system's
/// clocks this waits on a dispatch timer of its own instead, cancelled — and freed — the moment the sleep
/// is; any other clock (a test's manual clock) sleeps on the clock.
package enum DeadlineSleep {
    /// Returns at `deadline` on `clock`; throws `CancellationError` as soon as the task is cancelled.
    package static func sleep<C: Clock>(until deadline: C.Instant, on clock: C) async throws
    where C.Duration == Duration {
        guard C.self == ContinuousClock.self || C.self == SuspendingClock.self else {
            try await clock.sleep(until: deadline, tolerance: nil)
            return
        }
        // The dispatch timer runs on the uptime clock; a deadline of the continuous clock (which also counts
        // time asleep) may have passed meanwhile, or not yet: wait again for what is left.
        while true {
            let remaining = clock.now.duration(to: deadline)
            if remaining <= .zero { return }
            try await wait(remaining)
        }
    }

    /// Waits `duration` on a dispatch timer that is cancelled with the task.
    package static func wait(_ duration: Duration) async throws {
        let waiter = Waiter()
        let timer = DispatchSource.makeTimerSource(queue: queue)
        defer {
            // Unscheduled and released now, not when it would have fired. A source never activated (the task
            // was cancelled before the wait began) must still be activated once, or releasing it traps.
            timer.cancel()
            timer.activate()
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                guard waiter.attach(continuation) else { return }  // cancelled before it started
                timer.setEventHandler { waiter.finish(with: nil) }
                timer.schedule(
                    deadline: .now() + .nanoseconds(Int(clamping: duration.inNanoseconds)), leeway: .nanoseconds(0))
                timer.activate()
            }
        } onCancel: {
            waiter.finish(with: CancellationError())
        }
    }

    private static let queue = DispatchQueue(label: "keel.http.deadlines")

    /// The one continuation of a wait, resumed once: by the timer or by the cancellation, whichever is first.
    private final class Waiter: Sendable {
        private struct State {
            var continuation: CheckedContinuation<Void, any Error>?
            var outcome: (any Error)??
        }

        private let state = Locked(State())

        /// Keeps `continuation` to resume later; false when the wait already ended (it was resumed here).
        func attach(_ continuation: CheckedContinuation<Void, any Error>) -> Bool {
            let ended = state.withLock { state -> (any Error)?? in
                if let outcome = state.outcome { return .some(outcome) }
                state.continuation = continuation
                return nil
            }
            guard let ended else { return true }
            if let error = ended { continuation.resume(throwing: error) } else { continuation.resume() }
            return false
        }

        /// Ends the wait: normally (`nil`) or with `error`. Only the first call counts.
        func finish(with error: (any Error)?) {
            let continuation = state.withLock { state -> CheckedContinuation<Void, any Error>? in
                guard state.outcome == nil else { return nil }
                state.outcome = .some(error)
                defer { state.continuation = nil }
                return state.continuation
            }
            guard let continuation else { return }
            if let error { continuation.resume(throwing: error) } else { continuation.resume() }
        }
    }
}
