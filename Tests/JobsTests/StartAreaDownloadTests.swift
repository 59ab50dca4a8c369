import Foundation
import Geo
import Jobs
import PackdTestSupport
import Packs
import Store
import Testing

/// Packs with a `start_area`: the writer commits every tile closer than the radius, at every
/// zoom, before any tile farther than twice the radius (the `tiles` table's row ids are the
/// commit order: one writer, AUTOINCREMENT); `start_area_ready` is recorded and heard once, early;
/// a resume after a crash keeps the order.
@Suite struct StartAreaDownloadTests {
    static let center = LngLat(longitude: 8.5, latitude: 47.4)

    static func region(_ upstream: MapUpstream, west: Double, south: Double, east: Double, north: Double,
                       zooms: ClosedRange<Int>) -> [String: Any] {
        ["style_url": upstream.base + "/style.json", "bounds": [west, south, east, north],
         "min_zoom": Double(zooms.lowerBound), "max_zoom": Double(zooms.upperBound)]
    }

    /// The stored tiles in commit order, with their distance from the centre.
    static func committed(_ path: String, radius: Double) throws -> [(id: Int64, tile: TileID, distance: Double)] {
        let walk = NearestFirstWalk(center: center, bandWidth: radius / 4, covers: [])
        let database = try Database(path: path, mode: .readOnly)
        var rows: [(Int64, TileID, Double)] = []
        try database.cachedStatement("SELECT id, z, x, y FROM tiles ORDER BY id").forEachRow { row in
            let tile = TileID(z: Int(row.int64(at: 1)), x: Int(row.int64(at: 2)), y: Int(row.int64(at: 3)))
            rows.append((row.int64(at: 0), tile, walk.distance(to: tile)))
        }
        return rows
    }

    /// Every tile closer than `radius` was committed before any tile farther than twice that,
    /// and the start area has tiles at every zoom.
    static func checkOrder(_ path: String, radius: Double, zooms: ClosedRange<Int>) throws {
        let rows = try committed(path, radius: radius)
        let near = rows.filter { $0.distance < radius }
        let far = rows.filter { $0.distance > 2 * radius }
        #expect(Set(near.map(\.tile.z)) == Set(zooms), "the start area has tiles at every zoom")
        #expect(!far.isEmpty)
        let lastNear = try #require(near.map(\.id).max())
        let firstFar = try #require(far.map(\.id).min())
        #expect(lastNear < firstFar, "tile \(rows.first { $0.id == firstFar }!.tile) at \(Int(far.first!.distance)) m was committed before a start-area tile")
    }

    @Test func startAreaTilesCommitFirstAndReadinessIsRecordedOnce() throws {
        let database = try TemporaryDatabase()
        let upstream = try MapUpstream()
        let harness = try JobsHarness(path: database.path)
        defer { harness.close(); upstream.stop(); database.remove() }
        let zooms = 6...12
        let area = StartArea(longitude: Self.center.longitude, latitude: Self.center.latitude, radiusM: 5_000)
        let packID = try harness.createQueuedPack(region: Self.region(upstream, west: 7.5, south: 46.8, east: 9.5, north: 48.0,
                                                                      zooms: zooms), startArea: area)
        try harness.onLoop { harness.scheduler.packQueued(packID) }
        #expect(harness.waitForState(packID, ["complete", "failed"]) == ["active", "complete"])
        harness.close()
        try Self.checkOrder(database.path, radius: area.radiusM, zooms: zooms)
        let record = try #require(try StoreReader(path: database.path).pack(packID))
        #expect(record.startArea == area)
        let heard = harness.startAreaReadyHeard(packID)
        #expect(heard.count == 1)
        #expect(record.startAreaReadyAt == heard.first?.at)
    }

    /// A region a hundred times the start area: `start_area_ready` is heard before a tenth of its
    /// tiles are stored.
    @Test func readinessComesBeforeATenthOfTheRegion() throws {
        let database = try TemporaryDatabase()
        let upstream = try MapUpstream()
        let harness = try JobsHarness(path: database.path)
        defer { harness.close(); upstream.stop(); database.remove() }
        // 2 km radius: 12.6 km²; the region ~1,260 km² (35.5 km square) around it, to z14 (the
        // upstream's maxzoom): ~680 tiles.
        let radius = 2_000.0
        let side = (100 * Double.pi * radius * radius).squareRoot()
        let halfLatitude = side / 2 / 111_320, halfLongitude = halfLatitude / cos(Self.center.latitude * .pi / 180)
        let zooms = 8...14
        let packID = try harness.createQueuedPack(
            region: Self.region(upstream, west: Self.center.longitude - halfLongitude, south: Self.center.latitude - halfLatitude,
                                east: Self.center.longitude + halfLongitude, north: Self.center.latitude + halfLatitude, zooms: zooms),
            startArea: StartArea(longitude: Self.center.longitude, latitude: Self.center.latitude, radiusM: radius))
        try harness.onLoop { harness.scheduler.packQueued(packID) }
        #expect(harness.waitForState(packID, ["complete", "failed"]) == ["active", "complete"])
        harness.close()
        let heard = try #require(harness.startAreaReadyHeard(packID).first)
        let total = try #require(try StoreReader(path: database.path).pack(packID)).expectedTiles
        #expect(total > 500)
        let before = heard.progress?.completedTiles ?? 0
        #expect(Double(before) < 0.1 * Double(total), "ready after \(before) of \(total) tiles")
        try Self.checkOrder(database.path, radius: radius, zooms: zooms)
    }

    /// A pack read out of a PMTiles archive orders its bands nearest first too: the ranges of the
    /// start area's bands are read (and their tiles committed) before any other, and
    /// `start_area_ready` is heard once, before the rest of the region.
    @Test func anArchivePacksStartAreaComesFirst() throws {
        let database = try TemporaryDatabase()
        let archive = ArchiveFixture(maxZoom: 7)
        let upstream = try ArchiveUpstream(archive: archive.bytes)
        let harness = try JobsHarness(path: database.path)
        defer { harness.close(); upstream.stop(); database.remove() }
        let area = StartArea(longitude: Self.center.longitude, latitude: Self.center.latitude, radiusM: 150_000)
        // The fixture has no z0 tile: the archive starts at z1.
        let zooms = 1...7
        let packID = try harness.createQueuedPack(region: ArchiveDownloadTests.region(upstream.url, maxZoom: 7, bounds: [-60, 0, 60, 70]),
                                                  startArea: area)
        try harness.onLoop { harness.scheduler.packQueued(packID) }
        #expect(harness.waitForState(packID, ["complete", "failed"]) == ["active", "complete"], "\(harness.publishedError(packID) ?? "")")
        harness.close()
        try Self.checkOrder(database.path, radius: area.radiusM, zooms: zooms)
        let record = try #require(try StoreReader(path: database.path).pack(packID))
        let heard = harness.startAreaReadyHeard(packID)
        #expect(heard.count == 1)
        #expect(record.startAreaReadyAt != nil && record.startAreaReadyAt == heard.first?.at)
        let before = heard.first?.progress?.completedTiles ?? .max
        #expect(Double(before) < 0.25 * Double(record.expectedTiles), "ready after \(before) of \(record.expectedTiles) tiles")
    }

    /// A download stopped mid-way (the process dies) and resumed by a new scheduler keeps the
    /// nearest-first order, and the start area is recorded once.
    @Test func resumeAfterACrashKeepsTheOrder() throws {
        let database = try TemporaryDatabase()
        let upstream = try MapUpstream()
        defer { upstream.stop(); database.remove() }
        let zooms = 6...12
        let area = StartArea(longitude: Self.center.longitude, latitude: Self.center.latitude, radiusM: 5_000)
        let region = Self.region(upstream, west: 7.5, south: 46.8, east: 9.5, north: 48.0, zooms: zooms)
        upstream.holdTiles(after: 10)
        let first = try JobsHarness(path: database.path)
        let packID = try first.createQueuedPack(region: region, startArea: area)
        try first.onLoop { first.scheduler.packQueued(packID) }
        #expect(first.waitForProgress(packID) { $0.completedTiles >= 8 })
        first.close()  // the pack stays `active` in the store, as after a crash
        upstream.releaseTiles()
        let second = try JobsHarness(path: database.path)
        defer { second.close() }
        try second.onLoop { second.scheduler.start() }
        #expect(second.waitForState(packID, ["complete", "failed"]).last == "complete")
        second.close()
        try Self.checkOrder(database.path, radius: area.radiusM, zooms: zooms)
        #expect(first.startAreaReadyHeard(packID).count + second.startAreaReadyHeard(packID).count == 1)
        #expect(try StoreReader(path: database.path).pack(packID)?.startAreaReadyAt != nil)
    }
}
