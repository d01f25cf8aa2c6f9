import Entitlements
import Identifiers

// What is kept per holder, packed: the rows as bytes, each text once.

extension RollupRow {
    /// The first byte of ``packed(_:oneGroup:)``'s bytes, so that another layout can follow.
    static let packedVersion: UInt8 = 1

    /// A holder's rows as kept (``HolderRollup/kept``), packed: a version byte; the day the rows'
    /// days count from; the texts of the rows, each once, as their UTF-8 bytes (so two spellings
    /// of an id are two texts); the environments of one group with their groups; then each row:
    /// its texts by number, a byte of flags (settled, split, a cohort), its days from the first
    /// and its value and items, all as LEB128 (signed numbers zigzagged). A new holder's 53 rows
    /// take 1.3 KB, a quarter of their text: the keeper, which keeps a holder's rows every time
    /// it recomputes them, writes and compresses a quarter of the bytes (Docs/performance.md).
    package static func packed(_ rows: [RollupRow], oneGroup: [String: String] = [:]) -> [UInt8] {
        let base = rows.lazy.map(\.key.atDay).first { $0 != .min && $0 != .max } ?? 0
        var texts = Texts()
        var body = Packer(capacity: rows.count * 24)
        let groups = oneGroup.sorted { Identifier($0.key) < Identifier($1.key) }
        for (environment, group) in groups {
            body.unsigned(texts.number(environment, 0))
            body.unsigned(texts.number(group, 8))
        }
        var count = 0
        for row in rows {
            let k = row.key
            if k.split != .none, oneGroup[k.environment] != nil { continue }
            count += 1
            body.unsigned(texts.number(k.environment, 0))
            body.unsigned(texts.number(k.chart.rawValue, 1))
            body.unsigned(texts.number(k.measure, 2))
            body.unsigned(texts.number(k.kind.rawValue, 3))
            let split: UInt64 = k.split == .none ? 0 : k.split == .country ? 1 : 2
            body.unsigned((k.settled ? 1 : 0) | split << 1 | (k.cohortDay == noCohort ? 0 : 8))
            body.unsigned(texts.number(k.bundleID, 4))
            body.unsigned(texts.number(k.store, 5))
            body.unsigned(texts.number(k.note, 6))
            body.day(k.atDay, from: base)
            body.day(k.untilDay, from: base)
            body.day(k.validFromDay, from: base)
            body.day(k.validUntilDay, from: base)
            if k.cohortDay != noCohort { body.day(k.cohortDay, from: base) }
            body.signed(row.value)
            body.signed(row.items)
            if k.split != .none { body.unsigned(texts.number(k.group, 8)) }
        }
        var out = Packer(capacity: body.bytes.count + texts.all.reduce(16) { $0 + $1.utf8.count + 1 })
        out.bytes.append(packedVersion)
        out.signed(base)
        out.unsigned(texts.all.count)
        for text in texts.all {
            out.unsigned(text.utf8.count)
            out.bytes.append(contentsOf: text.utf8)
        }
        out.unsigned(groups.count)
        out.unsigned(count)
        out.bytes += body.bytes
        return out.bytes
    }

    /// ``packed(_:oneGroup:)``'s rows back as kept; nil when the bytes are not such rows.
    package static func unpacked(_ bytes: [UInt8]) -> HolderRollup? {
        var r = Unpacker(bytes: bytes)
        guard r.byte() == packedVersion, let base = r.signed(), let n = r.count() else { return nil }
        var texts: [String] = []
        for _ in 0..<n {
            guard let text = r.text() else { return nil }
            texts.append(text)
        }
        func text() -> String? { r.count().flatMap { texts.indices.contains($0) ? texts[$0] : nil } }
        guard let groups = r.count(), let count = r.count() else { return nil }
        var oneGroup: [String: String] = [:]
        for _ in 0..<groups {
            guard let environment = text(), let group = text() else { return nil }
            oneGroup[environment] = group
        }
        var rows: [RollupRow] = []
        rows.reserveCapacity(min(count, bytes.count))
        for _ in 0..<count {
            guard let environment = text(), let chart = text().flatMap(Chart.init), let measure = text(),
                let kind = text().flatMap(ChartItem.Kind.init), let flags = r.unsigned(), flags < 16, flags >> 1 & 3 != 3,
                let bundleID = text(), let store = text(), let note = text(), let at = r.day(from: base),
                let until = r.day(from: base), let from = r.day(from: base), let to = r.day(from: base)
            else { return nil }
            var cohort = noCohort
            if flags & 8 != 0 {
                guard let day = r.day(from: base), day != .min, day != .max else { return nil }
                cohort = day
            }
            guard let value = r.signed(), let items = r.signed() else { return nil }
            let split: RollupSplit = [.none, .country, .product][Int(flags >> 1 & 3)]
            var group = ""
            if split != .none {
                guard let g = text() else { return nil }
                group = g
            }
            rows.append(
                RollupRow(
                    key: Key(
                        environment: environment, chart: chart, measure: measure, kind: kind, settled: flags & 1 != 0,
                        bundleID: bundleID, store: store, note: note, atDay: at, untilDay: until, validFromDay: from,
                        validUntilDay: to, cohortDay: cohort, split: split, group: group),
                    value: value, items: items))
        }
        guard r.atEnd else { return nil }
        return HolderRollup(kept: rows, oneGroup: oneGroup)
    }
}

/// The texts of a holder's rows, each once, numbered in the order first met: by their bytes. A
/// field's text is most often the row before's, which is tried first.
private struct Texts {
    private(set) var all: [String] = []
    private var numbers: [Identifier: Int] = [:]
    private var last = [Int](repeating: -1, count: 9)

    /// The number of `text`, the `field`th text of a row.
    mutating func number(_ text: String, _ field: Int) -> Int {
        if last[field] >= 0, all[last[field]].isExactly(text) { return last[field] }
        let n: Int
        if let known = numbers[Identifier(text)] {
            n = known
        } else {
            n = all.count
            all.append(text)
            numbers[Identifier(text)] = n
        }
        last[field] = n
        return n
    }
}

/// LEB128 numbers, signed ones zigzagged, and days from a base (0 and 1 the unbounded).
private struct Packer {
    var bytes: [UInt8] = []

    init(capacity: Int) { bytes.reserveCapacity(capacity) }

    mutating func unsigned(_ n: Int) { unsigned(UInt64(n)) }

    mutating func unsigned(_ n: UInt64) {
        var n = n
        while n >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: n) | 0x80)
            n >>= 7
        }
        bytes.append(UInt8(n))
    }

    mutating func signed(_ n: Int64) { unsigned(UInt64(bitPattern: n << 1 ^ n >> 63)) }

    /// A day (or ``RollupRow/noCohort``'s unbounded kin) from `base`: 0 for `.min`, 1 for `.max`.
    mutating func day(_ n: Int64, from base: Int64) {
        if n == .min || n == .max { return unsigned(UInt64(n == .min ? 0 : 1)) }
        let d = n &- base
        unsigned(UInt64(bitPattern: d << 1 ^ d >> 63) &+ 2)
    }
}

/// ``Packer``'s reader: nil for whatever runs past the end or overflows.
private struct Unpacker {
    let bytes: [UInt8]
    var at = 0

    var atEnd: Bool { at == bytes.count }

    mutating func byte() -> UInt8? {
        guard at < bytes.count else { return nil }
        defer { at += 1 }
        return bytes[at]
    }

    mutating func unsigned() -> UInt64? {
        var n: UInt64 = 0
        var shift: UInt64 = 0
        while let b = byte() {
            guard shift < 64, shift < 63 || b <= 1 else { return nil }
            n |= UInt64(b & 0x7F) << shift
            if b < 0x80 { return n }
            shift += 7
        }
        return nil
    }

    /// A count or a text's number: at most the bytes there are.
    mutating func count() -> Int? { unsigned().flatMap { $0 <= UInt64(bytes.count) ? Int($0) : nil } }

    mutating func signed() -> Int64? {
        unsigned().map { Int64(bitPattern: $0 >> 1) ^ -Int64(bitPattern: $0 & 1) }
    }

    mutating func day(from base: Int64) -> Int64? {
        guard let v = unsigned() else { return nil }
        if v < 2 { return v == 0 ? .min : .max }
        let z = v &- 2
        let day = (Int64(bitPattern: z >> 1) ^ -Int64(bitPattern: z & 1)) &+ base
        return day == .min || day == .max ? nil : day
    }

    mutating func text() -> String? {
        guard let n = count(), n <= bytes.count - at else { return nil }
        defer { at += n }
        return String(validating: bytes[at..<at + n], as: UTF8.self)
    }
}
