import Foundation
import PackdTestSupport
import PostgresTestSupport
import Testing

/// `GET /v1/cluster` in both modes, and the database password nowhere a user or operator reads.
@Suite(.serialized) struct ClusterStatusTests {
    /// Two nodes list each other (id, listen address, units held) and count the units of the
    /// active pack while it downloads, none once it is suspended; the password of the `postgresql://` URL they were started
    /// with shows in no answer and no log line (debug level), and a node that cannot open its
    /// database names the database in its error without the password.
    @Test func nodesListEachOtherAndNeverShowThePassword() throws {
        let secret = "pw-\(UUID().uuidString)"
        // Slow tiles, two at a time in the whole cluster: the pack (about 400 tiles) stays active
        // for many seconds, until the test suspends it.
        let upstream = try TileServerUpstream(tileDelay: .milliseconds(50))
        let cluster = try ClusterProcesses(count: 2, arguments: ["--cluster-unit-tiles", "64", "--max-transfers-per-host", "2"],
                                           password: secret, logLevel: "debug")
        let addresses = Set(cluster.nodes.map { "127.0.0.1:\($0.port)" })
        let region: [String: Any] = ["style_url": upstream.styleURL, "bounds": [0, 0, 97.5, 60], "min_zoom": 0, "max_zoom": 6]
        let id = try cluster.createPack(on: cluster.nodes[0], region: region)

        var answers: [String] = []
        var seenWorking: [String: Any] = [:]
        #expect(eventually(within: 120) {
            guard let reply = try? cluster.nodes[1].send("GET", "/v1/cluster"), reply.status == 200 else { return false }
            answers.append(reply.body)
            let units = reply.json["units"] as? [String: Any] ?? [:]
            let held = (reply.json["nodes"] as? [[String: Any]] ?? []).compactMap { $0["units_held"] as? Int }
            if (units["leased"] as? Int ?? 0) > 0, held.reduce(0, +) > 0 { seenWorking = reply.json }
            return !seenWorking.isEmpty
        }, "\(answers.suffix(3))\n\(cluster.logs)")
        #expect(seenWorking["mode"] as? String == "postgresql")
        let units = try #require(seenWorking["units"] as? [String: Any])
        #expect((units["pending"] as? Int ?? 0) + (units["leased"] as? Int ?? 0) + (units["done"] as? Int ?? 0) > 1,
                "the pack was cut into units: \(units)")

        let suspended = try cluster.nodes[0].send("POST", "/v1/packs/\(id)/suspend")
        #expect(suspended.status == 200, "\(suspended.body)")
        #expect(eventually(within: 30) { (try? cluster.pack(id, on: cluster.nodes[1]))?["state"] as? String == "inactive" })
        for node in cluster.nodes {
            let reply = try node.send("GET", "/v1/cluster")
            #expect(reply.status == 200)
            answers.append(reply.body)
            let nodes = try #require(reply.json["nodes"] as? [[String: Any]])
            #expect(Set(nodes.compactMap { $0["listen"] as? String }) == addresses, "every node lists both: \(reply.body)")
            #expect(Set(nodes.compactMap { $0["id"] as? Int }).count == 2)
            // No pack is active now: no units to count.
            #expect(reply.json["units"] as? [String: Int] == ["pending": 0, "leased": 0, "done": 0], "\(reply.body)")
            answers.append(try node.send("GET", "/v1/packs/\(id)").body)
            answers.append(try node.send("GET", "/metrics").body)
        }

        // The password: in no answer, in no log line, in no error.
        for node in cluster.nodes { _ = node.stop() }
        let logs = cluster.nodes.map { String(decoding: $0.standardError + $0.standardOutput, as: UTF8.self) }
        #expect(logs.allSatisfy { $0.contains(cluster.database.description) }, "each node logs its database, without the password")
        #expect(!(answers + logs).contains { $0.contains(secret) }, "the password leaked")
        let missing = cluster.serveURL.replacingOccurrences(of: "/\(cluster.database.database ?? "")", with: "/no_such_database")
        let refused = try PackdCommand.run(["serve", "--listen", "127.0.0.1:0", "--database", missing])
        #expect(refused.status != 0)
        #expect(refused.stderr.contains("no_such_database"), "the error names the database: \(refused.stderr)")
        #expect(!(refused.stderr + refused.stdout).contains(secret), "the password leaked into the error: \(refused.stderr)")
    }

    /// Three nodes share a pack; `GET /v1/cluster` on any node, read again and again while it
    /// downloads, always adds up — the nodes' `units_held` sum to `units.leased`, the packs' counts
    /// to `units` — and at some moment shows every node holding units with transfers in flight,
    /// its heartbeat at most a few seconds old: who works, as it is.
    @Test func theStatusShowsWhoWorks() throws {
        let upstream = try TileServerUpstream(tileDelay: .milliseconds(20))
        let cluster = try ClusterProcesses(count: 3, arguments: ["--cluster-unit-tiles", "500"])
        var region = ClusterDownloadTests.region(upstream)
        region["max_zoom"] = 8
        let id = try cluster.createPack(on: cluster.nodes[0], region: region)
        var answers = 0
        var inconsistent: [String] = []
        var everyoneWorking: [String: Any]?
        var poll = 0
        #expect(eventually(within: 120) {
            let node = cluster.nodes[poll % 3]
            poll += 1
            guard let reply = try? node.send("GET", "/v1/cluster"), reply.status == 200 else { return false }
            answers += 1
            let json = reply.json
            let units = json["units"] as? [String: Int] ?? [:]
            let nodes = json["nodes"] as? [[String: Any]] ?? []
            let packs = json["packs"] as? [[String: Any]] ?? []
            let held = nodes.compactMap { $0["units_held"] as? Int }
            let perPack = packs.compactMap { $0["units"] as? [String: Int] }
            if held.reduce(0, +) != units["leased"] || ["pending", "leased", "done"].contains(where: { state in
                perPack.reduce(0) { $0 + ($1[state] ?? 0) } != units[state]
            }) {
                inconsistent.append(reply.body)
            }
            let heartbeats = nodes.compactMap { ($0["last_heartbeat_at"] as? String).flatMap(Self.date) }
            let now = Date()
            if nodes.count == 3, held.allSatisfy({ $0 >= 1 }), nodes.allSatisfy({ ($0["transfers_in_flight"] as? Int ?? 0) > 0 }),
               heartbeats.count == 3, heartbeats.allSatisfy({ now.timeIntervalSince($0) < TestTimeScale.scaled(seconds: 5) }),
               packs.compactMap({ $0["id"] as? Int }) == [Int(id)] {
                everyoneWorking = json
            }
            let state = (try? cluster.pack(id, on: node))?["state"] as? String
            return state == "complete" || state == "failed"
        }, "\(cluster.logs)")
        _ = try cluster.expectExact(id, upstream: upstream)
        print("GET /v1/cluster read \(answers) times during the pack; every node working in one answer: \(everyoneWorking.map { "\($0)" } ?? "never")")
        #expect(inconsistent.isEmpty, "answers that do not add up: \(inconsistent.prefix(3))")
        #expect(everyoneWorking != nil, "no answer showed all three nodes holding units with transfers in flight")
        #expect(answers > 10)
    }

    static func date(_ text: String) -> Date? {
        ISO8601DateFormatter().date(from: text)
    }

    /// SQLite mode answers one node: this process, holding no units.
    @Test func sqliteModeIsOneNode() throws {
        let server = try PackdServer()
        defer { server.remove() }
        let reply = try server.send("GET", "/v1/cluster")
        #expect(reply.status == 200)
        #expect(reply.json["mode"] as? String == "sqlite")
        let nodes = try #require(reply.json["nodes"] as? [[String: Any]])
        #expect(nodes.count == 1 && nodes.first?["listen"] as? String == "127.0.0.1:\(server.port)", "\(reply.body)")
        #expect(nodes.first?["units_held"] as? Int == 0)
        #expect(reply.json["units"] as? [String: Int] == ["pending": 0, "leased": 0, "done": 0])
    }
}
