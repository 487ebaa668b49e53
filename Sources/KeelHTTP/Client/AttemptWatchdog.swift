import Dispatch
import KeelCore

/// The attempt timers of every call in the process on one dispatch timer: scheduling a deadline is a lock
/// and a heap push, cancelling it a dictionary removal.
///
/// Nearly every attempt timer is cancelled because the answer came first. Racing each attempt against a timer
/// task (a task group with the exchange in one child and a sleep in the other) cost four thread switches and
/// a dispatch timer per attempt — 4–6 % of a GET over loopback (keel-bench http.get). Here the transport runs
/// on the caller's task (see ``InterruptibleHTTPTransport``) and the timer only interrupts it, the way
/// OkHttp's watchdog thread ends a timed-out exchange.
///
/// The one dispatch timer is armed for the earliest deadline; a cancelled deadline leaves it armed (it then
/// fires for nothing and is armed for the next), so that calls whose timeouts end in order — the usual case
/// — never touch it.
package final class AttemptWatchdog: @unchecked Sendable {
    // @unchecked Sendable: `state` is behind its lock; `timer` is a dispatch source, safe to use from any
    // thread.

    /// The process's watchdog.
    package static let shared = AttemptWatchdog()

    /// A deadline on one of the system clocks.
    package enum Deadline: Sendable {
        case continuous(ContinuousClock.Instant)
        case suspending(SuspendingClock.Instant)

        /// The deadline `instant` of `clock`, when `clock` is a system clock.
        package init?<C: Clock>(_ instant: C.Instant, on clock: C) {
            if let instant = instant as? ContinuousClock.Instant {
                self = .continuous(instant)
            } else if let instant = instant as? SuspendingClock.Instant {
                self = .suspending(instant)
            } else {
                return nil
            }
        }

        /// Time left until the deadline on its own clock (negative once it passed).
        var remaining: Duration {
            switch self {
            case .continuous(let instant): ContinuousClock.now.duration(to: instant)
            case .suspending(let instant): SuspendingClock.now.duration(to: instant)
            }
        }
    }

    /// A scheduled deadline, to cancel once the attempt ended.
    package struct Token: Sendable {
        fileprivate let id: UInt64
    }

    private struct Entry {
        var deadline: Deadline
        var action: @Sendable () -> Void
    }

    private struct State {
        var entries: [UInt64: Entry] = [:]
        /// (uptime nanoseconds when due, id), a binary min-heap. Cancelled entries stay until they surface
        /// (16 bytes each) or the heap is rebuilt.
        var heap: [(due: UInt64, id: UInt64)] = []
        var nextID: UInt64 = 1
        /// When the dispatch timer fires next (uptime nanoseconds; `.max`: not armed).
        var armed = UInt64.max
    }

    private let state = Locked(State())
    private let timer: any DispatchSourceTimer

    /// A watchdog of its own (tests); the client uses ``shared``.
    package init() {
        timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "keel.http.watchdog"))
        timer.setEventHandler { [weak self] in self?.fire() }
        timer.schedule(deadline: .distantFuture)
        timer.activate()
    }

    deinit { timer.cancel() }

    /// Runs `action` at `deadline` unless cancelled first; at once (on this thread) when it has passed.
    package func schedule(_ deadline: Deadline, _ action: @escaping @Sendable () -> Void) -> Token {
        let remaining = deadline.remaining
        guard remaining > .zero else {
            action()
            return Token(id: 0)
        }
        let due = Self.uptime(after: remaining)
        return state.withLock { state in
            let id = state.nextID
            state.nextID += 1
            state.entries[id] = Entry(deadline: deadline, action: action)
            Self.push((due, id), onto: &state.heap)
            if due < state.armed {
                // Under the lock: two threads arming out of order would leave the later deadline armed.
                state.armed = due
                timer.schedule(deadline: DispatchTime(uptimeNanoseconds: due), leeway: .nanoseconds(0))
            }
            return Token(id: id)
        }
    }

    /// Forgets `token`'s deadline; its action never runs (unless it is running already).
    package func cancel(_ token: Token) {
        guard token.id != 0 else { return }
        state.withLock { state in
            guard state.entries.removeValue(forKey: token.id) != nil else { return }
            if state.heap.count > 64, state.heap.count > 4 * state.entries.count {
                // Mostly cancelled entries: rebuild from the live ones (a sorted array is a valid min-heap).
                state.heap = state.heap.filter { state.entries[$0.id] != nil }.sorted { $0.due < $1.due }
            }
        }
    }

    /// Deadlines scheduled and not yet run or cancelled.
    package var pendingCount: Int { state.withLock { $0.entries.count } }

    /// Deadlines the heap holds, cancelled ones included (tests: cancelled deadlines must not pile up).
    package var storedCount: Int { state.withLock { $0.heap.count } }

    /// The dispatch timer fired: runs every action that is due and arms the timer for the next deadline.
    private func fire() {
        let now = DispatchTime.now().uptimeNanoseconds
        let due = state.withLock { state -> [@Sendable () -> Void] in
            var actions: [@Sendable () -> Void] = []
            while let top = state.heap.first, top.due <= now {
                Self.popTop(of: &state.heap)
                guard let entry = state.entries[top.id] else { continue }
                // The dispatch timer counts uptime; a continuous-clock deadline may be further away than it
                // thought (or nearer: then it is due now). Ask the deadline's own clock.
                let remaining = entry.deadline.remaining
                if remaining > .zero {
                    Self.push((Self.uptime(after: remaining), top.id), onto: &state.heap)
                } else {
                    state.entries[top.id] = nil
                    actions.append(entry.action)
                }
            }
            while let top = state.heap.first, state.entries[top.id] == nil { Self.popTop(of: &state.heap) }
            state.armed = state.heap.first?.due ?? .max
            timer.schedule(
                deadline: state.armed == .max ? .distantFuture : DispatchTime(uptimeNanoseconds: state.armed),
                leeway: .nanoseconds(0))
            return actions
        }
        for action in due { action() }
    }

    private static func uptime(after remaining: Duration) -> UInt64 {
        let (sum, overflow) = DispatchTime.now().uptimeNanoseconds.addingReportingOverflow(
            UInt64(clamping: remaining.inNanoseconds))
        return overflow ? .max - 1 : min(sum, .max - 1)
    }

    // MARK: - Binary heap on (due, id)

    private static func push(_ element: (due: UInt64, id: UInt64), onto heap: inout [(due: UInt64, id: UInt64)]) {
        heap.append(element)
        var child = heap.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard heap[child].due < heap[parent].due else { break }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    private static func popTop(of heap: inout [(due: UInt64, id: UInt64)]) {
        let last = heap.removeLast()
        guard !heap.isEmpty else { return }
        heap[0] = last
        var parent = 0
        while true {
            let left = 2 * parent + 1
            let right = left + 1
            var smallest = parent
            if left < heap.count, heap[left].due < heap[smallest].due { smallest = left }
            if right < heap.count, heap[right].due < heap[smallest].due { smallest = right }
            if smallest == parent { return }
            heap.swapAt(parent, smallest)
            parent = smallest
        }
    }
}

/// An attempt's timer: on a system clock a deadline on ``AttemptWatchdog/shared``; on any other clock (a
/// test's manual clock) a task sleeping on it.
struct AttemptTimer {
    private enum Kind {
        case watchdog(AttemptWatchdog.Token)
        case sleeper(Task<Void, Never>)
        case fired
    }

    private let kind: Kind

    /// Runs `action` at `deadline` on `clock` (at once when it has passed), unless cancelled first.
    init<C: Clock>(deadline: C.Instant, clock: C, _ action: @escaping @Sendable () -> Void)
    where C.Duration == Duration {
        if let deadline = AttemptWatchdog.Deadline(deadline, on: clock) {
            kind = .watchdog(AttemptWatchdog.shared.schedule(deadline, action))
        } else if clock.now.duration(to: deadline) <= .zero {
            action()
            kind = .fired
        } else {
            kind = .sleeper(
                Task {
                    do { try await clock.sleep(until: deadline, tolerance: nil) } catch { return }
                    action()
                })
        }
    }

    /// Stops the timer; its action does not run (unless it is running already).
    func cancel() {
        switch kind {
        case .watchdog(let token): AttemptWatchdog.shared.cancel(token)
        case .sleeper(let task): task.cancel()
        case .fired: break
        }
    }
}
