/// One version of a pack: what it held when a download first completed it (version 1) or when a
/// refresh — or another pack's refresh of rows it shares — changed its content (the next one).
/// A store keeps the latest `--keep-versions` of them ("retained"); the numbers never repeat.
///
/// Versions are cut along a store-wide change sequence (see `PackVersionRepository`): every
/// change of a stored row's content, and every row linked to a pack that already has a version,
/// takes the next number of the sequence; a version records the sequence's value when it was
/// cut (`changeBoundary`). The rows a version changed are the pack's rows whose change number lies
/// between the previous version's boundary and its own; a delta since version N holds the rows
/// numbered above N's boundary. One sequence for the whole store is what makes a tile that one
/// pack's refresh changed count as changed for every other pack linking it.
public struct PackVersion: Sendable, Equatable {
    public var packID: Int64
    public var version: Int64
    /// Unix seconds. Strictly increasing along a pack's versions (a version cut in the same second
    /// as the one before takes the next second): exports write it as every row's `modified`, and
    /// MapLibre's side-load merge replaces a stored row only with a newer one.
    public var createdAt: Int64
    /// The store's change sequence when the version was cut: the pack's rows numbered at or below
    /// it are this version's content.
    public var changeBoundary: Int64
    /// Every stored row of the pack (resources and tiles, as `completed_resources` counts them).
    public var resources: Int64
    public var tiles: Int64
    public var bytes: Int64
    /// Rows whose content is new or different since the previous version (all of them in version 1).
    public var changedResources: Int64
    /// Bytes of the changed rows' stored bodies.
    public var changedBytes: Int64
    /// Rows that now have no content (a tile that answered 404/204), and had some before.
    public var removedResources: Int64
    /// The pack's name when the version was cut: MBTiles and PMTiles exports carry it, so a
    /// rename does not change a version's bytes.
    public var name: String
    /// The MapLibre region's `description` exports carry. It is version 1's in every later
    /// version: MapLibre's merge matches regions by definition *and* description, so a device's
    /// region stays one region only if both never change (a `PATCH` of `context` changes packd's
    /// copy, not what devices are sent).
    public var regionDescription: [UInt8]?

    public init(packID: Int64, version: Int64, createdAt: Int64, changeBoundary: Int64, resources: Int64, tiles: Int64,
                bytes: Int64, changedResources: Int64, changedBytes: Int64, removedResources: Int64, name: String,
                regionDescription: [UInt8]?) {
        self.packID = packID
        self.version = version
        self.createdAt = createdAt
        self.changeBoundary = changeBoundary
        self.resources = resources
        self.tiles = tiles
        self.bytes = bytes
        self.changedResources = changedResources
        self.changedBytes = changedBytes
        self.removedResources = removedResources
        self.name = name
        self.regionDescription = regionDescription
    }
}

/// Where a version number stands for a pack whose current version and retained versions are
/// known: what `GET /v1/packs/{id}/versions/{v}/…` answers (current or retained: 200; no longer
/// retained: 410 naming the current one; never existed: 404).
public enum PackVersionStanding: Sendable, Equatable {
    case current
    /// Retained, but a later version exists.
    case retained
    /// Existed once (it is at most the current number) and was pruned.
    case notRetained(current: Int64)
    /// 0, negative, or above the current version.
    case unknown

    public init(_ version: Int64, current: Int64, retained: [Int64]) {
        if version < 1 || version > current {
            self = .unknown
        } else if version == current {
            self = .current
        } else if retained.contains(version) {
            self = .retained
        } else {
            self = .notRetained(current: current)
        }
    }

    /// Current or retained.
    public var isRetained: Bool {
        switch self {
        case .current, .retained: true
        case .notRetained, .unknown: false
        }
    }
}
