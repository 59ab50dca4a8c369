import Foundation
import Glibc
import PackdTestSupport
import Testing

/// `packd serve` killed with SIGKILL at random moments while packs complete and their webhooks
/// go out, restarted on the same database each time: afterwards every pack that completed had
/// its `pack.completed` received, and every accepted ping its `webhook.ping` — at least once,
/// counted per `webhook-id` — and the duplicates are reported.
@Suite struct WebhookDurabilityTests {
    static let soak = ProcessInfo.processInfo.environment["PACKD_SOAK"] == "1"

    @Test func killedAtRandomMomentsEveryEventIsDeliveredAtLeastOnce() throws {
        let tiles = try TileServerUpstream()
        let receiver = try WebhookReceiver()
        defer { receiver.stop() }
        let server = try PackdServer()
        defer { server.kill(); server.remove() }
        let created = try server.send("POST", "/v1/webhooks", json: ["url": receiver.url, "events": ["*"]])
        #expect(created.status == 201, "\(created.body)")
        let endpoint = try #require(created.json["id"] as? Int)

        // About 45 s of packs completing every ~0.2 s and a kill every 0.5 to 3 s (soak: 5 min).
        let until = Date().addingTimeInterval(Self.soak ? 300 : 45)
        var nextKill = Date().addingTimeInterval(Double.random(in: 0.5...3))
        var kills = 0
        var acceptedPings: Set<String> = []
        var packs = 0
        while Date() < until {
            let region: [String: Any] = ["tiles": [tiles.tileTemplate], "bounds": [-180, -85, 180, 85], "min_zoom": 0, "max_zoom": 2]
            if (try? server.send("POST", "/v1/packs", json: ["region": region, "name": "p\(packs)", "start": true]))?.status == 201 {
                packs += 1
            }
            if packs % 4 == 0, let ping = try? server.send("POST", "/v1/webhooks/\(endpoint)/ping"), ping.status == 202,
               let id = ping.json["event_id"] as? String {
                acceptedPings.insert(id)
            }
            usleep(UInt32.random(in: 50_000...250_000))
            if Date() >= nextKill {
                server.kill()
                kills += 1
                try server.start()
                nextKill = Date().addingTimeInterval(Double.random(in: 0.5...3))
            }
        }
        #expect(kills >= 10 && packs >= 50, "\(kills) kills, \(packs) packs")

        // Every pack completes after the last restart, and every delivery goes out.
        var all: [[String: Any]] = []
        #expect(eventually(within: 120) {
            all = (try? server.allPacks()) ?? []
            return !all.isEmpty && all.allSatisfy { $0["state"] as? String == "complete" }
        }, "packs left unfinished: \(all.filter { $0["state"] as? String != "complete" }.count)")
        var rows: [[String: Any]] = []
        #expect(eventually(within: 120) {
            rows = (try? server.webhookDeliveries(endpoint)) ?? []
            return !rows.isEmpty && rows.allSatisfy { $0["state"] as? String == "delivered" }
        }, "deliveries not delivered: \(rows.filter { $0["state"] as? String != "delivered" }.count)")

        let received = receiver.deliveries
        let completedPacks = Set(received.filter { $0.type == "pack.completed" }.compactMap(\.packID))
        let lost = all.compactMap { $0["id"] as? Int }.filter { !completedPacks.contains($0) }
        #expect(lost.isEmpty, "packs complete in the database whose pack.completed never arrived: \(lost)")
        let receivedIDs = Set(received.map(\.webhookID))
        #expect(acceptedPings.subtracting(receivedIDs).isEmpty, "accepted pings never received")
        let rowIDs = Set(rows.compactMap { $0["event_id"] as? String })
        #expect(rowIDs.subtracting(receivedIDs).isEmpty, "delivered rows the receiver never got")
        let counts = receiver.countsByID
        let duplicates = counts.values.reduce(0) { $0 + max(0, $1 - 1) }
        print("webhook durability: \(kills) kills, \(all.count) packs complete, \(acceptedPings.count) pings accepted, "
              + "\(counts.count) webhook-ids received \(received.count) times: \(duplicates) duplicates "
              + "(\(counts.values.filter { $0 > 1 }.count) ids twice or more)")
    }
}
