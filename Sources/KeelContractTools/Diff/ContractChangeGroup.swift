import KeelCore

/// Findings of ``ContractDiff`` that share a root cause: the same rule and the same change (the message
/// without the place it is seen from) at the same ``ContractChange/origin`` (one change to a shared schema,
/// reached by many operations and responses). Two changes to one schema under the same rule — two new
/// values of one enum — are two root causes, each named in its own entry. A finding without an origin is a
/// group of its own.
public struct ContractChangeGroup: Sendable, Hashable {
    /// The occurrences, in the diff's order.
    public let changes: [ContractChange]

    /// The rule.
    public var rule: String { changes[0].rule }
    /// The severity.
    public var severity: ContractChange.Severity { changes[0].severity }
    /// The shared origin (nil for a single finding without one).
    public var origin: String? { changes[0].origin }
    /// How many distinct operations (method and path; a path-level finding counts its path) the root cause
    /// reaches: 0 for a finding about the document as a whole (`breaking-changes-without-major-version-bump`).
    public var operations: Int {
        Set(changes.compactMap { change in change.path.map { "\(change.method ?? "") \($0)" } }).count
    }

    /// `changes` grouped by rule, origin and cause; breaking first, then warnings, then info, each by the number of
    /// operations reached (most first), then in the diff's order.
    public static func grouping(_ changes: [ContractChange]) -> [ContractChangeGroup] {
        var order: [String] = []
        var members: [String: [ContractChange]] = [:]
        for (index, change) in changes.enumerated() {
            let key = change.origin.map { change.rule + " " + $0 + " " + change.cause } ?? "#\(index)"
            if members[key] == nil { order.append(key) }
            members[key, default: []].append(change)
        }
        let groups = order.enumerated().map {
            let group = ContractChangeGroup(changes: members[$0.element]!)
            return (index: $0.offset, operations: group.operations, group: group)
        }
        return groups.sorted { lhs, rhs in
            if lhs.group.severity != rhs.group.severity { return lhs.group.severity > rhs.group.severity }
            if lhs.operations != rhs.operations { return lhs.operations > rhs.operations }
            return lhs.index < rhs.index
        }.map(\.group)
    }

    /// The occurrences, the most direct first: by the length of the pointer, then in the diff's order (a
    /// change reached through expandable fields also has a place where it is the body's own member).
    public var mostDirectFirst: [ContractChange] {
        let lengths: [Int] = changes.map { $0.pointer?.utf8.count ?? 0 }
        return changes.indices.sorted { (lengths[$0], $0) < (lengths[$1], $1) }.map { changes[$0] }
    }

    /// The report lines: a single finding as its ``ContractChange/description``; a group as one line with
    /// the origin, the message and the counts, then its places (the first three unless `verbose`),
    /// ``mostDirectFirst``.
    public func text(verbose: Bool) -> String {
        guard changes.count > 1, let origin else { return changes.map { $0.description + "\n" }.joined() }
        let direct = mostDirectFirst
        var text =
            TerminalText.oneLine(
                "\(severity.rawValue.uppercased())  \(rule)  \(origin)  \(direct[0].message)  "
                    + "(\(operations) operation\(operations == 1 ? "" : "s"), \(changes.count) places)") + "\n"
        let shown = verbose ? direct : Array(direct.prefix(3))
        for change in shown {
            let place = [change.method, change.path, change.status.map { "→ \($0)" }, change.pointer].compactMap { $0 }
                .joined(separator: " ")
            text += "    \(TerminalText.oneLine(place.isEmpty ? "(document)" : place))\n"
        }
        if shown.count < changes.count { text += "    … \(changes.count - shown.count) more (--verbose lists all)\n" }
        return text
    }
}
