import Clocks
import DatabaseEngine
package import Entitlements
import Foundation
import Logging
import Storage

/// Promotional entitlements (Docs/console.md "Promotional entitlements"): support gives a subscriber an
/// entitlement for a while, or takes it back. Each is a stored fact (``PromotionStore``) with who
/// and why; the document, explanation, events and webhooks follow from it as from a purchase.
package struct PromoteSubscriber: UseCase, Sendable {
    package let context: UseCaseContext
    /// The document after each change, read as a GET reads it (and cached).
    let read: ReadSubscriber

    package init(context: UseCaseContext, read: ReadSubscriber) {
        self.context = context
        self.read = read
    }

    /// How long a grant lasts: a calendar duration from now, or an end.
    package enum Term: Sendable, Equatable {
        case duration(CalendarDuration)
        case until(Int64)
    }

    /// The longest grant: ten years, so a typo cannot give a lifetime.
    static let longest = CalendarDuration(iso8601: "P10Y")!

    /// Gives `appUserID` (created when unknown) `entitlement` from now for `term`.
    package func grant(
        _ entitlement: String, to appUserID: String, for term: Term, reason: String, by asker: String
    ) async throws(ReceiptError) -> (snapshot: SubscriberSnapshot, promotion: Promotion) {
        _ = try FieldRules.appUserID(appUserID)
        try Self.check(entitlement: entitlement, reason: reason)
        let now = clock.now()
        let end: Int64
        switch term {
        case .duration(let d): end = d.added(to: now)
        case .until(let t): end = t
        }
        guard end > now else { throw .invalidRequest("The promotion would end before it starts.") }
        guard end <= Self.longest.added(to: now) else { throw .invalidRequest("A promotion lasts ten years at most.") }
        let granted: (appUserID: String, promotion: Promotion)
        do {
            granted = try await database.write { db in
                try PromotionStore(db).grant(entitlement, to: appUserID, until: end, by: asker, reason: reason, now: now)
            }
        } catch {
            logger.error("a promotion could not be stored; nothing changed", metadata: ["error": "\(error)"])
            throw .internalFault
        }
        logger.notice(
            "a promotional entitlement was granted",
            metadata: ["entitlement": "\(entitlement)", "promotion": "\(granted.promotion.id)", "by": "\(asker)"])
        return (try await read.document(granted.appUserID), granted.promotion)
    }

    /// Ends `appUserID`'s promotions of `entitlement` now. Throws ``ReceiptError/subscriberNotFound``
    /// or ``ReceiptError/promotionNotFound`` (none running) and then changes nothing.
    package func revoke(
        _ entitlement: String, of appUserID: String, reason: String?, by asker: String
    ) async throws(ReceiptError) -> (snapshot: SubscriberSnapshot, revoked: [Promotion]) {
        _ = try FieldRules.appUserID(appUserID)
        try Self.check(entitlement: entitlement, reason: reason ?? "-")
        let now = clock.now()
        let revoked: (appUserID: String, revoked: [Promotion])?
        do {
            revoked = try await database.write { db in
                try PromotionStore(db).revoke(entitlement, of: appUserID, by: asker, reason: reason, now: now)
            }
        } catch {
            logger.error("a promotion could not be revoked; nothing changed", metadata: ["error": "\(error)"])
            throw .internalFault
        }
        guard let revoked else { throw .subscriberNotFound }
        guard !revoked.revoked.isEmpty else { throw .promotionNotFound }
        logger.notice(
            "a promotional entitlement was revoked",
            metadata: ["entitlement": "\(entitlement)", "promotions": "\(revoked.revoked.count)", "by": "\(asker)"])
        return (try await read.document(revoked.appUserID), revoked.revoked)
    }

    /// An entitlement's name: 1 to 100 bytes without control characters.
    package static func check(entitlement: String) throws(ReceiptError) {
        guard !entitlement.isEmpty, entitlement.utf8.count <= 100,
            !entitlement.unicodeScalars.contains(where: { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) })
        else { throw .invalidRequest("The entitlement name must be 1 to 100 bytes without control characters.") }
    }

    static func check(entitlement: String, reason: String) throws(ReceiptError) {
        try check(entitlement: entitlement)
        guard !reason.trimmingCharacters(in: .whitespaces).isEmpty, reason.utf8.count <= 500 else {
            throw .invalidRequest("`reason` is required: 1 to 500 bytes saying why.")
        }
    }
}
