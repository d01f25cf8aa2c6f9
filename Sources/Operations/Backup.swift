package import Clocks
import DatabaseEngine
import ReceiptCore
import Storage

/// A consistent copy of the database while receiptd serves (SQLite's online backup API), checked
/// with `PRAGMA integrity_check` before it is reported good.
package struct Backup: Sendable {
    package struct Report: Sendable, Equatable {
        package var pages: Int
        package var milliseconds: Int64
        /// `ok`, or what SQLite found wrong with the copy.
        package var integrity: String
        package var isGood: Bool { integrity == "ok" }
    }

    let path: String
    let busyTimeout: Duration
    let monotonic: any MonotonicClock

    package init(path: String, busyTimeout: Duration, monotonic: any MonotonicClock = SystemMonotonicClock()) {
        self.path = path
        self.busyTimeout = busyTimeout
        self.monotonic = monotonic
    }

    /// Copies the database to `destination`, which must not exist (a backup never overwrites).
    package func callAsFunction(to destination: String) throws -> Report {
        let started = monotonic.now
        let database = try Database(path: path, busyTimeout: busyTimeout)
        let pages = try database.backup(to: destination)
        let check = try Database(path: destination).scalarText("PRAGMA integrity_check") ?? "?"
        return Report(pages: pages, milliseconds: (monotonic.now - started).milliseconds, integrity: check)
    }
}
