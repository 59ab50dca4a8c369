/// A row read back from `resources` or `tiles`.
public struct StoredResource: Sendable, Equatable {
    public var id: Int64
    /// nil: stored as "no content" (NULL `data`).
    public var body: StoredBody?
    public var cache: HTTPCacheHeaders
    public var accessed: Int64

    public init(id: Int64, body: StoredBody?, cache: HTTPCacheHeaders, accessed: Int64) {
        self.id = id
        self.body = body
        self.cache = cache
        self.accessed = accessed
    }

    /// Usable without revalidation at `now` (MapLibre: not expired).
    public func isFresh(now: Int64) -> Bool {
        guard let expires = cache.expires else { return true }
        return expires > now
    }
}
