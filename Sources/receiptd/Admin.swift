import ArgumentParser
import FoundationEssentials
import Glibc
import Logging
import ReceiptService
import Storage

/// `receiptd verify --receipt FILE`: one verification, as POST /v1/receipts does it (Apple or the
/// configured simulator, then storage); prints the subscriber document. Exit 1 with Apple's or
/// receiptd's error body on standard error when the receipt is refused.
struct Verify: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Verify one receipt with Apple, store it, and print the subscriber document.")
    @OptionGroup var options: GlobalOptions
    @Option(help: "The receipt: base64 text, or the raw bytes of an App Store receipt file.") var receipt: String
    @Option(name: .customLong("user"), help: "The app_user_id that owns it.") var appUserID = "receiptd-cli"

    func run() async throws {
        let (config, _) = try await options.load()
        guard let bytes = FileManager.default.contents(atPath: receipt) else {
            printError("receiptd: cannot read \(receipt)")
            throw ExitCode.failure
        }
        let data = Self.receiptData(Array(bytes))
        let app = try Admin.application(config)
        let answer = await app.verify(receiptData: data, appUserID: appUserID)
        await app.stop()
        try Admin.print(answer)
    }

    /// Base64 text as given (trimmed); anything else (a binary receipt) base64-encoded.
    static func receiptData(_ bytes: [UInt8]) -> String {
        let blank: Set<UInt8> = [0x20, 0x09, 0x0A, 0x0D]
        let trimmed = bytes.drop { blank.contains($0) }.reversed().drop { blank.contains($0) }.reversed()
        let alphabet = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=".utf8)
        let isBase64 = !trimmed.isEmpty && trimmed.allSatisfy { alphabet.contains($0) }
        return isBase64 ? String(decoding: trimmed, as: UTF8.self) : Data(bytes).base64EncodedString()
    }
}

/// `receiptd subscriber ID`: the stored document, as GET /v1/subscribers/{id} answers it.
struct Subscriber: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Print a subscriber's document from storage (no Apple call).")
    @OptionGroup var options: GlobalOptions
    @Argument(help: "The app_user_id.") var appUserID: String
    @Flag(help: "Add the explanation of every decision.") var explain = false

    func run() async throws {
        let (config, _) = try await options.load()
        let app = try Admin.application(config)
        let answer = await app.subscriber(appUserID, explain: explain)
        await app.stop()
        try Admin.print(answer)
    }
}

/// `receiptd backup PATH`: a consistent copy of the database while receiptd serves.
struct Backup: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Copy the database to PATH online (SQLite's backup API); safe while receiptd serves.")
    @OptionGroup var options: GlobalOptions
    @Argument(help: "The new file (never overwritten).") var path: String

    func run() async throws {
        let (config, _) = try await options.load()
        do {
            let started = ContinuousClock.now
            let database = try Database(path: config.database.path, busyTimeout: config.database.busyTimeout)
            let pages = try database.backup(to: path)
            let check = try Database(path: path).scalarText("PRAGMA integrity_check") ?? "?"
            let elapsed = (ContinuousClock.now - started).components
            let ms = elapsed.seconds * 1000 + elapsed.attoseconds / 1_000_000_000_000_000
            print("backed up \(config.database.path) to \(path): \(pages) pages in \(ms) ms, integrity_check \(check)")
            guard check == "ok" else { throw ExitCode.failure }
        } catch let exit as ExitCode {
            throw exit
        } catch {
            printError("receiptd: backup failed: \(error)")
            throw ExitCode.failure
        }
    }
}

enum Admin {
    /// The service without its HTTP server: the database (migrated), Apple's client or the simulator.
    static func application(_ config: ServiceConfiguration) throws -> Application {
        var quiet = Logger(label: "receiptd")
        quiet.logLevel = .error
        do {
            return try Application(configuration: config, logger: quiet)
        } catch {
            printError("receiptd: cannot open the service: \(error)")
            throw ExitCode.failure
        }
    }

    /// The document on standard output (exit 0), or the error body on standard error (exit 1).
    static func print(_ answer: (status: Int, body: [UInt8])) throws {
        let text = String(decoding: answer.body, as: UTF8.self)
        guard answer.status == 200 else {
            printError("receiptd: HTTP \(answer.status) \(text)")
            throw ExitCode.failure
        }
        Swift.print(text)
    }
}
