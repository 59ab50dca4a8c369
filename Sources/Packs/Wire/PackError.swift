/// Why a pack stopped in `failed`: the `error` object of api.md (`{code, detail, url?, status?}`),
/// as the API shows it, the events carry it and the store keeps it.
public struct PackError: Error, Sendable, Equatable, Hashable, Codable, CustomStringConvertible {
    public enum Code: String, Sendable, Codable, CaseIterable {
        case styleUnavailable = "style_unavailable"
        case invalidStyle = "invalid_style"
        case sourceUnavailable = "source_unavailable"
        case invalidSource = "invalid_source"
        case upstreamUnauthorized = "upstream_unauthorized"
        /// The address policy refused an upstream address (private, loopback, … without an allow rule).
        case hostNotAllowed = "host_not_allowed"
        /// The server-wide tile limit, or the pack's own `max_tiles`, refused this pack's tiles.
        case tileLimitExceeded = "tile_limit_exceeded"
        /// More resources failed than the failure budget allows: stopped early.
        case tooManyFailures = "too_many_failures"
        /// Everything else is stored; these few failed after their retries.
        case resourcesFailed = "resources_failed"
        case invalidDocument = "invalid_document"
        /// A PMTiles archive's server ignores Range requests (it answered 200 with the whole file).
        case rangeNotSupported = "range_not_supported"
        /// The disk (or the configured maximum database size) is full.
        case storageFull = "storage_full"
        /// A batch with this pack's writes was rolled back for another reason.
        case storageError = "storage_error"
        /// packd's own bookkeeping went wrong (the download watchdog found it stalled).
        case internalError = "internal_error"
    }

    public let code: Code
    public let detail: String
    /// The resource concerned, credentials removed.
    public let url: String?
    /// The upstream's HTTP status, when it answered.
    public let status: Int?

    public init(_ code: Code, _ detail: String, url: String? = nil, status: Int? = nil) {
        self.code = code
        self.detail = detail
        self.url = url
        self.status = status
    }

    public var description: String { "\(code.rawValue): \(detail)" }

    private enum CodingKeys: String, CodingKey {
        case code, detail, url, status
    }
}
