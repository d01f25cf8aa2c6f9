import JSON
import Testing

@testable import GooglePlay

@Suite("Google Play: money, exact in milliunits")
struct GoogleMoneyTests {
    static func money(_ text: String) -> GoogleMoney? { GoogleMoney(try! JSONValue.parse(Array(text.utf8))) }

    @Test func unitsAndNanosBecomeMilliunits() {
        #expect(
            Self.money(#"{"currencyCode":"EUR","units":"9","nanos":990000000}"#)
                == GoogleMoney(currency: "EUR", milliunits: 9_990))
        #expect(Self.money(#"{"currencyCode":"JPY","units":"1200"}"#) == GoogleMoney(currency: "JPY", milliunits: 1_200_000))
        #expect(Self.money(#"{"currencyCode":"USD","nanos":500000000}"#) == GoogleMoney(currency: "USD", milliunits: 500))
        #expect(
            Self.money(#"{"currencyCode":"USD","units":-1,"nanos":-750000000}"#)
                == GoogleMoney(currency: "USD", milliunits: -1_750))
        #expect(Self.money(#"{"currencyCode":"USD","units":"0","nanos":0}"#) == GoogleMoney(currency: "USD", milliunits: 0))
    }

    @Test func anAmountNotExactInMilliunitsOrMalformedIsRefused() {
        for text in [
            #"{"currencyCode":"USD","units":"9","nanos":999500000}"#,  // a digit past the thousandth: not rounded
            #"{"currencyCode":"USD","units":"1","nanos":-500000000}"#,  // signs disagree
            #"{"currencyCode":"USD","units":"1","nanos":1000000000}"#,
            #"{"currencyCode":"usd","units":"1"}"#, #"{"currencyCode":"EURO","units":"1"}"#, #"{"units":"1"}"#,
            #"{"currencyCode":"USD","units":"9223372036854775807"}"#,  // overflows milliunits
            #"{"currencyCode":"USD","units":"1.5"}"#,
        ] {
            #expect(Self.money(text) == nil, "\(text)")
        }
    }
}
