import Packs

extension ResponseHeaders {
    /// The answer's caching headers as a store keeps them (`Cache-Control` max-age over
    /// `Expires`, `ETag`, `Last-Modified`), with expiry reckoned from `now` (Unix seconds).
    public func cacheHeaders(now: Int64) -> HTTPCacheHeaders {
        var fields: [(name: String, value: String)] = []
        if let value = cacheControl { fields.append(("cache-control", value)) }
        if let value = expires { fields.append(("expires", value)) }
        if let value = etag { fields.append(("etag", value)) }
        if let value = lastModified { fields.append(("last-modified", value)) }
        return HTTPCacheHeaders(headers: fields, now: now)
    }
}
