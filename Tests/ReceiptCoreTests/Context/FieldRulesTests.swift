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

    /// The ASCII path agrees with the Unicode categories on every ASCII byte, alone and around
    /// letters and spaces, and gives way to them at the first byte past ASCII.
    @Test func asciiIDsAreJudgedAsTheirUnicodeCategoriesJudgeThem() {
        for byte in UInt8(0)..<0x80 {
            let c = String(UnicodeScalar(byte))
            for id in [c, "a" + c, c + " ", " " + c + " "] {
                #expect(FieldRules.asciiVerdict(id) == FieldRules.isShownByCategories(id), "\(id.debugDescription)")
            }
            for id in ["x" + c + "\u{E9}", "\u{A0}" + c] {
                #expect(FieldRules.isValidAppUserID(id) == FieldRules.isShownByCategories(id), "\(id.debugDescription)")
            }
        }
    }

    @Test func bundleIDs() {
        for ok in ["com.example.app", "com.example-co.App_2", String(repeating: "a", count: 155)] {
            #expect(FieldRules.isValidBundleID(ok))
        }
        for bad in ["", "com example", "com.exämple", "com/example", String(repeating: "a", count: 156), "a\"b"] {
            #expect(!FieldRules.isValidBundleID(bad), "\(bad)")
        }
    }

    @Test func aStoredTransactionIdIsApplesOrGooglePlays() throws {
        for id in [
            "1000000123456789", "GPA.3312-3456-7890-12345", "GPA.3312-3456-7890-12345..3", "GPT.ba7816bf8f01cfea414140de5dae2223",
        ] {
            try FieldRules.storedTransactionID(id)
        }
        for id in ["", "GPA.", "GPX.1", "gpa.1", "GPA.1/2", "GPA.1 2", "12a", "GPA." + String(repeating: "1", count: 200)] {
            #expect(throws: ReceiptError.self, "\(id)") { try FieldRules.storedTransactionID(id) }
        }
    }
}
