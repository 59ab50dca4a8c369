/// What a store holds of stored resources and tiles (MapLibre's `resources`/`tiles` tables and
/// their region links), as downloads, revalidations, offline serving and estimates ask it.
/// Methods run on a thread that may block (inside `PackStore.read`/`write`).
public protocol ResourceIndex: AnyObject {
    /// A stored resource or tile; with `packID`, only one linked to that pack. Reading counts as
    /// an access (the store updates `accessed` in a later batch).
    func resource(_ key: ResourceKey, linkedTo packID: Int64?) throws -> StoredResource?
    /// URLs of the non-tile resources linked to the pack.
    func storedResourceURLs(packID: Int64) throws -> Set<String>
    /// One window of tiles (one template, ratio and zoom): those the pack links (skipped by a
    /// download) and those stored elsewhere and fresh at `now` (linked instead of fetched). With
    /// `version`, only tiles stored from that version of their source count at all (a tile of a
    /// PMTiles archive stored from a replaced archive is fetched again).
    func tileWindow(packID: Int64, urlTemplate: String, pixelRatio: Int64, z: Int64,
                    xRange: ClosedRange<Int64>, yRange: ClosedRange<Int64>, now: Int64,
                    version: TileVersion?) throws -> StoredTileWindow
    /// A page of the pack's stored resources (not tiles) with their validators, by row id.
    func resourceValidators(packID: Int64, afterRowID: Int64, limit: Int) throws -> [StoredValidators]
    /// A page of the pack's stored tiles with their validators, by row id.
    func tileValidators(packID: Int64, afterRowID: Int64, limit: Int) throws -> [StoredValidators]
    /// A page of the pack's stored tiles with content, by tile row id after `afterRowID`, of the
    /// templates in `urlTemplates`: at most `limit` rows, and no row past the one that brings the
    /// page's bodies over `maxBytes` (glyph subsetting reads every tile, memory stays flat).
    func tileBodies(packID: Int64, urlTemplates: [String], afterRowID: Int64, limit: Int, maxBytes: Int) throws -> [StoredTileBody]
    /// The stored size (`LENGTH(data)`) of each of `urls` the store holds with content, in any
    /// pack or the ambient cache; not an access (nothing is touched).
    func storedSizes(urls: [String]) throws -> [String: Int64]
    /// What `check-update` asks the upstream about: the style, TileJSONs and a sample of sprite
    /// and glyph rows, at most `limit`.
    func updateProbes(packID: Int64, limit: Int) throws -> [StoredValidators]
    /// Stored tiles of one template, ratio and zoom, and their bytes, over at most `limit` rows
    /// (for byte estimates).
    func tileSizeSample(urlTemplate: String, pixelRatio: Int64, z: Int64, limit: Int) throws -> (tiles: Int64, bytes: Int64)
}

/// A stored tile's body as `tileBodies` pages it: the row id (the page cursor), where the tile is,
/// and its stored body (zlib when `compressed`).
public struct StoredTileBody: Sendable {
    public var rowID: Int64
    public var key: TileKey
    public var body: StoredBody

    public init(rowID: Int64, key: TileKey, body: StoredBody) {
        self.rowID = rowID
        self.key = key
        self.body = body
    }
}

/// Links rows already stored — by another pack, or in the ambient cache — to a pack instead of
/// downloading them again (MapLibre's `markUsed`), on the store's writer. The pack's progress, the
/// global tile count and the ambient size change exactly as if the rows had been written.
public protocol MutableResourceIndex: ResourceIndex {
    /// Links the stored, fresh, not yet linked tiles of one template, ratio and zoom inside
    /// `spans` (`[y, x0, x1]` runs). Under a global tile limit, tiles no pack links yet are left
    /// out once they would exceed it. Returns the coordinates linked and the pack's progress
    /// (nil when the pack is gone).
    func linkFreshTiles(packID: Int64, urlTemplate: String, pixelRatio: Int64, z: Int64, spans: [[Int64]],
                        xRange: ClosedRange<Int64>, yRange: ClosedRange<Int64>, now: Int64) throws -> Linked<TileBitmap>
    /// Links the stored, fresh, not yet linked resources among `urls`; returns the URLs linked.
    func linkFreshResources(packID: Int64, urls: [String], now: Int64) throws -> Linked<Set<String>>
    /// Stores `write` now (a request waits for it, so not in a batch) in the ambient cache —
    /// unless the cache is disabled and no pack holds the resource: false, nothing written.
    func storeInAmbientCache(_ write: ResourceWrite, now: Int64) throws -> Bool
}

extension ResourceIndex {
    /// `tileWindow` whatever version the tiles were stored from.
    public func tileWindow(packID: Int64, urlTemplate: String, pixelRatio: Int64, z: Int64,
                           xRange: ClosedRange<Int64>, yRange: ClosedRange<Int64>, now: Int64) throws -> StoredTileWindow {
        try tileWindow(packID: packID, urlTemplate: urlTemplate, pixelRatio: pixelRatio, z: z, xRange: xRange,
                       yRange: yRange, now: now, version: nil)
    }
}

/// The version of a source its tiles were stored from, as the validators stored with each tile
/// name it: the `etag` and `modified` (Unix seconds of `Last-Modified`) columns. Every tile read
/// from a PMTiles archive is stored with the archive's own validators.
public struct TileVersion: Sendable, Hashable {
    public var etag: String?
    public var modified: Int64?

    public init(etag: String?, modified: Int64?) {
        self.etag = etag
        self.modified = modified
    }
}

/// What a link call linked, and the pack's progress after it (nil when the pack is gone).
public struct Linked<Rows: Sendable>: Sendable {
    public var rows: Rows
    public var progress: StoredProgress?

    public init(rows: Rows, progress: StoredProgress?) {
        self.rows = rows
        self.progress = progress
    }
}

/// What a store holds for one window of tiles (one source, one zoom) as a download sees it:
/// the tiles already linked to the pack (skipped), and those stored by another pack or in the
/// ambient cache and fresh (linked instead of fetched). Everything else is downloaded.
public struct StoredTileWindow: Sendable {
    public var linkedHere: TileBitmap
    public var linkable: TileBitmap

    public init(linkedHere: TileBitmap, linkable: TileBitmap) {
        self.linkedHere = linkedHere
        self.linkable = linkable
    }
}
