package import Entitlements

/// A `verifyReceipt` `status` and what receiptd does about it (Docs/apple-protocols.md §1.3).
package struct AppleStatus: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    package let rawValue: Int
    package init(rawValue: Int) { self.rawValue = rawValue }

    package static let valid = AppleStatus(rawValue: 0)
    package static let notPost = AppleStatus(rawValue: 21000)
    package static let malformedOrTemporary = AppleStatus(rawValue: 21002)
    package static let notAuthenticated = AppleStatus(rawValue: 21003)
    package static let sharedSecretMismatch = AppleStatus(rawValue: 21004)
    package static let serverUnavailable = AppleStatus(rawValue: 21005)
    package static let validButExpired = AppleStatus(rawValue: 21006)
    package static let sandboxReceiptInProduction = AppleStatus(rawValue: 21007)
    package static let productionReceiptInSandbox = AppleStatus(rawValue: 21008)
    package static let internalDataAccess = AppleStatus(rawValue: 21009)
    package static let accountNotFound = AppleStatus(rawValue: 21010)

    /// What a status means for the caller.
    package enum Disposition: Sendable, Equatable {
        /// A decoded receipt came back (0, and 21006 which still carries the receipt).
        case valid
        /// Send the same body to the other environment (21007 → sandbox, 21008 → production).
        case switchEnvironment(StoreEnvironment)
        /// A temporary problem at Apple: try again within the deadline (21002, 21005, 21009).
        case retryable
        /// 21100–21199: retryable only when the response's retry flag says so.
        case retryableIfFlagged
        /// The receipt is not valid: 21003 (not authenticated), 21010 (no such account).
        case invalidReceipt
        /// receiptd's shared secret is wrong (21004): an operator error.
        case misconfigured
        /// Anything else (21000, 21001, unknown codes): Apple refused the request itself.
        case unexpected
    }

    package var disposition: Disposition {
        switch rawValue {
        case 0, 21006: .valid
        case 21007: .switchEnvironment(.sandbox)
        case 21008: .switchEnvironment(.production)
        case 21002, 21005, 21009: .retryable
        case 21100...21199: .retryableIfFlagged
        case 21003, 21010: .invalidReceipt
        case 21004: .misconfigured
        default: .unexpected
        }
    }

    package var description: String { String(rawValue) }
}

/// Apple's two environments, verifyReceipt's and the App Store Server API's.
extension StoreEnvironment {
    /// Apple spells them `Production` and `Sandbox` in responses.
    package init?(appleName: String) {
        switch appleName.lowercased() {
        case "production": self = .production
        case "sandbox": self = .sandbox
        default: return nil
        }
    }
}
