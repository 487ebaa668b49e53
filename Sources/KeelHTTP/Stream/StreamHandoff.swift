import Foundation

/// A bounded hand-off from a producer (a socket reader on a worker thread, or a task) to one consumer
/// iterating an `AsyncThrowingStream`: the producer waits while `capacity` bytes are waiting unread, so a
/// reader slower than the server holds the server back (TCP flow control does the rest) instead of
/// buffering the stream in memory without end.
///
/// An `AsyncThrowingStream` made with `makeStream()` buffers everything yielded to it; this one is pulled:
/// ``stream(onTermination:)`` makes a stream whose every `next()` takes one element from here. When the
/// consumer goes away — its task cancelled, or the stream and its iterator dropped — the hand-off is
/// cancelled: a waiting producer is woken and told to stop, and `onTermination` runs once.
final class StreamHandoff<Element: Sendable>: @unchecked Sendable {
    // @unchecked Sendable: every stored `var` is read and written only while holding `condition`.

    /// Bytes that may wait unread before the producer waits.
    let capacity: Int
    private let condition = NSCondition()
    private var waiting: [(element: Element, weight: Int)] = []
    /// Where the next element to hand out sits in `waiting` (taken elements are dropped in bulk).
    private var head = 0
    private var waitingBytes = 0
    /// How the stream ended, once the producer said so (the consumer sees it after the waiting elements).
    private var ending: Result<Void, any Error>?
    /// The consumer was handed the end: every later `next()` is nil.
    private var ended = false
    /// The consumer went away: nothing more is handed out, and producers stop.
    private var cancelled = false
    private var onTermination: (@Sendable () -> Void)?
    private var consumer: CheckedContinuation<Element?, any Error>?
    private var producer: CheckedContinuation<Void, Never>?

    /// A hand-off holding at most `capacity` bytes (plus the one element that crossed it) unread.
    init(capacity: Int) { self.capacity = capacity }

    // MARK: - Producer

    /// Hands `element` over, then blocks this thread while more than `capacity` bytes wait unread. False
    /// when the consumer has gone away (stop producing).
    func put(_ element: Element, weight: Int) -> Bool {
        guard let (resumed, full) = append(element, weight: weight) else { return false }
        resumed?.resume(returning: element)
        guard full else { return true }
        condition.lock()
        defer { condition.unlock() }
        while !cancelled && waitingBytes >= capacity { condition.wait() }
        return !cancelled
    }

    /// Hands `element` over without waiting (for a producer that must never block, such as a URLSession
    /// delegate queue shared by every task): true when it was taken, false when the consumer has gone away,
    /// nil when more than `capacity` bytes now wait unread — the consumer is that far behind, and the
    /// caller ends the stream rather than buffer on.
    func offer(_ element: Element, weight: Int) -> Bool? {
        guard let (resumed, full) = append(element, weight: weight) else { return false }
        resumed?.resume(returning: element)
        return full ? nil : true
    }

    /// Hands `element` over, then suspends while more than `capacity` bytes wait unread — until there is
    /// room, the consumer goes away, or this task is cancelled (a wait for a reader that stopped reading
    /// must not outlive the time the OS granted). False when it should stop producing: then ``isActive``
    /// says whether the consumer went away (false) or the task was cancelled (true).
    func send(_ element: Element, weight: Int) async -> Bool {
        guard let (resumed, full) = append(element, weight: weight) else { return false }
        resumed?.resume(returning: element)
        guard full else { return !Task.isCancelled }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                condition.lock()
                // Checked under the lock: a cancellation that came before the continuation was stored is seen
                // here, one that comes after finds it stored.
                let goesOn = cancelled || waitingBytes < capacity || Task.isCancelled
                if !goesOn { producer = continuation }
                condition.unlock()
                if goesOn { continuation.resume() }
            }
        } onCancel: {
            condition.lock()
            let suspended = producer
            producer = nil
            condition.unlock()
            suspended?.resume()
        }
        return isActive && !Task.isCancelled
    }

    /// Ends the stream (with `error`, or cleanly) after the elements still waiting.
    func finish(throwing error: (any Error)? = nil) {
        condition.lock()
        guard ending == nil else {
            condition.unlock()
            return
        }
        ending = error.map { .failure($0) } ?? .success(())
        let waitingConsumer = head == waiting.count ? consumer : nil
        var terminate: (@Sendable () -> Void)?
        if waitingConsumer != nil {
            consumer = nil
            ended = true
            terminate = onTermination
            onTermination = nil
        }
        condition.unlock()
        guard let waitingConsumer else { return }
        terminate?()
        if let error { waitingConsumer.resume(throwing: error) } else { waitingConsumer.resume(returning: nil) }
    }

    /// Whether the consumer is still there.
    var isActive: Bool {
        condition.lock()
        defer { condition.unlock() }
        return !cancelled
    }

    /// Appends; returns the consumer to resume with `element` (which then never waits here) and whether
    /// the producer must now wait for room. Nil when cancelled or ended.
    private func append(_ element: Element, weight: Int) -> (CheckedContinuation<Element?, any Error>?, Bool)? {
        condition.lock()
        defer { condition.unlock() }
        // Cancelled, or already ended (``finish(throwing:)``): nothing more is taken.
        guard !cancelled, ending == nil else { return nil }
        if let waitingConsumer = consumer {
            consumer = nil
            return (waitingConsumer, false)
        }
        waiting.append((element, weight))
        waitingBytes += weight
        return (nil, waitingBytes >= capacity)
    }

    // MARK: - Consumer

    /// A stream that takes its elements from here. Dropping it (and its iterator) or cancelling the task
    /// iterating it cancels the hand-off and runs `onTermination` once.
    func stream(onTermination: @escaping @Sendable () -> Void) -> AsyncThrowingStream<Element, any Error> {
        condition.lock()
        self.onTermination = onTermination
        condition.unlock()
        let owner = Owner(self)
        return AsyncThrowingStream(unfolding: { try await owner.handoff.next() })
    }

    /// Cancels the hand-off when the stream that owns it is released.
    private final class Owner: Sendable {
        let handoff: StreamHandoff
        init(_ handoff: StreamHandoff) { self.handoff = handoff }
        deinit { handoff.cancel() }
    }

    /// The next element, nil at a clean end or once cancelled; throws the producer's error.
    func next() async throws -> Element? {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Element?, any Error>) in
                condition.lock()
                precondition(consumer == nil, "a stream is read by one task at a time")
                let result: Result<Element?, any Error>?
                var terminate: (@Sendable () -> Void)?
                if cancelled || ended {
                    result = .success(nil)
                } else if head < waiting.count {
                    let taken = waiting[head]
                    head += 1
                    waitingBytes -= taken.weight
                    if head == waiting.count {
                        waiting.removeAll(keepingCapacity: true)
                        head = 0
                    } else if head >= 64, head * 2 >= waiting.count {
                        waiting.removeFirst(head)
                        head = 0
                    }
                    result = .success(taken.element)
                } else if let ending {
                    // Handed out once; after it the stream is over (nil), and whatever its end releases goes.
                    result = ending.map { nil }
                    ended = true
                    terminate = onTermination
                    onTermination = nil
                } else {
                    consumer = continuation
                    result = nil
                }
                // Room again: the producer may go on.
                let wakes = waitingBytes < capacity
                let suspendedProducer = wakes ? producer : nil
                if wakes {
                    producer = nil
                    condition.broadcast()
                }
                condition.unlock()
                suspendedProducer?.resume()
                terminate?()
                if let result { continuation.resume(with: result) }
            }
        } onCancel: {
            cancel()
        }
    }

    /// The consumer went away: waiting elements are dropped, producers stop, `onTermination` runs (once).
    func cancel() {
        condition.lock()
        guard !cancelled else {
            condition.unlock()
            return
        }
        cancelled = true
        waiting.removeAll()
        waitingBytes = 0
        let waitingConsumer = consumer
        let suspendedProducer = producer
        let terminate = onTermination
        consumer = nil
        producer = nil
        onTermination = nil
        condition.broadcast()
        condition.unlock()
        waitingConsumer?.resume(returning: nil)
        suspendedProducer?.resume()
        terminate?()
    }
}
