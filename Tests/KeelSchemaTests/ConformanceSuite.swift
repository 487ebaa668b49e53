import Foundation
import KeelContract
import KeelSchema

/// The official JSON-Schema-Test-Suite, read from `../shared/conformance/` (never copied into the repo).
enum ConformanceSuite {
    /// `KEEL_CONFORMANCE_DIR`, or `<repository>/../shared/conformance`.
    static var directory: URL {
        if let override = ProcessInfo.processInfo.environment["KEEL_CONFORMANCE_DIR"], !override.isEmpty {
            return URL(fileURLWithPath: override, isDirectory: true)
        }
        // This file is <repository>/Tests/KeelSchemaTests/ConformanceSuite.swift.
        let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        return repository.deletingLastPathComponent().appendingPathComponent("shared/conformance", isDirectory: true)
    }

    static var jsonSchemaSuite: URL { directory.appendingPathComponent("json-schema-test-suite", isDirectory: true) }

    /// False only when the run opts out explicitly with `KEEL_SKIP_CONFORMANCE=1` (app teams that vendor
    /// Keel without `../shared`). Without the opt-out a missing suite fails the run: CI must never pass
    /// without checking the 1299/1299 claim.
    static var isWanted: Bool {
        ProcessInfo.processInfo.environment["KEEL_SKIP_CONFORMANCE"] != "1"
    }

    /// Fails (throws) when the suite is not where it should be.
    static func requirePresent() throws {
        let tests = jsonSchemaSuite.appendingPathComponent("tests/draft2020-12").path
        guard FileManager.default.fileExists(atPath: tests) else {
            throw MissingSuite(path: jsonSchemaSuite.path)
        }
    }

    struct MissingSuite: Error, CustomStringConvertible {
        let path: String
        var description: String {
            "JSON-Schema-Test-Suite not found at \(path): set KEEL_CONFORMANCE_DIR to its parent directory, "
                + "or KEEL_SKIP_CONFORMANCE=1 to skip the official suites explicitly"
        }
    }

    /// Resolves `http://localhost:1234/…` to the suite's `remotes/` directory, as the suite prescribes.
    static let remoteResolver: JSONSchema.Resolver = { uri in
        let prefix = "http://localhost:1234/"
        guard uri.hasPrefix(prefix) else { return nil }
        let file = jsonSchemaSuite.appendingPathComponent("remotes").appendingPathComponent(
            String(uri.dropFirst(prefix.count)))
        guard let data = FileManager.default.contents(atPath: file.path) else { return nil }
        return try JSONValue(parsing: data)
    }

    struct Case {
        var file: String
        var group: String
        var description: String
        var schema: JSONValue
        var data: JSONValue
        var valid: Bool
    }

    /// Every case of the `.json` files directly in `relativeDirectory`, in file order.
    static func cases(in relativeDirectory: String) throws -> [Case] {
        let folder = jsonSchemaSuite.appendingPathComponent(relativeDirectory)
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".json") }
            .sorted()
        var cases: [Case] = []
        for file in files {
            let data = try Data(contentsOf: folder.appendingPathComponent(file))
            guard case .array(let groups) = try JSONValue(parsing: data) else { continue }
            for group in groups {
                guard case .array(let tests) = group["tests"] ?? .null, let schema = group["schema"] else { continue }
                for test in tests {
                    cases.append(
                        Case(
                            file: file, group: group["description"]?.stringValue ?? "",
                            description: test["description"]?.stringValue ?? "",
                            schema: schema, data: test["data"] ?? .null, valid: test["valid"] == .bool(true)
                        ))
                }
            }
        }
        return cases
    }

    /// Runs `cases`; returns the failures as readable lines. Yields every 100 cases: a long synchronous
    /// loop would hold one of the few cooperative threads and starve the network tests running beside it.
    static func run(_ cases: [Case], options: ValidationOptions = ValidationOptions()) async -> [String] {
        var failures: [String] = []
        for (index, testCase) in cases.enumerated() {
            if index % 100 == 99 { await Task.yield() }
            let label = "\(testCase.file): \(testCase.group) / \(testCase.description)"
            do {
                let schema = try JSONSchema(testCase.schema, resolver: remoteResolver)
                let result = schema.validate(testCase.data, options: options)
                if result.isValid != testCase.valid {
                    failures.append(
                        "\(label): expected \(testCase.valid ? "valid" : "invalid"), got \(result.isValid ? "valid" : "invalid \(result.errors.prefix(2))")"
                    )
                }
            } catch {
                failures.append("\(label): schema rejected: \(error)")
            }
        }
        return failures
    }
}
