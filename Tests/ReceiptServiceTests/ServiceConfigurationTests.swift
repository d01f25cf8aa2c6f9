import Analytics
import AppStore
import Crypto
import CustomerOffers
import DatabaseEngine
import Entitlements
import Foundation
import HTTPServer
import Logging
import Notifications
import ReceiptTesting
import Resilience
import Storage
import StoreCalls
import Testing
import Webhooks
import Workers

@testable import ReceiptCore
@testable import ReceiptService

/// A config folder with `default.json` (and optional others), removed by the caller.
func makeConfigDirectory(_ files: [String: String]) throws -> String {
    let dir = NSTemporaryDirectory() + "receiptd-config-" + UUID().uuidString
    try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    for (name, text) in files { try text.write(toFile: dir + "/" + name, atomically: true, encoding: .utf8) }
    return dir
}

@Suite("Service configuration")
struct ServiceConfigurationTests {
    @Test func defaultsApplyWhenFilesAreEmpty() async throws {
        let dir = try makeConfigDirectory(["default.json": "{}"])
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (config, _) = try await ServiceConfiguration.load(configDirectory: dir, environment: [:])
        #expect(config.environment == "development")
        #expect(config.http.port == 8080)
        #expect(config.http.limits.maxHeaderBytes == 16_384)
        #expect(config.database.path == "data/receiptd.sqlite")
        #expect(config.database.documentCache == 10_000 && config.database.readers == 2)
        #expect(config.logLevel == .info)
        // Apple's signed data: verified against the built-in Apple Root CA - G3, both environments.
        #expect(config.appStore.signedData.roots == [AppleRootCA.g3])
        #expect(config.appStore.signedData.environments == [.production, .sandbox])
        #expect(config.appStore.signedData.validationTime == .signedDate && config.appStore.signedData.appAppleIDs.isEmpty)
    }

    @Test func signedDataSettingsReadTheirKeys() async throws {
        let testCA = Fixtures.url("SignedData").path
        let dir = try makeConfigDirectory(["default.json": #"{"appStore": {"appAppleIds": ["1234", "5678"]}}"#])
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (config, _) = try await ServiceConfiguration.load(
            configDirectory: dir,
            environment: [
                "RECEIPTD_APP_STORE_ROOT_CERTIFICATES": "\(testCA)/testCA.der,\(testCA)/testCA.pem",
                "RECEIPTD_APP_STORE_ENVIRONMENTS": "sandbox", "RECEIPTD_APP_STORE_SIGNED_DATA_VALIDATION_TIME": "now",
            ])
        let signed = config.appStore.signedData
        #expect(signed.appAppleIDs == [1234, 5678] && signed.environments == [.sandbox] && signed.validationTime == .now)
        #expect(signed.roots.count == 2 && signed.roots[0] == signed.roots[1] && signed.roots[0] != AppleRootCA.g3)
    }

    @Test func theServerAPIKeyComesFromTheEnvironmentWithItsIdsAndIsNeverEchoed() async throws {
        let dir = try makeConfigDirectory([
            "default.json":
                #"{"appStore": {"serverApi": {"keyId": "2X9R4HXF34", "issuerId": "57246542-96fe-1a63-e053-0824d011072a"}}}"#
        ])
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let defaults = try await ServiceConfiguration.load(
            configDirectory: dir, environment: ["RECEIPTD_APP_STORE_SERVER_API_PRIVATE_KEY": TestSecrets.serverAPIKey]
        ).0
        #expect(defaults.appStore.serverAPI.credentials?.keyID == "2X9R4HXF34")
        #expect(defaults.appStore.serverAPI.productionURL == "https://api.storekit.apple.com")
        #expect(defaults.appStore.serverAPI.sandboxURL == "https://api.storekit-sandbox.apple.com")
        #expect(defaults.appStore.verifier == .verifyReceipt)
        // Ids without the key, a key that is not one, server_api without a key: refused, naming the key.
        let refusals: [[String: String]] = [
            [:], ["RECEIPTD_APP_STORE_SERVER_API_PRIVATE_KEY": "not a key sk_test_91d0e3b58a"],
        ]
        for environment in refusals {
            do {
                _ = try await ServiceConfiguration.load(configDirectory: dir, environment: environment)
                Issue.record("accepted \(environment.keys)")
            } catch let error as ConfigurationError {
                #expect(error.key.hasPrefix("appStore.serverApi"))
                #expect(!"\(error)".contains("sk_test_91d0e3b58a"))
            }
        }
        let bare = try makeConfigDirectory(["default.json": #"{"appStore": {"verifier": "server_api"}}"#])
        defer { try? FileManager.default.removeItem(atPath: bare) }
        await #expect(throws: ConfigurationError.self) {
            try await ServiceConfiguration.load(configDirectory: bare, environment: [:])
        }
    }

    /// Apps in several App Store Connect accounts: each named account's apps, secret and key; the
    /// default account keeps the rest; every mistake names its key, no secret echoed.
    @Test func accountsHoldTheirAppsAndSecretsAndMistakesNameTheirKey() async throws {
        let dir = try makeConfigDirectory([
            "default.json": #"""
            {"appStore": {"bundleIds": ["com.example.app", "com.agency.one", "com.agency.two"],
              "accounts": ["agency"],
              "account": {"agency": {"bundleIds": ["com.agency.one", "com.agency.two"],
                "serverApi": {"keyId": "AGENCY0001", "issuerId": "00000000-0000-4000-8000-0000000000bb"}}}}}
            """#
        ])
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let agencyKey = P256.Signing.PrivateKey().pemRepresentation
        let environment = [
            "RECEIPTD_APP_STORE_SHARED_SECRET": "default-secret-0001",
            "RECEIPTD_APP_STORE_ACCOUNT_AGENCY_SHARED_SECRET": "agency-secret-0002",
            "RECEIPTD_APP_STORE_ACCOUNT_AGENCY_SERVER_API_PRIVATE_KEY": agencyKey,
        ]
        let c = try await ServiceConfiguration.load(configDirectory: dir, environment: environment).0
        let accounts = c.appStore.appStoreAccounts(offerKey: c.offers.key)
        #expect(accounts.accounts.map(\.name) == ["default", "agency"])
        #expect(accounts.account(of: "com.example.app")?.name == "default")
        #expect(accounts.sharedSecret(of: "com.example.app") == "default-secret-0001")
        #expect(accounts.sharedSecret(of: "com.agency.two") == "agency-secret-0002")
        #expect(accounts.serverAPICredentials(of: "com.agency.one")?.keyID == "AGENCY0001")
        #expect(accounts.serverAPICredentials(of: "com.example.app") == nil)
        #expect(accounts.offerKey(of: "com.agency.one")?.keyID == "AGENCY0001" && accounts.offerKey(of: "com.example.app") == nil)
        #expect(c.appStore.hasServerAPIKey)

        func refused(_ json: String, _ environment: [String: String] = [:]) async throws -> ConfigurationError? {
            let dir = try makeConfigDirectory(["default.json": json])
            defer { try? FileManager.default.removeItem(atPath: dir) }
            do {
                _ = try await ServiceConfiguration.load(configDirectory: dir, environment: environment)
                return nil
            } catch let error as ConfigurationError {
                return error
            }
        }
        let apps = #""bundleIds": ["com.a", "com.b"]"#
        for (json, key) in [
            (#"{"appStore": {\#(apps), "accounts": ["Agency"]}}"#, "appStore.accounts"),
            (#"{"appStore": {\#(apps), "accounts": ["default"]}}"#, "appStore.accounts"),
            (
                #"{"appStore": {\#(apps), "accounts": ["x", "x"], "account": {"x": {"bundleIds": ["com.b"]}}}}"#,
                "appStore.accounts"
            ),
            (#"{"appStore": {\#(apps), "accounts": ["x"]}}"#, "appStore.account.x.bundleIds"),
            (
                #"{"appStore": {\#(apps), "accounts": ["x"], "account": {"x": {"bundleIds": ["com.c"]}}}}"#,
                "appStore.account.x.bundleIds"
            ),
            (
                #"{"appStore": {\#(apps), "accounts": ["x", "y"], "account": {"x": {"bundleIds": ["com.b"]}, "y": {"bundleIds": ["com.b"]}}}}"#,
                "appStore.account.y.bundleIds"
            ),
            (
                #"{"appStore": {\#(apps), "accounts": ["x"], "account": {"x": {"bundleIds": ["com.b"], "serverApi": {"keyId": "K"}}}}}"#,
                "appStore.account.x.serverApi"
            ),
            // server_api asks Apple about every app: the agency's too, with its own key.
            (
                #"{"appStore": {\#(apps), "verifier": "server_api", "serverApi": {"keyId": "K", "issuerId": "I"}, "accounts": ["x"], "account": {"x": {"bundleIds": ["com.b"]}}}}"#,
                "appStore.account.x.serverApi"
            ),
        ] {
            // The default account's key, where its ids are configured.
            let defaultKey = json.contains(#""serverApi": {"keyId": "K", "issuerId": "I"}, "accounts""#)
            let error = try await refused(
                json, defaultKey ? ["RECEIPTD_APP_STORE_SERVER_API_PRIVATE_KEY": TestSecrets.serverAPIKey] : [:])
            #expect(error?.key == key, "\(json): \(String(describing: error))")
        }
        // A secret in a file is refused; a key that is not one is refused without being echoed.
        let inFile = try await refused(
            #"{"appStore": {\#(apps), "accounts": ["x"], "account": {"x": {"bundleIds": ["com.b"], "sharedSecret": "s3cr3t-in-file"}}}}"#
        )
        #expect(inFile?.key == "appStore.account.x.sharedSecret")
        let badKey = try await refused(
            #"{"appStore": {\#(apps), "accounts": ["x"], "account": {"x": {"bundleIds": ["com.b"], "serverApi": {"keyId": "K", "issuerId": "I"}}}}}"#,
            ["RECEIPTD_APP_STORE_ACCOUNT_X_SERVER_API_PRIVATE_KEY": "not a key sk_test_77aa"])
        #expect(
            badKey?.key == "appStore.account.x.serverApi.privateKey" && !"\(String(describing: badKey))".contains("sk_test_77aa"))
    }

    @Test func shadowCatchUpAndConsumptionSettingsAreReadAndHeldToTheirRules() async throws {
        let dir = try makeConfigDirectory([
            "default.json": #"""
            {"appStore": {"verifier": "shadow", "serverApi": {"keyId": "2X9R4HXF34", "issuerId": "57246542-96fe-1a63-e053-0824d011072a"},
             "notificationHistory": {"intervalMs": 600000, "overlapMs": 0, "lookbackDays": 30},
             "consumption": {"enabled": true, "sampleContentProvided": true, "refundPreference": "GRANT_PRORATED"}}}
            """#
        ])
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let key = ["RECEIPTD_APP_STORE_SERVER_API_PRIVATE_KEY": TestSecrets.serverAPIKey]
        let c = try await ServiceConfiguration.load(configDirectory: dir, environment: key).0
        #expect(c.appStore.verifier == .shadow)
        #expect(
            c.appStore.notificationHistory == .init(enabled: true, intervalMs: 600_000, overlapMs: 0, lookbackMs: 30 * 86_400_000)
        )
        #expect(c.appStore.consumption == .init(enabled: true, sampleContentProvided: true, refundPreference: "GRANT_PRORATED"))
        let empty = try makeConfigDirectory(["default.json": "{}"])
        defer { try? FileManager.default.removeItem(atPath: empty) }
        let defaults = try await ServiceConfiguration.load(configDirectory: empty, environment: [:]).0
        #expect(defaults.appStore.consumption == .init() && defaults.appStore.notificationHistory == .init())
        // shadow and consumption answers need the key; a refund preference Apple does not know is refused.
        for (environment, wrongKey) in [
            ([:], "appStore.serverApi"),
            (
                key.merging(["RECEIPTD_APP_STORE_CONSUMPTION_REFUND_PREFERENCE": "MAYBE"]) { $1 },
                "appStore.consumption.refundPreference"
            ),
            (
                key.merging(["RECEIPTD_APP_STORE_NOTIFICATION_HISTORY_LOOKBACK_DAYS": "181"]) { $1 },
                "appStore.notificationHistory.lookbackDays"
            ),
        ] {
            do {
                _ = try await ServiceConfiguration.load(configDirectory: dir, environment: environment)
                Issue.record("accepted \(environment.keys)")
            } catch let error as ConfigurationError {
                #expect(error.key == wrongKey, "\(error)")
            }
        }
    }

    @Test func anEndpointAsksForStandardWebhooksWithWhsecKeysOnly() async throws {
        let dir = try makeConfigDirectory(["default.json": "{}"])
        defer { try? FileManager.default.removeItem(atPath: dir) }
        func load(_ secret: String, standard: Bool) async throws -> ServiceConfiguration {
            try await ServiceConfiguration.load(
                configDirectory: dir,
                environment: [
                    "RECEIPTD_WEBHOOKS_ENDPOINTS": "crm", "RECEIPTD_WEBHOOKS_CRM_URL": "https://crm.example/hooks",
                    "RECEIPTD_WEBHOOKS_CRM_SECRET": secret, "RECEIPTD_WEBHOOKS_CRM_STANDARD_WEBHOOKS": String(standard),
                ]
            ).0
        }
        let key = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
        #expect(try await load(key, standard: true).webhooks.endpoints.first?.standardWebhooks == true)
        #expect(try await load("plain-secret-0123456789", standard: false).webhooks.endpoints.first?.standardWebhooks == false)
        for bad in ["plain-secret-0123456789", "whsec_c2hvcnQtYnV0LWxvbmctZW5vdWdo", key + ",plain-secret-0123456789"] {
            await #expect {
                _ = try await load(bad, standard: true)
            } throws: { error in
                let message = "\(error)"
                return message.contains("webhooks.crm.secret") && !message.contains(bad)
            }
        }
    }

    @Test func environmentFileThenVariablesOverride() async throws {
        let dir = try makeConfigDirectory([
            "default.json": #"{"http": {"port": 1000, "maxConnections": 5}}"#,
            "production.json": #"{"http": {"port": 2000}}"#,
        ])
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (config, _) = try await ServiceConfiguration.load(
            configDirectory: dir,
            environment: [
                "RECEIPTD_ENVIRONMENT": "production", "RECEIPTD_HTTP_MAX_CONNECTIONS": "7", "RECEIPTD_API_SECRET_KEYS": "k1, k2",
            ])
        #expect(config.environment == "production")
        #expect(config.api.secretKeys == ["k1", "k2"])
        #expect(config.http.port == 2000)
        #expect(config.http.maxConnections == 7)
    }

    @Test(arguments: [
        (["RECEIPTD_HTTP_PORT": "eighty"], "http.port"),
        (["RECEIPTD_HTTP_PORT": "70000"], "http.port"),
        (["RECEIPTD_HTTP_HOST": "localhost"], "http.host"),
        (["RECEIPTD_LOG_LEVEL": "loud"], "log.level"),
        (["RECEIPTD_HTTP_ACCESS_LOG": "maybe"], "http.accessLog"),
        (["RECEIPTD_HTTP_HEADER_TIMEOUT_MS": "0"], "http.headerTimeoutMs"),
        (["RECEIPTD_DATABASE_READERS": "-1"], "database.readers"),
        (["RECEIPTD_ENVIRONMENT": "staging"], "environment"),
        (["RECEIPTD_APP_STORE_APP_APPLE_IDS": "12,abc"], "appStore.appAppleIds"),
        (["RECEIPTD_APP_STORE_ENVIRONMENTS": "production,xcode"], "appStore.environments"),
        (["RECEIPTD_APP_STORE_ROOT_CERTIFICATES": "/nonexistent.cer"], "appStore.rootCertificates"),
        (["RECEIPTD_APP_STORE_ROOT_CERTIFICATES": "/etc/hostname"], "appStore.rootCertificates"),
        (["RECEIPTD_APP_STORE_SIGNED_DATA_VALIDATION_TIME": "yesterday"], "appStore.signedDataValidationTime"),
    ])
    func invalidValuesNameTheirKey(environment: [String: String], key: String) async throws {
        let dir = try makeConfigDirectory(["default.json": "{}"])
        defer { try? FileManager.default.removeItem(atPath: dir) }
        do {
            _ = try await ServiceConfiguration.load(configDirectory: dir, environment: environment)
            Issue.record("accepted \(environment)")
        } catch let error as ConfigurationError {
            #expect(error.key == key)
            #expect("\(error)".contains(ConfigLoader.environmentName(for: key)))
        }
    }

    @Test func wrongTypeInAFileNamesTheKey() async throws {
        let dir = try makeConfigDirectory(["default.json": #"{"http": {"maxBodyBytes": "big"}}"#])
        defer { try? FileManager.default.removeItem(atPath: dir) }
        do {
            _ = try await ServiceConfiguration.load(configDirectory: dir, environment: [:])
            Issue.record("a string for an integer key was accepted")
        } catch let error as ConfigurationError {
            #expect(error.key == "http.maxBodyBytes")
        }
    }

    @Test func environmentNamesFollowTheKey() {
        #expect(ConfigLoader.environmentName(for: "http.maxConnections") == "RECEIPTD_HTTP_MAX_CONNECTIONS")
        #expect(ConfigLoader.environmentName(for: "database.path") == "RECEIPTD_DATABASE_PATH")
    }

    @Test func secretsComeFromTheEnvironmentOrAFileAndAreRedacted() async throws {
        let dir = try makeConfigDirectory(["default.json": "{}"])
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try "s3cr3t-from-file\n".write(toFile: dir + "/secret", atomically: true, encoding: .utf8)
        let fromFile = try await ConfigLoader(
            configDirectory: dir, environmentName: "test", environment: ["RECEIPTD_DEMO_TOKEN_FILE": dir + "/secret"])
        #expect(try fromFile.secret("demo.token") == "s3cr3t-from-file")
        #expect(fromFile.entries == [ConfigLoader.Entry(key: "demo.token", value: "<redacted>", isSecret: true)])

        let fromEnv = try await ConfigLoader(
            configDirectory: dir, environmentName: "test", environment: ["RECEIPTD_DEMO_TOKEN": "abc"])
        #expect(try fromEnv.secret("demo.token") == "abc")
        #expect(try fromEnv.secret("demo.other") == nil)
    }

    @Test func theDatabaseURLChoosesTheBackendAndIsASecret() async throws {
        let dir = try makeConfigDirectory(["default.json": #"{"database": {"path": "data/x.sqlite", "connections": 8}}"#])
        defer { try? FileManager.default.removeItem(atPath: dir) }
        func load(_ url: String?) async throws -> DatabaseSettings {
            try await ServiceConfiguration.load(
                configDirectory: dir, environment: url.map { ["RECEIPTD_DATABASE_URL": $0] } ?? [:]
            ).0.database
        }
        #expect(try await load(nil).location == .sqlite(path: "data/x.sqlite"))
        #expect(try await load("sqlite:/var/lib/receiptd/db.sqlite").location == .sqlite(path: "/var/lib/receiptd/db.sqlite"))
        let url = "postgresql://receiptd:pa55-word@db.internal:5432/receiptd?sslmode=require"
        let postgres = try await load(url)
        #expect(postgres.location == .postgresql(url: url) && postgres.connections == 8)
        #expect(postgres.name == "postgresql")
        let (_, report) = try await ServiceConfiguration.load(configDirectory: dir, environment: ["RECEIPTD_DATABASE_URL": url])
        #expect(!"\(report)".contains("pa55-word"))
        // Neither form: refused, without repeating it.
        await #expect { try await load("mysql://root:hunter2@h/db") } throws: { error in
            "\(error)".contains("database.url") && !"\(error)".contains("hunter2")
        }
        // Never from a file.
        let committed = try makeConfigDirectory(["default.json": #"{"database": {"url": "postgresql://u:p@h/db"}}"#])
        defer { try? FileManager.default.removeItem(atPath: committed) }
        await #expect { try await ServiceConfiguration.load(configDirectory: committed, environment: [:]) } throws: { error in
            "\(error)".contains("database.url") && !"\(error)".contains("u:p@h")
        }
    }

    /// Streaming replicas: PostgreSQL URLs beside a PostgreSQL primary, secrets like it, with a lag bound.
    @Test func replicaURLsAreSecretsBesideAPostgresPrimary() async throws {
        let dir = try makeConfigDirectory(["default.json": #"{"database": {"replicaMaxLagMs": 250}}"#])
        defer { try? FileManager.default.removeItem(atPath: dir) }
        func load(_ environment: [String: String]) async throws -> (DatabaseSettings, String) {
            let (configuration, report) = try await ServiceConfiguration.load(configDirectory: dir, environment: environment)
            return (configuration.database, "\(report)")
        }
        let primary = "postgresql://receiptd:pa55-word@primary:5432/receiptd"
        let replicas = ["postgresql://receiptd:r3plica-word@replica1/receiptd", "postgres://replica2/receiptd?sslmode=require"]
        let (database, report) = try await load([
            "RECEIPTD_DATABASE_URL": primary, "RECEIPTD_DATABASE_REPLICA_URLS": replicas.joined(separator: ", "),
        ])
        #expect(database.replicaURLs == replicas && database.maxReplicaLag == .milliseconds(250))
        #expect(report.contains("database.replicaUrls") && !report.contains("r3plica-word"))
        #expect(try await load(["RECEIPTD_DATABASE_URL": primary]).0.replicaURLs.isEmpty)
        // Beside SQLite, or not a PostgreSQL URL: refused, without repeating it.
        await #expect { try await load(["RECEIPTD_DATABASE_REPLICA_URLS": replicas[0]]) } throws: { error in
            "\(error)".contains("database.replicaUrls") && !"\(error)".contains("r3plica-word")
        }
        await #expect {
            try await load(["RECEIPTD_DATABASE_URL": primary, "RECEIPTD_DATABASE_REPLICA_URLS": "mysql://u:hunter2@h/db"])
        } throws: { error in
            "\(error)".contains("database.replicaUrls") && !"\(error)".contains("hunter2")
        }
    }

    @Test func aSecretInAConfigFileIsRefused() async throws {
        let dir = try makeConfigDirectory(["default.json": #"{"demo": {"token": "committed-by-mistake"}}"#])
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let loader = try await ConfigLoader(configDirectory: dir, environmentName: "test", environment: [:])
        do {
            _ = try loader.secret("demo.token")
            Issue.record("a secret from a file was accepted")
        } catch {
            #expect(error.key == "demo.token")
            #expect(!"\(error)".contains("committed-by-mistake"))
        }
    }

    @Test func theCommittedConfigFilesLoad() async throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().path
        for environment in ServiceConfiguration.environments {
            let (config, _) = try await ServiceConfiguration.load(
                configDirectory: root + "/Config",
                environment: ["RECEIPTD_ENVIRONMENT": environment, "RECEIPTD_API_SECRET_KEYS": "k"])
            #expect(config.environment == environment)
            #expect(config.entitlements["premium"]?.contains("monthly") == true)
        }
        // Development runs offline against the built-in simulator.
        let (development, _) = try await ServiceConfiguration.load(
            configDirectory: root + "/Config", environment: ["RECEIPTD_ENVIRONMENT": "development"])
        #expect(development.appStore.simulator)
    }

    /// From the configuration's text to the figure it changes: a storefront's VAT in percent
    /// becomes the tax, commission and proceeds of a sale there (worked by hand: 11.90 EUR with
    /// 19 % is 10.000 before tax, 1.900 tax, 30 % commission 3.000, proceeds 7.000).
    @Test func taxRatesInPercentFromTheTextChangeEachSaleByTheirRate() async throws {
        let dir = try makeConfigDirectory([
            "default.json": #"{"analytics": {"taxRates": ["DEU=19", "GBR=20", "CHE=8.1", "HUN=27.0000", "DE=19"]}}"#
        ])
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let settings = try await ServiceConfiguration.load(configDirectory: dir, environment: [:]).0.analytics
        // Apple's storefronts by alpha-3, Google Play's regions by alpha-2 (Docs/analytics.md).
        #expect(settings.taxRates == ["DEU": 190_000, "GBR": 200_000, "CHE": 81_000, "HUN": 270_000, "DE": 190_000])
        func sale(_ id: String, _ milliunits: Int64, _ currency: String, in storefront: String) -> Ledger.Entry {
            Ledger.Entry(
                appUserID: "vat", bundleID: "com.example.app",
                purchase: Purchase(
                    transactionID: id, originalTransactionID: id, productID: "monthly", purchaseDate: 1_767_225_600_000,
                    expiresDate: 1_769_904_000_000, environment: .production,
                    commerce: Commerce(
                        price: Price(milliunits: milliunits, currency: currency, source: .store), storefront: storefront)))
        }
        let money = CustomerMoney(
            [sale("d", 11_900, "EUR", in: "DEU"), sale("g", 12_000, "GBP", in: "GBR"), sale("c", 10_810, "CHF", in: "CHE")],
            settings: settings)
        let lines = Dictionary(uniqueKeysWithValues: money.lines.map { ($0.transactionID, $0) })
        #expect((lines["d"]?.tax, lines["d"]?.commission, lines["d"]?.proceeds) == (1_900, 3_000, 7_000))
        #expect((lines["g"]?.tax, lines["g"]?.commission, lines["g"]?.proceeds) == (2_000, 3_000, 7_000))
        #expect((lines["c"]?.tax, lines["c"]?.commission, lines["c"]?.proceeds) == (810, 3_000, 7_000))
        // A rate of 100 % or more is no VAT: refused, naming the key.
        for bad in ["DEU=100", "de=19", "DEUT=19", "DEU=19%", "DEU=0.12345"] {
            let wrong = try makeConfigDirectory(["default.json": #"{"analytics": {"taxRates": ["\#(bad)"]}}"#])
            defer { try? FileManager.default.removeItem(atPath: wrong) }
            await #expect(throws: ConfigurationError.self, "\(bad)") {
                _ = try await ServiceConfiguration.load(configDirectory: wrong, environment: [:])
            }
        }
    }

    /// Issue 57: every setting with a unit, from the configuration's text to the figure the
    /// service runs with: milliseconds, seconds, hours, days, bytes and rates, each set to a value
    /// no default has, each read in its own unit (a `…Days` of 9 is 9 days of milliseconds, not 9 ms).
    @Test func everySettingWithAUnitIsReadInItsUnit() async throws {
        let text = """
            {"http": {"maxRequestLineBytes": 4097, "maxHeaderBytes": 9001, "maxBodyBytes": 70001,
                      "headerTimeoutMs": 1101, "bodyTimeoutMs": 1102, "idleTimeoutMs": 1103, "writeTimeoutMs": 1104,
                      "shutdownGraceMs": 1105},
             "database": {"busyTimeoutMs": 1201, "replicaMaxLagMs": 1202},
             "appStore": {"connectTimeoutMs": 1301, "attemptTimeoutMs": 1302, "deadlineMs": 1303, "maxResponseBytes": 8193,
                          "breakerOpenMs": 1304, "breakerMaxOpenMs": 1305,
                          "notificationHistory": {"intervalMs": 1306, "overlapMs": 1307, "lookbackDays": 9},
                          "massExtensions": {"pollSeconds": 11}},
             "googlePlay": {"timeoutMs": 1401,
                            "acknowledge": {"retryBaseMs": 1402, "retryMaxMs": 1403, "pollMs": 1404},
                            "voidedPurchases": {"intervalMs": 1405, "overlapMs": 1406, "lookbackDays": 12}},
             "refresher": {"intervalMs": 1501, "leaseMs": 1502, "jitterMs": 1503, "billingRetryRecheckMs": 60001,
                           "lookbackDays": 13, "backoffMs": 1504, "maxBackoffMs": 1505, "maxPerSecond": 7},
             "webhooks": {"leaseMs": 1601, "pollMs": 1602, "retentionDays": 14,
                          "retry": {"firstDelayMs": 1603, "maxDelayMs": 1604, "giveUpAfterHours": 15}},
             "limits": {"receiptsPerKeyPerSecond": 17, "receiptsKeyBurst": 18, "receiptsPerAddressPerSecond": 19,
                        "receiptsAddressBurst": 20}}
            """
        let dir = try makeConfigDirectory(["default.json": text])
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let c = try await ServiceConfiguration.load(configDirectory: dir, environment: [:]).0
        let (day, hour): (Int64, Int64) = (86_400_000, 3_600_000)
        // Bytes.
        #expect(c.http.limits.maxRequestLineBytes == 4097 && c.http.limits.maxHeaderBytes == 9001)
        #expect(c.http.limits.maxBodyBytes == 70001 && c.appStore.maxResponseBytes == 8193)
        // Milliseconds as durations.
        #expect(
            [c.http.headerTimeout, c.http.bodyTimeout, c.http.idleTimeout, c.http.writeTimeout, c.http.shutdownGracePeriod]
                == [1101, 1102, 1103, 1104, 1105].map(Duration.milliseconds))
        #expect(c.database.busyTimeout == .milliseconds(1201) && c.database.maxReplicaLag == .milliseconds(1202))
        #expect(
            [
                c.appStore.connectTimeout, c.appStore.attemptTimeout, c.appStore.deadline, c.appStore.breaker.openFor,
                c.appStore.breaker.maxOpenFor,
            ] == [1301, 1302, 1303, 1304, 1305].map(Duration.milliseconds))
        #expect(c.googlePlay.timeout == .milliseconds(1401))
        // Milliseconds, seconds, hours and days as milliseconds.
        let history = c.appStore.notificationHistory
        #expect((history.intervalMs, history.overlapMs, history.lookbackMs) == (1306, 1307, 9 * day))
        #expect(c.appStore.massExtensions.pollMs == 11_000)
        let acks = c.googlePlay.acknowledgements
        #expect((acks.retryBaseMs, acks.retryMaxMs, acks.pollMs) == (1402, 1403, 1404))
        let voided = c.googlePlay.voidedPurchases
        #expect((voided.intervalMs, voided.overlapMs, voided.lookbackMs) == (1405, 1406, 12 * day))
        let refresher = c.refresher
        #expect((refresher.intervalMs, refresher.leaseMs, refresher.maxPerSecond) == (1501, 1502, 7))
        #expect((refresher.policy.jitterMs, refresher.policy.billingRetryRecheckMs) == (1503, 60001))
        #expect(
            (refresher.policy.lookbackMs, refresher.policy.backoffMs, refresher.policy.maxBackoffMs) == (13 * day, 1504, 1505))
        let webhooks = c.webhooks
        #expect((webhooks.leaseMs, webhooks.pollMs, webhooks.retentionMs) == (1601, 1602, 14 * day))
        #expect(
            (webhooks.retry.firstDelayMs, webhooks.retry.maxDelayMs, webhooks.retry.giveUpAfterMs) == (1603, 1604, 15 * hour))
        // Rates per second and bursts.
        #expect((c.limits.perKey, c.limits.keyBurst, c.limits.perAddress, c.limits.addressBurst) == (17, 18, 19, 20))
    }

    @Test func productionNeedsSecretKeysAndHTTPSURLs() async throws {
        let dir = try makeConfigDirectory(["default.json": "{}"])
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let cases: [([String: String], String)] = [
            (["RECEIPTD_ENVIRONMENT": "production"], "api.secretKeys"),
            (["RECEIPTD_APP_STORE_PRODUCTION_URL": "http://apple.example/verifyReceipt"], "appStore.productionUrl"),
            (["RECEIPTD_APP_STORE_BUNDLE_IDS": " , "], "appStore.bundleIds"),
            (["RECEIPTD_OWNERSHIP_POLICY": "share"], "ownership.policy"),
            (
                [
                    "RECEIPTD_ENVIRONMENT": "production", "RECEIPTD_API_SECRET_KEYS": "s3cret-production-key",
                    "RECEIPTD_GOOGLE_PLAY_NOTIFICATIONS_ALLOW_UNAUTHENTICATED": "true",
                ], "googlePlay.notifications.allowUnauthenticated"
            ),
        ]
        for (environment, key) in cases {
            do {
                _ = try await ServiceConfiguration.load(configDirectory: dir, environment: environment)
                Issue.record("accepted \(environment)")
            } catch let error as ConfigurationError {
                #expect(error.key == key)
            }
        }
    }
}
