import KeelCore

/// A result handed back once, to one waiting continuation: the first to arrive wins — a worker's result, a
/// cancellation, a timer — and any later one is dropped. A result that comes before the waiter starts is
/// kept for it.
final class FirstResult<Value: Sendable>: Sendable {
    private let state = Locked<
        (continuation: CheckedContinuation<Value, any Error>?, early: Result<Value, any Error>?, done: Bool)
    >(
        (nil, nil, false))

    /// The waiting continuation; resumed at once when a result came first.
    func start(_ continuation: CheckedContinuation<Value, any Error>) {
        let early = state.withLock { state -> Result<Value, any Error>? in
            guard let early = state.early else {
                state.continuation = continuation
                return nil
            }
            state.done = true
            return early
        }
        if let early { continuation.resume(with: early) }
    }

    func resume(with result: Result<Value, any Error>) {
        let waiting = state.withLock { state -> CheckedContinuation<Value, any Error>? in
            guard !state.done else { return nil }
            guard let continuation = state.continuation else {
                if state.early == nil { state.early = result }
                return nil
            }
            state.continuation = nil
            state.done = true
            return continuation
        }
        waiting?.resume(with: result)
    }

    func resume(returning value: Value) { resume(with: .success(value)) }
    func resume(throwing error: any Error) { resume(with: .failure(error)) }
}
