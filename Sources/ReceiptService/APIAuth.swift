import HTTPServer

/// Bearer-key authentication with two roles (issue 3): `public` keys may only post receipts and are
/// safe to ship inside an app; `secret` keys may do everything.
struct APIAuth: Sendable {
    enum Role: Sendable, Equatable {
        case `public`
        case secret
    }

    private let roles: [String: Role]

    init(publicKeys: [String], secretKeys: [String]) {
        var roles: [String: Role] = [:]
        for key in publicKeys { roles[key] = .public }
        for key in secretKeys { roles[key] = .secret }  // a key in both lists is secret
        self.roles = roles
    }

    /// Nil when the request may go on; else the 401/403 error response.
    func check(_ request: HTTPRequest, requires role: Role, requestID: String) -> HTTPResponse? {
        guard let header = request.headers[first: "Authorization"], header.count > 7,
            header.prefix(7).lowercased() == "bearer ", let granted = roles[String(header.dropFirst(7))]
        else {
            return APIError.unauthorized.response(requestID: requestID)
        }
        if role == .secret && granted != .secret { return APIError.forbidden.response(requestID: requestID) }
        return nil
    }
}
