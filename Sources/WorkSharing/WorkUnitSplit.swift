import Geo
import Plan

/// Cuts the head off a work unit for a claim (`ClaimSizing`): the head holds at most `part`
/// tiles and at least one, the rest stays claimable as one to three more units, and together
/// they hold exactly the unit's tiles, each once, with exact counts. The fixed resources are cut
/// the same way by their position in the plan.
///
/// - Whole zooms: the longest run of leading zooms that fits is the head. When even the first
///   zoom is larger than the part, that zoom becomes a window over the whole world and is cut as
///   one; the later zooms stay together.
/// - A window: the leading whole rows that fit are the head. When even its first row with tiles
///   is larger (rows wider than a part), the head is the leading columns of that row, and the
///   rest is that row's other columns plus the rows below.
///
/// Counts walk the cover's spans of the unit only (closed-form rows for a box, the sweep's rows
/// for a geometry): never the tiles, never the rows outside the unit.
public enum WorkUnitSplit {
    public struct Part: Hashable, Sendable {
        public let scope: WorkUnit.Scope
        public let tiles: Int

        public init(scope: WorkUnit.Scope, tiles: Int) {
            self.scope = scope
            self.tiles = tiles
        }
    }

    /// The head (first) and the rest of `scope`, or nil when it cannot be cut so that both hold
    /// work: a part as large as the unit, a pyramid index `pyramids` does not have. The fixed
    /// resources (`fixedResources` of them in the plan) are cut by position into `.fixed`
    /// ranges, `part` resources at the head; their parts hold no tiles.
    public static func split(_ scope: WorkUnit.Scope, part: Int, pyramids: [TilePyramid], fixedResources: Int = 0) -> [Part]? {
        guard part >= 1 else { return nil }
        if case .resources = scope { return splitFixed(0..<fixedResources, part: part) }
        if case .fixed = scope { return splitFixed(scope.fixedPositions(count: fixedResources), part: part) }
        guard let index = scope.pyramid, index >= 0, index < pyramids.count else { return nil }
        let pyramid = pyramids[index]
        switch scope {
        case .resources, .fixed, .glyphChoice:
            return nil
        case .zooms(_, let zooms):
            return splitZooms(pyramid, index: index, zooms: zooms, part: part)
        case .window(_, let zoom, let rows, let columns):
            return splitWindow(pyramid, index: index, zoom: zoom, rows: rows, columns: columns, part: part)
        }
    }

    /// How much work a unit is for a claim: its tiles, or for the fixed resources how many of
    /// the plan's `fixedResources` it downloads.
    public static func size(of unit: WorkUnit, fixedResources: Int) -> Int {
        switch unit.scope {
        case .resources, .fixed: unit.scope.fixedPositions(count: fixedResources).count
        case .zooms, .window: unit.tiles
        case .glyphChoice: 1
        }
    }

    private static func splitFixed(_ positions: Range<Int>, part: Int) -> [Part]? {
        guard positions.count > part else { return nil }
        let cut = positions.lowerBound + part
        return [Part(scope: .fixed(positions.lowerBound...(cut - 1)), tiles: 0),
                Part(scope: .fixed(cut...(positions.upperBound - 1)), tiles: 0)]
    }

    /// The tiles of `pyramid`'s cover at `zoom` inside `rows` × `columns`.
    public static func count(_ pyramid: TilePyramid, zoom: Int, rows: ClosedRange<Int>, columns: ClosedRange<Int>) -> Int {
        pyramid.cover(zoom: zoom).spans(rows: rows, columns: columns).reduce(0) { $0 + $1.count }
    }

    private static func splitZooms(_ pyramid: TilePyramid, index: Int, zooms: ClosedRange<Int>, part: Int) -> [Part]? {
        let counts = pyramid.zooms.filter(zooms.contains).map { (zoom: $0, tiles: pyramid.cover(zoom: $0).count) }
            .filter { $0.tiles > 0 }
        guard let first = counts.first else { return nil }
        var head = 0
        var taken = 0
        while taken < counts.count, head + counts[taken].tiles <= part {
            head += counts[taken].tiles
            taken += 1
        }
        if taken == counts.count { return nil }
        let rest = counts[taken...].reduce(0) { $0 + $1.tiles }
        if taken > 0 {
            let last = counts[taken - 1].zoom
            return [Part(scope: .zooms(pyramid: index, zooms.lowerBound...last), tiles: head),
                    Part(scope: .zooms(pyramid: index, (last + 1)...zooms.upperBound), tiles: rest)]
        }
        // The first zoom alone is larger than the part: cut it as a window over the world.
        let world = 0...((1 << first.zoom) - 1)
        guard var parts = splitWindow(pyramid, index: index, zoom: first.zoom, rows: world, columns: world, part: part) else {
            return nil
        }
        if first.zoom < zooms.upperBound, rest - first.tiles > 0 {
            parts.append(Part(scope: .zooms(pyramid: index, (first.zoom + 1)...zooms.upperBound), tiles: rest - first.tiles))
        }
        return parts
    }

    private static func splitWindow(_ pyramid: TilePyramid, index: Int, zoom: Int, rows: ClosedRange<Int>,
                                    columns: ClosedRange<Int>, part: Int) -> [Part]? {
        var head = 0
        var lastWholeRow: Int?
        var row: (y: Int, tiles: Int, spans: [TileSpan])?
        var overflow: (y: Int, tiles: Int, spans: [TileSpan])?
        var spans = pyramid.cover(zoom: zoom).spans(rows: rows, columns: columns).makeIterator()
        while overflow == nil {
            let span = spans.next()
            if let open = row, span?.y != open.y {
                // A row is complete: it joins the head, or it is the first that does not fit.
                if head + open.tiles <= part {
                    head += open.tiles
                    lastWholeRow = open.y
                } else {
                    overflow = open
                }
                row = nil
            }
            guard let span else { break }
            if overflow != nil { break }
            if row == nil { row = (span.y, 0, []) }
            row!.tiles += span.count
            row!.spans.append(span)
        }
        guard let overflow else { return nil }  // everything fits (or nothing is there)
        let window = { (rows: ClosedRange<Int>, columns: ClosedRange<Int>) -> WorkUnit.Scope in
            .window(pyramid: index, zoom: zoom, rows: rows, columns: columns)
        }
        if let lastWholeRow {
            let below = (lastWholeRow + 1)...rows.upperBound
            return [Part(scope: window(rows.lowerBound...lastWholeRow, columns), tiles: head),
                    Part(scope: window(below, columns), tiles: count(pyramid, zoom: zoom, rows: below, columns: columns))]
        }
        // The first row with tiles is wider than the part: its leading columns are the head.
        var taken = 0
        var lastColumn = columns.lowerBound
        for span in overflow.spans {
            if taken + span.count <= part {
                taken += span.count
                lastColumn = span.xRange.upperBound
            } else {
                lastColumn = span.xRange.lowerBound + (part - taken) - 1
                taken = part
                break
            }
        }
        var parts = [Part(scope: window(rows.lowerBound...overflow.y, columns.lowerBound...lastColumn), tiles: taken),
                     Part(scope: window(overflow.y...overflow.y, (lastColumn + 1)...columns.upperBound),
                          tiles: overflow.tiles - taken)]
        if overflow.y < rows.upperBound {
            let below = (overflow.y + 1)...rows.upperBound
            let tiles = count(pyramid, zoom: zoom, rows: below, columns: columns)
            if tiles > 0 { parts.append(Part(scope: window(below, columns), tiles: tiles)) }
        }
        return parts
    }
}
