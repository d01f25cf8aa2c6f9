/// Why Apple's signed data was refused. Each case has a stable `code` for API errors and logs
/// (Docs/apple-protocols.md §3.7 step by step: format, certificates, marker OIDs, validity, chain,
/// signature, then the claims).
package enum SignedDataError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Not a compact JWS of three base64url parts with a JSON header and payload, `alg` not ES256,
    /// or `x5c` missing or not three certificates (Apple: INVALID_JWT_FORMAT).
    case malformed(String)
    /// An `x5c` entry is not base64 DER of an X.509 certificate (INVALID_CERTIFICATE).
    case invalidCertificate(String)
    /// The intermediate (1.2.840.113635.100.6.2.1) or the leaf (1.2.840.113635.100.6.11.1) lacks
    /// Apple's marker extension.
    case missingMarker(CertificateRole)
    /// The leaf or the intermediate is not valid at the validation time (epoch ms).
    case notValidAt(CertificateRole, Int64)
    /// The chain does not lead to a configured trust anchor (the root sent in `x5c` is never trusted).
    case untrustedChain(String)
    /// The ES256 signature does not verify with the leaf's key over `header.payload`.
    case invalidSignature
    /// `bundleId` or, in production, `appAppleId` is not a configured app (INVALID_APP_IDENTIFIER).
    case wrongApp(String)
    /// `environment` is not one this service accepts (INVALID_ENVIRONMENT).
    case wrongEnvironment(String)

    package enum CertificateRole: String, Sendable, Equatable {
        case leaf, intermediate
    }

    /// Stable, machine-readable name of the reason.
    package var code: String {
        switch self {
        case .malformed: "invalid_jws"
        case .invalidCertificate: "invalid_certificate"
        case .missingMarker: "missing_marker_oid"
        case .notValidAt: "certificate_not_valid"
        case .untrustedChain: "untrusted_chain"
        case .invalidSignature: "invalid_signature"
        case .wrongApp: "wrong_app"
        case .wrongEnvironment: "wrong_environment"
        }
    }

    package var description: String {
        switch self {
        case .malformed(let why): "Not a valid Apple JWS: \(why)."
        case .invalidCertificate(let why): "An x5c certificate could not be read: \(why)."
        case .missingMarker(let role): "The \(role.rawValue) certificate lacks Apple's marker extension."
        case .notValidAt(let role, let ms): "The \(role.rawValue) certificate is not valid at the validation time (\(ms) ms)."
        case .untrustedChain(let why): "The certificate chain does not lead to a configured trust anchor: \(why)."
        case .invalidSignature: "The ES256 signature does not verify."
        case .wrongApp(let why): "The signed data is for another app: \(why)."
        case .wrongEnvironment(let env): "The signed data's environment \(env) is not accepted here."
        }
    }
}
