package import AppStore
import AppStoreSimulator
package import X509

/// Apple's test PKI (Fixtures/SignedData, SOURCES.md there): its root is the trust anchor in
/// tests, and its leaf key signs every V2 notification and StoreKit 2 transaction they send.
package enum TestPKI {
    /// The same PKI the simulator signs with (one copy of the keys in the source tree).
    package static let root = SimulatorPKI.root
    package static let signer = SimulatorPKI.signer
}
