import Foundation
import Packs
import Postgres
import PostgresStore
import PackdTestSupport
import PostgresTestSupport
import Testing
import WorkSharing

/// Node liveness, cluster-wide activation and event ordering against a real PostgreSQL.
@Suite struct ClusterCoordinationTests {
    let database: ClusterDatabase

    init() throws {
        database = try ClusterDatabase("coordination")
    }

    @Test func liveNodesAreThoseWithFreshHeartbeats() throws {
        let connection = try database.connect()
        let nodes = ClusterNodes(timing: LeaseTiming(lease: 30))
        let a = try nodes.register(name: "a", listenAddress: "127.0.0.1:8001", version: "1.0", on: connection)
        let b = try nodes.register(name: "b", listenAddress: "127.0.0.1:8002", version: "1.0", on: connection)
        let c = try nodes.register(name: "c", listenAddress: "127.0.0.1:8003", version: "1.0", on: connection)
        let beat = try nodes.heartbeat(node: a, transfersInFlight: 11, on: connection)
        #expect(beat.stillRegistered)
        #expect(beat.live.map(\.id) == [a, b, c])
        let first = try #require(beat.live.first)
        #expect(first.listenAddress == "127.0.0.1:8001" && first.transfersInFlight == 11 && first.transferShare == 0)
        #expect(first.heartbeatAt >= first.startedAt)

        // b went silent 31 s ago; c stopped cleanly.
        try connection.query("UPDATE packd_nodes SET heartbeat_at = now() - interval '31 seconds' WHERE id = $1", [.int8(b)])
        try nodes.stop(node: c, on: connection)
        #expect(try nodes.live(on: connection).map(\.id) == [a])
        #expect(try !nodes.heartbeat(node: c, transfersInFlight: 0, on: connection).stillRegistered)
        // b comes back: live again.
        #expect(try nodes.heartbeat(node: b, transfersInFlight: 0, on: connection).live.map(\.id) == [a, b])

        // Long-gone nodes holding nothing are forgotten; a node holding a unit is kept.
        let (pack, _) = try database.insertCutPack(zooms: [2], unitTiles: 100, on: connection)
        _ = try WorkUnitLeases(node: b).claim(pack: pack, limit: 1, on: connection)
        try connection.query("UPDATE packd_nodes SET heartbeat_at = now() - interval '2 days', stopped_at = NULL WHERE id <> $1",
                             [.int8(a)])
        #expect(try nodes.forget(olderThan: 86_400, on: connection) == 1)
        #expect(try connection.query("SELECT id FROM packd_nodes ORDER BY id").map { try $0.int64(0) } == [a, b])
    }

    /// A clean stop gives the node's units back at once.
    @Test func stoppingReleasesUnits() throws {
        let connection = try database.connect()
        let (pack, _) = try database.insertCutPack(zooms: [7], unitTiles: 20, on: connection)
        let nodes = ClusterNodes()
        let node = try database.registerNode("leaving", on: connection)
        let held = try WorkUnitLeases(node: node).claim(pack: pack, limit: 5, on: connection)
        #expect(held.count == 5)
        try nodes.stop(node: node, on: connection)
        let other = WorkUnitLeases(node: try database.registerNode("staying", on: connection))
        #expect(try other.claim(pack: pack, limit: 5, on: connection).map(\.unit.ordinal) == held.map(\.unit.ordinal))
    }

    /// Parts of the per-host cap through the node table: a lone node takes it all; a newcomer
    /// takes nothing the others still hold, and what they publish as released as soon as they
    /// do; a node that stops gives its part back. Joining, publishing and stopping notify.
    @Test func partsMoveThroughTheNodeTable() throws {
        let connection = try database.connect()
        let listener = try database.connect("listener")
        try listener.listen(ShareChannel.name)
        let nodes = ClusterNodes(timing: LeaseTiming(lease: 30))
        let a = try nodes.register(name: "a", listenAddress: "-", version: "1", on: connection)
        #expect(try nodes.decideShare(node: a, allowance: 16, on: connection) == .grow(16))
        let b = try nodes.register(name: "b", listenAddress: "-", version: "1", on: connection)
        #expect(try nodes.decideShare(node: b, allowance: 16, on: connection) == .keep(0))
        #expect(try nodes.decideShare(node: a, allowance: 16, on: connection) == .shrink(8))
        #expect(try nodes.live(on: connection).map(\.transferShare) == [16, 0], "a shrink is published only once drained")
        try nodes.publishShare(node: a, part: 8, on: connection)
        #expect(try nodes.decideShare(node: b, allowance: 16, on: connection) == .grow(8))
        #expect(try nodes.live(on: connection).map(\.transferShare) == [8, 8])
        try nodes.stop(node: a, on: connection)
        #expect(try nodes.decideShare(node: b, allowance: 16, on: connection) == .grow(16))
        var heard: [String] = []
        #expect(eventually(within: 30) {
            heard += ((try? listener.waitForNotifications(timeout: .milliseconds(100))) ?? []).map(\.payload)
            return heard.count >= 4
        })
        #expect(heard == [String(a), String(b), String(a), String(a)], "a and b joined, a published, a stopped")
    }

    /// A node silent for two heartbeats whose session PostgreSQL no longer has (its process died
    /// and closed its connections) keeps its place in the split but frees its part; one that is
    /// silent and whose session is still there (frozen, slow) keeps its part until it must have
    /// fenced itself; back from a fence, a node grows afresh, like a newcomer.
    @Test func aDeadNodesPartIsFreeAndAFencedNodeStartsAfresh() throws {
        let connection = try database.connect()
        let nodes = ClusterNodes(timing: LeaseTiming(lease: 4))  // a heartbeat a second, fenced after 2 s
        let old = try nodes.register(name: "old", listenAddress: "-", version: "1", on: connection)
        #expect(try nodes.decideShare(node: old, allowance: 16, on: connection) == .grow(16))
        var session: PostgresConnection? = try database.connect("old-session")
        _ = try nodes.heartbeat(node: old, transfersInFlight: 16, on: session!)
        let pid = session!.backendProcessID
        let new = try nodes.register(name: "new", listenAddress: "-", version: "1", on: connection)
        func silent(_ node: Int64, for seconds: Double) throws {
            try connection.query("UPDATE packd_nodes SET heartbeat_at = now() - make_interval(secs => $2) WHERE id = $1",
                                 [.int8(node), .float8(seconds)])
        }
        // Silent 2.5 s, its session alive (frozen?): it may still be transferring.
        try silent(old, for: 2.5)
        #expect(try nodes.decideShare(node: new, allowance: 16, on: connection) == .keep(0))
        // Its process died: the session is gone, its part is free, its place in the split stays.
        session = nil
        #expect(eventually(within: 30) {
            (try? connection.scalarInt("SELECT count(*) FROM pg_stat_activity WHERE pid = $1", [.int8(Int64(pid))])) == 0
        })
        #expect(try nodes.decideShare(node: new, allowance: 16, on: connection) == .grow(8))
        // Silent past fencing (2 s and a heartbeat): no longer a member at all.
        try silent(old, for: 3.5)
        #expect(try nodes.decideShare(node: new, allowance: 16, on: connection) == .grow(16))
        // It renews again (it had fenced: stopped everything): it starts from nothing.
        _ = try nodes.heartbeat(node: old, transfersInFlight: 0, on: connection)
        #expect(try nodes.decideShare(node: old, allowance: 16, afresh: true, on: connection) == .keep(0))
        #expect(try nodes.decideShare(node: new, allowance: 16, on: connection) == .shrink(8))
        try nodes.publishShare(node: new, part: 8, on: connection)
        #expect(try nodes.decideShare(node: old, allowance: 16, on: connection) == .grow(8))
    }

    /// Nodes deciding at once, joining, publishing: the published parts of the live nodes never
    /// sum past the cap (checked by a watcher throughout), and they end at the fair parts.
    @Test func concurrentDecisionsNeverExceedTheCap() throws {
        let cap = 13
        let nodes = ClusterNodes(timing: LeaseTiming(lease: 30))
        let watcher = try database.connect("watcher")
        let stop = StopFlag()
        let highest = Collected<Int64>()
        let watching = Thread {
            while !stop.isSet {
                if let sum = try? nodes.live(on: watcher).reduce(0, { $0 + $1.transferShare }) { highest.append(Int64(sum)) }
            }
        }
        watching.start()
        let ids = Collected<Int64>()
        try concurrently(5) { index in
            let own = try database.connect("node-\(index)")
            let node = try nodes.register(name: "n\(index)", listenAddress: "-", version: "1", on: own)
            ids.append(node)
            for _ in 0..<40 {
                if case .shrink(let part) = try nodes.decideShare(node: node, allowance: cap, on: own) {
                    try nodes.publishShare(node: node, part: part, on: own)
                }
            }
        }
        stop.set()
        // Settle: each node acts once more.
        let connection = try database.connect()
        for node in ids.all {
            if case .shrink(let part) = try nodes.decideShare(node: node, allowance: cap, on: connection) {
                try nodes.publishShare(node: node, part: part, on: connection)
            }
        }
        for node in ids.all { _ = try nodes.decideShare(node: node, allowance: cap, on: connection) }
        #expect(highest.all.allSatisfy { $0 <= Int64(cap) }, "the published parts once summed to \(highest.all.max() ?? 0)")
        let parts = try nodes.live(on: connection).map(\.transferShare)
        #expect(parts == [3, 3, 3, 2, 2], "\(parts)")
    }

    /// `--max-active-packs` holds for the cluster: four nodes activating at once activate no
    /// more packs than the limit.
    @Test func activationHoldsTheLimitClusterWide() throws {
        let connection = try database.connect()
        let packs = try (0..<10).map { try database.insertPack("p\($0)", state: PackState.queued.rawValue, on: connection) }
        let activated = Collected<Int64>()
        try concurrently(4) { index in
            let own = try database.connect("activator-\(index)")
            activated.append(contentsOf: try PackActivation.activate(limit: 3, now: 1, on: own))
        }
        #expect(activated.all.sorted() == Array(packs.prefix(3)))
        #expect(try connection.scalarInt("SELECT count(*) FROM packd_packs WHERE state = $1", [.text(PackState.active.rawValue)]) == 3)
        #expect(try PackActivation.activate(limit: 3, now: 2, on: connection).isEmpty)
        try connection.query("UPDATE packd_packs SET state = $2 WHERE region_id = $1",
                             [.int8(packs[1]), .text(PackState.complete.rawValue)])
        #expect(try PackActivation.activate(limit: 3, now: 3, on: connection) == [packs[3]])
        #expect(try connection.scalarInt("SELECT updated_at FROM packd_packs WHERE region_id = $1", [.int8(packs[3])]) == 3)
    }

    /// Event ids follow commit order: a transaction that appended first but commits last holds
    /// the others back, so a reader that has seen id n never later finds a smaller one.
    @Test func eventIDsFollowCommitOrder() throws {
        let slow = try database.connect("slow")
        let fast = try database.connect("fast")
        let watcher = try database.connect("watcher")
        try slow.execute("BEGIN")
        let slowIDs = try ClusterEvents.append([(pack: nil, type: "state", data: "{\"n\":1}")], at: 1, on: slow)
        let fastDone = DispatchSemaphore(value: 0)
        let fastIDs = Collected<Int64>()
        Thread {
            fastIDs.append(contentsOf: (try? ClusterEvents.append([(pack: nil, type: "state", data: "{\"n\":2}")], at: 2, on: fast)) ?? [])
            fastDone.signal()
        }.start()
        // The second append waits on the events lock (seen in pg_locks), not on time.
        #expect(eventually {
            (try? watcher.scalarInt("""
                SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND objid = 2
                  AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
                """)) == 1
        })
        #expect(try ClusterEvents.events(after: 0, limit: 10, on: watcher).isEmpty)
        try slow.execute("COMMIT")
        fastDone.wait()
        #expect(fastIDs.all.count == 1 && fastIDs.all[0] > slowIDs[0])
        #expect(try ClusterEvents.events(after: 0, limit: 10, on: watcher).map(\.id) == slowIDs + fastIDs.all)
    }

    /// Under concurrent appends a reader polling "after the last id I saw" misses nothing.
    @Test func aPollingReaderMissesNoEvent() throws {
        let writers = 4, appends = 60
        let seen = Collected<Int64>()
        let done = DispatchSemaphore(value: 0)
        let finished = FirstError()
        Thread {
            do {
                let reader = try database.connect("reader")
                var last: Int64 = 0
                var count = 0
                let deadline = Date().addingTimeInterval(120)
                while count < writers * appends * 2, Date() < deadline {
                    let events = try ClusterEvents.events(after: last, limit: 100, on: reader)
                    seen.append(contentsOf: events.map(\.id))
                    count += events.count
                    last = events.last?.id ?? last
                }
            } catch {
                finished.record(error)
            }
            done.signal()
        }.start()
        let appended = Collected<Int64>()
        try concurrently(writers) { index in
            let connection = try database.connect("writer-\(index)")
            for round in 0..<appends {
                let ids = try connection.transaction {
                    // Work of varying length before the append, as a batch commit has.
                    try connection.query("SELECT count(*) FROM generate_series(1, 2000 * ($1::int8 % 3))", [.int8(Int64(round))])
                    return try ClusterEvents.append([(pack: Int64(index), type: "progress", data: "{}"),
                                                     (pack: Int64(index), type: "state", data: "{}")], at: 0, on: connection)
                }
                appended.append(contentsOf: ids)
            }
        }
        done.wait()
        #expect(finished.error == nil)
        #expect(seen.all == appended.all.sorted())
        #expect(seen.all.count == writers * appends * 2)
    }

    /// Each append notifies every listening node with its highest id, at commit.
    @Test func appendsNotifyListeners() throws {
        let listener = try database.connect("listener")
        try listener.listen(EventChannel.name)
        let writer = try database.connect("writer")
        let ids = try writer.transaction {
            try ClusterEvents.append([(pack: 1, type: "state", data: "{}"), (pack: 1, type: "progress", data: "{}")], at: 5,
                                     on: writer)
        }
        var notifications: [PostgresNotification] = []
        #expect(eventually(within: 30) {
            notifications += (try? listener.waitForNotifications(timeout: .milliseconds(200))) ?? []
            return !notifications.isEmpty
        })
        #expect(notifications.map(\.payload) == [String(ids.last!)])
        let events = try ClusterEvents.events(after: ids[0] - 1, pack: 1, limit: 10, on: listener)
        #expect(events.map(\.type) == ["state", "progress"])
        #expect(events.allSatisfy { $0.createdAt == 5 && $0.pack == 1 })
    }
}
