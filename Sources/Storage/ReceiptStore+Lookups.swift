package import DatabaseEngine
package import Entitlements
import Identifiers

// Finding stored purchases and who holds them: by transaction, order, original, appAccountToken.
extension ReceiptStore {
    /// One stored transaction, with its app; nil when unknown.
    package func purchase(_ transactionID: String) throws -> Stated<Purchase>? {
        let q = try db.cached("SELECT \(Self.transactionColumns("t")) FROM transactions t WHERE t.transaction_id = ?")
            .bind([transactionID])
        return try q.step() ? Self.purchase(q) : nil
    }

    /// The latest expiry among a subscription's stored periods that end no later than `before`
    /// (nil: any): where the period after them began, when its store names no start.
    package func latestExpiry(of originalTransactionID: String, before: Int64?) throws -> Int64? {
        try db.cached(
            "SELECT max(expires_date) FROM transactions WHERE original_transaction_id = ? AND expires_date <= ?"
        ).bind([originalTransactionID, before ?? .max]).firstInt()
    }

    /// A Google Play order's stored periods: the order's own and its add-ons' (`<order>/<product>`).
    package func playOrder(_ orderID: String) throws -> [Stated<Purchase>] {
        let q = try db.cached(
            """
            SELECT \(Self.transactionColumns("t")) FROM transactions t WHERE t.store = 'play_store'
                AND (t.transaction_id = ?1 OR substr(t.transaction_id, 1, length(?1) + 1) = ?1 || '/')
            """
        ).bind([orderID])
        var found: [Stated<Purchase>] = []
        while try q.step() { found.append(Self.purchase(q)) }
        return found
    }

    /// Removes a Google Play token's placeholder periods (named by its reference while its
    /// payment was pending: `GPT.…`, and `GPT.…/<product>` for an add-on) that its newest read no
    /// longer states, once an order paid for them.
    package func forgetPlaceholders(of reference: String, keeping: [String]) throws {
        guard !keeping.contains(reference) else { return }
        try db.cached(
            """
            DELETE FROM transactions WHERE store = 'play_store'
                AND (transaction_id = ?1 OR substr(transaction_id, 1, length(?1) + 1) = ?1 || '/')
            """
        ).bind([reference]).run()
    }

    /// The app of an original transaction's purchases; nil when none is stored.
    package func bundleID(ofOriginal originalTransactionID: String) throws -> String? {
        let q = try db.cached("SELECT bundle_id FROM transactions WHERE original_transaction_id = ? LIMIT 1")
            .bind([originalTransactionID])
        defer { q.reset() }
        return try q.step() ? q.text(0) : nil
    }

    /// Who holds an original transaction now.
    package func owner(of originalTransactionID: String) throws -> String? {
        let q = try db.cached("SELECT app_user_id FROM ownership WHERE original_transaction_id = ?").bind([originalTransactionID]
        )
        return try q.step() ? q.text(0) : nil
    }

    /// Who holds each of `originals` now, in their order (nil: nobody): one statement (on
    /// PostgreSQL one round trip) for up to ``ownersWidths``' last, where a save asked one each.
    package func owners(of originals: [String]) throws -> [String?] {
        var holders: [Identifier: String] = [:]
        var start = 0
        while start < originals.count {
            let chunk = originals[start..<min(start + Self.ownersWidths.last!, originals.count)]
            let q = try ownersRead(chunk)
            while try q.step() { holders[Identifier(q.text(0)!)] = q.text(1)! }
            start += chunk.count
        }
        return originals.map { holders[Identifier($0)] }
    }

    /// ``owners(of:)``'s read, bound, when it is one statement (nil for none or more): a caller
    /// may send it ahead with others (``Database/prefetch(_:)``), and the first ``owners(of:)``
    /// of the same ids then steps through what it read.
    package func ownersRead(of originals: [String]) throws -> Statement? {
        guard !originals.isEmpty, originals.count <= Self.ownersWidths.last! else { return nil }
        return try ownersRead(originals[...])
    }

    private func ownersRead(_ chunk: ArraySlice<String>) throws -> Statement {
        let width = Self.ownersWidths.firstIndex { $0 >= chunk.count }!
        // Filled out with the last id: a repeat changes nothing an `IN` finds.
        let values: [(any StatementValue)?] =
            Array(chunk) + Array(repeating: chunk.last!, count: Self.ownersWidths[width] - chunk.count)
        return try db.cached(Self.ownersSQL[width]).bind(values)
    }

    /// The list widths ``owners(of:)`` binds, and their statements, written once.
    static let ownersWidths = [1, 2, 4, 8, 16, 32, 64]
    static let ownersSQL = ownersWidths.map { width in
        "SELECT original_transaction_id, app_user_id FROM ownership WHERE original_transaction_id IN ("
            + Array(repeating: "?", count: width).joined(separator: ", ") + ")"
    }

    /// The subscriber an `appAccountToken` points at: one whose id or alias is that UUID (any case),
    /// or whose token receiptd made it (`appStore.setAppAccountTokens`), else the holder of a
    /// purchase made with it.
    package func subscriber(forAccountToken token: String) throws -> String? {
        if let named = try subscriber(namedByToken: token) { return named }
        let uuid = Self.isUUID(token)
        let byPurchase = try db.cached(
            """
            SELECT o.app_user_id FROM transactions t JOIN ownership o ON o.original_transaction_id = t.original_transaction_id
            WHERE t.app_account_token = ? OR t.app_account_token = ? LIMIT 1
            """
        ).bind([uuid ? token.lowercased() : token, token])
        return try byPurchase.step() ? byPurchase.text(0) : nil
    }

    /// The subscriber an `appAccountToken` names outright: their id or an alias is that UUID (any
    /// case), or it is the token receiptd made for them; nil when it names nobody (the app's own
    /// token, say).
    package func subscriber(namedByToken token: String) throws -> String? {
        guard Self.isUUID(token) else {
            // Not a UUID: exact bytes only (a Play account id `Bob` never names `bob`).
            if try isSubscriber(token) { return token }
            return try db.cached("SELECT app_user_id FROM aliases WHERE alias = ?").bind([token]).firstText()
        }
        let byID = try db.cached("SELECT app_user_id FROM subscribers WHERE lower(app_user_id) = lower(?) LIMIT 1").bind([token])
        if try byID.step() { return byID.text(0) }
        let byAlias = try db.cached("SELECT app_user_id FROM aliases WHERE lower(alias) = lower(?) LIMIT 1").bind([token])
        if try byAlias.step() { return byAlias.text(0) }
        return try db.cached("SELECT app_user_id FROM subscribers WHERE app_account_token = lower(?)").bind([token]).firstText()
    }
}

// When a person was first heard of.
extension ReceiptStore {
    /// When the subscriber `canonicalID` was first seen (epoch ms): their row's creation, or the
    /// earliest of an id merged into it; nil when there is no such row.
    package func firstSeen(_ canonicalID: String) throws -> Int64? {
        try db.cached("SELECT coalesce(first_seen_at, created_at) FROM subscribers WHERE app_user_id = ?").bind([canonicalID])
            .firstInt()
    }
}
