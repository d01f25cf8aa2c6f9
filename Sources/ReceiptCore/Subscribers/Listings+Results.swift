package import Entitlements
import Storage

extension Listings {
    /// A notification as received and what came of it (``Listings/notifications(limit:before:filter:)``).
    package struct Notification: Sendable, Equatable {
        package var id: Int64
        /// 1 or 2.
        package var version: Int
        package var type: String
        package var subtype: String?
        package var environment: String?
        package var bundleID: String?
        package var originalTransactionID: String?
        package var transactionID: String?
        /// Apple's subscription status in a V2 notification, as Apple numbers it.
        package var appleStatus: Int64?
        package var appUserID: String?
        package var outcome: String
        package var signedAt: Int64?
        package var receivedAt: Int64
    }

    /// What ``Listings/notifications(limit:before:filter:)`` keeps: each given field equal.
    package struct NotificationFilter: Sendable, Equatable {
        package var type: String?
        package var outcome: String?
        package var appUserID: String?

        package init(type: String? = nil, outcome: String? = nil, appUserID: String? = nil) {
            (self.type, self.outcome, self.appUserID) = (type, outcome, appUserID)
        }
    }

    /// A difference `shadow` mode found between verifyReceipt's and the Server API's answers
    /// (``Listings/shadowDiffs(limit:before:)``).
    package struct ShadowDiff: Sendable, Equatable {
        package var id: Int64
        package var appUserID: String
        /// The transaction id the Server API was asked about.
        package var transactionID: String
        /// `production` or `sandbox`, as verifyReceipt answered.
        package var environment: String?
        /// A JSON array of `{"path", "verify_receipt", "server_api"}`.
        package var differences: String
        package var at: Int64
    }

    /// A purchase that moved between app users (``Listings/sharedReceipts(moreThan:limit:after:)``).
    package struct SharedPurchase: Sendable, Equatable {
        package var originalTransactionID: String
        /// How many distinct users have held it.
        package var users: Int
        /// Who holds it now.
        package var holder: String?
        /// Every change of holder, oldest first (the first one has no `from`).
        package var transfers: [Transfer]
    }

    /// An Apple Account posted under several app user ids
    /// (``Listings/sharedAppAccounts(moreThan:limit:after:)``).
    package struct SharedAccount: Sendable, Equatable {
        package var appTransactionID: String
        package var users: Int
        /// The app user ids it was posted under, in byte order.
        package var appUserIDs: [String]
    }
}

extension Listings.ShadowDiff {
    init(_ r: ShadowDiffRecord) {
        self.init(
            id: r.id, appUserID: r.appUserID, transactionID: r.transactionID, environment: r.environment,
            differences: r.differences, at: r.at)
    }
}

extension Listings.SharedPurchase {
    init(_ r: SharedReceipt) {
        self.init(originalTransactionID: r.originalTransactionID, users: r.users, holder: r.holder, transfers: r.transfers)
    }
}

extension Listings.SharedAccount {
    init(_ r: SharedAppAccount) { self.init(appTransactionID: r.appTransactionID, users: r.users, appUserIDs: r.appUserIDs) }
}

extension Listings.Notification {
    init(_ n: NotificationRecord) {
        self.init(
            id: n.id, version: n.version, type: n.type, subtype: n.subtype, environment: n.environment, bundleID: n.bundleID,
            originalTransactionID: n.originalTransactionID, transactionID: n.transactionID, appleStatus: n.appleStatus,
            appUserID: n.appUserID, outcome: n.outcome, signedAt: n.signedAt, receivedAt: n.receivedAt)
    }
}
