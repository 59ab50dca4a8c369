/// The counts of a pack's last revalidation (`POST /v1/packs/{id}/invalidate`), as committed:
/// each count only includes resources whose new row (or refreshed cache columns) is durable.
public struct PackInvalidation: Sendable, Equatable, Codable {
    /// 304, or a 200 with the stored bytes: only the cache columns were refreshed.
    public var unchanged: Int64
    /// A 200 with other bytes: the stored body was replaced.
    public var updated: Int64
    /// 404/410 (or 204 for a tile): a tile is now stored as no content; another resource keeps its copy.
    public var removed: Int64
    public var startedAt: Int64
    /// nil while revalidating.
    public var completedAt: Int64?

    public init(unchanged: Int64 = 0, updated: Int64 = 0, removed: Int64 = 0, startedAt: Int64, completedAt: Int64? = nil) {
        self.unchanged = unchanged
        self.updated = updated
        self.removed = removed
        self.startedAt = startedAt
        self.completedAt = completedAt
    }

    /// Started and not finished (suspended, or interrupted by a restart).
    public var isRunning: Bool { completedAt == nil }
}
