/// Merging an uploaded MapLibre offline database into the store, with MapLibre's rules (a row is
/// taken when it is new or newer by `modified`; a region matching a pack merges into it). Runs on
/// the store's writer, in one transaction: all of it or nothing.
public protocol PackImporting {
    func importUpload(_ upload: any CheckedUpload) throws(ImportError) -> ImportOutcome
}

/// An upload that passed the store's checks (`PackStore.checkUpload`), ready to merge. Holding it
/// keeps any scratch copy alive.
public protocol CheckedUpload: AnyObject, Sendable {
    /// The file the merge reads.
    var path: String { get }
    /// Calls `body` with each uploaded region's id and stored definition (MapLibre's JSON text),
    /// in id order, one at a time, so that a layer that knows regions can refuse one it cannot
    /// read before anything is merged.
    func forEachRegionDefinition(_ body: (_ regionID: Int64, _ definition: String) -> Void) throws(ImportError)
}

/// Bounds on an uploaded database.
public struct UploadLimits: Sendable {
    /// Largest upload accepted.
    public var maximumBytes: UInt64 = 4 << 30
    /// Largest single resource or tile body.
    public var maximumBlobBytes: Int64 = 64 << 20

    public init(maximumBytes: UInt64 = 4 << 30, maximumBlobBytes: Int64 = 64 << 20) {
        self.maximumBytes = maximumBytes
        self.maximumBlobBytes = maximumBlobBytes
    }
}

/// What a merge did: the packs it added or merged into, and what it counted just before.
public struct ImportOutcome: Sendable, Equatable {
    public struct ImportedPack: Equatable, Sendable {
        public let id: Int64
        /// True when the region was new; false when it matched an existing pack.
        public let added: Bool

        public init(id: Int64, added: Bool) {
            self.id = id
            self.added = added
        }
    }

    public let packs: [ImportedPack]
    /// Distinct region-linked resources (not tiles) the merge inserted or replaced.
    public let resources: Int64
    /// Distinct region-linked tiles the merge inserted or replaced.
    public let tiles: Int64
    /// Existing packs an upload region matched and brought nothing new or newer to.
    public let unchangedPacks: Set<Int64>
    /// Upload regions that matched an existing pack and brought nothing new or newer.
    public let unchangedRegions: Int64
    /// The versions the merge cut: complete packs whose content it changed (`version_created`).
    public var createdVersions: [PackVersion] = []

    public init(packs: [ImportedPack], resources: Int64, tiles: Int64, unchangedPacks: Set<Int64>, unchangedRegions: Int64,
                createdVersions: [PackVersion] = []) {
        self.packs = packs
        self.resources = resources
        self.tiles = tiles
        self.unchangedPacks = unchangedPacks
        self.unchangedRegions = unchangedRegions
        self.createdVersions = createdVersions
    }
}

/// Why an uploaded offline database was refused or could not be merged. Every case but `store`
/// and `file` is the client's fault (the API answers 4xx with `description`); in all cases
/// nothing was merged.
public enum ImportError: Error, CustomStringConvertible, Sendable, Equatable {
    case tooLarge(size: UInt64, limit: UInt64)
    case notSQLite
    /// The file is shorter than its own header says, or SQLite finds damaged pages.
    case corrupt(String)
    /// `user_version` other than 6 (or 5, which is upgraded in a copy).
    case unsupportedVersion(Int64)
    /// Tables, indexes or columns other than MapLibre's schema.
    case unexpectedSchema(String)
    /// Triggers and views run code on read/write: never accepted.
    case triggersOrViews([String])
    /// Rows whose values MapLibre could not have written (wrong types, zooms out of range, …).
    case invalidRows(String)
    /// Region definitions that do not decode as a region: each problem of the first regions
    /// found, its pointer naming the upload's row and the field (`/regions/{id}/definition/…`).
    case invalidRegions([(pointer: String, detail: String)])
    /// Merging would link more distinct tiles than the configured global tile limit.
    case tileLimitExceeded(tiles: Int64, limit: Int64)
    case store(StoreError)
    case file(String)

    public var isClientError: Bool {
        switch self {
        case .store, .file: return false
        default: return true
        }
    }

    public var description: String {
        switch self {
        case .tooLarge(let size, let limit): return "import of \(size) bytes exceeds the limit of \(limit) bytes"
        case .notSQLite: return "not an SQLite database"
        case .corrupt(let detail): return "damaged or truncated database: \(detail)"
        case .unsupportedVersion(let version):
            return "MapLibre offline schema version \(version) is not supported (5 and 6 are)"
        case .unexpectedSchema(let detail): return "not a MapLibre offline database: \(detail)"
        case .triggersOrViews(let names): return "database contains triggers or views: \(names.joined(separator: ", "))"
        case .invalidRows(let detail): return "invalid rows: \(detail)"
        case .invalidRegions(let problems):
            return "unreadable region definitions: " + problems.map { "\($0.pointer): \($0.detail)" }.joined(separator: "; ")
        case .tileLimitExceeded(let tiles, let limit):
            return "importing would store \(tiles) pack tiles, more than the limit of \(limit)"
        case .store(let error): return error.description
        case .file(let message): return message
        }
    }

    public static func == (lhs: ImportError, rhs: ImportError) -> Bool {
        lhs.description == rhs.description
    }
}
