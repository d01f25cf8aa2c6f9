package import Foundation

/// Test material, bundled as this target's resources: `SignedData/` (Apple's test PKI from
/// app-store-server-library, signed samples; SOURCES.md there) and `AppStore/` (verifyReceipt and
/// V1 notification captures; SOURCES.md there).
package enum Fixtures {
    /// The file's URL, e.g. `url("SignedData/testCA.der")`.
    package static func url(_ path: String) -> URL {
        Bundle.module.url(forResource: "Fixtures/" + path, withExtension: nil)!
    }

    package static func bytes(_ path: String) -> [UInt8] { Array((try? Data(contentsOf: url(path))) ?? Data()) }

    package static func text(_ path: String) -> String { String(decoding: bytes(path), as: UTF8.self) }
}
