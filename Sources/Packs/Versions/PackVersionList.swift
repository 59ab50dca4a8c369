/// `GET /v1/packs/{id}/versions` (openapi's `PackVersionList`): the pack's current version and
/// its retained versions, newest first.
public struct PackVersionList: Sendable, Equatable, Codable {
    public var packID: Int64
    /// 0 until the pack first completed.
    public var version: Int64
    public var versions: [PackVersionSummary]

    public init(packID: Int64, version: Int64, versions: [PackVersionSummary]) {
        self.packID = packID
        self.version = version
        self.versions = versions
    }

    private enum CodingKeys: String, CodingKey {
        case version, versions
        case packID = "pack_id"
    }
}

/// One retained version as the API shows it (openapi's `PackVersion`), and the data of a
/// `version_created` event.
public struct PackVersionSummary: Sendable, Equatable, Codable {
    public var version: Int64
    public var createdAt: Timestamp
    public var resources: Int64
    public var tiles: Int64
    public var bytes: Int64
    public var changedResources: Int64
    public var changedBytes: Int64
    public var removedResources: Int64

    public init(_ version: PackVersion) {
        self.version = version.version
        createdAt = Timestamp(version.createdAt)
        resources = version.resources
        tiles = version.tiles
        bytes = version.bytes
        changedResources = version.changedResources
        changedBytes = version.changedBytes
        removedResources = version.removedResources
    }

    private enum CodingKeys: String, CodingKey {
        case version, resources, tiles, bytes
        case createdAt = "created_at"
        case changedResources = "changed_resources"
        case changedBytes = "changed_bytes"
        case removedResources = "removed_resources"
    }
}

/// `event: version_created` (webhooks: `pack.version_created`) — a pack's content changed and a
/// version was cut: the pack and the version as `GET /v1/packs/{id}/versions` lists it.
public struct VersionCreatedEvent: Sendable, Equatable, Codable {
    public var packID: Int64
    public var version: PackVersionSummary

    public init(packID: Int64, version: PackVersionSummary) {
        self.packID = packID
        self.version = version
    }

    private enum CodingKeys: String, CodingKey {
        case version
        case packID = "pack_id"
    }
}
