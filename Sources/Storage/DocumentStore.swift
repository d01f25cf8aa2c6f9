package import DatabaseEngine

/// Each subscriber's document kept rendered in their `subscribers` row (Migrations/0041), so that
/// a read whose document is still true is one indexed row: the bytes as they were written, with
/// `request_date`'s value to put in.
///
/// Exact, not approximate: a kept document is read only while
/// - its derivation has seen their newest facts (`derived_revision = facts_revision`; every change
///   of facts clears it, ``ReceiptStore/factsChanged(_:at:)``);
/// - it was derived with the entitlement settings the reader has (their fingerprint); and
/// - the reader's `now` lies in `[document_at, summary_until)`: with the same facts a document
///   reads the same until the next instant its derivation compares with.
/// It is written by the statement that records the fingerprint and version it shows
/// (``ReceiptStore/settle(_:hash:derivedFrom:version:now:document:)``), or, for a row settled
/// before documents were kept, by ``keep(_:_:derivedAt:)``.
package struct DocumentStore {
    private let db: Database

    package init(_ db: Database) { self.db = db }

    /// A document as kept: its JSON without `request_date`'s value, which goes at byte `cut`.
    package struct Kept: Sendable, Equatable {
        package var version: Int64
        package var json: [UInt8]
        package var cut: Int
        /// When it was derived, and until when it reads the same.
        package var derivedAt: Int64
        package var until: Int64

        package init(version: Int64, json: [UInt8], cut: Int, derivedAt: Int64, until: Int64) {
            self.version = version
            self.json = json
            self.cut = cut
            self.derivedAt = derivedAt
            self.until = until
        }
    }

    /// A document to keep: its JSON without `request_date`'s value, which goes at byte `cut`,
    /// the version it shows, and the fingerprint of the settings it was derived under.
    package struct Rendering: Sendable {
        package var version: Int64
        package var json: [UInt8]
        package var cut: Int
        package var settings: String

        package init(version: Int64, json: [UInt8], cut: Int, settings: String) {
            self.version = version
            self.json = json
            self.cut = cut
            self.settings = settings
        }
    }

    /// `appUserID`'s kept document if it still describes them at `now` under the settings
    /// `settings`; nil otherwise (no row, an alias, behind their facts, derived under other
    /// settings, or not true at `now`).
    package func kept(_ appUserID: String, settings: String, now: Int64) throws -> Kept? {
        let q = try db.cached(
            """
            SELECT version, document, document_cut, document_at, summary_until FROM subscribers
            WHERE app_user_id = ? AND document_settings = ? AND derived_revision = facts_revision
            """
        ).bind([appUserID, settings])
        defer { q.reset() }
        guard try q.step(), let json = q.bytes(1) else { return nil }
        let kept = Kept(version: q.int(0), json: json, cut: Int(q.int(2)), derivedAt: q.int(3), until: q.int(4))
        guard kept.derivedAt <= now, now < kept.until, (0...json.count).contains(kept.cut) else { return nil }
        return kept
    }

    /// Drops `appUserID`'s kept document, in the caller's transaction.
    package func forget(_ appUserID: String) throws {
        try db.cached("UPDATE subscribers SET document = NULL, document_settings = NULL WHERE app_user_id = ?")
            .bind([appUserID]).runLater()
    }

    /// Keeps `document` (rendered at `derivedAt`) as `appUserID`'s, in the caller's transaction,
    /// if their row still shows the version it shows, derived from their newest facts (else
    /// nothing): for a settled row that had none, or one derived under other settings.
    package func keep(_ appUserID: String, _ document: Rendering, derivedAt: Int64) throws {
        try db.cached(
            """
            UPDATE subscribers SET document = ?, document_cut = ?, document_at = ?, document_settings = ?
            WHERE app_user_id = ? AND version = ? AND derived_revision = facts_revision
            """
        ).bind([
            String(decoding: document.json, as: UTF8.self), Int64(document.cut), derivedAt, document.settings, appUserID,
            document.version,
        ]).runLater()
    }
}
