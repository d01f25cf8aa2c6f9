/// Properties receiptd's parser must keep on any input, without a reference parser.
public enum Properties {
    public struct Violation: Error, CustomStringConvertible {
        public let description: String
    }

    public static func check(_ input: [UInt8]) -> Violation? {
        let whole = OurParser.trace(input)

        // Every request lies inside the input, in order.
        var previous = 0
        for m in whole.messages {
            guard m.end > previous, m.end <= input.count else {
                return Violation(description: "request ends at \(m.end) after \(previous), input \(input.count)\n\(whole)")
            }
            previous = m.end
        }

        // Delivery in pieces changes nothing: one byte at a time, and pieces chosen by the input.
        for sizes in [[1], pieceSizes(for: input)] {
            let split = OurParser.trace(input, chunkSizes: sizes)
            guard split == whole else {
                return Violation(description: "pieces \(sizes.prefix(8)) change the result\nwhole:\n\(whole)\nsplit:\n\(split)")
            }
        }

        // parse → serialize → parse gives the same request, ending exactly at the end.
        for m in whole.messages {
            let bytes = RequestSerializer.serialize(m)
            let again = OurParser.trace(bytes)
            guard let first = again.messages.first, again.messages.count == 1 else {
                return Violation(description: "re-serialized request does not parse: \(again)\nfrom \(m)")
            }
            var expected = m
            expected.end = bytes.count
            guard first == expected else {
                return Violation(description: "round trip differs:\n  \(m)\n  \(first)")
            }
        }
        return nil
    }

    /// Piece sizes 1...64 drawn from a generator seeded by the input, so a failure replays.
    static func pieceSizes(for input: [UInt8]) -> [Int] {
        var state: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in input { state = (state ^ UInt64(byte)) &* 0x100_0000_01b3 }
        return (0..<16).map { _ in
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int(state >> 58) + 1
        }
    }
}
