/// `GET /v1/packs/{id}/errors`: the resources that failed for good, newest first (openapi's
/// `ResourceErrorList`).
public struct ResourceErrorList: Sendable, Equatable, Codable {
    /// One failed resource (openapi's `ResourceError`).
    public struct Entry: Sendable, Equatable, Codable {
        /// Credentials removed.
        public var url: String
        /// The upstream's status; nil for a transport error.
        public var status: Int64?
        /// The transport error; nil when the upstream answered.
        public var error: String?
        public var attempts: Int64
        public var lastAttemptAt: Timestamp

        public init(_ failure: ResourceFailure) {
            url = failure.url
            status = failure.status
            error = failure.status == nil ? failure.message : nil
            attempts = max(1, failure.attempts)
            lastAttemptAt = Timestamp(failure.at)
        }

        private enum CodingKeys: String, CodingKey {
            case url, status, error, attempts
            case lastAttemptAt = "last_attempt_at"
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(url, forKey: .url)
            try container.encode(status, forKey: .status)
            try container.encode(error, forKey: .error)
            try container.encode(attempts, forKey: .attempts)
            try container.encode(lastAttemptAt, forKey: .lastAttemptAt)
        }
    }

    public var errors: [Entry]
    /// Every failure recorded for the pack, also those no longer kept.
    public var total: Int64

    public init(errors: [Entry], total: Int64) {
        self.errors = errors
        self.total = total
    }
}
