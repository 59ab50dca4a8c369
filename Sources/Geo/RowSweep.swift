/// Walks the rows of a prepared shape's cover at one zoom, top to bottom, producing each row's
/// spans. State is the active edge and segment lists plus scratch buffers: O(vertices), never
/// O(tiles).
///
/// A polygon row holds the tiles whose open square meets the polygon's interior. Within the
/// row's open band the interior's x-extent is the union of (a) the x-extents of the edge pieces
/// inside the band and (b) the x-intervals where the winding is non-zero on the band's midline
/// (away from edges the winding cannot change across the band). Rings after a polygon's first
/// are holes whatever their orientation: a point is inside when the exterior winds around it and
/// no hole does. A line row holds the tiles owning some point of a segment (tile [i, i+1) ×
/// [j, j+1)), a point its one owning tile.
struct RowSweep {
    private let shape: PreparedShape
    private let scale: Double
    private let last: Int
    /// The next row to produce.
    private var row = 0
    private var nextEdge = 0
    private var nextSegment = 0
    private var nextPoint = 0
    private var activeEdges: [Int] = []
    private var activeSegments: [Int] = []
    // Scratch, kept to avoid reallocating per row.
    private var ranges: [ClosedRange<Int>] = []
    private var crossings: [Crossing] = []
    private var ringWinding: [Int32]
    private var polygonHolesInside: [Int32]

    private struct Crossing {
        var x: Double
        var ring: Int32
        var direction: Int32
    }

    init(shape: PreparedShape, zoom: Int) {
        self.shape = shape
        self.scale = WebMercator.scale(zoom: zoom)
        self.last = (1 << zoom) - 1
        self.ringWinding = Array(repeating: 0, count: shape.ringPolygon.count)
        self.polygonHolesInside = Array(repeating: 0, count: shape.polygonExterior.count)
    }

    /// Starts the sweep at `row` (for a clip): rows before it are never computed.
    mutating func skip(to row: Int) {
        self.row = max(self.row, row)
    }

    /// The next row with tiles, at most `lastRow`, writing its spans (ascending, disjoint, not
    /// adjacent) into `spans`.
    mutating func nextRow(upTo lastRow: Int, spans: inout [ClosedRange<Int>]) -> Int? {
        let lastRow = min(lastRow, last)
        while row <= lastRow {
            if activeEdges.isEmpty, activeSegments.isEmpty {
                guard let upcoming = upcomingRow() else { return nil }
                row = max(row, upcoming)
                if row > lastRow { return nil }
            }
            let current = row
            row += 1
            ranges.removeAll(keepingCapacity: true)
            activate(row: current)
            addPolygonRanges(row: current)
            addSegmentRanges(row: current)
            addPointRanges(row: current)
            if !ranges.isEmpty {
                merge(into: &spans)
                return current
            }
        }
        return nil
    }

    // MARK: Rows of edges, segments and points

    private func edgeRows(_ edge: PreparedShape.Edge) -> (first: Int, last: Int) {
        Self.edgeRows(edge, scale: scale, last: last)
    }

    private func segmentRows(_ segment: PreparedShape.Segment) -> (first: Int, last: Int) {
        Self.segmentRows(segment, scale: scale, last: last)
    }

    /// Rows whose open band meets the edge.
    private static func edgeRows(_ edge: PreparedShape.Edge, scale: Double, last: Int) -> (first: Int, last: Int) {
        let first = Int((edge.yMin * scale).rounded(.down))
        let end = Int((edge.yMax * scale).rounded(.up)) - 1
        return (max(0, first), min(last, end))
    }

    /// Rows owning some point of the segment.
    private static func segmentRows(_ segment: PreparedShape.Segment, scale: Double, last: Int) -> (first: Int, last: Int) {
        (TileGrid.owner(segment.yTop * scale, last: last), TileGrid.owner(segment.yBottom * scale, last: last))
    }

    private func pointRow(_ point: PreparedShape.Point) -> Int {
        TileGrid.owner(point.y * scale, last: last)
    }

    /// The first row any not-yet-active edge, segment or point starts on.
    private func upcomingRow() -> Int? {
        var upcoming: Int?
        if nextEdge < shape.edges.count { upcoming = edgeRows(shape.edges[nextEdge]).first }
        if nextSegment < shape.segments.count {
            upcoming = min(upcoming ?? .max, segmentRows(shape.segments[nextSegment]).first)
        }
        if nextPoint < shape.points.count { upcoming = min(upcoming ?? .max, pointRow(shape.points[nextPoint])) }
        return upcoming
    }

    /// Drops edges and segments that ended above `row`, then adds those starting by `row`.
    private mutating func activate(row: Int) {
        let shape = shape, scale = scale, last = last
        activeEdges.removeAll { Self.edgeRows(shape.edges[$0], scale: scale, last: last).last < row }
        activeSegments.removeAll { Self.segmentRows(shape.segments[$0], scale: scale, last: last).last < row }
        while nextEdge < shape.edges.count {
            let rows = edgeRows(shape.edges[nextEdge])
            guard rows.first <= row else { break }
            if rows.last >= row { activeEdges.append(nextEdge) }
            nextEdge += 1
        }
        while nextSegment < shape.segments.count {
            let rows = segmentRows(shape.segments[nextSegment])
            guard rows.first <= row else { break }
            if rows.last >= row { activeSegments.append(nextSegment) }
            nextSegment += 1
        }
    }

    // MARK: Polygons

    private mutating func addPolygonRanges(row: Int) {
        guard !activeEdges.isEmpty else { return }
        let top = Double(row), bottom = Double(row + 1), middle = top + 0.5
        crossings.removeAll(keepingCapacity: true)
        for index in activeEdges {
            let edge = shape.edges[index]
            let x0 = edge.x0 * scale, y0 = edge.y0 * scale, x1 = edge.x1 * scale, y1 = edge.y1 * scale
            // (a) the edge piece inside the open band.
            let yLow = max(min(y0, y1), top), yHigh = min(max(y0, y1), bottom)
            let horizontal = y0 == y1
            let xa = horizontal ? x0 : Self.x(at: yLow, x0, y0, x1, y1)
            let xb = horizontal ? x1 : Self.x(at: yHigh, x0, y0, x1, y1)
            if let range = TileGrid.interiorRange(min(xa, xb), max(xa, xb), last: last) { ranges.append(range) }
            // (b) the midline crossing, half-open in y so a vertex on the midline counts once.
            if (y0 <= middle && middle < y1) || (y1 <= middle && middle < y0) {
                crossings.append(Crossing(x: Self.x(at: middle, x0, y0, x1, y1), ring: edge.ring, direction: y1 > y0 ? 1 : -1))
            }
        }
        guard !crossings.isEmpty else { return }
        crossings.sort { $0.x < $1.x }
        var insidePolygons = 0
        var start = 0.0
        for crossing in crossings {
            let ring = Int(crossing.ring)
            let polygon = Int(shape.ringPolygon[ring])
            let wasInside = isInside(polygon: polygon)
            let before = ringWinding[ring]
            let after = before + crossing.direction
            ringWinding[ring] = after
            if shape.ringIsHole[ring], (before == 0) != (after == 0) {
                polygonHolesInside[polygon] += after == 0 ? -1 : 1
            }
            let isInside = isInside(polygon: polygon)
            if wasInside == isInside { continue }
            if isInside {
                if insidePolygons == 0 { start = crossing.x }
                insidePolygons += 1
            } else {
                insidePolygons -= 1
                if insidePolygons == 0, let range = TileGrid.interiorRange(start, crossing.x, last: last) {
                    ranges.append(range)
                }
            }
        }
        // Closed rings cross the midline as often downwards as upwards, so every winding is
        // back to zero here and the buffers are ready for the next row.
    }

    private func isInside(polygon: Int) -> Bool {
        ringWinding[Int(shape.polygonExterior[polygon])] != 0 && polygonHolesInside[polygon] == 0
    }

    /// The x of the line through (x0, y0)–(x1, y1) at `y`, exact at the endpoints.
    private static func x(at y: Double, _ x0: Double, _ y0: Double, _ x1: Double, _ y1: Double) -> Double {
        if y == y0 { return x0 }
        if y == y1 { return x1 }
        return x0 + (y - y0) / (y1 - y0) * (x1 - x0)
    }

    // MARK: Lines and points

    private mutating func addSegmentRanges(row: Int) {
        guard !activeSegments.isEmpty else { return }
        let top = Double(row), bottom = Double(row + 1)
        let lastRow = row == last
        for index in activeSegments {
            let segment = shape.segments[index]
            let xTop = segment.xTop * scale, yTop = segment.yTop * scale
            let xBottom = segment.xBottom * scale, yBottom = segment.yBottom * scale
            if yTop == yBottom {
                ranges.append(TileGrid.owner(min(xTop, xBottom), last: last)...TileGrid.owner(max(xTop, xBottom), last: last))
                continue
            }
            // The piece with y in [top, bottom); the bottom edge belongs to the next row,
            // except on the last row, which owns the world's south edge.
            let yStart = max(yTop, top)
            let bottomIsOpen = yBottom >= bottom && !lastRow
            let yEnd = lastRow ? yBottom : min(yBottom, bottom)
            let xStart = Self.x(at: yStart, xTop, yTop, xBottom, yBottom)
            let xEnd = Self.x(at: yEnd, xTop, yTop, xBottom, yBottom)
            let first: Int, end: Int
            if !bottomIsOpen || xStart == xEnd {
                first = TileGrid.owner(min(xStart, xEnd), last: last)
                end = TileGrid.owner(max(xStart, xEnd), last: last)
            } else if xEnd > xStart {
                // [xStart, xEnd): a column starting exactly at xEnd is only touched in the limit.
                first = TileGrid.owner(xStart, last: last)
                end = max(first, min(last, Int(xEnd.rounded(.up)) - 1))
            } else {
                // (xEnd, xStart]: just right of xEnd lies in the column owning xEnd.
                first = TileGrid.owner(xEnd, last: last)
                end = TileGrid.owner(xStart, last: last)
            }
            ranges.append(first...end)
        }
    }

    private mutating func addPointRanges(row: Int) {
        while nextPoint < shape.points.count {
            let point = shape.points[nextPoint]
            let pointRow = pointRow(point)
            guard pointRow <= row else { break }
            nextPoint += 1
            if pointRow == row {
                let column = TileGrid.owner(point.x * scale, last: last)
                ranges.append(column...column)
            }
        }
    }

    // MARK: Merging

    private mutating func merge(into spans: inout [ClosedRange<Int>]) {
        spans.removeAll(keepingCapacity: true)
        ranges.sort { $0.lowerBound < $1.lowerBound }
        var current = ranges[0]
        for range in ranges.dropFirst() {
            if range.lowerBound <= current.upperBound + 1 {
                if range.upperBound > current.upperBound { current = current.lowerBound...range.upperBound }
            } else {
                spans.append(current)
                current = range
            }
        }
        spans.append(current)
    }
}
