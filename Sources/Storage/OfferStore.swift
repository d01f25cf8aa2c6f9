package import DatabaseEngine

/// One signature receiptd issued for a customer's offer (`offer_signatures`): the audit of who got
/// which offer, when, by which key, at whose request.
package struct OfferSignatureRecord: Sendable, Equatable {
    package var id: Int64
    package var appUserID: String
    /// `promotional` or `introductory`.
    package var kind: String
    package var productID: String
    package var offerID: String?
    /// `v1` or `jws`.
    package var format: String
    package var keyID: String
    package var nonce: String
    /// For an introductory decision: whether it allowed the offer (a promotional one: always true).
    package var allowed: Bool
    package var requestedBy: String
    package var issuedAt: Int64

    package init(
        id: Int64 = 0, appUserID: String, kind: String, productID: String, offerID: String?, format: String, keyID: String,
        nonce: String, allowed: Bool, requestedBy: String, issuedAt: Int64
    ) {
        self.id = id
        self.appUserID = appUserID
        self.kind = kind
        self.productID = productID
        self.offerID = offerID
        self.format = format
        self.keyID = keyID
        self.nonce = nonce
        self.allowed = allowed
        self.requestedBy = requestedBy
        self.issuedAt = issuedAt
    }
}

/// The offers' audit (`offer_signatures`, Migrations/0025_offers.sql).
package struct OfferStore {
    let db: Database

    package init(_ db: Database) { self.db = db }

    package func record(_ r: OfferSignatureRecord) throws {
        try db.cached(
            """
            INSERT INTO offer_signatures (app_user_id, kind, product_id, offer_id, format, key_id, nonce, allowed, requested_by,
                issued_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """
        ).bind([
            r.appUserID, r.kind, r.productID, r.offerID, r.format, r.keyID, r.nonce, Int64(r.allowed ? 1 : 0), r.requestedBy,
            r.issuedAt,
        ]).run()
    }

    /// When `offerID` was given to any of `ids` (a person's canonical id and aliases).
    package func issued(_ offerID: String, to ids: [String]) throws -> [Int64] {
        guard !ids.isEmpty else { return [] }
        let q = try db.cached(
            """
            SELECT issued_at FROM offer_signatures WHERE offer_id = ? AND kind = 'promotional'
                AND app_user_id IN (\(Array(repeating: "?", count: ids.count).joined(separator: ", ")))
            ORDER BY issued_at
            """
        ).bind([offerID] + ids)
        var times: [Int64] = []
        while try q.step() { times.append(q.int(0)) }
        return times
    }

    /// A person's signatures, newest first.
    package func signatures(of ids: [String], limit: Int) throws -> [OfferSignatureRecord] {
        guard !ids.isEmpty else { return [] }
        let q = try db.cached(
            """
            SELECT id, app_user_id, kind, product_id, offer_id, format, key_id, nonce, allowed, requested_by, issued_at
            FROM offer_signatures WHERE app_user_id IN (\(Array(repeating: "?", count: ids.count).joined(separator: ", ")))
            ORDER BY issued_at DESC, id DESC LIMIT ?
            """
        ).bind(ids + [Int64(limit)])
        var rows: [OfferSignatureRecord] = []
        while try q.step() {
            rows.append(
                OfferSignatureRecord(
                    id: q.int(0), appUserID: q.text(1)!, kind: q.text(2)!, productID: q.text(3)!, offerID: q.text(4),
                    format: q.text(5)!, keyID: q.text(6)!, nonce: q.text(7)!, allowed: q.int(8) == 1, requestedBy: q.text(9)!,
                    issuedAt: q.int(10)))
        }
        return rows
    }

    /// How many signatures any of `ids` was given since `since` (the per-customer pace).
    /// Promotional offers ever signed for the person under `ids`.
    package func promotionalCount(of ids: [String]) throws -> Int {
        guard !ids.isEmpty else { return 0 }
        let q = try db.cached(
            """
            SELECT count(*) FROM offer_signatures
            WHERE kind = 'promotional' AND app_user_id IN (\(Array(repeating: "?", count: ids.count).joined(separator: ", ")))
            """
        ).bind(ids)
        return Int(try q.firstInt() ?? 0)
    }

    /// Apple's `subscriptionGroupIdentifier`s stated on stored transactions of `products` (any
    /// customer's): what a group named in Config/offers.json is called on Apple's side, so a
    /// purchase of a product the file does not list is still found in its group.
    package func appleGroupIDs(of products: [String]) throws -> Set<String> {
        let q = try db.cached(
            "SELECT DISTINCT subscription_group_id FROM transactions WHERE product_id = ? AND subscription_group_id IS NOT NULL")
        var ids: Set<String> = []
        for product in products {
            _ = try q.bind([product])
            while try q.step() { ids.insert(q.text(0)!) }
        }
        return ids
    }

    package func count(of ids: [String], since: Int64) throws -> Int {
        guard !ids.isEmpty else { return 0 }
        let q = try db.cached(
            """
            SELECT count(*) FROM offer_signatures
            WHERE issued_at >= ? AND app_user_id IN (\(Array(repeating: "?", count: ids.count).joined(separator: ", ")))
            """
        ).bind([since] + ids)
        return Int(try q.firstInt() ?? 0)
    }
}
