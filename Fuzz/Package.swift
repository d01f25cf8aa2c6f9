// swift-tools-version: 6.1
import PackageDescription

// libFuzzer targets for receiptd's HTTP/1.1 request parser and Apple's signed data. A package of
// its own so that neither llhttp nor the fuzzer entry points are ever part of receiptd's build:
// run them with `Scripts/fuzz.sh SECONDS` (it builds with the sanitizer flags these targets need).
//
// CLLHTTP compiles llhttp 8.1's C sources as Debian ships them (`apt-get install node-llhttp`);
// its files are symbolic links into /usr/share/llhttp and /usr/share/include/llhttp.
let package = Package(
    name: "receiptd-fuzz",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "receiptd", path: ".."),
        .package(url: "https://github.com/apple/swift-certificates.git", from: "1.21.1"),
    ],
    targets: [
        .target(name: "CLLHTTP", cSettings: [.unsafeFlags(["-Wno-unused-but-set-variable"])]),
        // Both parsers driven to one model of "what these bytes are", the comparison, the
        // documented cases where receiptd is stricter, and a request serializer.
        .target(
            name: "FuzzSupport",
            dependencies: ["CLLHTTP", .product(name: "HTTPServer", package: "receiptd")]
        ),
        // The same bytes to receiptd's parser and to llhttp; traps when they disagree.
        .executableTarget(name: "fuzz-differential", dependencies: ["FuzzSupport"]),
        // receiptd's parser alone: split-independence, consumed ≤ input, parse → serialize → parse.
        .executableTarget(name: "fuzz-parser", dependencies: ["FuzzSupport"]),
        // Apple's signed data: arbitrary JWS parts and payload JSON through verification (trusting
        // the test CA), fact mapping, derivation and rendering. Seeds: Fuzz/Seeds/fuzz-signed-data.
        .executableTarget(
            name: "fuzz-signed-data",
            dependencies: [
                .product(name: "ReceiptService", package: "receiptd"),
                .product(name: "X509", package: "swift-certificates"),
            ]),
    ],
    swiftLanguageModes: [.v6]
)
