import Crypto
import HTTPServer
import ReceiptCore

/// Bearer-key authentication with two roles: `public` keys may only post receipts and are
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

    /// The presented bearer key, when the request carries one (bytes, not Characters: "Bearer "
    /// followed by a combining mark is one Character longer).
    static func bearerKey(_ request: HTTPRequest) -> Substring.UTF8View? {
        guard let header = request.headers[first: "Authorization"], header.utf8.count > 7,
            String(decoding: header.utf8.prefix(7), as: UTF8.self).lowercased() == "bearer "
        else { return nil }
        return header[...].utf8.dropFirst(7)
    }

    /// Who asked, for an audit row: "key:" and the first 12 hex digits of the SHA-256 of the
    /// request's bearer key (never the key), "key:none" without one.
    static func fingerprint(_ request: HTTPRequest) -> String {
        guard let key = bearerKey(request) else { return "key:none" }
        let digest = SHA256.hash(data: Array(key))
        return "key:" + digest.prefix(6).map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
    }

    /// Who the request's key says is asking: a backend only with a secret key; anything else
    /// (a public key, which anyone can copy) is an app.
    func caller(_ request: HTTPRequest) -> Caller {
        guard let key = Self.bearerKey(request), role(of: key) == .secret else { return .app }
        return .backend
    }

    /// Returns when `access` lets the request through; else throws 401 (no or an unknown key) or
    /// 403 (a public key where a secret one is needed).
    func require(_ access: Access, _ request: HTTPRequest) throws(APIError) {
        let needed: Role
        switch access {
        case .anyone: return
        case .publicKey: needed = .public
        case .secretKey: needed = .secret
        }
        guard let key = Self.bearerKey(request), let granted = role(of: key) else { throw .unauthorized }
        if needed == .secret && granted != .secret { throw .forbidden }
    }
}

/// Who may call a route, declared with the route (``API``).
enum Access: Sendable {
    /// No key: liveness, readiness, the contract, Apple's notifications (which prove themselves).
    case anyone
    /// A public key (shipped inside apps) or a secret one.
    case publicKey
    /// A secret key (backends, support).
    case secretKey
}
