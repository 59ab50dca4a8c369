import Foundation

/// Why a pack stopped in `failed`: the `error` object of api.md (`{code, detail, url?, status?}`).
public struct PackFailure: Error, Sendable, Equatable {
    public enum Code: String, Sendable {
        case styleUnavailable = "style_unavailable"
        case upstreamUnauthorized = "upstream_unauthorized"
        /// The address policy refused an upstream address (private, loopback, … without an allow rule).
        case hostNotAllowed = "host_not_allowed"
        /// packd's own bookkeeping went wrong (the download watchdog found it stalled).
        case internalError = "internal_error"
        /// More resources failed than `DownloadSettings.failureBudget` allows: stopped early.
        case tooManyFailures = "too_many_failures"
        /// Everything else is stored; these few failed after their retries.
        case resourcesFailed = "resources_failed"
        case invalidDocument = "invalid_document"
        /// The server-wide tile limit refused this pack's tiles.
        case tileLimitExceeded = "tile_limit_exceeded"
        /// The disk (or the configured maximum database size) is full.
        case storageFull = "storage_full"
        /// A batch with this pack's writes was rolled back for another reason.
        case storageError = "storage_error"
    }

    public let code: Code
    public let detail: String
    public let url: String?
    public let status: Int?

    public init(_ code: Code, _ detail: String, url: String? = nil, status: Int? = nil) {
        self.code = code
        self.detail = detail
        self.url = url
        self.status = status
    }

    /// The JSON stored in `packd_packs.error`.
    public var json: String {
        var object: [String: Any] = ["code": code.rawValue, "detail": detail]
        if let url { object["url"] = url }
        if let status { object["status"] = status }
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data("{}".utf8)
        return String(decoding: data, as: UTF8.self)
    }
}
