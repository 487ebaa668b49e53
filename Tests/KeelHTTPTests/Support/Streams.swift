import KeelHTTP

/// Every event of `stream` until it ends, and the failure it ended with (nil for a clean end).
func collect(_ stream: AsyncThrowingStream<StreamEvent, any Error>) async -> ([StreamEvent], HTTPFailure?) {
    var events: [StreamEvent] = []
    do {
        for try await event in stream { events.append(event) }
        return (events, nil)
    } catch {
        return (events, error as? HTTPFailure)
    }
}
