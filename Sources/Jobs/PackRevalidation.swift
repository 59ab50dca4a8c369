import Fetch
import Foundation
import Geo
import Loop
import Packs
import Plan
import Store

/// One pack's `invalidate` (MapLibre's `invalidatePack`), on the loop thread: every stored
/// resource, then every stored tile, read in bounded pages by row id, is asked for again with
/// its stored `ETag`/`Last-Modified`. A 304 refreshes only the freshness columns, as MapLibre
/// does (`unchanged`: the stored validators still name the stored bytes); a 200 with the stored
/// bytes is stored again with its new validators (`unchanged`), with other bytes replaces the
/// body (`updated`);
/// 404/410 (and 204 for a tile) stores a tile as no content (`removed`; another resource keeps
/// its copy, so the pack still renders). Retries as a download does. Counts are committed on
/// the writer after the writes they count, and reported only once committed.
public final class PackRevalidation {
    public typealias Outcome = PackDownload.Outcome

    /// What one stored row came to after its retries.
    private enum Resolution {
        case notModified(FetchResponse)
        case body(FetchResponse)
        case gone
        case unauthorized(status: Int)
        case failed(status: Int?, message: String, attempts: Int)
        case stopped
    }

    private enum Phase {
        case resources(after: Int64)
        case tiles(after: Int64)
        case exhausted
    }

    private struct PendingRetry {
        let row: StoredValidators
        let url: String
        let attempt: Int
    }

    /// Rows read per page: small enough to keep memory flat, large enough that paging is rare.
    static let pageSize = 512
    /// Resolved rows between two commits of the counts (and so between two events).
    static let commitEvery = 256

    public let packID: Int64
    /// The pack's stored expected counts, handed with its committed progress.
    public let expected: ExpectedCounts
    private let region: RegionDefinition
    private let loop: EventLoop
    private let fetcher: Fetcher
    private let writer: WriterThread
    private let settings: DownloadSettings
    private let reader: RevalidationReader
    private let onCounts: (PackInvalidation, StoredProgress) -> Void
    private let onEnd: (Outcome) -> Void
    private var templates: [String: TileURLTemplate] = [:]
    private var phase = Phase.resources(after: 0)
    private var pending: [StoredValidators] = []
    private var pendingIndex = 0
    private var readingPage = false
    private var busy = 0
    private var retries: RetryQueue<PendingRetry>!
    private var unchanged: Int64 = 0
    private var updated: Int64 = 0
    private var removed: Int64 = 0
    private var resolvedSinceCommit = 0
    private var failedResources = 0
    private var started = false
    private var ended = false

    public init(packID: Int64, region: RegionDefinition, expected: ExpectedCounts, loop: EventLoop, fetcher: Fetcher,
                writer: WriterThread, databasePath: String, settings: DownloadSettings = DownloadSettings(),
                onCounts: @escaping (PackInvalidation, StoredProgress) -> Void, onEnd: @escaping (Outcome) -> Void) throws {
        self.packID = packID
        self.region = region
        self.expected = expected
        self.loop = loop
        self.fetcher = fetcher
        self.writer = writer
        self.settings = settings
        self.onCounts = onCounts
        self.onEnd = onEnd
        reader = try RevalidationReader(path: databasePath)
        retries = RetryQueue(loop: loop) { [weak self] retry in self?.fetch(retry.row, url: retry.url, attempt: retry.attempt) }
    }

    /// Zeroes the stored counts (a resumed revalidation starts over), rebuilds the tile
    /// templates, then walks the pack.
    public func start() {
        let packID = packID
        writer.perform({ database in try database.restartInvalidation(packID, now: Self.now()) }, completion: { _ in })
        let reader = reader
        let region = region
        readingPage = true
        loop.runOnThreadPool({ reader.tileTemplates(region: region) }, then: { [weak self] templates in
            guard let self else { return }
            readingPage = false
            guard !ended else { return }
            self.templates = templates
            started = true
            pump()
        })
    }

    /// Cancels every transfer and retry; the pack's state is the caller's business.
    public func stop() {
        guard !ended else { return }
        ended = true
        retries.close()
        fetcher.cancelAll(owner: UInt64(bitPattern: packID))
    }

    // MARK: Walking the pack

    private func pump() {
        guard !ended, started else { return }
        while busy < settings.maxInFlight, pendingIndex < pending.count {
            let row = pending[pendingIndex]
            pendingIndex += 1
            revalidate(row)
        }
        if pendingIndex == pending.count {
            pending.removeAll(keepingCapacity: true)
            pendingIndex = 0
        }
        let exhausted: Bool
        if case .exhausted = phase { exhausted = true } else { exhausted = false }
        if pending.count - pendingIndex < settings.maxInFlight, !readingPage, !exhausted {
            readNextPage()
        } else if busy == 0, pending.isEmpty, exhausted, !readingPage {
            finish()
        }
    }

    private func readNextPage() {
        readingPage = true
        let reader = reader
        let packID = packID
        let phase = phase
        loop.runOnThreadPool({ () -> Result<[StoredValidators], any Error> in
            switch phase {
            case .resources(let after): reader.resources(packID: packID, after: after, limit: Self.pageSize)
            case .tiles(let after): reader.tiles(packID: packID, after: after, limit: Self.pageSize)
            case .exhausted: .success([])
            }
        }, then: { [weak self] result in
            guard let self else { return }
            readingPage = false
            guard !ended else { return }
            let page: [StoredValidators]
            switch result {
            case .success(let rows): page = rows
            case .failure(let error):
                return end(.failed(PackError(.storageError, "reading the pack's stored resources failed: \(error)")))
            }
            switch (phase, page.last) {
            case (.resources, let last?): self.phase = .resources(after: last.rowID)
            case (.resources, nil): self.phase = .tiles(after: 0)
            case (.tiles, let last?): self.phase = .tiles(after: last.rowID)
            case (.tiles, nil), (.exhausted, _): self.phase = .exhausted
            }
            pending.append(contentsOf: page)
            pump()
        })
    }

    private func revalidate(_ row: StoredValidators) {
        busy += 1
        guard let url = url(of: row) else {
            return recordFailure(row, url: Self.displayURL(row.key), status: nil,
                                 message: "the stored tile cannot be addressed with its URL template", attempts: 1)
        }
        fetch(row, url: url, attempt: 1)
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

    private func resolve(_ row: StoredValidators, url: String, _ resolution: Resolution) {
        guard !ended else { return }
        switch resolution {
        case .notModified(let response):
            refresh(row, response)
            unchanged += 1
            resolved()
        case .body(let response):
            store(row, url: url, response)
        case .gone:
            if row.key.isTile && row.hasBody {
                writer.submit(ResourceWrite(key: row.key, content: .noContent, packID: packID))
                removed += 1
            } else if row.key.isTile {
                unchanged += 1
            } else {
                removed += 1
            }
            resolved()
        case .unauthorized(let status):
            end(.failed(PackError(.upstreamUnauthorized, "the upstream refused the request", url: url, status: status)))
        case .failed(let status, let message, let attempts):
            recordFailure(row, url: url, status: status, message: message, attempts: attempts)
        case .stopped:
            break
        }
    }

    /// A 304: only `expires`, `must_revalidate` and `accessed` change.
    private func refresh(_ row: StoredValidators, _ response: FetchResponse) {
        writer.submit(ResourceWrite(key: row.key, content: .notModified, cache: PackDownload.cacheHeaders(response.headers),
                                    packID: packID))
    }

    /// Compares a 200 with the stored copy on the thread pool, then refreshes or replaces it.
    private func store(_ row: StoredValidators, url: String, _ response: FetchResponse) {
        let reader = reader
        let body = response.body
        let key = row.key
        loop.runOnThreadPool({ reader.compare(body, with: key) }, then: { [weak self] comparison in
            guard let self, !ended else { return }
            // The body is written either way: a 200 brings validators (`ETag`, `Last-Modified`)
            // the next revalidation must send, even when the bytes are the same.
            let stored: StoredBody
            switch comparison {
            case .same(let body):
                stored = body
                unchanged += 1
            case .changed(let body):
                stored = body
                updated += 1
            case .undecodable:
                return recordFailure(row, url: url, status: response.status, message: "the body could not be decoded",
                                     attempts: 1)
            }
            writer.submit(ResourceWrite(key: row.key, content: .body(stored), cache: PackDownload.cacheHeaders(response.headers),
                                        packID: packID))
            resolved()
        })
    }

    private func recordFailure(_ row: StoredValidators, url: String, status: Int?, message: String, attempts: Int) {
        failedResources += 1
        let packID = packID
        writer.perform({ database in
            try database.recordFailure(packID: packID, url: url, status: status.map(Int64.init), message: message,
                                       attempts: Int64(attempts), now: Self.now())
        }, completion: { _ in })
        if failedResources > settings.failureBudget(expectedResources: Int(clamping: expected.resources)) {
            return end(.failed(PackError(.tooManyFailures, "\(failedResources) resources could not be revalidated",
                                           url: url, status: status)))
        }
        resolved()
    }

    private func resolved() {
        busy -= 1
        resolvedSinceCommit += 1
        if resolvedSinceCommit >= Self.commitEvery { commitCounts(completed: false) }
        pump()
    }

    /// Stores the totals after every write counted so far (the writer runs it after them), then
    /// reports them; `then` runs on the loop once committed.
    private func commitCounts(completed: Bool, then: @escaping () -> Void = {}) {
        resolvedSinceCommit = 0
        let (packID, unchanged, updated, removed) = (packID, unchanged, updated, removed)
        let owned = LoopBound((revalidation: self, then: then))
        let loop = loop
        writer.perform({ database in
            try database.recordInvalidation(packID, unchanged: unchanged, updated: updated, removed: removed,
                                            completedAt: completed ? Self.now() : nil)
        }, completion: { result in
            loop.execute {
                if case .success(let committed?) = result { owned.value.revalidation.onCounts(committed.0, committed.1) }
                owned.value.then()
            }
        })
    }

    private func finish() {
        started = false
        commitCounts(completed: true) { [weak self] in
            guard let self, !ended else { return }
            end(failedResources == 0 ? .complete : .failed(PackError(
                .resourcesFailed, "\(failedResources) resources could not be revalidated; their stored copies are kept")))
        }
    }

    private func end(_ outcome: Outcome) {
        guard !ended else { return }
        stop()
        onEnd(outcome)
    }

    // MARK: Conditional fetching with retries

    private func fetch(_ row: StoredValidators, url: String, attempt: Int) {
        let request = FetchRequest(url: url, ifNoneMatch: row.etag, ifModifiedSince: row.modified,
                                   maxBodyBytes: settings.maxBodyBytes, owner: UInt64(bitPattern: packID))
        fetcher.submit(request) { [weak self] result in
            guard let self else { return }
            guard !ended else { return resolve(row, url: url, .stopped) }
            switch result {
            case .success(let response):
                switch response.status {
                case 304:
                    resolve(row, url: url, .notModified(response))
                case 200..<300 where response.status != 204:
                    resolve(row, url: url, .body(response))
                case 204, 404, 410:
                    resolve(row, url: url, .gone)
                case 401, 403:
                    resolve(row, url: url, .unauthorized(status: response.status))
                case 408, 429, 500..<600:
                    if response.status == 429 || response.status == 503, let delay = response.headers.retryAfterDelay(now: PackDownload.now()) {
                        fetcher.pauseHost(of: url, until: .now + delay)
                    }
                    retry(row, url: url, attempt: attempt, status: response.status, message: "HTTP \(response.status)")
                default:
                    resolve(row, url: url, .failed(status: response.status, message: "HTTP \(response.status)", attempts: attempt))
                }
            case .failure(.cancelled), .failure(.shutdown):
                resolve(row, url: url, .stopped)
            case .failure(let error):
                if error.isTransient {
                    retry(row, url: url, attempt: attempt, status: nil, message: error.description)
                } else {
                    resolve(row, url: url, .failed(status: nil, message: error.description, attempts: attempt))
                }
            }
        }
    }

    private func retry(_ row: StoredValidators, url: String, attempt: Int, status: Int?, message: String) {
        guard attempt < settings.maxAttempts else {
            return resolve(row, url: url, .failed(status: status, message: message, attempts: attempt))
        }
        retries.add(PendingRetry(row: row, url: url, attempt: attempt + 1), after: settings.backoff(afterAttempt: attempt))
    }

    /// A key as it appears in the failure list when it has no usable URL.
    static func displayURL(_ key: ResourceKey) -> String {
        switch key {
        case .resource(let url, _): url
        case .tile(let tile): "\(tile.urlTemplate) (\(tile.z)/\(tile.x)/\(tile.y))"
        }
    }

    static func now() -> Int64 { Int64(Date().timeIntervalSince1970) }
}
