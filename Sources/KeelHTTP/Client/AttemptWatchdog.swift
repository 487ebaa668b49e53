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

    /// A deadline on one of the system clocks, kept as an offset from a fixed instant of its clock (the
    /// clocks' instants are resilient types: every copy and comparison of one would be a runtime call).
    package struct Deadline: Sendable {
        private static let continuousReference = ContinuousClock.now
        private static let suspendingReference = SuspendingClock.now

        private let isContinuous: Bool
        private let sinceReference: Duration

        /// A deadline on the continuous clock.
        package static func continuous(_ instant: ContinuousClock.Instant) -> Deadline {
            Deadline(isContinuous: true, sinceReference: continuousReference.duration(to: instant))
        }

        /// A deadline on the suspending clock.
        package static func suspending(_ instant: SuspendingClock.Instant) -> Deadline {
            Deadline(isContinuous: false, sinceReference: suspendingReference.duration(to: instant))
        }

        private init(isContinuous: Bool, sinceReference: Duration) {
            self.isContinuous = isContinuous
            self.sinceReference = sinceReference
        }

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
            let elapsed =
                isContinuous
                ? Self.continuousReference.duration(to: .now) : Self.suspendingReference.duration(to: .now)
            return sinceReference - elapsed
        }
    }

    /// A scheduled deadline, to cancel once the attempt ended.
    package struct Token: Sendable {
        fileprivate let slot: UInt32
        /// 0: nothing was scheduled (the deadline had passed).
        fileprivate let generation: UInt32
    }

    /// Where a deadline lives while scheduled; reused (with the next generation) once it ran or was cancelled.
    private struct Slot {
        var generation: UInt32 = 0
        /// What is scheduled here; nil while the slot is free.
        var scheduled: (deadline: Deadline, action: @Sendable () -> Void)?
    }

    /// A heap entry: when the slot's deadline is due (uptime nanoseconds), for the generation it was pushed for.
    private struct Due {
        var uptime: UInt64
        var slot: UInt32
        var generation: UInt32
    }

    private struct State {
        var slots: [Slot] = []
        var freeSlots: [UInt32] = []
        /// A binary min-heap on `uptime`. Cancelled deadlines stay until they surface (16 bytes each) or the
        /// heap is rebuilt.
        var heap: [Due] = []
        var pending = 0
        /// When the dispatch timer fires next (uptime nanoseconds; `.max`: not armed).
        var armed = UInt64.max

        func isLive(_ due: Due) -> Bool {
            let slot = slots[Int(due.slot)]
            return slot.generation == due.generation && slot.scheduled != nil
        }

        /// Empties `index`'s slot and returns its action.
        mutating func release(_ index: UInt32) -> (@Sendable () -> Void)? {
            let action = slots[Int(index)].scheduled?.action
            slots[Int(index)].scheduled = nil
            freeSlots.append(index)
            pending -= 1
            return action
        }
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
            return Token(slot: 0, generation: 0)
        }
        let due = Self.uptime(after: remaining)
        return state.withLock { state in
            let index: UInt32
            if let free = state.freeSlots.popLast() {
                index = free
            } else {
                index = UInt32(state.slots.count)
                state.slots.append(Slot())
            }
            var generation = state.slots[Int(index)].generation &+ 1
            if generation == 0 { generation = 1 }
            state.slots[Int(index)] = Slot(generation: generation, scheduled: (deadline, action))
            state.pending += 1
            Self.push(Due(uptime: due, slot: index, generation: generation), onto: &state.heap)
            if due < state.armed {
                // Under the lock: two threads arming out of order would leave the later deadline armed.
                state.armed = due
                timer.schedule(deadline: DispatchTime(uptimeNanoseconds: due), leeway: .nanoseconds(0))
            }
            return Token(slot: index, generation: generation)
        }
    }

    /// Forgets `token`'s deadline; its action never runs (unless it is running already).
    package func cancel(_ token: Token) {
        guard token.generation != 0 else { return }
        state.withLock { state in
            let slot = state.slots[Int(token.slot)]
            guard slot.generation == token.generation, slot.scheduled != nil else { return }
            _ = state.release(token.slot)
            if state.heap.count > 64, state.heap.count > 4 * state.pending {
                // Mostly cancelled entries: rebuild from the live ones (a sorted array is a valid min-heap).
                state.heap = state.heap.filter(state.isLive).sorted { $0.uptime < $1.uptime }
            }
        }
    }

    /// Deadlines scheduled and not yet run or cancelled.
    package var pendingCount: Int { state.withLock { $0.pending } }

    /// Deadlines the heap holds, cancelled ones included (tests: cancelled deadlines must not pile up).
    package var storedCount: Int { state.withLock { $0.heap.count } }

    /// The dispatch timer fired: runs every action that is due and arms the timer for the next deadline.
    private func fire() {
        let now = DispatchTime.now().uptimeNanoseconds
        let due = state.withLock { state -> [@Sendable () -> Void] in
            var actions: [@Sendable () -> Void] = []
            while let top = state.heap.first, top.uptime <= now {
                Self.popTop(of: &state.heap)
                guard state.isLive(top) else { continue }
                // The dispatch timer counts uptime; a continuous-clock deadline may be further away than it
                // thought (or nearer: then it is due now). Ask the deadline's own clock.
                guard let remaining = state.slots[Int(top.slot)].scheduled?.deadline.remaining else { continue }
                if remaining > .zero {
                    var later = top
                    later.uptime = Self.uptime(after: remaining)
                    Self.push(later, onto: &state.heap)
                } else if let action = state.release(top.slot) {
                    actions.append(action)
                }
            }
            while let top = state.heap.first, !state.isLive(top) { Self.popTop(of: &state.heap) }
            state.armed = state.heap.first?.uptime ?? .max
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

    // MARK: - Binary heap on the uptime

    private static func push(_ element: Due, onto heap: inout [Due]) {
        heap.append(element)
        var child = heap.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard heap[child].uptime < heap[parent].uptime else { break }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    private static func popTop(of heap: inout [Due]) {
        let last = heap.removeLast()
        guard !heap.isEmpty else { return }
        heap[0] = last
        var parent = 0
        while true {
            let left = 2 * parent + 1
            let right = left + 1
            var smallest = parent
            if left < heap.count, heap[left].uptime < heap[smallest].uptime { smallest = left }
            if right < heap.count, heap[right].uptime < heap[smallest].uptime { smallest = right }
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
