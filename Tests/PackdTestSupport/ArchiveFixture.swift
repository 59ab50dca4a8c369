import Foundation
import TileFormats

/// A PMTiles archive made with TileFormats' writer side for tests: tiles z0…`maxZoom` over the
/// world, each body derived from its coordinates and `salt` (so two archives of other salts differ
/// tile by tile), some absent (as an archive leaves the empty ocean out), some identical (one
/// shared content, as deduplication makes the ocean), with leaf directories when asked.
public struct ArchiveFixture: Sendable {
    public let bytes: [UInt8]
    /// z/x/y → the tile as a reader returns it once the tile compression is undone; absent tiles
    /// are not in it.
    public let tiles: [String: [UInt8]]
    public let maxZoom: Int

    public struct Layout: Sendable {
        public var clustered = true
        public var tileCompression = PMTilesHeader.Compression.gzip
        public var internalCompression = PMTilesHeader.Compression.gzip
        /// Force leaf directories on a small archive.
        public var leaves = true
        public var tileType = PMTilesHeader.TileType.mvt

        public init(clustered: Bool = true, tileCompression: PMTilesHeader.Compression = .gzip,
                    internalCompression: PMTilesHeader.Compression = .gzip, leaves: Bool = true) {
            self.clustered = clustered
            self.tileCompression = tileCompression
            self.internalCompression = internalCompression
            self.leaves = leaves
        }
    }

    /// Tiles of size 64…700 bytes; `(x * 7 + y * 3 + z) % 11 == 0` absent, `% 11 == 5` the shared content.
    public init(maxZoom: Int, salt: Int = 0, layout: Layout = Layout()) {
        self.maxZoom = maxZoom
        var list: [PMTilesArchiveBuilder.Tile] = []
        var tiles: [String: [UInt8]] = [:]
        let shared = Array("shared ocean tile \(salt)".utf8)
        for z in 0...maxZoom {
            for x in 0..<(1 << z) {
                for y in 0..<(1 << z) {
                    let kind = (x * 7 + y * 3 + z) % 11
                    guard kind != 0 else { continue }
                    let body = kind == 5 ? shared : Self.body(z: z, x: x, y: y, salt: salt)
                    list.append(.init(z: z, x: x, y: y, bytes: body))
                    tiles["\(z)/\(x)/\(y)"] = body
                }
            }
        }
        if !layout.clustered { list.reverse() }  // row order reversed: tile data far from id order
        var builder = PMTilesArchiveBuilder()
        builder.tileCompression = layout.tileCompression
        builder.internalCompression = layout.internalCompression
        builder.tileType = layout.tileType
        builder.metadata = ["name": "fixture \(salt)", "vector_layers": [["id": "water", "fields": [String: String]()]]]
        if layout.leaves {
            builder.rootLimit = 300
            builder.initialLeafSize = 128
        }
        bytes = builder.build(list)
        self.tiles = tiles
    }

    public static func body(z: Int, x: Int, y: Int, salt: Int) -> [UInt8] {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325 &+ UInt64(salt)
        for byte in "\(z)/\(x)/\(y)".utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        return testBody(seed: Int(hash % 1_000_000) + salt, size: 64 + Int(hash % 637))
    }
}
