/// One row of the `packd_events` log, for replay after `Last-Event-ID`.
public struct StoredEvent: Sendable, Equatable {
    public var id: Int64
    public var packID: Int64?
    public var type: String
    /// The event's JSON payload as stored.
    public var json: String
    public var createdAt: Int64
}

/// One row of `packd_errors`: a resource that failed for good.
public struct ResourceFailure: Sendable, Equatable {
    public var id: Int64
    public var url: String
    public var status: Int64?
    public var message: String
    public var attempts: Int64
    public var at: Int64
}

/// A stored response for an `Idempotency-Key`.
public struct IdempotencyEntry: Sendable, Equatable {
    public var requestHash: String
    public var packID: Int64?
    public var status: Int64
    public var body: [UInt8]
    public var createdAt: Int64
}
