/// What the event streams say about packs (api.md, "Events"): one case per `event:` type, each
/// with its `data:` document. The API encodes them, clients (CLI, tests, benchmarks) decode them
/// with `PackEvent(kind:data:)`.
public enum PackEvent: Sendable, Equatable {
    case progress(ProgressEvent)
    case state(StateEvent)
    case resourceError(ResourceErrorEvent)
    case tileLimitExceeded(TileLimitExceededEvent)
    case packRemoved(PackRemovedEvent)
    case versionCreated(VersionCreatedEvent)
    case startAreaReady(StartAreaReadyEvent)

    /// The `event:` field. Only `progress` may be coalesced or dropped for a slow client; every
    /// other kind is a fact a client cannot reconstruct from a later event.
    public enum Kind: String, Sendable, CaseIterable, Codable {
        case progress
        case state
        case resourceError = "resource_error"
        case tileLimitExceeded = "tile_limit_exceeded"
        case packRemoved = "pack_removed"
        case versionCreated = "version_created"
        case startAreaReady = "start_area_ready"

        /// Whether a later event of the same kind makes this one redundant.
        public var isDroppable: Bool { self == .progress }
    }

    public var kind: Kind {
        switch self {
        case .progress: .progress
        case .state: .state
        case .resourceError: .resourceError
        case .tileLimitExceeded: .tileLimitExceeded
        case .packRemoved: .packRemoved
        case .versionCreated: .versionCreated
        case .startAreaReady: .startAreaReady
        }
    }

    public var packID: Int64 {
        switch self {
        case .progress(let event): event.packID
        case .state(let event): event.packID
        case .resourceError(let event): event.packID
        case .tileLimitExceeded(let event): event.packID
        case .packRemoved(let event): event.packID
        case .versionCreated(let event): event.packID
        case .startAreaReady(let event): event.packID
        }
    }

    /// The event's `data:` document as encodable.
    public var payload: any Encodable & Sendable {
        switch self {
        case .progress(let event): event
        case .state(let event): event
        case .resourceError(let event): event
        case .tileLimitExceeded(let event): event
        case .packRemoved(let event): event
        case .versionCreated(let event): event
        case .startAreaReady(let event): event
        }
    }
}

/// `event: progress` — committed progress in the same shape `GET /v1/packs/{id}` has it, with
/// the state the pack is in; `invalidation` only while a revalidation runs.
public struct ProgressEvent: Sendable, Equatable, Codable {
    public var packID: Int64
    public var state: PackState
    public var progress: PackProgress
    public var invalidation: InvalidationResult?

    public init(packID: Int64, state: PackState, progress: PackProgress, invalidation: InvalidationResult? = nil) {
        self.packID = packID
        self.state = state
        self.progress = progress
        self.invalidation = invalidation
    }

    private enum CodingKeys: String, CodingKey {
        case state, progress, invalidation
        case packID = "pack_id"
    }
}

/// `event: state` — every state change; `previous_state` is null for a pack just created.
public struct StateEvent: Sendable, Equatable, Codable {
    public var packID: Int64
    public var state: PackState
    public var previousState: PackState?
    public var error: PackError?

    public init(packID: Int64, state: PackState, previousState: PackState?, error: PackError?) {
        self.packID = packID
        self.state = state
        self.previousState = previousState
        self.error = error
    }

    private enum CodingKeys: String, CodingKey {
        case state, error
        case packID = "pack_id"
        case previousState = "previous_state"
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(packID, forKey: .packID)
        try container.encode(state, forKey: .state)
        try container.encode(previousState, forKey: .previousState)
        try container.encode(error, forKey: .error)
    }
}

/// `event: resource_error` — one failed request of a download (`url` without credentials);
/// `status` when the upstream answered, else the transport `error`.
public struct ResourceErrorEvent: Sendable, Equatable, Codable {
    public var packID: Int64
    public var url: String
    public var status: Int?
    public var error: String?
    public var attempt: Int
    public var willRetry: Bool

    public init(packID: Int64, url: String, status: Int?, error: String?, attempt: Int, willRetry: Bool) {
        self.packID = packID
        self.url = url
        self.status = status
        self.error = error
        self.attempt = attempt
        self.willRetry = willRetry
    }

    private enum CodingKeys: String, CodingKey {
        case url, status, error, attempt
        case packID = "pack_id"
        case willRetry = "will_retry"
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(packID, forKey: .packID)
        try container.encode(url, forKey: .url)
        try container.encode(status, forKey: .status)
        try container.encode(error, forKey: .error)
        try container.encode(attempt, forKey: .attempt)
        try container.encode(willRetry, forKey: .willRetry)
    }
}

/// `event: tile_limit_exceeded` — after the `state` event that failed the pack: the tiles it
/// needs against its own `max_tiles`, or all packs' tiles against the server's limit.
public struct TileLimitExceededEvent: Sendable, Equatable, Codable {
    public var packID: Int64
    public var count: Int64
    public var maximum: Int64

    public init(packID: Int64, count: Int64, maximum: Int64) {
        self.packID = packID
        self.count = count
        self.maximum = maximum
    }

    private enum CodingKeys: String, CodingKey {
        case count, maximum
        case packID = "pack_id"
    }
}

/// `event: pack_removed`.
public struct PackRemovedEvent: Sendable, Equatable, Codable {
    public var packID: Int64

    public init(packID: Int64) {
        self.packID = packID
    }

    private enum CodingKeys: String, CodingKey {
        case packID = "pack_id"
    }
}

/// `event: start_area_ready` — every tile of every zoom of the pack's start area is durably
/// stored (once per pack; `start_area_ready_at` in the pack says when).
public struct StartAreaReadyEvent: Sendable, Equatable, Codable {
    public var packID: Int64
    public var startArea: StartArea
    public var readyAt: Timestamp

    public init(packID: Int64, startArea: StartArea, readyAt: Timestamp) {
        self.packID = packID
        self.startArea = startArea
        self.readyAt = readyAt
    }

    private enum CodingKeys: String, CodingKey {
        case packID = "pack_id"
        case startArea = "start_area"
        case readyAt = "ready_at"
    }
}
