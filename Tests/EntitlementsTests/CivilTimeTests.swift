import Testing

@testable import Entitlements

@Suite struct CivilTimeTests {
    @Test func anRFC3339InstantReadsBackAsItPrints() {
        // 951_782_400_000 is 2000-02-29.
        for ms: Int64 in [0, 1, 999, 1_700_000_000_123, 951_782_400_000, CivilTime.latest] {
            #expect(CivilTime.instant(rfc3339: CivilTime.rfc3339(ms)) == ms)
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
