import Entitlements
import Identifiers

// What is kept per holder, packed: the rows as bytes, each text once, each row as what it
// changes from the row before.

extension RollupRow {
    /// The first byte of ``packed(_:oneGroup:)``'s bytes: 2. Rows packed as version 1, kept before,
    /// still read (``unpacked(_:)``) until their holder changes.
    static let packedVersion: UInt8 = 2

    /// A row's fields as numbers (``Slots``), in the order they are packed.
    private enum Slot {
        static let (environment, chart, measure, kind, flags, bundleID, store, note) = (0, 1, 2, 3, 4, 5, 6, 7)
        static let (at, until, validFrom, validUntil, cohort, value, items, group) = (8, 9, 10, 11, 12, 13, 14, 15)
        static let count = 16
    }

    /// A holder's rows as kept (``HolderRollup/kept``), packed: a version byte (2); the day the
    /// rows' days count from; how many texts of ``RollupVocabulary`` the numbers count on; the
    /// holder's own texts (those not in it), each once, as their UTF-8 bytes (so two spellings of
    /// an id are two texts); the environments of one group with their groups; then the rows, in
    /// the order of their fields' numbers. A row's fields are numbers (texts by number, a byte of
    /// flags: settled, split, a cohort; days from the first; value and items, signed), all as
    /// LEB128 (signed numbers zigzagged); each row is a mask of the fields that differ from the
    /// row before's, then those fields. The split rows of one group's environments are left out.
    /// A new holder's 53 rows take about 380 bytes: no compression is needed, and so none is
    /// spent (Docs/performance.md).
    package static func packed(_ rows: [RollupRow], oneGroup: [String: String] = [:]) -> [UInt8] {
        let base = rows.lazy.map(\.key.atDay).first { $0 != .min && $0 != .max } ?? 0
        var texts = Texts()
        let groups = oneGroup.sorted { Identifier($0.key) < Identifier($1.key) }.map {
            (texts.number($0.key, 0), texts.number($0.value, 8))
        }
        var slots: [UInt64] = []
        slots.reserveCapacity(rows.count * Slot.count)
        for row in rows {
            let k = row.key
            if k.split != .none, oneGroup[k.environment] != nil { continue }
            let split: UInt64 = k.split == .none ? 0 : k.split == .country ? 1 : 2
            let hasCohort = k.cohortDay != noCohort
            slots.append(UInt64(texts.number(k.environment, 0)))
            slots.append(UInt64(texts.number(k.chart.rawValue, 1)))
            slots.append(UInt64(texts.number(k.measure, 2)))
            slots.append(UInt64(texts.number(k.kind.rawValue, 3)))
            slots.append((k.settled ? 1 : 0) | split << 1 | (hasCohort ? 8 : 0))
            slots.append(UInt64(texts.number(k.bundleID, 4)))
            slots.append(UInt64(texts.number(k.store, 5)))
            slots.append(UInt64(texts.number(k.note, 6)))
            slots.append(Packer.day(k.atDay, from: base))
            slots.append(Packer.day(k.untilDay, from: base))
            slots.append(Packer.day(k.validFromDay, from: base))
            slots.append(Packer.day(k.validUntilDay, from: base))
            slots.append(hasCohort ? Packer.day(k.cohortDay, from: base) : 0)
            slots.append(Packer.zigzag(row.value))
            slots.append(Packer.zigzag(row.items))
            slots.append(k.split == .none ? 0 : UInt64(texts.number(k.group, 8)))
        }
        let count = slots.count / Slot.count
        let order = slots.withUnsafeBufferPointer { s in
            (0..<count).sorted { a, b in
                for i in 0..<Slot.count where s[a * Slot.count + i] != s[b * Slot.count + i] {
                    return s[a * Slot.count + i] < s[b * Slot.count + i]
                }
                return false
            }
        }
        var out = Packer(capacity: count * 8 + texts.own.reduce(32) { $0 + $1.utf8.count + 1 })
        out.bytes.append(packedVersion)
        out.signed(base)
        out.unsigned(RollupVocabulary.texts.count)
        out.unsigned(texts.own.count)
        for text in texts.own {
            out.unsigned(text.utf8.count)
            out.bytes.append(contentsOf: text.utf8)
        }
        out.unsigned(groups.count)
        for (environment, group) in groups {
            out.unsigned(environment)
            out.unsigned(group)
        }
        out.unsigned(count)
        slots.withUnsafeBufferPointer { s in
            var before = count > 0 ? order[0] : 0
            for (n, row) in order.enumerated() {
                var mask = 0
                for i in 0..<Slot.count
                where n == 0 ? s[row * Slot.count + i] != 0 : s[row * Slot.count + i] != s[before * Slot.count + i] {
                    mask |= 1 << i
                }
                out.unsigned(mask)
                for i in 0..<Slot.count where mask & 1 << i != 0 { out.unsigned(s[row * Slot.count + i]) }
                before = row
            }
        }
        return out.bytes
    }

    /// ``packed(_:oneGroup:)``'s rows back as kept, or those of version 1 (no words of the
    /// vocabulary, its row count before its groups, each row whole: every field its flags say it
    /// has, in ``Slot``'s order, in no order of rows); nil when the bytes are not such rows.
    package static func unpacked(_ bytes: [UInt8]) -> HolderRollup? {
        var r = Unpacker(bytes: bytes)
        guard let version = r.byte(), version == 1 || version == packedVersion, let base = r.signed() else { return nil }
        let vocabulary = RollupVocabulary.texts
        var shared = 0
        if version == packedVersion {
            guard let counted = r.unsigned(), counted <= vocabulary.count else { return nil }
            shared = Int(counted)
        }
        guard let n = r.count() else { return nil }
        var own: [String] = []
        for _ in 0..<n {
            guard let text = r.text() else { return nil }
            own.append(text)
        }
        func text(_ number: UInt64?) -> String? {
            guard let number else { return nil }
            if number < shared { return vocabulary[Int(number)] }
            return number - UInt64(shared) < UInt64(own.count) ? own[Int(number) - shared] : nil
        }
        guard let groups = r.count() else { return nil }
        var count = 0
        if version == 1 {
            guard let rowCount = r.count() else { return nil }
            count = rowCount
        }
        var oneGroup: [String: String] = [:]
        for _ in 0..<groups {
            guard let environment = text(r.unsigned()), let group = text(r.unsigned()) else { return nil }
            oneGroup[environment] = group
        }
        if version == packedVersion {
            guard let rowCount = r.count() else { return nil }
            count = rowCount
        }
        var rows: [RollupRow] = []
        rows.reserveCapacity(count)
        var s = [UInt64](repeating: 0, count: Slot.count)
        for _ in 0..<count {
            if version == packedVersion {
                // The fields that differ from the row before's.
                guard let mask = r.unsigned(), mask < 1 << Slot.count else { return nil }
                for i in 0..<Slot.count where mask & 1 << i != 0 {
                    guard let value = r.unsigned() else { return nil }
                    s[i] = value
                }
            } else {
                // Every field, the cohort and the group only when the flags (read before them) say so.
                for i in 0..<Slot.count {
                    let absent =
                        i == Slot.cohort && s[Slot.flags] & 8 == 0 || i == Slot.group && s[Slot.flags] >> 1 & 3 == 0
                    guard !absent else {
                        s[i] = 0
                        continue
                    }
                    guard let value = r.unsigned() else { return nil }
                    s[i] = value
                }
            }
            let flags = s[Slot.flags]
            let (hasCohort, split) = (flags & 8 != 0, flags >> 1 & 3)
            guard flags < 16, split != 3, hasCohort || s[Slot.cohort] == 0, split != 0 || s[Slot.group] == 0,
                let environment = text(s[Slot.environment]), let chart = text(s[Slot.chart]).flatMap(Chart.init),
                let measure = text(s[Slot.measure]), let kind = text(s[Slot.kind]).flatMap(ChartItem.Kind.init),
                let bundleID = text(s[Slot.bundleID]), let store = text(s[Slot.store]), let note = text(s[Slot.note]),
                let at = Unpacker.day(s[Slot.at], from: base), let until = Unpacker.day(s[Slot.until], from: base),
                let from = Unpacker.day(s[Slot.validFrom], from: base),
                let to = Unpacker.day(s[Slot.validUntil], from: base)
            else { return nil }
            var cohort = noCohort
            if hasCohort {
                guard let day = Unpacker.day(s[Slot.cohort], from: base), day != .min, day != .max else { return nil }
                cohort = day
            }
            var group = ""
            if split != 0 {
                guard let g = text(s[Slot.group]) else { return nil }
                group = g
            }
            rows.append(
                RollupRow(
                    key: Key(
                        environment: environment, chart: chart, measure: measure, kind: kind, settled: flags & 1 != 0,
                        bundleID: bundleID, store: store, note: note, atDay: at, untilDay: until, validFromDay: from,
                        validUntilDay: to, cohortDay: cohort, split: [.none, .country, .product][Int(split)], group: group),
                    value: Unpacker.signed(s[Slot.value]), items: Unpacker.signed(s[Slot.items])))
        }
        guard r.atEnd else { return nil }
        return HolderRollup(kept: rows, oneGroup: oneGroup)
    }
}

/// The texts of a holder's rows numbered: a text of ``RollupVocabulary`` by its place there,
/// any other by its place among the holder's own texts (in the order first met) after the
/// vocabulary's; by their bytes. A field's text is most often the row before's, which is tried first.
private struct Texts {
    /// The holder's own texts.
    private(set) var own: [String] = []
    private var numbers: [Identifier: Int] = [:]
    private let vocabulary = RollupVocabulary.texts
    private let shared = RollupVocabulary.numbers
    private var last = [Int](repeating: -1, count: 9)

    /// The number of `text`, the `field`th text of a row.
    mutating func number(_ text: String, _ field: Int) -> Int {
        let before = last[field]
        if before >= 0, (before < vocabulary.count ? vocabulary[before] : own[before - vocabulary.count]).isExactly(text) {
            return before
        }
        let n: Int
        if let known = shared[Identifier(text)] ?? numbers[Identifier(text)] {
            n = known
        } else {
            n = vocabulary.count + own.count
            own.append(text)
            numbers[Identifier(text)] = n
        }
        last[field] = n
        return n
    }
}

extension RollupVocabulary {
    /// Each text's place, by its bytes.
    static let numbers: [Identifier: Int] = {
        var numbers: [Identifier: Int] = [:]
        for (n, text) in texts.enumerated() where numbers[Identifier(text)] == nil { numbers[Identifier(text)] = n }
        return numbers
    }()
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

    mutating func signed(_ n: Int64) { unsigned(Self.zigzag(n)) }

    static func zigzag(_ n: Int64) -> UInt64 { UInt64(bitPattern: n << 1 ^ n >> 63) }

    /// A day (or ``RollupRow/noCohort``'s unbounded kin) from `base`: 0 for `.min`, 1 for `.max`.
    static func day(_ n: Int64, from base: Int64) -> UInt64 {
        if n == .min || n == .max { return n == .min ? 0 : 1 }
        return zigzag(n &- base) &+ 2
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

    mutating func signed() -> Int64? { unsigned().map(Self.signed) }

    static func signed(_ z: UInt64) -> Int64 { Int64(bitPattern: z >> 1) ^ -Int64(bitPattern: z & 1) }

    /// ``Packer/day(_:from:)``'s day back; nil for a day past the unbounded.
    static func day(_ v: UInt64, from base: Int64) -> Int64? {
        if v < 2 { return v == 0 ? .min : .max }
        let day = signed(v &- 2) &+ base
        return day == .min || day == .max ? nil : day
    }

    mutating func text() -> String? {
        guard let n = count(), n <= bytes.count - at else { return nil }
        defer { at += n }
        return String(validating: bytes[at..<at + n], as: UTF8.self)
    }
}
