import CLinux
package import CoreMetrics
import Dispatch
import Glibc
import Synchronization

/// Serializes access to one ``Database`` on a thread of its own, so blocking SQLite calls (and the
/// fsync of a durable commit) never run on Swift's cooperative pool. Not a Dispatch queue: on
/// Linux, Swift concurrency's executor runs on Dispatch's global threads, and a worker blocked in
/// SQLite there is one fewer for every request handler. The only way async code reaches the database.
///
/// Reads can go apart: ``read(_:)`` runs on one of a few read-only connections, each on a thread of
/// its own, which WAL lets read beside the writer, so a read never queues behind a write. Saves
/// go together: ``write(durable:_:)`` jobs waiting for the writer share one transaction and one
/// commit (a group commit), each in a savepoint of its own.
///
/// On PostgreSQL (``init(postgresURL:connections:readers:metrics:)``) the queue is two small pools
/// of the same shape: a few connections for saves and a few for reads, each on a thread of its
/// own, taking the next job of its pool's line when it comes free, so a read never waits behind
/// saves there either. Saves are group-committed there too, each connection taking its share of
/// the saves waiting: one transaction, one commit, one WAL flush for the group. A save the server
/// picks as the loser of a deadlock (another group holds a lock it needs until that group's
/// commit) is rolled back to its savepoint and run again alone after its group's commit, and a
/// transaction of its own is run again when it loses one; stores lock what they read before they
/// write (``Database/lock(_:)``). Changes are heard through a ``ChangeFeed``.
///
/// On SQLite a file of its own (an ``AttachedFile``: Storage's chart rollups) lives beside the
/// database's, attached to the readers under its name, with a writer of its own
/// (``write(durable:alone:attached:_:)``): what is written there (the rollup keeper's writes, tens
/// of milliseconds a second under load) never holds up saves, whose one writer is the service's
/// narrowest point.
package final class DatabaseQueue: Sendable {
    /// The writer on SQLite, the first writing connection on PostgreSQL.
    private let worker: Worker
    /// Where reads wait: the readers' line (the writer's when there are no readers).
    private let readLine: JobLine
    /// Where saves and `run` jobs wait: the writer's line, or the writing pool's on PostgreSQL.
    private let writeLine: JobLine
    /// Where the attached file's writes wait: its own writer's line on SQLite (the writer's for
    /// `:memory:`), the writing pool's on PostgreSQL.
    private let attachedLine: JobLine
    /// How many workers take from `readLine`.
    package let readerCount: Int
    /// Where background reads wait (``read(background:_:)``), and how to open the connection of
    /// the one worker that takes them, at a lower CPU priority, on the first such read.
    private let backgroundLine: JobLine
    private let backgroundReader: Mutex<(open: (@Sendable () throws(StorageError) -> Database)?, started: Bool)>
    /// PostgreSQL only: the changes this process hears of, and who hears other processes'.
    private let feed: ChangeFeed?
    private let listener: ChangeListener?
    /// PostgreSQL only: what the queue's connections (the listener's aside) asked of the server.
    package let postgresTraffic: PostgresTraffic?
    /// PostgreSQL only: the streaming replicas reads may go to (``read(replicaSeeing:_:dependents:)``).
    private let replicas: ReplicaSet?

    /// Opens the database at `path` (see ``Database/init(path:busyTimeout:readOnly:)``) and starts
    /// its thread, then `file` beside it (``AttachedFile/path(beside:)``, made or made again as it
    /// says) and its writer's thread, then `readers` read-only connections with a thread each,
    /// the file attached (none for `:memory:`, whose data no other connection sees: reads then
    /// run on the writer's thread, which has the file in memory too).
    /// - Parameter metrics: where write transactions are timed (see ``Database/metrics``).
    package init(
        path: String, busyTimeout: Duration = .seconds(5), metrics: any MetricsFactory = NOOPMetricsHandler.instance,
        readers: Int = 2, attaching file: AttachedFile
    ) throws(StorageError) {
        let database = try Database(path: path, busyTimeout: busyTimeout)
        database.metrics = metrics
        writeLine = JobLine(groupsSaves: true)
        worker = Worker(database, line: writeLine, pollsOtherWriters: true)
        var opened: [Worker] = []
        let attachedPath = path == ":memory:" ? path : file.path(beside: path)
        do {
            if path == ":memory:" {
                try database.attach(attachedPath, as: file.name)
                try file.prepare(database, file.name)
                attachedLine = writeLine
            } else {
                let writer = try Database(path: attachedPath, busyTimeout: busyTimeout)
                try file.prepare(writer, "main")
                writer.metrics = metrics
                attachedLine = JobLine(groupsSaves: false)
                opened.append(Worker(writer, line: attachedLine, pollsOtherWriters: false))
            }
        } catch {
            throw error as? StorageError ?? StorageError(.open, "cannot open the \(file.name)' file \(attachedPath): \(error)")
        }
        let readersLine = JobLine(groupsSaves: false)
        /// A read-only connection to the database with the file attached.
        let openReader = { @Sendable () throws(StorageError) -> Database in
            let reader = try Database(path: path, busyTimeout: busyTimeout, readOnly: true)
            try reader.attach(attachedPath, as: file.name)
            return reader
        }
        if path != ":memory:" {
            for _ in 0..<max(0, readers) {
                opened.append(Worker(try openReader(), line: readersLine, pollsOtherWriters: false))
            }
        }
        readerCount = path == ":memory:" ? 0 : max(0, readers)
        readLine = readerCount == 0 ? writeLine : readersLine
        backgroundLine = path == ":memory:" ? readLine : JobLine(groupsSaves: false)
        backgroundReader = Mutex((path == ":memory:" ? nil : openReader, false))
        feed = nil
        listener = nil
        postgresTraffic = nil
        replicas = nil
        for worker in [worker] + opened { worker.start() }
    }

    /// Opens `connections` connections to PostgreSQL at `url` (libpq's syntax) for saves and
    /// `run`, and `readers` more for reads (none: reads share the others' line), each with a thread
    /// of its own that takes the next job of its pool's line when it comes free; and one more
    /// connection that listens for other processes' changes.
    ///
    /// `replicaURLs`: streaming replicas of that primary, `readers` connections to each, for the
    /// reads that may go to one (``read(replicaSeeing:_:dependents:)``) while it lags by at most
    /// `maxReplicaLag`. A replica need not be up when the queue opens.
    package init(
        postgresURL url: String, connections: Int = 4, readers: Int = 2, replicaURLs: [String] = [],
        maxReplicaLag: Duration = .seconds(1), metrics: any MetricsFactory = NOOPMetricsHandler.instance
    ) throws(StorageError) {
        let replicas =
            replicaURLs.isEmpty
            ? nil
            : ReplicaSet(primary: url, replicas: replicaURLs, readers: readers, maxLag: maxReplicaLag, metrics: metrics)
        let feed = ChangeFeed(replicas: replicas)
        let traffic = PostgresTraffic()
        let (writers, readers) = (max(1, connections), max(0, readers))
        let (writing, reading) = (JobLine(groupsSaves: true, workers: writers), JobLine(groupsSaves: false))
        var opened: [Worker] = []
        let open: @Sendable () throws(StorageError) -> Database = { () throws(StorageError) -> Database in
            let database = try Database(postgresURL: url, traffic: traffic)
            database.metrics = metrics
            database.changeFeed = feed
            return database
        }
        for i in 0..<(writers + readers) {
            opened.append(Worker(try open(), line: i < writers ? writing : reading, pollsOtherWriters: false))
        }
        backgroundLine = JobLine(groupsSaves: false)
        backgroundReader = Mutex((open, false))
        listener = try ChangeListener(url: url, feed: feed, ignoring: Set(opened.map(\.database.backendPID)))
        self.feed = feed
        self.replicas = replicas
        postgresTraffic = traffic
        worker = opened[0]
        writeLine = writing
        attachedLine = writing
        readLine = readers > 0 ? reading : writing
        readerCount = readers
        for worker in opened { worker.start() }
        replicas?.start()
    }

    deinit {
        listener?.stop()
        replicas?.stop()
        readLine.stop()
        writeLine.stop()
        attachedLine.stop()
        backgroundLine.stop()
    }

    /// The SQL dialect of the queue's connections.
    package var dialect: Database.Dialect { worker.database.dialect }

    /// Runs `body` in one read transaction (a consistent snapshot) on the first reader to come
    /// free; it may not write (read-only). It sees every commit made before it was called, this
    /// queue's included, and waits for no write in progress.
    ///
    /// `background`: on the background reader instead, a connection of its own (opened on the
    /// first such read) whose thread runs at a lower CPU priority (nice ``backgroundNice``), for
    /// work that can wait and may take long, such as the rollup keeper's: it never holds up a
    /// request's read, and when the machine is saturated requests are served first. (On SQLite
    /// in memory, a background read is an ordinary one.)
    package func read<T: Sendable>(
        background: Bool = false, _ body: @escaping @Sendable (Database) throws -> T
    ) async throws -> T {
        let line = background ? try backgroundStarted() : readLine
        return try await withCheckedThrowingContinuation { continuation in
            line.submit(
                .exclusive { worker in
                    let database = worker.database
                    continuation.resume(with: Result { try database.readTransaction { try body(database) } })
                })
        }
    }

    /// Runs `body` as ``read(background:_:)`` does, on a streaming replica when one may serve it:
    /// one that is up, lags the primary by at most the queue's bound, and has replayed every change
    /// this process heard of `subscribers` (an empty list: any such replica, for a list, which is
    /// then at most that bound stale). When the result turns out to depend on other subscribers
    /// (`dependents`: an alias's subscriber, say) whose changes that replica had not replayed, or
    /// the replica fails the read, it runs again on the primary; without replicas it runs there
    /// first. A change made by another process is seen once this process has heard of it (within
    /// milliseconds), the promise the change feed makes to caches.
    /// `subscribers` nil: the primary, as ``read(background:_:)``.
    package func read<T: Sendable>(
        replicaSeeing subscribers: [String]?, _ body: @escaping @Sendable (Database) throws -> T,
        dependents: @escaping @Sendable (T) -> [String] = { _ in [] }
    ) async throws -> T {
        if let subscribers, let replicas, let feed,
            let value = await replicas.read(seeing: subscribers, mark: feed.mark, dependents: dependents, body)
        {
            return value
        }
        return try await read(body)
    }

    /// A write of this process's saw `subscribers` as they stand on the primary, and may have
    /// changed nothing of theirs: a receipt saved again just after another instance stored it,
    /// which this process may not have heard of yet. Their reads go where that write's snapshot
    /// is, as after a change of their own (``read(replicaSeeing:_:dependents:)``): not to a
    /// replica that has not replayed it, where they could be missing. Nothing without replicas.
    package func wroteSeeing(_ subscribers: [String]) { replicas?.heard(subscribers) }

    /// Jobs submitted for the writer (or the writing pool) and not finished, saves waiting for
    /// their group included.
    package var writerBacklog: Int { writeLine.pending.load(ordering: .relaxed) }

    /// The nice value of the background reader's thread: ten steps below the rest, which makes
    /// Linux's scheduler give it about a tenth of the CPU time of each busy thread at 0.
    package static let backgroundNice: Int32 = 10

    /// The background reader's line, its worker started on the first call.
    private func backgroundStarted() throws -> JobLine {
        try backgroundReader.withLock { reader in
            guard !reader.started, let open = reader.open else { return }
            let worker = Worker(try open(), line: backgroundLine, pollsOtherWriters: false, nice: Self.backgroundNice)
            worker.start()
            reader.started = true
        }
        return backgroundLine
    }

    /// The database file's path.
    package var path: String { worker.database.path }

    /// Calls `observer` on the writer's thread with each change appended to the ``ChangeLog``
    /// after this call, oldest first: those of this queue's writes before their callers resume,
    /// other connections' and processes' within ``externalPoll`` of their commit. Replaces any
    /// earlier observer. The observer must be quick (it holds up the writer).
    ///
    /// On PostgreSQL the sequences are the ``ChangeFeed``'s, other processes' changes arrive
    /// through `LISTEN` within milliseconds of their commit, and `lostTrack` is called when changes
    /// up to the sequence it is given may have gone unheard (the listening connection was lost,
    /// and is back): forget what was read before.
    package func followChanges(
        _ observer: @escaping @Sendable ([ChangeLog.Change]) -> Void, lostTrack: @escaping @Sendable (Int64) -> Void = { _ in }
    ) {
        if let feed {
            feed.follow(observer, lostTrack: lostTrack)
            return
        }
        runBlocking { db in worker.follow(from: (try? ChangeLog(db).last()) ?? 0, observer) }
    }

    /// How often an idle queue looks for commits by other connections (`PRAGMA data_version`).
    package static let externalPoll: Duration = .milliseconds(100)

    /// Runs `body` with exclusive use of the connection, on the database's thread; `attached`: of
    /// the ``AttachedFile``'s writer (on SQLite, a connection to that file alone).
    package func run<T: Sendable>(attached: Bool = false, _ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            (attached ? attachedLine : writeLine).submit(
                .exclusive { worker in
                    let result = Result { try body(worker.database) }
                    worker.publishChanges()
                    continuation.resume(with: result)
                })
        }
    }

    /// Runs `body` as one save of a group commit: the saves waiting for the writer when it comes
    /// free (at most ``maxGroup``; on PostgreSQL, a connection's share of them) share one
    /// transaction and one commit, each in a savepoint of its own, so a save that throws is rolled
    /// back alone and gets its own error (a save with no company has its transaction alone, and no
    /// savepoint). Returns once the commit holding the save is done: what it wrote is committed
    /// (and on disk, when `durable`: a group with one durable save commits with `synchronous =
    /// FULL`, or `synchronous_commit = on`), or it throws.
    ///
    /// `alone`: in a transaction of its own, never grouped: for a large write, whose savepoint
    /// would journal every page it touches, statement by statement.
    ///
    /// `attached`: a write of the ``AttachedFile``'s tables (Storage's chart rollups), alone, by
    /// that file's writer: on SQLite, a connection to the file alone, which waits for no save and
    /// holds none up.
    package func write<T: Sendable>(
        durable: Bool = false, alone: Bool = false, attached: Bool = false, _ body: @escaping @Sendable (Database) throws -> T
    ) async throws -> T {
        if alone || attached {
            return try await withCheckedThrowingContinuation { continuation in
                (attached ? attachedLine : writeLine).submit(
                    .exclusive { worker in
                        let database = worker.database
                        let result = Result {
                            try Self.retryingConflicts { try database.transaction(durable: durable) { try body(database) } }
                        }
                        worker.publishChanges()
                        continuation.resume(with: result)
                    })
            }
        }
        let outcome = SaveOutcome<T>()
        return try await withCheckedThrowingContinuation { continuation in
            writeLine.submit(
                .save(
                    Save(
                        durable: durable,
                        run: { database, alone in
                            let result = Result { alone ? try body(database) : try database.savepoint { try body(database) } }
                            outcome.result = result
                            if case .failure(let error) = result { return error }
                            return nil
                        },
                        finish: { commitError in
                            // Its own error first; else the group's (a failed commit undid it too).
                            switch (outcome.result, commitError) {
                            case (.failure(let error)?, _): continuation.resume(throwing: error)
                            case (_, let error?): continuation.resume(throwing: error)
                            case (.success(let value)?, nil): continuation.resume(returning: value)
                            case (nil, nil): continuation.resume(throwing: StorageError(.sqlite, "a save was never run"))
                            }
                        })))
        }
    }

    /// The most saves one group commit holds.
    package static let maxGroup = 256

    /// How many times a PostgreSQL save runs when the server keeps picking it as a deadlock's or
    /// a serialization failure's loser.
    package static let conflictAttempts = 5

    /// Runs `body` until it does not fail with SQLSTATE 40P01 (deadlock detected) or 40001
    /// (serialization failure), ``conflictAttempts`` times at most: each failure rolled the whole
    /// transaction back, so running it again is safe.
    static func retryingConflicts<T>(_ body: () throws -> T) throws -> T {
        var attempt = 1
        while true {
            do {
                return try body()
            } catch let error where isConflict(error) {
                guard attempt < conflictAttempts else { throw error }
                attempt += 1
            }
        }
    }

    /// Runs `body` on the calling thread while a connection's thread (the writer's, on SQLite)
    /// waits for it, so the connection is still used by one thread at a time; for start-up and
    /// command-line tools.
    package func runBlocking<T>(_ body: (Database) throws -> T) rethrows -> T {
        let (paused, resume) = (DispatchSemaphore(value: 0), DispatchSemaphore(value: 0))
        let taken = Mutex<Worker?>(nil)
        writeLine.submit(
            .exclusive { worker in
                taken.withLock { $0 = worker }
                paused.signal()
                resume.wait()
            })
        paused.wait()
        let worker = taken.withLock { $0! }
        defer {
            worker.publishChanges()
            resume.signal()
        }
        return try body(worker.database)
    }
}
