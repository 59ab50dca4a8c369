import Fetch
import Geo
import Loop
import Packs
import TimeFormats
import Plan

/// A revalidation's rows of PMTiles archives: the archive's TileJSON row (its key) asks the
/// archive with its validator (`If-None-Match` on the first 16 KiB); unchanged, its tiles are
/// unchanged without a request each (their freshness refreshed, as a 304 does); changed, the
/// archive is opened again and every stored tile of it is compared with what the new archive
/// holds, read with coalesced ranges (`ArchiveTileFetch`): the same bytes refresh the row's
/// validators, other bytes replace it, a tile the new archive lacks becomes "no content".
/// Tile rows arriving before their archive is known wait for it. Loop thread only.
final class ArchiveRevalidation {
    /// What became of one row: the write to submit (if any) and the count it adds to.
    enum Result {
        case unchanged(ResourceWrite)
        case updated(ResourceWrite)
        case removed(ResourceWrite)
        case failed(url: String, status: Int?, message: String)
    }

    private enum State {
        /// Being asked; rows waiting for the answer.
        case asking(waiting: [StoredValidators])
        case unchanged(HTTPCacheHeaders)
        case changed(slot: Int, OpenedArchive)
        case failed(status: Int?, message: String)
    }

    /// Tile rows handed to the fetch in one batch (a page of rows is 512; bands coalesce better).
    static let batchTiles = 4096

    private let packID: Int64
    private let loop: EventLoop
    private let store: any PackStore
    private let ranges: ResolverRanges
    private let settings: DownloadSettings
    private let clock: WallClock
    private let fetch: ArchiveTileFetch
    private var archives: [String: State] = [:]
    private var slots: [Int: String] = [:]
    /// Per slot, the rows of each tile being read.
    private var rowsOfTile: [Int: [TileID: [StoredValidators]]] = [:]
    private var batch: [Int: [TileID]] = [:]
    private var batched = 0
    private var comparing = 0
    private var stopped = false
    /// Rows handed in and not yet resolved.
    private(set) var rows = 0

    /// Each row's result, once (on the loop).
    var onResult: ((StoredValidators, Result) -> Void)?
    /// The revalidation cannot go on (Range ignored, refused).
    var onFatal: ((PackError) -> Void)?
    /// The archive changed again while its tiles were read: the revalidation starts over.
    var onReplaced: ((PackError) -> Void)?
    /// Something may be startable.
    var onReady: (() -> Void)?

    init(packID: Int64, loop: EventLoop, store: any PackStore, ranges: ResolverRanges, settings: DownloadSettings,
         clock: WallClock) {
        self.packID = packID
        self.loop = loop
        self.store = store
        self.ranges = ranges
        self.settings = settings
        self.clock = clock
        fetch = ArchiveTileFetch(loop: loop, source: ranges, limits: settings.archive)
        fetch.onOutcome = { [weak self] outcome in self?.fetched(outcome) }
        fetch.onRequestEnded = { [weak self] in self?.onReady?() }
        fetch.onReady = { [weak self] in self?.onReady?() }
        fetch.onFatal = { [weak self] failure in self?.fatal(failure.packError) }
        fetch.onReplaced = { [weak self] slot, detail in
            guard let self, !stopped else { return }
            let url = slots[slot].flatMap(PMTilesSourceURL.archiveURL(ofKey:))
            stop()
            onReplaced?(PackError(.sourceUnavailable, "the archive changed during the revalidation (\(detail))", url: url))
        }
    }

    var isIdle: Bool { rows == 0 && comparing == 0 && fetch.isIdle }
    var canStart: Bool { !stopped && fetch.canStart }
    var requestsUnderWay: Int { fetch.requestsUnderWay }
    var poolJobs: Int { fetch.poolJobs + comparing }

    func startNext() -> Bool { fetch.startNext() }

    func stop() {
        stopped = true
        fetch.stop()
    }

    /// Whether the row is an archive's (its TileJSON or one of its tiles): `take` it then.
    static func key(of row: StoredValidators) -> String? {
        switch row.key {
        case .resource(let url, .source): PMTilesSourceURL.archiveURL(ofKey: url) != nil ? url : nil
        case .resource: nil
        case .tile(let tile): PMTilesSourceURL.key(ofTemplate: tile.urlTemplate)
        }
    }

    func take(_ row: StoredValidators, key: String) {
        rows += 1
        let isTileJSON = !row.key.isTile
        switch archives[key] {
        case nil:
            archives[key] = .asking(waiting: [row])
            ask(key, storedETag: isTileJSON ? row.etag : nil, modified: isTileJSON ? row.modified : nil)
        case .asking(var waiting):
            waiting.append(row)
            archives[key] = .asking(waiting: waiting)
        case .unchanged(let cache):
            finish(row, .unchanged(ResourceWrite(key: row.key, content: .notModified, cache: cache, packID: packID)))
        case .changed(let slot, let opened):
            if isTileJSON {
                compare(row, with: opened.tileJSON, cache: ResponseHeaders(opened.headers).cacheHeaders(now: clock.now))
            } else {
                read(row, slot: slot)
            }
        case .failed(let status, let message):
            finish(row, .failed(url: Self.url(of: row), status: status, message: message))
        }
    }

    /// Hands the tiles taken so far to the fetch (at a page's end).
    func flush() {
        for (slot, tiles) in batch { fetch.add(tiles, slot: slot) }
        batch.removeAll()
        batched = 0
    }

    // MARK: The archive

    /// The first 16 KiB with `If-None-Match`: a 304, or the same ETag, is an unchanged archive;
    /// anything else opens it again.
    private func ask(_ key: String, storedETag: String?, modified: Int64?) {
        guard let url = PMTilesSourceURL.archiveURL(ofKey: key) else { return }
        ranges.read(ArchiveRead(url: url, range: 0...16_383, ifNoneMatch: storedETag)) { [weak self] result in
            guard let self, !stopped else { return }
            switch result {
            case .notModified(let headers):
                settle(key, .unchanged(ResponseHeaders(headers).cacheHeaders(now: clock.now)))
            case .bytes(let first) where Self.isUnchanged(first.validator, storedETag: storedETag, modified: modified):
                // A server that ignores If-None-Match on ranges: the validators tell.
                settle(key, .unchanged(ResponseHeaders(first.headers).cacheHeaders(now: clock.now)))
            case .bytes:
                ArchiveOpening(url: url, loop: loop, source: ranges, limits: settings.archive).run { [weak self] opened in
                    guard let self, !stopped else { return }
                    switch opened {
                    case .success(let archive):
                        let slot = slots.count
                        slots[slot] = key
                        fetch.addArchive(archive, slot: slot)
                        settle(key, .changed(slot: slot, archive))
                    case .failure(let failure):
                        failed(key, failure)
                    }
                }
            case .replaced(let detail):
                failed(key, .unavailable(url: url, status: nil, detail: detail))
            case .failed(let failure):
                failed(key, failure)
            case .stopped:
                return
            }
        }
    }

    /// Whether the archive's validators are those its TileJSON row was stored with (the ETag,
    /// else `Last-Modified`; an archive with neither is never taken as unchanged).
    static func isUnchanged(_ validator: ArchiveValidator, storedETag: String?, modified: Int64?) -> Bool {
        if let storedETag, validator.etag != nil {
            return validator.sameArchive(as: ArchiveValidator(etag: storedETag, lastModified: nil, size: validator.size))
        }
        if storedETag == nil, let modified, let lastModified = validator.lastModified.flatMap(HTTPDate.parse) {
            return lastModified == modified
        }
        return false
    }

    private func failed(_ key: String, _ failure: ArchiveFailure) {
        switch failure {
        case .unavailable(_, let status, let detail): settle(key, .failed(status: status, message: detail))
        default: fatal(failure.packError)
        }
    }

    /// The archive's state is known: the rows that waited for it are taken again.
    private func settle(_ key: String, _ state: State) {
        guard case .asking(let waiting) = archives[key] else { return }
        archives[key] = state
        for row in waiting {
            // Counted again by `take`; the others still wait, so the revalidation cannot end meanwhile.
            rows -= 1
            take(row, key: key)
        }
        flush()
        onReady?()
    }

    // MARK: Rows of a changed archive

    private func read(_ row: StoredValidators, slot: Int) {
        guard case .tile(let key) = row.key, (0...30).contains(key.z), (0..<(Int64(1) << key.z)).contains(key.x),
              (0..<(Int64(1) << key.z)).contains(key.y) else {
            return finish(row, .failed(url: Self.url(of: row), status: nil, message: "the stored tile's coordinates are not a tile"))
        }
        let tile = TileID(z: Int(key.z), x: Int(key.x), y: Int(key.y))
        if rowsOfTile[slot, default: [:]][tile] == nil { batch[slot, default: []].append(tile) }
        rowsOfTile[slot, default: [:]][tile, default: []].append(row)
        batched += 1
        if batched >= Self.batchTiles { flush() }
    }

    private func fetched(_ outcome: ArchiveTileFetch.Outcome) {
        switch outcome {
        case .tile(let slot, let tile, let bytes, let headers, _):
            let cache = ResponseHeaders(headers).cacheHeaders(now: clock.now)
            for row in rowsOfTile[slot]?.removeValue(forKey: tile) ?? [] { compare(row, with: bytes, cache: cache) }
        case .missing(let slot, let tile, let headers, _):
            let cache = ResponseHeaders(headers).cacheHeaders(now: clock.now)
            for row in rowsOfTile[slot]?.removeValue(forKey: tile) ?? [] {
                let write = ResourceWrite(key: row.key, content: .noContent, cache: cache, packID: packID)
                finish(row, row.hasBody ? .removed(write) : .unchanged(write))
            }
        case .failed(let slot, let tiles, let status, let message, _):
            for tile in tiles {
                for row in rowsOfTile[slot]?.removeValue(forKey: tile) ?? [] {
                    finish(row, .failed(url: Self.url(of: row), status: status, message: message))
                }
            }
        }
    }

    /// The new bytes against the stored copy, on a reading thread; the new validators (the
    /// archive's) are stored either way, the bytes only when they changed.
    private func compare(_ row: StoredValidators, with bytes: [UInt8], cache: HTTPCacheHeaders) {
        comparing += 1
        let key = row.key
        store.read({ reader in BodyComparison.compare(bytes, with: key, in: reader) }) { [weak self] comparison in
            guard let self else { return }
            comparing -= 1
            guard !stopped else { return }
            let packID = packID
            switch comparison {
            // The same bytes refresh the validators only: no change, so no new version.
            case .success(.same): finish(row, .unchanged(ResourceWrite(key: key, content: .unchangedBody, cache: cache, packID: packID)))
            case .success(.changed(let body)): finish(row, .updated(ResourceWrite(key: key, content: .body(body), cache: cache, packID: packID)))
            case .success(.undecodable): finish(row, .failed(url: Self.url(of: row), status: nil, message: "the tile could not be decoded"))
            case .failure(let error):
                finish(row, .failed(url: Self.url(of: row), status: nil, message: "comparing the stored copy failed: \(error)"))
            }
        }
    }

    private func finish(_ row: StoredValidators, _ result: Result) {
        rows -= 1
        onResult?(row, result)
    }

    private func fatal(_ error: PackError) {
        guard !stopped else { return }
        stop()
        onFatal?(error)
    }

    static func url(of row: StoredValidators) -> String { RevalidationRun.displayURL(row.key) }
}
