import FuzzSupport

// libFuzzer entry: receiptd's parser alone; a broken property traps.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzParser(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let input = Array(UnsafeBufferPointer(start: data, count: size))
    if let violation = Properties.check(input) {
        fatalError("parser property broken on \(input.count) bytes: \(violation)")
    }
    return 0
}
