import Analytics
import Charts
import Entitlements
import Foundation
import HTTPServer
import JSON
import ReceiptCore

/// The subscription metrics (Docs/analytics.md) as JSON or CSV, their drill-downs, and a customer's money.
struct ChartRoutes: RouteGroup {
    let charts: ReadChart
    let customerMoney: ReadCustomerMoney

    func add(to api: inout API) {
        // What a customer paid, each transaction's refund, tax, commission and proceeds (estimated).
        api.on(.get, "/v1/subscribers/{app_user_id}/money", access: .secretKey) { [customerMoney] request, context in
            let environment = try Requests.environment(request)
            let (user, money) = try await customerMoney(try Requests.appUserID(in: context), environment: environment)
            return Responses.customerMoney(user, environment: environment, money)
        }
        // The subscription metrics (Docs/analytics.md), as JSON or CSV, and what makes each figure.
        api.on(.get, "/v1/admin/charts/{chart}", access: .secretKey) { [charts] request, context in
            let input = try Requests.chart(request, context)
            return Responses.chart(try await charts(input), csv: try Requests.wantsCSV(request))
        }
        api.on(.get, "/v1/admin/charts/{chart}/drill", access: .secretKey) { [charts] request, context in
            let input = try Requests.chart(request, context)
            let (period, measure) = try Requests.drill(request)
            let page = try Requests.drillPage(request)
            return Responses.drill(
                try await charts.drill(input, period: period, measure: measure, page: page), input: input, csv: page.everything)
        }
    }
}

extension Requests {
    /// `GET /v1/admin/charts/{chart}`'s path and query: `from`, `to`, `resolution`, `tz`,
    /// `currency`, the filters `app`, `product`, `storefront`, `environment`, `store`, and a
    /// first-seen cohort's `window` (`7d`, `30d`, `90d`, `365d`, `unbounded`), and `group_by`
    /// (`country`, `store`, `product`, `app`, `environment`) with, for a drill-down, its `group`.
    static func chart(_ request: HTTPRequest, _ context: RouteContext) throws(ReceiptError) -> ReadChart.Input {
        let name = context.parameters["chart"] ?? ""
        guard let chart = Chart(rawValue: name) else {
            throw .invalidRequest("`chart` must be one of \(Chart.allCases.map(\.rawValue).joined(separator: ", ")).")
        }
        let zone = try Self.zone(request.queryValue("tz"))
        // A date without a time is a day in the request's zone: `to=2026-03-01&tz=Europe/Berlin`
        // ends at Berlin's midnight, not UTC's (which would add a period after the window).
        func instant(_ key: String) throws(ReceiptError) -> Int64? {
            guard let text = request.queryValue(key) else { return nil }
            guard let t = FieldRules.instant(text) else {
                throw .invalidRequest("`\(key)` must be an RFC 3339 time or a date (YYYY-MM-DD).")
            }
            guard text.utf8.count == 10 else { return t }
            return PeriodGrid.instant(ofLocalDay: t / 86_400_000, zone: zone)
        }
        var resolution = Resolution.day
        if let text = request.queryValue("resolution") {
            guard let r = Resolution(rawValue: text) else { throw .invalidRequest("`resolution` must be day, week or month.") }
            resolution = r
        }
        var currency: String?
        if let code = request.queryValue("currency") {
            guard Price.isCurrencyCode(code) else { throw .invalidRequest("`currency` must be an ISO 4217 code such as USD.") }
            currency = code
        }
        var filters = ChartFilters()
        filters.app = request.queryValue("app")
        filters.product = request.queryValue("product")
        filters.storefront = request.queryValue("storefront")
        filters.environment = try Self.environment(request)
        if let store = request.queryValue("store") {
            guard let s = Store.named(store) else {
                throw .invalidRequest("`store` must be one of \(Store.all.map(\.rawValue).joined(separator: ", ")).")
            }
            filters.store = s
        }
        var window: ChartWindow?
        if let text = request.queryValue("window") {
            guard chart.defaultWindow != nil else {
                throw .invalidRequest("`window` is for the charts of customers by first seen, not \(chart.rawValue).")
            }
            guard let w = ChartWindow(rawValue: text) else {
                throw .invalidRequest("`window` must be one of \(ChartWindow.allCases.map(\.rawValue).joined(separator: ", ")).")
            }
            window = w
        }
        var groupBy: ChartDimension?
        if let text = request.queryValue("group_by") {
            guard let dimension = ChartDimension(rawValue: text) else {
                throw .invalidRequest(
                    "`group_by` must be one of \(ChartDimension.allCases.map(\.rawValue).joined(separator: ", ")).")
            }
            guard chart.splits(by: dimension) else {
                throw .invalidRequest("`group_by=\(dimension.rawValue)` splits refund_requests only, not \(chart.rawValue).")
            }
            groupBy = dimension
        }
        let group = request.queryValue("group")
        if group != nil, groupBy == nil { throw .invalidRequest("`group` names a value of `group_by`: give both.") }
        if groupBy == .environment, let group, !["production", "sandbox"].contains(group) {
            throw .invalidRequest("`group` of `group_by=environment` must be production or sandbox.")
        }
        return ReadChart.Input(
            chart: chart, from: try instant("from"), to: try instant("to"), resolution: resolution, zone: zone,
            currency: currency, filters: filters, window: window, groupBy: groupBy, group: group)
    }

    /// `environment`: `production` (the default) or `sandbox`.
    static func environment(_ request: HTTPRequest) throws(ReceiptError) -> String {
        guard let environment = request.queryValue("environment") else { return "production" }
        guard ["production", "sandbox"].contains(environment) else {
            throw .invalidRequest("`environment` must be production or sandbox.")
        }
        return environment
    }

    /// `tz`: `UTC` (the default) or an IANA zone name such as `Europe/Berlin`, with its daylight
    /// saving rules from the system's tz database.
    static func zone(_ name: String?) throws(ReceiptError) -> ZoneOffset {
        guard let name, name != "UTC" else { return .utc }
        guard name.utf8.count <= 64, name.contains("/"), let zone = TimeZone(identifier: name) else {
            throw .invalidRequest("`tz` must be UTC or an IANA time zone name such as Europe/Berlin.")
        }
        return ZoneOffset(name: zone.identifier) { ms in
            Int64(zone.secondsFromGMT(for: Date(timeIntervalSince1970: Double(ms) / 1000))) * 1000
        }
    }

    /// `period` (a period's first day, as the chart labels it) and `measure`.
    static func drill(_ request: HTTPRequest) throws(ReceiptError) -> (period: String, measure: String) {
        guard let period = request.queryValue("period"), let measure = request.queryValue("measure") else {
            throw .invalidRequest("`period` (YYYY-MM-DD, as the chart labels it) and `measure` are required.")
        }
        return (period, measure)
    }

    /// A drill-down's page: `cursor` (an earlier page's `next_cursor`) and `limit`; a CSV is
    /// every contribution at once.
    static func drillPage(_ request: HTTPRequest) throws(ReceiptError) -> ReadChart.DrillRequest {
        var page = ReadChart.DrillRequest(limit: try Requests.limit(request), everything: try wantsCSV(request))
        if let text = request.queryValue("cursor") {
            guard let cursor = DrillCursor(text: text) else {
                throw .invalidRequest("`cursor` must be a `next_cursor` from an earlier page.")
            }
            page.after = cursor
        }
        return page
    }

    /// `format=csv`; `json` or absent: JSON.
    static func wantsCSV(_ request: HTTPRequest) throws(ReceiptError) -> Bool {
        switch request.queryValue("format") {
        case nil, "json": false
        case "csv": true
        default: throw .invalidRequest("`format` must be json or csv.")
        }
    }
}

extension Responses {
    /// `{"chart", "currency", "resolution", "time_zone", "measures", "window", "values": [{"period", …, "left_out"}],
    /// "missing_rates", "missing_prices", "untaxed_storefronts", "source", "pending_changes"}`, or
    /// one CSV row per period.
    static func chart(_ a: ChartAnswer, csv: Bool) -> HTTPResponse {
        if csv {
            // Split: a row per period and group, the group's value a quoted field (it is data).
            guard a.groupBy == nil else {
                var lines = [(["period", "group"] + a.measures).joined(separator: ",")]
                for g in a.groups {
                    let columns = a.measures.map(g.figures.column)
                    for (i, p) in a.periods.enumerated() {
                        lines.append(
                            ([p.label, csvField(g.value)] + columns.map { c in c.flatMap { g.figures[i, $0] }.map(csvText) ?? "" })
                                .joined(separator: ","))
                    }
                }
                return Self.csv(lines, name: "\(a.chart.rawValue)-by-\(a.groupBy!.rawValue).csv")
            }
            let columns = a.measures.map(a.figures.column)
            var lines = [(["period"] + a.measures).joined(separator: ",")]
            for (i, p) in a.periods.enumerated() {
                lines.append(
                    ([p.label] + columns.map { c in c.flatMap { a.figures[i, $0] }.map(csvText) ?? "" }).joined(separator: ","))
            }
            return Self.csv(lines, name: "\(a.chart.rawValue).csv")
        }
        var fields: [Identifier: JSONValue] = [
            "chart": .string(a.chart.rawValue), "currency": .string(a.currency), "resolution": .string(a.resolution.rawValue),
            "time_zone": .string(a.zone), "measures": .array(a.measures.map(JSONValue.string)),
            "missing_rates": .array(
                a.missingRates.map {
                    .object([
                        "currency": .string($0.currency), "day": .string($0.day), "from": .string($0.from),
                        "to": .string($0.to), "transactions": .int(Int64($0.transactions)),
                    ])
                }),
            "missing_prices": .array(
                a.missingPrices.map {
                    .object([
                        "product_id": .string($0.productID), "storefront": $0.storefront.map(JSONValue.string) ?? .null,
                        "transactions": .int(Int64($0.transactions)),
                    ])
                }),
            "untaxed_storefronts": .array(a.untaxedStorefronts.map(JSONValue.string)),
            "source": .string(a.fromRollups ? "rollups" : "transactions"), "pending_changes": .int(a.pendingChanges),
        ]
        // A first-seen cohort's window, on the charts that have one; a split chart's groups.
        if let window = a.window { fields["window"] = .string(window.rawValue) }
        if let simulated = simulatedRates(a.simulatedRates) { fields["simulated_rates"] = simulated }
        var groups: [(String, (inout JSONOutput) -> Void)] = []
        if let groupBy = a.groupBy {
            fields["group_by"] = .string(groupBy.rawValue)
            groups = [
                (
                    "groups",
                    { out in
                        out.array(count: a.groups.count) { n, out in
                            let g = a.groups[n]
                            out.object([
                                ("group", { $0.string(g.value) }),
                                ("values", { periods(a, g.figures, leftOut: g.leftOut, into: &$0) }),
                            ])
                        }
                    }
                )
            ]
        }
        // The periods' measures, of the whole and of each group, written straight from the
        // answer into the body: a cohort chart by day is 730 periods of 1,463 measures.
        let size = JSONOutput.arrayOfObjectsSize(
            keys: ["period"] + a.measures, count: a.periods.count * (1 + a.groups.count), valueBytes: 6)
        return .json(
            bytes: JSONValue.object(fields).jsonBytes(
                adding: [("values", { periods(a, a.figures, leftOut: a.leftOut, into: &$0) })] + groups, capacity: size))
    }

    /// The periods of `figures` (the whole's or a group's) as an array of objects: `period`, each
    /// measure, and `left_out` on every period when any period's amounts left something out (no
    /// rate, no price), saying how much. A cohort table's period has the `paying_N` and
    /// `retention_N` it has reached (N < ``ChartAnswer/begun`` − its index): those of ages not
    /// begun are left out, not null. The measures' names are sorted and their columns found once.
    private static func periods(_ a: ChartAnswer, _ figures: Figures, leftOut: [Int64], into out: inout JSONOutput) {
        let marked = leftOut.contains { $0 != 0 }
        let keys = ["period"] + a.measures + (marked ? ["left_out"] : [])
        let (names, columns) = (JSONOutput.MemberNames(keys), a.measures.map(figures.column))
        // Each member's age (a cohort's paying_N and retention_N), by key; Int.min for the others.
        let ages = [Int.min] + a.ages.map { $0 ?? Int.min } + (marked ? [Int.min] : [])
        // A few periods' figures at a time, copied out period after period (Figures.rows), and
        // each period written by a plain loop: no call or reference count per figure.
        let (block, width) = (16, columns.count)
        var rows = [Measure?](repeating: nil, count: block * width)
        out.startArray()
        for first in stride(from: 0, to: a.periods.count, by: block) {
            let last = min(first + block, a.periods.count)
            figures.rows(first..<last, columns: columns, into: &rows)
            rows.withUnsafeBufferPointer { rows in
                for i in first..<last {
                    // Ages up to this one have begun (every age of a chart with no cohort table).
                    let begun = a.chart.hasCohortTable ? a.begun - i : Int.max
                    out.startObject(first: i == 0)
                    var written = false
                    for (n, k) in names.order.enumerated() where ages[k] < begun {
                        out.member(n, of: names, first: !written)
                        written = true
                        if k == 0 {
                            out.string(a.periods[i].label)
                        } else if k > width {
                            out.int(leftOut[i])
                        } else {
                            write(rows[(i - first) * width + k - 1], into: &out)
                        }
                    }
                    out.endObject()
                }
            }
        }
        out.endArray()
    }

    /// A figure as ``figure(_:)`` says, its text written from the stack into the answer.
    private static func write(_ m: Measure?, into out: inout JSONOutput) {
        switch m {
        case .count(let n)?: out.int(n)
        case .money(let milliunits)?: Money.withText(milliunits) { out.string(utf8: $0) }
        case .ratio(let n, let d)?: if !Money.withRatio(n, d, { out.string(utf8: $0) }) { out.null() }
        case nil: out.null()
        }
    }

    /// `{"chart", "period", "measure", "value", "contributions": [{app_user_id, original_transaction_id,
    /// transaction_id, value, detail}], "next_cursor", "source", "pending_changes"}`, or one CSV row
    /// per contribution.
    static func drill(_ page: DrillPage, input: ReadChart.Input, csv: Bool) -> HTTPResponse {
        let d = page.drill
        if csv {
            var lines = ["app_user_id,original_transaction_id,transaction_id,value,detail"]
            for c in d.contributions {
                lines.append(
                    [c.appUserID, c.originalTransactionID, c.transactionID ?? "", csvText(c.value), c.detail ?? ""]
                        .map(csvField).joined(separator: ","))
            }
            return Self.csv(lines, name: "\(input.chart.rawValue)-\(d.measure)-\(d.period.label).csv")
        }
        var fields: [Identifier: JSONValue] = [
            "chart": .string(input.chart.rawValue), "period": .string(d.period.label), "measure": .string(d.measure),
            "from": SubscriberDocument.time(d.period.start), "to": SubscriberDocument.time(d.period.end),
            "value": d.value.map(json) ?? .null,
            "contributions": .array(
                d.contributions.map { c in
                    .object([
                        // A person's own contribution (first seen) names no transaction.
                        "app_user_id": .string(c.appUserID),
                        "original_transaction_id": c.originalTransactionID.isEmpty ? .null : .string(c.originalTransactionID),
                        "transaction_id": c.transactionID.flatMap { $0.isEmpty ? nil : JSONValue.string($0) } ?? .null,
                        "value": json(c.value),
                        "detail": c.detail.map(JSONValue.string) ?? .null,
                    ])
                }),
            "next_cursor": page.next.map { .string($0.text) } ?? .null,
            "source": .string(page.fromRollups ? "rollups" : "transactions"), "pending_changes": .int(page.pendingChanges),
        ]
        if let simulated = simulatedRates(page.simulatedRates) { fields["simulated_rates"] = simulated }
        // One group's figure of a split chart names its group.
        if let group = input.group {
            fields["group_by"] = input.groupBy.map { .string($0.rawValue) } ?? .null
            fields["group"] = .string(group)
        }
        return .json(.object(fields))
    }

    /// Development's simulated rates as units per euro (`{"USD": "1.080000"}`), nil without them:
    /// said in every answer they may have converted, so that nobody takes its money for real figures.
    static func simulatedRates(_ rates: [String: Int64]) -> JSONValue? {
        guard !rates.isEmpty else { return nil }
        return .object(
            strings: rates.mapValues { rate in
                var text = ""
                Money.withFixed(rate, places: 6) { text = String(decoding: $0, as: UTF8.self) }
                return .string(text)
            })
    }

    /// A figure as the API writes it: a count as an integer; money as exact decimal text
    /// (`"12.990"`); a ratio as decimal text of four places, null when its denominator is 0.
    enum Figure {
        case integer(Int64)
        case text(String)
        case null
    }

    static func figure(_ m: Measure) -> Figure {
        switch m {
        case .count(let n): .integer(n)
        case .money(let milliunits): .text(Money.text(milliunits))
        case .ratio(let n, let d): Money.ratio(n, d).map(Figure.text) ?? .null
        }
    }

    static func json(_ m: Measure) -> JSONValue {
        switch figure(m) {
        case .integer(let n): .int(n)
        case .text(let text): .string(text)
        case .null: .null
        }
    }

    static func csvText(_ m: Measure) -> String {
        switch figure(m) {
        case .integer(let n): String(n)
        case .text(let text): text
        case .null: ""
        }
    }

    /// `{"app_user_id", "environment", "estimated": true, "transactions": [{transaction_id, …,
    /// price, unpaid, gross, refunds, refund_kind, net, tax, commission_percent, commission,
    /// proceeds}], "totals": [{currency, transactions, gross, refunds, net, tax, commission,
    /// proceeds}]}`: amounts as exact decimal text in each transaction's own currency.
    static func customerMoney(_ user: String, environment: String, _ m: CustomerMoney) -> HTTPResponse {
        func amount(_ milliunits: Int64) -> JSONValue { .string(Money.text(milliunits)) }
        let lines: [JSONValue] = m.lines.map { l in
            .object([
                "transaction_id": .string(l.transactionID), "original_transaction_id": .string(l.originalTransactionID),
                "product_id": .string(l.productID), "purchased_at": SubscriberDocument.time(l.purchaseDate),
                "price": SubscriberDocument.price(l.price), "unpaid": l.unpaid.map(JSONValue.string) ?? .null,
                "gross": amount(l.gross), "refunds": amount(l.refunds),
                "refund_kind": l.refundKind.map(JSONValue.string) ?? .null, "net": amount(l.net),
                "tax": l.tax.map(amount) ?? .null, "commission_percent": l.commissionPercent.map(JSONValue.int) ?? .null,
                "commission": amount(l.commission), "proceeds": amount(l.proceeds),
            ])
        }
        let totals: [JSONValue] = m.totals.map { t in
            .object([
                "currency": .string(t.currency), "transactions": .int(Int64(t.transactions)), "gross": amount(t.gross),
                "refunds": amount(t.refunds), "net": amount(t.net), "tax": amount(t.tax),
                "commission": amount(t.commission), "proceeds": amount(t.proceeds),
            ])
        }
        return .json(
            .object([
                "app_user_id": .string(user), "environment": .string(environment), "estimated": .bool(true),
                "transactions": .array(lines), "totals": .array(totals),
            ]))
    }

    /// RFC 4180: a field with a comma, quote or line break is quoted, quotes doubled. A field
    /// a spreadsheet would run as a formula (`=`, `+`, `-`, `@` first) gets a leading quote.
    static func csvField(_ s: String) -> String {
        var s = s
        if let first = s.first, "=+-@".contains(first), Int64(s) == nil, Double(s) == nil { s = "'" + s }
        guard s.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" }) else { return s }
        return "\"" + s.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    /// A download named `name`, which reaches a header: made of the chart's own names, and held
    /// to letters, digits, `.`, `_` and `-` all the same (anything else becomes `_`).
    static func csv(_ lines: [String], name: String) -> HTTPResponse {
        let safe = String(
            decoding: name.utf8.map { b in
                (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || b == 0x2E || b == 0x5F
                    || b == 0x2D ? b : 0x5F
            }, as: UTF8.self)
        return HTTPResponse(
            status: .ok,
            headers: ["Content-Type": "text/csv; charset=utf-8", "Content-Disposition": "attachment; filename=\"\(safe)\""],
            body: Array((lines.joined(separator: "\r\n") + "\r\n").utf8))
    }
}
