import Identifiers
import Testing

@testable import Entitlements

@Suite("Stated facts")
struct StatedTests {
    private func facts(_ purchaseOriginals: [String], _ renewalOriginals: [String]) -> VerifiedFacts {
        VerifiedFacts(
            environment: .sandbox,
            purchases: purchaseOriginals.enumerated().map { n, original in
                Stated(
                    Purchase(transactionID: "t\(n)", originalTransactionID: original, productID: "p", environment: .sandbox),
                    bundleID: "b", rawJSON: "{}")
            },
            renewals: renewalOriginals.map {
                Stated(Renewal(originalTransactionID: $0, autoRenewStatus: true, environment: .sandbox), rawJSON: "{}")
            })
    }

    /// Each original transaction once, in the order first named, two spellings of one id two ids;
    /// the same whether a receipt names a few or many.
    @Test(arguments: [4, 40])
    func originalsAreEachIdOnceInOrder(_ size: Int) {
        let ids = ["o1", "Zo\u{00EB}", "Zoe\u{0308}", "o2"] + (0..<size).map { "x\($0 % (size / 2))" }
        let f = facts(ids + ["o1"], ["o2", "o3", "Zoe\u{0308}"])
        var expected: [String] = []
        for id in ids + ["o1", "o2", "o3", "Zoe\u{0308}"] where !expected.contains(where: { $0.isExactly(id) }) {
            expected.append(id)
        }
        #expect(f.originals.map { Array($0.utf8) } == expected.map { Array($0.utf8) })
        #expect(facts([], []).originals.isEmpty)
    }
}
