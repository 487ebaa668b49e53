/// One result row: column names and values, in order.
public struct Row: Sendable, Equatable, CustomStringConvertible {
    /// The column names.
    public let columns: [String]
    /// The values, one per column.
    public let values: [DatabaseValue]

    /// The value of the first column named `name`, or nil when there is no such column.
    public subscript(_ name: String) -> DatabaseValue? {
        columns.firstIndex(of: name).map { values[$0] }
    }

    /// The value of column `name` as `T`; nil when the column is missing or does not hold a `T`.
    public func get<T: DatabaseValueConvertible>(_ name: String, as type: T.Type = T.self) -> T? {
        self[name].flatMap(T.fromDatabaseValue)
    }

    public var description: String {
        zip(columns, values).map { "\($0)=\($1)" }.joined(separator: " ")
    }
}
