import Storage

extension RecordAppTransaction {
    /// StoreKit's AppTransaction as kept for a person: the Apple Account's id in this app and
    /// what Apple says of the app's first download.
    package struct AppTransaction: Sendable, Equatable {
        package var appUserID: String
        package var appTransactionID: String
        package var bundleID: String
        package var environment: String
        package var originalApplicationVersion: String?
        package var originalPurchaseDate: Int64?
        package var originalPlatform: String?
    }
}

extension RecordAppTransaction.AppTransaction {
    init(_ r: AppTransactionRecord) {
        self.init(
            appUserID: r.appUserID, appTransactionID: r.appTransactionID, bundleID: r.bundleID, environment: r.environment,
            originalApplicationVersion: r.originalApplicationVersion, originalPurchaseDate: r.originalPurchaseDate,
            originalPlatform: r.originalPlatform)
    }
}
