/// The tiles of one zoom needed to show a region: every tile whose square's interior meets the
/// region (polygons, boxes), or that owns a point of it (lines, points). Streams rows of spans;
/// never holds the tiles, so a z16 cover of a continent costs O(vertices) memory.
///
/// Tile (x, y) owns the half-open square [x, x+1) × [y, y+1) in tile units, and the last
/// column and row also own the world's east and south edges, so a point on a shared edge is in
/// exactly one tile and a line along a tile edge takes the tiles east of / south of it.
public struct TileCover: Sequence, Sendable {
    public let zoom: Int
    private let region: PreparedRegion
    private let clip: BoundsCover?

    /// `zoom` is clamped to 0…30 (validate it where it is read). `clip` (a TileJSON's `bounds`)
    /// drops tiles that do not meet it.
    public init(region: TileRegion, zoom: Int, within clip: LngLatBounds? = nil) {
        self.init(prepared: PreparedRegion(region), zoom: zoom, within: clip)
    }

    init(prepared region: PreparedRegion, zoom: Int, within clip: LngLatBounds?) {
        let zoom = Swift.min(Swift.max(zoom, 0), WebMercator.maxZoom)
        self.zoom = zoom
        self.region = region
        self.clip = clip.map { BoundsCover($0, zoom: zoom) }
    }

    /// The exact number of tiles iteration yields: closed-form for a box, O(rows) span sums
    /// for a geometry.
    public var count: Int {
        count(limit: .max) ?? .max
    }

    /// The exact count, or nil as soon as it exceeds `limit`. Each row with tiles adds at least
    /// one, so a geometry costs at most `limit` + 1 rows: a request for a line down a
    /// meridian at z30 (2^30 rows) is refused after `limit` rows, not after a billion.
    public func count(limit: Int) -> Int? {
        if case .bounds(let bounds) = region {
            let cover = BoundsCover(bounds, zoom: zoom)
            let total = (clip.map(cover.intersection) ?? cover).count
            return total <= limit ? total : nil
        }
        var total = 0
        for span in spans {
            total += span.count
            if total > limit { return nil }
        }
        return total
    }

    /// Rows in ascending y; within a row, spans in ascending x, disjoint and not adjacent.
    public var spans: TileSpans {
        switch region {
        case .bounds(let bounds):
            let cover = BoundsCover(bounds, zoom: zoom)
            return TileSpans(source: .bounds(clip.map(cover.intersection) ?? cover), zoom: zoom)
        case .shape(let shape):
            return TileSpans(source: .shape(shape, clip), zoom: zoom)
        }
    }

    /// The spans inside a window of `rows` × `columns` (a work unit's share of the cover): the
    /// window clips like a TileJSON's bounds, so a geometry's sweep starts at the window's first
    /// row (`RowSweep.skip(to:)`) and stops after its last — no pass over the rows above it.
    public func spans(rows: ClosedRange<Int>, columns: ClosedRange<Int>) -> TileSpans {
        let window = BoundsCover(rows: rows, columns: [columns])
        switch region {
        case .bounds(let bounds):
            let cover = BoundsCover(bounds, zoom: zoom)
            return TileSpans(source: .bounds((clip.map(cover.intersection) ?? cover).intersection(window)), zoom: zoom)
        case .shape(let shape):
            return TileSpans(source: .shape(shape, clip.map(window.intersection) ?? window), zoom: zoom)
        }
    }

    public func makeIterator() -> Iterator {
        Iterator(spans: spans.makeIterator(), zoom: zoom)
    }

    /// Tiles in (y, x) order, each once.
    public struct Iterator: IteratorProtocol {
        private var spans: TileSpans.Iterator
        private let zoom: Int
        private var current: TileSpan?
        private var x = 0

        init(spans: TileSpans.Iterator, zoom: Int) {
            self.spans = spans
            self.zoom = zoom
        }

        public mutating func next() -> TileID? {
            if let span = current, x < span.xRange.upperBound {
                x += 1
                return TileID(z: zoom, x: x, y: span.y)
            }
            guard let span = spans.next() else {
                current = nil
                return nil
            }
            current = span
            x = span.xRange.lowerBound
            return TileID(z: zoom, x: x, y: span.y)
        }
    }
}
