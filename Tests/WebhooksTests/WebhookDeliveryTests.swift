import Fetch
import Foundation
import PackdTestSupport
import Packs
import Testing
@testable import Webhooks

/// The dispatcher against receivers that misbehave on purpose, through a real fetcher and a real
/// SQLite outbox: retries keep one `webhook-id`, `Retry-After` is honoured, 410 disables, a
/// receiver that never answers costs one slot for the timeout, no redirect is followed, long
/// answers are cut, and a host name resolving to loopback is refused when the attempt is made.
@Suite(.serialized) struct WebhookDeliveryTests {
    /// A receiver answering each request with `replies[n]` (the last repeats).
    private static func receiver(_ replies: [TestUpstream.Reply]) throws -> TestUpstream {
        let count = Counter()
        return try TestUpstream { _ in replies[min(count.next() - 1, replies.count - 1)] }
    }

    @Test func fiveHundredTwiceThenTwoHundredIsThreeAttemptsWithOneWebhookID() throws {
        let upstream = try Self.receiver([.respond(status: 500), .respond(status: 500), .respond(status: 200)])
        defer { upstream.stop() }
        let harness = try WebhookHarness()
        defer { harness.close() }
        let (endpoint, secret) = try harness.endpoint(upstream.url("/hook"))
        let delivery = try harness.ping(endpoint)
        #expect(harness.waitFor(delivery.id, endpoint: endpoint) { $0.state == .delivered })
        let requests = upstream.requests
        #expect(requests.count == 3, "two failures and the success")
        #expect(Set(requests.compactMap { $0.headers["webhook-id"] }) == [delivery.messageID], "one webhook-id on every attempt")
        #expect(requests.allSatisfy { $0.method == "POST" && $0.isSigned(by: secret) })
        #expect(requests.allSatisfy { $0.headers["content-type"] == "application/json" })
        let stored = try #require(try harness.delivery(delivery.id, endpoint: endpoint))
        #expect(stored.attempts == 3 && stored.lastStatus == 200 && stored.deliveredAt != nil && stored.nextAttemptAt == nil)
        let log = try harness.read { try $0.webhookAttempts(deliveryID: delivery.id) }
        #expect(log.map(\.status) == [200, 500, 500], "newest first")
        // The schedule's 200 ms and 400 ms came between them.
        #expect(requests[1].receivedAt - requests[0].receivedAt >= .milliseconds(200))
        #expect(requests[2].receivedAt - requests[1].receivedAt >= .milliseconds(400))
    }

    @Test func retryAfterSevenIsHonouredTheNextAttemptIsNotEarlier() throws {
        let upstream = try Self.receiver([.respond(status: 503, headers: [("Retry-After", "7")]), .respond(status: 204)])
        defer { upstream.stop() }
        let harness = try WebhookHarness()
        defer { harness.close() }
        let (endpoint, _) = try harness.endpoint(upstream.url("/hook"))
        let delivery = try harness.ping(endpoint)
        #expect(harness.waitFor(delivery.id, endpoint: endpoint) { $0.state == .delivered })
        let requests = upstream.requests
        #expect(requests.count == 2)
        let gap = requests[1].receivedAt - requests[0].receivedAt
        #expect(gap >= .milliseconds(7000), "the schedule said 200 ms; Retry-After said 7 s: \(gap)")
        #expect(gap < .seconds(20))
    }

    @Test func goneDisablesTheEndpointAndItsDeliveriesStop() throws {
        let upstream = try Self.receiver([.respond(status: 410)])
        defer { upstream.stop() }
        let harness = try WebhookHarness()
        defer { harness.close() }
        let (endpoint, _) = try harness.endpoint(upstream.url("/hook"))
        let watcher = try harness.endpoint(upstream.url("/watcher"), events: ["webhook.disabled"])
        let delivery = try harness.ping(endpoint)
        #expect(harness.waitFor(delivery.id, endpoint: endpoint) { $0.state == .failed })
        let record = try #require(try harness.read { try $0.webhookEndpoint(endpoint) })
        #expect(!record.enabled && record.disabledReason == "gone")
        #expect(try harness.delivery(delivery.id, endpoint: endpoint)?.attempts == 1, "a 410 is not retried")
        // The other endpoint hears of it (webhook.disabled), the disabled one gets nothing more.
        #expect(eventually { upstream.requests.contains { $0.target == "/watcher" } })
        let notice = try #require(upstream.requests.first { $0.target == "/watcher" })
        let body = try JSONSerialization.jsonObject(with: Data(notice.body)) as? [String: Any]
        #expect(body?["type"] as? String == "webhook.disabled")
        #expect((body?["data"] as? [String: Any])?["reason"] as? String == "gone")
        _ = watcher
        // A pack completing now writes nothing for the disabled endpoint.
        let pack = try harness.write { database in
            try database.createPack(PackRecord(name: "p", state: .queued, definition: "{}"), now: 1)
        }
        _ = try harness.write { database in
            _ = try database.transition(pack, .start, now: 2)
            return try database.transition(pack, .finished(failedResources: 0), now: 3)
        }
        #expect(try harness.read { try $0.webhookDeliveries(endpointID: endpoint, before: nil, limit: 10) }.count == 1)
        #expect(upstream.requests.filter { $0.target == "/hook" }.count == 1)
    }

    @Test func aReceiverThatNeverAnswersHoldsOneSlotForAtMostTheTimeout() throws {
        let silent = try Self.receiver([.hang])
        let fast = try Self.receiver([.respond(status: 200)])
        defer {
            silent.stop()
            fast.stop()
        }
        // One slot in all: the silent receiver's attempt must give it back after the timeout.
        let harness = try WebhookHarness(configuration: WebhookHarness.quick(delays: [.seconds(600)], timeout: .seconds(1), maxInFlight: 1))
        defer { harness.close() }
        let (hanging, _) = try harness.endpoint(silent.url("/hook"))
        let (answering, _) = try harness.endpoint(fast.url("/hook"))
        let stuck = try harness.ping(hanging)
        #expect(eventually { silent.requests.count == 1 })
        let started = ContinuousClock.now
        let waiting = try harness.ping(answering)
        #expect(harness.waitFor(waiting.id, endpoint: answering) { $0.state == .delivered })
        let waited = started.duration(to: .now)
        #expect(waited < .seconds(5), "the fast receiver waited for one timeout, not more: \(waited)")
        let attempt = try #require(harness.attempts.first { $0.delivery.deliveryID == stuck.id })
        #expect(attempt.error == .timedOut)
        #expect(attempt.duration >= .milliseconds(900) && attempt.duration < .seconds(3), "\(attempt.duration)")
        let record = try #require(try harness.delivery(stuck.id, endpoint: hanging))
        #expect(record.state == .pending && record.lastError == "timeout" && record.attempts == 1)
    }

    @Test func aRedirectIsAnAnswerNotFollowedAndALongAnswerIsCutTo64KiB() throws {
        let target = try Self.receiver([.respond(status: 200)])
        let redirecting = try Self.receiver([.respond(status: 302, headers: [("Location", target.url("/elsewhere"))])])
        let long = try Self.receiver([.respond(status: 200, body: Array(repeating: UInt8(ascii: "x"), count: 1 << 20))])
        defer {
            target.stop()
            redirecting.stop()
            long.stop()
        }
        let harness = try WebhookHarness(configuration: WebhookHarness.quick(delays: [.seconds(600)]))
        defer { harness.close() }
        let (moved, _) = try harness.endpoint(redirecting.url("/hook"))
        let (big, _) = try harness.endpoint(long.url("/hook"))
        let redirected = try harness.ping(moved)
        let answered = try harness.ping(big)
        #expect(harness.waitFor(redirected.id, endpoint: moved) { $0.attempts == 1 })
        #expect(try harness.delivery(redirected.id, endpoint: moved)?.lastStatus == 302)
        #expect(try harness.delivery(redirected.id, endpoint: moved)?.state == .pending, "a 3xx is retried later")
        #expect(target.requests.isEmpty, "the Location was never requested")
        #expect(harness.waitFor(answered.id, endpoint: big) { $0.state == .delivered })
        let log = try harness.read { try $0.webhookAttempts(deliveryID: answered.id) }
        #expect(log.first?.response?.utf8.count == WebhookAttemptRecord.responseLimit, "1 KiB kept of the answer")
    }

    @Test func aHostNameResolvingToLoopbackIsRefusedWhenTheAttemptIsMade() throws {
        let upstream = try Self.receiver([.respond(status: 200)])
        defer { upstream.stop() }
        // No allow rule: the connect check judges the address `localhost` resolves to now.
        let harness = try WebhookHarness(configuration: WebhookHarness.quick(delays: [.seconds(600)]), addressPolicy: AddressPolicy())
        defer { harness.close() }
        let (endpoint, _) = try harness.endpoint("http://localhost:\(upstream.port)/hook")
        let delivery = try harness.ping(endpoint)
        #expect(harness.waitFor(delivery.id, endpoint: endpoint) { $0.attempts == 1 })
        #expect(try harness.delivery(delivery.id, endpoint: endpoint)?.lastError == "blocked_address")
        #expect(upstream.requests.isEmpty && upstream.connectionsAccepted == 0, "not a byte reached the loopback receiver")
    }

    @Test func aCompletedPackIsDeliveredWithItsDocumentFromTheTransitionsOwnTransaction() throws {
        let upstream = try Self.receiver([.respond(status: 200)])
        defer { upstream.stop() }
        let harness = try WebhookHarness()
        defer { harness.close() }
        let (all, _) = try harness.endpoint(upstream.url("/all"))
        let (other, _) = try harness.endpoint(upstream.url("/other"), events: ["pack.completed"], packIDs: [999])
        let pack = try harness.write { database in
            try database.createPack(PackRecord(name: "p", state: .queued, definition: #"{"style_url":"https://e/s.json"}"#), now: 1)
        }
        _ = try harness.write { database in
            _ = try database.transition(pack, .start, now: 2)
            return try database.transition(pack, .finished(failedResources: 0), now: 3)
        }
        #expect(eventually { upstream.requests.contains { $0.target == "/all" } })
        let request = try #require(upstream.requests.first { $0.target == "/all" })
        let body = try #require(try JSONSerialization.jsonObject(with: Data(request.body)) as? [String: Any])
        #expect(body["type"] as? String == "pack.completed")
        #expect((body["data"] as? [String: Any])?["state"] as? String == "complete")
        #expect((body["data"] as? [String: Any])?["id"] as? Int64 == pack)
        #expect(try harness.read { try $0.webhookDeliveries(endpointID: other, before: nil, limit: 10) }.isEmpty,
                "the pack filter keeps it from the other endpoint")
        _ = all
    }
}

private final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var value = 0

    func next() -> Int {
        lock.withLock {
            value += 1
            return value
        }
    }
}
