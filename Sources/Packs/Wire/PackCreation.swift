/// The body of `POST /v1/packs` (openapi's `PackCreate`): the region, in the same shape a pack
/// shows it, and the pack's settings beside it. The CLI encodes it; the API decodes `Settings`
/// with it and reads `region` with its own validation (a pointer per problem).
public struct PackCreation: Sendable, Equatable, Encodable {
    /// Everything of the body but `region`. Absent fields are omitted, so the server's defaults
    /// apply (`start` true, no limits).
    public struct Settings: Sendable, Equatable, Codable {
        /// The opaque context as base64 text (RFC 4648, with padding); the API checks it.
        public var context: String?
        public var name: String?
        public var start: Bool?
        public var limits: PackLimits?
        /// A scheduled refresh (`{"every": "P7D"}`).
        public var refresh: PackRefresh?
        /// Where to download first.
        public var startArea: StartArea?

        public init(context: [UInt8]? = nil, name: String? = nil, start: Bool? = nil, limits: PackLimits? = nil,
                    refresh: PackRefresh? = nil, startArea: StartArea? = nil) {
            self.context = context.map(Base64.encode)
            self.name = name
            self.start = start
            self.limits = limits
            self.refresh = refresh
            self.startArea = startArea
        }

        private enum CodingKeys: String, CodingKey {
            case context, name, start, limits, refresh
            case startArea = "start_area"
        }
    }

    public var region: Region
    public var settings: Settings

    public init(region: Region, settings: Settings = Settings()) {
        self.region = region
        self.settings = settings
    }

    private enum CodingKeys: String, CodingKey { case region }

    /// `region` and the settings' fields in one object.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(region, forKey: .region)
        try settings.encode(to: encoder)
    }
}

/// The body of `POST /v1/estimates` (openapi's `EstimateRequest`).
public struct EstimateRequest: Sendable, Equatable, Encodable {
    public var region: Region

    public init(region: Region) {
        self.region = region
    }
}
