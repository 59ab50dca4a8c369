/// One upstream request, in canonical form: no credentials (upstream rules add them on the wire).
public struct FetchRequest: Sendable {
    public enum Method: String, Sendable { case get = "GET", head = "HEAD", post = "POST" }

    public var url: String
    public var method: Method
    /// Extra request headers. Names and values are validated: no CR/LF, bounded length.
    public var headers: [(name: String, value: String)]
    /// Validators of a stored copy; a match answers 304 with no body.
    public var ifNoneMatch: String?
    /// Unix seconds of the stored copy's `Last-Modified`.
    public var ifModifiedSince: Int64?
    /// Only these bytes, of this version of the file (`RangeRequest`): a 200 is refused at its
    /// first bytes, a 206 checked against what was asked.
    public var range: RangeRequest?
    /// The body may not exceed this; checked against Content-Length before the body flows.
    public var maxBodyBytes: Int
    public var timeouts: Timeouts
    /// Groups transfers so one call can cancel all of them (a pack id, for instance).
    public var owner: UInt64
    /// What a `post` sends, and the answers it takes (`FetchRequest+Post.swift`).
    public var post: Post?

    public struct Timeouts: Sendable {
        public var connectMilliseconds: Int
        /// The transfer fails if it moves fewer than `lowSpeedBytesPerSecond` for `lowSpeedSeconds`.
        public var lowSpeedBytesPerSecond: Int
        public var lowSpeedSeconds: Int
        public var totalMilliseconds: Int

        public init(connectMilliseconds: Int = 10_000, lowSpeedBytesPerSecond: Int = 1, lowSpeedSeconds: Int = 30,
                    totalMilliseconds: Int = 120_000) {
            self.connectMilliseconds = connectMilliseconds
            self.lowSpeedBytesPerSecond = lowSpeedBytesPerSecond
            self.lowSpeedSeconds = lowSpeedSeconds
            self.totalMilliseconds = totalMilliseconds
        }
    }

    public init(url: String, method: Method = .get, headers: [(name: String, value: String)] = [],
                ifNoneMatch: String? = nil, ifModifiedSince: Int64? = nil, range: RangeRequest? = nil,
                maxBodyBytes: Int = 16 << 20, timeouts: Timeouts = Timeouts(), owner: UInt64 = 0) {
        self.range = range
        self.url = url
        self.method = method
        self.headers = headers
        self.ifNoneMatch = ifNoneMatch
        self.ifModifiedSince = ifModifiedSince
        self.maxBodyBytes = maxBodyBytes
        self.timeouts = timeouts
        self.owner = owner
    }
}
