import Testing

@testable import Entitlements

@Suite("Store environment")
struct StoreEnvironmentTests {
    /// The two words every table stores (SQLite's CHECKs name the same two), and a word read back
    /// that is neither is not counted as real money.
    @Test func theTwoWordsAndAnyOtherReadBack() {
        #expect(StoreEnvironment.allCases.map(\.rawValue) == ["production", "sandbox"])
        #expect(StoreEnvironment(stored: "production") == .production)
        #expect(StoreEnvironment(stored: "sandbox") == .sandbox)
        for other in ["Production", "xcode", "", "production "] {
            #expect(StoreEnvironment(stored: other) == .sandbox, "\(other)")
        }
    }
}
