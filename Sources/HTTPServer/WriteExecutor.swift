import CLinux
import Dispatch
import Glibc
import Synchronization

/// Where the handlers of requests that may write (every method not ``HTTPMethod/isSafe``) run: threads of their own at a lower CPU priority (nice ``HTTPServerConfiguration/writeHandlersNice``),
/// one per core. When the machine is saturated, Linux's scheduler then gives the event loops
/// (which parse every request and answer what is answered at once, a cached document) and the
/// reads' handlers their turn first: a write storm slows writes, not reads. When it is not, the
/// threads take what CPU is idle and writes run as fast as before. The nice value is the same for
/// every process, not only receiptd's threads: other busy processes on the machine (a database,
/// a load generator) win over the writes too, which is why it is opt-in.
///
/// A task that prefers this executor (`Task(executorPreference:)`) runs every part of itself
/// here, after each `await` too; what it awaits (a database's thread, libcurl's) runs where it runs.
final class WriteExecutor: TaskExecutor, @unchecked Sendable {  // the queue is a Mutex; threads hold self
    private let jobs = Mutex<(waiting: [UnownedJob], head: Int, stopped: Bool)>(([], 0, false))
    private let wake = DispatchSemaphore(value: 0)

    /// The threads' nice value.
    private let nice: Int32

    /// Starts `threads` threads at nice `nice`.
    init(threads: Int, nice: Int32) {
        self.nice = nice
        for _ in 0..<max(1, threads) {
            let box = Unmanaged.passRetained(self)
            var thread = pthread_t()
            let rc = pthread_create(
                &thread, nil,
                { arg in
                    let executor = Unmanaged<WriteExecutor>.fromOpaque(arg!).takeRetainedValue()
                    executor.run()
                    return nil
                }, box.toOpaque())
            precondition(rc == 0, "pthread_create failed: \(rc)")
            pthread_detach(thread)
        }
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        jobs.withLock { $0.waiting.append(job) }
        wake.signal()
    }

    /// Lets the threads end once the jobs already queued are run.
    func stop() {
        jobs.withLock { $0.stopped = true }
        wake.signal()
    }

    private func run() {
        if nice != 0 { _ = receiptd_set_thread_nice(nice) }
        while true {
            wake.wait()
            let (job, stopped) = jobs.withLock { state -> (UnownedJob?, Bool) in
                guard state.head < state.waiting.count else { return (nil, state.stopped) }
                let job = state.waiting[state.head]
                state.head += 1
                if state.head == state.waiting.count { (state.waiting, state.head) = ([], 0) }
                return (job, state.stopped)
            }
            guard let job else {
                if stopped {
                    wake.signal()
                    return
                }
                continue
            }
            job.runSynchronously(on: asUnownedTaskExecutor())
        }
    }
}
