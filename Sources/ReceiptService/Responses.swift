import AppStore
import CustomerOffers
import Entitlements
import HTTPServer
import JSON
import Notifications
import Operations
import ReceiptCore
import StoreCalls
import Webhooks

/// Use-case results as the API's JSON bodies.
enum Responses {
    /// The subscriber document with its `ETag` (`W/"<version>"`, `W/"<version>-explained"`), or 304
    /// when `If-None-Match` names it. `explain` adds the explanations.
    static func document(_ snapshot: SubscriberSnapshot, explain: Bool, request: HTTPRequest) -> HTTPResponse {
        if let proof = snapshot.proven, case let named = snapshot.document.identifiers, !named.isSubset(of: proof),
            case let visible = snapshot.document.visible(provenBy: proof), !named.isSubset(of: visible)
        {
            // An app's answer naming purchases it did not prove it holds: those ids are null, and
            // "(hidden)" where an explanation's words quote one. Docs/security.md.
            let tag = "W/\"\(snapshot.version)\(explain ? "-explained" : "")-partial\""
            if let unchanged = notModified(tag, request) { return unchanged }
            let shown = PurchaseIdentifiers.redacted(
                snapshot.document.rendered(version: snapshot.version, now: snapshot.now, explain: explain), keeping: visible)
            return HTTPResponse(
                status: .ok, headers: ["Content-Type": "application/json", "ETag": tag], body: shown.jsonBytes)
        }
        let tag = entityTag(version: snapshot.version, explain: explain)
        if let unchanged = notModified(tag, request) { return unchanged }
        return HTTPResponse(
            status: .ok, headers: ["Content-Type": "application/json", "ETag": tag],
            body: explain
                ? snapshot.document.rendered(version: snapshot.version, now: snapshot.now, explain: true).jsonBytes
                : snapshot.document.body(version: snapshot.version, now: snapshot.now))
    }

    /// A document's weak ETag: its version, and whether it carries explanations.
    static func entityTag(version: Int64, explain: Bool) -> String { "W/\"\(version)\(explain ? "-explained" : "")\"" }

    /// 304 when `If-None-Match` names `tag`.
    static func notModified(_ tag: String, _ request: HTTPRequest) -> HTTPResponse? {
        let wanted = request.headers[all: "If-None-Match"]
        guard !wanted.isEmpty, EntityTag.weakMatch(tag, anyOf: wanted.joined(separator: ",")) else { return nil }
        return HTTPResponse(status: .notModified, headers: ["ETag": tag])
    }

    /// The last known document while Apple is down, marked `"stale": true` with its age
    /// (`stale_seconds` since `verified_at`, Apple's last word on the user).
    static func stale(_ lastKnown: ReceiptError.LastKnown, explain: Bool) -> JSONValue {
        let snapshot = lastKnown.snapshot
        var document = snapshot.document.rendered(version: snapshot.version, now: snapshot.now, explain: explain)
        if let proof = snapshot.proven {
            document = PurchaseIdentifiers.redacted(document, keeping: PurchaseIdentifiers.widened(proof, in: document))
        }
        guard case .object(var fields) = document else { return .null }
        fields["stale"] = .bool(true)
        fields["verified_at"] = SubscriberDocument.time(lastKnown.verifiedAt)
        let age = lastKnown.verifiedAt.map { max(0, snapshot.now - $0) / 1000 }
        fields["stale_seconds"] = age.map { .int($0) } ?? .null
        return .object(fields)
    }
}
