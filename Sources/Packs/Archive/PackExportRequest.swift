/// What to export of a pack, as one value: the key an artifact is built (and cached) under.
///
/// A versioned request (`version` set) gives the same bytes on every build and on every cluster
/// node, from either store, as long as the version can be built: rows in key order, ids
/// renumbered, and every time field the file stores taken from the version (see `MapLibreExport`).
/// A store holds one copy of each row, so a version can only be built while its content is the
/// pack's: while it is the current version and nothing changed the pack's rows since it was cut.
/// Its artifact is built then and kept; a request for an older version, or for the current one
/// while a refresh is changing its rows, is refused with a precise `ExportError`.
public struct PackExportRequest: Sendable, Hashable, CustomStringConvertible {
    public enum Format: String, Sendable, Hashable, CaseIterable {
        /// MapLibre Native's offline database (schema 6), the one a device side-loads.
        case maplibre
        /// MBTiles 1.3 of one tileset.
        case mbtiles
        /// PMTiles v3 of one tileset.
        case pmtiles

        /// The archive format of a one-tileset export; nil for `maplibre`.
        public var archive: TileArchiveFormat? {
            switch self {
            case .maplibre: nil
            case .mbtiles: .mbtiles
            case .pmtiles: .pmtiles
            }
        }
    }

    public var pack: Int64
    /// The version to export, which must be the pack's current one. nil: the rows the pack holds
    /// now, complete or not (`partial=true`), with the times of the pack's last change; not an
    /// artifact (another call may give other bytes).
    public var version: Int64?
    public var format: Format
    /// `mbtiles`/`pmtiles`: the tileset's URL template (its highest stored pixel ratio); nil: the
    /// pack's only tileset.
    public var source: String?
    /// `maplibre` of a version only: a delta for a device holding version `since` (retained,
    /// below `version`): the region row as that device holds it, and only the rows whose content
    /// changed after it.
    public var since: Int64?

    public init(pack: Int64, version: Int64?, format: Format = .maplibre, source: String? = nil, since: Int64? = nil) {
        self.pack = pack
        self.version = version
        self.format = format
        self.source = source
        self.since = since
    }

    /// Whether the fields fit together (a delta is a versioned `maplibre` export with `since`
    /// below `version`; a `source` names an archive's tileset): the first problem, else nil.
    public var problem: ExportError? {
        if source != nil, format == .maplibre {
            return .invalidRequest(field: "source", "a maplibre export holds every source")
        }
        guard let since else { return nil }
        guard format == .maplibre else {
            return .invalidRequest(field: "since", "a delta (since) is a maplibre export")
        }
        guard let version else {
            return .invalidRequest(field: "since", "a delta (since) is between two versions; name the version too")
        }
        guard since >= 1, since < version else {
            return .invalidRequest(field: "since", "since must be a version from 1 to \(version - 1)")
        }
        return nil
    }

    public var description: String {
        "pack \(pack) " + (version.map { "version \($0)" } ?? "unversioned") + " \(format.rawValue)"
            + (source.map { " source \($0)" } ?? "") + (since.map { " since \($0)" } ?? "")
    }
}

/// What an export wrote.
public struct PackExportSummary: Sendable, Equatable {
    /// Rows of `resources` (maplibre; 0 for archives).
    public var resources: Int
    /// Tiles written (no-content rows included in a maplibre export, not in archives).
    public var tiles: Int
    /// The version exported; nil for an unversioned export.
    public var version: Int64?

    public init(resources: Int, tiles: Int, version: Int64?) {
        self.resources = resources
        self.tiles = tiles
        self.version = version
    }
}
