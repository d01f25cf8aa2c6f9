import Foundation
import Testing

@testable import Entitlements

@Suite struct CivilTimeTests {
    @Test func anRFC3339InstantReadsBackAsItPrints() {
        // 951_782_400_000 is 2000-02-29.
        for ms: Int64 in [0, 1, 999, 1_700_000_000_123, 951_782_400_000, CivilTime.latest] {
            #expect(CivilTime.instant(rfc3339: CivilTime.rfc3339(ms)) == ms)
        }
    }

    /// Foundation's ISO 8601 formatter is the oracle at random instants from 1583 (before, it
    /// counts Julian dates; RFC 3339 and this the proleptic Gregorian calendar) to 9999.
    @Test func printsAsFoundationDoes() {
        let foundation = ISO8601DateFormatter()
        foundation.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        foundation.timeZone = TimeZone(identifier: "UTC")
        var state: UInt64 = 62
        let (first, last) = (CivilTime.instant(rfc3339: "1583-01-01T00:00:00Z")!, CivilTime.latest)
        for n in 0..<20_000 {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            let ms = n < 4 ? [first, last, 0, -1][n] : first + Int64(state >> 1) % (last - first + 1)
            let printed = CivilTime.rfc3339(ms)
            #expect(printed == foundation.string(from: Date(timeIntervalSince1970: Double(ms) / 1000)), "\(ms)")
            #expect(CivilTime.instant(rfc3339: printed) == ms)
        }
    }

    @Test func fractionsAndOffsetsAreReadExactly() {
        // Google's timestamps carry 0 to 9 fractional digits; past the millisecond they are dropped.
        #expect(CivilTime.instant(rfc3339: "2026-11-22T06:01:48Z") == 1_795_327_308_000)
        #expect(CivilTime.instant(rfc3339: "2026-11-22T06:01:48.6Z") == 1_795_327_308_600)
        #expect(CivilTime.instant(rfc3339: "2026-11-22T06:01:48.618999999Z") == 1_795_327_308_618)
        #expect(CivilTime.instant(rfc3339: "2026-11-22T07:31:48.618+01:30") == 1_795_327_308_618)
        #expect(CivilTime.instant(rfc3339: "2026-11-22T04:01:48.618-02:00") == 1_795_327_308_618)
        #expect(CivilTime.instant(rfc3339: "1969-12-31T23:59:59.999Z") == -1)
    }

    @Test func anythingElseIsRefused() {
        for text in [
            "", "2026-11-22", "2026-11-22T06:01:48", "2026-11-22T06:01:48.Z", "2026-02-29T00:00:00Z", "2026-13-01T00:00:00Z",
            "2026-11-22T24:00:00Z", "2026-11-22T06:01:60Z", "2026-11-22T06:01:48Z ", "2026-11-22 06:01:48Z",
            "0000-01-01T00:00:00Z", "2026-11-22T06:01:48+0100", "+2026-11-22T06:01:48Z", "2026-11-22T06:01:4８Z",
        ] {
            #expect(CivilTime.instant(rfc3339: text) == nil, "\(text)")
        }
    }
}
