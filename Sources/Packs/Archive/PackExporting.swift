/// Writing a pack as a file a phone or another tool reads: MapLibre's offline database, MBTiles,
/// PMTiles. Runs on a reading thread; each export is a snapshot of the pack.
public protocol PackExporting {
    /// A MapLibre offline database (schema 6) holding exactly the pack; resources and tiles written.
    func exportMapLibre(pack: Int64, to path: String) throws(ExportError) -> (resources: Int, tiles: Int)
    /// The pack's tilesets (template × pixel ratio), most tiles first.
    func tileSources(pack: Int64) throws(ExportError) -> [PackTileSource]
    /// One tileset of the pack as an MBTiles or PMTiles archive named `name`; tiles written.
    func exportTileArchive(pack: Int64, source: PackTileSource, format: TileArchiveFormat, name: String,
                           to path: String) throws(ExportError) -> Int
}

public enum TileArchiveFormat: String, Sendable {
    case mbtiles, pmtiles
}

/// One tileset stored for a pack: a URL template at one pixel ratio. MBTiles and PMTiles hold
/// exactly one, so the API lists these when a pack has several (`&source=`).
public struct PackTileSource: Equatable, Sendable {
    public let urlTemplate: String
    public let pixelRatio: Int64
    /// Stored tiles with content (no-content rows are not exported).
    public let tileCount: Int64

    public init(urlTemplate: String, pixelRatio: Int64, tileCount: Int64) {
        self.urlTemplate = urlTemplate
        self.pixelRatio = pixelRatio
        self.tileCount = tileCount
    }
}

extension [PackTileSource] {
    /// The tileset to export: the one named by `urlTemplate` (highest pixel ratio if several), or
    /// the pack's only one.
    public func choose(urlTemplate: String?) throws(ExportError) -> PackTileSource {
        if let urlTemplate {
            guard let source = filter({ $0.urlTemplate == urlTemplate }).max(by: { $0.pixelRatio < $1.pixelRatio }) else {
                throw .unknownTileSource(urlTemplate)
            }
            return source
        }
        guard let first else { throw .noTiles }
        guard count == 1 else { throw .ambiguousTileSource(self) }
        return first
    }
}

/// Why an export failed, in terms the API maps to a status: the pack or its tiles are missing
/// (404/409), the request is ambiguous (400 naming the choices), or the store or disk failed
/// (500/507).
public enum ExportError: Error, CustomStringConvertible, Sendable {
    case packNotFound(Int64)
    /// The pack holds no stored tiles for the chosen source (nothing to put in an archive).
    case noTiles
    /// MBTiles and PMTiles hold one tileset: the pack has several and none was chosen.
    case ambiguousTileSource([PackTileSource])
    case unknownTileSource(String)
    /// A stored tile cannot be decoded (bad zlib, or coordinates outside its zoom's grid).
    case invalidTile(z: Int64, x: Int64, y: Int64, reason: String)
    case store(StoreError)
    case file(String)

    public var description: String {
        switch self {
        case .packNotFound(let id): return "pack \(id) does not exist"
        case .noTiles: return "the pack has no stored tiles for this source"
        case .ambiguousTileSource(let sources):
            return "the pack has \(sources.count) tile sources; choose one of: "
                + sources.map { "\($0.urlTemplate) @\($0.pixelRatio)x" }.joined(separator: ", ")
        case .unknownTileSource(let template): return "the pack has no tiles from \(template)"
        case .invalidTile(let z, let x, let y, let reason): return "stored tile \(z)/\(x)/\(y) is invalid: \(reason)"
        case .store(let error): return error.description
        case .file(let message): return message
        }
    }
}
