import Analytics
import Charts
import Entitlements
import Foundation
import HTTPServer
import ReceiptCore

extension Requests {
    /// `GET /v1/admin/charts/{chart}`'s path and query: `from`, `to`, `resolution`, `tz`,
    /// `currency` and the filters `app`, `product`, `storefront`, `environment`, `store`.
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
        return ReadChart.Input(
            chart: chart, from: try instant("from"), to: try instant("to"), resolution: resolution, zone: zone,
            currency: currency, filters: filters)
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
