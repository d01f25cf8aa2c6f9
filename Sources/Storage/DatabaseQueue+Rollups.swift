package import CoreMetrics
package import DatabaseEngine

extension DatabaseQueue {
    /// Opens the SQLite database at `path` with the chart rollups' file beside it
    /// (``RollupStore/file``): see ``DatabaseQueue/init(path:busyTimeout:metrics:readers:attaching:)``.
    package convenience init(
        path: String, busyTimeout: Duration = .seconds(5), metrics: any MetricsFactory = NOOPMetricsHandler.instance,
        readers: Int = 2
    ) throws(StorageError) {
        try self.init(path: path, busyTimeout: busyTimeout, metrics: metrics, readers: readers, attaching: RollupStore.file)
    }

    /// The file SQLite's chart rollups live in, beside the database at `path`
    /// (`data/receiptd.sqlite`: `data/receiptd-rollups.sqlite`). It holds only what the rollup
    /// keeper derives: a backup need not hold it, and a lost one is made again and rebuilt.
    package static func rollupsPath(for path: String) -> String { RollupStore.file.path(beside: path) }
}
