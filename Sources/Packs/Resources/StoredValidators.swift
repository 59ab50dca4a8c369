/// One stored row of a pack as a revalidation sees it: its key, the validators to send with a
/// conditional request, and whether it holds a body. Never the body itself, so a page of these
/// stays small whatever the tiles weigh.
public struct StoredValidators: Sendable, Equatable {
    /// The row's id in `resources` or `tiles`: the paging cursor.
    public var rowID: Int64
    public var key: ResourceKey
    public var etag: String?
    /// `Last-Modified` in Unix seconds.
    public var modified: Int64?
    /// False when stored as "no content" (NULL `data`).
    public var hasBody: Bool

    public init(rowID: Int64, key: ResourceKey, etag: String?, modified: Int64?, hasBody: Bool) {
        self.rowID = rowID
        self.key = key
        self.etag = etag
        self.modified = modified
        self.hasBody = hasBody
    }
}
