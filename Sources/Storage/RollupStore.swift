package import Analytics
package import DatabaseEngine
import Foundation
import Gzip
package import Identifiers

/// The chart rollups: their state, each holder's last rows, the sums by day and the exact items
/// of today's instants; and the marks drill-downs find holders by. On PostgreSQL, tables of the
/// database (Migrations/postgresql/0019 to 0022); on SQLite, of a file of their own beside the
/// database's, with a writer of its own (``DatabaseQueue``), whose schema is ``fileSchema(in:)``.
/// Synchronous: use it inside `DatabaseQueue.write(attached: true)` or `read`.
package struct RollupStore {
    private let db: Database

    package init(_ database: Database) { db = database }

    // MARK: What is kept, and the lock

    /// The lock every write of the rollups takes (on PostgreSQL: the keeper's, and an erasure's
    /// forgetting a holder), so that no two write them at once.
    package static let lockKey = "receiptd rollups"

    /// A holder's rows as kept in `rollup_holders.rows`: packed (``RollupRow/packed(_:oneGroup:)``,
    /// the split rows of `oneGroup`'s environments left to be made again) in base64, behind a
    /// `b`. Rows kept before still read back: packed (version 1) and zlib-compressed
    /// (``Deflated``) behind a `p`; or text (rollup format 6 and earlier), compressed the same
    /// way, without the `p`, which a new format's rebuild rewrites.
    package static func kept(_ rows: [RollupRow], oneGroup: [String: String] = [:]) -> String {
        "b" + Data(RollupRow.packed(rows, oneGroup: oneGroup)).base64EncodedString()
    }

    /// ``kept(_:oneGroup:)``'s rows back; nil when the text is not such rows.
    package static func rows(ofKept text: String) -> [RollupRow]? { holder(ofKept: text)?.rows }

    /// ``kept(_:oneGroup:)``'s rows back as kept, the split rows of one group's environments not made.
    package static func holder(ofKept text: String) -> HolderRollup? {
        if text.hasPrefix("b") {
            return Data(base64Encoded: String(text.dropFirst())).flatMap { RollupRow.unpacked([UInt8]($0)) }
        }
        guard text.hasPrefix("p") else { return Deflated.unpack(text).flatMap(RollupRow.decodeKept) }
        return Deflated.unpackBytes(text.dropFirst()).flatMap(RollupRow.unpacked)
    }

    /// The marks of a holder's rows as kept, nil when they do not read back: what an erasure
    /// deletes from `rollup_marks` (``forget(_:marksOf:)``).
    package static func marks(ofKept text: String) -> Set<RollupMark>? {
        holder(ofKept: text).map { RollupMark.marks(of: $0.kept) }
    }

    /// What the rollups were built for and how far they are.
    package struct State: Sendable, Equatable {
        package enum Phase: String, Sendable { case building, ready }
        package var fingerprint: String
        package var phase: Phase
        /// While building: the last holder done (nil before the first).
        package var rebuildAfter: String?
        /// The last change of the change log the rollups include.
        package var changesThrough: Int64

        package init(fingerprint: String, phase: Phase, rebuildAfter: String?, changesThrough: Int64) {
            self.fingerprint = fingerprint
            self.phase = phase
            self.rebuildAfter = rebuildAfter
            self.changesThrough = changesThrough
        }
    }

    package func state() throws -> State {
        let q = try db.cached(
            "SELECT fingerprint, phase, rebuild_after, changes_through FROM rollup_state WHERE id = 1")
        defer { q.reset() }
        guard try q.step() else {
            throw db.failure("rollup_state has no row")
        }
        return State(
            fingerprint: q.text(0)!, phase: State.Phase(rawValue: q.text(1)!) ?? .building, rebuildAfter: q.text(2),
            changesThrough: q.int(3))
    }

    package func save(_ state: State) throws {
        try db.cached(
            "UPDATE rollup_state SET fingerprint = ?, phase = ?, rebuild_after = ?, changes_through = ? WHERE id = 1"
        ).bind([state.fingerprint, state.phase.rawValue, state.rebuildAfter, state.changesThrough]).run()
    }

    /// Changes in the change log after `changesThrough`, as far as this transaction sees: how far
    /// the rollups are behind.
    package func pendingChanges(after changesThrough: Int64) throws -> Int64 {
        let q = try db.cached("SELECT count(*) FROM changes WHERE sequence > ?").bind([changesThrough])
        defer { q.reset() }
        return try q.step() ? q.int(0) : 0
    }

    /// Forgets every holder's rows, the sums and the moments (a rebuild starts from nothing).
    package func clear() throws {
        for table in ["rollup_holders", "rollup_days", "rollup_splits", "rollup_moments", "rollup_marks"] {
            try db.execute("DELETE FROM \(table)")
        }
    }

    /// Forgets the holders `ids` (an erasure, ``Erasure``): their kept rows, their moments and
    /// their marks. Their marks are found from their kept rows (`marksOf`, ReceiptCore's reading of
    /// them: no index finds marks by holder, 0021), or for rows that do not read back (nil), in
    /// every mark. The sums stay: totals, no one's; the erasure's change has the keeper rebuild
    /// them. Returns the rows each table lost (tables that lost none absent).
    package func forget(_ ids: [String], marksOf: (String) -> Set<RollupMark>?) throws -> [String: Int] {
        var lost: [String: Int] = [:]
        func note(_ table: String, _ n: Int) { if n > 0 { lost[table, default: 0] += n } }
        var (marks, unread): ([(appUserID: String, mark: RollupMark)], [String]) = ([], [])
        for (id, rows) in try holderRows(ids).sorted(by: { $0.key < $1.key }) {
            guard let theirs = marksOf(rows) else {
                unread.append(id.string)
                continue
            }
            marks += theirs.sorted().map { (id.string, $0) }
        }
        note("rollup_marks", try removeMarks(marks))
        for id in unread {
            try db.cached("DELETE FROM rollup_marks WHERE app_user_id = ?").bind([id]).run()
            note("rollup_marks", db.changes)
        }
        for table in ["rollup_holders", "rollup_moments"] {
            let delete = try db.cached("DELETE FROM \(table) WHERE app_user_id = ?")
            for id in ids {
                try delete.bind([id]).run()
                note(table, db.changes)
            }
        }
        return lost
    }

    // MARK: Holders

    /// Holders' rows as last kept (encoded), of those with any: a hundred a statement. By the
    /// holder's id as its bytes, as the table's key.
    package func holderRows(_ users: [String]) throws -> [Identifier: String] {
        let q = try db.cached("SELECT app_user_id, rows FROM rollup_holders WHERE app_user_id IN \(AnalyticsStore.inList)")
        var rows: [Identifier: String] = [:]
        for chunk in AnalyticsStore.inListChunks(users) {
            try q.bind(chunk)
            while try q.step() { rows[Identifier(q.text(0)!)] = q.text(1)! }
        }
        return rows
    }

    /// Keeps holders' rows (encoded); nil forgets the holder.
    package func saveHolderRows(_ rows: [(appUserID: String, rows: String?)]) throws {
        let gone = rows.filter { $0.rows == nil }.map(\.appUserID)
        try many("DELETE FROM rollup_holders WHERE app_user_id IN ", width: 1, gone.map { [$0] }, listed: true)
        try many(
            "INSERT INTO rollup_holders (app_user_id, rows) VALUES ", width: 2,
            rows.compactMap { row in row.rows.map { [row.appUserID, $0] } },
            tail: " ON CONFLICT (app_user_id) DO UPDATE SET rows = excluded.rows")
    }

    /// Runs `head` followed by rows of `width` placeholders (or, `listed`, one list of single
    /// values) and `tail`, a hundred rows a statement: one round trip per hundred on PostgreSQL.
    private func many(
        _ head: String, width: Int, _ rows: [[(any StatementValue)?]], tail: String = "", listed: Bool = false
    ) throws {
        let chunk = 100
        let row = "(" + Array(repeating: "?", count: width).joined(separator: ", ") + ")"
        func sql(_ n: Int) -> String {
            listed
                ? head + "(" + Array(repeating: "?", count: n).joined(separator: ", ") + ")" + tail
                : head + Array(repeating: row, count: n).joined(separator: ", ") + tail
        }
        var start = 0
        while start < rows.count {
            let n = min(chunk, rows.count - start)
            // Full chunks share one statement; a shorter last chunk goes a row at a time.
            let statement = try db.cached(sql(n == chunk ? chunk : 1))
            if n == chunk {
                try statement.bind(Array(rows[start..<start + n].joined())).run()
            } else {
                for r in rows[start..<start + n] { try statement.bind(r).run() }
            }
            start += n
        }
    }

    // MARK: Sums

    static let dayKey =
        "environment, chart, measure, kind, settled, bundle_id, store, note, at_day, until_day, valid_from_day, valid_until_day, "
        + "cohort_day"

    /// The key of `rollup_splits`: `rollup_days`'s, with the split and its value.
    static let splitKey =
        "environment, chart, split, measure, kind, settled, bundle_id, store, note, split_value, at_day, until_day, "
        + "valid_from_day, valid_until_day, cohort_day"

    /// Adds differences to the sums (split rows to `rollup_splits`); a sum left with no item is deleted.
    package func add(_ differences: [RollupRow]) throws {
        let unsplit = differences.filter { $0.key.split == .none }
        let split = differences.filter { $0.key.split != .none }
        try many(
            "INSERT INTO rollup_days (\(Self.dayKey), value, items) VALUES ", width: 15,
            unsplit.map { row -> [(any StatementValue)?] in
                let k = row.key
                return [
                    k.environment, k.chart.rawValue, k.measure, k.kind.rawValue, Int64(k.settled ? 1 : 0), k.bundleID, k.store,
                    k.note, k.atDay, k.untilDay, k.validFromDay, k.validUntilDay, k.cohortDay, row.value, row.items,
                ]
            },
            tail: """
                 ON CONFLICT (\(Self.dayKey)) DO UPDATE
                SET value = rollup_days.value + excluded.value, items = rollup_days.items + excluded.items
                """)
        try many(
            "INSERT INTO rollup_splits (\(Self.splitKey), value, items) VALUES ", width: 17,
            split.map { row -> [(any StatementValue)?] in
                let k = row.key
                return [
                    k.environment, k.chart.rawValue, k.split.rawValue, k.measure, k.kind.rawValue, Int64(k.settled ? 1 : 0),
                    k.bundleID, k.store, k.note, k.group, k.atDay, k.untilDay, k.validFromDay, k.validUntilDay, k.cohortDay,
                    row.value, row.items,
                ]
            },
            tail: """
                 ON CONFLICT (\(Self.splitKey)) DO UPDATE
                SET value = rollup_splits.value + excluded.value, items = rollup_splits.items + excluded.items
                """)
        let delete = try db.cached(
            """
            DELETE FROM rollup_days WHERE environment = ? AND chart = ? AND measure = ? AND kind = ? AND settled = ? AND bundle_id = ?
            AND store = ? AND note = ? AND at_day = ? AND until_day = ? AND valid_from_day = ? AND valid_until_day = ?
            AND cohort_day = ? AND items = 0
            """)
        for row in unsplit where row.items < 0 {
            let k = row.key
            try delete.bind([
                k.environment, k.chart.rawValue, k.measure, k.kind.rawValue, Int64(k.settled ? 1 : 0), k.bundleID, k.store,
                k.note, k.atDay, k.untilDay, k.validFromDay, k.validUntilDay, k.cohortDay,
            ]).run()
        }
        let deleteSplit = try db.cached(
            """
            DELETE FROM rollup_splits WHERE environment = ? AND chart = ? AND split = ? AND measure = ? AND kind = ?
            AND settled = ? AND bundle_id = ? AND store = ? AND note = ? AND split_value = ? AND at_day = ? AND until_day = ?
            AND valid_from_day = ? AND valid_until_day = ? AND cohort_day = ? AND items = 0
            """)
        for row in split where row.items < 0 {
            let k = row.key
            try deleteSplit.bind([
                k.environment, k.chart.rawValue, k.split.rawValue, k.measure, k.kind.rawValue, Int64(k.settled ? 1 : 0),
                k.bundleID, k.store, k.note, k.group, k.atDay, k.untilDay, k.validFromDay, k.validUntilDay, k.cohortDay,
            ]).run()
        }
    }

    /// The sums of one environment's chart (of those measures alone, when given: what a query
    /// needs, ``Rollup/keptMeasures(for:measure:)``), starting on `throughDay` or before
    /// (``Rollup/lastDay(of:)``), of no cohort or a cohort from `cohortsFrom` on
    /// (``Rollup/firstCohortDay(of:)``); those split by `split` when one is named, and of its
    /// `group` alone when one is named too (a drill-down's figure of one country, product).
    package func rows(
        environment: String, chart: Chart, measures: [String]? = nil, throughDay: Int64 = .max,
        cohortsFrom: Int64 = RollupRow.noCohort, split: RollupSplit = .none, group: String? = nil
    ) throws -> [RollupRow] {
        let measureClause = measures.map { " AND measure IN (\(Array(repeating: "?", count: $0.count).joined(separator: ", ")))" }
        let group = split == .none ? nil : group
        let (table, splitClause, splitValue) =
            split == .none
            ? ("rollup_days", "", "''")
            : ("rollup_splits", " AND split = ?" + (group == nil ? "" : " AND split_value = ?"), "split_value")
        var values: [(any StatementValue)?] = [environment, chart.rawValue]
        if split != .none { values.append(split.rawValue) }
        if let group { values.append(group) }
        values.append(throughDay)
        let cohortClause = cohortsFrom > RollupRow.noCohort ? " AND (cohort_day >= ? OR cohort_day = ?)" : ""
        if cohortsFrom > RollupRow.noCohort { values += [cohortsFrom, RollupRow.noCohort] }
        values += (measures ?? []).map { $0 }
        let q = try db.cached(
            """
            SELECT measure, kind, bundle_id, store, note, at_day, until_day, valid_from_day, valid_until_day, cohort_day, value,
            items, settled, \(splitValue) FROM \(table) WHERE environment = ? AND chart = ?\(splitClause) AND at_day <= ?\(cohortClause)
            """ + (measureClause ?? "")
        ).bind(values)
        var rows: [RollupRow] = []
        while try q.step() {
            guard let kind = ChartItem.Kind(rawValue: q.text(1)!) else { continue }
            rows.append(
                RollupRow(
                    key: .init(
                        environment: environment, chart: chart, measure: q.text(0)!, kind: kind, settled: q.int(12) == 1,
                        bundleID: q.text(2)!, store: q.text(3)!, note: q.text(4)!, atDay: q.int(5), untilDay: q.int(6),
                        validFromDay: q.int(7), validUntilDay: q.int(8), cohortDay: q.int(9), split: split,
                        group: q.text(13) ?? ""),
                    value: q.int(10), items: q.int(11)))
        }
        return rows
    }

    // MARK: Moments

    /// A row of `rollup_moments`: one holder's items of one environment's chart with an instant
    /// on `day`, encoded (``RollupMoment/encode(_:)``).
    package struct MomentRow: Sendable, Equatable {
        package var day: Int64
        package var environment: String
        package var chart: Chart
        package var appUserID: String
        package var items: String

        /// The order a chart reads them in: by day, environment, chart, then holder (the text
        /// fields by their bytes, as the table's key orders them).
        package static func inReadingOrder(_ a: MomentRow, _ b: MomentRow) -> Bool {
            if a.day != b.day { return a.day < b.day }
            if !a.environment.isExactly(b.environment) { return Identifier(a.environment) < Identifier(b.environment) }
            if a.chart != b.chart { return a.chart.rawValue < b.chart.rawValue }
            return Identifier(a.appUserID) < Identifier(b.appUserID)
        }
    }

    /// Holders' moments as the rows that keep them, in the order a chart reads them (a day's
    /// chart, holder after holder): PostgreSQL keeps rows where they are inserted, and a chart of
    /// a rebuild's rows written holder by holder read a page of the table per row. Pure, so that
    /// it runs before the write transaction, not in it.
    package static func momentRows(_ byHolder: [(appUserID: String, moments: [RollupMoment])]) -> [MomentRow] {
        // Holders ranked by their bytes once, and charts by their names: the rows then sort by
        // numbers, their texts compared only where their environments differ.
        var rank = [Int](repeating: 0, count: byHolder.count)
        for (r, h) in byHolder.indices.sorted(by: { Identifier(byHolder[$0].appUserID) < Identifier(byHolder[$1].appUserID) })
            .enumerated()
        {
            rank[h] = r
        }
        let order = Self.chartOrder
        var placed: [(day: Int64, environment: String, chart: Int, holder: Int, items: [ChartItem])] = []
        for (h, (_, moments)) in byHolder.enumerated() {
            let first = placed.count
            for moment in moments {
                let chart = order[moment.chart]!
                for day in moment.days {
                    if let p = placed[first...].firstIndex(where: {
                        $0.day == day && $0.chart == chart && $0.environment.isExactly(moment.environment)
                    }) {
                        placed[p].items.append(moment.item)
                    } else {
                        placed.append((day, moment.environment, chart, h, [moment.item]))
                    }
                }
            }
        }
        placed.sort { a, b in
            if a.day != b.day { return a.day < b.day }
            if !a.environment.isExactly(b.environment) { return Identifier(a.environment) < Identifier(b.environment) }
            if a.chart != b.chart { return a.chart < b.chart }
            return rank[a.holder] < rank[b.holder]
        }
        return placed.map { p in
            MomentRow(
                day: p.day, environment: p.environment, chart: Self.chartsByName[p.chart],
                appUserID: byHolder[p.holder].appUserID,
                items: RollupMoment.encode(p.items))
        }
    }

    /// The charts in the order of their names (``MomentRow/inReadingOrder(_:_:)``'s), and each one's place in it.
    private static let chartsByName = Chart.allCases.sorted { $0.rawValue < $1.rawValue }
    private static let chartOrder = Dictionary(uniqueKeysWithValues: chartsByName.enumerated().map { ($1, $0) })

    /// Replaces the moments of `holders` with `rows` (``momentRows(_:)``); `fresh`: they have
    /// none yet, as in a rebuild.
    package func replaceMoments(of holders: [String], with rows: [MomentRow], fresh: Bool) throws {
        if !fresh {
            try many("DELETE FROM rollup_moments WHERE app_user_id IN ", width: 1, holders.map { [$0] }, listed: true)
        }
        try many(
            "INSERT INTO rollup_moments (day, environment, chart, app_user_id, items) VALUES ", width: 5,
            rows.map { [$0.day, $0.environment, $0.chart.rawValue, $0.appUserID, $0.items] })
    }

    /// The items of the moments of one environment's chart on `day` (of one measure, when given).
    package func moments(environment: String, chart: Chart, day: Int64, measure: String? = nil) throws -> [ChartItem] {
        let q = try db.cached("SELECT app_user_id, items FROM rollup_moments WHERE day = ? AND environment = ? AND chart = ?")
            .bind([day, environment, chart.rawValue])
        var items: [ChartItem] = []
        while try q.step() {
            guard RollupMoment.decode(q.text(1)!, appUserID: q.text(0)!, measure: measure, into: &items) else {
                throw db.failure("a holder's rollup moments do not read back")
            }
        }
        return items
    }

    /// Forgets the moments of days before `day`: no query asks about them any more.
    package func pruneMoments(before day: Int64) throws {
        try db.cached("DELETE FROM rollup_moments WHERE day < ?").bind([day]).run()
    }

    // MARK: Marks

    /// Marks holders (a mark already there stays).
    package func addMarks(_ marks: [(appUserID: String, mark: RollupMark)]) throws {
        try many(
            "INSERT INTO rollup_marks (environment, family, day, app_user_id) VALUES ", width: 4,
            marks.map { [$0.mark.environment, $0.mark.family.rawValue, $0.mark.day, $0.appUserID] },
            tail: " ON CONFLICT (environment, family, day, app_user_id) DO NOTHING")
    }

    /// Removes marks; returns how many there were.
    @discardableResult
    package func removeMarks(_ marks: [(appUserID: String, mark: RollupMark)]) throws -> Int {
        let delete = try db.cached(
            "DELETE FROM rollup_marks WHERE environment = ? AND family = ? AND day = ? AND app_user_id = ?")
        var removed = 0
        for (user, mark) in marks {
            try delete.bind([mark.environment, mark.family.rawValue, mark.day, user]).run()
            removed += db.changes
        }
        return removed
    }

    /// Up to `limit` marks of a family on `days`, in order of day and holder, after `after`
    /// (`(days.lowerBound, "")` for the first).
    package func marks(
        environment: String, family: RollupMark.Family, days: ClosedRange<Int64>, after: (day: Int64, appUserID: String),
        limit: Int
    ) throws -> [(day: Int64, appUserID: String)] {
        let q = try db.cached(
            """
            SELECT day, app_user_id FROM rollup_marks WHERE environment = ? AND family = ? AND day >= ? AND day <= ?
            AND (day, app_user_id) > (?, ?) ORDER BY day, app_user_id LIMIT ?
            """
        ).bind([
            environment, family.rawValue, days.lowerBound, days.upperBound, after.day, after.appUserID, Int64(limit),
        ])
        var marks: [(day: Int64, appUserID: String)] = []
        while try q.step() { marks.append((q.int(0), q.text(1)!)) }
        return marks
    }
}
