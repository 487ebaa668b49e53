import Foundation
import KeelContract
import KeelCore
import KeelSchema

/// `keel schema validate`: validates JSON documents against a JSON Schema (draft 2020-12).
enum SchemaCommand {
    static let command = Keel.Command(
        name: "schema",
        summary: "Validate JSON documents against a JSON Schema (draft 2020-12).",
        usage: """
            USAGE: keel schema validate --schema <schema.json> [--remote <url-prefix>=<dir>]...
                                        [--format-assertion] [--format text|json] <instance.json>...

            Validates each instance against the schema. Prints one line per instance,
            <file>: valid  or  <file>: invalid (N errors), followed by every error on a line of its own:
            <instance-path>  <keyword-path>  <message>
            (two spaces between the fields; paths as JSON Pointer fragments, #/notes/3/status).
            The schema itself is checked against the draft 2020-12 metaschema first.

            References resolve only to files: the schema's own directory (relative $refs), and each
            --remote prefix mapped to a local directory. Keel never fetches from the network.

            OPTIONS:
              --schema <file>             The schema (JSON).
              --remote <prefix>=<dir>     Serve $refs starting with <prefix> from files under <dir> (repeatable).
              --format-assertion          Treat "format" as an assertion (invalid dates, emails, ... fail).
              --format text|json          Output style (default text). json: one document with every result.
              -h, --help                  Show this help.

            EXIT STATUS:
              0  every instance is valid
              1  some instance is invalid
              2  a file cannot be read, is not JSON, or the schema is not a valid schema (the message says
                 which file and where)

            """,
        run: run
    )

    static func run(_ raw: [String]) async throws -> Int32 {
        guard raw.first == "validate" else {
            throw UsageError(
                raw.first.map { "unknown schema subcommand '\($0)'" } ?? "missing subcommand: keel schema validate ...")
        }
        let arguments = try Arguments(
            Array(raw.dropFirst()), options: ["schema", "format"], repeatable: ["remote"], flags: ["format-assertion"])
        guard let schemaPath = arguments.value("schema") else { throw UsageError("missing --schema <schema.json>") }
        guard !arguments.positionals.isEmpty else { throw UsageError("no instance files given") }
        let json = try arguments.choice("format", default: "text", among: ["text", "json"]) == "json"
        var remotes: [(prefix: String, directory: URL)] = []
        for mapping in arguments.values["remote"] ?? [] {
            guard let equals = mapping.firstIndex(of: "="), equals != mapping.startIndex else {
                throw UsageError("--remote needs <url-prefix>=<dir>, not '\(mapping)'")
            }
            remotes.append(
                (
                    String(mapping[..<equals]),
                    URL(fileURLWithPath: String(mapping[mapping.index(after: equals)...]), isDirectory: true)
                ))
        }

        let schemaURL = URL(fileURLWithPath: schemaPath).standardizedFileURL
        let schemaDocument: JSONValue
        switch readJSON(schemaPath) {
        case .success(let value): schemaDocument = value
        case .failure(let problem): return fail(problem.message)
        }
        let schema: JSONSchema
        do {
            schema = try JSONSchema(
                schemaDocument, baseURI: schemaURL.absoluteString,
                resolver: makeResolver(schemaDirectory: schemaURL.deletingLastPathComponent(), remotes: remotes)
            )
        } catch {
            return fail("\(schemaPath): invalid schema: \(error)")
        }

        let options = ValidationOptions(formatAssertion: arguments.has("format-assertion"))
        return try validateInstances(arguments.positionals, schema: schemaPath, json: json) {
            schema.validate($0, options: options)
        }
    }

    /// Validates each instance file with `validate`, prints the results (text or JSON) and returns the exit
    /// status: 0 all valid, 1 some invalid, 2 (with the message) for a file that is unreadable or not JSON,
    /// or that the validator could not decide (``ValidationResult/undecided``). Shared with
    /// `keel contract validate`, so both behave and speak the same.
    static func validateInstances(
        _ paths: some Sequence<String>, schema: String, json: Bool,
        _ validate: (JSONValue) -> ValidationResult
    ) throws -> Int32 {
        var results: [InstanceResult] = []
        for path in paths {
            switch readJSON(path) {
            case .success(let instance):
                let result = validate(instance)
                if let reason = result.undecided { return fail("\(path): cannot be decided: \(reason)") }
                results.append(InstanceResult(file: path, errors: result.errors))
            case .failure(let problem):
                return fail(problem.message)
            }
        }
        return try report(results, schema: schema, json: json)
    }

    /// Prints the results (text or JSON) and returns the exit status: 0 all valid, 1 some invalid.
    private static func report(_ results: [InstanceResult], schema: String, json: Bool) throws -> Int32 {
        if json {
            try sayJSON(
                Report(
                    valid: results.allSatisfy(\.errors.isEmpty), schema: schema,
                    instances: results.map(Report.Instance.init)))
        } else {
            for result in results {
                say(
                    result.errors.isEmpty
                        ? "\(result.file): valid"
                        : "\(result.file): invalid (\(result.errors.count) error\(result.errors.count == 1 ? "" : "s"))"
                )
                for error in result.errors {
                    say(
                        TerminalText.oneLine(
                            "#\(error.instanceLocation)  #\(error.keywordLocation)  \(error.message)"))
                }
            }
        }
        return results.allSatisfy(\.errors.isEmpty) ? 0 : 1
    }

    struct InstanceResult {
        var file: String
        var errors: [ValidationError]
    }

    struct Report: Encodable {
        struct Error: Encodable {
            var instanceLocation: String
            var keywordLocation: String
            var message: String
        }

        struct Instance: Encodable {
            var file: String
            var valid: Bool
            var errors: [Error]

            init(_ result: InstanceResult) {
                file = result.file
                valid = result.errors.isEmpty
                errors = result.errors.map {
                    Error(
                        instanceLocation: $0.instanceLocation, keywordLocation: $0.keywordLocation, message: $0.message)
                }
            }
        }

        var valid: Bool
        var schema: String
        var instances: [Instance]
    }

    struct FileProblem: Swift.Error {
        let message: String
    }

    /// The file at `path` parsed as JSON, or a message naming the file and the position of the problem.
    static func readJSON(_ path: String) -> Result<JSONValue, FileProblem> {
        guard let data = readInputFile(path) else {
            return .failure(FileProblem(message: "\(path): cannot read the file"))
        }
        do {
            return .success(try JSONValue(parsing: data))
        } catch {
            return .failure(FileProblem(message: "\(path): not valid JSON: \(error)"))
        }
    }

    /// Resolves `file://` references inside the schema's directory and `--remote` prefixes; nothing else.
    static func makeResolver(schemaDirectory: URL, remotes: [(prefix: String, directory: URL)]) -> JSONSchema.Resolver {
        return { uri in
            // Which file the URI names, and the directory it must stay inside: a remote prefix's directory, or
            // the schema's own for a file URI.
            let file: URL
            let tree: URL
            if let remote = remotes.first(where: { uri.hasPrefix($0.prefix) }) {
                file = remote.directory.appendingPathComponent(String(uri.dropFirst(remote.prefix.count)))
                tree = remote.directory
            } else if let url = URL(string: uri), url.isFileURL {
                file = url
                tree = schemaDirectory
            } else {
                return nil  // not a document this command can read: "no such schema document"
            }
            // Compared with `..` and symbolic links resolved on both sides: a link inside the tree to a file
            // outside it was followed (found in an outside audit), and a path that only starts like the
            // directory's (`remote-evil` for `remote`) is not inside it.
            let real = file.standardizedFileURL.resolvingSymlinksInPath().path
            let realTree = tree.standardizedFileURL.resolvingSymlinksInPath().path
            guard real.hasPrefix(realTree.hasSuffix("/") ? realTree : realTree + "/") else {
                throw FileProblem(
                    message:
                        "\(uri) is, or links to, a file outside \(tree.standardizedFileURL.path): a schema reads only files beneath its own directory (or a --remote directory)"
                )
            }
            guard let data = readInputFile(real) else { return nil }
            do {
                return try JSONValue(parsing: data)
            } catch {
                throw FileProblem(message: "\(file.path): not valid JSON: \(error)")
            }
        }
    }
}

extension SchemaCommand.FileProblem: CustomStringConvertible {
    var description: String { message }
}
