/// One result row: column names and values, in order.
///
/// ``decode(_:as:)`` tells the three ways a read can go wrong apart, with a typed error: the column does
/// not exist (``ErrorCode/missingColumn``, usually a typo or a schema the code does not expect), it is
/// NULL where a value was required (``ErrorCode/unexpectedNull``), or it holds another type
/// (``ErrorCode/mismatch``). ``get(_:as:)`` folds all three into nil, for the places where that is fine.
///
/// ```swift
/// let title: String = try row.decode("title")
/// let body: String? = try row.decode("body")      // NULL is nil; a missing column still throws
/// let created: Date = try row.decode("created_at")
/// ```
public struct Row: Sendable, Equatable, CustomStringConvertible {
    /// The column names.
    public let columns: [String]
    /// The values, one per column.
    public let values: [DatabaseValue]

    /// The value of the first column named `name`, or nil when there is no such column.
    public subscript(_ name: String) -> DatabaseValue? {
        columns.firstIndex(of: name).map { values[$0] }
    }

    /// The value of column `name` as `T`.
    ///
    /// Ask for an optional `T` where NULL is allowed: it decodes NULL as nil.
    ///
    /// - Throws: ``DatabaseError`` with code `missingColumn`, `unexpectedNull` or `mismatch`.
    public func decode<T: DatabaseValueConvertible>(_ name: String, as type: T.Type = T.self) throws(DatabaseError) -> T
    {
        guard let value = self[name] else {
            throw DatabaseError(
                code: .missingColumn, message: "no column \(name.debugDescription) in a row of \(columns)")
        }
        if let decoded = T.fromDatabaseValue(value) { return decoded }
        if value == .null {
            throw DatabaseError(
                code: .unexpectedNull, message: "column \(name.debugDescription) is NULL; \(T.self) expected")
        }
        throw DatabaseError(
            code: .mismatch, message: "column \(name.debugDescription) holds \(value.storageClass), not \(T.self)")
    }

    /// The value of column `name` as `T`; nil when the column is missing, NULL, or not a `T`.
    public func get<T: DatabaseValueConvertible>(_ name: String, as type: T.Type = T.self) -> T? {
        self[name].flatMap(T.fromDatabaseValue)
    }

    /// The row as `name=value` pairs, for logs and test failures.
    public var description: String {
        zip(columns, values).map { "\($0)=\($1)" }.joined(separator: " ")
    }
}
