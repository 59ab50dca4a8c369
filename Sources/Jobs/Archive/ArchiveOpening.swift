import Foundation
import Loop
import Plan
import TileFormats

/// Bounds on reading one archive someone else wrote (archives are untrusted: every size in the
/// header is checked against these before anything is allocated), and how tiles are read from it.
public struct ArchiveLimits: Sendable, Equatable {
    /// One leaf directory as stored.
    public var maxDirectoryBytes = 16 << 20
    /// Entries of one directory (24 bytes each in memory).
    public var maxDirectoryEntries = 1 << 21
    /// The JSON metadata as stored, and once inflated.
    public var maxMetadataBytes = 8 << 20
    public var maxMetadataInflatedBytes = 32 << 20
    /// Decoded leaf entries kept per archive (least recently used go first): 24 MiB.
    public var leafCacheEntries = 1 << 20
    /// Range requests merge tiles whose bytes are at most `maxGap` apart, up to `maxSpan` bytes.
    public var maxGap: UInt64 = 64 << 10
    public var maxSpan: UInt64 = 1 << 20
    /// Bytes of tile ranges under way at once (answers are held until their tiles are handed on).
    public var maxBytesInFlight: UInt64 = 8 << 20
    /// Times a download starts again from a replaced archive's header before it gives up.
    public var maxRestarts = 3

    public init() {}

    var bounds: ArchiveRangePlan.Bounds { .init(maxGap: maxGap, maxSpan: maxSpan) }
}

/// An archive whose header, root directory and metadata were read: what a job needs to read its
/// tiles, and the TileJSON packd derives from it (stored under the archive's key).
public struct OpenedArchive: Sendable {
    public let url: String
    public let key: String
    public let validator: ArchiveValidator
    public let header: PMTilesHeader
    public let root: [PMTilesEntry]
    public let tileJSON: [UInt8]
    /// The first answer's headers (lower-case names): stored with the TileJSON, as its validators.
    public let headers: [String: String]
    /// Bytes read to open it (header, root directory, metadata).
    public let bytesRead: Int
}

/// Opens an archive: the first 16 KiB (header and root directory, as the spec lays them out for
/// exactly this), checked against the spec and the archive's size; then the metadata, with the
/// first answer's validator, unless the first read already holds it; then the TileJSON, parsed
/// and written on the thread pool. An archive replaced between two reads is opened again from
/// its header, at most `maxRestarts` times. Loop thread; ends exactly once unless stopped.
public final class ArchiveOpening {
    private let url: String
    private let loop: EventLoop
    private let source: any ArchiveRangeSource
    private let limits: ArchiveLimits
    private var restarts = 0
    private var then: ((Result<OpenedArchive, ArchiveFailure>) -> Void)?

    public init(url: String, loop: EventLoop, source: any ArchiveRangeSource, limits: ArchiveLimits) {
        self.url = url
        self.loop = loop
        self.source = source
        self.limits = limits
    }

    public func run(then: @escaping (Result<OpenedArchive, ArchiveFailure>) -> Void) {
        self.then = then
        readHeader()
    }

    private func readHeader() {
        source.read(ArchiveRead(url: url, range: 0...UInt64(PMTilesHeader.rootFetchSize - 1))) { [self] result in
            switch result {
            case .bytes(let first): opened(first)
            case .replaced(let detail): again(detail)
            case .notModified: finish(.failure(.unavailable(url: url, status: 304, detail: "a 304 to a read without validators")))
            case .failed(let failure): finish(.failure(failure))
            case .stopped: then = nil
            }
        }
    }

    private func opened(_ first: ArchiveBytes) {
        let header: PMTilesHeader
        let root: [PMTilesEntry]
        do {
            header = try PMTilesHeader(decoding: Array(first.body.prefix(PMTilesHeader.size)))
            try header.checked(fileSize: first.validator.size)
            // `checked` put the root inside the first 16 KiB and inside the file, so in this answer.
            let rootBytes = Array(first.body[Int(header.rootOffset)..<Int(header.rootOffset + header.rootLength)])
            root = try PMTilesDirectory.decode(rootBytes, compression: header.internalCompression,
                                               maxEntries: limits.maxDirectoryEntries, inflatedLimit: limits.maxDirectoryEntries * 40)
            try PMTilesDirectory.check(root, tileDataLength: header.tileDataLength, leafLength: header.leafDirectoriesLength)
        } catch let error as PMTilesHeader.Failure {
            return finish(.failure(.invalid(url: url, detail: "header: \(error)")))
        } catch {
            return finish(.failure(.invalid(url: url, detail: "root directory: \(error)")))
        }
        let metadataEnd = header.metadataOffset + header.metadataLength
        if header.metadataLength == 0 || metadataEnd <= UInt64(first.body.count) {
            let metadata = Array(first.body[Int(header.metadataOffset)..<Int(metadataEnd)])
            return derive(first, header: header, root: root, metadata: metadata, extraBytes: 0)
        }
        guard header.metadataLength <= UInt64(limits.maxMetadataBytes) else {
            return finish(.failure(.invalid(url: url, detail: "metadata of \(header.metadataLength) bytes, above the \(limits.maxMetadataBytes) allowed")))
        }
        let read = ArchiveRead(url: url, range: header.metadataOffset...(metadataEnd - 1), validator: first.validator)
        source.read(read) { [self] result in
            switch result {
            case .bytes(let metadata):
                derive(first, header: header, root: root, metadata: metadata.body, extraBytes: metadata.body.count)
            case .replaced(let detail): again(detail)
            case .notModified: finish(.failure(.unavailable(url: url, status: 304, detail: "a 304 to a metadata read")))
            case .failed(let failure): finish(.failure(failure))
            case .stopped: then = nil
            }
        }
    }

    /// The metadata parsed and the TileJSON written, on the pool (metadata can be megabytes).
    private func derive(_ first: ArchiveBytes, header: PMTilesHeader, root: [PMTilesEntry], metadata: [UInt8], extraBytes: Int) {
        let (url, limits) = (url, limits)
        let key = PMTilesSourceURL.key(forArchive: url)
        loop.runOnThreadPool({ () -> Result<[UInt8], ArchiveFailure> in
            do {
                let object = try PMTilesMetadata.object(metadata, compression: header.internalCompression,
                                                        inflatedLimit: limits.maxMetadataInflatedBytes)
                return .success(PMTilesTileJSON.document(header: header, metadata: object, key: key))
            } catch {
                return .failure(.invalid(url: url, detail: "\(error)"))
            }
        }, then: { [self] result in
            finish(result.map { tileJSON in
                OpenedArchive(url: url, key: key, validator: first.validator, header: header, root: root, tileJSON: tileJSON,
                              headers: first.headers, bytesRead: first.body.count + extraBytes)
            })
        })
    }

    private func again(_ detail: String) {
        restarts += 1
        guard restarts <= limits.maxRestarts else {
            return finish(.failure(.unstable(url: url, detail: "the archive changed \(restarts) times while it was opened: \(detail)")))
        }
        readHeader()
    }

    private func finish(_ result: Result<OpenedArchive, ArchiveFailure>) {
        guard let then else { return }
        self.then = nil
        then(result)
    }
}
