import Foundation
import Glibc
import PackdTestSupport
import Postgres
import PostgresTestSupport
import Testing

/// Two `packd serve` nodes on one PostgreSQL: 200 events, each delivered exactly once (the
/// receiver counts per `webhook-id`) and never attempted by two nodes at once, both nodes
/// sending; then a node killed in the middle of an attempt, which the other node makes after
/// the lease.
@Suite struct WebhookClusterTests {
    /// A node's `packd_webhook_attempts_total{answer="2xx"}`.
    private static func successfulAttempts(_ node: PackdServer) -> Int {
        guard let text = try? node.send("GET", "/metrics").body else { return 0 }
        for line in text.split(separator: "\n") where line.hasPrefix("packd_webhook_attempts_total{answer=\"2xx\"}") {
            return Int(Double(line.split(separator: " ").last ?? "") ?? 0)
        }
        return 0
    }

    @Test func twoNodesDeliverTwoHundredEventsEachOnceNeverTwoAtOnce() throws {
        let database = try TemporaryPostgres.shared().makeDatabase(prefix: "webhooks_cluster")
        defer { try? TemporaryPostgres.shared().dropDatabase(database) }
        let receiver = try WebhookReceiver(delay: .milliseconds(20))
        defer { receiver.stop() }
        let nodes = try (0..<2).map { _ in
            try PackdServer(arguments: ["--cluster-lease", "4s"], capturesOutput: true, database: database.description)
        }
        defer { for node in nodes { node.kill(); node.remove() } }
        let created = try nodes[0].send("POST", "/v1/webhooks", json: ["url": receiver.url, "events": ["*"]])
        #expect(created.status == 201, "\(created.body)")
        let endpoint = try #require(created.json["id"] as? Int)

        // 200 events, written half on each node.
        var expected: Set<String> = []
        for index in 0..<200 {
            let ping = try nodes[index % 2].send("POST", "/v1/webhooks/\(endpoint)/ping")
            #expect(ping.status == 202)
            if let id = ping.json["event_id"] as? String { expected.insert(id) }
        }
        #expect(expected.count == 200)
        #expect(eventually(within: 120) { Set(receiver.countsByID.keys).isSuperset(of: expected) },
                "received \(receiver.countsByID.count) of 200")
        #expect(eventually { nodes.map(Self.successfulAttempts).reduce(0, +) == 200 })
        let counts = receiver.countsByID
        #expect(counts.values.allSatisfy { $0 == 1 }, "an event delivered twice: \(counts.filter { $0.value > 1 })")
        #expect(receiver.atOnce == 1, "two attempts of one event were answered at once")
        let perNode = nodes.map(Self.successfulAttempts)
        #expect(perNode.allSatisfy { $0 > 0 }, "both nodes send: \(perNode)")
        let rows = try nodes[1].webhookDeliveries(endpoint)
        #expect(rows.count == 200 && rows.allSatisfy { $0["state"] as? String == "delivered" && $0["attempts"] as? Int == 1 })
        print("webhook cluster: 200 events, attempts per node \(perNode), each delivered once")
    }

    @Test func aNodeKilledMidAttemptLeavesItToTheOtherAfterTheLease() throws {
        let database = try TemporaryPostgres.shared().makeDatabase(prefix: "webhooks_failover")
        defer { try? TemporaryPostgres.shared().dropDatabase(database) }
        let slow = try WebhookReceiver(delay: .seconds(3))
        defer { slow.stop() }
        // At info level every attempt is logged: the secret must be in none of the lines.
        let nodes = try (0..<2).map { _ in
            try PackdServer(arguments: ["--cluster-lease", "4s", "--log-format", "json"], logLevel: "info", capturesOutput: true,
                            database: database.description)
        }
        defer { for node in nodes { node.kill(); node.remove() } }
        let created = try nodes[0].send("POST", "/v1/webhooks", json: ["url": slow.url, "events": ["*"]])
        let endpoint = try #require(created.json["id"] as? Int)
        let secret = try #require(created.json["secret"] as? String)
        let ping = try nodes[0].send("POST", "/v1/webhooks/\(endpoint)/ping")
        let deliveryID = try #require(ping.json["id"] as? Int)

        // Which node holds the attempt: its lease names the process.
        let connection = try PostgresConnection(url: database, applicationName: "webhooks-test")
        try connection.execute("SET search_path TO packd, pg_catalog")
        var owner = ""
        #expect(eventually {
            owner = (try? connection.scalarString("SELECT lease_owner FROM packd_webhook_deliveries WHERE id = $1",
                                                  [.int8(Int64(deliveryID))])) ?? nil ?? ""
            return !owner.isEmpty
        })
        let holder = try #require(nodes.firstIndex { owner.contains("/\($0.pid)/") })
        let killedAt = ContinuousClock.now
        nodes[holder].kill()
        let survivor = nodes[1 - holder]
        var row: [String: Any] = [:]
        #expect(eventually(within: 90) {
            row = (try? survivor.send("GET", "/v1/webhooks/\(endpoint)/deliveries/\(deliveryID)").json) ?? [:]
            return row["state"] as? String == "delivered"
        }, "\(row)")
        let waited = killedAt.duration(to: .now)
        // The attempt was taken over only once the dead node's lease (15 s: the timeout and a margin) ran out.
        #expect(waited >= .seconds(10), "\(waited)")
        #expect(row["attempts"] as? Int == 1, "the killed node's attempt was never recorded; the survivor's was")
        let counts = slow.countsByID
        #expect(counts.count == 1 && (counts.values.first ?? 0) >= 1)
        #expect(slow.atOnce == 1, "the survivor's attempt began after the dead node's had ended")
        // The attempt's line is written once its record committed, which is also when the row
        // reads as delivered: the test may look before the line is there.
        var logs = ""
        #expect(eventually {
            logs = nodes.map { String(decoding: $0.standardOutput + $0.standardError, as: UTF8.self) }.joined()
            return logs.contains("webhook attempt")
        }, "the attempts were logged")
        #expect(!logs.contains(secret) && !logs.contains(String(secret.dropFirst(6))), "the secret is in no log line")
    }
}
