import Foundation

/// `keel-bench --report FILE.svg`: every benchmark's ratio against its goal, one bar each, readable at a
/// glance. Bars share one linear scale from 0, sized to the benchmarks that have a ratio goal (a benchmark
/// without one, such as `contract.generate` at 30×, would otherwise squeeze every other bar into the first
/// tenth); a bar past the scale is cut and marked `//`. The goal is a dark tick on each row; a bar is green
/// when the ratio meets its goal, red when it misses, grey when the goal is not a ratio.
enum Report {
    static func svg(_ results: [Measurement], title: String) -> String {
        let rowHeight = 34.0
        let labelWidth = 230.0
        let chartWidth = 520.0
        let valueWidth = 190.0
        let top = 64.0
        let width = labelWidth + chartWidth + valueWidth + 20
        let height = top + Double(results.count) * rowHeight + 48
        let judged = results.filter { $0.goalRatio != nil }
        let largest = (judged.isEmpty ? results : judged).flatMap { [$0.ratio, $0.goalRatio ?? 0] }.max() ?? 1
        let scaleMaximum = niceCeiling(max(largest * 1.1, 1.2))
        func x(_ ratio: Double) -> Double { labelWidth + chartWidth * min(ratio, scaleMaximum) / scaleMaximum }

        var parts: [String] = []
        parts.append(
            """
            <svg xmlns="http://www.w3.org/2000/svg" width="\(Int(width))" height="\(Int(height))" \
            viewBox="0 0 \(Int(width)) \(Int(height))" font-family="Helvetica, Arial, sans-serif" font-size="13">
            <rect width="100%" height="100%" fill="#ffffff"/>
            <text x="16" y="26" font-size="17" font-weight="bold">\(escape(title))</text>
            <text x="16" y="46" fill="#555555">ratio = candidate / baseline in the same run (lower is better); \
            tick = goal; green meets it, red misses it; // on a bar: it runs past the scale</text>
            """)
        // Grid: one line per 0.5 (or 1, 2, 5 when the scale is wide).
        let step = scaleMaximum <= 3 ? 0.5 : scaleMaximum <= 6 ? 1 : scaleMaximum <= 15 ? 2 : 5
        var mark = 0.0
        while mark <= scaleMaximum + 1e-9 {
            let position = x(mark)
            let bottom = top + Double(results.count) * rowHeight
            parts.append(
                "<line x1=\"\(f(position))\" y1=\"\(f(top - 6))\" x2=\"\(f(position))\" y2=\"\(f(bottom))\" "
                    + "stroke=\"\(mark == 1 ? "#888888" : "#e2e2e2")\" stroke-width=\"1\"/>")
            parts.append(
                "<text x=\"\(f(position))\" y=\"\(f(bottom + 18))\" text-anchor=\"middle\" fill=\"#555555\">"
                    + "\(trim(mark))×</text>")
            mark += step
        }
        for (index, result) in results.enumerated() {
            let y = top + Double(index) * rowHeight
            let meets = result.goalRatio.map { result.ratio <= $0 }
            let color = meets.map { $0 ? "#2e9d4f" : "#d23c3c" } ?? "#9a9a9a"
            parts.append(
                "<text x=\"\(f(labelWidth - 10))\" y=\"\(f(y + 21))\" text-anchor=\"end\">\(escape(result.name))</text>"
            )
            parts.append(
                "<rect x=\"\(f(labelWidth))\" y=\"\(f(y + 7))\" width=\"\(f(max(1, x(result.ratio) - labelWidth)))\" "
                    + "height=\"20\" fill=\"\(color)\" rx=\"2\"/>")
            if result.ratio > scaleMaximum {
                // Cut: a white double slash near the end of the bar.
                let end = x(scaleMaximum)
                for offset in [18.0, 12.0] {
                    parts.append(
                        "<line x1=\"\(f(end - offset))\" y1=\"\(f(y + 29))\" x2=\"\(f(end - offset + 6))\" "
                            + "y2=\"\(f(y + 5))\" stroke=\"#ffffff\" stroke-width=\"3\"/>")
                }
            }
            if let goal = result.goalRatio {
                parts.append(
                    "<line x1=\"\(f(x(goal)))\" y1=\"\(f(y + 2))\" x2=\"\(f(x(goal)))\" y2=\"\(f(y + 32))\" "
                        + "stroke=\"#222222\" stroke-width=\"3\"/>")
            }
            let verdict =
                result.goalRatio.map { goal in
                    "(goal ≤ \(trim(goal)))" + (result.ratio <= goal ? "" : " missed")
                } ?? "(no ratio goal)"
            parts.append(
                "<text x=\"\(f(labelWidth + chartWidth + 12))\" y=\"\(f(y + 21))\" fill=\"\(color)\">"
                    + "<tspan font-weight=\"bold\">\(String(format: "%.3f", result.ratio))</tspan> \(verdict)</text>")
        }
        parts.append("</svg>")
        return parts.joined(separator: "\n") + "\n"
    }

    private static func niceCeiling(_ value: Double) -> Double {
        for candidate in [1.5, 2, 2.5, 3, 4, 5, 6, 8, 10, 15, 20, 30, 50, 100] where value <= candidate {
            return candidate
        }
        return (value / 100).rounded(.up) * 100
    }

    private static func f(_ value: Double) -> String { String(format: "%.1f", value) }

    private static func trim(_ value: Double) -> String {
        value == value.rounded() ? String(Int(value)) : String(format: "%g", value)
    }

    private static func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;")
    }
}
