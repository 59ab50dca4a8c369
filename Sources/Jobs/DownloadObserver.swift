import Packs

/// What downloads report as they go, for listeners outside Jobs (`/metrics`, `resource_error`
/// events): packd wires these, Jobs does not know of them. Called on the loop thread.
public struct DownloadObserver {
    /// One failed request of a resource, as the `resource_error` event tells it.
    public struct ResourceFailure: Sendable {
        public let packID: Int64
        /// The canonical URL (upstream rules' credentials are added only inside Fetch).
        public let url: String
        /// The upstream's status, nil for a transport error.
        public let status: Int?
        /// The transport error, nil when the upstream answered.
        public let error: String?
        public let attempt: Int
        public let willRetry: Bool
    }

    /// A resource was downloaded and handed to the writer (a body, or a tile's "no content").
    public var resourceDownloaded: () -> Void
    /// A resource is tried again after a transient failure.
    public var retried: () -> Void
    /// A request of a resource failed (retried or not).
    public var resourceFailed: (ResourceFailure) -> Void

    public init(resourceDownloaded: @escaping () -> Void = {}, retried: @escaping () -> Void = {},
                resourceFailed: @escaping (ResourceFailure) -> Void = { _ in }) {
        self.resourceDownloaded = resourceDownloaded
        self.retried = retried
        self.resourceFailed = resourceFailed
    }
}
