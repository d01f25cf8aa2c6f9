extension RateLimiter.Settings {
    /// `limits.*`: POST /v1/receipts per API key and per client address.
    static func read(_ c: ConfigLoader) throws(ConfigurationError) -> RateLimiter.Settings {
        let receiptLimits = RateLimiter.Settings(
            // POST /v1/receipts per API key (one app's whole fleet shares a public key) and its burst; 0: off.
            perKey: Double(try c.int("limits.receiptsPerKeyPerSecond", default: 200, range: 0...1_000_000)),
            keyBurst: Double(try c.int("limits.receiptsKeyBurst", default: 400, range: 1...1_000_000)),
            // POST /v1/receipts per client address (a device, or a NAT of many) and its burst; 0: off.
            perAddress: Double(try c.int("limits.receiptsPerAddressPerSecond", default: 20, range: 0...1_000_000)),
            addressBurst: Double(try c.int("limits.receiptsAddressBurst", default: 40, range: 1...1_000_000)))
        return receiptLimits
    }
}
