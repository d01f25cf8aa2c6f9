import CLinux
import CoreMetrics
import Dispatch
import Glibc
import Synchronization

// The workers behind a DatabaseQueue: the lines jobs wait in, the group commit of saves, and
// each connection's thread.
extension DatabaseQueue {
    /// One save of a group commit: `run` inside the group's transaction (the group puts it in a
    /// savepoint of its own when it has company), returning the save's own error, if any; `finish`
    /// after the commit with the group's error, if any.
    struct Save {
        var durable: Bool
        /// `alone`: the only save of its transaction, which then needs no savepoint.
        var run: @Sendable (_ database: Database, _ alone: Bool) -> (any Error)?
        var finish: @Sendable ((any Error)?) -> Void
    }

    /// How long a save of a PostgreSQL group waits for a lock (`lock_timeout`) before it is rolled
    /// back to its savepoint and run again alone after its group's commit. Two groups that each
    /// hold a lock the other wants would otherwise wait for the server's deadlock check, a second
    /// later (`deadlock_timeout`, which only a superuser may lower); a group commits in a few
    /// milliseconds, so a longer wait is most likely such a cycle.
    static let groupLockTimeout = "100ms"

    /// Whether `error` is PostgreSQL's SQLSTATE 55P03 (lock not available: `lock_timeout` passed).
    static func isLockTimeout(_ error: any Error) -> Bool { (error as? StorageError)?.sqlState == "55P03" }

    /// Whether `error` is PostgreSQL's SQLSTATE 40P01 (deadlock detected) or 40001 (serialization
    /// failure): the server gave up on the statement so that another transaction could go on.
    static func isConflict(_ error: any Error) -> Bool {
        guard let error = error as? StorageError else { return false }
        return error.sqlState == "40P01" || error.sqlState == "40001"
    }

    /// A save's result, set by `run` on the database's thread and read by `finish` after it there.
    final class SaveOutcome<T>: @unchecked Sendable {
        var result: Result<T, any Error>?
    }

    /// A job for a worker, and the line it waits in.
    enum Job {
        /// Has the worker's connection to itself.
        case exclusive(@Sendable (Worker) -> Void)
        /// Runs inside a group's transaction, then hears how its commit went.
        case save(Save)
    }

    /// Jobs waiting for a worker, first in first out. One worker takes from SQLite's writer line;
    /// several share the readers' line, or a PostgreSQL pool's, each taking the next job when it
    /// comes free.
    final class JobLine: Sendable {
        private let state = Mutex<(jobs: [Job], head: Int, stopped: Bool)>(([], 0, false))
        /// Signalled once per job submitted (and on stop): a worker waiting takes it.
        let wake = DispatchSemaphore(value: 0)
        /// Jobs submitted and not finished.
        let pending = Atomic<Int>(0)
        /// Whether saves waiting together are handed out together, for one group commit.
        private let groupsSaves: Bool
        /// How many workers take from the line: each takes its share of the saves waiting, so a
        /// PostgreSQL pool's connections commit groups side by side rather than one all of them.
        private let workers: Int

        init(groupsSaves: Bool, workers: Int = 1) {
            self.groupsSaves = groupsSaves
            self.workers = max(1, workers)
        }

        func submit(_ job: Job) {
            pending.add(1, ordering: .relaxed)
            state.withLock { $0.jobs.append(job) }
            wake.signal()
        }

        /// The next job, or (`groupsSaves`) the saves waiting at the head of the line, in order:
        /// all of them with one worker, a worker's share with several (``DatabaseQueue/maxGroup``
        /// at most).
        func next() -> ArraySlice<Job> {
            state.withLock { s -> ArraySlice<Job> in
                guard s.head < s.jobs.count else { return [] }
                var end = s.head + 1
                if groupsSaves, case .save = s.jobs[s.head] {
                    let share = workers == 1 ? DatabaseQueue.maxGroup : (s.jobs.count - s.head + workers - 1) / workers
                    let most = min(DatabaseQueue.maxGroup, max(1, share))
                    while end < s.jobs.count, end - s.head < most, case .save = s.jobs[end] { end += 1 }
                }
                let taken = s.jobs[s.head..<end]
                s.head = end
                if s.head == s.jobs.count { (s.jobs, s.head) = ([], 0) }
                return taken
            }
        }

        func finished(_ count: Int) { pending.subtract(count, ordering: .relaxed) }

        /// Lets every worker of the line end once the jobs already in it are done.
        func stop() {
            state.withLock { $0.stopped = true }
            wake.signal()
        }

        /// Whether the line is stopped and empty; a worker that sees it passes the news on.
        var isDone: Bool {
            let done = state.withLock { $0.stopped && $0.head == $0.jobs.count }
            if done { wake.signal() }
            return done
        }
    }

    /// A connection and the thread that uses it, taking jobs from its line. The thread holds the
    /// worker, not the queue, so the queue's deinit can stop it (through the line).
    final class Worker: @unchecked Sendable {  // `database` is touched only on the thread
        let database: Database
        private let line: JobLine
        /// See ``DatabaseQueue/followChanges(_:)``: the observer and the last change it heard of.
        private var observer: (@Sendable ([ChangeLog.Change]) -> Void)?
        private var followed: Int64 = 0
        private var ownChanges: Int64 = 0
        private var dataVersion: Int64 = 0
        /// The writer's worker watches for other connections' commits; readers need not.
        private let pollsOtherWriters: Bool
        /// `database_group_commit_saves`: how many saves each group commit held.
        private let groupSize: Recorder

        /// The thread's nice value: above 0 for background work.
        private let nice: Int32

        init(_ database: Database, line: JobLine, pollsOtherWriters: Bool, nice: Int32 = 0) {
            self.nice = nice
            self.database = database
            database.endsReadsLater = true  // sent when the line is empty (``loop()``)
            self.line = line
            self.pollsOtherWriters = pollsOtherWriters
            groupSize = Recorder(label: "database_group_commit_saves", factory: database.metrics)
            dataVersion = (try? database.dataVersion()) ?? 0
        }

        /// On the database's thread (or with it waiting): starts following the change log.
        func follow(from sequence: Int64, _ observer: @escaping @Sendable ([ChangeLog.Change]) -> Void) {
            followed = sequence
            self.observer = observer
        }

        /// On the database's thread, after a job: when this connection wrote, tells the observer.
        func publishChanges() {
            if let feed = database.changeFeed {
                feed.publish(database.takeNotedChanges(), at: Int64(time(nil)))
                return
            }
            let total = database.totalChanges
            guard total != ownChanges else { return }
            ownChanges = total
            deliverChanges()
        }

        /// On the database's thread, when idle: when another connection committed, tells the observer.
        private func pollOtherWriters() {
            guard let version = try? database.dataVersion(), version != dataVersion else { return }
            dataVersion = version
            deliverChanges()
        }

        /// The change log past what the observer heard of, a page at a time. A database without
        /// the table yet (before its migrations) has nothing to tell.
        private func deliverChanges() {
            guard let observer else { return }
            while let page = try? ChangeLog(database).since(followed, limit: 1_000), let last = page.last {
                followed = last.sequence
                observer(page)
                if page.count < 1_000 { break }
            }
        }

        /// One transaction, one commit for `saves`; each hears the outcome after the commit (or
        /// the error that kept the transaction from starting).
        private func commitGroup(_ jobs: ArraySlice<Job>) {
            var saves: [Save] = []
            saves.reserveCapacity(jobs.count)
            for case .save(let save) in jobs { saves.append(save) }
            if saves.count == 1 {
                // Alone, it needs no savepoint (on PostgreSQL a subtransaction, and two
                // statements): when it fails, its transaction rolls back, which undoes it alone.
                groupSize.record(1)
                saves[0].finish(runAlone(saves[0]))
                return
            }
            var commitError: (any Error)?
            // PostgreSQL: saves that waited too long for a lock another connection's group holds
            // until its commit (``groupLockTimeout``), or lost a deadlock with it.
            var lost: [Int] = []
            do {
                try database.transaction(durable: saves.contains { $0.durable }) {
                    try database.setLocal("lock_timeout", DatabaseQueue.groupLockTimeout)
                    for (i, save) in saves.enumerated() {
                        database.commitFollowsLastSave = i == saves.count - 1
                        if let error = save.run(database, false),
                            DatabaseQueue.isConflict(error) || DatabaseQueue.isLockTimeout(error)
                        {
                            lost.append(i)
                        }
                        database.resetCachedStatements()  // the next save starts as if alone: no read left part-way
                    }
                }
            } catch {
                commitError = error
            }
            groupSize.record(saves.count)
            publishChanges()
            var errors = [(any Error)?](repeating: commitError, count: saves.count)
            if commitError == nil {
                // Each runs again alone, once this group's locks are gone, as a save alone would have.
                for i in lost { errors[i] = runAlone(saves[i]) }
            } else if (commitError as? StorageError)?.sqlState != nil {
                // The server refused the commit, so nothing of the group is stored. On PostgreSQL
                // the last save's writes went with the commit, and the failure may be that save's
                // alone (a lock it waited for, a deadlock): each runs again alone and hears its own.
                for (i, save) in saves.enumerated() { errors[i] = runAlone(save) }
            }
            for (save, error) in zip(saves, errors) { save.finish(error) }
        }

        /// Runs `save` in a transaction of its own (again when the server picks it as a conflict's
        /// loser); the error of its commit, if any.
        private func runAlone(_ save: Save) -> (any Error)? {
            defer { publishChanges() }
            do {
                try DatabaseQueue.retryingConflicts {
                    try database.transaction(durable: save.durable) {
                        database.commitFollowsLastSave = true  // its writes go with the commit, whose failure is its own
                        if let error = save.run(database, true) { throw error }
                    }
                }
                return nil
            } catch {
                return error
            }
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

        private func loop() {
            if nice != 0 { _ = receiptd_set_thread_nice(nice) }
            let (seconds, attoseconds) = DatabaseQueue.externalPoll.components
            let pollNs = UInt64(seconds) * 1_000_000_000 + UInt64(attoseconds / 1_000_000_000)
            var lastPoll = DispatchTime.now().uptimeNanoseconds
            func pollIfDue() {
                guard pollsOtherWriters, DispatchTime.now().uptimeNanoseconds - lastPoll >= pollNs else { return }
                pollOtherWriters()
                lastPoll = DispatchTime.now().uptimeNanoseconds
            }
            while true {
                // A wake-up may find its job already taken (with an earlier one's group, or by
                // another worker of the line): the line, not the semaphore, says what is left.
                _ = line.wake.wait(timeout: .now() + .nanoseconds(Int(pollNs)))
                pollIfDue()
                while true {
                    let jobs = line.next()
                    if jobs.isEmpty { break }
                    if case .exclusive(let job) = jobs.first!, jobs.count == 1 {
                        job(self)
                    } else {
                        commitGroup(jobs)
                    }
                    database.resetCachedStatements()
                    line.finished(jobs.count)
                    pollIfDue()  // also between jobs, so a queue that is never idle still sees other writers
                }
                // A read's end, held back for the next job (PostgreSQL), goes now: no snapshot
                // stays open while the line is empty.
                try? database.sendHeld()
                if line.isDone { return }
            }
        }
    }
}
