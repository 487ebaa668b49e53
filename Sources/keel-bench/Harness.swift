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
    /// Bytes one operation processes, when throughput (MB/s) is worth reporting.
    var bytesPerOperation: Int? = nil
    /// Creates the state both sides use (servers, files) and returns the two operations plus a teardown.
    let prepare: @Sendable () throws -> Sides

    struct Sides {
        let baseline: () async throws -> Void
        let candidate: () async throws -> Void
        let teardown: () -> Void

        init(
            baseline: @escaping () async throws -> Void, candidate: @escaping () async throws -> Void,
            teardown: @escaping () -> Void
        ) {
            self.baseline = baseline
            self.candidate = candidate
            self.teardown = teardown
        }
    }
}

/// The measured result of one benchmark.
struct Measurement: Encodable {
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
}

/// Runs benchmarks the same way every time: a warm-up batch of each side, then `rounds` rounds in which
/// baseline and candidate batches alternate (their order flips every round), and the median batch of
/// each side, divided by the batch size.
struct Harness {
    var rounds: Int

    func run(_ benchmark: Benchmark) async throws -> Measurement {
        let sides = try benchmark.prepare()
        defer { sides.teardown() }
        func batch(_ operation: () async throws -> Void) async throws -> Double {
            let start = ContinuousClock.now
            for _ in 0..<benchmark.operations { try await operation() }
            let elapsed = ContinuousClock.now - start
            let seconds = elapsed.inSeconds
            return seconds / Double(benchmark.operations)
        }
        _ = try await batch(sides.baseline)
        _ = try await batch(sides.candidate)
        var baseline: [Double] = []
        var candidate: [Double] = []
        for round in 0..<rounds {
            if round.isMultiple(of: 2) {
                baseline.append(try await batch(sides.baseline))
                candidate.append(try await batch(sides.candidate))
            } else {
                candidate.append(try await batch(sides.candidate))
                baseline.append(try await batch(sides.baseline))
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
