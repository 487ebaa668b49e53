/// The options and positional arguments of one subcommand, parsed against what it declares.
///
/// Supports `--name value`, `--name=value`, boolean `--flag`, options declared repeatable and `--` to end
/// options. Anything undeclared is a ``UsageError``, and so is an option given twice that is not declared
/// repeatable (the second would silently win: `--platform ios --platform android` judged for android).
struct Arguments {
    struct Declaration {
        var name: String
        var takesValue: Bool
    }

    private(set) var values: [String: [String]] = [:]
    private(set) var flags: Set<String> = []
    private(set) var positionals: [String] = []

    init(_ raw: [String], options: [String] = [], repeatable: [String] = [], flags flagNames: [String] = [])
        throws(UsageError)
    {
        var index = 0
        var optionsEnded = false
        while index < raw.count {
            let argument = raw[index]
            index += 1
            if optionsEnded || !argument.hasPrefix("-") || argument == "-" {
                positionals.append(argument)
                continue
            }
            if argument == "--" {
                optionsEnded = true
                continue
            }
            // Help, where an option may stand: not the value of an option (`--tracestate -h`) nor after `--`.
            if argument == "--help" || argument == "-h" { throw UsageError.helpRequested }
            guard argument.hasPrefix("--") else { throw UsageError("unknown option '\(argument)'") }
            var name = String(argument.dropFirst(2))
            var inlineValue: String?
            if let equals = name.firstIndex(of: "=") {
                inlineValue = String(name[name.index(after: equals)...])
                name = String(name[..<equals])
            }
            if flagNames.contains(name) {
                guard inlineValue == nil else { throw UsageError("option '--\(name)' takes no value") }
                flags.insert(name)
            } else if options.contains(name) || repeatable.contains(name) {
                if values[name] != nil, !repeatable.contains(name) {
                    throw UsageError("option '--\(name)' is given more than once")
                }
                let value: String
                if let inlineValue {
                    value = inlineValue
                } else {
                    // The next option is not this one's value: `--output --check` would write into a directory
                    // named `--check` and pass, where the pipeline asked for a check. A value that starts
                    // with `--` is written `--name=--value`.
                    guard index < raw.count, !raw[index].hasPrefix("--") else {
                        throw UsageError(
                            "option '--\(name)' needs a value"
                                + (index < raw.count
                                    ? " (\(raw[index]) is an option; write --\(name)=VALUE for a value that starts with --)"
                                    : ""))
                    }
                    value = raw[index]
                    index += 1
                }
                values[name, default: []].append(value)
            } else {
                throw UsageError("unknown option '--\(name)'")
            }
        }
    }

    /// The value given for `name` (the last, for a repeatable option).
    func value(_ name: String) -> String? { values[name]?.last }

    /// Whether `--name` was given.
    func has(_ name: String) -> Bool { flags.contains(name) }

    /// The value of `name` as an integer within `range`, or `defaultValue` when absent.
    func integer(_ name: String, default defaultValue: Int, in range: ClosedRange<Int>) throws(UsageError) -> Int {
        guard let text = value(name) else { return defaultValue }
        guard let number = Int(text), range.contains(number) else {
            throw UsageError(
                "option '--\(name)' needs a whole number from \(range.lowerBound) to \(range.upperBound), not '\(text)'"
            )
        }
        return number
    }

    /// The value of `name`, which must be one of `choices`, or `defaultValue` when absent.
    func choice(_ name: String, default defaultValue: String, among choices: [String]) throws(UsageError) -> String {
        let choice = value(name) ?? defaultValue
        guard choices.contains(choice) else {
            throw UsageError("--\(name) must be \(choices.joined(separator: " or ")), not '\(choice)'")
        }
        return choice
    }
}

/// The command line was wrong: printed with the usage to stderr, exit status 2.
struct UsageError: Error, CustomStringConvertible {
    let description: String
    /// Whether this is `--help` in an option's place: the subcommand's usage is printed, exit 0.
    private(set) var isHelpRequest = false
    init(_ description: String) { self.description = description }

    static var helpRequested: UsageError {
        var error = UsageError("help requested")
        error.isHelpRequest = true
        return error
    }
}
