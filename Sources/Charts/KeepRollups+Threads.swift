import Analytics
import Dispatch
import Identifiers
import Storage
import Synchronization

extension KeepRollups {
    /// ``update(_:kept:settings:rates:writtenAt:)`` on up to `threads` threads: the holders dealt
    /// into as many parts, each part's update computed on a thread of its own (a holder's rows are
    /// their ledger's alone), then merged as one: the sums' differences added together, the
    /// moments in the order a chart reads them.
    static func update(
        _ ledgers: [Identifier: Ledger], kept: [Identifier: String], settings: AnalyticsSettings, rates: ExchangeRates,
        writtenAt: Int64, threads: Int
    ) throws -> Update {
        let users = ledgers.keys.sorted()
        let n = min(threads, users.count)
        guard n > 1 else { return try update(ledgers, kept: kept, settings: settings, rates: rates, writtenAt: writtenAt) }
        let parts = (0..<n).map { i in
            Dictionary(uniqueKeysWithValues: stride(from: i, to: users.count, by: n).map { (users[$0], ledgers[users[$0]]!) })
        }
        let done = Mutex<[Int: Result<Update, any Error>]>([:])
        DispatchQueue.concurrentPerform(iterations: n) { i in
            let part = Result { try update(parts[i], kept: kept, settings: settings, rates: rates, writtenAt: writtenAt) }
            done.withLock { $0[i] = part }
        }
        var merged = Update()
        var differences = RollupSums()
        for i in 0..<n {
            let part = try done.withLock { $0[i]! }.get()
            differences.add(part.differences, oneGroup: [:], sign: 1)
            merged.rows += part.rows
            merged.moments += part.moments
            merged.marked += part.marked
            merged.unmarked += part.unmarked
        }
        merged.moments.sort(by: RollupStore.MomentRow.inReadingOrder)
        merged.rows.sort { Identifier($0.appUserID) < Identifier($1.appUserID) }
        merged.marked.sort { Identifier($0.appUserID) < Identifier($1.appUserID) }
        merged.unmarked.sort { Identifier($0.appUserID) < Identifier($1.appUserID) }
        merged.sortMarks()
        merged.differences = differences.rows()
        return merged
    }
}
