import Clocks
import CoreMetrics
import DatabaseEngine
import Entitlements
package import GooglePlay
import Logging
package import ReceiptCore
import ServiceLifecycle
import Storage
import Workers

/// Google Play's twin of Apple's notification catch-up: the Voided Purchases API read at start and
/// on an interval, per app, from a little before where the last read ended (never more than 30
/// days back, all Google keeps), so refunds, chargebacks and revocations missed while receiptd was
/// down (or whose notification was lost) are applied: each listed order stored here is marked
/// refunded from Google's time, and its token, when known, is asked of Google again so the
/// subscription's state follows. Orders receiptd never stored are skipped (nobody holds them).
package struct CatchUpVoidedPurchases: UseCase, Sendable {
    package struct Settings: Sendable, Equatable {
        package var enabled: Bool
        package var intervalMs: Int64
        /// How far before the last read's end each read starts.
        package var overlapMs: Int64
        /// Where the first read starts: at most 30 days back.
        package var lookbackMs: Int64

        package init(
            enabled: Bool = true, intervalMs: Int64 = 3_600_000, overlapMs: Int64 = 3_600_000, lookbackMs: Int64 = 30 * 86_400_000
        ) {
            self.enabled = enabled
            self.intervalMs = intervalMs
            self.overlapMs = overlapMs
            self.lookbackMs = min(lookbackMs, Self.googleKeepsMs)
        }

        /// Google lists voided purchases of the last 30 days.
        static let googleKeepsMs: Int64 = 30 * 86_400_000
    }

    /// What one read did over every app.
    package struct Summary: Sendable, Equatable {
        package var listed = 0
        /// Orders marked refunded now.
        package var applied = 0
        /// Listed orders receiptd never stored.
        package var unknown = 0
        /// Apps whose list could not be read (logged): read again next time.
        package var failed = 0
    }

    let api: PlayDeveloperAPI?
    let settings: Settings
    let packages: [String]
    package let context: UseCaseContext

    package init(context: UseCaseContext, api: PlayDeveloperAPI?, settings: Settings, packages: [String]) {
        self.api = api
        self.settings = settings
        self.packages = packages
        self.context = context
    }

    package func run() async {
        let enabled = settings.enabled && api != nil && !packages.isEmpty
        await Periodic(everyMs: settings.intervalMs, enabled: enabled, monotonic: monotonic).run { [self] in
            let summary = await catchUp()
            if summary.listed > 0 || summary.failed > 0 {
                logger.info(
                    "voided purchases catch-up",
                    metadata: [
                        "listed": "\(summary.listed)", "applied": "\(summary.applied)", "unknown": "\(summary.unknown)",
                        "failed": "\(summary.failed)",
                    ])
            }
        }
    }

    /// One read of every app's voided purchases, up to now.
    package func catchUp() async -> Summary {
        var summary = Summary()
        guard let api else { return summary }
        let now = clock.now()
        for name in packages {
            guard let package = PlayIdentifier(name, .packageName) else { continue }
            do {
                let until = try await database.read { db in try PlayStore(db).voidedUntil(name) }
                let start = max(now - settings.lookbackMs, (until ?? (now - settings.lookbackMs)) - settings.overlapMs)
                var page: String?
                repeat {
                    let (entries, next) = try await api.voidedPurchases(package: package, start: start, end: now, pageToken: page)
                    for entry in entries {
                        summary.listed += 1
                        if try await apply(entry, package: package, api: api) {
                            summary.applied += 1
                        } else {
                            summary.unknown += 1
                        }
                    }
                    page = next
                } while page != nil
                try await database.write { db in try PlayStore(db).setVoidedUntil(name, now) }
            } catch {
                summary.failed += 1
                logger.warning(
                    "the Voided Purchases API could not be read", metadata: ["package": "\(name)", "reason": "\(error)"])
            }
        }
        Counter(label: "google_play_voided_total", dimensions: [("outcome", "applied")], factory: metrics)
            .increment(by: summary.applied)
        Counter(label: "google_play_voided_total", dimensions: [("outcome", "unknown")], factory: metrics)
            .increment(by: summary.unknown)
        return summary
    }

    /// Marks the order refunded; then, when receiptd keeps the token, asks Google for the
    /// purchase's state and saves it for its holder. Whether the order was stored here.
    func apply(_ entry: VoidedPurchase, package: PlayIdentifier, api: PlayDeveloperAPI) async throws -> Bool {
        let at = clock.now()
        let reference = PurchaseTokenReference.of(entry.purchaseToken)
        let (found, changed, token) = try await database.write { [state, policy] db in
            var voided: (found: Bool, changed: [String]) = (false, [])
            if let order = entry.orderID {
                voided = try PlaySave(state: state, policy: policy).void(orderID: order, at: entry.voidedTime, in: db, now: at)
            }
            return (voided.found, voided.changed, try PlayStore(db).token(reference))
        }
        var settle = changed
        if let token, let tokenID = PlayIdentifier(token.purchaseToken, .purchaseToken) {
            do {
                let resource: PlayRecord.Resource =
                    token.kind == .subscription
                    ? .subscription(try await api.subscription(package: package, token: tokenID))
                    : .product(try await api.product(package: package, token: tokenID))
                let saved = try await database.write { [state, policy] db -> [String] in
                    let holder = try PlayStore(db).holder(of: reference)
                    let outcome = try PlaySave(state: state, policy: policy).save(
                        resource, token: token.purchaseToken, package: package.text, for: holder, consume: false, in: db, now: at)
                    if case .stored(_, let users) = outcome { return users }
                    return []
                }
                settle += saved
            } catch {
                // The refund is stored; the state follows at the next read, notification or refresh.
                logger.notice("a voided purchase's state could not be read again", metadata: ["reason": "\(error)"])
            }
        }
        await state.settleStored(settle, database: database, now: at, logger: logger, after: "voided purchase")
        return found
    }
}

extension CatchUpVoidedPurchases: Service {}
