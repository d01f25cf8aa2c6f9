import CoreMetrics
import Dispatch
import Glibc
import Synchronization

/// Serializes access to one ``Database`` on a thread of its own, so blocking SQLite calls (and the
/// fsync of a durable commit) never run on Swift's cooperative pool. Not a Dispatch queue: on
/// Linux, Swift concurrency's executor runs on Dispatch's global threads, and a worker blocked in
/// SQLite there is one fewer for every request handler. The only way async code reaches the database.
///
/// Reads can go apart: ``read(_:)`` runs on one of a few read-only connections, each on a thread of
/// its own, which WAL lets read beside the writer, so a read never queues behind a write.
public final class DatabaseQueue: Sendable {
    private let worker: Worker
    private let readers: [Worker]

    /// Opens the database at `path` (see ``Database/init(path:busyTimeout:readOnly:)``) and starts
    /// its thread, then `readers` read-only connections with a thread each (none for `:memory:`,
    /// whose data no other connection sees: reads then run on the writer's thread).
    /// - Parameter metrics: where write transactions are timed (see ``Database/metrics``).
    public init(
        path: String, busyTimeout: Duration = .seconds(5), metrics: any MetricsFactory = NOOPMetricsHandler.instance,
        readers: Int = 2
    ) throws(StorageError) {
        let database = try Database(path: path, busyTimeout: busyTimeout)
        database.metrics = metrics
        worker = Worker(database, pollsOtherWriters: true)
        var opened: [Worker] = []
        if path != ":memory:" {
            for _ in 0..<max(0, readers) {
                opened.append(
                    Worker(try Database(path: path, busyTimeout: busyTimeout, readOnly: true), pollsOtherWriters: false))
            }
        }
        self.readers = opened
        worker.start()
        for reader in opened { reader.start() }
    }

    deinit {
        worker.stop()
        for reader in readers { reader.stop() }
    }

    /// How many read-only connections ``read(_:)`` spreads over (0: reads share the writer's thread).
    public var readerCount: Int { readers.count }

    /// Runs `body` in one read transaction (a consistent snapshot) on the least busy reader's
    /// thread; it may not write (its connection is read-only). It sees every commit made before it
    /// was called, this queue's included, and waits for no write in progress.
    public func read<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        let reader = readers.min { $0.pending.load(ordering: .relaxed) < $1.pending.load(ordering: .relaxed) } ?? worker
        return try await withCheckedThrowingContinuation { continuation in
            reader.submit { database in
                continuation.resume(with: Result { try database.readTransaction { try body(database) } })
            }
        }
    }

    /// The database file's path.
    public var path: String { worker.database.path }

    /// Grows whenever the database's content may have changed: after each job that wrote through
    /// this queue (published before the job's caller resumes), and within ``externalPoll`` of a
    /// commit by another connection or process. Equal generations mean the same content, so a
    /// cache of what was read at one generation is exact while it stays current.
    public var generation: UInt64 { worker.generation.load(ordering: .acquiring) }

    /// How often an idle queue looks for commits by other connections (`PRAGMA data_version`).
    public static let externalPoll: Duration = .milliseconds(100)

    /// Runs `body` with exclusive use of the connection, on the database's thread.
    public func run<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            worker.submit { [worker] database in
                let result = Result { try body(database) }
                worker.publishGeneration()
                continuation.resume(with: result)
            }
        }
    }

    /// Runs `body` on the calling thread while the database's thread waits for it, so the
    /// connection is still used by one thread at a time; for start-up and command-line tools.
    public func runBlocking<T>(_ body: (Database) throws -> T) rethrows -> T {
        let (paused, resume) = (DispatchSemaphore(value: 0), DispatchSemaphore(value: 0))
        worker.submit { _ in
            paused.signal()
            resume.wait()
        }
        paused.wait()
        defer {
            worker.publishGeneration()
            resume.signal()
        }
        return try body(worker.database)
    }

    /// The thread and its jobs, first in first out. The thread holds the worker, not the queue, so
    /// the queue's deinit can stop it.
    private final class Worker: @unchecked Sendable {  // `database` is touched only on the thread
        typealias Job = @Sendable (Database) -> Void
        let database: Database
        private let state = Mutex<(jobs: [Job], head: Int, stopped: Bool)>(([], 0, false))
        private let wake = DispatchSemaphore(value: 0)
        /// Jobs submitted and not finished: where ``DatabaseQueue/read(_:)`` sends the next read.
        let pending = Atomic<Int>(0)
        /// See ``DatabaseQueue/generation``: own writes plus other connections' commits seen.
        let generation = Atomic<UInt64>(0)
        private var ownChanges: Int64 = 0
        private var dataVersion: Int64 = 0
        /// The writer's worker watches for other connections' commits; readers need not.
        private let pollsOtherWriters: Bool

        init(_ database: Database, pollsOtherWriters: Bool) {
            self.database = database
            self.pollsOtherWriters = pollsOtherWriters
            dataVersion = (try? database.dataVersion()) ?? 0
        }

        /// On the database's thread, after a job: counts this connection's writes.
        func publishGeneration() {
            let total = database.totalChanges
            guard total != ownChanges else { return }
            ownChanges = total
            generation.add(1, ordering: .releasing)
        }

        /// On the database's thread, when idle: counts other connections' commits.
        private func pollOtherWriters() {
            guard let version = try? database.dataVersion(), version != dataVersion else { return }
            dataVersion = version
            generation.add(1, ordering: .releasing)
        }

        func start() {
            let box = Unmanaged.passRetained(self)
            var thread = pthread_t()
            let rc = pthread_create(
                &thread, nil,
                { arg in
                    Unmanaged<Worker>.fromOpaque(arg!).takeRetainedValue().loop()
                    return nil
                }, box.toOpaque())
            precondition(rc == 0, "pthread_create failed: \(rc)")
            pthread_detach(thread)
        }

        func submit(_ job: @escaping Job) {
            pending.add(1, ordering: .relaxed)
            state.withLock { $0.jobs.append(job) }
            wake.signal()
        }

        func stop() {
            state.withLock { $0.stopped = true }
            wake.signal()
        }

        private func loop() {
            let (seconds, attoseconds) = DatabaseQueue.externalPoll.components
            let pollNs = UInt64(seconds) * 1_000_000_000 + UInt64(attoseconds / 1_000_000_000)
            var lastPoll = DispatchTime.now().uptimeNanoseconds
            while true {
                let woken = wake.wait(timeout: .now() + .nanoseconds(Int(pollNs)))
                // Also between jobs, so a queue that is never idle still sees other writers.
                if pollsOtherWriters, DispatchTime.now().uptimeNanoseconds - lastPoll >= pollNs {
                    pollOtherWriters()
                    lastPoll = DispatchTime.now().uptimeNanoseconds
                }
                if woken == .timedOut { continue }
                let job = state.withLock { s -> Job? in
                    guard s.head < s.jobs.count else { return nil }
                    let job = s.jobs[s.head]
                    s.head += 1
                    if s.head == s.jobs.count { (s.jobs, s.head) = ([], 0) }
                    return job
                }
                if let job {
                    job(database)
                    database.resetCachedStatements()
                    pending.subtract(1, ordering: .relaxed)
                } else if state.withLock({ $0.stopped }) {
                    return
                }
            }
        }
    }
}
