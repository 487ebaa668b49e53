import KeelCore

/// One difference between two versions of a contract, judged for an installed client.
public struct ContractChange: Sendable, Hashable, Codable, CustomStringConvertible {
    /// How much an installed client built against the base can suffer from it.
    public enum Severity: String, Sendable, Codable, Comparable, CaseIterable {
        /// Harmless to installed clients.
        case info
        /// Not breaking by itself, but suspicious (e.g. breaking changes without a major version bump).
        case warning
        /// An installed client can fail against the revision.
        case breaking

        /// Orders by harm: `info` < `warning` < `breaking`.
        public static func < (lhs: Severity, rhs: Severity) -> Bool {
            allCases.firstIndex(of: lhs)! < allCases.firstIndex(of: rhs)!
        }
    }

    /// A stable kebab-case rule id (oasdiff-style names where one exists).
    public let rule: String
    /// How much the change can hurt an installed client built against the base.
    public let severity: Severity
    /// The path template (`/notes/{id}`), when the change is inside one.
    public let path: String?
    /// The method (`GET`), when the change is inside an operation.
    public let method: String?
    /// The response status, when the change is inside a response.
    public let status: String?
    /// A JSON pointer into the schema (`/properties/kind`), when the change is inside one.
    public let pointer: String?
    /// One line of explanation.
    public let message: String
    /// Where the change happens: the file of the revision and the JSON pointer of the schema that changed
    /// (`notes-api.yaml#/components/schemas/Visibility`). One change to a shared schema reaches many
    /// operations; their findings share this origin, and reports group by it. A shared component is an
    /// origin too: a parameter of `components/parameters` (`…#/components/parameters/Limit`), a schema
    /// written inline in one (`…/Limit/schema`) or in `components/responses`, a response of
    /// `components/responses` that operations now answer with (`…#/components/responses/Maintenance`). Nil
    /// when the change is not inside anything shared (an operation's own inline schema or parameter, the
    /// document).
    public let origin: String?
    /// What changed, without the place it is seen from (`new value "c" of a closed enum`, ` may now be
    /// null`): with ``rule`` and ``origin``, the root cause a report groups by. The message names the place
    /// (`response property /properties/charge/properties/amount …`), which differs between the ways into one
    /// shared schema.
    let cause: String

    private enum CodingKeys: String, CodingKey {
        case rule, severity, path, method, status, pointer, message, origin
    }

    init(
        rule: String, severity: Severity, path: String?, method: String?, status: String?, pointer: String?,
        message: String, origin: String? = nil, cause: String? = nil
    ) {
        self.rule = rule
        self.severity = severity
        self.path = path
        self.method = method
        self.status = status
        self.pointer = pointer
        self.message = message
        self.origin = origin
        self.cause = cause ?? message
    }

    /// Decodes a finding written by ``encode(to:)``; its cause is its message.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            rule: try container.decode(String.self, forKey: .rule),
            severity: try container.decode(Severity.self, forKey: .severity),
            path: try container.decodeIfPresent(String.self, forKey: .path),
            method: try container.decodeIfPresent(String.self, forKey: .method),
            status: try container.decodeIfPresent(String.self, forKey: .status),
            pointer: try container.decodeIfPresent(String.self, forKey: .pointer),
            message: try container.decode(String.self, forKey: .message),
            origin: try container.decodeIfPresent(String.self, forKey: .origin))
    }

    /// Encodes every member, `null` where a finding has no path, method, status, pointer or origin, so a
    /// tool can read each key of every finding.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(rule, forKey: .rule)
        try container.encode(severity, forKey: .severity)
        try container.encode(path, forKey: .path)
        try container.encode(method, forKey: .method)
        try container.encode(status, forKey: .status)
        try container.encode(pointer, forKey: .pointer)
        try container.encode(message, forKey: .message)
        try container.encode(origin, forKey: .origin)
    }

    /// One line for reports: the severity in capitals, the rule id, the location (method, path, `→ status`,
    /// schema pointer, or `(document)` when there is none) and the message. A control character from the
    /// description (in a path or a member name) is written as an escape, so the line stays one line.
    public var description: String {
        let location = [method, path, status.map { "→ \($0)" }, pointer].compactMap { $0 }.joined(separator: " ")
        return TerminalText.oneLine(
            "\(severity.rawValue.uppercased())  \(rule)  \(location.isEmpty ? "(document)" : location)  \(message)")
    }
}
