import Fetch
import Foundation
import Geo
import Loop
import Plan
import Store

/// One pack's download, on the loop thread: the style, its TileJSONs (retried like any resource),
/// the exact expected counts, the fixed resources, then the tiles zoom by zoom, band by band,
/// skipping what the pack already stored, with at most `maxInFlight` resources under way.
/// Bodies go to the writer; the end is reported only after the writer has committed them.
public final class PackDownload {
    /// How a download ended. A stopped download (suspend, delete, shutdown) reports nothing.
    public enum Outcome: Sendable, Equatable {
        case complete
        case failed(PackFailure)
    }

    /// What one resource came to after its retries.
    private enum Resolution {
        case body(FetchResponse)
        case noContent
        case unauthorized(status: Int)
        case failed(status: Int?, message: String, attempts: Int)
        case stopped
    }

    private struct PendingRetry {
        let due: ContinuousClock.Instant
        let resource: PlannedResource
        let attempt: Int
        let then: (Resolution) -> Void
    }

    public let packID: Int64
    private let loop: EventLoop
    private let fetcher: Fetcher
    private let writer: WriterThread
    private let settings: DownloadSettings
    private let lookup: StoredResourceLookup
    private let onEnd: (Outcome) -> Void
    /// The pack's own `max_tiles` limit: checked against the exact count before any tile is fetched.
    private let maxTiles: Int64?
    private var builder: PlanBuilder
    /// Style and TileJSON responses, stored with the fixed resources instead of being refetched.
    private var documents: [String: FetchResponse] = [:]
    private var pending: [PlannedResource] = []
    private var pendingIndex = 0
    private var bands: TileBands?
    private var bandsExhausted = false
    private var lookingUp = false
    /// Resources started and not yet resolved (in a transfer, waiting for a retry, or encoding).
    private var busy = 0
    /// Of `busy`, the bodies being encoded on the thread pool: their transfer is done, so they do
    /// not hold one of the `maxInFlight` transfer slots (a loaded pool must not idle the network).
    private var encoding = 0
    /// Bodies waiting for an encode job, and the jobs on the thread pool (`startEncodeJob`).
    private var encodeQueue: [PendingEncode] = []
    private var encodeJobs = 0
    private static let maxEncodeJobs = 2

    private struct PendingEncode {
        let resource: PlannedResource
        let response: FetchResponse
        /// What the write counts against `maxUncommittedBytes`.
        let cost: Int
    }
    private var retries: [PendingRetry] = []
    private let retryTimer: LoopTimer
    /// Known once the documents are in (before any fixed resource or tile is fetched).
    public private(set) var expected: ExpectedCounts?
    private var expectedResources = 0
    private var failedResources = 0
    private var downloading = false
    private var ended = false
    /// Bytes handed to the writer and not yet known to be committed (`settings.maxUncommittedBytes`
    /// bounds them: a writer slower than the network stalls fetching instead of queueing bodies
    /// without limit), split into the bytes each pending `whenCommitted` marker covers and the
    /// bytes submitted since the last marker.
    private var uncommittedBytes = 0
    private var bytesSinceMarker = 0

    public init(packID: Int64, region: RegionDefinition, loop: EventLoop, fetcher: Fetcher, writer: WriterThread,
                databasePath: String, maxTiles: Int64? = nil, settings: DownloadSettings = DownloadSettings(),
                onEnd: @escaping (Outcome) -> Void) throws {
        self.packID = packID
        self.loop = loop
        self.fetcher = fetcher
        self.writer = writer
        self.settings = settings
        self.onEnd = onEnd
        self.maxTiles = maxTiles
        lookup = try StoredResourceLookup(path: databasePath)
        builder = PlanBuilder(region: region)
        retryTimer = LoopTimer(loop: loop)
    }

    /// Starts with the style (or straight with the tiles for a template region).
    public func start() {
        guard let styleURL = builder.region.styleURL else {
            beginResources()
            return
        }
        fetchDocument(PlannedResource(kind: .style, url: styleURL)) { (builder: inout PlanBuilder, data: Data) throws(PlanError) in
            try builder.addStyle(data)
        }
    }

    /// Cancels every transfer and retry; the pack's state is the caller's business.
    public func stop() {
        guard !ended else { return }
        ended = true
        retries.removeAll()
        retryTimer.close()
        fetcher.cancelAll(owner: UInt64(bitPattern: packID))
    }

    /// Transfers and retries still under way (for tests and metrics).
    public var resourcesUnderWay: Int { busy }

    // MARK: Documents

    private func fetchDocument(_ resource: PlannedResource,
                               add: @escaping (inout PlanBuilder, Data) throws(PlanError) -> Void) {
        busy += 1
        fetch(resource, attempt: 1) { [weak self] resolution in
            guard let self else { return }
            busy -= 1
            guard !ended else { return }
            switch resolution {
            case .body(let response):
                do throws(PlanError) {
                    try add(&builder, Data(response.body))
                } catch {
                    end(.failed(PackFailure(.invalidDocument, error.description, url: resource.url)))
                    return
                }
                documents[resource.url] = response
                fetchMissingTileJSONs()
            case .noContent:
                end(.failed(PackFailure(.styleUnavailable, "the upstream has no content here", url: resource.url,
                                        status: 404)))
            case .unauthorized(let status):
                end(.failed(PackFailure(.upstreamUnauthorized, "the upstream refused the request",
                                        url: resource.url, status: status)))
            case .failed(let status, let message, _):
                end(.failed(PackFailure(.styleUnavailable, message, url: resource.url, status: status)))
            case .stopped:
                break
            }
        }
    }

    private func fetchMissingTileJSONs() {
        guard busy == 0 else { return }
        let missing = builder.missingTileJSONURLs
        guard !missing.isEmpty else {
            beginResources()
            return
        }
        for url in missing {
            fetchDocument(PlannedResource(kind: .source, url: url)) { (builder: inout PlanBuilder, data: Data) throws(PlanError) in
                try builder.addTileJSON(data, url: url)
            }
        }
    }

    // MARK: Resources

    private func beginResources() {
        let plan = builder.plan
        expectedResources = plan.expectedResources
        let packID = packID
        let counts = ExpectedCounts(resources: Int64(clamping: plan.expectedResources),
                                    tiles: Int64(clamping: plan.expectedTiles), precise: plan.isPrecise)
        expected = counts
        if let maxTiles, counts.tiles > maxTiles {
            end(.failed(PackFailure(.tileLimitExceeded, "the region needs \(counts.tiles) tiles, the pack's limit is \(maxTiles)")))
            return
        }
        writer.perform({ database in
            try database.setExpected(packID, resources: counts.resources, tiles: counts.tiles, precise: counts.precise,
                                     now: Self.now())
        }, completion: { _ in })
        bands = TileBands(pyramids: plan.pyramids, limit: settings.lookupBatchTiles)
        lookingUp = true
        let lookup = lookup
        loop.runOnThreadPool({ lookup.storedURLs(packID: packID) }, then: { [weak self] stored in
            guard let self else { return }
            lookingUp = false
            guard !ended else { return }
            downloading = true
            // The documents are stored again (cheap, already here); other stored fixed ones are skipped.
            pending = plan.fixed.filter { documents[$0.url] != nil || !stored.contains($0.url) }
            pump()
        })
    }

    private func pump() {
        guard !ended, downloading else { return }
        while busy - encoding < settings.maxInFlight, uncommittedBytes < settings.maxUncommittedBytes,
              pendingIndex < pending.count {
            let resource = pending[pendingIndex]
            pendingIndex += 1
            download(resource)
        }
        if pendingIndex > 1024, pendingIndex * 2 > pending.count {
            pending.removeFirst(pendingIndex)
            pendingIndex = 0
        }
        // Look the next band up while half a band is still pending, so transfers do not wait for it.
        if pending.count - pendingIndex < max(settings.maxInFlight, settings.lookupBatchTiles / 2), !lookingUp,
           !bandsExhausted {
            lookUpNextBand()
        }
        if busy == 0, pendingIndex == pending.count, bandsExhausted, !lookingUp {
            finish()
        }
    }

    private func lookUpNextBand() {
        guard let band = bands?.next() else {
            bandsExhausted = true
            bands = nil
            return
        }
        lookingUp = true
        let lookup = lookup
        let packID = packID
        let template = band.pyramid.template.template
        let ratio = Int64(band.pyramid.template.storedPixelRatio(for: band.pyramid.pixelRatio))
        let zoom = Int64(band.zoom)
        let xRange = band.xRange
        let yRange = band.yRange
        loop.runOnThreadPool({
            lookup.storedTiles(packID: packID, urlTemplate: template, pixelRatio: ratio, z: zoom,
                               xRange: xRange, yRange: yRange)
        }, then: { [weak self] stored in
            guard let self else { return }
            lookingUp = false
            guard !ended else { return }
            for span in band.spans {
                for x in span.xRange where stored?.contains(x: Int64(x), y: Int64(span.y)) != true {
                    pending.append(band.pyramid.resource(for: TileID(z: band.zoom, x: x, y: span.y)))
                }
            }
            pump()
        })
    }

    private func download(_ resource: PlannedResource) {
        busy += 1
        if let document = documents.removeValue(forKey: resource.url) {
            store(resource, document)
            return
        }
        fetch(resource, attempt: 1) { [weak self] resolution in
            guard let self, !ended else { return }
            switch resolution {
            case .body(let response):
                store(resource, response)
                pump() // the transfer slot is free while the body is encoded
            case .noContent:
                if resource.kind == .tile {
                    writer.submit(ResourceWrite(key: Self.key(of: resource), content: .noContent, packID: packID))
                    let cost = Self.writeCost(bytes: 0)
                    uncommittedBytes += cost
                    submitted(cost: cost)
                    resolved()
                } else {
                    recordFailure(resource, status: 404, message: "the upstream has no content here", attempts: 1)
                }
            case .unauthorized(let status):
                end(.failed(PackFailure(.upstreamUnauthorized, "the upstream refused the request",
                                        url: resource.url, status: status)))
            case .failed(let status, let message, let attempts):
                recordFailure(resource, status: status, message: message, attempts: attempts)
            case .stopped:
                break
            }
        }
    }

    /// Encodes the body on the thread pool (deflate is the costly part of a write) and submits it.
    private func store(_ resource: PlannedResource, _ response: FetchResponse) {
        // Counted against the bound from now (the body is held from here until committed), but
        // marked for release only once the writer has it.
        let cost = Self.writeCost(bytes: response.body.count)
        uncommittedBytes += cost
        encoding += 1
        encodeQueue.append(PendingEncode(resource: resource, response: response, cost: cost))
        startEncodeJob()
    }

    /// Encodes the queued bodies on the thread pool (deflate is the costly part of a write) and
    /// submits their writes in one go. At most `maxEncodeJobs` run at once and each takes the
    /// whole queue, so a busy pool batches: two thread hops and one writer wake-up per batch
    /// instead of per tile. The cache headers are parsed there too, off the loop.
    private func startEncodeJob() {
        guard encodeJobs < Self.maxEncodeJobs, !encodeQueue.isEmpty else { return }
        let items = encodeQueue
        encodeQueue.removeAll(keepingCapacity: true)
        encodeJobs += 1
        let writer = writer
        let packID = packID
        loop.runOnThreadPool({ () -> [Bool] in
            var writes: [ResourceWrite] = []
            writes.reserveCapacity(items.count)
            let encoded = items.map { item -> Bool in
                guard let stored = try? StoredBody.encoding(item.response.body) else { return false }
                writes.append(ResourceWrite(key: Self.key(of: item.resource), content: .body(stored),
                                            cache: Self.cacheHeaders(item.response.headers), packID: packID))
                return true
            }
            writer.submit(contentsOf: writes)
            return encoded
        }, then: { [weak self] encoded in
            guard let self else { return }
            encodeJobs -= 1
            encoding -= items.count
            guard !ended else { return }
            for (item, submitted) in zip(items, encoded) {
                if submitted {
                    self.submitted(cost: item.cost)
                    resolved()
                } else {
                    uncommittedBytes -= item.cost
                    recordFailure(item.resource, status: item.response.status, message: "the body could not be decoded",
                                  attempts: 1)
                }
                if ended { return }
            }
            startEncodeJob()
        })
    }

    private func recordFailure(_ resource: PlannedResource, status: Int?, message: String, attempts: Int) {
        failedResources += 1
        let packID = packID
        writer.perform({ database in
            try database.recordFailure(packID: packID, url: resource.url, status: status.map(Int64.init),
                                       message: message, attempts: Int64(attempts), now: Self.now())
        }, completion: { _ in })
        if failedResources > settings.failureBudget(expectedResources: expectedResources) {
            end(.failed(PackFailure(.tooManyFailures, "\(failedResources) resources failed", url: resource.url,
                                    status: status)))
            return
        }
        resolved()
    }

    private static func writeCost(bytes: Int) -> Int { bytes + DownloadSettings.writeOverheadBytes }

    /// Accounts a write (already counted in `uncommittedBytes`) just handed to the writer; every
    /// quarter of the bound gets a `whenCommitted` marker that releases its bytes, so fetching
    /// stalls only while the writer really holds `maxUncommittedBytes`.
    private func submitted(cost: Int) {
        bytesSinceMarker += cost
        guard bytesSinceMarker >= settings.maxUncommittedBytes / 4 else { return }
        let covered = bytesSinceMarker
        bytesSinceMarker = 0
        let owned = LoopBound(self)
        let loop = loop
        writer.whenCommitted {
            loop.execute {
                let download = owned.value
                download.uncommittedBytes -= covered
                download.pump()
            }
        }
    }

    private func resolved() {
        busy -= 1
        pump()
    }

    /// Everything is resolved: waits for the writer to commit it, then reports.
    private func finish() {
        downloading = false
        let owned = LoopBound(self)
        let loop = loop
        writer.flush {
            loop.execute {
                let download = owned.value
                guard !download.ended else { return }
                download.end(download.failedResources == 0 ? .complete : .failed(PackFailure(
                    .resourcesFailed, "\(download.failedResources) resources failed after retries; resume retries them")))
            }
        }
    }

    private func end(_ outcome: Outcome) {
        guard !ended else { return }
        stop()
        onEnd(outcome)
    }

    // MARK: Fetching with retries

    private func fetch(_ resource: PlannedResource, attempt: Int, then: @escaping (Resolution) -> Void) {
        let request = FetchRequest(url: resource.url, maxBodyBytes: settings.maxBodyBytes,
                                   owner: UInt64(bitPattern: packID))
        fetcher.submit(request) { [weak self] result in
            guard let self, !ended else { return then(.stopped) }
            switch result {
            case .success(let response):
                switch response.status {
                case 200..<300 where response.status != 204:
                    then(.body(response))
                case 204, 404:
                    then(.noContent)
                case 401, 403:
                    then(.unauthorized(status: response.status))
                case 408, 429, 500..<600:
                    if response.status == 429 || response.status == 503, let delay = Self.retryAfter(response) {
                        fetcher.pauseHost(of: resource.url, until: .now + delay)
                    }
                    retry(resource, attempt: attempt, status: response.status, message: "HTTP \(response.status)",
                          then: then)
                default:
                    then(.failed(status: response.status, message: "HTTP \(response.status)", attempts: attempt))
                }
            case .failure(.cancelled), .failure(.shutdown):
                then(.stopped)
            case .failure(let error):
                if error.isTransient {
                    retry(resource, attempt: attempt, status: nil, message: error.description, then: then)
                } else {
                    then(.failed(status: nil, message: error.description, attempts: attempt))
                }
            }
        }
    }

    private func retry(_ resource: PlannedResource, attempt: Int, status: Int?, message: String,
                       then: @escaping (Resolution) -> Void) {
        guard attempt < settings.maxAttempts else {
            return then(.failed(status: status, message: message, attempts: attempt))
        }
        retries.append(PendingRetry(due: .now + settings.backoff(afterAttempt: attempt), resource: resource,
                                    attempt: attempt + 1, then: then))
        armRetryTimer()
    }

    private func armRetryTimer() {
        guard !ended, let due = retries.map(\.due).min() else { return }
        let delay = max(ContinuousClock.now.duration(to: due), .zero)
        let milliseconds = UInt64(delay.components.seconds) * 1000 + UInt64(delay.components.attoseconds / 1_000_000_000_000_000)
        retryTimer.start(after: milliseconds) { [weak self] in
            guard let self else { return }
            let now = ContinuousClock.now
            let due = retries.filter { $0.due <= now }
            retries.removeAll { $0.due <= now }
            for entry in due { fetch(entry.resource, attempt: entry.attempt, then: entry.then) }
            armRetryTimer()
        }
    }

    // MARK: Mapping

    static func key(of resource: PlannedResource) -> ResourceKey {
        if let tile = resource.tile {
            return .tile(TileKey(urlTemplate: tile.urlTemplate, pixelRatio: Int64(tile.pixelRatio), z: Int64(tile.z),
                                 x: Int64(tile.x), y: Int64(tile.y)))
        }
        return .resource(url: resource.url, kind: OfflineSchema.Kind(rawValue: Int64(resource.kind.rawValue)) ?? .image)
    }

    static func cacheHeaders(_ headers: ResponseHeaders) -> HTTPCacheHeaders {
        var fields: [(name: String, value: String)] = []
        if let value = headers.cacheControl { fields.append(("cache-control", value)) }
        if let value = headers.expires { fields.append(("expires", value)) }
        if let value = headers.etag { fields.append(("etag", value)) }
        if let value = headers.lastModified { fields.append(("last-modified", value)) }
        return HTTPCacheHeaders(headers: fields, now: now())
    }

    /// `Retry-After` in seconds (the HTTP-date form is rare upstream), bounded to an hour.
    static func retryAfter(_ response: FetchResponse) -> Duration? {
        guard let text = response.headers.retryAfter?.trimmingCharacters(in: .whitespaces),
              let seconds = Int(text), seconds >= 0 else { return nil }
        return .seconds(min(seconds, 3600))
    }

    static func now() -> Int64 { Int64(Date().timeIntervalSince1970) }
}
