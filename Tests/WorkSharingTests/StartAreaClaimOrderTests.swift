import Geo
import Testing
import WorkSharing

/// The distance a start area orders work units by: the fixed resources first, whole zooms as at
/// the centre, a window by the nearest point of its tiles, as `NearestFirstWalk` measures tiles.
@Suite struct StartAreaClaimOrderTests {
    let order = StartAreaClaimOrder(longitude: 8.54, latitude: 47.37, radiusMetres: 5_000)

    @Test func resourcesFirstThenWholeZooms() {
        #expect(order.distance(to: .resources) == -1)
        #expect(order.distance(to: .fixed(3...9)) == -1)
        #expect(order.distance(to: .zooms(pyramid: 0, 0...6)) == 0)
    }

    /// A window's distance is its nearest tile's: 0 for the window holding the centre, else the
    /// walk's distance to the nearest tile of the window (checked against every tile of it).
    @Test func aWindowIsAsFarAsItsNearestTile() {
        let zoom = 12
        let projected = WebMercator.project(LngLat(longitude: 8.54, latitude: 47.37))
        let centre = TileID(z: zoom, x: Int(projected.x * 4096), y: Int(projected.y * 4096))
        let walk = NearestFirstWalk(center: LngLat(longitude: 8.54, latitude: 47.37), bandWidth: 1_000, covers: [])
        #expect(order.distance(to: .window(pyramid: 0, zoom: zoom, rows: centre.y...centre.y + 2,
                                           columns: centre.x - 1...centre.x + 1)) == 0)
        for (rows, columns) in [(centre.y + 3...centre.y + 5, centre.x...centre.x + 4),
                                (centre.y - 9...centre.y - 4, centre.x - 7...centre.x - 2),
                                (centre.y...centre.y, centre.x + 6...centre.x + 6)] {
            let nearest = rows.flatMap { y in columns.map { x in walk.distance(to: TileID(z: zoom, x: x, y: y)) } }.min()!
            let distance = order.distance(to: .window(pyramid: 0, zoom: zoom, rows: rows, columns: columns))
            #expect(abs(distance - nearest) < 1e-6 * nearest, "\(rows) × \(columns): \(distance) against \(nearest)")
            #expect(distance > 0)
        }
    }
}
