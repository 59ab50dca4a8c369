import Artifacts
import Foundation
import Packs
import PackdTestSupport
import Postgres
import Store
import Testing

/// Three real `packd serve` processes on one real PostgreSQL share one pack's download.
@Suite(.serialized) struct ClusterDownloadTests {
    /// About 20,000 tiles: z0–9 over a box of 97.5° × 60°.
    static func region(_ upstream: TileServerUpstream) -> [String: Any] {
        ["style_url": upstream.styleURL, "bounds": [0, 0, 97.5, 60], "min_zoom": 0, "max_zoom": 9]
    }

    /// Every node stores some of the pack; it completes with exact counts, every body as the
    /// upstream served it, every node's export the same file; a stream on node B carries every
    /// event any node committed, in the log's order, the state changes within a second; a
    /// stream resumed on node C with `Last-Event-ID` replays exactly what was missed. Its start
    /// area, near the region's south edge (the last units by ordinal), is claimed first: ready
    /// once, long before the pack is done.
    @Test func threeNodesShareOnePack() throws {
        let upstream = try TileServerUpstream()
        let cluster = try ClusterProcesses(count: 3, arguments: ["--cluster-unit-tiles", "1000"])
        let (a, b, c) = (cluster.nodes[0], cluster.nodes[1], cluster.nodes[2])
        let lastToRead = LastEventID()
        let everything = EventRecorder(try b.events("/v1/events")) { event in (event.id ?? 0) >= lastToRead.value }
        let resumed = try b.events("/v1/events")
        let started = ContinuousClock.now
        let id = try cluster.createPack(on: a, region: Self.region(upstream),
                                        extra: ["start_area": ["center": [48.75, 3.0], "radius_m": 100_000]])
        // The first progress event B's second stream sees; that stream then drops.
        var lastSeen: Int64?
        while let event = try resumed.nextEvent() {
            if event.type == "progress", event.data.contains(#""completed_tiles":"#), !event.data.contains(#""completed_tiles":0,"#) {
                lastSeen = event.id
                break
            }
        }
        let missedAfter = try #require(lastSeen)
        var activeSeenOnA: ContinuousClock.Instant?
        var completeSeenOnA: ContinuousClock.Instant?
        #expect(eventually(within: 240) {
            let state = (try? cluster.pack(id, on: a))?["state"] as? String
            if state == "active", activeSeenOnA == nil { activeSeenOnA = .now }
            if state == "complete" || state == "failed" { completeSeenOnA = .now }
            return completeSeenOnA != nil
        }, "\(cluster.logs)")
        let elapsed = ContinuousClock.now - started
        let pack = try cluster.pack(id, on: c)
        try #require(pack["state"] as? String == "complete", "\(pack)\n\(cluster.logs)")

        // Counts exact: the plan's count, the maintained counters, the link table and the
        // upstream's distinct paths agree.
        let progress = try #require(pack["progress"] as? [String: Any])
        // The style and the TileJSON, then tiles.
        let expected = try #require(progress["expected_resources"] as? Int) - 2
        #expect((19_000...21_000).contains(expected) && progress["expected_is_precise"] as? Bool == true)
        #expect(progress["completed_tiles"] as? Int == expected)
        #expect(progress["completed_resources"] as? Int == expected + 2)
        #expect(progress["failed_resources"] as? Int == 0)
        let database = try cluster.connect()
        #expect(try database.scalarInt("SELECT count(*)::int8 FROM region_tiles WHERE region_id = $1", [.int8(id)]) == Int64(expected))
        #expect(try database.scalarInt("SELECT sum(linked_tiles)::int8 FROM packd_totals") == Int64(expected))
        let requested = upstream.tileRequests
        #expect(requested.count == expected, "every tile fetched")

        // Every node stored some of it.
        let split = cluster.downloadedPerNode()
        print(cluster.logs)
        print("cluster split of \(expected) tiles over 3 nodes: \(split) downloaded; \(requested.values.reduce(0, +) - requested.count) "
              + "tiles requested twice; \(elapsed)")
        #expect(split.allSatisfy { $0 > 0 }, "every node downloaded some: \(split)")

        // Exports from each node are one file (each node builds its own artifact, byte-identical:
        // one ETag, the SHA-256 of those bytes); every body is what the upstream served.
        var etags: [String?] = []
        let exports = try cluster.nodes.map { node -> [UInt8] in
            let reply = try BinaryExchange.send(port: node.port, "GET", "/v1/packs/\(id)/versions/1/export?format=maplibre")
            try #require(reply.status == 200)
            etags.append(reply.header("ETag"))
            return reply.body
        }
        #expect(exports[0] == exports[1] && exports[1] == exports[2], "every node exports the same bytes")
        #expect(Set(etags).count == 1 && etags[0] == "\"\(Digest.hex(Digest.sha256(exports[0])))\"", "\(etags)")
        let path = NSTemporaryDirectory() + "cluster-export-\(UUID().uuidString).db"
        defer { try? FileManager.default.removeItem(atPath: path) }
        try Data(exports[0]).write(to: URL(fileURLWithPath: path))
        let export = try Database(path: path, mode: .readOnly)
        var checked = 0
        var mismatched: [String] = []
        try export.makeStatement("SELECT z, x, y, data, compressed FROM tiles").forEachRow { row in
            let target = "/tiles/\(row.int64(at: 0))/\(row.int64(at: 1))/\(row.int64(at: 2)).pbf"
            let stored = StoredBody(data: row.blob(at: 3) ?? [], compressed: row.int64(at: 4) != 0)
            if try stored.decoded() != TileServerUpstream.tileBody(target) { mismatched.append(target) }
            checked += 1
        }
        #expect(checked == expected && mismatched.isEmpty, "\(mismatched.prefix(5))")

        // B's stream carried every event of the log, in order; the state changes within a second.
        // (Progress committed before `complete` may be logged just after it: B reads to the
        // log's last event as of now.)
        lastToRead.value = try database.scalarInt("SELECT max(id) FROM packd_events") ?? 0
        #expect(eventually(within: 30) { everything.events.last.map { ($0.event.id ?? 0) >= lastToRead.value } ?? false })
        let received = everything.events.filter { $0.event.id != nil }
        let logged = try database.query("SELECT id, type, data FROM packd_events WHERE pack_id = $1 AND id <= $2 ORDER BY id",
                                        [.int8(id), .int8(lastToRead.value)])
            .map { StreamClient.Event(id: try $0.int64(0), type: try $0.string(1), data: try $0.string(2)) }
        let completed = logged.filter { $0.type == "progress" }.compactMap { progressCount($0.data) }
        #expect(completed == completed.sorted(), "progress never goes backwards along the log")
        #expect(logged.filter { $0.type == "progress" }.allSatisfy {
            $0.data.contains(#""state":"active""#) || $0.data.contains(#""state":"complete""#)
        }, "progress events carry the pack's state, whichever node published them")
        #expect(received.map(\.event) == logged, "B got \(received.count) events, the log holds \(logged.count)")
        #expect(logged.filter { $0.type == "progress" }.count > 10)
        // The start area: ready once, before the pack's last tenth (claimed by ordinal, its
        // units near the south edge would be among the last: ready after 99 %; nearest first,
        // 20-58 % in runs under load, with six claim slots racing).
        #expect(logged.filter { $0.type == "start_area_ready" }.count == 1, "\(logged.map(\.type))")
        if let ready = logged.firstIndex(where: { $0.type == "start_area_ready" }) {
            let before = logged[..<ready].filter { $0.type == "progress" }.compactMap { progressCount($0.data) }.max() ?? 0
            #expect(before < expected * 9 / 10, "start_area_ready after \(before) of \(expected) tiles")
            print("cluster start_area_ready after \(before) of \(expected) tiles")
        }
        #expect(pack["start_area_ready_at"] is String, "\(pack["start_area_ready_at"] ?? "none")")
        if let seen = completeSeenOnA, let arrival = received.last(where: { $0.event.data.contains(#""state":"complete""#) })?.at {
            #expect(arrival - seen < .seconds(1), "complete reached B \(arrival - seen) after A showed it")
        }
        if let seen = activeSeenOnA, let arrival = received.first(where: { $0.event.data.contains(#""state":"active""#) })?.at {
            #expect(arrival - seen < .seconds(1), "active reached B \(arrival - seen) after A showed it")
        }

        // A reconnect to C with the last id B's other stream saw gets exactly the rest.
        let onC = try c.events("/v1/events", headers: ["Last-Event-ID": String(missedAfter)])
        var replayed: [StreamClient.Event] = []
        while let event = try onC.nextEvent() {
            replayed.append(event)
            if (event.id ?? 0) >= lastToRead.value { break }
        }
        // Within the replay window (C's ring of 1,024, or 1,000 events from the log) that is an
        // exact replay; further behind (a sanitizer's slow run logs more progress) the stream
        // starts with a snapshot — the pack's state now, under the newest id — then goes on live.
        // Which of the two depends on the run's length; StoreNumberedResumeTests makes each gap
        // on purpose.
        let missed = logged.filter { $0.id! > missedAfter }
        if replayed.first?.id == missed.first?.id {
            #expect(replayed == missed, "C replays exactly what was missed after \(missedAfter)")
        } else {
            let snapshot = try #require(replayed.first)
            #expect(missed.count >= 1000, "a snapshot only for a client further behind than any replay: \(missed.count) missed")
            #expect(snapshot.type == "progress" && snapshot.data.contains(#""state":"complete""#), "\(snapshot)")
            #expect(Array(replayed.dropFirst()) == logged.filter { $0.id! > snapshot.id ?? 0 })
        }
    }
}

/// The id an event recorder reads up to, set once the test knows it.
final class LastEventID: @unchecked Sendable {
    private let lock = NSLock()
    private var id = Int64.max

    var value: Int64 {
        get { lock.withLock { id } }
        set { lock.withLock { id = newValue } }
    }
}

/// `completed_resources` of a progress event's JSON.
func progressCount(_ json: String) -> Int? {
    let object = try? JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any]
    return (object?["progress"] as? [String: Any])?["completed_resources"] as? Int
}
