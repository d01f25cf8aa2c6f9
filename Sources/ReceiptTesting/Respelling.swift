package import Analytics
package import Entitlements
import Identifiers

/// A ledger's ids spelt again so that ids which differ become two spellings of one text: of
/// each kind of id in the ledger (people, original transactions, transactions, products,
/// subscription groups, apps), in byte order, the 2k-th and the (2k+1)-th become the kind's letter and k followed by
/// an é, composed (U+00E9) for the first and decomposed (e, U+0301) for the second. Swift's `String` holds the two equal (Unicode
/// canonical equivalence); the database, the stores and people's backends hold them apart, and so
/// must every figure: whatever is computed from the respelt ledger, its ids spelt back, is what
/// the ledger gives (Docs/api.md "Identifiers").
package struct Respelling: Sendable {
    private var forward: [Identifier: String] = [:]
    private var back: [Identifier: String] = [:]

    package init(_ ledger: Ledger, settings: AnalyticsSettings) {
        var people: Set<Identifier> = []
        var originals: Set<Identifier> = []
        var transactions: Set<Identifier> = []
        var products: Set<Identifier> = []
        var groups: Set<Identifier> = []
        var apps: Set<Identifier> = []
        func add(_ id: String?, to kind: inout Set<Identifier>) { if let id, !id.isEmpty { kind.insert(Identifier(id)) } }
        for e in ledger.entries {
            add(e.appUserID, to: &people)
            add(e.bundleID, to: &apps)
            add(e.purchase.transactionID, to: &transactions)
            add(e.purchase.originalTransactionID, to: &originals)
            add(e.purchase.productID, to: &products)
            add(e.purchase.subscriptionGroupID, to: &groups)
        }
        for (user, customer) in ledger.customers {
            add(user.string, to: &people)
            add(customer.bundleID, to: &apps)
        }
        for original in ledger.renewals.keys { add(original.string, to: &originals) }
        for r in ledger.refundRequests { add(r.transactionID, to: &transactions) }
        for product in settings.priceTable.keys { add(product.string, to: &products) }
        for app in settings.smallBusinessApps { add(app.string, to: &apps) }
        // Pairs within each kind, so that people, subscriptions, products and apps each meet
        // another spelling of themselves (an id of two kinds, an original transaction's, is
        // spelt as the first).
        let kinds = [("u", people), ("o", originals), ("t", transactions), ("p", products), ("g", groups), ("a", apps)]
        for (prefix, kind) in kinds {
            for (k, id) in kind.subtracting(forward.keys).sorted().enumerated() {
                let spelt = "\(prefix)\(k / 2)" + (k % 2 == 0 ? "\u{E9}" : "e\u{301}")
                forward[id] = spelt
                back[Identifier(spelt)] = id.string
            }
        }
    }

    /// `id` respelt (itself when it is not one of the ledger's).
    package func callAsFunction(_ id: String) -> String { forward[Identifier(id)] ?? id }

    /// A respelt id as it was.
    package func undo(_ id: String) -> String { back[Identifier(id)] ?? id }

    package func callAsFunction(_ ledger: Ledger) -> Ledger {
        var out = ledger
        for i in out.entries.indices {
            out.entries[i].appUserID = self(out.entries[i].appUserID)
            out.entries[i].bundleID = self(out.entries[i].bundleID)
            out.entries[i].purchase = self(out.entries[i].purchase)
        }
        out.customers = Dictionary(
            uniqueKeysWithValues: ledger.customers.map { user, customer in
                var customer = customer
                customer.bundleID = customer.bundleID.map { self($0) }
                return (Identifier(self(user.string)), customer)
            })
        out.renewals = Dictionary(uniqueKeysWithValues: ledger.renewals.map { (Identifier(self($0.key.string)), $0.value) })
        for i in out.refundRequests.indices {
            out.refundRequests[i].transactionID = self(out.refundRequests[i].transactionID)
        }
        return out
    }

    /// A purchase's ids respelt: its transaction, subscription, product and subscription group.
    package func callAsFunction(_ purchase: Purchase) -> Purchase {
        var p = purchase
        p.transactionID = self(p.transactionID)
        p.originalTransactionID = self(p.originalTransactionID)
        p.productID = self(p.productID)
        p.subscriptionGroupID = p.subscriptionGroupID.map { self($0) }
        return p
    }

    /// A store's facts respelt, as they are saved: each purchase's ids and app, each renewal's.
    package func callAsFunction(_ facts: VerifiedFacts) -> VerifiedFacts {
        var out = facts
        for i in out.purchases.indices {
            out.purchases[i].fact = self(out.purchases[i].fact)
            out.purchases[i].bundleID = out.purchases[i].bundleID.map { self($0) }
        }
        for i in out.renewals.indices {
            var r = out.renewals[i].fact
            r.originalTransactionID = self(r.originalTransactionID)
            r.productID = r.productID.map { self($0) }
            r.autoRenewProductID = r.autoRenewProductID.map { self($0) }
            out.renewals[i].fact = r
        }
        return out
    }

    /// Who holds each subscription (original transaction id → app user id), respelt: pairs, in
    /// byte order of the original, since a `String`-keyed dictionary would take a pair for one.
    package func callAsFunction(_ owners: [String: String]) -> [(original: String, user: String)] {
        owners.map { (self($0.key), self($0.value)) }.sorted { Identifier($0.0) < Identifier($1.0) }
    }

    package func callAsFunction(_ settings: AnalyticsSettings) -> AnalyticsSettings {
        var out = settings
        out.smallBusinessApps = Set(settings.smallBusinessApps.map { Identifier(self($0.string)) })
        out.priceTable = Dictionary(uniqueKeysWithValues: settings.priceTable.map { (Identifier(self($0.key.string)), $0.value) })
        return out
    }

    /// How many of `ids` `String` would take for one: the pairs this respelling made of them.
    package static func merged(_ ids: [String]) -> Int { Set(ids.map { Identifier($0) }).count - Set(ids).count }
}
