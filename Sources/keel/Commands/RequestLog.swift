import Foundation
import KeelTesting

/// The backend's request log on standard output, written by a thread of its own and never by a request's:
/// a reader that stops reading (a harness that only wanted the `listening` line) holds no request. Once
/// 10,000 lines wait, new ones are dropped and counted (`log: N lines dropped`, written when there is room
/// again); a reader that went away (the pipe closed) ends the log, never the backend.
final class RequestLog: @unchecked Sendable {
    // @unchecked Sendable: every stored `var` is read and written only while holding `condition`.
    private static let capacity = 10_000
    private let condition = NSCondition()
    private var lines: [String] = []
    private var dropped = 0
    private var finishing = false
    private var broken = false
    /// Nothing is written before the first line (``start(with:)``): requests answered before the banner
    /// was said (a client that knew the port) wait behind it.
    private var started = false
    private let done = DispatchSemaphore(value: 0)

    init() {
        _ = POSIXThread.spawn(name: "keel-backend-log") { [self] in
            run()
            done.signal()
        }
    }

    /// Writes `first` before everything queued so far, and from then on every line as it comes.
    func start(with first: String) {
        condition.lock()
        lines.insert(first, at: 0)
        started = true
        condition.signal()
        condition.unlock()
    }

    /// Queues `line` (dropped when the log is full or broken).
    func write(_ line: String) {
        condition.lock()
        defer { condition.unlock() }
        guard !broken, !finishing else { return }
        if lines.count >= Self.capacity {
            dropped += 1
            return
        }
        // Where the dropped lines would have been: after what was queued before them.
        if dropped > 0 { lines.append(Self.droppedNotice(dropped)) }
        dropped = 0
        lines.append(line)
        condition.signal()
    }

    /// Writes `last` after everything queued and waits (at most `timeout`) until it is out; a reader that
    /// does not read is given up on then.
    func finish(with last: String, timeout: DispatchTimeInterval) {
        condition.lock()
        if !broken {
            if dropped > 0 { lines.append(Self.droppedNotice(dropped)) }
            dropped = 0
            lines.append(last)
        }
        finishing = true
        started = true
        condition.signal()
        condition.unlock()
        _ = done.wait(timeout: .now() + timeout)
    }

    private func run() {
        while true {
            condition.lock()
            while !started || (lines.isEmpty && !finishing) { condition.wait() }
            let batch = lines
            lines.removeAll(keepingCapacity: true)
            let last = finishing && batch.isEmpty
            condition.unlock()
            if last { return }
            for line in batch where !Self.writeLine(line) {
                condition.lock()
                broken = true
                lines.removeAll()
                condition.unlock()
                return
            }
        }
    }

    private static func droppedNotice(_ count: Int) -> String {
        "log: \(count) lines dropped (standard output was not read)"
    }

    /// Writes `line` and a line feed to standard output; false when it cannot be written (the reader went
    /// away: EPIPE, with SIGPIPE ignored).
    private static func writeLine(_ line: String) -> Bool { POSIX.writeAll(1, Array((line + "\n").utf8)) }
}
