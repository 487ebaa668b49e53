import Foundation
import KeelCore
import KeelTesting

/// `keel-bench`: every Keel benchmark, each measured against its baseline in the same run.
///
/// Run it in release mode: `swift run -c release keel-bench [--filter NAME] [--rounds N] [--json]`.
@main
enum KeelBench {
    static let benchmarks: [Benchmark] = [
        TestServerRoundTrip.benchmark,
        ContractBenchmarks.decodeTolerant,
        ContractBenchmarks.schemaValidate,
        HTTPBenchmarks.get,
        HTTPBenchmarks.getDefaultTransport,
        HTTPBenchmarks.traceOverhead,
        HTTPBenchmarks.traceOverheadWire,
        HTTPBenchmarks.traceOverheadLogic,
        ContractToolsBenchmarks.diff,
        ContractToolsBenchmarks.diffConcurrent,
        ContractToolsBenchmarks.generate,
        StoreBenchmarks.insert,
        StoreBenchmarks.read,
        StoreBenchmarks.transactions,
        StoreBenchmarks.backfill,
        VaultBenchmarks.insert,
        VaultBenchmarks.read,
        JournalBenchmarks.write,
        LifecycleBenchmarks.restore,
        SyncBenchmarks.enqueue,
        SyncBenchmarks.enqueueVault,
        SyncBenchmarks.push,
        SyncBenchmarks.memory,
    ]

    static let usage = """
        USAGE: keel-bench [--filter <name>]... [--rounds <n>] [--json] [--report <file.svg>] [--same-process] [--list]

        Measures each benchmark's candidate and baseline in one process of its own (a fresh child, so that
        no benchmark inherits another's threads, heap or caches), interleaved over several rounds, and
        reports the median time per operation of each and their ratio (candidate / baseline).

        OPTIONS:
          --filter <name>  Run only benchmarks whose name contains <name> (repeatable).
          --rounds <n>     Rounds per benchmark (default 15, at least 3).
          --json           One JSON object per benchmark: name, unit, baseline, candidate, ratio, goal, goalRatio.
          --report <file>  Also write an SVG chart of every ratio against its goal (misses in red).
          --same-process   Run every benchmark in this process, one after another (for profilers).
          --list           List the benchmarks and exit.
          -h, --help       Show this help.

        """

    static func main() async {
        // The child process of sync.memory (not an option for people): its own heap, measured alone.
        if CommandLine.arguments.count > 2, CommandLine.arguments[1] == "--child-sync-memory" {
            let options = Dictionary(
                stride(from: 3, to: CommandLine.arguments.count - 1, by: 2).map {
                    (CommandLine.arguments[$0], CommandLine.arguments[$0 + 1])
                }, uniquingKeysWith: { $1 })
            guard let count = Int(CommandLine.arguments[2]),
                let server = options["--server"].flatMap(URL.init(string:)),
                let token = options["--token"], let directory = options["--dir"]
            else { fail("--child-sync-memory N --server URL --token T --dir DIR") }
            do {
                try await SyncBenchmarks.runMemoryChild(
                    count: count, server: server, token: token, directory: URL(fileURLWithPath: directory))
                exit(0)
            } catch {
                FileHandle.standardError.write(Data("error: \(error)\n".utf8))
                exit(1)
            }
        }
        // One benchmark in this process, for the parent (not an option for people): the measurement as one
        // JSON line, then this process's peak RSS.
        if CommandLine.arguments.count == 5, CommandLine.arguments[1] == "--child-benchmark",
            CommandLine.arguments[3] == "--rounds", let rounds = Int(CommandLine.arguments[4])
        {
            let name = CommandLine.arguments[2]
            guard let benchmark = benchmarks.first(where: { $0.name == name }) else { fail("no benchmark \(name)") }
            do {
                print(try jsonLine(try await Harness(rounds: rounds).run(benchmark)))
                print("peak \((try? PeakMemory.peak()) ?? 0)")
                exit(0)
            } catch {
                FileHandle.standardError.write(Data("error: \(name): \(error)\n".utf8))
                exit(1)
            }
        }
        var filters: [String] = []
        var rounds = 15
        var sameProcess = false
        var json = false
        var reportPath: String?
        var arguments = CommandLine.arguments.dropFirst()
        while let argument = arguments.popFirst() {
            switch argument {
            case "--filter":
                guard let value = arguments.popFirst() else { fail("option '--filter' needs a value") }
                filters.append(value)
            case "--rounds":
                guard let value = arguments.popFirst(), let number = Int(value), number >= 3 else {
                    fail("option '--rounds' needs a whole number of at least 3")
                }
                rounds = number
            case "--json": json = true
            case "--same-process": sameProcess = true
            case "--report":
                guard let value = arguments.popFirst() else { fail("option '--report' needs a file name") }
                // Checked now, not after a run of many minutes.
                if let problem = OutputFile.problem(with: value) { fail("option '--report': \(problem)") }
                reportPath = value
            case "--list":
                benchmarks.forEach { print($0.name) }
                exit(0)
            case "-h", "--help":
                print(usage, terminator: "")
                exit(0)
            default: fail("unknown option '\(argument)'")
            }
        }
        #if DEBUG
            FileHandle.standardError.write(
                Data(
                    "warning: keel-bench is a debug build; numbers are meaningless. Use swift run -c release keel-bench\n"
                        .utf8))
        #endif
        let selected = benchmarks.filter { benchmark in
            filters.isEmpty || filters.contains { benchmark.name.contains($0) }
        }
        guard !selected.isEmpty else { fail("no benchmark matches \(filters)") }

        let harness = Harness(rounds: rounds)
        var results: [Measurement] = []
        for benchmark in selected {
            do {
                let (result, peak) =
                    sameProcess
                    ? (try await harness.run(benchmark), try? PeakMemory.peak())
                    : try await runInChild(benchmark, rounds: rounds)
                results.append(result)
                if json {
                    print(try jsonLine(result))
                } else {
                    print(
                        """
                        \(result.name)
                          baseline   \(format(result.baseline)) \(result.unit)
                          candidate  \(format(result.candidate)) \(result.unit)
                          ratio      \(format(result.ratio))  (goal: \(result.goal))
                        """)
                    if let throughput = result.candidateMBPerSecond {
                        print("  candidate  \(format(throughput)) MB/s")
                    }
                    print(
                        "  peak RSS  \(format(Double(peak ?? 0) / 1_048_576)) MiB"
                            + (sameProcess ? " (this process so far)" : " (its process)"))
                }
            } catch {
                FileHandle.standardError.write(Data("error: \(benchmark.name): \(error)\n".utf8))
                exit(1)
            }
        }
        if let reportPath {
            let title = "keel-bench, \(results.count) benchmark(s), \(rounds) rounds"
            do {
                try Data(Report.svg(results, title: title).utf8).write(to: URL(fileURLWithPath: reportPath))
            } catch {
                FileHandle.standardError.write(Data("error: cannot write \(reportPath): \(error)\n".utf8))
                exit(1)
            }
        }
    }

    /// Runs `benchmark` in a fresh child process of this executable and returns its measurement and the
    /// child's peak RSS. What else the child prints (`KEEL_BENCH_TRACE`'s per-round ratios) is passed on.
    static func runInChild(_ benchmark: Benchmark, rounds: Int) async throws -> (Measurement, Int?) {
        let process = try ChildProcess.launch(
            executable: CommandLine.arguments[0],
            arguments: ["--child-benchmark", benchmark.name, "--rounds", String(rounds)])
        let ending = try await process.waitForExit(timeout: .seconds(3600))
        let lines = process.output(of: .standardOutput).split(separator: "\n")
        guard case .exited(0) = ending, let line = lines.last(where: { $0.hasPrefix("{") }) else {
            throw BenchError("the child process ended \(ending): \(process.output(of: .standardError))")
        }
        for other in lines where !other.hasPrefix("{") && !other.hasPrefix("peak ") { print(other) }
        let peak = lines.last(where: { $0.hasPrefix("peak ") }).flatMap { Int($0.dropFirst(5)) }
        return (try JSONDecoder().decode(Measurement.self, from: Data(line.utf8)), peak)
    }

    /// `measurement` as one JSON object, keys sorted.
    static func jsonLine(_ measurement: Measurement) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return String(decoding: try encoder.encode(measurement), as: UTF8.self)
    }

    static func format(_ value: Double) -> String { String(format: "%.3f", value) }

    static func fail(_ message: String) -> Never {
        FileHandle.standardError.write(Data("error: \(message)\n\n\(usage)".utf8))
        exit(2)
    }
}
