/// One row for the writer: a downloaded (or revalidated) resource, optionally linked to a pack.
public struct ResourceWrite: Sendable {
    public enum Content: Sendable {
        /// A body, already in its stored form (`StoredBody.encoding`, done off the writer thread).
        case body(StoredBody)
        /// 204/404 for a tile: stored with NULL `data`, counts as complete (as MapLibre does).
        case noContent
        /// 304: only `accessed`, `expires` and `must_revalidate` change; the body stays.
        case notModified
        /// A 200 whose content equals the stored copy (a revalidation compared them): the cache
        /// columns take the response's validators (`modified`, `etag` too); the stored body stays,
        /// and the row's content has not changed (no new pack version for it).
        case unchangedBody
        /// Already stored (by another pack or the ambient cache) and fresh: only link it.
        case linkExisting
    }

    public var key: ResourceKey
    public var content: Content
    public var cache: HTTPCacheHeaders
    /// The pack to link the row to; nil stores it in the ambient cache.
    public var packID: Int64?

    public init(key: ResourceKey, content: Content, cache: HTTPCacheHeaders = HTTPCacheHeaders(), packID: Int64? = nil) {
        self.key = key
        self.content = content
        self.cache = cache
        self.packID = packID
    }
}
