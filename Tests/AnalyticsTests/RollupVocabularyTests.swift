import Entitlements
import Identifiers
import ReceiptTesting
import Testing

@testable import Analytics

/// The words packed rows number instead of writing: each once, and every word the charts write.
@Suite("Rollup vocabulary")
struct RollupVocabularyTests {
    @Test func eachTextIsThereOnceByItsBytes() {
        #expect(Set(RollupVocabulary.texts.map { Identifier($0) }).count == RollupVocabulary.texts.count)
        #expect(RollupVocabulary.numbers.count == RollupVocabulary.texts.count)
        for (n, text) in RollupVocabulary.texts.enumerated() { #expect(RollupVocabulary.numbers[Identifier(text)] == n) }
    }

    /// Every chart, kind, environment and store, and every measure the sample business's rows
    /// hold: a holder's own texts are then only its bundle ids, groups and notes of rates.
    @Test(arguments: [7, 40] as [UInt64])
    func theChartsOwnWordsAreAllInIt(seed: UInt64) {
        let words =
            Chart.allCases.map(\.rawValue) + ChartItem.Kind.allCases.map(\.rawValue)
            + StoreEnvironment.allCases.map(\.rawValue) + [Store.appStore, .playStore].map(\.rawValue)
        for word in words { #expect(RollupVocabulary.numbers[Identifier(word)] != nil, "\(word)") }
        let (facts, owners) = SampleBusiness.business(seed: seed)
        for holder in RollupTests.holders(SampleBusiness.ledger(facts, owners: owners)) {
            let rows = Rollup.holder(holder, settings: RollupTests.settings, rates: RollupTests.rates, writtenAt: 0).rows
            for measure in Set(rows.map(\.key.measure)) {
                #expect(RollupVocabulary.numbers[Identifier(measure)] != nil, "\(measure)")
            }
        }
    }
}
