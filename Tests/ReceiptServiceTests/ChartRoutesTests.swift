import AppStore
import DatabaseEngine
import Entitlements
import Foundation
import JSON
import ReceiptTesting
import Storage
import Testing

@testable import Charts
@testable import ReceiptCore
@testable import ReceiptService

private let day: Int64 = 86_400_000
private let bundle = "com.example.app"

private func json(_ object: Any) -> JSONValue {
    try! JSONValue.parse(Array(try! JSONSerialization.data(withJSONObject: object)))
}

/// A StoreKit 2 transaction with Apple's money fields, signed with Apple's test PKI.
private func signed(_ id: String, product: String, price: Int, currency: String, storefront: String, at: Int64) throws -> String {
    let t: [String: Any] = [
        "transactionId": id, "originalTransactionId": id, "bundleId": bundle, "productId": product, "purchaseDate": at,
        "originalPurchaseDate": at, "expiresDate": at + (product == "annual" ? 365 : 30) * day,
        "type": "Auto-Renewable Subscription",
        "inAppOwnershipType": "PURCHASED", "environment": "Sandbox", "price": price, "currency": currency,
        "storefront": storefront, "transactionReason": "PURCHASE", "signedDate": at,
    ]
    return try TestPKI.signer.sign(json(t))
}

/// Ana's 9.99 USD a month in the USA and Ben's 49.99 EUR a year in Germany, signed by Apple's test
/// PKI, posted with the app's public key.
private func postAnaAndBen(_ port: Int, ids: (String, String), at bought: Int64) async throws {
    for (user, jws) in [
        ("ana", try signed(ids.0, product: "monthly", price: 9990, currency: "USD", storefront: "USA", at: bought)),
        ("ben", try signed(ids.1, product: "annual", price: 49_990, currency: "EUR", storefront: "DEU", at: bought)),
    ] {
        let posted = try await request(
            port, "POST", "/v1/receipts",
            String(decoding: json(["app_user_id": user, "signed_transaction": jws]).jsonBytes, as: UTF8.self),
            key: TestSecrets.publicKey)
        #expect(posted.status == 200, "\(posted.body)")
    }
}

/// The charts over HTTP, on the configured database (SQLite, or PostgreSQL in CI's second run):
/// Apple's signed prices stored, charted, drilled into, and exported as CSV.
@Suite("Charts API", .serialized)
struct ChartRoutesTests {
    @Test func signedPricesBecomeChartsThatExplainThemselves() async throws {
        try await ReceiptTesting.withService(
            entitlements: ["premium": ["monthly", "annual"]], signedData: .init(roots: [TestPKI.root], appAppleIDs: [1234])
        ) { port, _ in
            let now = Int64(Date().timeIntervalSince1970 * 1000)
            let bought = now - day
            try await postAnaAndBen(port, ids: ("7001", "7002"), at: bought)
            // The document shows the price and its source.
            let ana = try await request(port, "GET", "/v1/subscribers/ana", key: TestSecrets.secretKey)
            let monthly = (ana.json["subscriptions"] as? [String: Any])?["monthly"] as? [String: Any]
            #expect(monthly?["price"] as? [String: String] == ["amount": "9.990", "currency": "USD", "source": "store"])

            let query = "environment=sandbox&resolution=month&from=\(dayText(bought))"
            let revenue = try await request(port, "GET", "/v1/admin/charts/revenue?\(query)", key: TestSecrets.secretKey)
            #expect(revenue.status == 200, "\(revenue.body)")
            #expect(revenue.json["currency"] as? String == "USD")
            let values = revenue.json["values"] as? [[String: Any]] ?? []
            // No rates loaded: the euro sale is left out and the missing dollar rate reported, never guessed.
            #expect(values.first?["gross"] as? String == "9.990" && values.first?["transactions"] as? Int == 1)
            #expect(values.first?["proceeds"] as? String == "6.993")  // 70 %
            let missing = revenue.json["missing_rates"] as? [[String: Any]] ?? []
            #expect(missing.map { $0["currency"] as? String } == ["USD"])
            // Which conversion needed it: Ben's euros into the chart's dollars.
            #expect(missing.map { "\($0["from"] as? String ?? "")→\($0["to"] as? String ?? "")" } == ["EUR→USD"])
            let period = values.first?["period"] as? String ?? ""

            let drill = try await request(
                port, "GET", "/v1/admin/charts/revenue/drill?\(query)&period=\(period)&measure=gross", key: TestSecrets.secretKey)
            #expect(drill.status == 200, "\(drill.body)")
            let contributions = drill.json["contributions"] as? [[String: Any]] ?? []
            #expect(contributions.map { $0["transaction_id"] as? String } == ["7001"])
            #expect(contributions.first?["app_user_id"] as? String == "ana" && drill.json["value"] as? String == "9.990")
            // No rollups kept here: every contribution on the one page, read from the transactions.
            #expect(drill.json["next_cursor"] is NSNull && drill.json["source"] as? String == "transactions")

            let mrr = try await request(port, "GET", "/v1/admin/charts/mrr?\(query)&currency=EUR", key: TestSecrets.secretKey)
            let mrrValues = mrr.json["values"] as? [[String: Any]] ?? []
            // In euros: the annual 49.99 / 12 = 4.166 (4.1658…); the dollar sale has no rate.
            #expect(
                mrrValues.first?["mrr"] as? String == "4.166" && mrrValues.first?["subscriptions"] as? Int == 2, "\(mrr.body)")

            let csv = try await request(port, "GET", "/v1/admin/charts/actives?\(query)&format=csv", key: TestSecrets.secretKey)
            #expect(csv.status == 200 && csv.head.lowercased().contains("content-type: text/csv"))
            #expect(csv.body.hasPrefix("period,subscriptions,trials\r\n\(period),2,0\r\n"))

            // A customer's money: their one sale, with its commission and proceeds, and the total.
            let money = try await request(
                port, "GET", "/v1/subscribers/ana/money?environment=sandbox", key: TestSecrets.secretKey)
            #expect(money.status == 200, "\(money.body)")
            let sold = (money.json["transactions"] as? [[String: Any]])?.first
            #expect(sold?["transaction_id"] as? String == "7001" && sold?["gross"] as? String == "9.990", "\(money.body)")
            #expect(sold?["commission_percent"] as? Int == 30 && sold?["proceeds"] as? String == "6.993")
            #expect(sold?["tax"] is NSNull && sold?["unpaid"] is NSNull)
            let totals = money.json["totals"] as? [[String: Any]]
            #expect(
                totals?.count == 1 && totals?.first?["currency"] as? String == "USD"
                    && totals?.first?["net"] as? String == "9.990")
            let production = try await request(port, "GET", "/v1/subscribers/ana/money", key: TestSecrets.secretKey)
            #expect((production.json["transactions"] as? [Any])?.isEmpty == true, "production by default: \(production.body)")
            #expect(try await request(port, "GET", "/v1/subscribers/nobody/money", key: TestSecrets.secretKey).status == 404)
            #expect(try await request(port, "GET", "/v1/subscribers/ana/money", key: TestSecrets.publicKey).status == 403)

            for (target, code) in [
                ("/v1/subscribers/ana/money?environment=test", 400),
                ("/v1/admin/charts/arpu", 400), ("/v1/admin/charts/revenue?resolution=hour", 400),
                ("/v1/admin/charts/revenue?tz=Mars/Olympus", 400), ("/v1/admin/charts/revenue?currency=usd", 400),
                ("/v1/admin/charts/cohorts/drill?period=\(period)&measure=ltv&resolution=month", 400),
                ("/v1/admin/charts/revenue/drill?measure=gross", 400),
                ("/v1/admin/charts/revenue/drill?period=\(period)&measure=gross&cursor=..", 400),
                ("/v1/admin/charts/revenue/drill?period=\(period)&measure=gross&limit=0", 400),
                ("/v1/admin/charts/revenue?from=2000-01-01&to=2026-01-01", 400),
            ] {
                let r = try await request(port, "GET", target, key: TestSecrets.secretKey)
                let error = r.json["error"] as? [String: Any]
                #expect(r.status == code && error?["code"] as? String == "invalid_request", "\(target): \(r.body)")
            }
            // A date without a time is a day in the request's zone: January and February in Berlin,
            // not a March period that begins at 23:00 UTC on February 28th.
            let berlin = try await request(
                port, "GET", "/v1/admin/charts/revenue?from=2026-01-01&to=2026-03-01&resolution=month&tz=Europe/Berlin",
                key: TestSecrets.secretKey)
            let months = (berlin.json["values"] as? [[String: Any]])?.compactMap { $0["period"] as? String }
            #expect(months == ["2026-01-01", "2026-02-01"], "\(berlin.body)")
            #expect(try await request(port, "GET", "/v1/admin/charts/revenue").status == 401)
            #expect(try await request(port, "GET", "/v1/admin/charts/revenue", key: TestSecrets.publicKey).status == 403)
        }
    }

    /// The charts of movement and customers over HTTP: a window, a split by country (JSON, CSV, a
    /// group's drill-down), and a customer's own contribution naming no transaction.
    @Test func movementsCustomersWindowsAndGroups() async throws {
        try await ReceiptTesting.withService(
            entitlements: ["premium": ["monthly", "annual"]], signedData: .init(roots: [TestPKI.root], appAppleIDs: [1234])
        ) { port, _ in
            let now = Int64(Date().timeIntervalSince1970 * 1000)
            let bought = now - day
            try await postAnaAndBen(port, ids: ("7101", "7102"), at: bought)
            let query = "environment=sandbox&resolution=month&from=\(dayText(bought))"
            func chart(_ path: String) async throws -> (status: Int, json: [String: Any], body: String) {
                let r = try await request(port, "GET", "/v1/admin/charts/\(path)", key: TestSecrets.secretKey)
                return (r.status, r.json, r.body)
            }
            // Both were first seen at their purchases, a day before their first post.
            let customers = try await chart("new_customers?\(query)")
            let first = (customers.json["values"] as? [[String: Any]])?.first
            #expect(first?["new_customers"] as? Int == 2, "\(customers.body)")
            let period = first?["period"] as? String ?? ""
            // Ana's 9.99 a month is new MRR; Ben's euros have no rate (reported, not guessed).
            let movement = try await chart("mrr_movement?\(query)")
            let moved = (movement.json["values"] as? [[String: Any]])?.first
            #expect(
                moved?["new_mrr"] as? String == "9.990" && moved?["net_mrr_movement"] as? String == "9.990", "\(movement.body)")
            #expect((movement.json["missing_rates"] as? [[String: Any]])?.isEmpty == false)
            // A first-seen cohort names its window.
            let conversion = try await chart("initial_conversion?\(query)&window=30d")
            #expect(conversion.json["window"] as? String == "30d", "\(conversion.body)")
            #expect((conversion.json["values"] as? [[String: Any]])?.first?["converted_customers"] as? Int == 2)
            // Split by country: a group per storefront.
            let split = try await chart("new_customers?\(query)&group_by=country")
            #expect(split.json["group_by"] as? String == "country", "\(split.body)")
            let groups = split.json["groups"] as? [[String: Any]] ?? []
            #expect(groups.map { $0["group"] as? String } == ["DEU", "USA"])
            #expect(groups.map { ($0["values"] as? [[String: Any]])?.first?["new_customers"] as? Int } == [1, 1])
            let csv = try await request(
                port, "GET", "/v1/admin/charts/new_customers?\(query)&group_by=country&format=csv", key: TestSecrets.secretKey)
            #expect(csv.body.hasPrefix("period,group,new_customers\r\n\(period),DEU,1\r\n"), "\(csv.body)")
            // One group's figure drills down to that group's customers, who name no transaction.
            let drill = try await chart(
                "new_customers/drill?\(query)&group_by=country&group=DEU&period=\(period)&measure=new_customers")
            let contributions = drill.json["contributions"] as? [[String: Any]] ?? []
            #expect(contributions.map { $0["app_user_id"] as? String } == ["ben"] && drill.json["group"] as? String == "DEU")
            #expect(contributions.first?["transaction_id"] is NSNull && contributions.first?["original_transaction_id"] is NSNull)
            for target in [
                "revenue?window=7d", "initial_conversion?window=8d", "revenue?group_by=planet", "revenue?group=USA",
                "revenue?group_by=environment&group=staging",
            ] {
                let r = try await chart(target)
                let error = r.json["error"] as? [String: Any]
                #expect(r.status == 400 && error?["code"] as? String == "invalid_request", "\(target): \(r.body)")
            }
        }
    }

    /// A cohort table answers the ages each cohort has reached: later ones are left out of its
    /// period (not null), in the whole and in each group; the CSV keeps every column.
    @Test func aCohortTableAnswersTheAgesItsCohortsReached() async throws {
        try await ReceiptTesting.withService(
            entitlements: ["premium": ["monthly", "annual"]], signedData: .init(roots: [TestPKI.root], appAppleIDs: [1234])
        ) { port, _ in
            let now = Int64(Date().timeIntervalSince1970 * 1000)
            try await postAnaAndBen(port, ids: ("7201", "7202"), at: now - day)
            // Four days: one before the cohort, the cohort's, today, and tomorrow (not begun).
            let query = "environment=sandbox&resolution=day&from=\(dayText(now - 2 * day))&to=\(dayText(now + 2 * day))"
            for path in ["cohorts?\(query)", "subscription_retention?\(query)", "cohorts?\(query)&group_by=country"] {
                let r = try await request(port, "GET", "/v1/admin/charts/\(path)", key: TestSecrets.secretKey)
                #expect(r.json["measures"] as? [String] != nil && r.status == 200, "\(path): \(r.body)")
                let measures = (r.json["measures"] as? [String] ?? []).filter { $0.hasPrefix("paying_") }
                #expect(measures == ["paying_0", "paying_1"], "\(path)")
                let tables =
                    (r.json["groups"] as? [[String: Any]])?.map { $0["values"] as? [[String: Any]] ?? [] }
                    ?? [r.json["values"] as? [[String: Any]] ?? []]
                for values in tables {
                    let keys = values.map { period in
                        period.keys.filter { $0.hasPrefix("paying_") || $0.hasPrefix("retention_") }.sorted()
                    }
                    #expect(
                        keys == [
                            ["paying_0", "paying_1", "retention_0", "retention_1"],
                            ["paying_0", "paying_1", "retention_0", "retention_1"], ["paying_0", "retention_0"], [],
                        ], "\(path): \(r.body)")
                    // The cohort's customers pay still: a day on, both; the day before had none.
                    #expect(values[0]["paying_0"] is NSNull && values[1]["paying_1"] as? Int ?? 0 >= 1, "\(path)")
                }
            }
            let csv = try await request(
                port, "GET", "/v1/admin/charts/cohorts?\(query)&format=csv", key: TestSecrets.secretKey)
            let lines = csv.body.split(separator: "\r\n")
            #expect(lines.first?.contains("paying_1,retention_1") == true && lines.count == 5, "\(csv.body)")
        }
    }

    /// verifyReceipt states no money; `receiptd backfill-prices` asks Apple's history (the
    /// simulator's Server API tells the same purchases with prices) once per purchase.
    @Test func pricesFromApplesHistoryAreStoredOnceWithTheirSourceAndCharted() async throws {
        let configuration = { path in testConfiguration(path: path, signedData: .init(roots: [TestPKI.root])) }
        try await withClockedService(configuration: configuration) { app, port, path, clock in
            #expect(try await postReceipt(port, user: "ann", "active_monthly:hist1").status == 200)
            #expect(try await postReceipt(port, user: "tia", "trial:hist2").status == 200)
            func price(_ user: String) async throws -> Any? {
                let read = try await request(port, "GET", "/v1/subscribers/\(user)", key: TestSecrets.secretKey)
                return ((read.json["subscriptions"] as? [String: Any])?["monthly"] as? [String: Any])?["price"]
            }
            #expect(try await price("ann") is NSNull)

            let summary = try await app.backfillPrices()
            #expect(summary.asked == 2 && summary.subscribers == 2, "\(summary)")
            #expect(summary.priced >= 2 && summary.unknown == 0 && summary.failed == 0, "\(summary)")
            #expect(
                try await price("ann") as? [String: String] == ["amount": "4.990", "currency": "USD", "source": "store_history"])
            #expect(
                try await price("tia") as? [String: String] == ["amount": "0.000", "currency": "USD", "source": "store_history"])
            // Each purchase is asked about once.
            #expect(try await app.backfillPrices() == BackfillPrices.Summary())
            // What the history taught survives the receipt posted again and `receiptd rederive`
            // (verifyReceipt's raw JSON states no money and no storefront).
            func money(_ db: Database) throws -> [String] {
                let q = try db.prepare(
                    "SELECT transaction_id, price, currency, price_source, storefront FROM transactions ORDER BY 1")
                var rows: [String] = []
                while try q.step() { rows.append((0..<5).map { q.text(Int32($0)) ?? "-" }.joined(separator: " ")) }
                return rows
            }
            let db = try TestDatabase.open(path)
            let learned = try money(db)
            #expect(learned.allSatisfy { $0.hasSuffix(" USD store_history USA") }, "\(learned)")
            #expect(try await postReceipt(port, user: "ann", "active_monthly:hist1").status == 200)
            let rederivation = Rederivation(state: SubscriberState(settings: app.configuration.entitlementSettings))
            let report = try rederivation.run(db, now: clock.now, dryRun: false)
            #expect(report.transactions == 0, "\(report)")
            #expect(try money(db) == learned)

            let from = dayText(clock.now - 120 * day)
            let revenue = try await request(
                port, "GET", "/v1/admin/charts/revenue?resolution=month&from=\(from)", key: TestSecrets.secretKey)
            let gross = (revenue.json["values"] as? [[String: Any]] ?? []).compactMap { $0["gross"] as? String }
            #expect(gross.contains { $0 != "0.000" }, "\(revenue.body)")
        }
    }

    @Test func aClientsPriceIsExactDecimalTextOrRefused() throws {
        let body = #"{"app_user_id":"a","receipt_data":"QUJDRA==","price":"9.99","currency":"EUR","product_id":"monthly"}"#
        let input = try Requests.appStorePurchase(try JSONValue.parse(Array(body.utf8)), user: "a")
        #expect(input.clientPrice == VerifyPurchase.ClientPrice(productID: "monthly", milliunits: 9990, currency: "EUR"))
        for bad in [
            #""price":9.99,"currency":"EUR","product_id":"m""#, #""price":"9.9999","currency":"EUR","product_id":"m""#,
            #""price":"-1","currency":"EUR","product_id":"m""#, #""price":"1e3","currency":"EUR","product_id":"m""#,
            #""price":"9.99","currency":"eur","product_id":"m""#, #""price":"9.99","product_id":"m""#,
            #""price":"9.99","currency":"EUR""#, #""price":"1234567890","currency":"EUR","product_id":"m""#,
        ] {
            let text = #"{"app_user_id":"a","receipt_data":"QUJDRA==","# + bad + "}"
            #expect(throws: ReceiptError.self, "\(bad)") {
                try Requests.appStorePurchase(try JSONValue.parse(Array(text.utf8)), user: "a")
            }
        }
    }

    @Test func aClientsPriceGoesOnTheNewestUnpricedTransactionOfItsProduct() {
        func stated(_ id: String, _ product: String, _ at: Int64, price: Price? = nil) -> Stated<Purchase> {
            Stated(
                Purchase(
                    transactionID: id, originalTransactionID: "o", productID: product, purchaseDate: at,
                    commerce: Commerce(price: price)), bundleID: bundle, rawJSON: "{}")
        }
        let store = Price(milliunits: 4990, currency: "USD", source: .store)
        let facts = VerifiedFacts(
            environment: .production,
            purchases: [
                stated("1", "monthly", 1), stated("2", "monthly", 2), stated("3", "monthly", 3, price: store),
                stated("4", "annual", 4),
            ])
        let priced = VerifyPurchase.pricing(facts, with: .init(productID: "monthly", milliunits: 9990, currency: "EUR"))
        #expect(
            priced.purchases.map(\.fact.commerce.price) == [
                nil, Price(milliunits: 9990, currency: "EUR", source: .client), store, nil,
            ])
    }
}

/// `2026-11-24` for an instant.
private func dayText(_ ms: Int64) -> String { String(CivilTime.rfc3339(ms).prefix(10)) }
