import Identifiers

/// StoreKit's AppTransaction as a fact: an Apple Account got the app, at which version, when.
/// What grandfathering reads (a customer who bought the paid app before it became free with
/// in-app purchases keeps what they paid for).
package struct AppTransaction: Sendable, Equatable {
    /// Unique per Apple Account and app.
    package var appTransactionID: String
    /// The version the account first got: `CFBundleVersion` on iOS, iPadOS, tvOS and visionOS,
    /// `CFBundleShortVersionString` on macOS; always `1.0` in the sandbox (Apple's docs,
    /// AppTransaction.originalAppVersion).
    package var originalApplicationVersion: String?
    package var originalPurchaseDate: Int64?
    /// `iOS`, `macOS`, `tvOS`, `visionOS`.
    package var originalPlatform: String?
    /// `production`, `sandbox` or `xcode`.
    package var environment: String

    package init(
        appTransactionID: String, originalApplicationVersion: String?, originalPurchaseDate: Int64?, originalPlatform: String?,
        environment: String
    ) {
        self.appTransactionID = appTransactionID
        self.originalApplicationVersion = originalApplicationVersion
        self.originalPurchaseDate = originalPurchaseDate
        self.originalPlatform = originalPlatform
        self.environment = environment
    }
}

/// An entitlement kept for life by customers who first got the app before a version
/// (`Config/entitlements.json`: `{"pro": {"products": […], "grandfathered": {"before_version": "3.0"}}}`).
/// Only production AppTransactions count: the sandbox's always say 1.0.
package struct Grandfathering: Sendable, Equatable {
    /// Dotted numbers (`3.0`, `412`): compared part by part as numbers, missing parts 0.
    package var beforeVersion: String
    /// Platforms it holds for (`iOS`, `macOS`, …); nil: all. A build number means something else
    /// on macOS (the marketing version), so an app sold on several may name one.
    package var platforms: [String]?

    package init(beforeVersion: String, platforms: [String]? = nil) {
        self.beforeVersion = beforeVersion
        self.platforms = platforms
    }

    /// Whether `app` first got the app before ``beforeVersion``, and why, as facts.
    package func holds(for app: AppTransaction) -> (Bool, String) {
        guard app.environment == "production" else {
            return (false, "its AppTransaction is from \(app.environment), whose version is always 1.0")
        }
        if let platforms, !platforms.contains(where: { $0.isExactly(app.originalPlatform ?? "") }) {
            return (
                false,
                "it was first got on \(app.originalPlatform ?? "an unknown platform"), not \(platforms.joined(separator: ", "))"
            )
        }
        guard let version = app.originalApplicationVersion, let order = AppVersion.compare(version, beforeVersion) else {
            return (false, "its original version \(app.originalApplicationVersion ?? "(none)") is not dotted numbers")
        }
        return order < 0
            ? (true, "it was first got at version \(version), before \(beforeVersion)")
            : (false, "it was first got at version \(version), not before \(beforeVersion)")
    }
}

/// Apple's app versions as dotted numbers.
package enum AppVersion {
    /// Whether `text` is one to five dot-separated numbers of at most nine digits.
    package static func isValid(_ text: String) -> Bool { parts(text) != nil }

    /// -1, 0 or 1 as `a` is before, the same as or after `b` (`2.10` after `2.9`, `3` the same as
    /// `3.0`); nil when either is not dotted numbers.
    package static func compare(_ a: String, _ b: String) -> Int? {
        guard let x = parts(a), let y = parts(b) else { return nil }
        for i in 0..<max(x.count, y.count) {
            let (p, q) = (i < x.count ? x[i] : 0, i < y.count ? y[i] : 0)
            if p != q { return p < q ? -1 : 1 }
        }
        return 0
    }

    static func parts(_ text: String) -> [Int]? {
        let pieces = text.split(separator: ".", omittingEmptySubsequences: false)
        guard (1...5).contains(pieces.count) else { return nil }
        var out: [Int] = []
        for piece in pieces {
            guard (1...9).contains(piece.utf8.count), piece.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), let n = Int(piece)
            else { return nil }
            out.append(n)
        }
        return out
    }
}
