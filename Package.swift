// swift-tools-version: 6.1
import PackageDescription

// receiptd: a self-hosted validator of App Store and Google Play purchases.
// Targets come in rings: tools (receiptd, the simulators, ReceiptTesting) → the HTTP edge
// (ReceiptService) → the use cases (the kernel ReceiptCore, and its rooms StoreCalls,
// Notifications, Charts, Operations, CustomerOffers) → Webhooks → the stores (AppStore,
// GooglePlay: one target each) and Storage over DatabaseEngine → the pure domain (Entitlements,
// Analytics, Offers, Retention) → the base (JSON, Clocks, Identifiers, Resilience, CurlTransport,
// HTTPServer, Workers, Gzip). C lives only in the C* system-library targets. The exact edges are LayeringTests.allowedImports, which
// fails on any other; Docs/architecture.md "Targets" draws them and says each target's one job.
// Every Swift target builds with the same strictness (the end of this file).
// What the use cases' test targets share beside the room each tests.
let useCaseTestDependencies: [Target.Dependency] = [
    "ReceiptCore", "ReceiptService", "ReceiptTesting", "Storage", "DatabaseEngine", "AppStore", "Entitlements", "JSON",
    "Identifiers", "Analytics", "Clocks", "Workers", "GooglePlay", "GooglePlaySimulator",
    .product(name: "Logging", package: "swift-log"),
    .product(name: "MetricsTestKit", package: "swift-metrics"), .product(name: "Crypto", package: "swift-crypto"),
]

let package = Package(
    name: "receiptd",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "receiptd", targets: ["receiptd"]),
        .executable(name: "http-inspect", targets: ["http-inspect"]),
        .library(name: "HTTPServer", targets: ["HTTPServer"]),
        // For Fuzz/ (fuzz-signed-data): the service's modules, built there with -enable-testing.
        .library(
            name: "ReceiptService",
            targets: ["ReceiptService", "ReceiptCore", "AppStore", "Entitlements", "Storage", "JSON", "Clocks"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        // No traits: its JSON trait links the whole of Foundation and ICU (JSONSerialization);
        // Config/*.json is read by our JSONConfigSnapshot on FoundationEssentials instead.
        .package(url: "https://github.com/apple/swift-configuration.git", from: "1.4.0", traits: []),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.5.2"),
        .package(url: "https://github.com/apple/swift-system.git", from: "1.8.1"),
        // X.509 chains for Apple's signed data (what Apple's own server library uses).
        .package(url: "https://github.com/apple/swift-certificates.git", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-asn1.git", from: "1.7.4"),
        // Metrics: the API our targets record to, and its Prometheus text backend for GET /metrics.
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        // Long-running parts (HTTP servers, the curl thread, the refresher) as Services in one
        // ServiceGroup: start order, reverse-order graceful shutdown on SIGTERM/SIGINT.
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        // Tests only: starts the built binaries. Foundation's Process reads /proc/self/fd past the
        // end of readdir's buffer and crashes once the test process holds ~1,400 descriptors.
        .package(url: "https://github.com/swiftlang/swift-subprocess.git", from: "1.0.2"),
    ],
    targets: [
        // C libraries, through Debian's -dev packages.
        .systemLibrary(name: "CCurl", providers: [.apt(["libcurl4-openssl-dev"])]),
        .systemLibrary(name: "CSQLite", providers: [.apt(["libsqlite3-dev"])]),
        .systemLibrary(name: "CPostgreSQL", providers: [.apt(["libpq-dev"])]),
        .systemLibrary(name: "CZlib", providers: [.apt(["zlib1g-dev"])]),
        // epoll(7), eventfd(2), accept4(2): Linux APIs Glibc's Swift module does not export.
        .systemLibrary(name: "CLinux"),

        // Text compared as its exact bytes: ids, API keys, JSON member names. Imports nothing.
        .target(name: "Identifiers"),
        // Wall time (epoch ms) and monotonic time with sleeping, injectable. Imports nothing.
        .target(name: "Clocks"),
        // The one JSON value: a strict RFC 8259 parser and a canonical writer. Imports only Identifiers.
        .target(name: "JSON", dependencies: ["Identifiers"]),
        // Our HTTP/1.1 server on POSIX sockets and epoll.
        .target(
            name: "HTTPServer",
            dependencies: [
                "CLinux", "JSON", .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // Outbound HTTPS over libcurl: one thread drives every exchange in flight (Apple's, Google's,
        // the webhooks'). Knows nothing of what it carries.
        .target(
            name: "CurlTransport",
            dependencies: ["CCurl", .product(name: "ServiceLifecycle", package: "swift-service-lifecycle")]),
        // Calling anything that may be down: a circuit breaker, single flight per key, a cap on calls
        // at once. Pure and store-neutral, so the charts and the stores share them without importing
        // each other.
        .target(name: "Resilience"),
        // zlib for what receiptd compresses: a gzip file being written (exports), text kept
        // deflated in a column (chart rollups).
        .target(name: "Gzip", dependencies: ["CZlib"]),
        // Background work that outlives a request: a durable queue worked under leases, a pass
        // every interval, the doorbell that wakes a worker, quiescence tests wait for, work
        // started and not awaited. Knows no store and no database.
        .target(
            name: "Workers",
            dependencies: [
                "Clocks", .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]),
        // Apple, in Google Play's shape: one store, one target. verifyReceipt (wire models read
        // tolerantly, the retry and fallback rules, its client), signed data (JWS: the x5c chain to
        // a configured root, ES256, the decoded payloads), the App Store Server API (the JWT it
        // takes, its client) and what their answers state as facts (Facts/AppleFacts.swift).
        .target(
            name: "AppStore",
            dependencies: [
                "CurlTransport", "Clocks", "Entitlements", "Identifiers", "JSON", "Resilience",
                .product(name: "Logging", package: "swift-log"), .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "X509", package: "swift-certificates"), .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]),
        // Pure domain: subscription state from stored facts, products → entitlements. No I/O.
        .target(name: "Entitlements", dependencies: ["Identifiers"]),
        // Money and the subscription metrics: prices, proceeds, exchange rates, the charts and
        // their drill-downs, computed from a ledger of facts. Pure: no I/O, the clock passed in.
        .target(name: "Analytics", dependencies: ["Entitlements", "Identifiers"]),
        // Google Play: the service account's sign-in, the Play Developer API's purchase resources
        // read and what they state as facts (pure), and its client.
        .target(
            name: "GooglePlay",
            dependencies: [
                "JSON", "Entitlements", "Identifiers", "Clocks", "CurlTransport",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"), .product(name: "CoreMetrics", package: "swift-metrics"),
            ]),
        // Offers decided on the server: the signatures StoreKit asks for before it shows a
        // promotional offer or an introductory price, and who may have which. Pure: the nonce and
        // the time given.
        .target(name: "Offers", dependencies: ["JSON", "Entitlements", .product(name: "Crypto", package: "swift-crypto")]),
        // RevenueCat's client SDKs' protocol, as receiptd speaks it to them: CustomerInfo written
        // from receiptd's subscriber document, the offerings of Config/offerings.json, the SDKs'
        // errors. Pure.
        .target(name: "RevenueCatProtocol", dependencies: ["JSON", "Entitlements", "Identifiers"]),
        // Apple's Retention Messaging: which message, switch-plan or promotional offer to
        // answer a customer about to cancel, chosen by Config/retention.json's rules. Pure.
        .target(name: "Retention", dependencies: ["JSON", "Entitlements", "Analytics", "Identifiers"]),
        // A loopback Google Play (its OAuth token endpoint and the Play Developer API's purchases) with
        // scripted purchases, on our HTTP server: tests and offline runs.
        .target(
            name: "GooglePlaySimulator",
            dependencies: [
                "HTTPServer", "GooglePlay", "Entitlements", "JSON", "Clocks", .product(name: "Logging", package: "swift-log"),
                .product(name: "CryptoExtras", package: "swift-crypto"), .product(name: "Crypto", package: "swift-crypto"),
            ]),
        // A loopback App Store (verifyReceipt and the Server API) with scripted purchases, on our HTTP
        // server, signing with Apple's public test PKI: tests and offline runs.
        .target(
            name: "AppStoreSimulator",
            dependencies: [
                "HTTPServer", "AppStore", "JSON", "Clocks", .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"), .product(name: "SwiftASN1", package: "swift-asn1"),
            ]),
        // The database engine, knowing no table of receiptd's: SQLite and PostgreSQL connections
        // and statements, the queue that serialises writes and group-commits them beside readers
        // (and PostgreSQL's pools, replicas and change feed), the migrator, the change log, the
        // copy from SQLite to PostgreSQL.
        .target(
            name: "DatabaseEngine",
            dependencies: [
                "CSQLite", "CPostgreSQL", "CLinux", .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
            ]),
        // The stores: the domain's facts (Entitlements) with their provenance, the queues, the
        // rollups, erasure, over the engine.
        .target(
            name: "Storage",
            dependencies: [
                "DatabaseEngine", "CSQLite", "Identifiers", "Entitlements", "Analytics", "JSON", "Gzip",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
            ]
        ),
        // Webhooks: the outbox written in a save's own transaction, the payload and its signatures
        // (ours and Standard Webhooks'), the dispatcher that delivers with retries and backoff.
        .target(
            name: "Webhooks",
            dependencies: [
                "Storage", "DatabaseEngine", "CurlTransport", "Clocks", "Entitlements", "Identifiers", "JSON", "Workers",
                .product(name: "Crypto", package: "swift-crypto"), .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]),
        // The use cases, knowing nothing of HTTP: verify a purchase, ingest a notification, read a
        // subscriber, list, refresh, rederive, back up. Typed inputs, results and errors.
        .target(
            name: "ReceiptCore",
            dependencies: [
                "Analytics", "AppStore", "CurlTransport", "GooglePlay", "Offers", "Retention", "Resilience", "Entitlements",
                "Storage", "DatabaseEngine", "JSON", "Identifiers", "Clocks", "Gzip", "Webhooks", "Workers",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // The use cases beside the kernel, one room each, every one over ReceiptCore's context:
        // the calls the stores are owed or asked later (Apple's calls, Play's acknowledgements,
        // mass extensions, support operations, consumption answers) …
        .target(
            name: "StoreCalls",
            dependencies: [
                "ReceiptCore", "AppStore", "GooglePlay", "Storage", "DatabaseEngine", "Entitlements", "JSON", "Identifiers",
                "Clocks", "Workers",
                .product(name: "Logging", package: "swift-log"), .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]),
        // … the stores' notifications, Apple's and Google's, and their catch-ups …
        .target(
            name: "Notifications",
            dependencies: [
                "ReceiptCore", "StoreCalls", "AppStore", "GooglePlay", "Storage", "DatabaseEngine", "Entitlements", "JSON",
                "Identifiers",
                "Clocks", "Workers", .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"), .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]),
        // … the charts read, drilled and kept as rollups, and a customer's money …
        .target(
            name: "Charts",
            dependencies: [
                "ReceiptCore", "Analytics", "AppStore", "Resilience", "Storage", "DatabaseEngine", "Entitlements", "Clocks",
                "Identifiers", "Workers",
                .product(name: "Logging", package: "swift-log"), .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]),
        // … what operators do: erase, export, back up, check readiness, webhooks …
        .target(
            name: "Operations",
            dependencies: [
                "ReceiptCore", "Analytics", "Storage", "DatabaseEngine", "Entitlements", "JSON", "Identifiers",
                "Clocks", "Gzip",
                "Webhooks", "Workers", .product(name: "Logging", package: "swift-log"),
            ]),
        // … and the offers decided for a customer: signatures, eligibility, retention answers.
        .target(
            name: "CustomerOffers",
            dependencies: [
                "ReceiptCore", "Offers", "Retention", "AppStore", "Storage", "DatabaseEngine", "Entitlements", "JSON",
                "Identifiers", "Clocks",
                .product(name: "Crypto", package: "swift-crypto"), .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
            ]),
        // The receiving end of our webhooks: checks signatures and the payload, records arrivals,
        // answers as told (`receiptd webhook-sink`, the tests).
        .target(
            name: "WebhookSink",
            dependencies: [
                "HTTPServer", "Webhooks", "Entitlements", "JSON", "Clocks", .product(name: "Logging", package: "swift-log"),
            ]),
        // The HTTP edge: configuration, routes with their access, errors → responses, telemetry,
        // and the application that assembles the services.
        .target(
            name: "ReceiptService",
            dependencies: [
                "Analytics", "RevenueCatProtocol", "ReceiptCore", "StoreCalls", "Notifications", "Charts", "Operations",
                "CustomerOffers", "HTTPServer",
                "Storage", "DatabaseEngine", "AppStore", "CurlTransport", "GooglePlay", "Offers",
                "Resilience", "Retention", "Entitlements", "JSON", "Identifiers", "Clocks", "Webhooks", "Workers",
                .product(name: "Configuration", package: "swift-configuration"),
                .product(name: "SystemPackage", package: "swift-system"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ],
            // The web console (Docs/console.md), compiled into the binary: nothing to install beside it.
            resources: [
                .embedInCode("Console/index.html"), .embedInCode("Console/console.js"), .embedInCode("Console/console.css"),
            ]
        ),
        .executableTarget(
            name: "receiptd",
            dependencies: [
                "ReceiptService", "ReceiptCore", "StoreCalls", "Notifications", "Charts", "Operations", "CustomerOffers",
                "AppStoreSimulator", "AppStore", "HTTPServer",
                "Storage", "DatabaseEngine", "Clocks", "WebhookSink", "Webhooks", "GooglePlaySimulator", "GooglePlay",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Crypto", package: "swift-crypto"), .product(name: "CryptoExtras", package: "swift-crypto"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ],
            exclude: ["receiptd.order"],
            // Release links with lld: the ~59,000 relative relocations packed as DT_RELR (11 KB
            // instead of 1.4 MB read at every start; glibc 2.36+, as in bookworm); none of the
            // 19,000 symbols -static-stdlib exports, which nothing dlsym()s; and the functions a
            // start and the API run laid out together (receiptd.order, Benchmarks/order-file.sh),
            // so they fill few of the kernel's 64 KB fault-around windows. Idle RSS 29 → 23 MB.
            linkerSettings: [
                .unsafeFlags(
                    [
                        "-use-ld=lld", "-Xlinker", "-z", "-Xlinker", "pack-relative-relocs", "-Xlinker", "--no-export-dynamic",
                        "-Xlinker", "--symbol-ordering-file=\(Context.packageDirectory)/Sources/receiptd/receiptd.order",
                        "-Xlinker", "--no-warn-symbol-ordering",
                    ],
                    .when(platforms: [.linux], configuration: .release))
            ]
        ),
        // Our HTTP server with an echo, inspect or benchmark responder: conformance and benchmarks.
        .executableTarget(
            name: "http-inspect",
            dependencies: ["HTTPServer", "JSON", .product(name: "Logging", package: "swift-log")]
        ),

        // Tests only: the loopback client, request helpers, a manual clock, the simulator wired as
        // the executable wires it, the secret audit, and fixtures as resources.
        .target(
            name: "ReceiptTesting",
            dependencies: [
                "ReceiptService", "ReceiptCore", "StoreCalls", "Notifications", "Charts", "Operations", "CustomerOffers",
                "AppStoreSimulator", "AppStore", "HTTPServer",
                "Storage", "DatabaseEngine", "Clocks", "WebhookSink", "Analytics", "Entitlements", "Identifiers", "JSON",
                "GooglePlaySimulator",
                "GooglePlay", "Resilience", "Webhooks", "Workers",
                .product(name: "Logging", package: "swift-log"), .product(name: "X509", package: "swift-certificates"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
            ],
            resources: [.copy("Fixtures")]
        ),

        .testTarget(name: "IdentifiersTests", dependencies: ["Identifiers"]),
        .testTarget(name: "JSONTests", dependencies: ["JSON"]),
        // The use cases' tests: each room's own, over the application the tests open (ReceiptTesting).
        .testTarget(name: "ReceiptCoreTests", dependencies: ["Operations"] + useCaseTestDependencies),
        .testTarget(name: "StoreCallsTests", dependencies: ["StoreCalls"] + useCaseTestDependencies),
        .testTarget(name: "NotificationsTests", dependencies: ["Notifications", "Operations"] + useCaseTestDependencies),
        .testTarget(name: "ChartsTests", dependencies: ["Charts", "Operations"] + useCaseTestDependencies),
        .testTarget(name: "OperationsTests", dependencies: ["Operations"] + useCaseTestDependencies),
        .testTarget(name: "CustomerOffersTests", dependencies: ["CustomerOffers"] + useCaseTestDependencies),
        .testTarget(name: "HTTPServerTests", dependencies: ["HTTPServer", "ReceiptTesting"]),
        .testTarget(
            name: "WebhookSinkTests",
            dependencies: [
                "WebhookSink", "Webhooks", "JSON", "ReceiptTesting", .product(name: "Crypto", package: "swift-crypto"),
            ]),
        .testTarget(
            name: "StorageTests",
            dependencies: [
                "Storage", "DatabaseEngine", "Entitlements", "Gzip", "ReceiptTesting",
                .product(name: "MetricsTestKit", package: "swift-metrics"),
            ]),
        .testTarget(name: "EntitlementsTests", dependencies: ["Entitlements", "ReceiptTesting"]),
        .testTarget(name: "AnalyticsTests", dependencies: ["Analytics", "Entitlements", "Identifiers", "ReceiptTesting"]),
        .testTarget(
            name: "GooglePlayTests",
            dependencies: [
                "GooglePlay", "GooglePlaySimulator", "CurlTransport", "Clocks", "JSON", "Entitlements", "ReceiptTesting",
                .product(name: "CryptoExtras", package: "swift-crypto"), .product(name: "Logging", package: "swift-log"),
            ]),
        .testTarget(
            name: "OffersTests",
            dependencies: ["Offers", "JSON", "Entitlements", .product(name: "Crypto", package: "swift-crypto")]),
        .testTarget(name: "RetentionTests", dependencies: ["Retention", "JSON", "Entitlements"]),
        .testTarget(
            name: "RevenueCatProtocolTests", dependencies: ["RevenueCatProtocol", "JSON", "Entitlements", "ReceiptTesting"]),
        .testTarget(
            name: "GooglePlaySimulatorTests",
            dependencies: [
                "GooglePlaySimulator", "GooglePlay", "HTTPServer", "JSON", "ReceiptTesting",
                .product(name: "CryptoExtras", package: "swift-crypto"),
            ]),
        .testTarget(
            name: "AppStoreSimulatorTests",
            dependencies: [
                "AppStoreSimulator", "AppStore", "Entitlements", "HTTPServer", "Clocks",
                "CurlTransport", "JSON", "ReceiptTesting",
                .product(name: "Crypto", package: "swift-crypto"), .product(name: "Logging", package: "swift-log"),
            ]),
        .testTarget(
            name: "CurlTransportTests",
            dependencies: [
                "CurlTransport", "HTTPServer", "JSON", "ReceiptTesting", .product(name: "Logging", package: "swift-log"),
            ]),
        .testTarget(name: "ResilienceTests", dependencies: ["Resilience"]),
        .testTarget(name: "GzipTests", dependencies: ["Gzip", "CZlib"]),
        .testTarget(
            name: "DatabaseEngineTests",
            dependencies: [
                "DatabaseEngine", "Storage", "ReceiptTesting", "CSQLite",
                .product(name: "MetricsTestKit", package: "swift-metrics"),
            ]),
        .testTarget(
            name: "WebhooksTests",
            dependencies: [
                "Webhooks", "ReceiptCore", "ReceiptTesting", "Storage", "DatabaseEngine", "CurlTransport", "Entitlements", "JSON",
                "Workers",
                .product(name: "Crypto", package: "swift-crypto"),
            ]),
        .testTarget(
            name: "WorkersTests", dependencies: ["Workers", "Clocks", .product(name: "Logging", package: "swift-log")]),
        .testTarget(
            name: "AppStoreTests",
            dependencies: [
                "AppStore", "CurlTransport", "Clocks", "Entitlements", "HTTPServer", "JSON", "ReceiptTesting", "Resilience",
                .product(name: "MetricsTestKit", package: "swift-metrics"),
                .product(name: "X509", package: "swift-certificates"), .product(name: "Crypto", package: "swift-crypto"),
            ]),
        .testTarget(
            name: "ReceiptServiceTests",
            dependencies: [
                "ReceiptService", "ReceiptCore", "ReceiptTesting", "AppStoreSimulator", "Clocks", "HTTPServer", "Storage",
                "DatabaseEngine",
                "AppStore", "Entitlements", "Analytics", "Resilience",
                .product(name: "X509", package: "swift-certificates"), .product(name: "Crypto", package: "swift-crypto"),
            ],
            // The scenarios' record, read from the source tree by ScenarioRecordTests (not a resource).
            exclude: ["Recorded"]
        ),
        // Runs the built receiptd binary: CLI, start-up, signals.
        .testTarget(
            name: "receiptdTests",
            dependencies: [
                "receiptd", "ReceiptTesting", .product(name: "Subprocess", package: "swift-subprocess"),
                .product(name: "SystemPackage", package: "swift-system"),
            ]),
        .testTarget(
            name: "http-inspectTests",
            dependencies: [
                "http-inspect", "HTTPServer", .product(name: "Subprocess", package: "swift-subprocess"),
                .product(name: "SystemPackage", package: "swift-system"),
            ]),
    ],
    swiftLanguageModes: [.v6]
)

// One strictness for every Swift target: an existential says `any`, a member is used only from a
// module the file imports itself, and an import is internal unless the file's own `package` (or,
// in the base libraries, `public`) declarations show the module's types.
let strictness: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"), .enableUpcomingFeature("MemberImportVisibility"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]
for target in package.targets where target.type != .system {
    target.swiftSettings = (target.swiftSettings ?? []) + strictness
}
