import CCurl
import DatabaseEngine
import Storage

/// Versions of receiptd and the C libraries it runs on, for `receiptd version` and start-up logs.
package enum BuildInfo {
    package static let version = "0.1.0"
    /// libcurl's runtime version.
    package static var curlVersion: String { String(cString: receiptd_curl_version_number()) }
    /// SQLite's runtime version.
    package static var sqliteVersion: String { Database.sqliteVersion }
}
