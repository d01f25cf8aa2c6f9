import Clocks
import CurlTransport
import Entitlements
import Foundation
import Resilience
import Synchronization
import Testing

@testable import AppStore

/// Answers from a script per environment, recording every request; never touches a socket.
private final class ScriptedTransport: HTTPTransport {
    private let state: Mutex<(production: [TransportResult], sandbox: [TransportResult], sent: [(String, [UInt8])])>

    init(production: [TransportResult], sandbox: [TransportResult] = []) {
        state = Mutex((production, sandbox, []))
    }

    var sent: [(url: String, body: [UInt8])] { state.withLock { $0.sent.map { ($0.0, $0.1) } } }

    func send(_ request: OutboundRequest) async -> TransportResult {
        let (url, body) = (request.url, request.body ?? [])
        return state.withLock { s in
            s.sent.append((url, body))
            if url.contains("sandbox") {
                return s.sandbox.isEmpty ? .failure("no script") : s.sandbox.removeFirst()
            }
            return s.production.isEmpty ? .failure("no script") : s.production.removeFirst()
        }
    }
}

/// Time that moves only when slept through.
private final class ManualClock: MonotonicClock {
    private let state = Mutex<(now: Duration, sleeps: [Duration])>((.zero, []))
    var now: Duration { state.withLock { $0.now } }
    var sleeps: [Duration] { state.withLock { $0.sleeps } }
    func sleep(for duration: Duration) async {
        state.withLock {
            $0.now += duration
            $0.sleeps.append(duration)
        }
    }
}

private func status(_ code: Int, _ extra: String = "") -> TransportResult {
    .response(status: 200, body: Array(#"{"status":\#(code)\#(extra)}"#.utf8))
}

private let configuration = VerifyReceiptClient.Configuration(
    productionURL: "http://127.0.0.1:1/production", sandboxURL: "http://127.0.0.1:1/sandbox", sharedSecret: "s3cret",
    policy: VerifyReceiptPolicy(maxRetries: 2, baseDelay: .milliseconds(100), maxDelay: .seconds(1)))

@Suite("verifyReceipt client")
struct VerifyReceiptClientTests {
    @Test func sendsTheDocumentedBodyToProductionFirst() async throws {
        let transport = ScriptedTransport(production: [status(0, #","receipt":{"bundle_id":"com.x"}"#)])
        let v = await VerifyReceiptClient(configuration: configuration, transport: transport, clock: ManualClock())
            .verify(receiptData: "QUJD", excludeOldTransactions: true)
        guard case .valid(let response, .production) = v.result else {
            Issue.record("\(v.result)")
            return
        }
        #expect(response.receipt?.bundleID == "com.x")
        #expect(transport.sent.map(\.url) == ["http://127.0.0.1:1/production"])
        let body = try JSONSerialization.jsonObject(with: Data(transport.sent[0].body)) as? [String: Any]
        #expect(body?["receipt-data"] as? String == "QUJD")
        #expect(body?["password"] as? String == "s3cret")
        #expect(body?["exclude-old-transactions"] as? Bool == true)
    }

    @Test func fallsBackToSandboxOnceAndProductionOnce() async {
        let toSandbox = ScriptedTransport(production: [status(21007)], sandbox: [status(0)])
        let a = await VerifyReceiptClient(configuration: configuration, transport: toSandbox, clock: ManualClock()).verify(
            receiptData: "x")
        #expect(toSandbox.sent.map(\.url) == ["http://127.0.0.1:1/production", "http://127.0.0.1:1/sandbox"])
        #expect(a.environment == .sandbox && a.attempts == 2)

        // A sandbox that answers 21007 again (a known Apple anomaly) gets no third hop.
        let loop = ScriptedTransport(production: [status(21007), status(0)], sandbox: [status(21007)])
        let b = await VerifyReceiptClient(configuration: configuration, transport: loop, clock: ManualClock()).verify(
            receiptData: "x")
        #expect(loop.sent.count == 2)
        guard case .unavailable(let s, _) = b.result else {
            Issue.record("\(b.result)")
            return
        }
        #expect(s?.rawValue == 21007)
    }

    @Test func retriesWaitOnTheInjectedClock() async {
        let transport = ScriptedTransport(production: [status(21005), .response(status: 502, body: []), status(0)])
        let clock = ManualClock()
        let v = await VerifyReceiptClient(configuration: configuration, transport: transport, clock: clock, random: { 1 })
            .verify(receiptData: "x")
        guard case .valid = v.result else {
            Issue.record("\(v.result)")
            return
        }
        #expect(clock.sleeps == [.milliseconds(100), .milliseconds(200)])
        #expect(v.attempts == 3)
        #expect(v.duration == .milliseconds(300))
    }

    @Test func aNonJSONAnswerIsATransportFailure() async {
        let transport = ScriptedTransport(production: [.response(status: 200, body: Array("<html>".utf8)), status(21003)])
        let v = await VerifyReceiptClient(configuration: configuration, transport: transport, clock: ManualClock()).verify(
            receiptData: "x")
        #expect(v.result == .invalidReceipt(AppleStatus(rawValue: 21003)))
        #expect(v.attempts == 2)
    }

    @Test func anOpenBreakerFailsFastWithoutCallingAppleThenProbes() async throws {
        let transport = ScriptedTransport(production: Array(repeating: .response(status: 503, body: []), count: 9))
        let clock = ManualClock()
        let breaker = SharedCircuitBreaker(policy: .init(failureThreshold: 2, openFor: .seconds(60)))
        let client = VerifyReceiptClient(configuration: configuration, transport: transport, clock: clock, breaker: breaker)
        for _ in 0..<2 { _ = await client.verify(receiptData: "QUJD") }  // 3 exchanges each (2 retries)
        #expect(transport.sent.count == 6)
        guard case .open = breaker.state else {
            Issue.record("\(breaker.state)")
            return
        }
        let fast = await client.verify(receiptData: "QUJD")
        #expect(fast.attempts == 0 && fast.retryAfter != nil && transport.sent.count == 6)
        guard case .unavailable(nil, _) = fast.result else {
            Issue.record("\(fast.result)")
            return
        }
        await clock.sleep(for: .seconds(60))
        let probe = await client.verify(receiptData: "QUJD")  // the probe, one call: Apple is still down
        #expect(probe.attempts == 1 && transport.sent.count == 7)
        guard case .open(_, let backoff) = breaker.state else {
            Issue.record("\(breaker.state)")
            return
        }
        #expect(backoff == .seconds(120))
    }

    @Test func retriesStopOnceTheBreakerOpens() async {
        /// Apple is down, and while the first call is out other verifications fail and open the breaker.
        final class OthersFailMeanwhile: HTTPTransport {
            let breaker: SharedCircuitBreaker
            let calls = Mutex(0)
            init(_ breaker: SharedCircuitBreaker) { self.breaker = breaker }
            func send(_ request: OutboundRequest) async -> TransportResult {
                calls.withLock { $0 += 1 }
                breaker.record(available: false, now: .zero)
                return .response(status: 503, body: [])
            }
        }
        let breaker = SharedCircuitBreaker(policy: .init(failureThreshold: 1, openFor: .seconds(60)))
        let transport = OthersFailMeanwhile(breaker)
        let client = VerifyReceiptClient(
            configuration: configuration, transport: transport, clock: ManualClock(), breaker: breaker)
        let v = await client.verify(receiptData: "QUJD")
        #expect(v.attempts == 1 && transport.calls.withLock { $0 } == 1, "\(v)")  // not the 2 retries
        #expect(v.retryAfter != nil)
        guard case .unavailable(nil, _) = v.result else {
            Issue.record("\(v.result)")
            return
        }
    }

    @Test func theSameReceiptAskedAtOnceCostsOneCallAndTheCapHolds() async {
        /// Answers status 0 once its gate lets it, counting calls and the most at once.
        final class SlowTransport: HTTPTransport {
            let counts = Mutex((calls: 0, running: 0, peak: 0))
            let gate = Mutex<@Sendable () async -> Void>({})
            func send(_ request: OutboundRequest) async -> TransportResult {
                counts.withLock {
                    $0.calls += 1
                    $0.running += 1
                    $0.peak = max($0.peak, $0.running)
                }
                await gate.withLock { $0 }()
                counts.withLock { $0.running -= 1 }
                return status(0, #","receipt":{"bundle_id":"com.x"}"#)
            }
        }
        let transport = SlowTransport()
        let client = VerifyReceiptClient(configuration: configuration, transport: transport, limit: ConcurrencyLimit(2))
        // The one call answers once all 100 callers wait for it.
        transport.gate.withLock { $0 = { while client.callersInFlight < 100 { await Task.yield() } } }
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<100 { group.addTask { _ = await client.verify(receiptData: "U0FNRQ==") } }
        }
        #expect(transport.counts.withLock { $0.calls } == 1)
        // Distinct receipts: each call answers once the cap is full (or only it is left), so were
        // the cap not held, a third would start meanwhile.
        transport.gate.withLock {
            $0 = { while transport.counts.withLock({ $0.running < 2 && $0.calls < 7 }) { await Task.yield() } }
        }
        await withTaskGroup(of: Void.self) { group in
            for i in 0..<6 { group.addTask { _ = await client.verify(receiptData: "RElGRg\(i)") } }
        }
        #expect(transport.counts.withLock { ($0.calls, $0.peak) } == (7, 2))
        #expect(client.inFlight == 0)
    }
}
