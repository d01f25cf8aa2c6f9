/// Where a purchase was made: the store's real money or its test world. Apple's and Google's
/// answers name one of the two (a Play purchase's `testPurchase` is `sandbox`); every table that
/// stores a fact stores one of these two words, which is why PostgreSQL needs no CHECK for it
/// (Migrations/postgresql/0043_hot_tables_without_checks.sql).
package enum StoreEnvironment: String, Sendable, Hashable, Codable, CaseIterable {
    case production
    case sandbox

    /// A stored word read back. The tables hold only the two words (their writers take this type);
    /// a word written by another hand is not counted as real money.
    package init(stored: String) {
        self = stored == Self.production.rawValue ? .production : .sandbox
    }
}
