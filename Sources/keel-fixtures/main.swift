// keel-fixtures: runs scripted storage workloads in a separate process, so that crash tests can kill a
// real process (SIGKILL) at chosen moments. Not part of the library; used by KeelStoreTests.
//
//   keel-fixtures seed    --db PATH --version N --rows R
//   keel-fixtures migrate --db PATH [--batch-size B] [--lockstep]
//     prints "batch <checkpoint>" before each backfill batch commits, then "done <applied migrations>";
//     with --lockstep it then waits for a line on stdin before committing, so the parent chooses the
//     exact moment to kill it
//   keel-fixtures hold    --db PATH
//     inserts a row into table `t` inside a write transaction, prints "holding", and keeps the
//     transaction (and SQLite's write lock) open until a line arrives on stdin, then commits and
//     prints "released" — so tests can contend with a lock held by another process, or kill it
import Foundation
import KeelStore
import KeelStoreFixtures

func value(_ name: String) -> String? {
    guard let index = CommandLine.arguments.firstIndex(of: "--" + name), index + 1 < CommandLine.arguments.count else {
        return nil
    }
    return CommandLine.arguments[index + 1]
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("keel-fixtures: \(message)\n".utf8))
    exit(2)
}

guard CommandLine.arguments.count > 1, let path = value("db") else {
    fail("usage: keel-fixtures seed|migrate|hold --db PATH ...")
}
do {
    let pool = try DatabasePool(path: path)
    switch CommandLine.arguments[1] {
    case "seed":
        try NotesSchema.seed(pool, version: Int(value("version") ?? "0") ?? 0, rows: Int(value("rows") ?? "0") ?? 0)
        print("seeded")
    case "migrate":
        let lockstep = CommandLine.arguments.contains("--lockstep")
        let migrator = NotesSchema.migrator(batchSize: Int(value("batch-size") ?? "100") ?? 100) { checkpoint in
            // Unbuffered, so the parent sees the line before this batch commits.
            FileHandle.standardOutput.write(Data("batch \(checkpoint)\n".utf8))
            if lockstep { _ = readLine() }
        }
        let report = try migrator.migrate(pool)
        print("done \(report.applied.joined(separator: ","))")
    case "hold":
        try pool.writeSync { db in
            try db.execute("INSERT INTO t VALUES ('from the holder')")
            FileHandle.standardOutput.write(Data("holding\n".utf8))
            _ = readLine()
        }
        print("released")
    default:
        fail("unknown command \(CommandLine.arguments[1])")
    }
} catch {
    fail("\(error)")
}
