import Geo
import Packs
import Plan
import WorkSharing

/// A few rows of one zoom of one pyramid: small enough for one `TileBitmap` query.
struct TileBand {
    let pyramid: TilePyramid
    /// `pyramid`'s position in the pyramids the bands were cut from.
    let pyramidIndex: Int
    let zoom: Int
    /// Rows ascending; a row may hold several spans.
    let spans: [TileSpan]
    /// Every tile of the band is in the pack's start area.
    let inStartArea: Bool

    var xRange: ClosedRange<Int64> {
        let low = spans.map(\.xRange.lowerBound).min() ?? 0
        let high = spans.map(\.xRange.upperBound).max() ?? 0
        return Int64(low)...Int64(high)
    }

    var yRange: ClosedRange<Int64> {
        Int64(spans.first?.y ?? 0)...Int64(spans.last?.y ?? 0)
    }
}

/// The order a download fetches a pack's tiles in, as runs of tiles: zoom by zoom, row by row
/// (the default, or a work unit's share), or nearest first from a start area.
struct TileOrder {
    /// A run of tiles and the group it belongs to: runs of one group share a pyramid and zoom
    /// and ascend by row, so they can share a band.
    struct Run {
        let pyramid: Int
        let zoom: Int
        let group: Int
        let span: TileSpan
        let inStartArea: Bool
    }

    private var zoomOrder: ZoomOrder?
    private var nearest: NearestFirstWalk?
    /// The walk's covers: (pyramid, zoom) of each.
    private var layers: [(pyramid: Int, zoom: Int)] = []
    private let startBands: Int

    /// Every pyramid zoom by zoom; with a work unit's `scope`, only the unit's tiles.
    init(pyramids: [TilePyramid], scope: WorkUnit.Scope? = nil) {
        zoomOrder = ZoomOrder(pyramids: pyramids, scope: scope)
        startBands = 0
    }

    /// Nearest first from `startArea`'s centre; the bands closer than its radius are its tiles.
    init(pyramids: [TilePyramid], startArea: StartArea) {
        var covers: [TileCover] = []
        for (index, pyramid) in pyramids.enumerated() {
            for zoom in pyramid.zooms {
                covers.append(pyramid.cover(zoom: zoom))
                layers.append((index, zoom))
            }
        }
        nearest = NearestFirstWalk(center: LngLat(longitude: startArea.longitude, latitude: startArea.latitude),
                                   bandWidth: startArea.radiusM / Double(Self.bandsPerRadius), covers: covers)
        startBands = Self.bandsPerRadius
    }

    /// Bands of distance within the start area's radius (its tiles are those of the first four).
    static let bandsPerRadius = 4

    mutating func next() -> Run? {
        if nearest != nil {
            guard let step = nearest!.next() else { return nil }
            let layer = layers[step.cover]
            return Run(pyramid: layer.pyramid, zoom: layer.zoom, group: step.band * layers.count + step.cover,
                       span: step.span, inStartArea: step.band < startBands)
        }
        return zoomOrder?.next()
    }
}

/// Every pyramid's covers zoom by zoom, span by span; with a work unit's `scope`, only the
/// unit's tiles: its pyramid, its zooms, its window of rows and columns.
private struct ZoomOrder {
    private let pyramids: [TilePyramid]
    private let scope: WorkUnit.Scope?
    private var pyramidIndex = 0
    private var zoomIndex = 0
    private var spans: TileSpans.Iterator?

    init(pyramids: [TilePyramid], scope: WorkUnit.Scope?) {
        self.pyramids = pyramids
        self.scope = scope
        if scope?.pyramid == nil, scope != nil { pyramidIndex = pyramids.count }  // fixed resources: no tiles
        if let pyramid = scope?.pyramid { pyramidIndex = min(pyramid, pyramids.count) }
    }

    /// Whether the scope takes `zoom` of the pyramid at `index`; nil scope takes everything.
    private func inScope(pyramid index: Int, zoom: Int) -> Bool {
        switch scope {
        case nil: return true
        case .resources, .fixed, .glyphChoice: return false
        case .zooms(let pyramid, let zooms): return pyramid == index && zooms.contains(zoom)
        case .window(let pyramid, let only, _, _): return pyramid == index && zoom == only
        }
    }

    /// The spans of one zoom's cover the scope takes.
    private func spans(of pyramid: TilePyramid, zoom: Int) -> TileSpans {
        if case .window(_, _, let rows, let columns) = scope {
            return pyramid.cover(zoom: zoom).spans(rows: rows, columns: columns)
        }
        return pyramid.cover(zoom: zoom).spans
    }

    mutating func next() -> TileOrder.Run? {
        while pyramidIndex < pyramids.count {
            let pyramid = pyramids[pyramidIndex]
            guard zoomIndex < pyramid.zooms.count, scope?.pyramid.map({ $0 == pyramidIndex }) ?? true else {
                pyramidIndex = scope?.pyramid == nil ? pyramidIndex + 1 : pyramids.count
                zoomIndex = 0
                continue
            }
            let zoom = pyramid.zooms[zoomIndex]
            guard inScope(pyramid: pyramidIndex, zoom: zoom) else {
                zoomIndex += 1
                continue
            }
            if spans == nil { spans = self.spans(of: pyramid, zoom: zoom).makeIterator() }
            if let span = spans?.next() {
                return TileOrder.Run(pyramid: pyramidIndex, zoom: zoom, group: pyramidIndex << 8 | zoom, span: span,
                                     inStartArea: false)
            }
            spans = nil
            zoomIndex += 1
        }
        return nil
    }
}

/// Cuts a `TileOrder` into bands of at most `limit` tiles whose bounding window also stays
/// under `TileBitmap.maximumTiles`; a band never mixes groups. Lazy: memory is one band,
/// whatever the region's size.
struct TileBands: IteratorProtocol {
    private let pyramids: [TilePyramid]
    private var order: TileOrder
    private let limit: Int
    /// The remainder of a run wider than `limit`, cut on the next call.
    private var carry: TileOrder.Run?
    /// A run that did not fit the previous band; it starts the next one.
    private var pushedBack: TileOrder.Run?

    init(pyramids: [TilePyramid], limit: Int, order: TileOrder) {
        self.pyramids = pyramids
        self.order = order
        self.limit = max(1, min(limit, TileBitmap.maximumTiles))
    }

    init(pyramids: [TilePyramid], limit: Int, scope: WorkUnit.Scope? = nil) {
        self.init(pyramids: pyramids, limit: limit, order: TileOrder(pyramids: pyramids, scope: scope))
    }

    mutating func next() -> TileBand? {
        guard let first = nextRun() else { return nil }
        var band = [first.span]
        var tiles = first.span.count
        var low = first.span.xRange.lowerBound
        var high = first.span.xRange.upperBound
        while let run = nextRun() {
            let newLow = min(low, run.span.xRange.lowerBound)
            let newHigh = max(high, run.span.xRange.upperBound)
            let rows = run.span.y - first.span.y + 1
            let window = (newHigh - newLow + 1).multipliedReportingOverflow(by: rows)
            if run.group != first.group || run.span.y < band[band.count - 1].y || tiles + run.span.count > limit
                || window.overflow || window.partialValue > limit {
                pushedBack = run
                break
            }
            band.append(run.span)
            tiles += run.span.count
            low = newLow
            high = newHigh
        }
        return TileBand(pyramid: pyramids[first.pyramid], pyramidIndex: first.pyramid, zoom: first.zoom, spans: band,
                        inStartArea: first.inStartArea)
    }

    /// The next run, cut to at most `limit` tiles.
    private mutating func nextRun() -> TileOrder.Run? {
        if let run = pushedBack {
            pushedBack = nil
            return run
        }
        let run: TileOrder.Run
        if let carried = carry {
            carry = nil
            run = carried
        } else if let following = order.next() {
            run = following
        } else {
            return nil
        }
        guard run.span.count > limit else { return run }
        let cut = run.span.xRange.lowerBound + limit - 1
        carry = TileOrder.Run(pyramid: run.pyramid, zoom: run.zoom, group: run.group,
                              span: TileSpan(y: run.span.y, xRange: (cut + 1)...run.span.xRange.upperBound),
                              inStartArea: run.inStartArea)
        return TileOrder.Run(pyramid: run.pyramid, zoom: run.zoom, group: run.group,
                             span: TileSpan(y: run.span.y, xRange: run.span.xRange.lowerBound...cut), inStartArea: run.inStartArea)
    }
}
