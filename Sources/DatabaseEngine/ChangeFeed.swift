import Synchronization

/// How a process hears of subscriber changes on PostgreSQL, where several connections (and
/// processes) commit at once and the change log's sequence is not commit order.
///
/// Every change heard (this process's own commits, published by the connection that made them
/// before its caller resumes; other processes' through `LISTEN`, see ``ChangeListener``) gets the
/// next number of a counter that only this process keeps. A snapshot is marked with the counter
/// as it stood just before the snapshot began (``mark``): a change committed after the snapshot
/// began is heard after it, so its number is higher than the mark. A change committed before it
/// may be heard after the mark too, which costs a cache entry, never a stale one. That is the
/// promise ``ChangeLog/Change/sequence`` makes to ``DatabaseQueue/followChanges(_:)``'s observers.
package final class ChangeFeed: Sendable {
    private struct State {
        var heard: Int64 = 0
        var observer: (@Sendable ([ChangeLog.Change]) -> Void)?
        var lostTrack: (@Sendable (Int64) -> Void)?
    }

    private let state = Mutex(State())
    /// The replicas, told of every change before it is numbered: a read routed after the mark
    /// taken past it is routed knowing of it (``ReplicaRouter``).
    private let replicas: ReplicaSet?

    init(replicas: ReplicaSet? = nil) { self.replicas = replicas }

    /// The number of the last change heard: a snapshot begun after this call sees every change up
    /// to it, and any change it does not see will be numbered higher.
    package var mark: Int64 { state.withLock { $0.heard } }

    /// Replaces the observer and what to call when changes may have gone unheard
    /// (``DatabaseQueue/followChanges(_:lostTrack:)``).
    func follow(_ observer: @escaping @Sendable ([ChangeLog.Change]) -> Void, lostTrack: @escaping @Sendable (Int64) -> Void) {
        state.withLock {
            $0.observer = observer
            $0.lostTrack = lostTrack
        }
    }

    /// Changes may have been committed unheard (the listening connection was lost): takes a
    /// number, so every snapshot begun before now is older than it, and hands it to `lostTrack`.
    func lostTrack() {
        state.withLock { state in
            replicas?.lostTrack()
            state.heard += 1
            state.lostTrack?(state.heard)
        }
    }

    /// Numbers the changes of `appUserIDs` and tells the observer, in the order heard. The observer
    /// is called under the feed's lock, so every observer call sees numbers in order.
    func publish(_ appUserIDs: [String], at now: Int64) {
        guard !appUserIDs.isEmpty else { return }
        state.withLock { state in
            replicas?.heard(appUserIDs)
            var changes: [ChangeLog.Change] = []
            changes.reserveCapacity(appUserIDs.count)
            for user in appUserIDs {
                state.heard += 1
                changes.append(ChangeLog.Change(sequence: state.heard, appUserID: user, at: now))
            }
            state.observer?(changes)
        }
    }
}
