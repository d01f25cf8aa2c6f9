import ReceiptTesting
import Testing

@testable import ReceiptCore
@testable import ReceiptService

/// Keys match as exact bytes, never by Unicode canonical equivalence.
@Suite struct APIAuthTests {
    let auth = APIAuth(publicKeys: ["pk-Key-1", "pk_\u{00C5}"], secretKeys: ["sk;Secret", "both"] + ["pk-dup"])

    @Test func exactKeysGrantTheirRole() {
        #expect(auth.role(of: "pk-Key-1".utf8) == .public)
        #expect(auth.role(of: "pk_\u{00C5}".utf8) == .public)
        #expect(auth.role(of: "sk;Secret".utf8) == .secret)
        #expect(auth.role(of: "both".utf8) == .secret)
    }

    @Test(arguments: [
        "pk-\u{212A}ey-1",  // KELVIN SIGN for K
        "sk\u{037E}Secret",  // GREEK QUESTION MARK for ;
        "pk_\u{212B}",  // ANGSTROM SIGN for Å
        "pk_A\u{030A}",  // A + COMBINING RING for Å
        "pk-Key-1 ", "pk-key-1", "", "pk-Key-",
    ])
    func lookalikesAndNearMissesGrantNothing(_ key: String) {
        #expect(key == key)  // (Swift's == would call some of these equal to a configured key)
        #expect(auth.role(of: key.utf8) == nil, "\(Array(key.utf8))")
    }
}
