import Geo
import Loop
import TileFormats

/// Reads a job's tiles out of its PMTiles archives, band by band: each band's tiles are located
/// in the directories (the root in hand; the leaves a band needs read once and kept in a bounded
/// cache — a planet's leaves are never all read), then fetched with coalesced range requests
/// (`ArchiveRangePlan`), each carrying the archive's validator. Tiles the archive lacks come back
/// `missing` without a request. Lookups and plans run on the thread pool.
///
/// The job drives it: `add` hands in tiles (of one archive, its `slot`), `startNext` starts one
/// request when the job's limits allow (the bytes of ranges under way are bounded here), and the
/// callbacks report tiles, the end of each request, and what stops the job. Tiles handed in as a
/// pack's start area come back marked so, and their ranges go first. Loop thread only.
final class ArchiveTileFetch {
    enum Outcome {
        /// `headers`: the answer's (lower-case names), stored with the tile as its validators.
        case tile(slot: Int, TileID, bytes: [UInt8], headers: [String: String], inStartArea: Bool)
        /// Not in the archive; `headers` are the archive's, stored with the "no content" row.
        case missing(slot: Int, TileID, headers: [String: String], inStartArea: Bool)
        /// The tiles of a range that failed after its retries.
        case failed(slot: Int, [TileID], status: Int?, message: String, inStartArea: Bool)
    }

    private final class Archive {
        let opened: OpenedArchive
        var leaves: ArchiveLeafCache
        /// Leaves queued or being read, and the bands waiting for each.
        var waiting: [ArchiveLeafKey: Set<Int>] = [:]

        init(_ opened: OpenedArchive, cacheEntries: Int) {
            self.opened = opened
            leaves = ArchiveLeafCache(capacity: cacheEntries)
        }
    }

    private struct Band {
        let slot: Int
        let inStartArea: Bool
        var unresolved: [TileID]
        var located: [(tile: TileID, offset: UInt64, length: UInt64)] = []
        var locating = false
        /// A leaf it waits for arrived while it was being located: locate again.
        var stale = false
    }

    /// Where tiles are, as far as the directories in hand tell.
    struct Location: Sendable {
        var located: [(tile: TileID, offset: UInt64, length: UInt64)] = []
        var missing: [TileID] = []
        var needs: [ArchiveLeafKey: [TileID]] = [:]
        var used: Set<ArchiveLeafKey> = []
    }

    /// Root plus three levels of leaves, as the reference reader goes.
    static let maxDepth = 4

    private let loop: EventLoop
    private let source: any ArchiveRangeSource
    private let limits: ArchiveLimits
    private var archives: [Int: Archive] = [:]
    private var bands: [Int: Band] = [:]
    private var nextBand = 0
    private var leafQueue: [(slot: Int, key: ArchiveLeafKey)] = []
    /// Ranges to read: the start area's first.
    private var startAreaRanges = RangeQueue()
    private var ranges = RangeQueue()
    private var stopped = false
    private var bytesUnderWay: UInt64 = 0
    /// Requests started by `startNext` and not yet ended.
    private(set) var requestsUnderWay = 0
    /// Lookups, plans and leaf decodings on the pool.
    private(set) var poolJobs = 0
    /// Tiles handed in and not yet handed back.
    private(set) var pendingTiles = 0

    var onOutcome: ((Outcome) -> Void)?
    /// A request started by `startNext` ended (after its outcomes).
    var onRequestEnded: (() -> Void)?
    /// Work became startable.
    var onReady: (() -> Void)?
    /// The archive cannot be read further: the job fails with this.
    var onFatal: ((ArchiveFailure) -> Void)?
    /// The archive in `slot` is not the one opened any more (412, other validators, 416).
    var onReplaced: ((Int, String) -> Void)?

    init(loop: EventLoop, source: any ArchiveRangeSource, limits: ArchiveLimits) {
        self.loop = loop
        self.source = source
        self.limits = limits
    }

    func addArchive(_ opened: OpenedArchive, slot: Int) {
        archives[slot] = Archive(opened, cacheEntries: limits.leafCacheEntries)
    }

    func hasArchive(slot: Int) -> Bool { archives[slot] != nil }

    var isIdle: Bool { pendingTiles == 0 && requestsUnderWay == 0 && poolJobs == 0 }

    /// Leaves read and read again after being dropped, over all archives (directories read once
    /// per job when `refetched` is 0).
    var leafReads: (fetched: Int, refetched: Int) {
        archives.values.reduce((0, 0)) { ($0.0 + $1.leaves.fetched, $0.1 + $1.leaves.refetched) }
    }

    func stop() {
        stopped = true
        leafQueue.removeAll()
        startAreaRanges = RangeQueue()
        ranges = RangeQueue()
        bands.removeAll()
    }

    /// Tiles of the archive in `slot` to read (`inStartArea`: of the pack's start area).
    func add(_ tiles: [TileID], slot: Int, inStartArea: Bool = false) {
        guard !stopped, !tiles.isEmpty, archives[slot] != nil else { return }
        let id = nextBand
        nextBand += 1
        bands[id] = Band(slot: slot, inStartArea: inStartArea, unresolved: tiles)
        pendingTiles += tiles.count
        locate(id)
    }

    /// Whether `startNext` would start a request now.
    var canStart: Bool {
        guard !stopped else { return false }
        if !leafQueue.isEmpty { return true }
        guard let next = startAreaRanges.first ?? ranges.first else { return false }
        return requestsUnderWay == 0 || bytesUnderWay + next.request.count <= limits.maxBytesInFlight
    }

    /// Starts one request — a leaf a band waits for first, else the next range (the start
    /// area's first) if the bytes under way allow it (always when nothing is under way). False
    /// when nothing can start.
    func startNext() -> Bool {
        guard canStart else { return false }
        if !leafQueue.isEmpty {
            let (slot, key) = leafQueue.removeFirst()
            readLeaf(key, slot: slot)
            return true
        }
        if let (slot, request) = startAreaRanges.popFirst() {
            readRange(request, slot: slot, inStartArea: true)
        } else if let (slot, request) = ranges.popFirst() {
            readRange(request, slot: slot, inStartArea: false)
        }
        return true
    }

    // MARK: Locating

    private func locate(_ id: Int) {
        guard var band = bands[id], let archive = archives[band.slot], !band.locating else {
            if bands[id] != nil { bands[id]?.stale = true }
            return
        }
        band.locating = true
        band.stale = false
        let tiles = band.unresolved
        band.unresolved = []
        bands[id] = band
        let (root, leaves, header) = (archive.opened.root, archive.leaves.leaves, archive.opened.header)
        poolJobs += 1
        loop.runOnThreadPool({ Self.locate(tiles, root: root, leaves: leaves, header: header) }, then: { [weak self] location in
            guard let self else { return }
            poolJobs -= 1
            guard !stopped else { return }
            located(id, location)
        })
    }

    private func located(_ id: Int, _ location: Location) {
        guard var band = bands[id], let archive = archives[band.slot] else { return }
        band.locating = false
        archive.leaves.touch(location.used)
        band.located += location.located
        for tile in location.missing {
            deliver(.missing(slot: band.slot, tile, headers: archive.opened.headers, inStartArea: band.inStartArea))
        }
        var arrived = band.stale
        for (key, tiles) in location.needs {
            band.unresolved += tiles
            if archive.leaves[key] != nil {
                arrived = true  // read meanwhile
                continue
            }
            guard key.length <= limits.maxDirectoryBytes else {
                return fatal(.invalid(url: archive.opened.url, detail: "a leaf directory of \(key.length) bytes, above the \(limits.maxDirectoryBytes) allowed"))
            }
            if archive.waiting[key] == nil { leafQueue.append((band.slot, key)) }
            archive.waiting[key, default: []].insert(id)
        }
        bands[id] = band
        if band.unresolved.isEmpty {
            plan(id)
        } else if arrived {
            locate(id)
        } else if !leafQueue.isEmpty {
            onReady?()
        }
    }

    /// Each tile's place, walking the root and the leaves in `leaves` (pure; on the pool).
    static func locate(_ tiles: [TileID], root: [PMTilesEntry], leaves: [ArchiveLeafKey: [PMTilesEntry]],
                       header: PMTilesHeader) -> Location {
        var location = Location()
        for tile in tiles {
            guard let id = HilbertTileID.encode(z: tile.z, x: tile.x, y: tile.y) else {
                location.missing.append(tile)
                continue
            }
            var directory = root
            var depth = 1
            walk: while true {
                switch PMTilesDirectory.find(id, in: directory) {
                case .missing:
                    location.missing.append(tile)
                    break walk
                case .tile(let offset, let length):
                    location.located.append((tile, header.tileDataOffset + offset, UInt64(length)))
                    break walk
                case .leaf(let offset, let length):
                    let key = ArchiveLeafKey(offset: offset, length: length)
                    guard depth < maxDepth else {
                        location.missing.append(tile)
                        break walk
                    }
                    guard let leaf = leaves[key] else {
                        location.needs[key, default: []].append(tile)
                        break walk
                    }
                    location.used.insert(key)
                    directory = leaf
                    depth += 1
                }
            }
        }
        return location
    }

    // MARK: Leaves

    private func readLeaf(_ key: ArchiveLeafKey, slot: Int) {
        guard let archive = archives[slot] else { return }
        let opened = archive.opened
        let start = opened.header.leafDirectoriesOffset + key.offset
        requestsUnderWay += 1
        source.read(ArchiveRead(url: opened.url, range: start...(start + UInt64(key.length) - 1), validator: opened.validator)) {
            [weak self] result in
            guard let self, !stopped else { return }
            switch result {
            case .bytes(let answer):
                decodeLeaf(answer.body, key: key, slot: slot)
            case .replaced(let detail):
                onReplaced?(slot, detail)
            case .failed(let failure):
                fatal(failure)
            case .notModified:
                fatal(.unavailable(url: opened.url, status: 304, detail: "a 304 to a leaf directory read"))
            case .stopped:
                return
            }
            // A replaced archive or a fatal failure stops the job (and this) before it hears more.
            guard !stopped else { return }
            requestsUnderWay -= 1
            onRequestEnded?()
        }
    }

    private func decodeLeaf(_ bytes: [UInt8], key: ArchiveLeafKey, slot: Int) {
        guard let archive = archives[slot] else { return }
        let header = archive.opened.header
        let limits = limits
        poolJobs += 1
        loop.runOnThreadPool({ () -> Result<[PMTilesEntry], PMTilesDirectory.Failure> in
            Result { () throws(PMTilesDirectory.Failure) in
                let entries = try PMTilesDirectory.decode(bytes, compression: header.internalCompression,
                                                          maxEntries: limits.maxDirectoryEntries,
                                                          inflatedLimit: limits.maxDirectoryEntries * 40)
                try PMTilesDirectory.check(entries, tileDataLength: header.tileDataLength, leafLength: header.leafDirectoriesLength)
                return entries
            }
        }, then: { [weak self] result in
            guard let self else { return }
            poolJobs -= 1
            guard !stopped else { return }
            switch result {
            case .failure(let error):
                fatal(.invalid(url: archive.opened.url, detail: "leaf directory at \(key.offset): \(error)"))
            case .success(let entries):
                archive.leaves.insert(entries, for: key)
                for id in archive.waiting.removeValue(forKey: key) ?? [] { locate(id) }
            }
        })
    }

    // MARK: Ranges

    /// A band whose tiles are all located becomes range requests.
    private func plan(_ id: Int) {
        guard let band = bands.removeValue(forKey: id), let archive = archives[band.slot] else { return }
        let located = band.located
        let bounds = limits.bounds
        poolJobs += 1
        loop.runOnThreadPool({ ArchiveRangePlan(located, bounds: bounds) }, then: { [weak self] plan in
            guard let self else { return }
            poolJobs -= 1
            guard !stopped else { return }
            for tile in plan.empty {
                deliver(.tile(slot: band.slot, tile, bytes: [], headers: archive.opened.headers, inStartArea: band.inStartArea))
            }
            if band.inStartArea {
                startAreaRanges.append(plan.requests, slot: band.slot)
            } else {
                ranges.append(plan.requests, slot: band.slot)
            }
            onReady?()
        })
    }

    private func readRange(_ request: ArchiveRangePlan.Request, slot: Int, inStartArea: Bool) {
        guard let archive = archives[slot] else { return }
        let opened = archive.opened
        requestsUnderWay += 1
        bytesUnderWay += request.count
        source.read(ArchiveRead(url: opened.url, range: request.bytes, validator: opened.validator)) { [weak self] result in
            guard let self, !stopped else { return }
            switch result {
            case .bytes(let answer) where answer.range == request.bytes:
                for piece in request.pieces {
                    let bytes = Array(request.slice(piece, of: answer.body))
                    for tile in piece.tiles {
                        deliver(.tile(slot: slot, tile, bytes: bytes, headers: answer.headers, inStartArea: inStartArea))
                    }
                }
            case .bytes(let answer):
                onReplaced?(slot, "bytes \(request.bytes.lowerBound)-\(request.bytes.upperBound) came back as \(answer.range): "
                            + "the archive is shorter than its header says")
            case .replaced(let detail):
                onReplaced?(slot, detail)
            case .failed(.unavailable(_, let status, let detail)):
                deliver(.failed(slot: slot, request.pieces.flatMap(\.tiles), status: status, message: detail, inStartArea: inStartArea))
            case .failed(let failure):
                fatal(failure)
            case .notModified:
                deliver(.failed(slot: slot, request.pieces.flatMap(\.tiles), status: 304, message: "a 304 to a range read",
                                inStartArea: inStartArea))
            case .stopped:
                return
            }
            guard !stopped else { return }
            requestsUnderWay -= 1
            bytesUnderWay -= request.count
            onRequestEnded?()
        }
    }

    private func deliver(_ outcome: Outcome) {
        guard !stopped else { return }
        switch outcome {
        case .tile, .missing: pendingTiles -= 1
        case .failed(_, let tiles, _, _, _): pendingTiles -= tiles.count
        }
        onOutcome?(outcome)
    }

    private func fatal(_ failure: ArchiveFailure) {
        guard !stopped else { return }
        onFatal?(failure)
    }
}

/// Range requests waiting to start, first in first out (the head advances; the array is
/// compacted now and then).
private struct RangeQueue {
    private var items: [(slot: Int, request: ArchiveRangePlan.Request)] = []
    private var head = 0

    var first: (slot: Int, request: ArchiveRangePlan.Request)? { head < items.count ? items[head] : nil }

    mutating func append(_ requests: [ArchiveRangePlan.Request], slot: Int) {
        items += requests.map { (slot, $0) }
    }

    mutating func popFirst() -> (slot: Int, request: ArchiveRangePlan.Request)? {
        guard let next = first else { return nil }
        head += 1
        if head > 256, head * 2 > items.count {
            items.removeFirst(head)
            head = 0
        }
        return next
    }
}
