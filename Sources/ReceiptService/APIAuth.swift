import Crypto
import HTTPServer

/// Bearer-key authentication with two roles (issue 3): `public` keys may only post receipts and are
/// safe to ship inside an app; `secret` keys may do everything.
///
/// Keys are matched as exact bytes and in constant time: the presented key's SHA-256 is compared
/// with every configured key's digest (swift-crypto compares digests without an early exit), all of
/// them, whatever matched. `String ==` would accept a key spelled with U+212A KELVIN SIGN for `K`
/// or U+037E for `;` (canonical equivalence) and stop at the first differing character.
struct APIAuth: Sendable {
    enum Role: Sendable, Equatable {
        case `public`
        case secret
    }

    private let keys: [(digest: SHA256.Digest, role: Role)]

    init(publicKeys: [String], secretKeys: [String]) {
        keys =
            publicKeys.map { (SHA256.hash(data: Array($0.utf8)), Role.public) }
            + secretKeys.map { (SHA256.hash(data: Array($0.utf8)), Role.secret) }
    }

    /// The role `key` grants, if any; a key in both lists is secret.
    func role(of key: some Sequence<UInt8>) -> Role? {
        let presented = SHA256.hash(data: Array(key))
        var granted: Role?
        for entry in keys where entry.digest == presented {
            if granted != .secret { granted = entry.role }
        }
        return granted
    }

    /// Nil when the request may go on; else the 401/403 error response.
    func check(_ request: HTTPRequest, requires role: Role, requestID: String) -> HTTPResponse? {
        // Bytes, not Characters: "Bearer " followed by a combining mark is one Character longer.
        guard let header = request.headers[first: "Authorization"], header.utf8.count > 7,
            String(decoding: header.utf8.prefix(7), as: UTF8.self).lowercased() == "bearer ",
            let granted = self.role(of: header.utf8.dropFirst(7))
        else {
            return APIError.unauthorized.response(requestID: requestID)
        }
        if role == .secret && granted != .secret { return APIError.forbidden.response(requestID: requestID) }
        return nil
    }
}
