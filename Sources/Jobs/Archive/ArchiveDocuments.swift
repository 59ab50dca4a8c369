import Loop
import Plan

/// A document source that derives the TileJSON of each PMTiles archive a plan names (the
/// resource under the archive's key, `pmtiles+https://…`) by opening the archive with range
/// reads, and hands every other document to `inner`. Downloads, estimates and revalidations
/// wrap their own source in it; a download keeps the opened archives to read their tiles.
public final class ArchiveDocuments: DocumentSource {
    private let inner: any DocumentSource
    private let loop: EventLoop
    private let ranges: any ArchiveRangeSource
    private let limits: ArchiveLimits
    /// Archives opened so far, by key.
    public private(set) var opened: [String: OpenedArchive] = [:]

    public init(inner: any DocumentSource, loop: EventLoop, ranges: any ArchiveRangeSource, limits: ArchiveLimits) {
        self.inner = inner
        self.loop = loop
        self.ranges = ranges
        self.limits = limits
    }

    public func document(_ resource: PlannedResource, then: @escaping (Result<[UInt8], DocumentFailure>) -> Void) {
        guard resource.kind == .source, let archive = PMTilesSourceURL.archiveURL(ofKey: resource.url) else {
            return inner.document(resource, then: then)
        }
        ArchiveOpening(url: archive, loop: loop, source: ranges, limits: limits).run { [weak self] result in
            switch result {
            case .success(let archive):
                self?.opened[resource.url] = archive
                then(.success(archive.tileJSON))
            case .failure(let failure):
                then(.failure(.archive(failure)))
            }
        }
    }
}
