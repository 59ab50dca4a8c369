import Foundation
import Packs
import Store

/// The rows a download left in the database, read straight from MapLibre's tables and decoded
/// here (zlib for `compressed = 1`, NULL for no content), independent of the Store's own readers.
struct StoredRows {
    /// Path under the upstream (`/tiles/3/4/2.pbf`, `/style.json`) → decoded body, nil for no content.
    var bodies: [String: [UInt8]?] = [:]
    var tileRows = 0
    var resourceRows = 0

    struct Undecodable: Error, CustomStringConvertible {
        let description: String
    }

    init(path: String, base: String) throws {
        let database = try Database(path: path, mode: .readOnly)
        let tiles = try database.makeStatement("SELECT url_template, pixel_ratio, z, x, y, data, compressed FROM tiles")
        while try tiles.step() {
            let url = Self.url(tiles.string(at: 0) ?? "", z: tiles.int64(at: 2), x: tiles.int64(at: 3),
                               y: tiles.int64(at: 4))
            bodies[String(url.dropFirst(base.count))] = try Self.decode(tiles.blob(at: 5), compressed: tiles.int64(at: 6), url)
            tileRows += 1
        }
        let resources = try database.makeStatement("SELECT url, data, compressed FROM resources")
        while try resources.step() {
            let url = resources.string(at: 0) ?? ""
            bodies[String(url.dropFirst(base.count))] = try Self.decode(resources.blob(at: 1),
                                                                        compressed: resources.int64(at: 2), url)
            resourceRows += 1
        }
    }

    private static func decode(_ data: [UInt8]?, compressed: Int64, _ url: String) throws -> [UInt8]? {
        guard let data else { return nil }
        guard compressed == 1 else { return data }
        do {
            let (output, consumed) = try data.withUnsafeBytes { bytes throws(ZlibCodec.Failure) in
                try ZlibCodec.inflate(bytes)
            }
            guard consumed == data.count else { throw Undecodable(description: "\(url): bytes after the zlib stream") }
            return output
        } catch let failure as ZlibCodec.Failure {
            throw Undecodable(description: "\(url): \(failure)")
        }
    }

    /// Paths of the tiles stored so far (rows with or without content), without decoding bodies.
    static func tilePaths(path: String, base: String) throws -> Set<String> {
        let database = try Database(path: path, mode: .readOnly)
        let tiles = try database.makeStatement("SELECT url_template, z, x, y FROM tiles")
        var paths: Set<String> = []
        while try tiles.step() {
            paths.insert(String(Self.url(tiles.string(at: 0) ?? "", z: tiles.int64(at: 1), x: tiles.int64(at: 2),
                                         y: tiles.int64(at: 3)).dropFirst(base.count)))
        }
        return paths
    }

    private static func url(_ template: String, z: Int64, x: Int64, y: Int64) -> String {
        template.replacingOccurrences(of: "{z}", with: String(z)).replacingOccurrences(of: "{x}", with: String(x))
            .replacingOccurrences(of: "{y}", with: String(y))
    }

    /// `PRAGMA integrity_check`'s answer ("ok" for a sound file).
    static func integrityCheck(path: String) throws -> String {
        let database = try Database(path: path, mode: .readOnly)
        return try database.scalarString("PRAGMA integrity_check") ?? "no answer"
    }
}
