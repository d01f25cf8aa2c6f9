import ReceiptTesting
import Testing

@testable import ReceiptCore

@Suite("Field rules")
struct FieldRulesTests {
    @Test(arguments: [
        "alice", "7E1B1A3C-2F0D-4C6B-9B1E-3A2E8C0F4D11", "a.b+c@example.com", "Zoë", "山田太郎", "a b",
        String(repeating: "x", count: 256), String(repeating: "é", count: 128),
    ])
    func appUserIDsAppsUseAreKept(id: String) {
        #expect(FieldRules.isValidAppUserID(id))
    }

    @Test(arguments: [
        "", " ", "\u{3000}", String(repeating: "x", count: 257), String(repeating: "é", count: 129), "a\nb", "a\u{0}b",
        "a\u{7F}", "a\u{85}", "a\u{202E}b", "a\u{200D}b", "a\u{2028}b", "a\u{E000}", "\u{FEFF}a",
    ])
    func appUserIDsThatCannotBeShownOrComparedAreRefused(id: String) {
        #expect(!FieldRules.isValidAppUserID(id), "\(id.debugDescription)")
    }

    @Test func bundleIDs() {
        for ok in ["com.example.app", "com.example-co.App_2", String(repeating: "a", count: 155)] {
            #expect(FieldRules.isValidBundleID(ok))
        }
        for bad in ["", "com example", "com.exämple", "com/example", String(repeating: "a", count: 156), "a\"b"] {
            #expect(!FieldRules.isValidBundleID(bad), "\(bad)")
        }
    }
}
