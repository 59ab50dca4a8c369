import Fetch
import Loop
import Packs
import Plan

/// The part of a download that hands rows to the store's writer: bodies are encoded on the
/// thread pool (deflate is the costly part of a write, and the cache headers are parsed there
/// too, off the loop), batched so a busy pool costs two thread hops and one writer wake-up per
/// batch instead of per tile; and the bytes handed over and not yet committed are bounded
/// (`DownloadSettings.maxUncommittedBytes`): a writer slower than the network stalls fetching
/// instead of queueing bodies without limit. Loop thread only.
final class WriteQueue {
    private struct PendingEncode: @unchecked Sendable {
        let resource: PlannedResource
        let response: FetchResponse
        /// The cache columns when the caller has them (every tile of an archive's range shares
        /// them), else parsed from the response's headers on the pool.
        let cache: HTTPCacheHeaders?
        /// What the write counts against `maxUncommittedBytes`.
        let cost: Int
        /// Called on the loop thread only (the pool job reads the other fields).
        let stored: (Bool) -> Void
    }

    /// What a write costs beside its body (key, headers, queue entry), so a flood of tiny or
    /// empty tiles is bounded too.
    static let overheadBytes = DownloadSettings.writeOverheadBytes
    private static let maxEncodeJobs = 2

    private let packID: Int64
    private let loop: EventLoop
    private let sink: any ResourceSink
    private let settings: DownloadSettings
    private let clock: WallClock
    private var queue: [PendingEncode] = []
    private var jobs = 0
    private var stopped = false
    /// Bodies handed in and not yet submitted (their transfer is done: they hold no transfer slot).
    private(set) var encoding = 0
    /// Bytes handed in and not yet known to be committed, and of those the bytes submitted since
    /// the last `whenCommitted` marker.
    private(set) var uncommittedBytes = 0
    private var bytesSinceMarker = 0
    /// Called when room frees up (a marker committed) or an encode job finished.
    var onProgress: (() -> Void)?
    /// Waiting for every encode job to have handed its rows to the writer (also once stopped).
    private var idleWaiters: [() -> Void] = []

    init(packID: Int64, loop: EventLoop, sink: any ResourceSink, settings: DownloadSettings, clock: WallClock) {
        self.packID = packID
        self.loop = loop
        self.sink = sink
        self.settings = settings
        self.clock = clock
    }

    /// Whether the writer holds as much as it may: fetching waits.
    var isFull: Bool { uncommittedBytes >= settings.maxUncommittedBytes }

    func stop() {
        stopped = true
    }

    /// Calls `then` on the loop once no encode job is running (at once when none is): every row
    /// handed in before is then submitted to the writer, in order before anything submitted later.
    func whenIdle(_ then: @escaping () -> Void) {
        guard jobs > 0 else { return then() }
        idleWaiters.append(then)
    }

    /// Encodes `response`'s body on the pool and submits it; `stored` hears whether it could be
    /// encoded (a corrupt gzip body cannot).
    func store(_ resource: PlannedResource, _ response: FetchResponse, cache: HTTPCacheHeaders? = nil,
               stored: @escaping (Bool) -> Void) {
        // Counted against the bound from now (the body is held from here until committed), but
        // marked for release only once the writer has it.
        let cost = response.body.count + Self.overheadBytes
        uncommittedBytes += cost
        encoding += 1
        queue.append(PendingEncode(resource: resource, response: response, cache: cache, cost: cost, stored: stored))
        startJob()
    }

    /// A tile the upstream has no content for: stored with NULL data.
    /// (An archive's tile carries the validators of the archive that lacks it.)
    func storeNoContent(_ resource: PlannedResource, cache: HTTPCacheHeaders = HTTPCacheHeaders()) {
        let cost = Self.overheadBytes
        uncommittedBytes += cost
        sink.submit([ResourceWrite(key: Self.key(of: resource), content: .noContent, cache: cache, packID: packID)])
        submitted(cost: cost)
    }

    /// Each job takes the whole queue, at most `maxEncodeJobs` at once.
    private func startJob() {
        guard jobs < Self.maxEncodeJobs, !queue.isEmpty else { return }
        let items = queue
        queue.removeAll(keepingCapacity: true)
        jobs += 1
        let sink = sink
        let packID = packID
        let now = clock.now
        loop.runOnThreadPool({ () -> [Bool] in
            var writes: [ResourceWrite] = []
            writes.reserveCapacity(items.count)
            let encoded = items.map { item -> Bool in
                let body = item.resource.kind == .style
                    ? StoredStyleBody.body(item.response.body, url: item.resource.url) : item.response.body
                guard let stored = try? StoredBody.encoding(body) else { return false }
                writes.append(ResourceWrite(key: Self.key(of: item.resource), content: .body(stored),
                                            cache: item.cache ?? item.response.headers.cacheHeaders(now: now), packID: packID))
                return true
            }
            sink.submit(writes)
            return encoded
        }, then: { [weak self] encoded in
            guard let self else { return }
            jobs -= 1
            encoding -= items.count
            if jobs == 0, !idleWaiters.isEmpty {
                let waiters = idleWaiters
                idleWaiters.removeAll()
                for waiter in waiters { waiter() }
            }
            guard !stopped else { return }
            for (item, wasEncoded) in zip(items, encoded) {
                if wasEncoded { submitted(cost: item.cost) } else { uncommittedBytes -= item.cost }
                item.stored(wasEncoded)
                if stopped { return }
            }
            startJob()
            onProgress?()
        })
    }

    /// Accounts a write just handed to the writer; every quarter of the bound gets a
    /// `whenCommitted` marker that releases its bytes, so fetching stalls only while the writer
    /// really holds `maxUncommittedBytes`.
    private func submitted(cost: Int) {
        bytesSinceMarker += cost
        guard bytesSinceMarker >= settings.maxUncommittedBytes / 4 else { return }
        let covered = bytesSinceMarker
        bytesSinceMarker = 0
        let owned = LoopBound(self, loop: loop)
        sink.whenCommitted {
            let queue = owned.value
            queue.uncommittedBytes -= covered
            queue.onProgress?()
        }
    }

    // MARK: Mapping

    static func key(of resource: PlannedResource) -> ResourceKey {
        if let tile = resource.tile {
            return .tile(TileKey(urlTemplate: tile.urlTemplate, pixelRatio: Int64(tile.pixelRatio), z: Int64(tile.z),
                                 x: Int64(tile.x), y: Int64(tile.y)))
        }
        return .resource(url: resource.url, kind: resource.kind)
    }
}
