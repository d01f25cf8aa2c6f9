/// Decides which streaming replica may serve a read, from what it knows of the primary's WAL
/// position, each replica's replay position, and the subscribers this process heard change. No
/// I/O and no clock: ``ReplicaSet`` feeds it what its probes read and the time, in nanoseconds.
///
/// Read-your-write by LSN. A subscriber heard to change (``heard(_:)``: this process's own commit,
/// or another process's through `LISTEN`, both after the commit) is *pending* until the primary's
/// WAL insert position is next read (``claimPending()``, then ``primary(at:now:)``): that
/// position, read after the commit, is at or past its commit record, and becomes the subscriber's.
/// While it is being read the claimed subscribers are still pending.
/// A read that must see a subscriber's changes goes to a replica whose replay position is at or
/// past the subscriber's, never while the subscriber is pending. Subscribers whose position every
/// usable replica has replayed are forgotten (``prune(now:)``), raising ``floor``, the position
/// every replica must have replayed to serve any subscriber's read; a lost track of changes (the
/// listener's connection was lost) or a change to everyone makes every subscriber pending at once.
///
/// Lag. The primary's positions are kept with the time they were read (``samples``): a replica that
/// replayed up to a position the primary had at time `t` is at most `now - t` behind. A replica
/// behind by more than ``maxLag``, or not probed within ``maxLag``, serves no read: not even one
/// that need see no one's changes (a list, which it serves at most ``maxLag`` stale).
struct ReplicaRouter: Sendable {
    /// A WAL position (`pg_lsn`), as a number.
    typealias LSN = UInt64

    /// What a replica's last probe said.
    struct Replica: Sendable, Equatable {
        /// Its replay position (`pg_last_wal_replay_lsn()`), nil before a probe answered.
        var replayed: LSN?
        /// When a probe last answered with a replay position.
        var probedAt: UInt64?
    }

    let maxLag: UInt64
    private(set) var replicas: [Replica]
    /// Heard to change, their position not yet read.
    private(set) var pending: Set<String> = []
    /// Every subscriber is pending: at the start (changes made before this process heard any),
    /// after a lost track, after a change to everyone.
    private(set) var everyonePending = true
    /// Pending and claimed by a read of the primary's position under way: they get that position.
    private(set) var claimed: Set<String> = []
    private(set) var everyoneClaimed = false
    /// Subscribers' positions: each at or past their last change's commit.
    private(set) var changed: [String: LSN] = [:]
    /// At or past the commit of every change heard of a subscriber not in ``changed``.
    private(set) var floor: LSN = 0
    /// The primary's positions and when they were read, oldest first.
    private(set) var samples: [(at: UInt64, lsn: LSN)] = []

    /// The most subscribers ``changed`` holds: past it, the floor rises to the newest position and
    /// all are forgotten (their reads go to the primary until the replicas replay it).
    static let maxTracked = 100_000

    /// The change to everyone (``ChangeLog/everyone``).
    static let everyone = ChangeLog.everyone

    init(replicas: Int, maxLag: UInt64) {
        self.maxLag = maxLag
        self.replicas = Array(repeating: Replica(), count: replicas)
    }

    /// `subscribers` changed (committed): pending until the primary's position is next read.
    mutating func heard(_ subscribers: [String]) {
        for subscriber in subscribers {
            if subscriber == Self.everyone { everyonePending = true } else { pending.insert(subscriber) }
        }
    }

    /// Changes may have gone unheard: every subscriber is pending.
    mutating func lostTrack() { everyonePending = true }

    /// Claims the pending subscribers, just before the primary's position is read for them; a
    /// change heard from now on waits for the next read.
    mutating func claimPending() {
        claimed.formUnion(pending)
        everyoneClaimed = everyoneClaimed || everyonePending
        (pending, everyonePending) = ([], false)
    }

    /// The position could not be read: the claimed are pending again.
    mutating func unclaim() {
        pending.formUnion(claimed)
        everyonePending = everyonePending || everyoneClaimed
        (claimed, everyoneClaimed) = ([], false)
    }

    /// The primary's WAL insert position `insert`, read at `now` after the pending were claimed:
    /// theirs now.
    mutating func primary(at insert: LSN, now: UInt64) {
        let lsn = Self.recordEnd(insert)
        if everyoneClaimed {
            floor = max(floor, lsn)
            changed = [:]
        }
        for subscriber in claimed { changed[subscriber] = lsn }
        (claimed, everyoneClaimed) = ([], false)
        if changed.count > Self.maxTracked {
            floor = max(floor, lsn)
            changed = [:]
        }
        samples.append((now, lsn))
        // One sample older than two lags stays, the one a replica that far behind is measured by.
        let horizon = now > 2 * maxLag ? now - 2 * maxLag : 0
        let old = samples.prefix { $0.at < horizon }.count
        if old > 1 { samples.removeFirst(old - 1) }
    }

    /// Replica `index`'s probe at `now`: its replay position, or nil when it did not answer (down,
    /// or not a standby).
    mutating func replica(_ index: Int, replayed: LSN?, now: UInt64) {
        guard let replayed else {
            replicas[index] = Replica()
            return
        }
        replicas[index] = Replica(replayed: max(replayed, replicas[index].replayed ?? 0), probedAt: now)
    }

    /// A read on replica `index` failed: it serves none until its next probe answers.
    mutating func failed(_ index: Int) { replicas[index] = Replica() }

    /// How far behind the primary a replay position is at `now`: since the primary was last known
    /// to be at or before it. Nil when it is older than every sample (behind by more than those
    /// show) or when the primary was never read.
    func lag(of replayed: LSN, now: UInt64) -> UInt64? {
        guard let at = samples.last(where: { $0.lsn <= replayed })?.at else { return nil }
        return now > at ? now - at : 0
    }

    /// The position a replica must have replayed to serve a read that sees `subscribers`' changes;
    /// nil when one of them is pending (the primary alone can serve it).
    func needed(seeing subscribers: [String]) -> LSN? {
        if everyonePending || everyoneClaimed { return nil }
        var needed = floor
        for subscriber in subscribers {
            if pending.contains(subscriber) || claimed.contains(subscriber) { return nil }
            if let at = changed[subscriber] { needed = max(needed, at) }
        }
        return needed
    }

    /// Whether replica `index` is up and within ``maxLag`` at `now`.
    func isUsable(_ index: Int, now: UInt64) -> Bool {
        let replica = replicas[index]
        guard let replayed = replica.replayed, let probedAt = replica.probedAt, now - min(now, probedAt) <= maxLag,
            let lag = lag(of: replayed, now: now)
        else { return false }
        return lag <= maxLag
    }

    /// A replica that may serve a read seeing `subscribers`' changes at `now`, and the replay
    /// position it was chosen at, looking from `start` round (so reads take turns); nil: the primary.
    func route(seeing subscribers: [String], now: UInt64, start: Int) -> (index: Int, replayed: LSN)? {
        guard !replicas.isEmpty, let needed = needed(seeing: subscribers) else { return nil }
        for offset in 0..<replicas.count {
            let index = (start + offset) % replicas.count
            if let replayed = replicas[index].replayed, replayed >= needed, isUsable(index, now: now) {
                return (index, replayed)
            }
        }
        return nil
    }

    /// Whether a snapshot of a replica that had replayed up to `replayed` sees every change heard
    /// of `subscribers` (those a read found it depended on, such as an alias's subscriber).
    func sees(_ subscribers: [String], replayed: LSN) -> Bool {
        guard let needed = needed(seeing: subscribers) else { return false }
        return replayed >= needed
    }

    /// Forgets the subscribers every usable replica has replayed, raising ``floor`` to the newest
    /// of their positions: a replica behind that serves nobody until it catches up.
    mutating func prune(now: UInt64) {
        let usable = replicas.indices.filter { isUsable($0, now: now) }
        guard let replayed = usable.compactMap({ replicas[$0].replayed }).min() else { return }
        var raised = floor
        changed = changed.filter { _, at in
            guard at <= replayed else { return true }
            raised = max(raised, at)
            return false
        }
        floor = raised
    }

    /// The end of the last record written before the WAL insert position `insert`. An insert
    /// position at the start of a page is past the page's header (24 bytes, 40 on a segment's
    /// first page), where no record ends: the record before ended at the page's start, which is
    /// where a standby's replay position stops (an idle primary at `0/3000028` is replayed up to
    /// `0/3000000`).
    static func recordEnd(_ insert: LSN) -> LSN {
        let offset = insert % walPageSize
        return offset == 24 || offset == 40 ? insert - offset : insert
    }

    /// PostgreSQL's WAL page (`XLOG_BLCKSZ`), fixed when it is built: 8 kB in every build we know.
    static let walPageSize: LSN = 8192

    /// Parses PostgreSQL's text form of a `pg_lsn` (`16/B374D848`: two hexadecimal halves).
    static func lsn(_ text: String) -> LSN? {
        let halves = text.split(separator: "/", omittingEmptySubsequences: false)
        guard halves.count == 2, let high = UInt32(halves[0], radix: 16), let low = UInt32(halves[1], radix: 16) else {
            return nil
        }
        return LSN(high) << 32 | LSN(low)
    }
}
