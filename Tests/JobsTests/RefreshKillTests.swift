import Foundation
import Glibc
import PackdTestSupport
import Packs
import Store
import Testing

/// A scheduled refresh of a real `packd serve` killed with SIGKILL half way: after the restart
/// the refresh resumes by itself, runs once (its due time was moved when it was claimed), and the
/// version it makes counts every tile that changed — those stored before the kill too, which the
/// resumed revalidation finds unchanged (304).
@Suite struct RefreshKillTests {
    @Test func aScheduledRefreshKilledHalfWayResumesAndCountsEveryChange() throws {
        let upstream = try RevisedUpstream()
        defer { upstream.stop() }
        // Few transfers at once, each answered after 20 ms: the refresh takes seconds, not milliseconds.
        let server = try PackdServer(arguments: ["--max-transfers-per-pack", "4"])
        defer { server.kill(); server.remove() }
        var region = upstream.region
        region["max_zoom"] = 8
        let created = try server.send("POST", "/v1/packs", json: ["region": region, "name": "refreshed"])
        #expect(created.status == 201)
        let packID = try #require(created.json["id"] as? Int)
        #expect(eventually(within: 120) { server.pack(packID)?["state"] as? String == "complete" })
        #expect(server.pack(packID)?["version"] as? Int == 1)

        // Every 8th tile changes upstream, spread over the revalidation's order (row ids).
        server.kill()
        let tiles = try StoreReader(path: server.databasePath).tileValidators(packID: Int64(packID), afterRowID: 0, limit: 100_000)
            .compactMap { row -> String? in
                guard case .tile(let tile) = row.key else { return nil }
                return "/tiles/\(tile.z)/\(tile.x)/\(tile.y).pbf"
            }
        try #require(tiles.count > 400)
        let changed = stride(from: 3, to: tiles.count, by: 8).map { tiles[$0] }
        upstream.change(tiles: changed)
        upstream.delayTiles(.milliseconds(20))
        // The schedule says the refresh was due a minute ago: the restarted server claims it.
        let now = Int64(Date().timeIntervalSince1970)
        do {
            let database = try Database(path: server.databasePath, mode: .readWrite)
            try database.execute("UPDATE packd_packs SET refresh_every = 'PT1H', next_refresh_at = ?2 WHERE region_id = ?1",
                                 [.integer(Int64(packID)), .integer(now - 60)])
        }
        try server.start()
        let total = tiles.count
        var resolved = 0
        #expect(eventually(within: 120) {
            guard let invalidation = server.pack(packID)?["invalidation"] as? [String: Any] else { return false }
            resolved = ["unchanged", "updated", "removed"].compactMap { invalidation[$0] as? Int }.reduce(0, +)
            return resolved >= total / 3
        }, "the scheduled refresh did not start")
        server.kill()
        let before = try StoreReader(path: server.databasePath)
        let due = try #require(try before.pack(Int64(packID))?.nextRefreshAt)
        #expect(due >= now + 3_600, "the claim moved the due time before the refresh ran")
        let storedBeforeKill = try changed.filter { path in
            let parts = path.dropFirst("/tiles/".count).dropLast(".pbf".count).split(separator: "/").compactMap { Int64($0) }
            let key = ResourceKey.tile(TileKey(urlTemplate: upstream.base + "/tiles/{z}/{x}/{y}.pbf", z: parts[0], x: parts[1], y: parts[2]))
            return try before.resource(key)?.body?.decoded() == upstream.body(for: path)
        }.count
        #expect(storedBeforeKill > 0 && storedBeforeKill < changed.count, "killed half way: \(storedBeforeKill) of \(changed.count)")

        try server.start()
        #expect(eventually(within: 120) { server.pack(packID)?["state"] as? String == "complete" })
        let listed = try server.send("GET", "/v1/packs/\(packID)/versions")
        let versions = try #require(listed.json["versions"] as? [[String: Any]])
        #expect(listed.json["version"] as? Int == 2 && versions.map { $0["version"] as? Int } == [2, 1])
        #expect(versions.first?["changed_resources"] as? Int == changed.count,
                "every changed tile, \(storedBeforeKill) of them stored before the kill")
        #expect(versions.first?["removed_resources"] as? Int == 0)
        #expect(try StoreReader(path: server.databasePath).pack(Int64(packID))?.nextRefreshAt == due, "claimed once")
    }
}
