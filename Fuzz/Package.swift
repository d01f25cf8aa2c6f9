// swift-tools-version: 6.1
import PackageDescription

// libFuzzer targets for receiptd's HTTP/1.1 request parser. A package of its own so that neither
// llhttp nor the fuzzer entry points are ever part of receiptd's build: run them with
// `Scripts/fuzz.sh SECONDS` (it builds with the sanitizer flags these targets need).
//
// CLLHTTP compiles llhttp 8.1's C sources as Debian ships them (`apt-get install node-llhttp`);
// its files are symbolic links into /usr/share/llhttp and /usr/share/include/llhttp.
let package = Package(
    name: "receiptd-fuzz",
    platforms: [.macOS(.v15)],
    dependencies: [.package(name: "receiptd", path: "..")],
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
    ],
    swiftLanguageModes: [.v6]
)
