import Analytics
import ReceiptCore
import Synchronization

/// The loaded exchange rates as last parsed, with the revision they were read at
/// (`rates_revision`, which every import that changes a rate moves): reading and
/// parsing every rate was a fifth of a drill-down page's time, and a rollup keeper's step read
/// them all each second.
final class ParsedRates: Sendable {
    private let last = Mutex<(revision: Int64, rates: ExchangeRates)?>(nil)

    /// The rates at `revision`: those parsed before when their revision is the same, else
    /// `read()`'s, kept for next time.
    func rates(revision: Int64, read: () throws -> ExchangeRates) rethrows -> ExchangeRates {
        if let parsed = last.withLock({ $0 }), parsed.revision == revision { return parsed.rates }
        let rates = try read()
        last.withLock { $0 = (revision, rates) }
        return rates
    }
}
