/// One row of the `packd_events` log, for replay after `Last-Event-ID`.
public struct StoredEvent: Sendable, Equatable {
    public var id: Int64
    public var packID: Int64?
    public var type: String
    /// The event's JSON payload as stored.
    public var json: String
    public var createdAt: Int64

    public init(id: Int64, packID: Int64?, type: String, json: String, createdAt: Int64) {
        self.id = id
        self.packID = packID
        self.type = type
        self.json = json
        self.createdAt = createdAt
    }
}

/// One row of `packd_errors`: a resource that failed for good.
public struct ResourceFailure: Sendable, Equatable {
    public var id: Int64
    public var url: String
    public var status: Int64?
    public var message: String
    public var attempts: Int64
    public var at: Int64

    public init(id: Int64, url: String, status: Int64?, message: String, attempts: Int64, at: Int64) {
        self.id = id
        self.url = url
        self.status = status
        self.message = message
        self.attempts = attempts
        self.at = at
    }
}

/// A stored response for an `Idempotency-Key`.
public struct IdempotencyEntry: Sendable, Equatable {
    public var requestHash: String
    public var packID: Int64?
    public var status: Int64
    public var body: [UInt8]
    public var createdAt: Int64

    public init(requestHash: String, packID: Int64?, status: Int64, body: [UInt8], createdAt: Int64) {
        self.requestHash = requestHash
        self.packID = packID
        self.status = status
        self.body = body
        self.createdAt = createdAt
    }
}
