/// Markdown tables as Keel's reports print them (the inventory, the navigation contract).
package enum MarkdownTable {
    /// `text` as one table cell: a `|` is escaped (`\|`), so that it does not end the cell, and a line break
    /// or another control character becomes a space, so that the row stays on one line (a purpose written
    /// over two lines would otherwise break the table there).
    package static func cell(_ text: String) -> String {
        var result = ""
        result.unicodeScalars.reserveCapacity(text.unicodeScalars.count)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "|": result += "\\|"
            case _ where scalar.properties.generalCategory == .control: result += " "
            case "\u{2028}", "\u{2029}": result += " "
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result
    }

    /// One row: `| a | b |`, each cell escaped by ``cell(_:)``.
    package static func row(_ cells: [String]) -> String {
        "| " + cells.map(cell).joined(separator: " | ") + " |"
    }
}
