import Foundation

/// The tiles of several covers (the zooms of a pack's pyramids), nearest first from a point:
/// distance bands outward — a band is a ring of distances — and within each band every cover in
/// turn, its tiles of that ring row by row. A tile's distance is from the point to the tile's
/// nearest point (0 for the tile holding it), in metres on the ground at the point's latitude,
/// measured on the map without wrapping round the antimeridian. Bands are `bandWidth` wide out
/// to eight bands, then each a quarter wider than the one before, so a walk across a continent
/// takes a few dozen bands. Every tile of every cover comes exactly once, and all tiles of a
/// band before any tile of the next: with `bandWidth` = radius / 4, every tile closer than the
/// radius comes before any tile twice as far.
///
/// Memory is a cover's row state (a geometry's active edges), never a list of tiles: each band
/// of each cover is walked as a window of rows of the cover's own span stream.
public struct NearestFirstWalk: IteratorProtocol {
    /// One run of tiles of one cover, all in `band`.
    public struct Step: Sendable, Equatable {
        /// The index of the cover in the walk's covers.
        public let cover: Int
        public let band: Int
        public let span: TileSpan
    }

    private let covers: [TileCover]
    /// Unit-square position of the centre.
    private let centerX: Double
    private let centerY: Double
    /// Metres per unit of the unit square, at the centre's latitude.
    private let metresPerUnit: Double
    public let bandWidth: Double
    /// Per cover, its rows and columns (nil: an empty cover), found once.
    private let extents: [(rows: ClosedRange<Int>, columns: ClosedRange<Int>)?]
    /// The farthest any tile of any cover can be: no band starts beyond it.
    private let farthest: Double
    private var band = 0
    private var coverIndex = 0
    private var window: TileSpans.Iterator?
    private var pieces: [TileSpan] = []

    public init(center: LngLat, bandWidth: Double, covers: [TileCover]) {
        self.covers = covers
        let projected = WebMercator.project(center)
        centerX = projected.x
        centerY = projected.y
        let latitude = min(max(center.latitude, -WebMercator.maxLatitude), WebMercator.maxLatitude)
        metresPerUnit = WebMercator.earthCircumference * cos(latitude * .pi / 180)
        self.bandWidth = max(bandWidth, 1)
        var extents: [(rows: ClosedRange<Int>, columns: ClosedRange<Int>)?] = []
        var farthest = 0.0
        for cover in covers {
            var rows: ClosedRange<Int>?
            var columns: ClosedRange<Int>?
            for span in cover.spans {
                rows = rows.map { min($0.lowerBound, span.y)...max($0.upperBound, span.y) } ?? span.y...span.y
                columns = columns.map { min($0.lowerBound, span.xRange.lowerBound)...max($0.upperBound, span.xRange.upperBound) }
                    ?? span.xRange
            }
            guard let rows, let columns else {
                extents.append(nil)
                continue
            }
            extents.append((rows, columns))
            let scale = WebMercator.scale(zoom: cover.zoom)
            let dx = max(abs(Double(columns.lowerBound) / scale - projected.x), abs(Double(columns.upperBound + 1) / scale - projected.x))
            let dy = max(abs(Double(rows.lowerBound) / scale - projected.y), abs(Double(rows.upperBound + 1) / scale - projected.y))
            farthest = max(farthest, (dx * dx + dy * dy).squareRoot() * metresPerUnit)
        }
        self.extents = extents
        self.farthest = farthest
    }

    /// Where band `index` starts, in metres: `index` × `bandWidth` for the first eight, then each
    /// band a quarter wider than the one before.
    public func bandStart(_ index: Int) -> Double {
        index <= 8 ? Double(index) * bandWidth : 8 * bandWidth * pow(1.25, Double(index - 8))
    }

    /// The band a tile at `distance` metres belongs to.
    public func band(ofDistance distance: Double) -> Int {
        if distance < 8 * bandWidth { return Int(distance / bandWidth) }
        var index = 8
        while bandStart(index + 1) <= distance { index += 1 }
        return index
    }

    /// The tile's distance from the centre, as the walk measures it.
    public func distance(to tile: TileID) -> Double {
        let scale = WebMercator.scale(zoom: tile.z)
        let dx = Self.gap(centerX * scale, Double(tile.x)) / scale
        let dy = Self.gap(centerY * scale, Double(tile.y)) / scale
        return (dx * dx + dy * dy).squareRoot() * metresPerUnit
    }

    /// How far `position` is from the unit cell [cell, cell + 1).
    private static func gap(_ position: Double, _ cell: Double) -> Double {
        position < cell ? cell - position : (position >= cell + 1 ? position - cell - 1 : 0)
    }

    public mutating func next() -> Step? {
        while true {
            if let piece = pieces.popLast() {
                return Step(cover: coverIndex, band: band, span: piece)
            }
            if window != nil, let span = window!.next() {
                pieces = Array(cut(span).reversed())
                continue
            }
            // The next cover of this band, or the next band.
            if window != nil {
                window = nil
                coverIndex += 1
            }
            if coverIndex >= covers.count {
                coverIndex = 0
                band += 1
            }
            guard bandStart(band) <= farthest else { return nil }
            window = openWindow()
            if window == nil { coverIndex += 1 }
        }
    }

    /// The rows and columns of the current cover that can hold tiles of the current band.
    private func openWindow() -> TileSpans.Iterator? {
        guard let extent = extents[coverIndex] else { return nil }
        let cover = covers[coverIndex]
        let scale = WebMercator.scale(zoom: cover.zoom)
        let reach = bandStart(band + 1) / metresPerUnit * scale
        let top = max(extent.rows.lowerBound, Int((centerY * scale - reach).rounded(.down)) - 1)
        let bottom = min(extent.rows.upperBound, Int((centerY * scale + reach).rounded(.down)) + 1)
        let west = max(extent.columns.lowerBound, Int((centerX * scale - reach).rounded(.down)) - 1)
        let east = min(extent.columns.upperBound, Int((centerX * scale + reach).rounded(.down)) + 1)
        guard top <= bottom, west <= east else { return nil }
        let (rows, columns) = (top...bottom, west...east)
        return cover.spans(rows: rows, columns: columns).makeIterator()
    }

    /// The parts of `span` whose tiles are in the current band, west to east.
    private func cut(_ span: TileSpan) -> [TileSpan] {
        let zoom = covers[coverIndex].zoom
        let scale = WebMercator.scale(zoom: zoom)
        let toTiles = scale / metresPerUnit
        let (low, high) = (bandStart(band) * toTiles, bandStart(band + 1) * toTiles)
        let dy = Self.gap(centerY * scale, Double(span.y))
        guard dy < high else { return [] }
        // Columns whose gap to the centre is in [near, far).
        let near = low > dy ? (low * low - dy * dy).squareRoot() : 0
        let far = (high * high - dy * dy).squareRoot()
        let cx = centerX * scale
        let home = Int(cx.rounded(.down))
        var ranges: [ClosedRange<Int>] = []
        // West of the centre's column: gap = cx - (c + 1).
        let westLow = Int((cx - 1 - far).rounded(.down)) + 1
        let westHigh = min(home - 1, Int((cx - 1 - near).rounded(.down)))
        if westLow <= westHigh { ranges.append(westLow...westHigh) }
        if near == 0 { ranges.append(home...home) }
        // East: gap = c - cx.
        let eastLow = max(home + 1, Int((cx + near).rounded(.up)))
        let eastHigh = Int((cx + far).rounded(.up)) - 1
        if eastLow <= eastHigh { ranges.append(eastLow...eastHigh) }
        return ranges.compactMap { range in
            let lower = max(range.lowerBound, span.xRange.lowerBound)
            let upper = min(range.upperBound, span.xRange.upperBound)
            return lower <= upper ? TileSpan(y: span.y, xRange: lower...upper) : nil
        }
    }
}
