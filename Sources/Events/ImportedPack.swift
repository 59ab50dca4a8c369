import Packs

/// A pack an import added or changed, read back after the merge committed, as its events show it
/// (`PackEventPublisher.packsImported`).
public struct ImportedPack: Sendable {
    public let record: PackRecord
    public let progress: StoredProgress
    /// New to this server (a `state` event, as for a created pack), else updated.
    public let added: Bool

    public init(record: PackRecord, progress: StoredProgress, added: Bool) {
        self.record = record
        self.progress = progress
        self.added = added
    }
}
