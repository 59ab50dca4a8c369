import Foundation
import Packs
import Testing

/// The store contract, webhooks: endpoints, the outbox written in the transaction of the change
/// it announces (and not when that change is refused or rolled back), claims with leases and
/// per-endpoint caps, attempts and their effects — the same on every store.
@Suite struct WebhookContractTests {
    static func endpoint(_ url: String, events: [String] = ["*"], packIDs: [Int64]? = nil) -> WebhookEndpointRecord {
        let now = WebhookStoreRules.nowMilliseconds()
        return WebhookEndpointRecord(url: url, description: "d", subscription: WebhookSubscription(events: events, packIDs: packIDs),
                                     secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", createdAt: now, updatedAt: now)
    }

    private static var later: Int64 { WebhookStoreRules.nowMilliseconds() + 1000 }

    @Test(arguments: StoreFactory.all)
    func endpointsAreStoredChangedRotatedAndRemoved(_ factory: StoreFactory) throws {
        let store = try ContractHarness(factory)
        defer { store.close() }
        let id = try store.write { try $0.createWebhookEndpoint(Self.endpoint("https://a.example/hook", packIDs: [3, 4])) }
        let other = try store.write { try $0.createWebhookEndpoint(Self.endpoint("https://b.example/hook", events: ["pack.failed"])) }
        let read = try #require(try store.read { try $0.webhookEndpoint(id) })
        #expect(read.url == "https://a.example/hook" && read.subscription == WebhookSubscription(events: ["*"], packIDs: [3, 4]))
        #expect(read.enabled && read.secret == "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw" && read.description == "d")
        #expect(try store.read { try $0.webhookEndpoints() }.map(\.id) == [id, other])

        let changed = try #require(try store.write {
            try $0.updateWebhookEndpoint(id, WebhookEndpointChange(events: ["pack.removed"], packIDs: .some(nil), enabled: false), now: 5)
        })
        #expect(changed.subscription == WebhookSubscription(events: ["pack.removed"]) && !changed.enabled && changed.disabledReason == "manual")
        #expect(try store.read { try $0.webhookEndpoint(id) } == changed)
        let enabled = try #require(try store.write { try $0.updateWebhookEndpoint(id, WebhookEndpointChange(enabled: true), now: 6) })
        #expect(enabled.enabled && enabled.disabledReason == nil)
        #expect(try store.write { try $0.updateWebhookEndpoint(9999, WebhookEndpointChange(enabled: true), now: 6) } == nil)

        let rotated = try #require(try store.write { try $0.rotateWebhookSecret(id, secret: "whsec_bmV3", previousUntil: 100, now: 7) })
        #expect(rotated.secret == "whsec_bmV3" && rotated.previousSecret == "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
        #expect(rotated.signingSecrets(at: 99) == ["whsec_bmV3", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"])
        #expect(rotated.signingSecrets(at: 100) == ["whsec_bmV3"], "the old secret stops signing at its expiry")

        #expect(try store.write { try $0.deleteWebhookEndpoint(id) })
        #expect(try !store.write { try $0.deleteWebhookEndpoint(id) })
        #expect(try store.read { try $0.webhookEndpoints() }.map(\.id) == [other])
    }

    @Test(arguments: StoreFactory.all)
    func theOutboxIsWrittenWithTheChangeAndOnlyToEndpointsThatTakeIt(_ factory: StoreFactory) throws {
        let store = try ContractHarness(factory)
        defer { store.close() }
        let all = try store.write { try $0.createWebhookEndpoint(Self.endpoint("https://all.example/")) }
        let completedOnly = try store.write { try $0.createWebhookEndpoint(Self.endpoint("https://c.example/", events: ["pack.completed"])) }
        let otherPack = try store.write { try $0.createWebhookEndpoint(Self.endpoint("https://o.example/", packIDs: [987_654])) }
        let pack = try store.write { try $0.createPack(ContractRows.pack("p"), now: 1) }
        func types(_ endpoint: Int64) throws -> [WebhookEventType] {
            try store.read { try $0.webhookDeliveries(endpointID: endpoint, before: nil, limit: 100) }.map(\.type).reversed()
        }
        _ = try store.write { try $0.transition(pack, .start, now: 2) }
        #expect(try types(all).isEmpty, "starting is not announced")
        // Refused: nothing written.
        _ = try store.write { try $0.transition(pack, .invalidate, now: 3) }
        #expect(try types(all).isEmpty)
        _ = try store.inBatch { try $0.transition(pack, .finished(failedResources: 0), now: 4) }
        #expect(try types(all) == [.packCompleted] && types(completedOnly) == [.packCompleted] && types(otherPack).isEmpty)
        try store.write { try $0.setUpdateAvailable(pack, false, now: 5) }
        try store.write { try $0.setUpdateAvailable(pack, true, now: 6) }
        try store.write { try $0.setUpdateAvailable(pack, true, now: 7) }
        #expect(try types(all) == [.packCompleted, .packUpdateAvailable], "announced once, when it became available")
        _ = try store.write { try $0.appendEvent(id: nil, packID: pack, type: "version_created", json: #"{"pack_id":1,"version":2}"#, now: 8) }
        _ = try store.write { try $0.appendEvent(id: nil, packID: pack, type: "state", json: "{}", now: 8) }
        #expect(try types(all) == [.packCompleted, .packUpdateAvailable, .packVersionCreated], "mapped by the stored event type")
        _ = try store.write { try $0.transition(pack, .delete, now: 9) }
        #expect(try types(all) == [.packCompleted, .packUpdateAvailable, .packVersionCreated, .packRemoved])
        #expect(try types(completedOnly) == [.packCompleted])

        // The message of one change goes to every endpoint with one webhook-id; pack data is the
        // pack as the change's transaction saw it (for a removal: before its rows went).
        let claimed = try store.write {
            try $0.claimWebhookDeliveries(owner: "n1", now: Self.later, leaseUntil: Self.later + 60_000, limit: 100, perEndpoint: 100)
        }
        let completed = claimed.filter { $0.type == .packCompleted }
        #expect(completed.count == 2 && Set(completed.map(\.messageID)).count == 1)
        let first = try #require(completed.first)
        let snapshot = try #require(WebhookPackSnapshot.decode(first.data))
        #expect(snapshot.record.id == pack && snapshot.record.state == .complete && snapshot.record.name == "p")
        let removed = try #require(claimed.first { $0.type == .packRemoved })
        #expect(WebhookPackSnapshot.decode(removed.data)?.record.id == pack)
        let version = try #require(claimed.first { $0.type == .packVersionCreated })
        #expect(version.data == #"{"pack_id":1,"version":2}"# && version.packID == pack)
    }

    @Test(arguments: StoreFactory.all)
    func aRolledBackChangeLeavesNoDelivery(_ factory: StoreFactory) throws {
        let store = try ContractHarness(factory)
        defer { store.close() }
        let endpoint = try store.write { try $0.createWebhookEndpoint(Self.endpoint("https://all.example/")) }
        let pack = try store.write { try $0.createPack(ContractRows.pack("p"), now: 1) }
        _ = try store.write { try $0.transition(pack, .start, now: 2) }
        struct Abandoned: Error {}
        #expect(throws: Abandoned.self) {
            try store.inBatch { database in
                _ = try database.transition(pack, .finished(failedResources: 0), now: 3)
                throw Abandoned()
            }
        }
        #expect(try store.read { try $0.pack(pack) }?.state == .active)
        #expect(try store.read { try $0.webhookDeliveries(endpointID: endpoint, before: nil, limit: 10) }.isEmpty)
    }

    @Test(arguments: StoreFactory.all)
    func claimsLeaseDueDeliveriesWithinEachEndpointsCapAndAttemptsRecordWhatFollows(_ factory: StoreFactory) throws {
        let store = try ContractHarness(factory)
        defer { store.close() }
        let busy = try store.write { try $0.createWebhookEndpoint(Self.endpoint("https://busy.example/")) }
        let quiet = try store.write { try $0.createWebhookEndpoint(Self.endpoint("https://quiet.example/")) }
        let now = WebhookStoreRules.nowMilliseconds()
        for _ in 0..<6 { _ = try store.write { try $0.enqueueWebhookPing(endpointID: busy, data: "{}", now: now) } }
        let ping = try #require(try store.write { try $0.enqueueWebhookPing(endpointID: quiet, data: "{}", now: now + 1) })
        #expect(ping.state == .pending && ping.type == .webhookPing && ping.messageID.hasPrefix("msg_") && ping.attempts == 0)
        let status = try store.read { try $0.webhookQueueStatus(now: now + 5) }
        #expect(status.pending == 7 && status.oldestPendingCreatedAt == now && status.nextDueAt == now)

        let first = try store.write {
            try $0.claimWebhookDeliveries(owner: "n1", now: now + 5, leaseUntil: now + 60_000, limit: 10, perEndpoint: 2)
        }
        #expect(first.filter { $0.endpointID == busy }.count == 2, "two in flight per endpoint at most")
        #expect(first.filter { $0.endpointID == quiet }.map(\.deliveryID) == [ping.id], "the busy endpoint does not starve the quiet one")
        #expect(first.allSatisfy { $0.secrets == ["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"] && $0.attempts == 0 })
        let second = try store.write {
            try $0.claimWebhookDeliveries(owner: "n2", now: now + 6, leaseUntil: now + 60_000, limit: 10, perEndpoint: 2)
        }
        #expect(second.isEmpty, "the caps count every node's leases; leased rows are not claimed twice")
        // A dead node's lease expires: another claims it.
        let afterExpiry = try store.write {
            try $0.claimWebhookDeliveries(owner: "n2", now: now + 60_001, leaseUntil: now + 120_000, limit: 1, perEndpoint: 2)
        }
        #expect(afterExpiry.count == 1 && Set(first.map(\.deliveryID)).contains(afterExpiry[0].deliveryID))

        // Only the holder records; a success ends the endpoint's failing run.
        let held = afterExpiry[0]
        let attempt = WebhookAttemptRecord(at: now + 60_002, durationMilliseconds: 12, status: 500, error: nil, response: "oops")
        let stale = try store.write {
            try $0.recordWebhookAttempt(WebhookAttemptOutcome(deliveryID: held.deliveryID, attempt: attempt, next: .retry(at: now + 70_000)),
                                        owner: "n1", now: now + 60_002, disableAfter: 1_000_000)
        }
        #expect(!stale.recorded, "n1's lease passed to n2")
        let effect = try store.write {
            try $0.recordWebhookAttempt(WebhookAttemptOutcome(deliveryID: held.deliveryID, attempt: attempt, next: .retry(at: now + 70_000)),
                                        owner: "n2", now: now + 60_002, disableAfter: 1_000_000)
        }
        #expect(effect.recorded && effect.disabledEndpoint == nil)
        let retried = try #require(try store.read { try $0.webhookDelivery(held.deliveryID, endpointID: held.endpointID) })
        #expect(retried.state == .pending && retried.attempts == 1 && retried.lastStatus == 500 && retried.nextAttemptAt == now + 70_000)
        #expect(try store.read { try $0.webhookEndpoint(held.endpointID) }?.failingSince == now + 60_002)
        #expect(try store.read { try $0.webhookAttempts(deliveryID: held.deliveryID) }
            == [WebhookAttemptRecord(at: now + 60_002, durationMilliseconds: 12, status: 500, error: nil, response: "oops")])

        // A 410 disables the endpoint and tells the others.
        let again = try store.write {
            try $0.claimWebhookDeliveries(owner: "n2", now: now + 70_000, leaseUntil: now + 130_000, limit: 100, perEndpoint: 100)
        }
        let target = try #require(again.first { $0.deliveryID == held.deliveryID })
        let gone = try store.write {
            try $0.recordWebhookAttempt(WebhookAttemptOutcome(deliveryID: target.deliveryID, attempt: attempt, next: .gone), owner: "n2",
                                        now: now + 70_001, disableAfter: 1_000_000)
        }
        #expect(gone.disabledEndpoint == held.endpointID && gone.disabledReason == "gone")
        #expect(try store.read { try $0.webhookEndpoint(held.endpointID) }?.enabled == false)
        let notices = try store.read { try $0.webhookDeliveries(endpointID: held.endpointID == busy ? quiet : busy, before: nil, limit: 100) }
        #expect(notices.contains { $0.type == .webhookDisabled })

        // Retry makes a delivery due again; prune drops only old finished ones.
        let redo = try #require(try store.write {
            try $0.retryWebhookDelivery(target.deliveryID, endpointID: target.endpointID, retryUntil: now + 200_000, now: now + 80_000)
        })
        #expect(redo.state == .pending && redo.nextAttemptAt == now + 80_000)
        #expect(try store.write { try $0.pruneWebhookDeliveries(before: now - 1) } == 0)
    }
}
