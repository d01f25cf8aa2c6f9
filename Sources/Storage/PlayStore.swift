package import DatabaseEngine

/// A Google Play purchase token as receiptd keeps it (`play_tokens`).
package struct PlayToken: Sendable, Equatable {
    package enum Kind: String, Sendable {
        case subscription
        case product
    }

    /// `GPT.…`: how facts, logs and the console name it.
    package var reference: String
    /// The token itself: only to ask Google again. Never logged.
    package var purchaseToken: String
    package var packageName: String
    package var kind: Kind
    /// The product of its first line item (the acknowledge and consume calls name it).
    package var productID: String
    /// The original transaction id of its facts.
    package var chain: String
    package var linkedReference: String?
    /// The app user who posted the token, when it was posted (not learnt from a notification):
    /// its holder while Google names no order for it (``PlayStore/holder(of:)``).
    package var postedBy: String?

    package init(
        reference: String, purchaseToken: String, packageName: String, kind: Kind, productID: String, chain: String,
        linkedReference: String? = nil, postedBy: String? = nil
    ) {
        self.postedBy = postedBy
        self.reference = reference
        self.purchaseToken = purchaseToken
        self.packageName = packageName
        self.kind = kind
        self.productID = productID
        self.chain = chain
        self.linkedReference = linkedReference
    }
}

/// One call Google is owed for a token: an acknowledgement, or a consumption.
package struct PlayChore: Sendable, Equatable {
    package enum Kind: String, Sendable, CaseIterable {
        case acknowledge
        case consume
    }

    package var kind: Kind
    package var token: PlayToken
    /// Attempts made before this one.
    package var attempts: Int

    package init(kind: Kind, token: PlayToken, attempts: Int) {
        self.kind = kind
        self.token = token
        self.attempts = attempts
    }
}

/// Google Play's purchase tokens (`play_tokens`): which subscription each continues, and the
/// calls Google is owed for them (Migrations/0024_google_play.sql), as durable queues.
package struct PlayStore {
    let db: Database

    package init(_ db: Database) { self.db = db }

    static let columns = "reference, purchase_token, package_name, kind, product_id, chain, linked_reference"

    static func token(_ s: Statement, from c: Int32 = 0) -> PlayToken {
        PlayToken(
            reference: s.text(c)!, purchaseToken: s.text(c + 1)!, packageName: s.text(c + 2)!,
            kind: PlayToken.Kind(rawValue: s.text(c + 3)!) ?? .subscription, productID: s.text(c + 4)!, chain: s.text(c + 5)!,
            linkedReference: s.text(c + 6))
    }

    package func token(_ reference: String) throws -> PlayToken? {
        let q = try db.cached("SELECT \(Self.columns) FROM play_tokens WHERE reference = ?").bind([reference])
        return try q.step() ? Self.token(q) : nil
    }

    /// The subscription a token continues: its own when known; else that of the token it
    /// replaced (`linked`); else that of a newer token which replaced it (seen first); else the
    /// replaced token's reference, or its own. So every token of a `linkedPurchaseToken` chain
    /// lands in one subscription whichever of them receiptd sees first, once each link is seen.
    package func chain(of reference: String, linkedTo linked: String?) throws -> String {
        if let known = try token(reference) { return known.chain }
        if let linked, let earlier = try token(linked) { return earlier.chain }
        let newer = try db.cached("SELECT chain FROM play_tokens WHERE linked_reference = ? LIMIT 1").bind([reference])
        if try newer.step(), let chain = newer.text(0) { return chain }
        return linked ?? reference
    }

    /// What Google says of a purchase's acknowledgement when it is read.
    package enum Acknowledgement: Sendable {
        /// Google has it.
        case done
        /// Google waits for it: queued unless receiptd already made it.
        case owed
        /// Nothing to acknowledge yet (a payment still pending): Google refuses it until paid.
        case notYet
    }

    /// Records a token (or its newest read) with the calls Google is owed: the acknowledgement as
    /// `acknowledgement` says, a consumption when `consume` and none was made. A call already
    /// queued keeps its place.
    package func remember(_ t: PlayToken, acknowledgement: Acknowledgement, consume: Bool, now: Int64) throws {
        try db.cached(
            """
            INSERT INTO play_tokens (reference, purchase_token, package_name, kind, product_id, chain, linked_reference,
                first_seen_at, updated_at, ack_due_at, acknowledged_at, consume_due_at, posted_by)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (reference) DO UPDATE SET updated_at = excluded.updated_at, product_id = excluded.product_id,
                posted_by = coalesce(excluded.posted_by, play_tokens.posted_by),
                linked_reference = coalesce(play_tokens.linked_reference, excluded.linked_reference),
                ack_due_at = CASE WHEN excluded.ack_due_at IS NULL OR play_tokens.acknowledged_at IS NOT NULL THEN NULL
                                  ELSE coalesce(play_tokens.ack_due_at, excluded.ack_due_at) END,
                acknowledged_at = coalesce(play_tokens.acknowledged_at, excluded.acknowledged_at),
                consume_due_at = CASE WHEN play_tokens.consumed_at IS NOT NULL THEN NULL
                                      ELSE coalesce(play_tokens.consume_due_at, excluded.consume_due_at) END
            """
        ).bind([
            t.reference, t.purchaseToken, t.packageName, t.kind.rawValue, t.productID, t.chain, t.linkedReference, now, now,
            acknowledgement == .owed ? now : nil, acknowledgement == .done ? now : nil, consume ? now : nil, t.postedBy,
        ]).run()
    }

    /// Claims up to `limit` calls due at `now` until `now + leaseMs`: none another worker holds,
    /// the longest due first. A claim left by a process that died simply runs out.
    package func claim(now: Int64, leaseMs: Int64, limit: Int) throws -> [PlayChore] {
        var chores: [PlayChore] = []
        // A consumption first: it acknowledges too, so a consumable needs no other call.
        for kind in [PlayChore.Kind.consume, .acknowledge] {
            let (due, attempts) = kind == .acknowledge ? ("ack_due_at", "ack_attempts") : ("consume_due_at", "consume_attempts")
            let q = try db.cached(
                """
                SELECT \(Self.columns), \(attempts) FROM play_tokens
                WHERE \(due) <= ? AND (lease_until IS NULL OR lease_until <= ?) ORDER BY \(due) LIMIT ?
                """
            ).bind([now, now, Int64(limit)])
            var found: [PlayChore] = []
            while try q.step() { found.append(PlayChore(kind: kind, token: Self.token(q), attempts: Int(q.int(7)))) }
            let take = try db.cached(
                "UPDATE play_tokens SET lease_until = ? WHERE reference = ? AND (lease_until IS NULL OR lease_until <= ?)")
            for chore in found where chores.count < limit {
                try take.bind([now + leaseMs, chore.token.reference, now]).run()
                if db.changes == 1 { chores.append(chore) }
            }
        }
        return chores
    }

    /// Google has it: the call is done, the lease let go.
    package func done(_ chore: PlayChore, at now: Int64) throws {
        let sql =
            switch chore.kind {
            case .acknowledge:
                "UPDATE play_tokens SET ack_due_at = NULL, acknowledged_at = ?, ack_last_error = NULL, lease_until = NULL WHERE reference = ?"
            case .consume:
                """
                UPDATE play_tokens SET consume_due_at = NULL, consumed_at = ?, consume_last_error = NULL,
                    ack_due_at = NULL, acknowledged_at = coalesce(acknowledged_at, ?1), lease_until = NULL
                WHERE reference = ?2
                """
            }
        try db.cached(sql).bind([now, chore.token.reference]).run()
    }

    /// The call failed: tried again at `retryAt`, or never when nil (Google refuses it for good).
    package func failed(_ chore: PlayChore, error: String, retryAt: Int64?) throws {
        let (due, attempts, last) =
            chore.kind == .acknowledge
            ? ("ack_due_at", "ack_attempts", "ack_last_error") : ("consume_due_at", "consume_attempts", "consume_last_error")
        try db.cached(
            "UPDATE play_tokens SET \(due) = ?, \(attempts) = \(attempts) + 1, \(last) = ?, lease_until = NULL WHERE reference = ?"
        ).bind([retryAt, String(error.prefix(200)), chore.token.reference]).run()
    }

    /// The queue's depth, for metrics and the console.
    package struct Backlog: Sendable, Equatable {
        /// Purchases waiting for their acknowledgement.
        package var unacknowledged: Int
        /// The longest waiting, since it was stored (epoch ms); nil when none waits.
        package var oldestUnacknowledgedSince: Int64?
        /// Acknowledgements that failed at least once.
        package var retrying: Int
        package var unconsumed: Int

        package init(unacknowledged: Int, oldestUnacknowledgedSince: Int64?, retrying: Int, unconsumed: Int) {
            self.unacknowledged = unacknowledged
            self.oldestUnacknowledgedSince = oldestUnacknowledgedSince
            self.retrying = retrying
            self.unconsumed = unconsumed
        }
    }

    package func backlog() throws -> Backlog {
        let q = try db.cached(
            """
            SELECT count(ack_due_at), min(CASE WHEN ack_due_at IS NOT NULL THEN first_seen_at END),
                   count(CASE WHEN ack_due_at IS NOT NULL AND ack_attempts > 0 THEN 1 END), count(consume_due_at)
            FROM play_tokens
            """
        ).bind([])
        _ = try q.step()
        return Backlog(
            unacknowledged: Int(q.int(0)), oldestUnacknowledgedSince: q.optionalInt(1), retrying: Int(q.int(2)),
            unconsumed: Int(q.int(3)))
    }

    // MARK: Notifications

    /// Whether a push message was already applied.
    package func notificationSeen(_ messageID: String) throws -> Bool {
        try db.cached("SELECT 1 FROM play_notifications WHERE message_id = ?").bind([messageID]).step()
    }

    /// Records a push message once; false when it already was (then nothing is written).
    package func recordNotification(
        messageID: String, packageName: String, type: String, tokenReference: String?, eventTime: Int64, receivedAt: Int64,
        outcome: String, appUserID: String?
    ) throws -> Bool {
        try db.cached(
            """
            INSERT INTO play_notifications (message_id, package_name, type, token_reference, event_time, received_at, outcome,
                app_user_id)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (message_id) DO NOTHING
            """
        ).bind([messageID, packageName, type, tokenReference, eventTime, receivedAt, outcome, appUserID]).run()
        return db.changes == 1
    }

    /// Who holds the purchase a token belongs to, when receiptd knows.
    package func holder(of reference: String) throws -> String? {
        let q = try db.cached(
            """
            SELECT o.app_user_id FROM play_tokens p JOIN ownership o ON o.original_transaction_id = p.chain
            WHERE p.reference = ?
            """
        ).bind([reference])
        if try q.step(), let held = q.text(0) {
            q.reset()
            return held
        }
        // Nobody holds what it states (a payment still pending when it was posted): who posted it.
        guard let poster = try db.cached("SELECT posted_by FROM play_tokens WHERE reference = ?").bind([reference]).firstText()
        else { return nil }
        return try ReceiptStore(db).canonical(poster)
    }

    // MARK: Catch-up

    /// Until when the Voided Purchases API has been read for `package`; nil: never.
    package func voidedUntil(_ package: String) throws -> Int64? {
        try db.cached("SELECT voided_until FROM play_catch_up WHERE package_name = ?").bind([package]).firstInt()
    }

    package func setVoidedUntil(_ package: String, _ until: Int64) throws {
        try db.cached(
            """
            INSERT INTO play_catch_up (package_name, voided_until) VALUES (?, ?)
            ON CONFLICT (package_name) DO UPDATE SET voided_until = excluded.voided_until
            """
        ).bind([package, until]).run()
    }

    /// A subscription's newest token: the one no other token of the chain replaced. An add-on's
    /// subscription (`<chain>/<product>`) is its base's token's.
    package func newestToken(ofChain subscription: String) throws -> PlayToken? {
        let chain = subscription.firstIndex(of: "/").map { String(subscription[..<$0]) } ?? subscription
        let q = try db.cached(
            """
            SELECT \(Self.columns) FROM play_tokens t WHERE t.chain = ?1
                AND NOT EXISTS (SELECT 1 FROM play_tokens n WHERE n.chain = ?1 AND n.linked_reference = t.reference)
            ORDER BY t.first_seen_at DESC, t.reference LIMIT 1
            """
        ).bind([chain])
        return try q.step() ? Self.token(q) : nil
    }

    /// Pushes received in [from, to), by type and outcome (the console's overview).
    package func notificationCounts(from: Int64, to: Int64) throws -> [(type: String, outcome: String, count: Int)] {
        let q = try db.cached(
            """
            SELECT type, outcome, count(*) FROM play_notifications WHERE received_at >= ? AND received_at < ?
            GROUP BY type, outcome ORDER BY type, outcome
            """
        ).bind([from, to])
        var rows: [(String, String, Int)] = []
        while try q.step() { rows.append((q.text(0)!, q.text(1)!, Int(q.int(2)))) }
        return rows
    }
}
