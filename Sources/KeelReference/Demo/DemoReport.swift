import Foundation

/// How ``NotesDemo`` reads for people: the timeline as text lines (printed as it runs) and the whole report
/// as one self-contained HTML page.
extension NotesDemo {
    /// The short titles of the requirements the demo shows (`../shared/REQUIREMENTS.md`).
    public static let requirementTitles: [String: String] = [
        "MOB-API-001": "Versioned contract",
        "MOB-API-002": "Timeout, cancellation, retry",
        "MOB-API-003": "Network state and the user-visible result",
        "MOB-API-004": "Correlation and background requests",
        "MOB-API-005": "Support of the installed version",
        "MOB-PLAT-005": "Restoring UI state",
        "MOB-PLAT-008": "System navigation contract",
        "MOB-DATA-004": "Offline scenario contract",
        "MOB-DATA-005": "Conflicts and re-synchronization",
        "MOB-DATA-006": "Isolation between accounts",
    ]

    /// The lines an event prints in the timeline.
    public static func lines(for event: Event) -> [String] {
        switch event {
        case .backend(let url): return ["keel backend listening on \(url.absoluteString)"]
        case .scenario(let number, let total, let scenario):
            return [
                "", "[\(number)/\(total)] \(scenario.title)",
                "      demonstrates \(scenario.requirements.joined(separator: ", "))",
            ]
        case .action(let text): return ["      · \(text)"]
        case .verified(let check):
            guard !check.held else { return ["      ✓ \(check.claim)"] }
            return [
                "      ✗ \(check.claim)", "          expected: \(check.expected)", "          seen:     \(check.seen)",
            ]
        case .aborted(let reason): return ["      ✗ stopped: \(reason)"]
        }
    }

    /// The closing table: each requirement, the scenarios that show it, their checks.
    public static func summary(_ report: Report) -> [String] {
        var lines = ["", "Requirements demonstrated"]
        for (requirement, outcomes) in report.requirements {
            let checks = report.verifications(for: requirement)
            let held = checks.filter(\.held).count
            let passed = report.demonstrated(requirement)
            let title = requirementTitles[requirement] ?? ""
            lines.append(
                "  \(passed ? "✓" : "✗") \(requirement.padding(toLength: 13, withPad: " ", startingAt: 0))"
                    + "\(title.padding(toLength: 44, withPad: " ", startingAt: 0))"
                    + "\(held)/\(checks.count) checks  (\(outcomes.map(\.scenario.id).joined(separator: ", ")))")
        }
        let checks = report.outcomes.flatMap(\.verifications)
        let failed = checks.filter { !$0.held }.count
        let stopped = report.outcomes.filter { $0.abortion != nil }.count
        let seconds = String(format: "%.1f", report.duration.inSeconds)
        lines.append("")
        if report.passed {
            lines.append("\(report.outcomes.count) scenarios, \(checks.count) checks, every one held (\(seconds) s).")
        } else {
            var problems: [String] = []
            if failed > 0 { problems.append("\(failed) of \(checks.count) checks did not hold") }
            if stopped > 0 { problems.append("\(stopped) of \(report.outcomes.count) scenarios stopped early") }
            lines.append(problems.joined(separator: "; ") + " (\(seconds) s): see ✗ above.")
        }
        return lines
    }

    /// The report as one HTML page with no external assets.
    public static func html(_ report: Report) -> String {
        func escape(_ text: String) -> String {
            text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
                .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
        }
        let checks = report.outcomes.flatMap(\.verifications)
        var body = """
            <h1>keel demo</h1>
            <p class="lead">The reference notes app (<code>keel-notes</code>, real processes on two devices) against \
            the reference backend (<code>keel backend</code> on loopback). Every claim below was checked against \
            what the backend and the app reported.</p>
            <p class="verdict \(report.passed ? "ok" : "bad")">\(report.passed ? "Every check held" : "Some checks did not hold"): \
            \(checks.filter(\.held).count) of \(checks.count), \(report.outcomes.count) scenarios, \
            \(String(format: "%.1f", report.duration.inSeconds)) s.</p>
            <h2>Requirements demonstrated</h2>
            <table><thead><tr><th>Requirement</th><th>Title</th><th>Scenarios</th><th>Checks</th></tr></thead><tbody>

            """
        for (requirement, outcomes) in report.requirements {
            let all = report.verifications(for: requirement)
            let passed = report.demonstrated(requirement)
            body += """
                <tr class="\(passed ? "ok" : "bad")"><td><code>\(requirement)</code></td>\
                <td>\(escape(requirementTitles[requirement] ?? ""))</td>\
                <td>\(outcomes.map { "<a href=\"#\($0.scenario.id)\">\(escape($0.scenario.id))</a>" }.joined(separator: ", "))</td>\
                <td>\(passed ? "✓" : "✗") \(all.filter(\.held).count)/\(all.count)</td></tr>

                """
        }
        body += "</tbody></table>\n<h2>Timeline</h2>\n"
        for (index, outcome) in report.outcomes.enumerated() {
            body += """
                <section id="\(escape(outcome.scenario.id))" class="\(outcome.passed ? "ok" : "bad")">
                <h3>\(index + 1). \(escape(outcome.scenario.title))</h3>
                <p class="req">\(outcome.scenario.requirements.map { "<code>\($0)</code>" }.joined(separator: " "))</p>
                <ol>

                """
            for event in outcome.timeline {
                switch event {
                case .action(let text): body += "<li class=\"action\"><code>\(escape(text))</code></li>\n"
                case .verified(let check) where check.held:
                    body += "<li class=\"check ok\">✓ \(escape(check.claim))</li>\n"
                case .verified(let check):
                    body += """
                        <li class="check bad">✗ \(escape(check.claim))<br><span>expected: \(escape(check.expected))\
                        </span><br><span>seen: \(escape(check.seen))</span></li>

                        """
                case .aborted(let reason): body += "<li class=\"check bad\">✗ stopped: \(escape(reason))</li>\n"
                case .backend, .scenario: break
                }
            }
            if let abortion = outcome.abortion,
                !outcome.timeline.contains(where: { if case .aborted = $0 { true } else { false } })
            {
                body += "<li class=\"check bad\">✗ stopped: \(escape(abortion))</li>\n"
            }
            body += "</ol>\n</section>\n"
        }
        return """
            <!doctype html>
            <html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
            <title>keel demo — \(report.passed ? "every check held" : "checks failed")</title>
            <style>
            body{font:15px/1.5 -apple-system,system-ui,"Segoe UI",Roboto,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#1d232b;background:#fbfbfa}
            h1{font-size:1.8rem;margin:0 0 .3rem}h2{margin-top:2rem;border-bottom:1px solid #d8dde3;padding-bottom:.2rem}
            h3{margin:.2rem 0}.lead{color:#4a5562}code{font:13px/1.4 ui-monospace,Menlo,Consolas,monospace}
            .verdict{font-weight:600;padding:.6rem .9rem;border-radius:6px}.verdict.ok{background:#e3f4e8;color:#175c2c}
            .verdict.bad{background:#fbe4e4;color:#8a1c1c}table{border-collapse:collapse;width:100%}
            th,td{text-align:left;padding:.35rem .6rem;border-bottom:1px solid #e4e7eb;vertical-align:top}
            tr.bad td{background:#fdf0f0}section{background:#fff;border:1px solid #e1e5ea;border-left:4px solid #2f8f4e;border-radius:6px;padding:.7rem 1rem;margin:1rem 0}
            section.bad{border-left-color:#c0392b}.req{margin:0 0 .4rem;color:#4a5562}ol{list-style:none;padding:0;margin:0}
            li{padding:.12rem 0}li.action code{color:#4a5562}li.check.ok{color:#175c2c}li.check.bad{color:#8a1c1c;font-weight:600}
            li.check.bad span{font-weight:400;font-family:ui-monospace,Menlo,Consolas,monospace;font-size:13px}
            </style></head><body>
            \(body)</body></html>

            """
    }
}
