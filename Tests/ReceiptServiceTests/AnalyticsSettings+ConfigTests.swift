import Analytics
import Entitlements
import Foundation
import Identifiers
import Testing

@testable import ReceiptService

/// `analytics.simulatedRates`, from the configuration's text to the figure it changes.
@Suite("Analytics settings from the configuration")
struct AnalyticsSettingsConfigTests {
    /// `USD=1.08` is 1.08 dollars a euro on every day no loaded rate covers: a 9.99 EUR sale is
    /// 10.789 USD (9.99 × 1.08 = 10.7892, rounded half to even at the third place), and 10.79 USD
    /// is 9.991 EUR (10.79 ÷ 1.08 = 9.99074…). A loaded rate still wins on its own days.
    @Test func simulatedRatesInUnitsPerEuroConvertEveryDayNoLoadedRateCovers() async throws {
        let dir = try makeConfigDirectory([
            "default.json": #"{"analytics": {"simulatedRates": ["USD=1.08", "JPY=158.123456"]}}"#
        ])
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let settings = try await ServiceConfiguration.load(configDirectory: dir, environment: [:]).0.analytics
        #expect(settings.simulatedRates == ["USD": 1_080_000, "JPY": 158_123_456])
        let rates = ExchangeRates([.init(day: 20_000, currency: "USD", perEuro: 1_200_000)], simulated: settings.simulatedRates)
        for day: Int64 in [0, 19_000, 20_010] {
            #expect(rates.convert(9_990, from: "EUR", to: "USD", day: day) == 10_789)
            #expect(rates.convert(10_790, from: "USD", to: "EUR", day: day) == 9_991)
        }
        // 9.99 EUR at the loaded 1.20 on its day and the four after (the ECB's look-back).
        #expect(rates.convert(9_990, from: "EUR", to: "USD", day: 20_004) == 11_988)
        // Yen through the euro: 1,000 JPY is 1000 × 1.08 ÷ 158.123456 = 6.830 USD.
        #expect(rates.convert(1_000_000, from: "JPY", to: "USD", day: 5) == 6_830)
        #expect(ExchangeRates().convert(9_990, from: "EUR", to: "USD", day: 5) == nil)
    }

    /// Malformed rates are refused naming the key; any simulated rate is refused in production,
    /// where a rate nobody published is a guess.
    @Test func simulatedRatesAreCheckedAndNeverInProduction() async throws {
        for bad in ["usd=1.08", "USD", "USD=0", "USD=-1", "USD=1.0000001", "EUR=1", "USD=1,08", "US=1.1"] {
            let dir = try makeConfigDirectory(["default.json": #"{"analytics": {"simulatedRates": ["\#(bad)"]}}"#])
            defer { try? FileManager.default.removeItem(atPath: dir) }
            do {
                _ = try await ServiceConfiguration.load(configDirectory: dir, environment: [:])
                Issue.record("\(bad) was accepted")
            } catch let error as ConfigurationError {
                #expect(error.key == "analytics.simulatedRates", "\(bad)")
            }
        }
        let dir = try makeConfigDirectory(["default.json": #"{"analytics": {"simulatedRates": ["USD=1.08"]}}"#])
        defer { try? FileManager.default.removeItem(atPath: dir) }
        do {
            _ = try await ServiceConfiguration.load(
                configDirectory: dir, environment: ["RECEIPTD_ENVIRONMENT": "production", "RECEIPTD_API_SECRET_KEYS": "k"])
            Issue.record("simulated rates were accepted in production")
        } catch let error as ConfigurationError {
            #expect(error.key == "analytics.simulatedRates")
        }
        // The committed development configuration has them; production's has none.
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().path
        let development = try await ServiceConfiguration.load(
            configDirectory: root + "/Config", environment: ["RECEIPTD_ENVIRONMENT": "development"]
        ).0.analytics
        #expect(development.simulatedRates == ["USD": 1_080_000])
        #expect(development.priceTable[Identifier("monthly")]?["*"] == .init(milliunits: 9_990, currency: "USD"))
    }
}
