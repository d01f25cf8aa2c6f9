import Entitlements

// What is kept per holder as text: today's moments, and the rows as they were kept before rollup
// format 7 (now packed: RollupPacked.swift), one a line, tab-separated fields.

extension RollupRow {
    /// Rows as text, one a line, tab-separated fields (tabs, newlines and backslashes escaped;
    /// `-` and `+` for the unbounded days, an empty field for no cohort): what was kept per holder
    /// before rollup format 7, read back by ``decode(_:)``; written now only to test that reading.
    /// A split row has two more fields, its split and its group. The split rows of an environment
    /// in `oneGroup` are not written but a line of three fields, `one group`, the environment and its group:
    /// they are its unsplit rows in that group (``Rollup/holder(_:settings:rates:writtenAt:)``),
    /// made again when read, and two thirds of a holder's rows.
    package static func encode(_ rows: [RollupRow], oneGroup: [String: String] = [:]) -> String {
        var out = Fields(capacity: rows.count * 64)
        for (environment, group) in oneGroup.sorted(by: { $0.key < $1.key }) {
            out.text(oneGroupMark)
            out.text(environment)
            out.text(group)
            out.endRecord()
        }
        for row in rows {
            let k = row.key
            if k.split != .none, oneGroup[k.environment] != nil { continue }
            out.text(k.environment)
            out.text(k.chart.rawValue)
            out.text(k.measure)
            out.text(k.kind.rawValue)
            out.text(k.settled ? "s" : "")
            out.text(k.bundleID)
            out.text(k.store)
            out.text(k.note)
            out.day(k.atDay)
            out.day(k.untilDay)
            out.day(k.validFromDay)
            out.day(k.validUntilDay)
            out.optional(k.cohortDay == noCohort ? nil : k.cohortDay)
            out.int(row.value)
            out.int(row.items)
            if k.split != .none {
                out.text(k.split.rawValue)
                out.text(k.group)
            }
            out.endRecord()
        }
        return out.string
    }

    /// The first field of the line naming an environment of one group (a row has 15 or 17).
    static let oneGroupMark = "one group"

    /// ``encode(_:oneGroup:)``'s rows back, the split rows of one group's environments made
    /// again; nil when the text is not such rows.
    package static func decode(_ text: String) -> [RollupRow]? { decodeKept(text)?.rows }

    /// ``decode(_:)``'s rows as kept: the split rows of one group's environments not made.
    package static func decodeKept(_ text: String) -> HolderRollup? {
        func day(_ s: Substring) -> Int64? { s == "-" ? .min : s == "+" ? .max : Int64(s) }
        var rows: [RollupRow] = []
        var oneGroup: [String: String] = [:]
        for line in text.split(separator: "\n") {
            let f = line.split(separator: "\t", omittingEmptySubsequences: false)
            if f.count == 3, f[0] == oneGroupMark {
                oneGroup[f[1].unescaped()] = f[2].unescaped()
                continue
            }
            guard f.count == 15 || f.count == 17, let chart = Chart(rawValue: String(f[1])),
                let kind = ChartItem.Kind(rawValue: String(f[3])),
                f[4] == "s" || f[4].isEmpty, let at = day(f[8]), let until = day(f[9]), let from = day(f[10]),
                let to = day(f[11]), let cohort = f[12].isEmpty ? noCohort : Int64(f[12]), let value = Int64(f[13]),
                let items = Int64(f[14])
            else { return nil }
            var split = RollupSplit.none
            if f.count == 17 {
                guard let named = RollupSplit(rawValue: String(f[15])), named != .none else { return nil }
                split = named
            }
            rows.append(
                RollupRow(
                    key: Key(
                        environment: f[0].unescaped(), chart: chart, measure: f[2].unescaped(), kind: kind, settled: f[4] == "s",
                        bundleID: f[5].unescaped(), store: f[6].unescaped(), note: f[7].unescaped(), atDay: at, untilDay: until,
                        validFromDay: from, validUntilDay: to, cohortDay: cohort, split: split,
                        group: f.count == 17 ? f[16].unescaped() : ""),
                    value: value, items: items))
        }
        return HolderRollup(kept: rows, oneGroup: oneGroup)
    }
}

extension RollupMoment {
    /// Items as text, one a line, tab-separated fields as ``RollupRow/encode(_:)`` writes them
    /// (notes joined by record separators; a twelfth field for an item in a group, which names
    /// its storefront and product): what is kept per holder, chart and day.
    package static func encode(_ items: [ChartItem]) -> String {
        var out = Fields(capacity: items.count * 64)
        for i in items {
            out.text(i.measure)
            out.text(i.kind.rawValue)
            out.text(i.bundleID)
            out.text(i.store.rawValue)
            out.text(i.notes.isEmpty ? "" : i.notes.map(RollupRow.noteText).joined(separator: "\u{1E}"))
            out.day(i.at)
            out.day(i.until)
            out.day(i.validFrom)
            out.day(i.validUntil)
            out.optional(i.cohort)
            out.int(i.value)
            if !i.group.isEmpty { out.text(i.group) }
            out.endRecord()
        }
        return out.string
    }

    /// ``encode(_:)``'s items back, of `appUserID`; nil when the text is not such items. Read
    /// straight from the bytes (a chart reads today's items of every holder whose figures change
    /// today: tens of thousands at a million subscribers), the app's name and the group made
    /// once per run of items that share them.
    package static func decode(_ text: String, appUserID: String) -> [ChartItem]? {
        var items: [ChartItem] = []
        return decode(text, appUserID: appUserID, into: &items) ? items : nil
    }

    /// ``decode(_:appUserID:)`` appending to `items` (of `measure` alone, when given): a chart
    /// reads tens of thousands into one array. False when the text is not such items (then some
    /// may have been appended).
    package static func decode(_ text: String, appUserID: String, measure: String? = nil, into items: inout [ChartItem])
        -> Bool
    {
        var text = text
        return text.withUTF8 { bytes -> Bool in
            var fields: [Range<Int>] = []
            fields.reserveCapacity(12)
            var lastBundle: (Range<Int>, String)?
            var lastGroup: (Range<Int>, String)?
            func string(_ r: Range<Int>) -> String {
                let slice = UnsafeBufferPointer(rebasing: bytes[r])
                let plain = String(decoding: slice, as: UTF8.self)
                return slice.contains(0x5C) ? Substring(plain).unescaped() : plain
            }
            func number(_ r: Range<Int>) -> Int64? {
                if r.count == 1, bytes[r.lowerBound] == 0x2D { return .min }
                if r.count == 1, bytes[r.lowerBound] == 0x2B { return .max }
                var i = r.lowerBound
                let negative = i < r.upperBound && bytes[i] == 0x2D
                if negative { i += 1 }
                guard i < r.upperBound, r.upperBound - i <= 19 else { return nil }
                var n: Int64 = 0
                while i < r.upperBound {
                    let d = bytes[i] &- 0x30
                    guard d < 10 else { return nil }
                    let (times, o1) = n.multipliedReportingOverflow(by: 10)
                    let (sum, o2) = times.addingReportingOverflow(Int64(d))
                    guard !o1, !o2 else { return nil }
                    n = sum
                    i += 1
                }
                return negative ? -n : n
            }
            func same(_ a: Range<Int>, _ b: Range<Int>) -> Bool {
                a.count == b.count && zip(a, b).allSatisfy { bytes[$0] == bytes[$1] }
            }
            func equals(_ r: Range<Int>, _ s: String) -> Bool {
                r.count == s.utf8.count && zip(r, s.utf8).allSatisfy { bytes[$0] == $1 }
            }
            let stores = Store.all
            // Of a record's eleven fields (twelve in a group), checked by the caller.
            func item(_ f: [Range<Int>]) -> ChartItem? {
                guard let kind = ChartItem.Kind.allCases.first(where: { equals(f[1], $0.rawValue) }),
                    let store = stores.first(where: { equals(f[3], $0.rawValue) }), let at = number(f[5]),
                    let until = number(f[6]), let from = number(f[7]),
                    let to = number(f[8]), let value = number(f[10]), value != .min, value != .max
                else { return nil }
                let cohort: Int64?
                if f[9].isEmpty {
                    cohort = nil
                } else {
                    guard let c = number(f[9]), c != .min, c != .max else { return nil }
                    cohort = c
                }
                var notes: [ItemNote] = []
                if !f[4].isEmpty {
                    for text in string(f[4]).split(separator: "\u{1E}") {
                        guard let note = RollupRow.note(String(text)) else { return nil }
                        notes.append(note)
                    }
                }
                let bundle: String
                if let (r, name) = lastBundle, same(r, f[2]) {
                    bundle = name
                } else {
                    bundle = string(f[2])
                    lastBundle = (f[2], bundle)
                }
                var group = ""
                if f.count == 12 {
                    if let (r, name) = lastGroup, same(r, f[11]) {
                        group = name
                    } else {
                        group = string(f[11])
                        lastGroup = (f[11], group)
                    }
                }
                let measure = string(f[0])
                return ChartItem(
                    measure: measure, kind: kind, at: at, until: until, validFrom: from, validUntil: to, cohort: cohort,
                    value: value, isMoney: ChartItem.isMoney(measure), appUserID: appUserID, originalTransactionID: "",
                    transactionID: "", notes: notes, bundleID: bundle, store: store,
                    group: group)
            }
            var start = 0
            for i in 0...bytes.count {
                let end = i == bytes.count
                let b: UInt8 = end ? 0x0A : bytes[i]
                guard b == 0x09 || b == 0x0A else { continue }
                fields.append(start..<i)
                start = i + 1
                if b == 0x0A {
                    if !(fields.count == 1 && fields[0].isEmpty) {
                        // A group is written only when there is one.
                        guard fields.count == 11 || fields.count == 12 && !fields[11].isEmpty else { return false }
                        if measure.map({ equals(fields[0], $0) }) ?? true {
                            guard let next = item(fields) else { return false }
                            items.append(next)
                        }
                    }
                    fields.removeAll(keepingCapacity: true)
                }
            }
            return true
        }
    }
}

/// What the rollups keep as text: tab-separated fields, a record a line; text with its backslashes,
/// tabs and newlines escaped, the unbounded as `-` and `+`, no value as an empty field.
private struct Fields {
    private(set) var bytes: [UInt8] = []

    init(capacity: Int) { bytes.reserveCapacity(capacity) }

    mutating func text(_ s: String) {
        var s = s
        s.withUTF8 { utf8 in
            // Most fields need no escape: copied whole.
            guard utf8.contains(where: { $0 == 0x5C || $0 == 0x09 || $0 == 0x0A }) else {
                return bytes.append(contentsOf: utf8)
            }
            for b in utf8 {
                switch b {
                case 0x5C:
                    bytes.append(0x5C)
                    bytes.append(0x5C)
                case 0x09:
                    bytes.append(0x5C)
                    bytes.append(0x74)
                case 0x0A:
                    bytes.append(0x5C)
                    bytes.append(0x6E)
                default: bytes.append(b)
                }
            }
        }
        bytes.append(0x09)
    }

    /// A day or an instant: `-` and `+` for the unbounded.
    mutating func day(_ n: Int64) {
        if n == .min || n == .max {
            bytes.append(n == .min ? 0x2D : 0x2B)
            bytes.append(0x09)
        } else {
            int(n)
        }
    }

    mutating func optional(_ n: Int64?) {
        if let n { digits(n) }
        bytes.append(0x09)
    }

    mutating func int(_ n: Int64) {
        digits(n)
        bytes.append(0x09)
    }

    /// `n` in decimal, as `String(n)` spells it, written straight into the bytes.
    private mutating func digits(_ n: Int64) {
        if n < 0 { bytes.append(0x2D) }
        var magnitude = n.magnitude
        let start = bytes.count
        repeat {
            bytes.append(0x30 + UInt8(magnitude % 10))
            magnitude /= 10
        } while magnitude > 0
        bytes[start...].reverse()
    }

    /// Ends the record: its last field's tab becomes the newline.
    mutating func endRecord() { bytes[bytes.count - 1] = 0x0A }

    var string: String { String(decoding: bytes, as: UTF8.self) }
}

extension Substring {
    fileprivate func unescaped() -> String {
        guard contains("\\") else { return String(self) }
        var out = ""
        var escaping = false
        for c in self {
            if escaping {
                out.append(c == "t" ? "\t" : c == "n" ? "\n" : c)
                escaping = false
            } else if c == "\\" {
                escaping = true
            } else {
                out.append(c)
            }
        }
        return out
    }
}
