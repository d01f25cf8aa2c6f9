package import Entitlements
package import JSON

/// What an app offers for sale, from `Config/offerings.json` (Docs/revenuecat-sdk.md): offerings
/// of packages, each package naming its App Store product and its Google Play product (with the
/// base plan a Play subscription needs), and the current offering. Served to RevenueCat's SDKs as
/// `GET /v1/subscribers/{id}/offerings`, per platform.
package struct Offerings: Sendable, Equatable {
    package var current: String?
    package var offerings: [Offering] = []

    package init(current: String? = nil, offerings: [Offering] = []) {
        self.current = current
        self.offerings = offerings
    }

    package struct Offering: Sendable, Equatable {
        package var identifier: String
        package var description: String
        /// Free-form, passed to the app as it is.
        package var metadata: JSONValue?
        package var packages: [Package]
    }

    package struct Package: Sendable, Equatable {
        /// `$rc_monthly`, `$rc_annual`, … or the app's own.
        package var identifier: String
        package var appStore: String?
        package var playStore: PlayProduct?
    }

    /// A Google Play product: a subscription with its base plan, or a one-time product.
    package struct PlayProduct: Sendable, Equatable {
        package var product: String
        package var basePlan: String?
    }

    /// The store an SDK buys from, which decides the product ids it is given.
    package enum Platform: String, Sendable, CaseIterable {
        case appStore = "app_store"
        case playStore = "play_store"
    }

    /// The answer to `GET /v1/subscribers/{id}/offerings` for an app on `platform`: each offering
    /// with the packages that have a product there (`platform_product_plan_identifier` only on
    /// Play subscriptions: iOS reads another plan id as a billing plan, and Android drops a
    /// one-time package that carries one). `current_offering_id` always present (Android requires
    /// the key).
    package func json(for platform: Platform) -> JSONValue {
        .object([
            "current_offering_id": current.map(JSONValue.string) ?? .null,
            "offerings": .array(
                offerings.map { offering in
                    .object([
                        "identifier": .string(offering.identifier), "description": .string(offering.description),
                        "metadata": offering.metadata ?? .null,
                        "packages": .array(
                            offering.packages.compactMap { package -> JSONValue? in
                                switch platform {
                                case .appStore:
                                    return package.appStore.map {
                                        .object([
                                            "identifier": .string(package.identifier), "platform_product_identifier": .string($0),
                                        ])
                                    }
                                case .playStore:
                                    guard let play = package.playStore else { return nil }
                                    var fields: [Identifier: JSONValue] = [
                                        "identifier": .string(package.identifier),
                                        "platform_product_identifier": .string(play.product),
                                    ]
                                    if let plan = play.basePlan { fields["platform_product_plan_identifier"] = .string(plan) }
                                    return .object(fields)
                                }
                            }),
                    ])
                }),
        ])
    }

    /// The answer to `GET /v1/product_entitlement_mapping` (what the SDKs grant from on the device
    /// while receiptd answers 5xx): every product `rules` names, on `platform`, with its
    /// entitlements; a Play subscription once per base plan offered, keyed `product:plan`.
    package func entitlementMapping(_ rules: EntitlementRules, for platform: Platform) -> JSONValue {
        var byProduct: [String: [String]] = [:]
        for (entitlement, products) in rules.products {
            for product in products { byProduct[product, default: []].append(entitlement) }
        }
        var mapping: [Identifier: JSONValue] = [:]
        for (product, entitlements) in byProduct {
            let granted = JSONValue.array(entitlements.sorted().map(JSONValue.string))
            let plans =
                platform == .playStore
                ? Set(
                    offerings.flatMap(\.packages).compactMap { $0.playStore }.filter { $0.product == product }
                        .compactMap(\.basePlan)) : []
            if plans.isEmpty {
                mapping[Identifier(product)] = .object(["product_identifier": .string(product), "entitlements": granted])
            }
            for plan in plans {
                mapping[Identifier(product + ":" + plan)] = .object([
                    "product_identifier": .string(product), "base_plan_id": .string(plan), "entitlements": granted,
                ])
            }
        }
        return .object(["product_entitlement_mapping": .object(mapping)])
    }
}

/// `Config/offerings.json` is not what Docs/revenuecat-sdk.md describes; the message names the member.
package struct OfferingsError: Error, Sendable, Equatable, CustomStringConvertible {
    package var description: String

    init(_ description: String) { self.description = description }
}

extension Offerings {
    /// Reads `{"current": "<offering id>"?, "offerings": [{"identifier", "description",
    /// "metadata"?, "packages": [{"identifier", "app_store"?: "<product>", "play_store"?:
    /// {"product", "base_plan"?}}]}]}`. Unknown members are refused; identifiers are unique (an
    /// offering among offerings, a package within its offering); every package names a product;
    /// `current` names an offering. A Play product that `catalog` calls a subscription (anything
    /// not listed as one-time) needs its base plan: Android drops a subscription package without
    /// one.
    package init(json bytes: [UInt8], catalog: Catalog) throws(OfferingsError) {
        guard let value = try? JSONValue.parse(bytes), case .object(let top) = value else {
            throw OfferingsError("not a JSON object")
        }
        try Self.only(["current", "offerings"], in: top, at: "")
        func text(_ v: JSONValue?, _ at: String) throws(OfferingsError) -> String {
            guard case .string(let s)? = v, !s.isEmpty else { throw OfferingsError("\(at) must be a non-empty string") }
            return s
        }
        guard case .array(let list)? = top["offerings"] else { throw OfferingsError("\"offerings\" must be an array") }
        var seen: Set<String> = []
        for (i, item) in list.enumerated() {
            let at = "offerings[\(i)]"
            guard case .object(let fields) = item else { throw OfferingsError("\(at) must be an object") }
            try Self.only(["identifier", "description", "metadata", "packages"], in: fields, at: at)
            let identifier = try text(fields["identifier"], "\(at).identifier")
            guard seen.insert(identifier).inserted else {
                throw OfferingsError("\(at).identifier \"\(identifier)\" is used twice")
            }
            let metadata = fields["metadata"].flatMap { $0 == .null ? nil : $0 }
            if let metadata, case .object = metadata {
            } else if metadata != nil {
                throw OfferingsError("\(at).metadata must be an object")
            }
            guard case .array(let packageList)? = fields["packages"] else {
                throw OfferingsError("\(at).packages must be an array")
            }
            var packages: [Package] = []
            for (j, p) in packageList.enumerated() {
                let pat = "\(at).packages[\(j)]"
                guard case .object(let pf) = p else { throw OfferingsError("\(pat) must be an object") }
                try Self.only(["identifier", "app_store", "play_store"], in: pf, at: pat)
                let id = try text(pf["identifier"], "\(pat).identifier")
                guard !packages.contains(where: { $0.identifier == id }) else {
                    throw OfferingsError("\(pat).identifier \"\(id)\" is used twice in \(identifier)")
                }
                let apple = try pf["app_store"].map { v throws(OfferingsError) in try text(v, "\(pat).app_store") }
                var play: PlayProduct?
                if let v = pf["play_store"] {
                    guard case .object(let g) = v else { throw OfferingsError("\(pat).play_store must be an object") }
                    try Self.only(["product", "base_plan"], in: g, at: "\(pat).play_store")
                    let product = try text(g["product"], "\(pat).play_store.product")
                    let plan = try g["base_plan"].map { v throws(OfferingsError) in try text(v, "\(pat).play_store.base_plan") }
                    if plan == nil, (catalog.declared(product) ?? .autoRenewable) == .autoRenewable {
                        throw OfferingsError(
                            "\(pat).play_store.base_plan is needed: \(product) is a subscription (Config/products.json), and Android drops a subscription package without its base plan"
                        )
                    }
                    play = PlayProduct(product: product, basePlan: plan)
                }
                guard apple != nil || play != nil else {
                    throw OfferingsError("\(pat) names no product: give app_store, play_store or both")
                }
                packages.append(Package(identifier: id, appStore: apple, playStore: play))
            }
            let description = try text(fields["description"], "\(at).description")
            offerings.append(Offering(identifier: identifier, description: description, metadata: metadata, packages: packages))
        }
        if let c = top["current"], c != .null {
            let id = try text(c, "current")
            guard seen.contains(id) else { throw OfferingsError("current names \"\(id)\", which is not an offering") }
            current = id
        }
    }

    private static func only(_ known: [String], in fields: [Identifier: JSONValue], at: String) throws(OfferingsError) {
        for key in fields.keys.map(\.string).sorted() where !known.contains(key) {
            throw OfferingsError("\(at.isEmpty ? "" : at + ": ")unknown member \"\(key)\"")
        }
    }
}
