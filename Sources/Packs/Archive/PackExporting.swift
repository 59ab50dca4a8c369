/// Writing a pack as a file a phone or another tool reads: MapLibre's offline database, MBTiles,
/// PMTiles. Runs on a reading thread; each export is a snapshot of the pack.
public protocol PackExporting {
    /// Writes what `request` names to a new file at `path` (replaced if present; removed again
    /// when the export fails). A versioned request gives the same bytes on every build, from
    /// either store (`PackExportRequest`).
    func export(_ request: PackExportRequest, to path: String) throws(ExportError) -> PackExportSummary
    /// The pack's tilesets (template × pixel ratio), most tiles first.
    func tileSources(pack: Int64) throws(ExportError) -> [PackTileSource]
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
public enum ExportError: Error, CustomStringConvertible, Sendable, Equatable {
    case packNotFound(Int64)
    /// The pack holds no stored tiles for the chosen source (nothing to put in an archive).
    case noTiles
    /// MBTiles and PMTiles hold one tileset: the pack has several and none was chosen.
    case ambiguousTileSource([PackTileSource])
    case unknownTileSource(String)
    /// A stored tile cannot be decoded (bad zlib, or coordinates outside its zoom's grid).
    case invalidTile(z: Int64, x: Int64, y: Int64, reason: String)
    /// The request's fields do not fit together (`PackExportRequest.problem`): 400 at `field`.
    case invalidRequest(field: String, String)
    /// The pack never had this version (0, or above its current one `current`).
    case unknownVersion(Int64, current: Int64)
    /// The version existed and is no longer retained (410, naming the current one).
    case versionNotRetained(Int64, current: Int64)
    /// The version is retained but no longer current: its rows were replaced, so it cannot be
    /// built again (its artifact was built while it was current, or not at all).
    case versionSuperseded(Int64, current: Int64)
    /// The pack's rows changed since the version was cut and the next version is not cut yet (a
    /// refresh of this pack, or of another pack sharing its rows, is under way): build it again
    /// once the refresh is over.
    case versionChanging(Int64)
    /// A delta's base version is not retained (a device that old gets the whole version).
    case baseNotRetained(Int64, current: Int64)
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
        case .invalidRequest(let field, let detail): return "\(field): \(detail)"
        case .unknownVersion(let version, let current):
            return "the pack has no version \(version); its current version is \(current)"
        case .versionNotRetained(let version, let current):
            return "version \(version) is no longer retained; the current version is \(current)"
        case .versionSuperseded(let version, let current):
            return "version \(version) was replaced by version \(current) and cannot be built again"
        case .versionChanging(let version):
            return "the pack's rows changed since version \(version) was cut; the next version is being made"
        case .baseNotRetained(let since, let current):
            return "version \(since) is no longer retained; a device holding it needs the whole version \(current)"
        case .store(let error): return error.description
        case .file(let message): return message
        }
    }
}
