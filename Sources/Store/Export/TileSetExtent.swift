import Foundation
import Packs
import TileFormats

/// The zoom range and geographic bounds of a stored tileset, from one grouped query: archive
/// headers and MBTiles metadata need them before (PMTiles) or beside (MBTiles) the tiles. Bounds
/// are the edges of the tiles stored at the deepest zoom, the most precise answer the tiles give.
public struct TileSetExtent: Equatable, Sendable {
    public let minZoom: Int
    public let maxZoom: Int
    public let west: Double, south: Double, east: Double, north: Double

    public var centerLongitude: Double { (west + east) / 2 }
    public var centerLatitude: Double { (south + north) / 2 }
    /// A zoom at which the whole extent is in view on a phone: the shallowest stored zoom.
    public var centerZoom: Int { minZoom }

    static func of(_ source: PackTileSource, pack: Int64, in database: Database) throws(ExportError) -> TileSetExtent {
        var zooms: [(z: Int64, minX: Int64, maxX: Int64, minY: Int64, maxY: Int64)] = []
        try ExportError.mapping {
            try database.cachedStatement("""
                SELECT t.z, min(t.x), max(t.x), min(t.y), max(t.y) FROM region_tiles rt JOIN tiles t ON t.id = rt.tile_id
                WHERE rt.region_id = ?1 AND t.url_template = ?2 AND t.pixel_ratio = ?3 AND t.data IS NOT NULL
                GROUP BY t.z ORDER BY t.z
                """).forEachRow([.integer(pack), .text(source.urlTemplate), .integer(source.pixelRatio)]) { row in
                zooms.append((row.int64(at: 0), row.int64(at: 1), row.int64(at: 2), row.int64(at: 3), row.int64(at: 4)))
            }
        }
        guard let first = zooms.first, let deepest = zooms.last else { throw .noTiles }
        for zoom in [first, deepest] {
            guard zoom.z >= 0, zoom.z <= Int64(HilbertTileID.maximumZoom), zoom.minX >= 0, zoom.minY >= 0,
                  zoom.maxX < (1 << zoom.z), zoom.maxY < (1 << zoom.z) else {
                throw .invalidTile(z: zoom.z, x: zoom.maxX, y: zoom.maxY, reason: "outside the zoom's grid")
            }
        }
        let z = Int(deepest.z)
        return TileSetExtent(
            minZoom: Int(first.z), maxZoom: z,
            west: Self.longitude(x: deepest.minX, z: z), south: Self.latitude(y: deepest.maxY + 1, z: z),
            east: Self.longitude(x: deepest.maxX + 1, z: z), north: Self.latitude(y: deepest.minY, z: z))
    }

    public init(minZoom: Int, maxZoom: Int, west: Double, south: Double, east: Double, north: Double) {
        self.minZoom = minZoom
        self.maxZoom = maxZoom
        self.west = west
        self.south = south
        self.east = east
        self.north = north
    }

    static func longitude(x: Int64, z: Int) -> Double {
        Double(x) / Double(1 << z) * 360 - 180
    }

    static func latitude(y: Int64, z: Int) -> Double {
        let n = Double.pi - 2 * Double.pi * Double(y) / Double(1 << z)
        return atan(sinh(n)) * 180 / Double.pi
    }
}
