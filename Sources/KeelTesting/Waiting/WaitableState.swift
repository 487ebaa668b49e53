import Dispatch
import Foundation
public import KeelCore

/// State shared with other threads that async code can wait on: "until a condition holds, or time out".
///
/// The test server and the child-process harness use it to let a test `await` a request, a connection
/// event or an output line. Timeouts are real time: they bound waits on real sockets and processes and
/// are never the behaviour under test.
package final class WaitableState<State>: @unchecked Sendable {
    // @unchecked Sendable: everything mutable is inside `locked` (a `Locked`); `State` itself need not be
    // Sendable because it is only ever touched under that lock.
    private let locked: Locked<Inner>

    private struct Inner {
        var state: State
        var waiters: [Int: Waiter] = [:]
        var nextWaiterID = 0
    }

    private struct Waiter {
        /// Tries the waiter's predicate; resumes the waiter and returns true when it holds.
        let attempt: (inout State) -> Bool
        /// Resumes the waiter with an error.
        let fail: (any Error) -> Void
    }

    package init(_ state: State) { locked = Locked(Inner(state: state)) }

    /// Reads or changes the state, then wakes every waiter whose condition now holds.
    package func withLock<Result>(_ body: (inout State) throws -> Result) rethrows -> Result {
        try locked.withLock { inner in
            let result = try body(&inner.state)
            if !inner.waiters.isEmpty {
                for (id, waiter) in inner.waiters where waiter.attempt(&inner.state) {
                    inner.waiters[id] = nil
                }
            }
            return result
        }
    }

    /// Waits until `condition` returns a value (it may change the state, e.g. to consume an item).
    ///
    /// `condition` runs while the state's lock is held: it must not call back into the object that owns
    /// this state (that would deadlock).
    ///
    /// - Throws: ``WaitTimeout`` after `timeout`; `CancellationError` when the task is cancelled.
    package func wait<Value: Sendable>(
        timeout: Duration,
        for what: @autoclosure () -> String,
        until condition: @escaping (inout State) -> Value?
    ) async throws -> Value {
        let description = what()
        let id = locked.withLock { inner in
            inner.nextWaiterID += 1
            return inner.nextWaiterID
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Value, any Error>) in
                let registered = locked.withLock { inner -> Bool in
                    if Task.isCancelled {
                        continuation.resume(throwing: CancellationError())
                        return false
                    }
                    if let value = condition(&inner.state) {
                        continuation.resume(returning: value)
                        return false
                    }
                    inner.waiters[id] = Waiter(
                        attempt: { state in
                            guard let value = condition(&state) else { return false }
                            continuation.resume(returning: value)
                            return true
                        },
                        fail: { continuation.resume(throwing: $0) }
                    )
                    return true
                }
                guard registered else { return }
                // Saturate: a timeout beyond a year is as good as forever and must not overflow.
                let nanoseconds = min(timeout, .seconds(365 * 86_400)).inNanoseconds
                DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(Int(nanoseconds))) { [weak self] in
                    self?.fail(id, with: WaitTimeout(waitingFor: description, timeout: timeout))
                }
            }
        } onCancel: {
            fail(id, with: CancellationError())
        }
    }

    /// Fails every current waiter with `error` (e.g. the server they wait on has shut down).
    package func failAllWaiters(with error: any Error) {
        let failing = locked.withLock { inner in
            defer { inner.waiters.removeAll() }
            return Array(inner.waiters.values)
        }
        for waiter in failing { waiter.fail(error) }
    }

    private func fail(_ id: Int, with error: any Error) {
        locked.withLock { $0.waiters.removeValue(forKey: id) }?.fail(error)
    }
}

/// A wait in the test kit ran out of time.
public struct WaitTimeout: KeelError {
    /// Codes of ``WaitTimeout`` (one: ``ErrorCode/timedOut``).
    public typealias Code = ErrorCode<WaitTimeout>

    /// Always ``ErrorCode/timedOut``.
    public var code: Code { .timedOut }
    /// What was awaited.
    public let waitingFor: String
    /// How long the wait lasted.
    public let timeout: Duration

    /// A timeout of a wait for `waitingFor` that lasted `timeout` (for the app's own test helpers).
    public init(waitingFor: String, timeout: Duration) {
        self.waitingFor = waitingFor
        self.timeout = timeout
    }

    /// A developer-facing explanation: how long the wait lasted and what was awaited.
    public var description: String { "timed out after \(timeout) waiting for \(waitingFor)" }
}

extension ErrorCode where Domain == WaitTimeout {
    /// The awaited event did not happen in time.
    public static var timedOut: Self { Self("timedOut") }
}
