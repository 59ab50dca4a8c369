import Geo
import Loop
import Packs
import Plan
import WorkSharing

/// The part of a download that asks the store what it already has: before a fixed resource or a
/// band of tiles is fetched, what the pack stored (skipped — a resume after a restart or a
/// failure fetches only what is missing) and what another pack or the ambient cache holds fresh
/// (linked on the writer, never fetched). Set-based queries per band, never one per tile. A
/// lookup that fails is not an error: its resources are simply fetched. Loop thread only
/// (checked in debug builds).
final class StoredLookup {
    private let loop: EventLoop
    private let packID: Int64
    private let store: any PackStore
    private let clock: WallClock
    private let pyramids: [TilePyramid]
    /// Per pyramid (by index) the version its tiles must have been stored from to count as
    /// stored: an archive's current validators. Others count whatever they were stored from.
    private let versions: [Int: TileVersion]
    private var bands: TileBands?
    private var stopped = false
    /// The pack's progress after rows stored elsewhere were linked to it.
    var onLinked: ((StoredProgress) -> Void)?
    /// A band (or the fixed resources) is being looked up or linked.
    private(set) var lookingUp = false
    /// Every band was looked up.
    var exhausted: Bool { bands == nil }

    /// The band being looked up lies in the pack's start area.
    private(set) var lookingUpStartArea = false

    /// `order`: which tiles, in which order (every tile of the pyramids zoom by zoom by default).
    init(loop: EventLoop, packID: Int64, store: any PackStore, clock: WallClock, pyramids: [TilePyramid], bandTiles: Int,
         order: TileOrder, versions: [Int: TileVersion] = [:]) {
        self.loop = loop
        self.packID = packID
        self.store = store
        self.clock = clock
        self.pyramids = pyramids
        self.versions = versions
        bands = TileBands(pyramids: pyramids, limit: bandTiles, order: order)
    }

    func stop() {
        stopped = true
    }

    /// The fixed resources to fetch: those the pack stored are skipped (except `refetch`, the
    /// documents already in hand, stored again), those stored fresh elsewhere are linked.
    func fixed(_ resources: [PlannedResource], refetch: Set<String>, then: @escaping ([PlannedResource]) -> Void) {
        lookingUp = true
        let packID = packID
        let clock = clock
        store.read({ reader in try reader.storedResourceURLs(packID: packID) }) { [self] result in
            guard !stopped else { return }
            let stored = (try? result.get()) ?? []
            let candidates = resources.map(\.url).filter { !refetch.contains($0) && !stored.contains($0) }
            guard !candidates.isEmpty else {
                lookingUp = false
                return then(resources.filter { refetch.contains($0.url) || !stored.contains($0.url) })
            }
            link({ database in try database.linkFreshResources(packID: packID, urls: candidates, now: clock.now) }) { [self] linked in
                lookingUp = false
                then(resources.filter { refetch.contains($0.url) || !(stored.contains($0.url) || linked?.contains($0.url) == true) })
            }
        }
    }

    /// Looks up the next band: `deliver` receives the tiles to fetch as soon as they are known
    /// (before the linking commits), then again those a link could not take after all; `done`
    /// runs when the band is settled. False when every band was looked up.
    @discardableResult
    func nextBand(deliver: @escaping ([PendingResources.Entry]) -> Void, done: @escaping () -> Void) -> Bool {
        guard let band = bands?.next() else {
            bands = nil
            return false
        }
        lookingUp = true
        lookingUpStartArea = band.inStartArea
        let packID = packID
        let template = band.pyramid.template.template
        let ratio = Int64(band.pyramid.template.storedPixelRatio(for: band.pyramid.pixelRatio))
        let zoom = Int64(band.zoom)
        let (xRange, yRange) = (band.xRange, band.yRange)
        let now = clock.now
        let version = versions[band.pyramidIndex]
        store.read({ reader in
            try reader.tileWindow(packID: packID, urlTemplate: template, pixelRatio: ratio, z: zoom, xRange: xRange,
                                  yRange: yRange, now: now, version: version)
        }) { [self] result in
            guard !stopped else { return }
            let window = try? result.get()
            // Runs of tiles stored fresh elsewhere, as `[y, x0, x1]`; everything else not linked
            // here is fetched.
            var linkable: [[Int64]] = []
            var fetch: [PendingResources.Entry] = []
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
                        fetch.append(.tile(pyramid: band.pyramidIndex, TileID(z: band.zoom, x: x, y: span.y),
                                           inStartArea: band.inStartArea))
                    }
                }
            }
            guard !linkable.isEmpty else {
                lookingUp = false
                deliver(fetch)
                return done()
            }
            deliver(fetch)
            let runs = linkable
            let clock = clock
            link({ database in
                try database.linkFreshTiles(packID: packID, urlTemplate: template, pixelRatio: ratio, z: zoom, spans: runs,
                                            xRange: xRange, yRange: yRange, now: clock.now)
            }) { [self] linked in
                // Evicted or expired since the lookup, or over the tile limit: fetched after all.
                var missed: [PendingResources.Entry] = []
                for run in runs {
                    for x in run[1]...run[2] where linked?.contains(x: x, y: run[0]) != true {
                        missed.append(.tile(pyramid: band.pyramidIndex, TileID(z: band.zoom, x: Int(x), y: Int(run[0])),
                                            inStartArea: band.inStartArea))
                    }
                }
                lookingUp = false
                deliver(missed)
                done()
            }
        }
        return true
    }

    /// Runs a link on the writer (in the open batch), publishes the progress it committed, and
    /// hands back what it linked — nil if it failed: those rows are then simply fetched.
    private func link<Rows: Sendable>(_ operation: @escaping @Sendable (any StoreWriting) throws -> Linked<Rows>,
                                      then: @escaping (Rows?) -> Void) {
        // Two carriers, not one of a tuple: a closure inside a tuple inside a generic value lost a
        // retain on its way through a `@Sendable` completion (Swift 6.3), freeing the lookup.
        let owned = LoopBound(self, loop: loop)
        let completion = LoopBound(then, loop: loop)
        store.inBatch(operation) { result in
            let lookup = owned.value
            guard !lookup.stopped else { return }
            let linked = try? result.get()
            if let progress = linked?.progress { lookup.onLinked?(progress) }
            completion.value(linked?.rows)
        }
    }
}
