import Fetch
import Foundation
import Geo
import Loop
import Packs
import Plan
import Store

/// One pack's download, on the loop thread: the style, its TileJSONs (retried like any resource),
/// the exact expected counts, the fixed resources, then the tiles zoom by zoom, band by band,
/// skipping what the pack already stored and linking what another pack or the ambient cache holds
/// fresh, with at most `maxInFlight` resources under way (and, under `max_bytes_per_second`, only
/// as fast as the cap allows).
/// Bodies go to the writer; the end is reported only after the writer has committed them.
public final class PackDownload {
    /// How a download ended. A stopped download (suspend, delete, shutdown) reports nothing.
    public enum Outcome: Sendable, Equatable {
        case complete
        case failed(PackError)
    }

    /// What one resource came to after its retries.
    private enum Resolution {
        case body(FetchResponse)
        case noContent
        case unauthorized(status: Int)
        /// The address policy refused the upstream's address (directly or after a redirect).
        case refused
        case failed(status: Int?, message: String, attempts: Int)
        case stopped
    }

    private struct PendingRetry {
        let resource: PlannedResource
        let attempt: Int
        let then: (Resolution) -> Void
    }

    public let packID: Int64
    /// The pack's progress after rows stored elsewhere were linked to it (those commits are the
    /// writer's operations, not batches, so `WriterThread.onCommit` does not report them).
    public var onLinked: ((StoredProgress) -> Void)?
    private let loop: EventLoop
    private let fetcher: Fetcher
    private let writer: WriterThread
    private let settings: DownloadSettings
    private let lookup: StoredResourceLookup
    private let onEnd: (Outcome) -> Void
    private let observer: DownloadObserver
    /// The pack's own `max_tiles` limit: checked against the exact count before any tile is fetched.
    private let maxTiles: Int64?
    /// The pack's `max_bytes_per_second`: new transfers wait while it is spent.
    private var bandwidth: BandwidthBudget?
    private let bandwidthTimer: LoopTimer
    private var waitingForBandwidth = false
    private var builder: PlanBuilder
    /// Style and TileJSON responses, stored with the fixed resources instead of being refetched.
    private var documents: [String: FetchResponse] = [:]
    /// Fixed resources, then tiles, waiting for a transfer slot.
    private var pending: [PendingResource] = []
    private var pendingIndex = 0
    /// The plan's pyramids, which pending tiles point into.
    private var pyramids: [TilePyramid] = []

    /// Tiles wait as coordinates and get their URL only when they start: formatting a whole
    /// band's URLs (16,384) in one go held the loop for tens of milliseconds, which every API
    /// request arriving meanwhile waited out.
    private enum PendingResource {
        case fixed(PlannedResource)
        case tile(pyramid: Int, TileID)
    }
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
    private var retries: RetryQueue<PendingRetry>!
    /// Everything resolved; waiting for the writer to commit before reporting.
    private var finishing = false
    private let watchdog: LoopTimer
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
                databasePath: String, maxTiles: Int64? = nil, maxBytesPerSecond: Int64? = nil,
                settings: DownloadSettings = DownloadSettings(), observer: DownloadObserver = DownloadObserver(),
                onEnd: @escaping (Outcome) -> Void) throws {
        self.observer = observer
        self.packID = packID
        self.loop = loop
        self.fetcher = fetcher
        self.writer = writer
        self.settings = settings
        self.onEnd = onEnd
        self.maxTiles = maxTiles
        lookup = try StoredResourceLookup(path: databasePath)
        builder = PlanBuilder(region: region)
        watchdog = LoopTimer(loop: loop)
        bandwidth = maxBytesPerSecond.map { BandwidthBudget(bytesPerSecond: $0, now: .now) }
        bandwidthTimer = LoopTimer(loop: loop)
        retries = RetryQueue(loop: loop) { [weak self] retry in
            self?.fetch(retry.resource, attempt: retry.attempt, then: retry.then)
        }
    }

    /// Starts with the style (or straight with the tiles for a template region).
    public func start() {
        let interval = LoopTimer.milliseconds(settings.watchdogInterval)
        watchdog.start(after: interval, repeat: interval) { [weak self] in self?.checkProgressing() }
        // This run retries every missing resource: failures an interrupted run recorded (before a
        // restart) no longer hold, and would leave a complete pack counting failed resources.
        let packID = packID
        writer.perform({ database in try database.clearFailures(packID: packID) }, completion: { _ in })
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
        retries.close()
        watchdog.close()
        bandwidthTimer.close()
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
                    // Fetch passes `Content-Encoding: gzip` bodies through; parsers need the JSON.
                    guard let document = try? ZlibCodec.gunzippedIfGzip(response.body, limit: settings.maxBodyBytes) else {
                        throw PlanError(.documentTooLarge, "the gzip body is corrupt or inflates beyond \(settings.maxBodyBytes) bytes",
                                        url: resource.url)
                    }
                    try add(&builder, Data(document))
                } catch {
                    end(.failed(PackError(.invalidDocument, error.description, url: resource.url)))
                    return
                }
                documents[resource.url] = response
                fetchMissingTileJSONs()
            case .noContent:
                end(.failed(PackError(.styleUnavailable, "the upstream has no content here", url: resource.url,
                                        status: 404)))
            case .unauthorized(let status):
                end(.failed(PackError(.upstreamUnauthorized, "the upstream refused the request",
                                        url: resource.url, status: status)))
            case .refused:
                end(.failed(Self.addressRefused(resource)))
            case .failed(let status, let message, _):
                end(.failed(PackError(.styleUnavailable, message, url: resource.url, status: status)))
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
        // Stored also when over the pack's limit: the pack then says how many tiles it needs.
        writer.perform({ database in
            try database.setExpected(packID, resources: counts.resources, tiles: counts.tiles, precise: counts.precise,
                                     now: Self.now())
        }, completion: { _ in })
        if let maxTiles, counts.tiles > maxTiles {
            end(.failed(PackError(.tileLimitExceeded, "the region needs \(counts.tiles) tiles, the pack's limit is \(maxTiles)")))
            return
        }
        pyramids = plan.pyramids
        bands = TileBands(pyramids: plan.pyramids, limit: settings.lookupBatchTiles)
        lookingUp = true
        let lookup = lookup
        loop.runOnThreadPool({ lookup.storedURLs(packID: packID) }, then: { [weak self] stored in
            guard let self else { return }
            guard !ended else { return }
            // The documents are stored again (cheap, already here); other stored fixed ones are
            // skipped, and those stored fresh elsewhere are linked.
            let documents = documents
            let candidates = plan.fixed.map(\.url).filter { documents[$0] == nil && !stored.contains($0) }
            linkOnWriter({ database in
                try database.linkFreshResources(packID: packID, urls: candidates, now: Self.now())
            }, then: { download, linked in
                download.lookingUp = false
                download.downloading = true
                download.pending = plan.fixed.filter {
                    documents[$0.url] != nil || !(stored.contains($0.url) || linked?.contains($0.url) == true)
                }.map(PendingResource.fixed)
                download.pump()
            })
        })
    }

    /// Runs a link operation on the writer, publishes the progress it committed, and hands what
    /// it linked (nil if it failed: those rows are then simply fetched) back on the loop.
    private func linkOnWriter<Rows: Sendable>(_ operation: @escaping @Sendable (OfflineDatabase) throws -> OfflineDatabase.Linked<Rows>,
                                              then: @escaping (PackDownload, Rows?) -> Void) {
        let owned = LoopBound(self)
        let continuation = LoopBound(then)
        let loop = loop
        writer.perform(operation, completion: { result in
            let linked = try? result.get()
            loop.execute {
                let download = owned.value
                guard !download.ended else { return }
                if let progress = linked?.progress { download.onLinked?(progress) }
                continuation.value(download, linked?.rows)
            }
        })
    }

    private func pump() {
        guard !ended, downloading else { return }
        while busy - encoding < settings.maxInFlight, uncommittedBytes < settings.maxUncommittedBytes,
              pendingIndex < pending.count {
            guard bandwidthAllowsStart() else { break }
            let resource: PlannedResource
            switch pending[pendingIndex] {
            case .fixed(let fixed): resource = fixed
            case .tile(let pyramid, let tile): resource = pyramids[pyramid].resource(for: tile)
            }
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

    /// Whether the bandwidth cap lets another transfer start now; when not, `pump` runs again
    /// once it does.
    private func bandwidthAllowsStart() -> Bool {
        guard bandwidth != nil else { return true }
        if waitingForBandwidth { return false }
        let now = ContinuousClock.now
        if bandwidth!.startTransfer(now: now) { return true }
        waitingForBandwidth = true
        bandwidthTimer.start(after: max(LoopTimer.milliseconds(bandwidth!.wait(now: now)), 1)) { [weak self] in
            guard let self else { return }
            waitingForBandwidth = false
            pump()
        }
        return false
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
            lookup.tileWindow(packID: packID, urlTemplate: template, pixelRatio: ratio, z: zoom,
                              xRange: xRange, yRange: yRange, now: Self.now())
        }, then: { [weak self] window in
            guard let self else { return }
            guard !ended else { return }
            // Runs of tiles stored fresh elsewhere, as `[y, x0, x1]`; everything else not linked here is fetched.
            var linkable: [[Int64]] = []
            for span in band.spans {
                let y = Int64(span.y)
                for x in span.xRange where window?.linkedHere.contains(x: Int64(x), y: y) != true {
                    if window?.linkable.contains(x: Int64(x), y: y) == true {
                        if let last = linkable.last, last[0] == y, last[2] == Int64(x) - 1 {
                            linkable[linkable.count - 1][2] = Int64(x)
                        } else {
                            linkable.append([y, Int64(x), Int64(x)])
                        }
                    } else {
                        pending.append(.tile(pyramid: band.pyramidIndex, TileID(z: band.zoom, x: x, y: span.y)))
                    }
                }
            }
            guard !linkable.isEmpty else {
                lookingUp = false
                return pump()
            }
            pump()
            let runs = linkable
            linkOnWriter({ database in
                try database.linkFreshTiles(packID: packID, urlTemplate: template, pixelRatio: ratio, z: zoom,
                                            spans: runs, xRange: xRange, yRange: yRange, now: Self.now())
            }, then: { download, linked in
                // Evicted or expired since the lookup, or over the tile limit: fetched after all.
                for run in runs {
                    for x in run[1]...run[2] where linked?.contains(x: x, y: run[0]) != true {
                        download.pending.append(.tile(pyramid: band.pyramidIndex, TileID(z: band.zoom, x: Int(x), y: Int(run[0]))))
                    }
                }
                download.lookingUp = false
                download.pump()
            })
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
                    observer.resourceDownloaded()
                    let cost = Self.writeCost(bytes: 0)
                    uncommittedBytes += cost
                    submitted(cost: cost)
                    resolved()
                } else {
                    recordFailure(resource, status: 404, message: "the upstream has no content here", attempts: 1)
                }
            case .unauthorized(let status):
                end(.failed(PackError(.upstreamUnauthorized, "the upstream refused the request",
                                        url: resource.url, status: status)))
            case .refused:
                end(.failed(Self.addressRefused(resource)))
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
                    observer.resourceDownloaded()
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
            end(.failed(PackError(.tooManyFailures, "\(failedResources) resources failed", url: resource.url,
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
        finishing = true
        let owned = LoopBound(self)
        let loop = loop
        writer.flush {
            loop.execute {
                let download = owned.value
                guard !download.ended else { return }
                download.end(download.failedResources == 0 ? .complete : .failed(PackError(
                    .resourcesFailed, "\(download.failedResources) resources failed after retries; resume retries them")))
            }
        }
    }

    /// The watchdog: "never `active` with nothing in flight and nothing scheduled", checked. Every
    /// resource counted in `busy` must be a transfer in the fetcher, a pending retry or a body
    /// being encoded, and a download with nothing busy must be looking up, waiting for its
    /// bandwidth budget or for the writer to commit what it holds, or finishing. A lost
    /// completion (a path that forgot to resolve) would otherwise leave the pack `active` with
    /// nothing happening, for good; this fails it visibly instead, and `resume` continues it.
    private func checkProgressing() {
        guard !ended else { return }
        let accounted = fetcher.transferCount(owner: UInt64(bitPattern: packID)) + retries.count + encoding
        let waiting = lookingUp || finishing || waitingForBandwidth || uncommittedBytes >= settings.maxUncommittedBytes
        if busy > accounted || (busy == 0 && !waiting) {
            end(.failed(PackError(.internalError, "the download stalled with \(busy) resources under way, "
                                    + "\(accounted) accounted for; resume continues it")))
        }
    }

    private func end(_ outcome: Outcome) {
        guard !ended else { return }
        stop()
        onEnd(outcome)
    }

    // MARK: Fetching with retries

    private func fetch(_ resource: PlannedResource, attempt: Int, then: @escaping (Resolution) -> Void) {
        let request = FetchRequest(url: resource.url, maxBodyBytes: settings.maxBodyBytes, timeouts: settings.timeouts,
                                   owner: UInt64(bitPattern: packID))
        fetcher.submit(request) { [weak self] result in
            guard let self, !ended else { return then(.stopped) }
            if case .success(let response) = result { bandwidth?.received(response.body.count, now: .now) }
            switch result {
            case .success(let response):
                switch response.status {
                case 200..<300 where response.status != 204:
                    then(.body(response))
                case 204, 404:
                    then(.noContent)
                case 401, 403:
                    reportFailure(resource, status: response.status, error: nil, attempt: attempt, willRetry: false)
                    then(.unauthorized(status: response.status))
                case 408, 429, 500..<600:
                    if response.status == 429 || response.status == 503,
                       let delay = response.headers.retryAfterDelay(now: Self.now()) {
                        fetcher.pauseHost(of: resource.url, until: .now + delay)
                    }
                    retry(resource, attempt: attempt, status: response.status, message: "HTTP \(response.status)",
                          then: then)
                default:
                    reportFailure(resource, status: response.status, error: nil, attempt: attempt, willRetry: false)
                    then(.failed(status: response.status, message: "HTTP \(response.status)", attempts: attempt))
                }
            case .failure(.shutdown):
                then(.stopped)
            case .failure(.cancelled):
                // Not by `stop()` (that sets `ended` first): someone else cancelled the transfer.
                // Dropping it would leave the resource unresolved and the pack `active` forever.
                retry(resource, attempt: attempt, status: nil, message: "cancelled", then: then)
            case .failure(.blockedAddress):
                then(.refused)
            case .failure(let error):
                if error.isTransient {
                    retry(resource, attempt: attempt, status: nil, message: error.description, then: then)
                } else {
                    reportFailure(resource, status: nil, error: error.description, attempt: attempt, willRetry: false)
                    then(.failed(status: nil, message: error.description, attempts: attempt))
                }
            }
        }
    }

    private func reportFailure(_ resource: PlannedResource, status: Int?, error: String?, attempt: Int, willRetry: Bool) {
        observer.resourceFailed(DownloadObserver.ResourceFailure(packID: packID, url: resource.url, status: status,
                                                                 error: error, attempt: attempt, willRetry: willRetry))
    }

    private func retry(_ resource: PlannedResource, attempt: Int, status: Int?, message: String,
                       then: @escaping (Resolution) -> Void) {
        reportFailure(resource, status: status, error: status == nil ? message : nil, attempt: attempt,
                      willRetry: attempt < settings.maxAttempts)
        guard attempt < settings.maxAttempts else {
            return then(.failed(status: status, message: message, attempts: attempt))
        }
        observer.retried()
        retries.add(PendingRetry(resource: resource, attempt: attempt + 1, then: then),
                    after: settings.backoff(afterAttempt: attempt))
    }

    // MARK: Mapping

    static func key(of resource: PlannedResource) -> ResourceKey {
        if let tile = resource.tile {
            return .tile(TileKey(urlTemplate: tile.urlTemplate, pixelRatio: Int64(tile.pixelRatio), z: Int64(tile.z),
                                 x: Int64(tile.x), y: Int64(tile.y)))
        }
        return .resource(url: resource.url, kind: resource.kind)
    }

    public static func cacheHeaders(_ headers: ResponseHeaders) -> HTTPCacheHeaders {
        var fields: [(name: String, value: String)] = []
        if let value = headers.cacheControl { fields.append(("cache-control", value)) }
        if let value = headers.expires { fields.append(("expires", value)) }
        if let value = headers.etag { fields.append(("etag", value)) }
        if let value = headers.lastModified { fields.append(("last-modified", value)) }
        return HTTPCacheHeaders(headers: fields, now: now())
    }

    /// The address policy refused the connection: a configuration matter (allow the host), not
    /// something retries fix, so the pack fails at once and says which setting is involved.
    static func addressRefused(_ resource: PlannedResource) -> PackError {
        PackError(.hostNotAllowed, "the upstream's address (or a redirect's) is loopback, private or otherwise not "
                    + "global and no allow rule permits it (address policy: --allow-upstream-hosts)", url: resource.url)
    }

    static func now() -> Int64 { Int64(Date().timeIntervalSince1970) }
}
