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
    let spans: [TileSpan]

    var xRange: ClosedRange<Int64> {
        let low = spans.map(\.xRange.lowerBound).min() ?? 0
        let high = spans.map(\.xRange.upperBound).max() ?? 0
        return Int64(low)...Int64(high)
    }

    var yRange: ClosedRange<Int64> {
        Int64(spans.first?.y ?? 0)...Int64(spans.last?.y ?? 0)
    }
}

/// Walks every pyramid's covers zoom by zoom, span by span, cutting them into bands of at most
/// `limit` tiles whose bounding window also stays under `TileBitmap.maximumTiles`. Lazy: memory
/// is one band, whatever the region's size. With a work unit's `scope`, only the unit's tiles:
/// its pyramid, its zooms, its window of rows and columns.
struct TileBands: IteratorProtocol {
    private let pyramids: [TilePyramid]
    private let limit: Int
    private let scope: WorkUnit.Scope?
    private var pyramidIndex = 0
    private var zoomIndex = 0
    private var spans: TileSpans.Iterator?
    /// The remainder of a span wider than `limit`, cut on the next call.
    private var carry: TileSpan?
    /// A span that did not fit the previous band; it starts the next one.
    private var pushedBack: TileSpan?

    init(pyramids: [TilePyramid], limit: Int, scope: WorkUnit.Scope? = nil) {
        self.pyramids = pyramids
        self.limit = max(1, min(limit, TileBitmap.maximumTiles))
        self.scope = scope
        if scope?.pyramid == nil, scope != nil { pyramidIndex = pyramids.count }  // fixed resources: no tiles
        if let pyramid = scope?.pyramid { pyramidIndex = min(pyramid, pyramids.count) }
    }

    /// Whether the scope takes `zoom` of the pyramid at `index`; nil scope takes everything.
    private func inScope(pyramid index: Int, zoom: Int) -> Bool {
        switch scope {
        case nil: return true
        case .resources, .fixed: return false
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

    mutating func next() -> TileBand? {
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
            var band: [TileSpan] = []
            var tiles = 0
            var low = Int.max
            var high = Int.min
            while let span = nextSpan() {
                let newLow = min(low, span.xRange.lowerBound)
                let newHigh = max(high, span.xRange.upperBound)
                let rows = (band.first.map { span.y - $0.y } ?? 0) + 1
                let window = (newHigh - newLow + 1).multipliedReportingOverflow(by: rows)
                if !band.isEmpty && (tiles + span.count > limit || window.overflow || window.partialValue > limit) {
                    pushedBack = span
                    break
                }
                band.append(span)
                tiles += span.count
                low = newLow
                high = newHigh
            }
            if !band.isEmpty { return TileBand(pyramid: pyramid, pyramidIndex: pyramidIndex, zoom: zoom, spans: band) }
            spans = nil
            zoomIndex += 1
        }
        return nil
    }

    /// The next span, cut to at most `limit` tiles.
    private mutating func nextSpan() -> TileSpan? {
        if let span = pushedBack {
            pushedBack = nil
            return span
        }
        let span: TileSpan
        if let carried = carry {
            carry = nil
            span = carried
        } else if let following = spans?.next() {
            span = following
        } else {
            return nil
        }
        guard span.count > limit else { return span }
        let cut = span.xRange.lowerBound + limit - 1
        carry = TileSpan(y: span.y, xRange: (cut + 1)...span.xRange.upperBound)
        return TileSpan(y: span.y, xRange: span.xRange.lowerBound...cut)
    }
}
