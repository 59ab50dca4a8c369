import CZlib
import Foundation
import Packs
import Store

/// A generated pack of `tiles` vector tiles of about `tileBytes` each (a `repeatedShare` of them
/// the same ocean tile), stored zlib-compressed as MapLibre stores them: what the export and
/// artifacts benchmarks build files from.
struct GeneratedPack {
    let tiles: Int
    let tileBytes: Int
    let repeatedShare: Double

    /// A packd database with one complete pack of vector tiles in a square block at zoom 14, at
    /// version 1 (its progress row and first version written as the 3 → 4 migration writes them
    /// for a pack complete before versions: every row it holds belongs to version 1).
    func write(at path: String) throws -> Int {
        try? FileManager.default.removeItem(atPath: path)
        let database = try SchemaMigrator.openWriter(path: path)
        try database.execute("INSERT INTO regions (definition, description) VALUES ('{\"bench\":true}', NULL)")
        try database.execute("""
            INSERT INTO packd_packs (region_id, name, state, created_at, updated_at, completed_at)
            VALUES (1, 'bench', ?1, 1700000000, 1700000000, 1700000000)
            """, [.text(PackState.complete.rawValue)])
        let side = Int(Double(tiles).squareRoot().rounded(.up))
        let ocean = zlib(vectorTile(salt: -1))
        var stored = 0
        try database.transaction {
            let insertTile = try database.cachedStatement("""
                INSERT INTO tiles (url_template, pixel_ratio, z, x, y, data, compressed, accessed, modified)
                VALUES ('https://bench.example/{z}/{x}/{y}.pbf', 1, 14, ?1, ?2, ?3, 1, 1700000000, 1700000000)
                """)
            let link = try database.cachedStatement("INSERT INTO region_tiles (region_id, tile_id) VALUES (1, ?1)")
            for index in 0..<tiles {
                let x = 8000 + index % side, y = 5000 + index / side
                let isOcean = Double(index % 1000) < repeatedShare * 1000
                let body = isOcean ? ocean : zlib(vectorTile(salt: index))
                stored += body.count
                try insertTile.execute([.integer(Int64(x)), .integer(Int64(y)), .blob(body)])
                try link.execute([.integer(database.lastInsertedRowID)])
            }
            let progress = try ProgressQueries.recount(1, in: database)
            try database.execute("""
                INSERT INTO packd_progress (pack_id, completed_resources, completed_bytes, completed_tiles, completed_tile_bytes)
                VALUES (1, ?1, ?2, ?3, ?4)
                """, [.integer(progress.completedResources), .integer(progress.completedBytes),
                      .integer(progress.completedTiles), .integer(progress.completedTileBytes)])
            try database.execute("""
                INSERT INTO packd_versions (pack_id, version, created_at, change_boundary, resources, tiles, bytes,
                                            changed_resources, changed_bytes, removed_resources, name, description)
                SELECT 1, 1, 1700000000, value, ?1, ?2, ?3, ?1, ?3, 0, 'bench', NULL FROM packd_meta WHERE key = 'change_sequence'
                """, [.integer(progress.completedResources), .integer(progress.completedTiles), .integer(progress.completedBytes)])
            try database.execute("UPDATE packd_packs SET version = 1 WHERE region_id = 1")
        }
        return stored
    }

    /// A syntactically valid vector tile of about `tileBytes`: two layers, tagged features, and
    /// pseudo-random geometry (compresses about 2:1, like real tiles).
    func vectorTile(salt: Int) -> [UInt8] {
        var state = UInt64(bitPattern: Int64(salt)) &* 0x9E37_79B9_7F4A_7C15 | 1
        func next() -> UInt64 {
            state ^= state << 13; state ^= state >> 7; state ^= state << 17
            return state
        }
        func varint(_ value: UInt64, _ out: inout [UInt8]) {
            var value = value
            while value >= 0x80 { out.append(UInt8(truncatingIfNeeded: value) | 0x80); value >>= 7 }
            out.append(UInt8(value))
        }
        func field(_ number: UInt64, _ bytes: [UInt8], _ out: inout [UInt8]) {
            varint(number << 3 | 2, &out); varint(UInt64(bytes.count), &out); out += bytes
        }
        var tile: [UInt8] = []
        for name in ["water", "roads"] {
            var layer: [UInt8] = [0x78, 2]
            field(1, Array(name.utf8), &layer)
            field(3, Array("class".utf8), &layer)
            var value: [UInt8] = []
            field(1, Array("primary".utf8), &value)
            field(4, value, &layer)
            var remaining = tileBytes / 2
            while remaining > 0 {
                // A valid MultiPoint: MoveTo ×50, zigzag deltas.
                var geometry: [UInt8] = []
                varint(50 << 3 | 1, &geometry)
                for _ in 0..<100 { varint(next() % 64, &geometry) }
                var feature: [UInt8] = []
                field(2, [0, 0], &feature)
                feature += [0x18, 1]
                field(4, geometry, &feature)
                field(2, feature, &layer)
                remaining -= feature.count + 3
            }
            field(3, layer, &tile)
        }
        return tile
    }

    func zlib(_ bytes: [UInt8]) -> [UInt8] {
        var length = compressBound(uLong(bytes.count))
        var output = [UInt8](repeating: 0, count: Int(length))
        _ = compress2(&output, &length, bytes, uLong(bytes.count), Z_DEFAULT_COMPRESSION)
        return Array(output[0..<Int(length)])
    }
}
