/// A pack's durable progress, as stored in `packd_progress`. "Completed" counts distinct rows
/// linked to the pack (`region_resources` + `region_tiles`), bytes are `LENGTH(data)` as MapLibre
/// sums them: the same numbers MapLibre's `getRegionCompletedStatus` reports.
public struct StoredProgress: Sendable, Equatable, Codable {
    /// Resources of every kind, tiles included.
    public var completedResources: Int64
    public var completedBytes: Int64
    public var completedTiles: Int64
    public var completedTileBytes: Int64
    public var failedResources: Int64
    /// Range requests made to PMTiles archives for the pack (every run, retries included), and
    /// the bytes they brought: what the coalescing of tiles into ranges saved shows here.
    public var archiveRequests: Int64
    public var archiveBytes: Int64

    public init(completedResources: Int64 = 0, completedBytes: Int64 = 0, completedTiles: Int64 = 0,
                completedTileBytes: Int64 = 0, failedResources: Int64 = 0, archiveRequests: Int64 = 0,
                archiveBytes: Int64 = 0) {
        self.completedResources = completedResources
        self.completedBytes = completedBytes
        self.completedTiles = completedTiles
        self.completedTileBytes = completedTileBytes
        self.failedResources = failedResources
        self.archiveRequests = archiveRequests
        self.archiveBytes = archiveBytes
    }

    /// The completed counts only (what a recount from the link tables can know).
    public var completed: StoredProgress {
        StoredProgress(completedResources: completedResources, completedBytes: completedBytes,
                     completedTiles: completedTiles, completedTileBytes: completedTileBytes)
    }
}
