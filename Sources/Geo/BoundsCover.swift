/// The tiles of a bounding box at one zoom, in closed form: one row range times at most two
/// column ranges (two when the box crosses the antimeridian). Also serves as the TileJSON
/// `bounds` clip of a cover, since clipping is intersecting with such a box.
struct BoundsCover: Sendable, Hashable {
    /// Nil when the cover is empty.
    let rows: ClosedRange<Int>?
    /// Ascending, disjoint and not adjacent.
    let columns: [ClosedRange<Int>]

    /// A tile is in the cover when its open square meets the box; a box with zero width or
    /// height is a line and takes the tiles owning it (each tile owns its west and north edges;
    /// the world's east and south edges belong to the last column and row).
    init(_ bounds: LngLatBounds, zoom: Int) {
        let scale = WebMercator.scale(zoom: zoom)
        let last = (1 << zoom) - 1
        var west = bounds.west, east = bounds.east
        // A crossing box whose one part has no width is the other part alone.
        if west > east, west == 180 { west = -180 }
        if west > east, east == -180 { east = 180 }
        let top = WebMercator.projectY(latitude: bounds.north) * scale
        let bottom = WebMercator.projectY(latitude: bounds.south) * scale
        let x0 = WebMercator.projectX(longitude: west) * scale
        let x1 = WebMercator.projectX(longitude: east) * scale
        // Degenerate as given, not as projected: a box wholly beyond the clamp latitude has
        // no height on the map and so meets no tile's interior.
        let degenerate = bounds.south == bounds.north || west == east
        let rows = degenerate
            ? TileGrid.ownedRange(top, bottom, last: last)
            : TileGrid.interiorRange(top, bottom, last: last)
        let range = degenerate ? TileGrid.ownedRange : TileGrid.interiorRange
        var columns: [ClosedRange<Int>]
        if west > east {
            let eastern = range(x0, scale, last)
            let western = range(0, x1, last)
            if let eastern, let western, western.upperBound + 1 >= eastern.lowerBound {
                columns = [0...last]
            } else {
                columns = [western, eastern].compactMap { $0 }
            }
        } else {
            columns = [range(x0, x1, last)].compactMap { $0 }
        }
        self.init(rows: columns.isEmpty ? nil : rows, columns: rows == nil ? [] : columns)
    }

    init(rows: ClosedRange<Int>?, columns: [ClosedRange<Int>]) {
        self.rows = rows
        self.columns = columns
    }

    var count: Int {
        guard let rows else { return 0 }
        return rows.count * columns.reduce(0) { $0 + $1.count }
    }

    func intersection(_ other: BoundsCover) -> BoundsCover {
        guard let rows, let otherRows = other.rows, rows.overlaps(otherRows) else {
            return BoundsCover(rows: nil, columns: [])
        }
        let columns = TileGrid.intersect(self.columns, other.columns)
        return BoundsCover(rows: columns.isEmpty ? nil : rows.clamped(to: otherRows), columns: columns)
    }
}
