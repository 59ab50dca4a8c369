import Foundation
import Glibc
import PackdTestSupport
import Postgres
import PostgresTestSupport
import Testing

/// The faults a cluster meets, with claims cut at claim time: a node killed (SIGKILL: no
/// shutdown, no release), PostgreSQL itself restarted as after a crash, a node frozen (SIGSTOP)
/// past its lease and thawed. Every pack completes with exact counts and every body stored; no
/// tile is fetched twice except those a node that stopped had in flight. Each test prints the
/// tiles requested twice.
@Suite(.serialized) struct ClusterFailoverTests {
    /// `make soak` (PACKD_SOAK=1) restarts PostgreSQL under a download 20 times in a row.
    static let soak = ProcessInfo.processInfo.environment["PACKD_SOAK"] == "1"

    @Test func killedNodesUnitsAreFinishedByTheOthers() throws {
        let upstream = try TileServerUpstream()
        let cluster = try ClusterProcesses(count: 3, arguments: ["--cluster-unit-tiles", "1000"])
        let database = try cluster.connect()
        let id = try cluster.createPack(on: cluster.nodes[0], region: ClusterDownloadTests.region(upstream))
        var killed: [(node: Int, units: Int64, unitTiles: Int64)] = []
        // Two random moments: once a quarter or so is stored, once more than half.
        for share in [Double.random(in: 0.15...0.35), Double.random(in: 0.5...0.7)] {
            let watcher = cluster.nodes[killed.last?.node == 0 ? 1 : 0]
            #expect(cluster.waitForShare(share, of: id, on: watcher), "\(cluster.logs)")
            // A node working on units at that moment, chosen at random.
            let held = try cluster.unitsHeld(on: database)
            let victim = held.filter { $0.value.units > 0 }.keys.randomElement() ?? Int.random(in: 0..<cluster.nodes.count)
            cluster.nodes[victim].kill()
            killed.append((victim, held[victim]?.units ?? 0, held[victim]?.tiles ?? 0))
            // It comes back as a new node (the old one's units wait for their lease to expire).
            try cluster.nodes[victim].start()
        }
        let (expected, duplicates) = try cluster.expectExact(id, upstream: upstream)
        let inFlight = killed.reduce(0) { $0 + $1.unitTiles }
        print("kill -9: \(killed.map { "node \($0.node) holding \($0.units) units (\($0.unitTiles) tiles)" }); "
              + "\(duplicates) of \(expected) tiles requested twice (\(String(format: "%.2f", 100 * Double(duplicates) / Double(expected))) %)")
        #expect(Int64(duplicates) <= inFlight, "only tiles of the units the killed nodes held were fetched again")
    }

    /// PostgreSQL stops as in a crash and comes back (durable, as in production: its crash
    /// recovery takes seconds) while three nodes download: the writers retry their batches until
    /// it is back, coordination and listening reconnect, and the pack completes exactly. With
    /// the default 30 s lease no node needs to fence itself for a restart of a few seconds, so
    /// nothing is fetched twice; had one fenced, only tiles of the units under way could be.
    @Test(arguments: 1...(Self.soak ? 20 : 1)) func postgresRestartedMidPack(run: Int) throws {
        let server = try TemporaryPostgres.start(.init(durable: true))
        defer { server.stop() }
        let upstream = try TileServerUpstream()
        let cluster = try ClusterProcesses(count: 3, arguments: ["--cluster-unit-tiles", "1000"], lease: "30s", server: server)
        let database = try cluster.connect()
        let id = try cluster.createPack(on: cluster.nodes[0], region: ClusterDownloadTests.region(upstream))
        #expect(cluster.waitForShare(0.3, of: id, on: cluster.nodes[1]), "\(cluster.logs)")
        let underWay = try cluster.unitsHeld(on: database).values.reduce(0) { $0 + $1.tiles }
        let restarted = ContinuousClock.now
        try server.restart()
        let down = ContinuousClock.now - restarted
        let (expected, duplicates) = try cluster.expectExact(id, upstream: upstream)
        let fenced = cluster.fencedNodes
        print("run \(run): PostgreSQL restarted (down \(down)): \(duplicates) of \(expected) tiles requested twice; \(fenced) node(s) fenced; "
              + "\(underWay) tiles in units under way")
        #expect(fenced > 0 || duplicates == 0, "no node stopped, so no tile is fetched twice\n\(cluster.logs)")
        #expect(Int64(duplicates) <= underWay, "only tiles of units under way at the restart")
    }

    /// Every PostgreSQL session of the nodes is ended, again and again, while three nodes
    /// download (what a restart does to every connection, without the wait): idle connections
    /// kept in the nodes' pools are found broken only when next used. Nothing is fetched twice
    /// and no node fences itself (no renewal is missed for long).
    @Test func sessionsEndedAgainAndAgainMidPack() throws {
        let upstream = try TileServerUpstream()
        let cluster = try ClusterProcesses(count: 3, arguments: ["--cluster-unit-tiles", "1000"], lease: "30s")
        let id = try cluster.createPack(on: cluster.nodes[0], region: ClusterDownloadTests.region(upstream))
        #expect(cluster.waitForShare(0.1, of: id, on: cluster.nodes[1]), "\(cluster.logs)")
        let admin = try cluster.connect()
        var (rounds, ended) = (0, Int64(0))
        while rounds < 400, !["complete", "failed"].contains((try? cluster.pack(id, on: cluster.nodes[0]))?["state"] as? String ?? "") {
            ended += try admin.scalarInt("""
                SELECT count(*)::int8 FROM pg_stat_activity a, LATERAL pg_terminate_backend(a.pid) ended
                WHERE a.datname = current_database() AND a.application_name LIKE 'packd-%' AND a.pid <> pg_backend_pid() AND ended
                """) ?? 0
            rounds += 1
            usleep(300_000)
        }
        let (expected, duplicates) = try cluster.expectExact(id, upstream: upstream)
        let fenced = cluster.fencedNodes
        print("sessions ended \(rounds) times (\(ended) sessions): \(duplicates) of \(expected) tiles requested twice; \(fenced) node(s) fenced")
        #expect(duplicates == 0, "\(cluster.logs)")
        #expect(fenced == 0, "\(cluster.logs)")
    }

    /// A node frozen while it holds units, past its lease: the others take its units over and
    /// finish them; thawed, it stops what it was doing (fenced), renews, and works again. What it
    /// had in flight when it froze is all that is fetched twice.
    @Test func aFrozenNodeThawedPastItsLease() throws {
        let upstream = try TileServerUpstream()
        let cluster = try ClusterProcesses(count: 3, arguments: ["--cluster-unit-tiles", "1000"], logLevel: "notice")
        let database = try cluster.connect()
        let id = try cluster.createPack(on: cluster.nodes[0], region: ClusterDownloadTests.region(upstream))
        #expect(cluster.waitForShare(0.25, of: id, on: cluster.nodes[0]), "\(cluster.logs)")
        let working = try cluster.unitsHeld(on: database)
        let frozen = working.filter { $0.value.units > 0 && $0.key != 0 }.keys.min() ?? 1
        let node = cluster.nodes[frozen]
        let address = "127.0.0.1:\(node.port)"
        #expect(kill(node.pid, SIGSTOP) == 0)
        // What it holds as it froze (a claim it had not committed is not its).
        let held = try cluster.unitsHeld(on: database)
        // Frozen past its lease by the database's clock — its last heartbeat (and so its last
        // renewal) a lease ago, so every lease it held ran out — and until no unit is leased to it.
        // (A node that held no unit as it froze, having just finished one, is frozen as long: the
        // wait is for the lease, not for its units.)
        #expect(eventually(within: 60) {
            (try? database.scalarInt("""
                SELECT count(*)::int8 FROM packd_nodes n
                WHERE n.listen_address = $1 AND (n.heartbeat_at >= now() - make_interval(secs => $2)
                  OR EXISTS (SELECT 1 FROM packd_work_units u WHERE u.lease_owner = n.id AND u.state = 'leased'
                               AND u.lease_expires_at >= now()))
                """, [.text(address), .float8(ClusterProcesses.defaultLeaseSeconds)])) == 0
        })
        let thawedAt = ContinuousClock.now
        #expect(kill(node.pid, SIGCONT) == 0)
        // Thawed, it works again: live and holding units of the pack (or the pack is done).
        var workedAgain = false
        #expect(eventually(within: 60) {
            usleep(20_000)
            let status = try? node.send("GET", "/v1/cluster").json
            let mine = (status?["nodes"] as? [[String: Any]])?.first { $0["listen"] as? String == address }
            workedAgain = (mine?["units_held"] as? Int ?? 0) > 0
            return workedAgain || (try? cluster.pack(id, on: node))?["state"] as? String == "complete"
        }, "\(cluster.logs)")
        let (expected, duplicates) = try cluster.expectExact(id, upstream: upstream)
        let log = String(decoding: node.standardError, as: UTF8.self)
        print("frozen node \(frozen) (held \(held[frozen]?.units ?? 0) units, \(held[frozen]?.tiles ?? 0) tiles), thawed after the lease, "
              + "works again: \(workedAgain) (\(ContinuousClock.now - thawedAt)); \(duplicates) of \(expected) tiles requested twice")
        #expect(log.contains("stops its units"), "thawed, it fenced itself first: \(log.suffix(2000))")
        #expect(Int64(duplicates) <= held[frozen]?.tiles ?? 0, "only tiles of the frozen node's units were fetched again")
    }
}
