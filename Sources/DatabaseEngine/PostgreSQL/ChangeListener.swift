import Foundation
import Synchronization

/// Listens on PostgreSQL for the changes other processes commit (``ChangeLog/notifyChannel``) and
/// publishes them on a ``ChangeFeed``, on a thread of its own: a connection that does nothing but
/// `LISTEN`, waited on with `poll`. Notifications from `ignoring` (this process's own connections,
/// which publish their changes themselves) are skipped.
///
/// A lost connection is opened again (every second until it works); whatever was committed while
/// it was down was not heard, so the feed is told (``ChangeFeed/lostTrack()``) once it listens
/// again, and a cache following it forgets everything.
final class ChangeListener: Sendable {
    private let url: String
    private let feed: ChangeFeed
    private let ignoring: Set<Int32>
    private let stopped = Atomic<Bool>(false)

    /// Connects and listens before returning, so no commit after it is missed.
    init(url: String, feed: ChangeFeed, ignoring: Set<Int32>) throws(StorageError) {
        self.url = url
        self.feed = feed
        self.ignoring = ignoring
        // Handed over to the thread, which alone uses it from then on.
        nonisolated(unsafe) let connection = try Self.listen(url)
        Thread { [self] in run(connection) }.start()
    }

    func stop() { stopped.store(true, ordering: .relaxed) }

    private static func listen(_ url: String) throws(StorageError) -> PostgresConnection {
        let connection = try PostgresConnection(url: url)
        try connection.execute("LISTEN \(ChangeLog.notifyChannel)")
        return connection
    }

    private func run(_ first: PostgresConnection) {
        var connection: PostgresConnection? = first
        while !stopped.load(ordering: .relaxed) {
            guard let listening = connection else {
                Thread.sleep(forTimeInterval: 1)
                connection = try? Self.listen(url)
                if connection != nil { feed.lostTrack() }
                continue
            }
            var pollfd = Glibc.pollfd(fd: listening.socket, events: Int16(POLLIN), revents: 0)
            let ready = Glibc.poll(&pollfd, 1, 100)  // wakes to see `stopped`
            guard ready > 0 else { continue }
            do {
                let users = try listening.notifications().filter { !ignoring.contains($0.senderPID) }.map(\.payload)
                feed.publish(users, at: Int64(time(nil)))
            } catch {
                connection = nil
            }
        }
    }
}
