import Fetch
import Foundation
import Geo
import Loop
import Packs
import Plan

/// One run of a pack's `invalidate` (MapLibre's `invalidatePack`; `PackRevalidation` starts it,
/// and again when an archive is replaced under it), on the loop thread: every stored resource,
/// then every stored tile, read in bounded pages by row id, is asked for again with its stored
/// `ETag`/`Last-Modified` (`UpstreamResolver`, retried as a download is). A 304 refreshes only the
/// freshness columns, as MapLibre does (`unchanged`); a 200 with the stored bytes is stored again
/// with its new validators (`unchanged`), with other bytes replaces the body (`updated`);
/// 404/410 (and 204 for a tile) stores a tile as no content (`removed`; another resource keeps
/// its copy, so the pack still renders). Counts ride the writer's batches after the writes they
/// count and are reported only once committed.
final class RevalidationRun: GlyphChoosingJob {
    private enum Phase {
        case resources(after: Int64)
        case tiles(after: Int64)
        case exhausted
    }

    /// Rows read per page: small enough to keep memory flat, large enough that paging is rare.
    static let pageSize = 512
    /// Resolved rows between two commits of the counts (and so between two events).
    static let commitEvery = 256

    let packID: Int64
    /// The pack's stored expected counts, handed with its committed progress (grown by the glyph
    /// ranges a region-glyphs pack's refreshed tiles need).
    private(set) var expected: ExpectedCounts
    private let region: RegionDefinition
    private let loop: EventLoop
    private let fetcher: Fetcher
    private let store: any PackStore
    private let settings: DownloadSettings
    private let clock: WallClock
    private weak var owner: (any JobOwner)?
    private let resolver: UpstreamResolver
    private let watchdog: LoopTimer
    private var templatePhase: DocumentPhase?
    private var templates: [String: TileURLTemplate] = [:]
    /// With `"glyphs": "region"`: the glyph ranges to choose again once every row is revalidated.
    private var glyphSubset: GlyphSubset?
    var glyphSelection: GlyphSelection?
    private var phase = Phase.resources(after: 0)
    private var pending: [StoredValidators] = []
    private var pendingIndex = 0
    private var readingPage = false
    /// Rows started and not yet resolved (a transfer, a retry, or a comparison on the pool).
    private var busy = 0
    private var comparing = 0
    private var unchanged: Int64 = 0
    private var updated: Int64 = 0
    private var removed: Int64 = 0
    private var resolvedSinceCommit = 0
    private var failures: FailureLedger
    /// The rows of PMTiles archives (their TileJSON, their tiles), read from the archives.
    private let archive: ArchiveRevalidation
    /// Archive rows handed to `archive` at most (each waits there as a few bytes).
    static let archiveRowsLimit = 16_384
    private var archiveTraffic = (requests: Int64(0), bytes: Int64(0))
    private var walking = false
    private var finishing = false
    private(set) var ended = false
    /// An archive was replaced while this run read it: the run has stopped, and starts over.
    var onArchiveReplaced: ((PackError) -> Void)?

    init(packID: Int64, region: RegionDefinition, expected: ExpectedCounts, loop: EventLoop, fetcher: Fetcher,
                store: any PackStore, settings: DownloadSettings, clock: WallClock, owner: any JobOwner,
                listener: (any PackActivityListener)?) {
        self.packID = packID
        self.region = region
        self.expected = expected
        self.loop = loop
        self.fetcher = fetcher
        self.store = store
        self.settings = settings
        self.clock = clock
        self.owner = owner
        resolver = UpstreamResolver(loop: loop, fetcher: fetcher, settings: settings, policy: .revalidation(settings),
                                    packID: packID, clock: clock, listener: listener)
        watchdog = LoopTimer(loop: loop)
        failures = FailureLedger(packID: packID, store: store,
                                 budget: settings.failureBudget(expectedResources: Int(clamping: expected.resources)))
        let ranges = ResolverRanges(resolver: resolver, settings: settings, owner: UInt64(bitPattern: packID))
        archive = ArchiveRevalidation(packID: packID, loop: loop, store: store, ranges: ranges, settings: settings, clock: clock)
        ranges.onAnswer = { [weak self] bytes in
            self?.archiveTraffic.requests += 1
            self?.archiveTraffic.bytes += Int64(bytes)
        }
        archive.onResult = { [weak self] row, result in self?.archiveResolved(row, result) }
        archive.onFatal = { [weak self] error in self?.end(.fail(error)) }
        archive.onReplaced = { [weak self] error in
            guard let self, !ended else { return }
            stop()
            onArchiveReplaced?(error)
        }
        archive.onReady = { [weak self] in self?.pump() }
    }

    /// Zeroes the stored counts (a resumed revalidation starts over), rebuilds the tile
    /// templates from the stored documents, then walks the pack.
    func start() {
        let interval = LoopTimer.milliseconds(settings.watchdogInterval)
        watchdog.start(after: interval, repeat: interval) { [weak self] in self?.checkProgressing() }
        let (packID, now) = (packID, clock.now)
        store.inBatch({ database in try database.restartInvalidation(packID, now: now) }, then: nil)
        let phase = DocumentPhase(region: region, loop: loop, source: StoredDocuments(store: store), limits: .init(
            maxDocumentBytes: settings.maxBodyBytes, maxTotalBytes: .max, concurrency: 8, bestEffort: true))
        templatePhase = phase
        phase.run { [weak self] result in
            guard let self, !ended else { return }
            templatePhase = nil
            if case .success(let builder) = result {
                for pyramid in builder.plan.pyramids { templates[pyramid.template.template] = pyramid.template }
                glyphSubset = builder.plan.glyphSubset
            }
            walking = true
            pump()
        }
    }

    /// Cancels every transfer and retry; the pack's state is the caller's business.
    func stop() {
        guard !ended else { return }
        ended = true
        templatePhase?.stop()
        glyphSelection?.stop()
        glyphSelection = nil
        resolver.stop()
        archive.stop()
        watchdog.close()
        fetcher.cancelAll(owner: UInt64(bitPattern: packID))
    }

    // MARK: Walking the pack

    private func pump() {
        guard !ended, walking else { return }
        while pendingIndex < pending.count {
            let row = pending[pendingIndex]
            // An archive's rows are read from the archive, many to a request: they do not wait
            // for transfer slots, only for room in `archive`.
            if let key = ArchiveRevalidation.key(of: row) {
                guard archive.rows < Self.archiveRowsLimit else { break }
                pendingIndex += 1
                archive.take(row, key: key)
                continue
            }
            guard busy < settings.maxInFlight else { break }
            pendingIndex += 1
            revalidate(row)
        }
        if !readingPage || archive.rows >= Self.archiveRowsLimit { archive.flush() }
        while archive.requestsUnderWay < settings.maxInFlight, archive.startNext() {}
        if pendingIndex == pending.count {
            pending.removeAll(keepingCapacity: true)
            pendingIndex = 0
        }
        let exhausted: Bool
        if case .exhausted = phase { exhausted = true } else { exhausted = false }
        if pending.count - pendingIndex < settings.maxInFlight, !readingPage, !exhausted {
            readNextPage()
        } else if busy == 0, pending.isEmpty, exhausted, !readingPage, archive.isIdle {
            finish()
        }
    }

    private func readNextPage() {
        readingPage = true
        let packID = packID
        let phase = phase
        store.read({ reader -> [StoredValidators] in
            switch phase {
            case .resources(let after): try reader.resourceValidators(packID: packID, afterRowID: after, limit: Self.pageSize)
            case .tiles(let after): try reader.tileValidators(packID: packID, afterRowID: after, limit: Self.pageSize)
            case .exhausted: []
            }
        }) { [weak self] result in
            guard let self else { return }
            readingPage = false
            guard !ended else { return }
            let page: [StoredValidators]
            switch result {
            case .success(let rows): page = rows
            case .failure(let error):
                return end(.fail(PackError(.storageError, "reading the pack's stored resources failed: \(error)")))
            }
            switch (phase, page.last) {
            case (.resources, let last?): self.phase = .resources(after: last.rowID)
            case (.resources, nil): self.phase = .tiles(after: 0)
            case (.tiles, let last?): self.phase = .tiles(after: last.rowID)
            case (.tiles, nil), (.exhausted, _): self.phase = .exhausted
            }
            pending.append(contentsOf: page)
            pump()
        }
    }

    private func revalidate(_ row: StoredValidators) {
        busy += 1
        guard let url = url(of: row) else {
            return recordFailure(row, url: Self.displayURL(row.key), status: nil,
                                 message: "the stored tile cannot be addressed with its URL template", attempts: 1)
        }
        let request = FetchRequest(url: url, ifNoneMatch: row.etag, ifModifiedSince: row.modified,
                                   maxBodyBytes: settings.maxBodyBytes, timeouts: settings.timeouts,
                                   owner: UInt64(bitPattern: packID))
        resolver.fetch(request) { [weak self] resolution in
            self?.resolve(row, url: url, resolution)
        }
    }

    /// The URL to ask for: a resource's own, a tile's from its template (with the scheme and
    /// subdomains of the pack's TileJSON when known). Stored coordinates are checked: an
    /// imported database could hold anything.
    private func url(of row: StoredValidators) -> String? {
        switch row.key {
        case .resource(let url, _):
            return url
        case .tile(let tile):
            guard (0...30).contains(tile.z), (0..<(Int64(1) << tile.z)).contains(tile.x),
                  (0..<(Int64(1) << tile.z)).contains(tile.y),
                  let template = templates[tile.urlTemplate] ?? (try? TileURLTemplate(tile.urlTemplate)) else { return nil }
            return template.url(for: TileID(z: Int(tile.z), x: Int(tile.x), y: Int(tile.y)), pixelRatio: Double(tile.pixelRatio))
        }
    }

    private func resolve(_ row: StoredValidators, url: String, _ resolution: UpstreamResolver.Resolution) {
        guard !ended else { return }
        switch resolution {
        case .notModified(let response):
            // Only `expires`, `must_revalidate` and `accessed` change.
            store.submit([ResourceWrite(key: row.key, content: .notModified,
                                        cache: response.headers.cacheHeaders(now: clock.now), packID: packID)])
            unchanged += 1
            resolved()
        case .body(let response):
            compareAndStore(row, url: url, response)
        case .noContent:
            if row.key.isTile && row.hasBody {
                store.submit([ResourceWrite(key: row.key, content: .noContent, packID: packID)])
                removed += 1
            } else if row.key.isTile {
                unchanged += 1
            } else {
                removed += 1
            }
            resolved()
        case .unauthorized(let status):
            end(.fail(PackError(.upstreamUnauthorized, "the upstream refused the request", url: url, status: status)))
        case .refused:
            end(.fail(PackDownload.addressRefused(url)))
        case .rangeRefused(let error):
            recordFailure(row, url: url, status: nil, message: error.description, attempts: 1)
        case .failed(let status, let message, let attempts):
            recordFailure(row, url: url, status: status, message: message, attempts: attempts)
        case .stopped:
            break
        }
    }

    /// Compares a 200 with the stored copy on a reading thread, then refreshes or replaces it.
    private func compareAndStore(_ row: StoredValidators, url: String, _ response: FetchResponse) {
        comparing += 1
        let body = response.body
        let key = row.key
        store.read({ reader in BodyComparison.compare(body, with: key, in: reader) }) { [weak self] result in
            guard let self else { return }
            comparing -= 1
            guard !ended else { return }
            // A 200 brings validators (`ETag`, `Last-Modified`) the next revalidation must send,
            // even when the content is the same: those are stored either way, the body only when
            // it changed (the row's content, and so the pack's version, stays otherwise).
            let content: ResourceWrite.Content
            switch result {
            case .success(.same):
                content = .unchangedBody
                unchanged += 1
            case .success(.changed(let body)):
                content = .body(body)
                updated += 1
            case .success(.undecodable):
                return recordFailure(row, url: url, status: response.status, message: "the body could not be decoded",
                                     attempts: 1)
            case .failure(let error):
                return recordFailure(row, url: url, status: response.status, message: "comparing the stored copy failed: \(error)",
                                     attempts: 1)
            }
            store.submit([ResourceWrite(key: row.key, content: content, cache: response.headers.cacheHeaders(now: clock.now),
                                        packID: packID)])
            resolved()
        }
    }

    private func recordFailure(_ row: StoredValidators, url: String, status: Int?, message: String, attempts: Int) {
        if failures.record(url: url, status: status, message: message, attempts: attempts, now: clock.now) {
            return end(.fail(PackError(.tooManyFailures, "\(failures.count) resources could not be revalidated",
                                       url: url, status: status)))
        }
        resolved()
    }

    private func resolved() {
        busy -= 1
        counted()
    }

    /// An archive row's result: its write, its count.
    private func archiveResolved(_ row: StoredValidators, _ result: ArchiveRevalidation.Result) {
        guard !ended else { return }
        switch result {
        case .unchanged(let write):
            store.submit([write])
            unchanged += 1
        case .updated(let write):
            store.submit([write])
            updated += 1
        case .removed(let write):
            store.submit([write])
            removed += 1
        case .failed(let url, let status, let message):
            if failures.record(url: url, status: status, message: message, attempts: 1, now: clock.now) {
                return end(.fail(PackError(.tooManyFailures, "\(failures.count) resources could not be revalidated",
                                           url: url, status: status)))
            }
        }
        counted()
    }

    private func counted() {
        resolvedSinceCommit += 1
        if resolvedSinceCommit >= Self.commitEvery { commitCounts(completed: false) }
        pump()
    }

    /// Stores the totals with the open batch (after every write counted so far), then reports
    /// them; `then` runs on the loop once committed.
    private func commitCounts(completed: Bool, then: @escaping () -> Void = {}) {
        resolvedSinceCommit = 0
        if archiveTraffic.requests > 0 {
            let (packID, requests, bytes) = (packID, archiveTraffic.requests, archiveTraffic.bytes)
            archiveTraffic = (0, 0)
            store.inBatch({ database in try database.addArchiveTraffic(packID: packID, requests: requests, bytes: bytes) }, then: nil)
        }
        let (packID, unchanged, updated, removed) = (packID, unchanged, updated, removed)
        let completedAt = completed ? clock.now : nil
        // Two carriers, not one of a tuple: a closure inside a tuple inside a generic value lost a
        // retain on its way through a `@Sendable` completion (Swift 6.3), freeing what it held.
        let owned = LoopBound(self, loop: loop)
        let completion = LoopBound(then, loop: loop)
        store.inBatch({ database in
            try database.recordInvalidation(packID, unchanged: unchanged, updated: updated, removed: removed,
                                            completedAt: completedAt)
        }, then: { result in
            let revalidation = owned.value
            if case .success(let committed?) = result, !revalidation.ended {
                revalidation.owner?.jobCounted(packID, committed.0, progress: committed.1)
            }
            completion.value()
        })
    }

    private func finish() {
        walking = false
        finishing = true
        if let subset = glyphSubset {
            glyphSubset = nil
            return chooseGlyphs(subset, packID: packID, store: store, loop: loop)
        }
        commitCounts(completed: true) { [weak self] in
            guard let self, !ended else { return }
            end(failures.count == 0 ? .finished(failedResources: 0) : .fail(PackError(
                .resourcesFailed, "\(failures.count) resources could not be revalidated; their stored copies are kept")))
        }
    }

    /// The needed ranges the pack lacks are fetched as rows without validators (stored and
    /// linked like any 200).
    func glyphsChosen(_ outcome: GlyphSelection.Outcome) {
        let (packID, skipped, now) = (packID, outcome.skipped, clock.now)
        let needed = outcome.needed
        store.read({ reader in try reader.storedResourceURLs(packID: packID) }) { [weak self] result in
            guard let self, !ended else { return }
            guard case .success(let stored) = result else {
                return end(.fail(PackError(.storageError, "reading the pack's stored resources failed")))
            }
            let missing = needed.filter { !stored.contains($0.url) }
            if !missing.isEmpty {
                expected.resources += Int64(missing.count)
                guard owner?.jobPlanKnown(packID, expected) == true else { return stop() }
            }
            store.inBatch({ database in try database.recordSkippedGlyphRanges(packID, skipped, now: now) }, then: nil)
            pending += missing.map { StoredValidators(rowID: 0, key: .resource(url: $0.url, kind: .glyphs), etag: nil,
                                                      modified: nil, hasBody: false) }
            finishing = false
            walking = true
            pump()
        }
    }

    /// The same guard as a download's: every row counted in `busy` is a transfer, a retry or a
    /// comparison, and nothing busy means reading, rebuilding templates or finishing.
    private func checkProgressing() {
        guard !ended else { return }
        let accounted = fetcher.transferCount(owner: UInt64(bitPattern: packID)) + resolver.retriesWaiting + comparing
        let waiting = templatePhase != nil || readingPage || finishing || !pending.isEmpty || !archive.isIdle
            || glyphSelection != nil
        if busy > accounted || (busy == 0 && !waiting) {
            end(.fail(PackError(.internalError, "the revalidation stalled with \(busy) resources under way, "
                                + "\(accounted) accounted for; resume continues it")))
        }
    }

    func end(_ event: PackLifecycle.Event) {
        guard !ended else { return }
        stop()
        owner?.jobEnded(packID, event)
    }

    /// A key as it appears in the failure list when it has no usable URL.
    static func displayURL(_ key: ResourceKey) -> String {
        switch key {
        case .resource(let url, _): url
        case .tile(let tile): "\(tile.urlTemplate) (\(tile.z)/\(tile.x)/\(tile.y))"
        }
    }
}
