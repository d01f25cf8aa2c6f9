import CoreMetrics
import Dispatch
import Foundation
import Synchronization

/// The streaming replicas reads may go to (`database.replicaUrls`), with the probes that tell a
/// ``ReplicaRouter`` where the primary and each replica stand.
///
/// Each replica has a line of reads and `readers` connections, each on a thread of its own (as the
/// queue's pools), opened again before a read when the replica went away and came back. A probe
/// thread per replica reads its replay position every ``probeInterval``; one more thread reads the
/// primary's WAL insert position as often, which gives the subscribers heard to change their
/// position (see ``ReplicaRouter``). A replica that is down, not a standby, or lagging serves no
/// read until a probe finds it well again; a read it fails runs on the primary.
final class ReplicaSet: Sendable {
    private let routing: Mutex<ReplicaRouter>
    private let lines: [ReadLine]
    private let turn = Atomic<Int>(0)
    private let stopped = Atomic<Bool>(false)
    /// `database_replica_reads{to=replica|primary}`: where the reads that a replica may serve went.
    private let toReplica: Counter
    private let toPrimary: Counter

    /// How often the primary's and each replica's positions are read.
    static let probeInterval: Duration = .milliseconds(50)
    /// How long a probe waits before it connects again to a server it lost.
    static let reconnectInterval: Duration = .seconds(1)

    private let primary: String
    private let replicas: [String]
    private let readers: Int
    private let metrics: any MetricsFactory

    /// A set that reads nothing and probes nothing until ``start()``.
    init(primary: String, replicas: [String], readers: Int, maxLag: Duration, metrics: any MetricsFactory) {
        routing = Mutex(ReplicaRouter(replicas: replicas.count, maxLag: Self.nanoseconds(maxLag)))
        lines = replicas.map { _ in ReadLine() }
        toReplica = Counter(label: "database_replica_reads", dimensions: [("to", "replica")], factory: metrics)
        toPrimary = Counter(label: "database_replica_reads", dimensions: [("to", "primary")], factory: metrics)
        (self.primary, self.replicas, self.readers, self.metrics) = (primary, replicas, readers, metrics)
    }

    /// Starts the probes and the replicas' threads (once the queue has opened its own
    /// connections: a queue that failed to open starts none); a replica down now is skipped
    /// until it is up.
    func start() {
        for (index, url) in replicas.enumerated() {
            for _ in 0..<max(1, readers) { lines[index].startReader(url: url, metrics: metrics) }
            Thread { [self] in probeReplica(index, url: url) }.start()
        }
        Thread { [self, primary] in probePrimary(url: primary) }.start()
    }

    func stop() {
        stopped.store(true, ordering: .relaxed)
        for line in lines { line.stop() }
    }

    // MARK: What the change feed hears

    func heard(_ subscribers: [String]) { routing.withLock { $0.heard(subscribers) } }
    func lostTrack() { routing.withLock { $0.lostTrack() } }

    // MARK: Reads

    /// Runs `body` in a read transaction on a replica that has replayed every change heard of
    /// `subscribers`, if one is usable and the snapshot sees the changes of those its result
    /// depends on (`dependents`); nil when the primary must serve it (no replica fit, the replica
    /// failed, or the result depends on a change the replica had not replayed).
    /// - Parameter mark: the change feed's mark, taken before this call.
    func read<T: Sendable>(
        seeing subscribers: [String], mark: Int64, dependents: @escaping @Sendable (T) -> [String],
        _ body: @escaping @Sendable (Database) throws -> T
    ) async -> T? {
        let now = Self.now()
        let start = turn.add(1, ordering: .relaxed).newValue
        guard let (index, replayed) = routing.withLock({ $0.route(seeing: subscribers, now: now, start: start) }) else {
            toPrimary.increment()
            return nil
        }
        // The read's outcome, and whether the replica went away (a read that failed on a good
        // connection, say cancelled by a conflict with recovery, leaves the replica in use).
        let (result, lost): (Result<T, any Error>, Bool) = await withCheckedContinuation { continuation in
            lines[index].submit { database in
                guard let database else {
                    return continuation.resume(returning: (.failure(StorageError(.open, "replica down")), true))
                }
                let result = Result { try database.readTransaction(mark: mark) { try body(database) } }
                continuation.resume(returning: (result, !database.isConnected))
            }
        }
        guard case .success(let value) = result else {
            if lost { routing.withLock { $0.failed(index) } }
            toPrimary.increment()
            return nil
        }
        guard routing.withLock({ $0.sees(dependents(value), replayed: replayed) }) else {
            toPrimary.increment()
            return nil
        }
        toReplica.increment()
        return value
    }

    // MARK: Probes

    /// Reads the primary's WAL insert position every ``probeInterval`` for the subscribers pending
    /// before it, and forgets those every usable replica replayed.
    private func probePrimary(url: String) {
        probing(url) { database in
            guard let database else { return true }
            routing.withLock { $0.claimPending() }
            guard let text = try? Self.scalar("SELECT pg_current_wal_insert_lsn()::text", on: database),
                let lsn = ReplicaRouter.lsn(text)
            else {
                routing.withLock { $0.unclaim() }
                return database.isConnected
            }
            let now = Self.now()
            routing.withLock { router in
                router.primary(at: lsn, now: now)
                router.prune(now: now)
            }
            return true
        }
    }

    /// Reads replica `index`'s replay position every ``probeInterval``: none (down, or not a
    /// standby: `pg_last_wal_replay_lsn()` is null on a primary) keeps it from serving reads.
    private func probeReplica(_ index: Int, url: String) {
        probing(url) { database in
            var (replayed, kept): (ReplicaRouter.LSN?, Bool) = (nil, true)
            if let database {
                if let text = try? Self.scalar("SELECT pg_last_wal_replay_lsn()::text", on: database) {
                    replayed = ReplicaRouter.lsn(text)
                } else {
                    kept = database.isConnected
                }
            }
            let now = Self.now()
            routing.withLock { $0.replica(index, replayed: replayed, now: now) }
            return kept
        }
    }

    /// Calls `probe` every ``probeInterval`` until the set stops, on the calling thread, with a
    /// connection to `url`: nil while none could be opened (tried again every
    /// ``reconnectInterval``), dropped when `probe` returns false (lost).
    private func probing(_ url: String, _ probe: (Database?) -> Bool) {
        var connection: Database?
        var lastAttempt: UInt64 = 0
        while !stopped.load(ordering: .relaxed) {
            Thread.sleep(forTimeInterval: Self.seconds(Self.probeInterval))
            if connection == nil, Self.now() - lastAttempt >= Self.nanoseconds(Self.reconnectInterval) {
                lastAttempt = Self.now()
                connection = try? Database(postgresURL: url)
            }
            if !probe(connection) { connection = nil }
        }
    }

    /// The one text value `sql` answers (nil for NULL).
    private static func scalar(_ sql: String, on database: Database) throws -> String? {
        let statement = try database.cached(sql)
        defer { statement.reset() }
        guard try statement.step() else { return nil }
        return statement.text(0)
    }

    private static func now() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

    private static func nanoseconds(_ duration: Duration) -> UInt64 {
        let (seconds, attoseconds) = duration.components
        return UInt64(max(0, seconds)) * 1_000_000_000 + UInt64(max(0, attoseconds) / 1_000_000_000)
    }

    private static func seconds(_ duration: Duration) -> TimeInterval { Double(nanoseconds(duration)) / 1e9 }

    /// One replica's reads waiting for a connection, first in first out, and the threads that run
    /// them, each with a connection of its own to the replica, opened again when it was lost (a
    /// read finds none when the replica is still down).
    private final class ReadLine: Sendable {
        typealias Job = @Sendable (Database?) -> Void
        private let jobs = Mutex<(waiting: [Job], stopped: Bool)>(([], false))
        private let wake = DispatchSemaphore(value: 0)

        func submit(_ job: @escaping Job) {
            jobs.withLock { $0.waiting.append(job) }
            wake.signal()
        }

        func stop() {
            jobs.withLock { $0.stopped = true }
            wake.signal()
        }

        func startReader(url: String, metrics: any MetricsFactory) {
            Thread { [self] in
                var connection: Database?
                while true {
                    wake.wait()
                    let (job, stopped) = jobs.withLock { state -> (Job?, Bool) in
                        (state.waiting.isEmpty ? nil : state.waiting.removeFirst(), state.stopped)
                    }
                    guard let job else {
                        if stopped {
                            wake.signal()  // the next reader hears it too
                            return
                        }
                        continue
                    }
                    if connection.map({ !$0.isConnected }) ?? true {
                        connection = try? Database(postgresURL: url)
                        connection?.metrics = metrics
                    }
                    job(connection)
                    connection?.resetCachedStatements()
                }
            }.start()
        }
    }
}
