package import AppStore
import Clocks
import CoreMetrics
import DatabaseEngine
package import Entitlements
import JSON
import Logging
package import ReceiptCore
import ServiceLifecycle
import Storage
import Workers

/// Recovers App Store Server Notifications receiptd missed (down, unreachable, Apple gave up): at
/// start and every `intervalMs`, Get Notification History for each configured app and environment
/// from the newest V2 notification stored (minus `overlapMs`, for deliveries still in flight) to
/// now, each one applied through ``IngestNotification`` exactly as if Apple had delivered it. The
/// store deduplicates by `notificationUUID`, so what was already applied is not applied again.
/// `receiptd backfill` runs the same over a given period.
package final class NotificationCatchUp: UseCase, Sendable {
    package struct Settings: Sendable, Equatable {
        package var enabled: Bool
        /// Time between catch-ups.
        package var intervalMs: Int64
        /// How far before the newest stored notification each catch-up starts.
        package var overlapMs: Int64
        /// Where the first catch-up starts when no notification is stored yet.
        package var lookbackMs: Int64

        package init(
            enabled: Bool = true, intervalMs: Int64 = 3_600_000, overlapMs: Int64 = 3_600_000,
            lookbackMs: Int64 = 7 * 86_400_000
        ) {
            self.enabled = enabled
            self.intervalMs = intervalMs
            self.overlapMs = overlapMs
            self.lookbackMs = lookbackMs
        }
    }

    /// What one catch-up did, over every app and environment.
    package struct Summary: Sendable, Equatable {
        /// Notifications Apple listed.
        package var listed = 0
        /// Stored now for the first time (then applied, recorded or waiting for their owner).
        package var stored = 0
        /// Already stored: delivered before, or listed by an earlier catch-up.
        package var duplicates = 0
        /// Refused by verification (logged): never stored.
        package var refused = 0
        /// Apps and environments whose history could not be read (logged): tried again next time.
        package var failed = 0
    }

    /// Apple keeps notification history for 180 days (§4.3): nothing older is asked for.
    static let historyDays: Int64 = 180

    let settings: Settings
    private let serverAPI: ServerAPIClient?
    private let ingest: IngestNotification
    package let context: UseCaseContext
    private let bundleIDs: [String]
    private let environments: [StoreEnvironment]

    package init(
        context: UseCaseContext, settings: Settings, serverAPI: ServerAPIClient?, ingest: IngestNotification, bundleIDs: [String],
        environments: [StoreEnvironment]
    ) {
        self.settings = settings
        self.serverAPI = serverAPI
        self.ingest = ingest
        self.context = context
        self.bundleIDs = bundleIDs
        self.environments = environments
    }

    /// Catches up at start, then every `intervalMs`, until the service group shuts down. A no-op
    /// without an App Store Server API key or with `enabled` off.
    package func run() async {
        await Periodic(everyMs: settings.intervalMs, enabled: settings.enabled && serverAPI != nil, monotonic: monotonic).run {
            [self] in
            let summary = await catchUp()
            if summary.listed > 0 || summary.failed > 0 {
                logger.info(
                    "notification catch-up",
                    metadata: [
                        "listed": "\(summary.listed)", "stored": "\(summary.stored)", "duplicates": "\(summary.duplicates)",
                        "refused": "\(summary.refused)", "failed": "\(summary.failed)",
                    ])
            }
        }
    }

    /// One catch-up: from `since` (nil: the newest stored notification minus the overlap, or the
    /// lookback when none is stored) to `until` (nil: now), epoch ms, for every app and environment.
    package func catchUp(since: Int64? = nil, until: Int64? = nil) async -> Summary {
        var summary = Summary()
        guard let serverAPI else { return summary }
        let now = clock.now()
        let end = min(until ?? now, now)
        let oldest = now - Self.historyDays * 86_400_000
        for bundleID in bundleIDs {
            for environment in environments {
                var start: Int64
                if let since {
                    start = since
                } else {
                    do {
                        let newest = try await database.read { db in
                            try NotificationStore(db).newestSigned(bundleID: bundleID, environment: environment.rawValue)
                        }
                        start = newest.map { $0 - settings.overlapMs } ?? now - settings.lookbackMs
                    } catch {
                        logger.error("catch-up: cannot read the newest notification", metadata: ["error": "\(error)"])
                        summary.failed += 1
                        continue
                    }
                }
                start = max(start, oldest)
                guard start < end else { continue }
                await page(
                    serverAPI, bundleID: bundleID, environment: environment, from: start, to: end, into: &summary)
            }
        }
        for (outcome, n) in [
            ("stored", summary.stored), ("duplicate", summary.duplicates), ("refused", summary.refused),
            ("failed", summary.failed),
        ] where n > 0 {
            Counter(label: "notification_catch_up_total", dimensions: [("outcome", outcome)], factory: metrics)
                .increment(by: n)
        }
        return summary
    }

    /// Every page of one app's history in one environment, each notification ingested in order.
    private func page(
        _ serverAPI: ServerAPIClient, bundleID: String, environment: StoreEnvironment, from start: Int64, to end: Int64,
        into summary: inout Summary
    ) async {
        var token: String?
        repeat {
            let page: ServerAPIClient.NotificationHistoryPage
            do {
                page = try await serverAPI.notificationHistory(
                    bundleID: bundleID, environment: environment, startDate: start, endDate: end, paginationToken: token)
            } catch {
                logger.warning(
                    "catch-up: Get Notification History failed",
                    metadata: ["bundle_id": "\(bundleID)", "environment": "\(environment.rawValue)", "error": "\(error)"])
                summary.failed += 1
                return
            }
            for payload in page.signedPayloads {
                summary.listed += 1
                do {
                    let outcome = try await ingest(JSONValue.object(["signedPayload": .string(payload)]).jsonBytes)
                    if outcome.duplicate { summary.duplicates += 1 } else { summary.stored += 1 }
                } catch {
                    logger.warning("catch-up: a listed notification was refused", metadata: ["code": "\(error.code)"])
                    summary.refused += 1
                }
            }
            token = page.hasMore ? page.paginationToken : nil
        } while token != nil && !Task.isCancelled
    }
}

extension NotificationCatchUp: Service {}
