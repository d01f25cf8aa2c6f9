import Testing

@testable import DatabaseEngine
@testable import Storage

extension ReplicaRouter {
    /// Claims the pending and gives them the primary's position `lsn`, read at `now`.
    fileprivate mutating func sample(_ lsn: LSN, now: UInt64) {
        claimPending()
        primary(at: lsn, now: now)
    }
}

/// The routing of reads to replicas, decided from positions and times given by the test.
@Suite("Replica router")
struct ReplicaRouterTests {
    private let ms: UInt64 = 1_000_000
    private let lag: UInt64 = 1_000 * 1_000_000

    /// A router whose first primary position (100) was read at 1 s and whose replicas had replayed it.
    private func started(replicas: Int = 2) -> ReplicaRouter {
        var router = ReplicaRouter(replicas: replicas, maxLag: lag)
        router.sample(100, now: 1_000 * ms)
        for index in 0..<replicas { router.replica(index, replayed: 100, now: 1_000 * ms) }
        return router
    }

    @Test func positionsParseFromPostgresText() {
        #expect(ReplicaRouter.lsn("0/0") == 0)
        #expect(ReplicaRouter.lsn("16/B374D848") == 0x16_B374_D848)
        #expect(ReplicaRouter.lsn("FFFFFFFF/FFFFFFFF") == UInt64.max)
        for bad in ["", "16", "16/", "/1", "1/2/3", "G/1", "100000000/0", "-1/0", " 1/0"] {
            #expect(ReplicaRouter.lsn(bad) == nil, "\(bad)")
        }
    }

    /// An insert position just past a page's header stands for the page's start, where the last
    /// record ended and a standby's replay stops.
    @Test func anInsertPositionPastAPageHeaderIsThePagesStart() {
        #expect(ReplicaRouter.recordEnd(0x300_0028) == 0x300_0000)  // a segment's first page: 40 bytes
        #expect(ReplicaRouter.recordEnd(0x300_2018) == 0x300_2000)  // another page: 24 bytes
        #expect(ReplicaRouter.recordEnd(0x300_2020) == 0x300_2020)
        #expect(ReplicaRouter.recordEnd(0x300_0000) == 0x300_0000)
        var router = ReplicaRouter(replicas: 1, maxLag: lag)
        router.sample(0x300_0028, now: 10 * ms)
        router.replica(0, replayed: 0x300_0000, now: 10 * ms)
        #expect(router.route(seeing: ["ann"], now: 10 * ms, start: 0)?.index == 0)
    }

    @Test func nothingGoesToAReplicaBeforeThePrimarysPositionIsKnown() {
        var router = ReplicaRouter(replicas: 1, maxLag: lag)
        router.replica(0, replayed: 100, now: 10 * ms)
        #expect(router.route(seeing: [], now: 10 * ms, start: 0) == nil)
        #expect(router.route(seeing: ["ann"], now: 10 * ms, start: 0) == nil)
        router.sample(100, now: 20 * ms)
        #expect(router.route(seeing: ["ann"], now: 20 * ms, start: 0)?.index == 0)
    }

    /// A change heard is pending (the primary serves it) until the primary's position is read after
    /// it; then a replica that replayed that position may serve it, one behind may not.
    @Test func aSubscriberChangedIsReadWhereTheChangeWasReplayed() {
        var router = started()
        router.heard(["ann"])
        #expect(router.route(seeing: ["ann"], now: 1_010 * ms, start: 0) == nil)
        #expect(router.route(seeing: ["bob"], now: 1_010 * ms, start: 0)?.index == 0)  // others are not held up
        #expect(router.route(seeing: [], now: 1_010 * ms, start: 1)?.index == 1)
        router.sample(200, now: 1_050 * ms)
        #expect(router.route(seeing: ["ann"], now: 1_050 * ms, start: 0) == nil)  // no replica has replayed 200
        router.replica(1, replayed: 200, now: 1_060 * ms)
        #expect(router.route(seeing: ["ann"], now: 1_060 * ms, start: 0)! == (1, 200))
        #expect(router.route(seeing: ["bob", "ann"], now: 1_060 * ms, start: 0)! == (1, 200))
        #expect(router.route(seeing: ["bob"], now: 1_060 * ms, start: 0)! == (0, 100))
    }

    /// A change heard while the primary's position is being read is not given that position: the
    /// position read may be older than its commit.
    @Test func aChangeHeardDuringAProbeWaitsForTheNext() {
        var router = started()
        router.claimPending()
        router.heard(["ann"])
        router.primary(at: 150, now: 1_050 * ms)
        router.replica(0, replayed: 150, now: 1_050 * ms)
        #expect(router.route(seeing: ["ann"], now: 1_050 * ms, start: 0) == nil)
        router.sample(160, now: 1_100 * ms)
        #expect(router.route(seeing: ["ann"], now: 1_100 * ms, start: 0) == nil)
        router.replica(0, replayed: 160, now: 1_100 * ms)
        #expect(router.route(seeing: ["ann"], now: 1_100 * ms, start: 0)?.index == 0)
    }

    /// While the primary's position is being read for them, the claimed are still pending: no
    /// replica serves them in that window (the scale of it: one probe's round trip).
    @Test func aSubscriberClaimedIsPendingUntilItsPositionIsRead() {
        var router = started()
        router.heard(["ann"])
        router.claimPending()
        #expect(router.pending.isEmpty && router.claimed == ["ann"])
        #expect(router.route(seeing: ["ann"], now: 1_010 * ms, start: 0) == nil)
        #expect(!router.sees(["ann"], replayed: 100))
        #expect(router.route(seeing: ["bob"], now: 1_010 * ms, start: 0)?.index == 0)
        router.lostTrack()
        router.claimPending()
        #expect(router.route(seeing: ["bob"], now: 1_010 * ms, start: 0) == nil)
        router.primary(at: 300, now: 1_020 * ms)
        #expect(router.claimed.isEmpty && router.changed["ann"] == 300 && router.floor == 300)
    }

    @Test func aFailedProbeGivesTheClaimBack() {
        var router = started()
        router.heard(["ann"])
        router.claimPending()
        router.unclaim()
        #expect(router.pending == ["ann"] && router.claimed.isEmpty)
        router.lostTrack()
        router.claimPending()
        router.unclaim()
        #expect(router.everyonePending && router.pending == ["ann"] && !router.everyoneClaimed)
    }

    /// A lag measured from when the primary was at the replay position; past the bound a replica
    /// serves nothing, a list included, and serves again once it caught up.
    @Test func aReplicaLaggingPastTheBoundServesNothing() {
        var router = started(replicas: 1)
        // The primary moves on every 100 ms; the replica stays at 100.
        for step in 1...20 {
            router.sample(100 + UInt64(step), now: (1_000 + 100 * UInt64(step)) * ms)
        }
        router.replica(0, replayed: 100, now: 3_000 * ms)
        #expect(router.lag(of: 100, now: 3_000 * ms) == 2_000 * ms)
        #expect(router.lag(of: 110, now: 3_000 * ms) == 1_000 * ms)
        #expect(!router.isUsable(0, now: 3_000 * ms))
        #expect(router.route(seeing: [], now: 3_000 * ms, start: 0) == nil)
        router.replica(0, replayed: 111, now: 3_000 * ms)
        #expect(router.isUsable(0, now: 3_000 * ms))  // 900 ms behind
        #expect(router.route(seeing: [], now: 3_000 * ms, start: 0)?.index == 0)
    }

    /// A replica whose probe stopped answering (down, or not a standby) serves nothing; one whose
    /// probes stopped coming at all ages out after the bound; one a read failed waits for a probe.
    @Test func aReplicaDownOrUnprobedServesNothing() {
        var router = started()
        router.replica(0, replayed: nil, now: 1_010 * ms)
        #expect(router.route(seeing: [], now: 1_010 * ms, start: 0)?.index == 1)
        router.failed(1)
        #expect(router.route(seeing: [], now: 1_010 * ms, start: 0) == nil)
        router.replica(0, replayed: 100, now: 1_020 * ms)
        #expect(router.route(seeing: [], now: 1_020 * ms, start: 1)?.index == 0)
        // No probe, no primary position for more than the bound.
        #expect(router.route(seeing: [], now: 2_030 * ms, start: 0) == nil)
    }

    /// Subscribers every usable replica replayed are forgotten: the floor rises to their newest
    /// position, which a replica coming back from behind must reach to serve anyone.
    @Test func pruningRaisesTheFloorAReturningReplicaMustReach() {
        var router = started()
        router.heard(["ann", "bob"])
        router.sample(200, now: 1_050 * ms)
        router.heard(["cat"])
        router.sample(300, now: 1_100 * ms)
        router.replica(0, replayed: 250, now: 1_100 * ms)
        router.replica(1, replayed: nil, now: 1_100 * ms)
        router.prune(now: 1_100 * ms)
        #expect(router.floor == 200 && router.changed == ["cat": 300])
        router.replica(1, replayed: 150, now: 1_110 * ms)
        #expect(router.route(seeing: ["dan"], now: 1_110 * ms, start: 1)?.index == 0)  // replica 1 is below the floor
        #expect(router.route(seeing: ["cat"], now: 1_110 * ms, start: 0) == nil)
    }

    /// A change to everyone (an erasure) and a lost track make everyone pending, and the position
    /// read next the floor.
    @Test func aChangeToEveryoneHoldsEveryReadUntilReplayed() {
        var router = started()
        router.heard([ChangeLog.everyone])
        #expect(router.route(seeing: [], now: 1_010 * ms, start: 0) == nil)
        #expect(router.route(seeing: ["zed"], now: 1_010 * ms, start: 0) == nil)
        router.sample(400, now: 1_050 * ms)
        #expect(router.floor == 400)
        #expect(router.route(seeing: [], now: 1_050 * ms, start: 0) == nil)
        router.replica(0, replayed: 400, now: 1_060 * ms)
        #expect(router.route(seeing: ["zed"], now: 1_060 * ms, start: 0)! == (0, 400))
    }

    /// What a read found it depended on (an alias's subscriber) is checked against the position
    /// the replica was chosen at.
    @Test func aReadSeesWhatItDependsOnOnlyWhenReplayed() {
        var router = started()
        router.heard(["canonical"])
        #expect(!router.sees(["canonical"], replayed: 100))
        router.sample(200, now: 1_050 * ms)
        #expect(!router.sees(["canonical"], replayed: 100))
        #expect(router.sees(["canonical"], replayed: 200))
        #expect(router.sees([], replayed: 100))
    }

    /// Old samples go, but the one a lagging replica is measured by stays.
    @Test func samplesKeepTwoLagsAndOneMore() {
        var router = started(replicas: 1)
        for step in 1...100 {
            router.sample(100 + UInt64(step), now: (1_000 + 50 * UInt64(step)) * ms)
        }
        // Now 6 s: samples from 4 s on stay, and the one just before.
        #expect(router.samples.count == 42)
        #expect(router.samples.first!.at < 4_000 * ms && router.samples[1].at >= 4_000 * ms)
    }
}
