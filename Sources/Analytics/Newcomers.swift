import Entitlements
import Identifiers

/// A person as the customers' charts count them (RevenueCat's "customer": anyone using the app,
/// whether or not they bought anything). First seen at the earliest of when receiptd first heard
/// of them (``Ledger/Customer``) and their first purchase; counted in the environments of their
/// purchases and AppTransactions (production when they have neither); of the app and store of
/// their first purchase, else of their AppTransaction.
struct Newcomer {
    var appUserID: String
    var firstSeen: Int64
    var bundleID: String
    var store: Store
    /// Their transactions the filters admit, oldest first.
    var entries: [Ledger.Entry]
    /// Their first purchase (of any environment or filter): what their group is of.
    var first: Ledger.Entry?

    /// The customer's value of a dimension: their first purchase's, else (for someone who bought
    /// nothing) their AppTransaction's app, or `unknown`.
    func value(of dimension: ChartDimension) -> String {
        if let first { return first.value(of: dimension) }
        return dimension == .app && !bundleID.isEmpty ? bundleID : ChartDimension.unknown
    }

    /// The people of a ledger the filters admit, in byte order of their ids. Only the environment
    /// and the app decide who is a customer (a product, storefront or store is a purchase's, which
    /// someone who bought nothing has not): those filters choose among their transactions.
    static func newcomers(_ ledger: Ledger, admitted: [Ledger.Entry], filters: ChartFilters) -> [Newcomer] {
        var all: [Identifier: [Ledger.Entry]] = [:]
        for e in ledger.entries { all[Identifier(e.appUserID), default: []].append(e) }
        var kept: [Identifier: [Ledger.Entry]] = [:]
        for e in admitted { kept[Identifier(e.appUserID), default: []].append(e) }
        let seen = firstSeen(in: ledger)
        var newcomers: [Newcomer] = []
        for (user, firstSeen) in seen.sorted(by: { $0.key < $1.key }) {
            let held = (all[user] ?? []).filter { $0.purchase.purchaseDate != nil }
            let first = held.min { Purchase.chronological($0.purchase, $1.purchase) }
            let customer = ledger.customers[user]
            var environments = Set(held.map(\.purchase.environment.rawValue)).union(customer?.environments ?? [])
            if environments.isEmpty { environments = ["production"] }
            let bundleID = first?.bundleID ?? customer?.bundleID ?? ""
            guard environments.contains(filters.environment), filters.app.map({ bundleID.isExactly($0) }) ?? true else {
                continue
            }
            newcomers.append(
                Newcomer(
                    appUserID: user.string, firstSeen: firstSeen, bundleID: bundleID, store: first?.purchase.store ?? .appStore,
                    entries: kept[user] ?? [], first: first))
        }
        return newcomers
    }

    /// When everyone in a ledger was first seen, whatever the filters: the earliest of their
    /// customer record and their first purchase.
    static func firstSeen(in ledger: Ledger) -> [Identifier: Int64] {
        var seen = ledger.customers.mapValues(\.firstSeen)
        for e in ledger.entries {
            guard let at = e.purchase.purchaseDate else { continue }
            let user = Identifier(e.appUserID)
            seen[user] = min(seen[user] ?? at, at)
        }
        return seen
    }

    /// Their first transactions of a kind within a window, as each stands in turn: the first
    /// counts until it is refunded, then the next, and so on (a trial is never refunded). Each
    /// (by its index in `entries`) with the clocks at which it is the one that counts,
    /// [since, until); none once one stands for good. How one stands depends on those before it
    /// alone.
    static func standing(_ entries: [Ledger.Entry]) -> [(Int, (Int64, Int64))] {
        var out: [(Int, (Int64, Int64))] = []
        var since = Int64.min
        for (i, e) in entries.enumerated() {
            let until = e.purchase.isFreeTrial || !e.purchase.isRefunded ? .max : e.purchase.cancellationDate ?? .max
            if since < until { out.append((i, (since, until))) }
            if until == .max { break }
            since = max(since, until)
        }
        return out
    }
}

extension Purchase {
    /// A payment: anything bought that is not a free trial or a family member's copy (a
    /// subscription period, an introductory price, a one-time product).
    var isPayment: Bool { purchaseDate != nil && !isFreeTrial && !isFamilyShared }
}

extension Ledger.Entry {
    /// Its value of a dimension a chart is split by: `unknown` for a sale with no storefront.
    func value(of dimension: ChartDimension) -> String {
        switch dimension {
        case .country: purchase.commerce.storefront ?? ChartDimension.unknown
        case .store: purchase.store.rawValue
        case .product: purchase.productID
        case .app: bundleID
        case .environment: purchase.environment.rawValue
        case .reason: ChartDimension.unknown  // a refund request's, not a transaction's
        }
    }
}
