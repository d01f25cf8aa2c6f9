package import Analytics
import DatabaseEngine
import Logging
package import ReceiptCore
import Storage

/// What one customer paid (`GET /v1/subscribers/{id}/money`): each of their transactions in an
/// environment with its price, refund, tax, commission and proceeds, by the revenue chart's rules
/// (``CustomerMoney``), and the totals per currency.
package struct ReadCustomerMoney: UseCase, Sendable {
    package let context: UseCaseContext
    let settings: AnalyticsSettings

    package init(context: UseCaseContext, settings: AnalyticsSettings) {
        self.context = context
        self.settings = settings
    }

    /// The customer `appUserID` names (an alias reads its subscriber).
    package func callAsFunction(_ appUserID: String, environment: String) async throws(ReceiptError) -> (
        appUserID: String, money: CustomerMoney
    ) {
        guard FieldRules.isValidAppUserID(appUserID) else { throw .subscriberNotFound }
        let found: (String, [AnalyticsStore.HeldPurchase])?
        do {
            found = try await database.read { db in
                let canonical = try ReceiptStore(db).canonical(appUserID)
                guard try ReceiptStore(db).isSubscriber(canonical) else { return nil }
                return (canonical, try AnalyticsStore(db).purchases(environment: environment, heldBy: canonical))
            }
        } catch {
            logger.error("a customer's money could not be read", metadata: ["error": "\(error)"])
            throw .internalFault
        }
        guard let (canonical, held) = found else { throw .subscriberNotFound }
        let entries = held.map { Ledger.Entry(appUserID: $0.appUserID, bundleID: $0.bundleID, purchase: $0.purchase) }
        return (canonical, CustomerMoney(entries, settings: settings))
    }
}
