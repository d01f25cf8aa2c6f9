import Entitlements

// The charts of customers by when they were first seen (``Newcomer``): how many came, what share
// converted (to anything, or to paying) within a window of that, and what they brought within a
// lifetime. A cohort's figures are in the period its customers were first seen in; what they do
// counts once it has happened and while it stands (a refunded payment stops counting).

extension ChartDefinition {
    /// New customers: people first seen in the period.
    static let newCustomers = ChartDefinition(
        measures: ["new_customers"], followsCustomers: true, followsSubscriptions: false,
        record: { $0.newCustomers() },
        close: { $0.zero(["new_customers"]) })

    /// Initial conversion: of the customers first seen in the period, those who started a trial
    /// or bought anything within the window (7 days unless asked).
    static let initialConversion = conversion("converted_customers", rate: "initial_conversion_rate", payments: false)

    /// Conversion to paying: of the customers first seen in the period, those who paid (not a
    /// free trial) within the window (7 days unless asked).
    static let conversionToPaying = conversion("new_paying_customers", rate: "paying_conversion_rate", payments: true)

    /// Realised LTV per customer: the net revenue the customers first seen in the period brought
    /// within the lifetime (30 days unless asked), per customer.
    static let ltvPerCustomer = lifetimeValue(per: "new_customers", ltv: "ltv_per_customer")

    /// Realised LTV per paying customer: the same revenue per customer who paid within the
    /// lifetime (30 days unless asked).
    static let ltvPerPayingCustomer = lifetimeValue(per: "new_paying_customers", ltv: "ltv_per_paying_customer")

    /// A conversion chart: new customers, those of them converted (`converted`), and the rate.
    private static func conversion(_ converted: String, rate: String, payments: Bool) -> ChartDefinition {
        ChartDefinition(
            measures: ["new_customers", converted, rate], parts: { $0 == rate ? [converted, "new_customers"] : nil },
            window: .days7, followsCustomers: true, followsSubscriptions: false,
            record: { $0.conversions(converted, payments: payments) },
            close: {
                $0.zero(["new_customers", converted])
                $0.ratio(rate, converted, "new_customers")
            })
    }

    /// A realised LTV chart: the cohort's customers (all, or those who paid), their net revenue
    /// within the lifetime, and the revenue per customer.
    private static func lifetimeValue(per customers: String, ltv: String) -> ChartDefinition {
        ChartDefinition(
            measures: [customers, "revenue", ltv], money: ["revenue", ltv],
            parts: { $0 == ltv ? ["revenue", customers] : nil },
            window: .days30, followsCustomers: true, followsSubscriptions: false,
            record: { $0.lifetimeValue(perPaying: customers == "new_paying_customers") },
            close: {
                $0.zero([customers, "revenue"])
                $0.quotient(ltv, "revenue", customers)
            })
    }
}

/// How a ledger becomes the customers' charts' items.
extension ItemRecorder {
    mutating func newCustomers() {
        for person in newcomers { flow("new_customers", of: person, at: person.firstSeen, detail: "first seen") }
    }

    /// Each customer in the cohort of their first being seen, and (per window) their first
    /// conversion within it: any purchase or trial, or a payment alone; a refunded payment stops
    /// counting, and the next one in the window (if any) counts from then.
    mutating func conversions(_ measure: String, payments: Bool) {
        defer { personGroup = nil }
        for person in newcomers {
            personGroup = group(ofPerson: person.value(of:))
            let cohort = person.firstSeen
            flow("new_customers", of: person, at: cohort, detail: "first seen", cohort: cohort)
            let within = person.entries.compactMap { e -> (Ledger.Entry, String)? in
                guard let at = e.purchase.purchaseDate, !e.purchase.isFamilyShared, !payments || e.purchase.isPayment,
                    let suffix = windowSuffix(of: at, firstSeen: cohort)
                else { return nil }
                return (e, suffix)
            }
            for (i, valid) in Newcomer.standing(within.map(\.0)) {
                let (e, suffix) = within[i]
                let why = e.purchase.isFreeTrial ? "trial started" : e.purchase.expiresDate == nil ? "bought" : "paid"
                flow(measure + suffix, at: e.purchase.purchaseDate!, 1, e, detail: why, cohort: cohort, valid: valid)
            }
        }
    }

    /// Each customer's (or each paying customer's) cohort, and the net revenue of their sales
    /// within the lifetime (per window).
    mutating func lifetimeValue(perPaying: Bool) {
        defer { personGroup = nil }
        for person in newcomers {
            personGroup = group(ofPerson: person.value(of:))
            let cohort = person.firstSeen
            if !perPaying { flow("new_customers", of: person, at: cohort, detail: "first seen", cohort: cohort) }
            let within = person.entries.compactMap { e -> (Ledger.Entry, String)? in
                guard let at = e.purchase.purchaseDate, let suffix = windowSuffix(of: at, firstSeen: cohort) else { return nil }
                return (e, suffix)
            }
            if perPaying {
                let paid = within.filter(\.0.purchase.isPayment)
                for (i, valid) in Newcomer.standing(paid.map(\.0)) {
                    let (e, suffix) = paid[i]
                    flow(
                        "new_paying_customers" + suffix, at: e.purchase.purchaseDate!, 1, e, detail: "paid", cohort: cohort,
                        valid: valid)
                }
            }
            for (e, suffix) in within { revenue("revenue" + suffix, of: e, cohort: cohort) }
        }
    }
}
