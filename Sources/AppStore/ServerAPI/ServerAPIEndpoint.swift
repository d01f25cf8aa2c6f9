package import CurlTransport
package import Entitlements

/// The App Store Server API endpoints receiptd calls (Docs/apple-protocols.md §4.3), each with its
/// method, path and Apple's published rate limit (§4.4).
package enum ServerAPIEndpoint: String, Sendable, Hashable, CaseIterable {
    case transactionInfo = "get_transaction_info"
    case transactionHistory = "get_transaction_history"
    case subscriptionStatuses = "get_all_subscription_statuses"
    case refundHistory = "get_refund_history"
    case notificationHistory = "get_notification_history"
    case requestTestNotification = "request_test_notification"
    case testNotificationStatus = "get_test_notification_status"
    case lookUpOrderID = "look_up_order_id"
    case extendRenewalDate = "extend_subscription_renewal_date"
    case sendConsumption = "send_consumption_information"
    case appTransactionInfo = "get_app_transaction_info"
    case finishTransaction = "finish_transaction"
    case setAppAccountToken = "set_app_account_token"
    case massExtendRenewalDates = "extend_renewal_dates_for_all_active_subscribers"
    case massExtensionStatus = "get_status_of_renewal_date_extensions"

    package var method: OutboundRequest.Method {
        switch self {
        case .notificationHistory, .requestTestNotification, .finishTransaction, .massExtendRenewalDates: .post
        case .extendRenewalDate, .sendConsumption, .setAppAccountToken: .put
        default: .get
        }
    }

    /// The kinds of the ids the endpoint's path takes, in order; empty for the endpoints that take none.
    package var idKinds: [AppleIdentifier.Kind] {
        switch self {
        case .transactionInfo, .transactionHistory, .subscriptionStatuses, .refundHistory, .extendRenewalDate,
            .sendConsumption, .appTransactionInfo, .finishTransaction, .setAppAccountToken:
            [.transaction]
        case .lookUpOrderID: [.order]
        case .testNotificationStatus: [.testNotificationToken]
        case .massExtensionStatus: [.productID, .requestIdentifier]
        case .notificationHistory, .requestTestNotification, .massExtendRenewalDates: []
        }
    }

    /// The path, with the ids as its last segments (Finish Transaction's and Set App Account
    /// Token's: before a last fixed one; none for the endpoints that take none). The ids are typed:
    /// only ``AppleIdentifier``s of the kinds the endpoint takes, in order, are ever segments.
    package func path(_ ids: AppleIdentifier...) -> String { path(ids) }

    package func path(_ ids: [AppleIdentifier]) -> String {
        precondition(ids.map(\.kind) == idKinds, "\(self) takes \(idKinds), not \(ids.map(\.kind))")
        let id = ids.first?.pathSegment ?? ""
        return switch self {
        case .transactionInfo: "/inApps/v1/transactions/\(id)"
        case .transactionHistory: "/inApps/v2/history/\(id)"
        case .subscriptionStatuses: "/inApps/v1/subscriptions/\(id)"
        case .refundHistory: "/inApps/v2/refund/lookup/\(id)"
        case .notificationHistory: "/inApps/v1/notifications/history"
        case .requestTestNotification: "/inApps/v1/notifications/test"
        case .testNotificationStatus: "/inApps/v1/notifications/test/\(id)"
        case .lookUpOrderID: "/inApps/v1/lookup/\(id)"
        case .extendRenewalDate: "/inApps/v1/subscriptions/extend/\(id)"
        case .sendConsumption: "/inApps/v2/transactions/consumption/\(id)"
        case .appTransactionInfo: "/inApps/v1/transactions/appTransactions/\(id)"
        case .finishTransaction: "/inApps/v1/transactions/\(id)/finish"
        case .setAppAccountToken: "/inApps/v1/transactions/\(id)/appAccountToken"
        case .massExtendRenewalDates: "/inApps/v1/subscriptions/extend/mass"
        case .massExtensionStatus: "/inApps/v1/subscriptions/extend/mass/\(id)/\(ids[1].pathSegment)"
        }
    }

    /// Requests per second Apple allows an app in production; sandbox gets a tenth (§4.4).
    package var productionLimit: Double {
        switch self {
        case .transactionInfo, .transactionHistory, .subscriptionStatuses, .sendConsumption, .notificationHistory: 50
        // Not in what we read of Apple's list: taken as Get Transaction Info's; a 429 is handled anyway.
        case .appTransactionInfo, .finishTransaction, .setAppAccountToken: 50
        case .extendRenewalDate: 20
        case .lookUpOrderID, .refundHistory: 10
        case .requestTestNotification, .testNotificationStatus, .massExtendRenewalDates, .massExtensionStatus: 1
        }
    }

    package func limit(in environment: StoreEnvironment) -> Double {
        environment == .production ? productionLimit : productionLimit / 10
    }

    /// Whether a transaction id unknown in production is asked of sandbox.
    var switchesToSandbox: Bool {
        switch self {
        case .transactionInfo, .transactionHistory, .subscriptionStatuses, .refundHistory, .extendRenewalDate,
            .sendConsumption, .appTransactionInfo, .finishTransaction, .setAppAccountToken:
            true
        case .notificationHistory, .requestTestNotification, .testNotificationStatus, .lookUpOrderID,
            .massExtendRenewalDates, .massExtensionStatus:
            false
        }
    }

    /// RFC 3986 unreserved characters pass; everything else is %XX (query values, and path
    /// segments, which ``AppleIdentifier`` already keeps to letters, digits, `-` and `_`).
    static func escaped(_ text: String) -> String {
        var out = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                let hex = Array("0123456789ABCDEF".utf8)
                out += "%" + String(decoding: [hex[Int(byte >> 4)], hex[Int(byte & 15)]], as: UTF8.self)
            }
        }
        return out
    }
}
