import CCurl
import Glibc
import Synchronization

/// HTTP requests over libcurl's multi interface (https://curl.se/libcurl/c/libcurl-multi.html): one
/// thread drives every transfer in flight, so thousands of slow exchanges with a store cost a socket
/// and a small buffer each, not a thread. Callers `await`; nothing blocks Swift's cooperative pool.
///
/// Each transfer: TLS peer and host verification on, only https (http only when `allowHTTP`),
/// a connect timeout, a total timeout, the response body capped at `maxResponseBytes`.
package final class CurlMultiTransport: HTTPTransport, Sendable {
    package struct Configuration: Sendable, Equatable {
        package var connectTimeout: Duration
        package var maxResponseBytes: Int
        /// Plain-HTTP URLs (loopback simulator, tests); off for production.
        package var allowHTTP: Bool
        /// Idle connections kept open for the next transfers (`CURLMOPT_MAXCONNECTS`). libcurl's
        /// own default is 4 × the transfers in flight at the moment one ends, so after a burst it
        /// closes what the next burst opens again (a TCP and TLS handshake each): set it to the
        /// transfers expected in flight at once.
        package var keptConnections: Int

        package init(
            connectTimeout: Duration = .seconds(5), maxResponseBytes: Int = 4 << 20, allowHTTP: Bool = false,
            keptConnections: Int = 64
        ) {
            self.connectTimeout = connectTimeout
            self.maxResponseBytes = maxResponseBytes
            self.allowHTTP = allowHTTP
            self.keptConnections = keptConnections
        }
    }

    package let configuration: Configuration
    private let multi: Multi
    private let submissions = Mutex<[Transfer]>([])
    private let stopped = Atomic<Bool>(false)

    private let started = Atomic<Bool>(false)

    /// Allocates the multi handle only: the transfer thread starts with the first transfer, so
    /// building a transport (and the application around it) starts nothing.
    package init(configuration: Configuration = Configuration()) {
        _ = Self.globalInit
        self.configuration = configuration
        multi = Multi()
        receiptd_curl_multi_setopt_long(multi.handle, CURLMOPT_MAXCONNECTS, max(1, configuration.keptConnections))
    }

    /// Starts the driver thread, once.
    private func startDriver() {
        guard started.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged else { return }
        let box = Unmanaged.passRetained(Driver(multi: multi, owner: self))
        var tid = pthread_t()
        let rc = pthread_create(
            &tid, nil,
            { arg in
                let driver = Unmanaged<Driver>.fromOpaque(arg!).takeRetainedValue()
                driver.run()
                return nil
            }, box.toOpaque())
        precondition(rc == 0, "pthread_create failed: \(rc)")
        pthread_detach(tid)
    }

    /// curl_global_init must run once, before any other curl call and any thread.
    private static let globalInit: Void = { _ = curl_global_init(Int(CURL_GLOBAL_DEFAULT)) }()

    package func send(_ request: OutboundRequest) async -> TransportResult {
        guard !stopped.load(ordering: .acquiring) else { return .failure("the transport is shut down") }
        startDriver()
        return await withCheckedContinuation { continuation in
            let transfer = Transfer(request: request, configuration: configuration, continuation: continuation)
            // Under the submissions lock, as `shutdown` sets `stopped`: a transfer is either queued
            // before the driver's last drain or refused here, never left waiting.
            let queued = submissions.withLock { pending -> Bool in
                guard !stopped.load(ordering: .acquiring) else { return false }
                pending.append(transfer)
                return true
            }
            if queued {
                curl_multi_wakeup(multi.handle)
            } else {
                transfer.complete(.failure("the transport is shut down"))
            }
        }
    }

    /// Fails every transfer in flight and stops the driver thread.
    package func shutdown() {
        submissions.withLock { _ in stopped.store(true, ordering: .releasing) }
        curl_multi_wakeup(multi.handle)
    }

    fileprivate func takeSubmissions() -> [Transfer] {
        submissions.withLock { pending in
            defer { pending = [] }
            return pending
        }
    }

    fileprivate var isStopped: Bool { stopped.load(ordering: .acquiring) }
}

/// The multi handle, freed when the last owner lets go.
private final class Multi: @unchecked Sendable {
    let handle: UnsafeMutableRawPointer
    init() { handle = curl_multi_init()! }
    deinit { curl_multi_cleanup(handle) }
}

/// Runs on the transport's own thread: adds submitted transfers, drives them, completes them.
private final class Driver {
    let multi: Multi
    weak var owner: CurlMultiTransport?
    var active: [UnsafeMutableRawPointer: Transfer] = [:]

    init(multi: Multi, owner: CurlMultiTransport) {
        self.multi = multi
        self.owner = owner
    }

    func run() {
        while let owner, !owner.isStopped {
            for transfer in owner.takeSubmissions() {
                if let easy = transfer.makeEasyHandle() {
                    active[easy] = transfer
                    curl_multi_add_handle(multi.handle, easy)
                } else {
                    transfer.complete(.failure("libcurl could not set up the transfer"))
                }
            }
            var running: Int32 = 0
            curl_multi_perform(multi.handle, &running)
            var queued: Int32 = 0
            while let message = curl_multi_info_read(multi.handle, &queued) {
                guard message.pointee.msg == CURLMSG_DONE, let easy = message.pointee.easy_handle else { continue }
                let code = message.pointee.data.result
                curl_multi_remove_handle(multi.handle, easy)
                if let transfer = active.removeValue(forKey: easy) {
                    transfer.finish(easy: easy, code: code)
                }
                curl_easy_cleanup(easy)
            }
            // Sleeps until a socket is ready, curl's next timeout (capped at 1 s), or a wakeup.
            var ready: Int32 = 0
            curl_multi_poll(multi.handle, nil, 0, 1000, &ready)
        }
        for (easy, transfer) in active {
            curl_multi_remove_handle(multi.handle, easy)
            curl_easy_cleanup(easy)
            transfer.complete(.failure("the transport is shut down"))
        }
        active = [:]
        for transfer in owner?.takeSubmissions() ?? [] { transfer.complete(.failure("the transport is shut down")) }
    }
}

/// One exchange: its request, the response as it arrives, and the caller waiting for it. Made on the
/// caller's task, handed over through the submission lock, and from then on touched only by the
/// driver thread.
private final class Transfer: @unchecked Sendable {
    let request: OutboundRequest
    let configuration: CurlMultiTransport.Configuration
    var continuation: CheckedContinuation<TransportResult, Never>?
    var response: [UInt8] = []
    var overflowed = false
    var headers: UnsafeMutablePointer<curl_slist>?

    init(
        request: OutboundRequest, configuration: CurlMultiTransport.Configuration,
        continuation: CheckedContinuation<TransportResult, Never>
    ) {
        self.request = request
        self.configuration = configuration
        self.continuation = continuation
    }

    deinit { curl_slist_free_all(headers) }

    /// An easy handle for this transfer, or nil if libcurl refuses an option.
    func makeEasyHandle() -> UnsafeMutableRawPointer? {
        guard let easy = curl_easy_init() else { return nil }
        var ok = true
        func set(_ option: CURLoption, _ value: Int) {
            ok = ok && receiptd_curl_easy_setopt_long(easy, option, value) == CURLE_OK
        }
        ok = ok && receiptd_curl_easy_setopt_string(easy, CURLOPT_URL, request.url) == CURLE_OK
        set(CURLOPT_NOSIGNAL, 1)
        // POST and PUT always send a body (Content-Length: 0 when empty); GET never does.
        if let body = request.body ?? (request.method == .get ? nil : []) {
            set(CURLOPT_POST, 1)
            set(CURLOPT_POSTFIELDSIZE, body.count)
            ok =
                ok
                && body.withUnsafeBytes {
                    receiptd_curl_easy_setopt_pointer(
                        easy, CURLOPT_COPYPOSTFIELDS,
                        UnsafeMutableRawPointer(mutating: $0.baseAddress ?? UnsafeRawPointer(bitPattern: 1)!))
                } == CURLE_OK
            // No body: no Content-Type (curl would otherwise say a form follows).
            headers = curl_slist_append(headers, request.body != nil ? "Content-Type: \(request.contentType)" : "Content-Type:")
        } else {
            set(CURLOPT_HTTPGET, 1)
        }
        if request.method == .put {
            ok = ok && receiptd_curl_easy_setopt_string(easy, CURLOPT_CUSTOMREQUEST, request.method.rawValue) == CURLE_OK
        }
        headers = curl_slist_append(headers, "Accept: application/json")
        headers = curl_slist_append(headers, "Expect:")  // no 100-continue round trip
        for header in request.headers { headers = curl_slist_append(headers, header) }
        ok = ok && receiptd_curl_easy_setopt_pointer(easy, CURLOPT_HTTPHEADER, UnsafeMutableRawPointer(headers)) == CURLE_OK
        set(CURLOPT_SSL_VERIFYPEER, 1)
        set(CURLOPT_SSL_VERIFYHOST, 2)
        ok =
            ok
            && receiptd_curl_easy_setopt_string(easy, CURLOPT_PROTOCOLS_STR, configuration.allowHTTP ? "https,http" : "https")
                == CURLE_OK
        set(CURLOPT_FOLLOWLOCATION, 0)
        // The path goes out exactly as built: libcurl would otherwise remove `.` and `..` segments
        // (RFC 3986 §5.2.4), and a segment made of one could then name another endpoint.
        set(CURLOPT_PATH_AS_IS, 1)
        set(CURLOPT_CONNECTTIMEOUT_MS, Self.milliseconds(configuration.connectTimeout))
        set(CURLOPT_TIMEOUT_MS, Self.milliseconds(request.timeout))
        ok =
            ok
            && receiptd_curl_easy_setopt_off_t(easy, CURLOPT_MAXFILESIZE_LARGE, curl_off_t(configuration.maxResponseBytes))
                == CURLE_OK
        ok =
            ok
            && receiptd_curl_easy_setopt_write_function(easy, CURLOPT_WRITEFUNCTION) { data, size, count, user in
                let transfer = Unmanaged<Transfer>.fromOpaque(user!).takeUnretainedValue()
                let n = size * count
                if transfer.response.count + n > transfer.configuration.maxResponseBytes {
                    transfer.overflowed = true
                    return 0  // curl stops the transfer with CURLE_WRITE_ERROR
                }
                transfer.response.append(contentsOf: UnsafeRawBufferPointer(start: data, count: n))
                return n
            } == CURLE_OK
        ok =
            ok
            && receiptd_curl_easy_setopt_pointer(easy, CURLOPT_WRITEDATA, Unmanaged.passUnretained(self).toOpaque()) == CURLE_OK
        guard ok else {
            curl_easy_cleanup(easy)
            return nil
        }
        return easy
    }

    func finish(easy: UnsafeMutableRawPointer, code: CURLcode) {
        if code == CURLE_OK {
            var status = 0
            _ = receiptd_curl_easy_getinfo_long(easy, CURLINFO_RESPONSE_CODE, &status)
            complete(.response(status: status, body: response, retryAfter: Self.header("Retry-After", of: easy)))
        } else if overflowed || code == CURLE_FILESIZE_EXCEEDED {
            complete(.failure("the response is larger than \(configuration.maxResponseBytes) bytes"))
        } else {
            complete(.failure("libcurl: " + String(cString: curl_easy_strerror(code))))
        }
    }

    func complete(_ result: TransportResult) {
        continuation?.resume(returning: result)
        continuation = nil
    }

    /// A response header's value (the last response's, after any redirect), or nil.
    static func header(_ name: String, of easy: UnsafeMutableRawPointer) -> String? {
        var found: UnsafeMutablePointer<curl_header>?
        guard curl_easy_header(easy, name, 0, UInt32(CURLH_HEADER), -1, &found) == CURLHE_OK, let value = found?.pointee.value
        else { return nil }
        return String(cString: value)
    }

    static func milliseconds(_ d: Duration) -> Int {
        let (s, atto) = d.components
        return max(1, Int(s) * 1000 + Int(atto / 1_000_000_000_000_000))
    }
}
