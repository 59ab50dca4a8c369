import Packs
import Testing
@testable import Webhooks

/// The retry schedule and what an answer means, exhaustively (pure).
@Suite struct RetryScheduleTests {
    let schedule = RetrySchedule()
    let created: Int64 = 1_000_000_000_000

    @Test func delaysFollowTheScheduleWithinTheJitterAndRepeatTheLast() {
        let expected: [Int64] = [5, 300, 1800, 7200, 18_000, 36_000, 36_000, 36_000].map { $0 * 1000 }
        for (index, delay) in expected.enumerated() {
            let attempt = Int64(index + 1)
            let low = schedule.nextAttempt(after: attempt, now: created, createdAt: created, retryUntil: nil, retryAfter: nil, unit: 0)
            let middle = schedule.nextAttempt(after: attempt, now: created, createdAt: created, retryUntil: nil, retryAfter: nil, unit: 0.5)
            let high = schedule.nextAttempt(after: attempt, now: created, createdAt: created, retryUntil: nil, retryAfter: nil,
                                            unit: 0.999_999)
            #expect(middle == created + delay, "attempt \(attempt)")
            #expect(low == created + delay * 9 / 10, "attempt \(attempt): 10 % earlier at most")
            #expect(high.map { $0 - created } ?? 0 <= delay * 11 / 10 && high.map { $0 - created } ?? 0 > delay * 109 / 100)
        }
    }

    @Test func retryAfterIsHonouredNeverEarlier() {
        let next = schedule.nextAttempt(after: 1, now: created, createdAt: created, retryUntil: nil, retryAfter: .seconds(7), unit: 0.999)
        #expect(next == created + 7000, "7 s beats a 5.5 s jittered delay")
        let shorter = schedule.nextAttempt(after: 2, now: created, createdAt: created, retryUntil: nil, retryAfter: .seconds(7), unit: 0.5)
        #expect(shorter == created + 300_000, "a Retry-After shorter than the schedule does not hasten it")
    }

    @Test func aDeliveryPastItsMaximumAgeFailsAndAManualRetryExtendsIt() {
        let threeDays: Int64 = 3 * 86_400_000
        let late = created + threeDays - 1000
        #expect(schedule.nextAttempt(after: 9, now: late, createdAt: created, retryUntil: nil, retryAfter: nil, unit: 0.5) == nil)
        #expect(schedule.nextAttempt(after: 1, now: late, createdAt: created, retryUntil: nil, retryAfter: nil, unit: 0.5) == nil,
                "5 s later is past the deadline")
        #expect(schedule.nextAttempt(after: 1, now: late - 10_000, createdAt: created, retryUntil: nil, retryAfter: nil, unit: 0.5)
            == late - 5000)
        let extended = schedule.nextAttempt(after: 1, now: late, createdAt: created, retryUntil: late + 60_000, retryAfter: nil, unit: 0.5)
        #expect(extended == late + 5000)
        // The standard schedule's attempts within 3 days: 1 + 7 scheduled + 10 h repeats.
        var now = created
        var attempts: Int64 = 0
        while true {
            attempts += 1
            guard let next = schedule.nextAttempt(after: attempts, now: now, createdAt: created, retryUntil: nil, retryAfter: nil,
                                                  unit: 0.5) else { break }
            now = next
        }
        #expect(attempts == 12 && now - created <= threeDays)
    }

    @Test func answersMeanDeliveredGoneOrRetry() {
        #expect(WebhookAnswer(status: 200, retryAfter: nil) == .delivered)
        #expect(WebhookAnswer(status: 204, retryAfter: nil) == .delivered)
        #expect(WebhookAnswer(status: 299, retryAfter: nil) == .delivered)
        #expect(WebhookAnswer(status: 410, retryAfter: nil) == .gone)
        #expect(WebhookAnswer(status: 301, retryAfter: nil) == .retry(retryAfter: nil), "a redirect is not followed nor success")
        #expect(WebhookAnswer(status: 429, retryAfter: .seconds(7)) == .retry(retryAfter: .seconds(7)))
        #expect(WebhookAnswer(status: 500, retryAfter: nil) == .retry(retryAfter: nil))
        #expect(WebhookAnswer(status: nil, retryAfter: nil) == .retry(retryAfter: nil), "a transport error")
    }

    @Test func anEndpointFailingForFiveDaysIsDisabledAndASuccessEndsTheRun() {
        let fiveDays: Int64 = 5 * 86_400_000
        #expect(WebhookStoreRules.endpointAfter(.retry(at: 1), failingSince: nil, now: 100, disableAfter: fiveDays) == (100, nil))
        #expect(WebhookStoreRules.endpointAfter(.failed(reason: ""), failingSince: 100, now: 100 + fiveDays - 1,
                                                disableAfter: fiveDays) == (100, nil))
        #expect(WebhookStoreRules.endpointAfter(.retry(at: 1), failingSince: 100, now: 100 + fiveDays,
                                                disableAfter: fiveDays) == (100, "failing"))
        #expect(WebhookStoreRules.endpointAfter(.gone, failingSince: nil, now: 5, disableAfter: fiveDays) == (5, "gone"))
        #expect(WebhookStoreRules.endpointAfter(.delivered, failingSince: 100, now: 200, disableAfter: fiveDays) == (nil, nil))
    }

    @Test func subscriptionsFilterByTypeAndPackAndPingsGoOnlyWhereSent() {
        let all = WebhookSubscription(events: ["*"])
        let some = WebhookSubscription(events: ["pack.completed", "pack.failed"], packIDs: [7])
        #expect(all.accepts(.packRemoved, packID: 1) && all.accepts(.webhookDisabled, packID: nil))
        #expect(!all.accepts(.webhookPing, packID: nil), "a ping goes to the pinged endpoint only")
        #expect(some.accepts(.packCompleted, packID: 7) && !some.accepts(.packCompleted, packID: 8))
        #expect(!some.accepts(.packRemoved, packID: 7))
        let endpoints = [(id: Int64(1), subscription: all), (id: Int64(2), subscription: some)]
        #expect(WebhookStoreRules.recipients(of: .packFailed, packID: 7, among: endpoints) == [1, 2])
        #expect(WebhookStoreRules.recipients(of: .packFailed, packID: 9, among: endpoints) == [1])
        #expect(WebhookStoreRules.recipients(of: .webhookPing, packID: nil, target: 2, among: endpoints) == [2])
        #expect(WebhookStoreRules.recipients(of: .webhookPing, packID: nil, target: 3, among: endpoints).isEmpty)
    }

    @Test func transitionsMapToWebhookTypes() {
        func types(_ state: PackState, _ event: PackLifecycle.Event) -> [WebhookEventType] {
            guard case .success(let transition) = PackLifecycle.transition(from: state, on: event) else {
                Issue.record("\(event) refused in \(state)")
                return []
            }
            return WebhookTrigger.types(of: transition)
        }
        #expect(types(.active, .finished(failedResources: 0)) == [.packCompleted])
        #expect(types(.active, .finished(failedResources: 3)) == [.packFailed])
        #expect(types(.active, .planKnown(ExpectedCounts(resources: 10, tiles: 10, precise: true), maxTiles: 5))
            == [.packFailed, .packTileLimitExceeded])
        #expect(types(.complete, .delete) == [.packRemoved])
        #expect(types(.queued, .start).isEmpty && types(.active, .suspend).isEmpty && types(.complete, .invalidate).isEmpty)
        #expect(types(.failed, .resume).isEmpty)
        #expect(WebhookTrigger.updateBecameAvailable(before: nil, after: true))
        #expect(WebhookTrigger.updateBecameAvailable(before: false, after: true))
        #expect(!WebhookTrigger.updateBecameAvailable(before: true, after: true), "already known: no news")
        #expect(!WebhookTrigger.updateBecameAvailable(before: nil, after: false))
        #expect(WebhookEventType.mapped(fromStoredEvent: "version_created") == .packVersionCreated)
        #expect(WebhookEventType.mapped(fromStoredEvent: "state") == nil)
    }

    @Test func preciseTimestampsRoundTrip() {
        for milliseconds: Int64 in [0, 1, 999, 1_614_265_330_250, 1_614_265_330_000] {
            let stamp = PreciseTimestamp(milliseconds: milliseconds)
            #expect(PreciseTimestamp(rfc3339: stamp.rfc3339) == stamp, "\(stamp.rfc3339)")
        }
        #expect(PreciseTimestamp(milliseconds: 1_614_265_330_250).rfc3339 == "2021-02-25T15:02:10.250Z")
        #expect(PreciseTimestamp(rfc3339: "2021-02-25T15:02:10Z")?.milliseconds == 1_614_265_330_000)
    }
}
