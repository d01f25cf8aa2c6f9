import HTTPServer
import ReceiptCore

/// The web console's files (Docs/console.md), compiled into the binary from `Console/`: one page
/// and its script and style sheet, served at `/console`. The page holds no data and no key; its
/// script asks for the secret key, keeps it in the tab's session storage, and calls the API.
///
/// Everything is sent with a strict Content-Security-Policy: script and style from these files
/// only (no inline script, no `eval`, no other origin), and the script writes every value as text
/// (never HTML), so a crafted app_user_id or product id cannot run in a support agent's browser.
struct Console: Sendable {
    struct File: Sendable {
        var bytes: [UInt8]
        var contentType: String
        var tag: String
    }

    static let policy =
        "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; "
        + "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

    let files: [String: File]

    init() {
        func file(_ bytes: [UInt8], _ type: String) -> File {
            File(bytes: bytes, contentType: type, tag: "\"" + SubscriberDocument.fnv1a64([bytes]) + "\"")
        }
        files = [
            "/console": file(PackageResources.index_html, "text/html; charset=utf-8"),
            "/console/console.js": file(PackageResources.console_js, "text/javascript; charset=utf-8"),
            "/console/console.css": file(PackageResources.console_css, "text/css; charset=utf-8"),
        ]
    }

    var paths: [String] { files.keys.sorted() }

    func response(_ path: String, request: HTTPRequest) -> HTTPResponse {
        guard let file = files[path] else { return HTTPResponse(status: .notFound, headers: [:], body: []) }
        let headers: HTTPHeaders = [
            "ETag": file.tag, "Cache-Control": "no-cache",
            "Content-Security-Policy": Self.policy, "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer",
            "X-Frame-Options": "DENY",
        ]
        if request.headers[first: "If-None-Match"] == file.tag {
            return HTTPResponse(status: .notModified, headers: headers, body: [])
        }
        var full = headers
        full.add(name: "Content-Type", value: file.contentType)
        return HTTPResponse(status: .ok, headers: full, body: file.bytes)
    }
}
