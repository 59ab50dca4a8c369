import Foundation
import Glibc
import PackdTestSupport
import Store
import Testing

/// `packd serve` (the built binary) killed with SIGKILL at random moments of one download and
/// restarted on the same database each time: the pack continues by itself, completes with exact
/// counts and a sound file, and the upstream sees few tiles twice.
@Suite struct KillRestartTests {
    @Test func killedAtRandomMomentsThePackStillCompletesExactly() throws {
        let upstream = try MapUpstream()
        defer { upstream.stop() }
        // About 11,000 tiles and 6 kills; with PACKD_SOAK=1 about 44,000 tiles and 20 kills.
        let region = ChaosDownloadTests.region(upstream, halfWidth: 15.5, maxZoom: ChaosDownloadTests.soak ? 11 : 10)
        let planned = try ChaosDownloadTests.planned(upstream, region)
        let tiles = planned.filter { $0.kind == .tile }.count
        #expect(tiles >= 10_000)

        let server = try PackdServer()
        defer { server.kill(); server.remove() }
        let body: [String: Any] = ["name": "kill -9", "start": true, "region": region]
        let created = try BinaryExchange.send(port: server.port, method: "POST", path: "/v1/packs",
                                            body: try JSONSerialization.data(withJSONObject: body))
        #expect(created.status == 201, "\(String(decoding: created.body, as: UTF8.self))")
        let packID = try #require(try created.decodedJSON()["id"] as? Int)

        // Kill points spread over the download, each at a random tile count and a random
        // delay after it, so kills land mid-batch, mid-transfer and mid-commit alike.
        let kills = ChaosDownloadTests.soak ? 20 : 6
        var killedAt: [Int] = []
        /// What each kill left stored, and how many requests the upstream had seen by then.
        var storedAtKill: [(tiles: Set<String>, requests: Int)] = []
        for index in 1...kills {
            let target = tiles * index / (kills + 1) + Int.random(in: -tiles / 30...tiles / 30)
            var seen = 0
            let reached = eventually {
                guard let pack = server.pack(packID), let progress = pack["progress"] as? [String: Any] else {
                    return false
                }
                seen = progress["completed_tiles"] as? Int ?? 0
                return seen >= target || ["complete", "failed"].contains(pack["state"] as? String ?? "")
            }
            #expect(reached, "no progress to \(target) tiles (at \(seen))")
            usleep(UInt32.random(in: 0...150_000))
            server.kill()
            killedAt.append(seen)
            storedAtKill.append((try StoredRows.tilePaths(path: server.databasePath, base: upstream.base),
                                 upstream.requests.count))
            // Counts continue from the stored truth: never below what a client already saw.
            try server.start()
            let resumed = eventually {
                (server.pack(packID)?["progress"] as? [String: Any])?["completed_tiles"] as? Int ?? -1 >= seen
            }
            #expect(resumed, "after restart \(index) the progress went below the \(seen) tiles seen before")
        }

        var last: [String: Any] = [:]
        #expect(eventually {
            guard let pack = server.pack(packID) else { return false }
            last = pack
            return ["complete", "failed"].contains(pack["state"] as? String ?? "")
        })
        #expect(last["state"] as? String == "complete", "\(last)")
        let progress = try #require(last["progress"] as? [String: Any])
        server.kill()

        #expect(try StoredRows.integrityCheck(path: server.databasePath) == "ok")
        let recount = try StoreReader(path: server.databasePath).recountProgress(Int64(packID))
        #expect(progress["completed_resources"] as? Int == planned.count)
        #expect(progress["completed_tiles"] as? Int == tiles)
        #expect(recount.completedResources == Int64(planned.count) && recount.completedTiles == Int64(tiles))
        #expect(progress["completed_bytes"] as? Int == Int(recount.completedBytes))
        let rows = try StoredRows(path: server.databasePath, base: upstream.base)
        #expect(rows.tileRows == tiles)
        let wrong = planned.filter { resource in
            let path = String(resource.url.dropFirst(upstream.base.count))
            return rows.bodies[path].map { $0 != upstream.body(for: path) } ?? true
        }
        #expect(wrong.isEmpty, "\(wrong.count) resources missing or different: \(wrong.prefix(3).map(\.url))")

        // Nothing stored before a kill is fetched again after it.
        let requests = upstream.requests
        for (index, kill) in storedAtKill.enumerated() {
            let refetched = requests[kill.requests...].map(\.target).filter(kill.tiles.contains)
            #expect(refetched.isEmpty, "after kill \(index + 1): \(refetched.count) stored tiles fetched again")
        }

        // Refetched after a kill: the transfers in flight and the rows not yet committed.
        let tileRequests = upstream.requests.filter { $0.target.hasPrefix("/tiles/") }.count
        let overhead = Double(tileRequests - tiles) / Double(tiles) * 100
        print("kill -9 ×\(kills) at tiles \(killedAt): tile requests \(tileRequests) for \(tiles) tiles: "
              + String(format: "+%.1f %%", overhead))
        #expect(tileRequests >= tiles)
        #expect(tileRequests <= tiles + kills * 600, "more refetched than in flight and uncommitted at each kill")
    }
}
