import Entitlements
import HTTPServer
import JSON
import ReceiptCore
import RevenueCatProtocol

/// Reading what the SDKs send.
enum SDKRequests {
    /// An app user id as receiptd takes them (``FieldRules``; the router has percent-decoded the
    /// path, once, and kept `+` as it is); 7220 when absent or empty.
    static func appUserID(_ text: String?) throws(SDKError) -> String {
        guard let text, !text.isEmpty else { throw .emptyAppUserID }
        do { return try FieldRules.appUserID(text) } catch { throw .invalidAppUserID(error.message) }
    }

    /// The body as a JSON object.
    static func object(_ body: [UInt8]) throws(SDKError) -> JSONValue {
        guard let json = try? JSONValue.parse(body), case .object = json else {
            throw .badRequest("The body must be a JSON object.")
        }
        return json
    }

    /// A member that is absent, null or a string (empty: absent).
    static func optionalText(_ body: JSONValue, _ name: String) throws(SDKError) -> String? {
        switch body[name] {
        case nil, .null?: return nil
        case .string(let s)?: return s.isEmpty ? nil : s
        default: throw .badRequest("`\(name)` must be a string.")
        }
    }

    /// Whether `token` is a JWS (three base64url parts): StoreKit 2's signed transaction, where
    /// StoreKit 1 sends a base64 receipt (which has no `.`).
    static func isJWS(_ token: String) -> Bool { token.utf8.filter { $0 == UInt8(ascii: ".") }.count == 2 }

    /// What iOS says it charged (`price` as decimal text, `currency`, `product_id`): kept for the
    /// purchase when no store states a price. Left out when any is missing or not as iOS sends it
    /// (Android's `price` is a number: never read as money).
    static func clientPrice(_ body: JSONValue) -> VerifyPurchase.ClientPrice? {
        guard case .string(let text)? = body["price"], let milliunits = FieldRules.milliunits(text),
            case .string(let currency)? = body["currency"], Price.isCurrencyCode(currency),
            case .string(let product)? = body["product_id"], (1...255).contains(product.utf8.count)
        else { return nil }
        return VerifyPurchase.ClientPrice(productID: product, milliunits: milliunits, currency: currency)
    }

    /// Whether `id` is one the SDK made up on the device: `$RCAnonymousID:` and 32 lowercase hex
    /// digits (what logOut makes): a secret of that device.
    static func isAnonymous(_ id: String) -> Bool {
        let prefix = "$RCAnonymousID:"
        guard id.hasPrefix(prefix) else { return false }
        let hex = id.utf8.dropFirst(prefix.utf8.count)
        return hex.count == 32 && hex.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) }
    }
}

/// A person's CustomerInfo written once (its `subscriber` member and tag), kept beside their
/// cached document (``SubscriberCache/Entry/companion``) for the event loop to answer from.
struct KeptCustomerInfo: Sendable {
    let subscriber: [UInt8]
    let tag: String
}

/// Writing what the SDKs read.
enum SDKResponses {
    /// A person's CustomerInfo, with `X-RevenueCat-ETag` (304 with an empty body when the SDK sent
    /// the same tag: it replays what it kept, dated by `X-RevenueCat-Request-Time`). `adding`:
    /// members beside `subscriber` (a purchase's `purchased_products`, …). Given to `keep` (the
    /// document cache, beside the reading it was written from), unless it depends on the request's
    /// time.
    static func customerInfo(
        _ customer: (snapshot: SubscriberSnapshot?, firstSeen: Int64), of appUserID: String, caller: SDKCaller,
        request: HTTPRequest, status: HTTPStatus = .ok, adding extra: [Identifier: JSONValue] = [:],
        keep: (@Sendable (KeptCustomerInfo) -> Void)? = nil
    ) -> HTTPResponse {
        let (subscriber, dependsOnNow) = CustomerInfo.subscriber(
            appUserID: customer.snapshot?.document.appUserID ?? appUserID,
            document: customer.snapshot.map { $0.document.rendered(version: $0.version, now: caller.now, explain: false) },
            firstSeen: customer.firstSeen, now: caller.now)
        let bytes = subscriber.jsonBytes
        // The tag covers what is not the request's time: the subscriber (and what a purchase adds).
        let tag = SubscriberDocument.fnv1a64([bytes] + extra.keys.sorted().map { extra[$0]!.jsonBytes })
        if let keep, customer.snapshot != nil, !dependsOnNow, extra.isEmpty {
            keep(KeptCustomerInfo(subscriber: bytes, tag: tag))
        }
        guard !extra.isEmpty else {
            return tagged(CustomerInfo.body(subscriber: bytes, now: caller.now), tag: tag, request: request, status: status)
        }
        var fields: [Identifier: JSONValue] = extra
        fields["request_date"] = .string(CivilTime.rfc3339(caller.now))
        fields["request_date_ms"] = .int(caller.now)
        fields["subscriber"] = subscriber
        return tagged(JSONValue.object(fields).jsonBytes, tag: tag, request: request, status: status)
    }

    /// `body` with its tag (by default its own digest); 304 and no body when the SDK has it.
    static func tagged(_ body: [UInt8], tag: String? = nil, request: HTTPRequest, status: HTTPStatus = .ok) -> HTTPResponse {
        let tag = tag ?? SubscriberDocument.fnv1a64([body])
        if status == .ok, request.headers[first: "X-RevenueCat-ETag"] == tag {
            return HTTPResponse(status: .notModified, headers: ["X-RevenueCat-ETag": tag], body: [])
        }
        return .json(bytes: body, status: status, headers: ["X-RevenueCat-ETag": tag])
    }
}
