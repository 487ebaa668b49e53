import CYAML
import Foundation
import KeelContractFixtures
import KeelContractTools
import KeelTesting

/// Benchmarks of the contract tools (issue #4).
enum ContractToolsBenchmarks {
    /// A large description: `operations` paths, each with a GET and a PUT and its own schemas, documented
    /// the way real descriptions are (summaries, descriptions, examples). `tweak` makes the "lightly
    /// modified copy": a new optional response property every 100 items, a tighter request limit every 250.
    static func makeSpec(operations: Int, version: String, tweak: Bool) -> String {
        var text = "openapi: 3.1.0\ninfo: {title: Big, version: \(version)}\npaths:\n"
        for index in 0..<operations {
            text += """
                  /items\(index)/{id}:
                    parameters:
                      - {name: id, in: path, required: true, description: The item's identifier, schema: {type: string, format: uuid}}
                    get:
                      operationId: getItem\(index)
                      summary: Read one item of collection \(index)
                      description: >-
                        Returns the item with the given identifier, as last saved. Clients that keep a copy
                        compare its version with the one they hold; the server never merges edits for them.
                      tags: [items\(index % 20)]
                      parameters:
                        - {name: view, in: query, description: How much of the item to return, schema: {type: string, enum: [full, compact]}}
                      responses:
                        '200':
                          description: The item.
                          content:
                            application/json:
                              schema: {$ref: '#/components/schemas/Item\(index)'}
                        '404': {description: No item has this identifier.}
                    put:
                      operationId: putItem\(index)
                      summary: Replace one item of collection \(index)
                      description: >-
                        Saves the whole item; fields left out are cleared. Send the version you read to avoid
                        overwriting someone else's edit: a stale version is refused with 409.
                      tags: [items\(index % 20)]
                      requestBody:
                        content:
                          application/json:
                            schema: {$ref: '#/components/schemas/Item\(index)Input'}
                      responses:
                        '204': {description: Saved.}
                        '409': {description: The item changed since it was read.}

                """
        }
        text += "components:\n  schemas:\n"
        for index in 0..<operations {
            let extra =
                (tweak && index % 100 == 0 ? "\n        note: {type: string}" : "")
                + (0..<30).map {
                    "\n        field\($0): {type: string, maxLength: 64, description: 'Field \($0) of item \(index), shown as is'}"
                }.joined()
            text += """
                    Item\(index):
                      type: object
                      description: An item of collection \(index), as the server stores it.
                      required: [id, title, kind]
                      properties:
                        id: {type: string, format: uuid, description: Assigned by the server; never changes.}
                        title: {type: string, maxLength: 200, description: 'Shown in lists, one line.'}
                        kind: {type: string, enum: [a, b, c], x-extensible-enum: true, description: 'New kinds may appear: show unknown ones as "other".'}
                        tags: {type: array, items: {type: string}, description: Free-form labels.}\(extra)
                    Item\(index)Input:
                      type: object
                      description: What a client sends to replace an item of collection \(index).
                      required: [title]
                      properties:
                        title: {type: string, maxLength: \(tweak && index % 250 == 0 ? 100 : 200)}
                        body: {type: string, description: "The item's text, in Markdown."}

                """
        }
        return text
    }

    /// libyaml alone: every event of the document, nothing built.
    static func scan(_ bytes: [UInt8]) throws -> Int {
        var parser = yaml_parser_t()
        guard yaml_parser_initialize(&parser) == 1 else { throw BenchError("yaml init") }
        defer { yaml_parser_delete(&parser) }
        return try bytes.withUnsafeBufferPointer { buffer in
            yaml_parser_set_input_string(&parser, buffer.baseAddress, buffer.count)
            var events = 0
            while true {
                var event = yaml_event_t()
                guard yaml_parser_parse(&parser, &event) == 1 else { throw BenchError("yaml parse failed") }
                let done = event.type == YAML_STREAM_END_EVENT
                yaml_event_delete(&event)
                events += 1
                if done { return events }
            }
        }
    }

    /// Load both descriptions one after the other, then diff: the single-thread cost.
    static let diff = diffBenchmark(name: "contract.diff", concurrently: false)
    /// What `keel contract diff` does: both descriptions loaded at the same time (two threads), then diff.
    static let diffConcurrent = diffBenchmark(name: "contract.diff.concurrent", concurrently: true)

    static func diffBenchmark(name: String, concurrently: Bool) -> Benchmark {
        Benchmark(
            name: name,
            unit: "ms per diff of two generated descriptions (size printed above)",
            goal: "ratio ≤ 2.0 (load both + diff vs libyaml alone parsing both, one after the other)"
                + (concurrently ? "; loads on two threads, as keel contract diff does" : "; everything on one thread"),
            operations: 1,
            bytesPerOperation: nil,
            prepare: {
                let directory = try TemporaryDirectory(prefix: "keel-bench-contract")
                // 1,000 paths with a GET and a PUT each: 2,000 operations in about 5 MB of YAML, as the issue asks.
                let base = makeSpec(operations: 1000, version: "1.0.0", tweak: false)
                let revision = makeSpec(operations: 1000, version: "1.1.0", tweak: true)
                let baseURL = directory.url("base.yaml")
                let revisionURL = directory.url("revision.yaml")
                try Data(base.utf8).write(to: baseURL)
                try Data(revision.utf8).write(to: revisionURL)
                print(
                    "  contract.diff: descriptions of \(String(format: "%.1f", Double(base.utf8.count) / 1e6)) MB and \(String(format: "%.1f", Double(revision.utf8.count) / 1e6)) MB, 2,000 operations each"
                )
                let changes = try ContractDiff(
                    base: try OpenAPIDocument.load(from: baseURL), revision: try OpenAPIDocument.load(from: revisionURL)
                ).changes()
                guard
                    changes.contains(where: {
                        $0.rule == "request-body-max-length-decreased"
                            || $0.rule == "request-property-max-length-decreased"
                    })
                else {
                    throw BenchError("the diff missed the tightened maxLength")
                }
                return Benchmark.Sides(
                    baseline: {
                        _ = try scan(Array(try Data(contentsOf: baseURL)))
                        _ = try scan(Array(try Data(contentsOf: revisionURL)))
                    },
                    candidate: {
                        let documents =
                            concurrently
                            ? try OpenAPIDocument.load(from: [baseURL, revisionURL])
                            : [try OpenAPIDocument.load(from: baseURL), try OpenAPIDocument.load(from: revisionURL)]
                        let changes = try ContractDiff(base: documents[0], revision: documents[1]).changes()
                        guard !changes.isEmpty else { throw BenchError("no changes found") }
                    },
                    teardown: { _ = directory }
                )
            }
        )
    }

    /// Models generated for a payments-shaped description of about 4 MB (#16): expandable fields, markers,
    /// integer enums. The goal is absolute (the issue's ≤ 5 s and ≤ 300 MB peak RSS): the candidate's time is
    /// printed in seconds and the process's peak RSS after the rounds; the ratio is to libyaml parsing it.
    static let generate = Benchmark(
        name: "contract.generate",
        unit: "ms per generation of a ~4 MB description (size printed above)",
        goal: "≤ 5 s per generation and ≤ 300 MB peak RSS (release build); ratio to libyaml parsing it reported",
        operations: 1,
        bytesPerOperation: nil,
        prepare: {
            let directory = try TemporaryDirectory(prefix: "keel-bench-generate")
            let text = PaymentsAPI.yaml(resources: 1280)
            let url = directory.url("payments.yaml")
            try Data(text.utf8).write(to: url)
            print(
                "  contract.generate: \(String(format: "%.1f", Double(text.utf8.count) / 1e6)) MB, \(3 * 1280) component schemas, 1,280 operations"
            )
            let code = try ContractGenerator(contract: url).generate()
            print(
                "  contract.generate: \(code.utf8.count / 1_000_000) MB of Swift in \(code.split(separator: "\n").count) lines"
            )
            return Benchmark.Sides(
                baseline: { _ = try scan(Array(try Data(contentsOf: url))) },
                candidate: {
                    let code = try ContractGenerator(contract: url).generate()
                    guard code.contains("public struct Resource1279") else { throw BenchError("a resource is missing") }
                },
                teardown: { _ = directory }
            )
        }
    )
}
