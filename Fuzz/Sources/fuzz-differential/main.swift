import FuzzSupport
import Glibc

// libFuzzer entry: the same bytes to receiptd's parser and to llhttp; a disagreement traps.
// With FUZZ_PRINT=1 in the environment, both readings of every input are printed (for replays).
let printTraces = getenv("FUZZ_PRINT") != nil

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzDifferential(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let input = Array(UnsafeBufferPointer(start: data, count: size))
    if printTraces {
        print("receiptd:\n\(OurParser.trace(input))\nllhttp:\n\(ReferenceParser.trace(input))")
    }
    if let disagreement = Differential.check(input) {
        fatalError("parsers disagree on \(input.count) bytes: \(disagreement)")
    }
    return 0
}
