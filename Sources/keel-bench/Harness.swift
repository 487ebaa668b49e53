import Foundation
import KeelCore

/// One benchmark: a candidate and the baseline it is judged against, measured in the same process.
struct Benchmark: Sendable {
    /// Stable name, used by `--filter` and in JSON.
    let name: String
    /// What one operation is, for the report (e.g. `µs per round trip`).
    let unit: String
    /// The goal for candidate/baseline, as stated in the issue that introduced the benchmark.
    let goal: String

    /// The largest ratio the goal allows, when it is one (`ratio ≤ 1.05 (...)`); nil for other goals.
    var goalRatio: Double? {
        guard goal.hasPrefix("ratio ≤ ") else { return nil }
        return Double(goal.dropFirst("ratio ≤ ".count).prefix { $0.isNumber || $0 == "." })
    }
    /// Operations per measured batch.
    let operations: Int
    /// Whether a round alternates the two sides operation by operation (the order flipping every
    /// operation) instead of running a batch of each: for short operations over the network, where a
    /// burst of noise from the machine (another VM, an interrupt storm) lasting a fraction of a second would
    /// otherwise land on one side's whole batch and decide the round. Each side's round time is the sum of
    /// its own operations, timed one by one.
    var interleavesOperations = false
    /// Bytes one operation processes, when throughput (MB/s) is worth reporting.
    var bytesPerOperation: Int? = nil
    /// Creates the state both sides use (servers, files) and returns the two operations plus a teardown.
    let prepare: @Sendable () throws -> Sides
    /// A benchmark that measures itself (memory in child processes, say) instead of timing two sides.
    var custom: (@Sendable () async throws -> Measurement)? = nil

    struct Sides {
        let baseline: () async throws -> Void
        let candidate: () async throws -> Void
        let teardown: () -> Void
        /// Untimed work before each batch of a side (fresh input for it).
        var beforeBaseline: (() async throws -> Void)? = nil
        var beforeCandidate: (() async throws -> Void)? = nil

        init(
            baseline: @escaping () async throws -> Void, candidate: @escaping () async throws -> Void,
            teardown: @escaping () -> Void, beforeBaseline: (() async throws -> Void)? = nil,
            beforeCandidate: (() async throws -> Void)? = nil
        ) {
            self.baseline = baseline
            self.candidate = candidate
            self.teardown = teardown
            self.beforeBaseline = beforeBaseline
            self.beforeCandidate = beforeCandidate
        }
    }
}

/// The measured result of one benchmark.
struct Measurement: Codable {
    let name: String
    let unit: String
    let baseline: Double
    let candidate: Double
    let ratio: Double
    let goal: String
    /// The largest ratio the goal allows, when the goal is a ratio.
    let goalRatio: Double?
    /// Candidate throughput in MB/s, for benchmarks that process a known number of bytes.
    let candidateMBPerSecond: Double?
    /// `sync.memory`: the peak RSS of a child process syncing 10k and 100k queued mutations.
    var peakRSSMiB10k: Double? = nil
    var peakRSSMiB100k: Double? = nil
}

/// Runs benchmarks the same way every time: a warm-up batch of each side, then `rounds` rounds in which
/// baseline and candidate batches alternate (their order flips every round) — or, for benchmarks of short
/// operations (``Benchmark/interleavesOperations``), the two sides alternate operation by operation within
/// each round — and the median round of each side, per operation.
struct Harness {
    var rounds: Int

    func run(_ benchmark: Benchmark) async throws -> Measurement {
        if let custom = benchmark.custom { return try await custom() }
        let sides = try benchmark.prepare()
        defer { sides.teardown() }
        func batch(_ operation: () async throws -> Void, before: (() async throws -> Void)?) async throws -> Double {
            try await before?()
            let start = ContinuousClock.now
            for _ in 0..<benchmark.operations { try await operation() }
            let elapsed = ContinuousClock.now - start
            let seconds = elapsed.inSeconds
            return seconds / Double(benchmark.operations)
        }
        /// One round of operations alternating between the sides: the seconds per operation of each.
        func interleaved() async throws -> (baseline: Double, candidate: Double) {
            var baseline = Duration.zero
            var candidate = Duration.zero
            func timed(_ operation: () async throws -> Void) async throws -> Duration {
                let start = ContinuousClock.now
                try await operation()
                return ContinuousClock.now - start
            }
            for operation in 0..<benchmark.operations {
                if operation.isMultiple(of: 2) {
                    baseline += try await timed(sides.baseline)
                    candidate += try await timed(sides.candidate)
                } else {
                    candidate += try await timed(sides.candidate)
                    baseline += try await timed(sides.baseline)
                }
            }
            let count = Double(benchmark.operations)
            return (baseline.inSeconds / count, candidate.inSeconds / count)
        }
        if benchmark.interleavesOperations {
            precondition(
                sides.beforeBaseline == nil && sides.beforeCandidate == nil,
                "\(benchmark.name): untimed work before a batch has no place when operations alternate")
        }
        _ = try await batch(sides.baseline, before: sides.beforeBaseline)
        _ = try await batch(sides.candidate, before: sides.beforeCandidate)
        var baseline: [Double] = []
        var candidate: [Double] = []
        for round in 0..<rounds {
            if benchmark.interleavesOperations {
                let (one, other) = try await interleaved()
                baseline.append(one)
                candidate.append(other)
            } else if round.isMultiple(of: 2) {
                baseline.append(try await batch(sides.baseline, before: sides.beforeBaseline))
                candidate.append(try await batch(sides.candidate, before: sides.beforeCandidate))
            } else {
                candidate.append(try await batch(sides.candidate, before: sides.beforeCandidate))
                baseline.append(try await batch(sides.baseline, before: sides.beforeBaseline))
            }
        }
        if ProcessInfo.processInfo.environment["KEEL_BENCH_TRACE"] != nil {
            print(zip(candidate, baseline).map { String(format: "%.3f", $0 / $1) }.joined(separator: " "))
        }
        // Medians in seconds per operation, reported in the benchmark's unit (ms or µs).
        let scale = benchmark.unit.hasPrefix("ms") ? 1e3 : 1e6
        let baselineMedian = median(baseline) * scale
        let candidateMedian = median(candidate) * scale
        return Measurement(
            name: benchmark.name, unit: benchmark.unit, baseline: baselineMedian, candidate: candidateMedian,
            ratio: candidateMedian / baselineMedian, goal: benchmark.goal, goalRatio: benchmark.goalRatio,
            candidateMBPerSecond: benchmark.bytesPerOperation.map { Double($0) / (candidateMedian / scale) / 1e6 }
        )
    }

    private func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        let middle = sorted.count / 2
        return sorted.count.isMultiple(of: 2) ? (sorted[middle - 1] + sorted[middle]) / 2 : sorted[middle]
    }
}
