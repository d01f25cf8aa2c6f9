extension Statement {
    /// The column as an integer, nil when NULL.
    package func optionalInt(_ column: Int32) -> Int64? { isNull(column) ? nil : int(column) }

    /// The first column of the first row as an integer; nil when there is no row or it is NULL.
    package func firstInt() throws -> Int64? { try step() ? optionalInt(0) : nil }

    /// The first column of the first row as text; nil when there is no row or it is NULL.
    package func firstText() throws -> String? { try step() ? text(0) : nil }
}
