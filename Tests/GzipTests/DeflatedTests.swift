import Testing

@testable import Gzip

@Suite struct DeflatedTests {
    @Test func textComesBackAndShrinks() {
        let text = String(
            repeating: "production\trevenue\tgross\tflow\tcom.x\tapp_store\t\t20454\t20454\t-\t+\t\t9990\t1\n", count: 40)
        let packed = Deflated.pack(text)
        #expect(packed.hasPrefix("z\(text.utf8.count):"))
        #expect(packed.utf8.count * 10 < text.utf8.count)
        #expect(Deflated.unpack(packed) == text)
        #expect(Deflated.unpack(Deflated.pack("")) == "")
        #expect(Deflated.unpack(Deflated.pack("é ✓")) == "é ✓")
    }

    @Test func anythingElseIsNil() {
        let packed = Deflated.pack("some rows")
        for bad in ["", "rows", "z20:" + packed.split(separator: ":")[1], "z3:AAAA", "zx:" + packed.split(separator: ":")[1]] {
            #expect(Deflated.unpack(bad) == nil, "\(bad)")
        }
    }
}
