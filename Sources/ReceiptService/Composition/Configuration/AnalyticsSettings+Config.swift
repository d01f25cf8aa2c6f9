import Analytics
import Entitlements
import Identifiers

extension AnalyticsSettings {
    /// `analytics.*`: the reporting currency, Apple's Small Business Program, tax and the price
    /// table (Docs/analytics.md).
    static func read(_ c: ConfigLoader) throws(ConfigurationError) -> AnalyticsSettings {
        // Every money figure is also given in this ISO 4217 currency, at the rate of the sale's day.
        let currency = try c.string("analytics.reportingCurrency", default: "USD")
        guard Price.isCurrencyCode(currency) else {
            throw ConfigurationError(key: "analytics.reportingCurrency", message: "must be an ISO 4217 code such as USD")
        }
        // Bundle ids of apps in the App Store Small Business Program: 15 % commission on every sale.
        let smallBusiness = try c.strings("analytics.smallBusinessApps", default: [])
        // The VAT/GST each storefront's prices include, as `DEU=19` (percent, up to 4 places):
        // Apple's storefronts are ISO 3166 alpha-3, Google Play's regions alpha-2 (`DE=19`).
        var taxRates: [String: Int64] = [:]
        for item in try c.strings("analytics.taxRates", default: []) {
            let parts = item.split(separator: "=").map(String.init)
            guard parts.count == 2, (2...3).contains(parts[0].utf8.count),
                parts[0].utf8.allSatisfy({ $0 >= 0x41 && $0 <= 0x5A }),
                let percent = Money.decimal(parts[1], places: 4), percent < 1_000_000
            else {
                throw ConfigurationError(
                    key: "analytics.taxRates",
                    message: "each item must be STOREFRONT=PERCENT (e.g. DEU=19 or DE=19), got \"\(item)\"")
            }
            // Four places of a percent are ten-thousandths of a percent, which are parts per
            // million (19 % is 190000): the figure is stored as read.
            taxRates[parts[0]] = percent
        }
        // The last resort for sales nobody priced: `PRODUCT@STOREFRONT=9.99 EUR` (storefront `*`: any).
        var priceTable: [Identifier: [String: TablePrice]] = [:]
        for item in try c.strings("analytics.priceTable", default: []) {
            guard let (product, storefront, price) = Self.tableRow(item) else {
                throw ConfigurationError(
                    key: "analytics.priceTable",
                    message: "each item must be PRODUCT@STOREFRONT=AMOUNT CURRENCY (e.g. pro.monthly@*=9.99 USD), got \"\(item)\""
                )
            }
            priceTable[Identifier(product), default: [:]][storefront] = price
        }
        // Development only: `USD=1.08`, units per euro (as the ECB states them, up to six places)
        // for every day no loaded rate covers, so that the simulators' sales are reported offline.
        var simulatedRates: [String: Int64] = [:]
        for item in try c.strings("analytics.simulatedRates", default: []) {
            let parts = item.split(separator: "=", omittingEmptySubsequences: false).map(String.init)
            guard parts.count == 2, Price.isCurrencyCode(parts[0]), parts[0] != "EUR",
                let perEuro = Money.decimal(parts[1], places: 6), perEuro > 0
            else {
                throw ConfigurationError(
                    key: "analytics.simulatedRates",
                    message: "each item must be CURRENCY=UNITS_PER_EURO (e.g. USD=1.08), got \"\(item)\"")
            }
            simulatedRates[parts[0]] = perEuro
        }
        return AnalyticsSettings(
            reportingCurrency: currency, smallBusinessApps: Set(smallBusiness.map { Identifier($0) }), taxRates: taxRates,
            priceTable: priceTable, simulatedRates: simulatedRates)
    }

    static func tableRow(_ item: String) -> (String, String, TablePrice)? {
        let sides = item.split(separator: "=", maxSplits: 1).map(String.init)
        guard sides.count == 2 else { return nil }
        let key = sides[0].split(separator: "@").map(String.init)
        let value = sides[1].split(separator: " ").map(String.init)
        guard key.count == 2, !key[0].isEmpty, key[1] == "*" || (key[1].utf8.count == 3 && Price.isCurrencyCode(key[1])),
            value.count == 2, let amount = Money.decimal(value[0], places: 3), Price.isCurrencyCode(value[1])
        else { return nil }
        return (key[0], key[1], TablePrice(milliunits: amount, currency: value[1]))
    }
}
