import Packs

/// The formats an artifact is written in: MapLibre's offline database, MBTiles, PMTiles — the
/// formats the stores export (`PackExportRequest.Format`).
public typealias ArtifactFormat = PackExportRequest.Format

extension PackExportRequest.Format {
    public var fileExtension: String {
        switch self {
        case .maplibre: "db"
        case .mbtiles: "mbtiles"
        case .pmtiles: "pmtiles"
        }
    }

    public var contentType: String {
        switch self {
        case .maplibre, .mbtiles: "application/vnd.sqlite3"
        case .pmtiles: "application/vnd.pmtiles"
        }
    }
}

/// What identifies an artifact: one pack version written in one format, of one tile source
/// (archive formats; as the client named it), holding what changed after `since` (a delta) or
/// everything. Two requests with equal keys get the same file. Pure.
public struct ArtifactKey: Hashable, Sendable, CustomStringConvertible {
    public let pack: Int64
    public let version: Int64
    public let format: ArtifactFormat
    public let source: String?
    public let since: Int64?

    public init(pack: Int64, version: Int64, format: ArtifactFormat, source: String? = nil, since: Int64? = nil) {
        self.pack = pack
        self.version = version
        self.format = format
        self.source = source
        self.since = since
    }

    /// The folder of the pack's artifacts, relative to the artifacts directory.
    public var packFolder: String { "pack-\(pack)" }
    /// The folder of this version's artifacts, relative to the artifacts directory.
    public var versionFolder: String { "\(packFolder)/v\(version)" }

    /// The file name without digest and extension: the format, then `.since-N`, then
    /// `.source-<first 16 hex digits of the source's SHA-256>` (a source is any string a client
    /// sent; its digest keeps the name short and free of `/`).
    public var stem: String {
        var stem = format.rawValue
        if let since { stem += ".since-\(since)" }
        if let source { stem += ".source-" + String(Digest.sha256(Array(source.utf8)).hex.prefix(16)) }
        return stem
    }

    public var description: String {
        "pack \(pack) v\(version) \(format.rawValue)" + (since.map { " since \($0)" } ?? "") + (source.map { " source \($0)" } ?? "")
    }
}
