import Geo
import Plan

/// Cuts a pack's plan into work units of about `unitTiles` tiles: one unit for the fixed
/// resources, then pyramid by pyramid and zoom by zoom, consecutive small zooms together and
/// larger zooms cut into rows (and columns, for rows wider than a unit); for a
/// `"glyphs": "region"` pack, its glyph choice last.
///
/// Never enumerates tiles: a box's cover is closed-form (rows × width), a geometry's is walked
/// span by span, row by row (O(rows), what counting it costs anyway). Lazy: memory is the units
/// of one zoom. The unit size grows for huge packs so that a pack has about `maximumUnits` units
/// at most (whole rows per unit round each down a little, each zoom may end with a partial one) (a world pyramid to z20 is a trillion tiles: 4,096 per unit would be
/// 270 million rows in the units table).
public struct WorkUnitCut: Sequence, Sendable {
    public let pyramids: [TilePyramid]
    /// The size units are cut to (at least the requested size; more for huge packs).
    public let unitTiles: Int
    public let totalTiles: Int
    /// A `"glyphs": "region"` pack: how many fixed resources its plan has without glyph ranges.
    /// The first unit is then `.fixed` over exactly those (`.resources` would mean every candidate
    /// range too, see `ResourcePlan.withEveryGlyphRange`), and a `.glyphChoice` unit comes last.
    public let fixedBeforeGlyphChoice: Int?

    public static let defaultUnitTiles = 4_096
    public static let defaultMaximumUnits = 100_000

    public init(pyramids: [TilePyramid], unitTiles: Int = defaultUnitTiles, maximumUnits: Int = defaultMaximumUnits,
                fixedBeforeGlyphChoice: Int? = nil) {
        self.pyramids = pyramids
        self.fixedBeforeGlyphChoice = fixedBeforeGlyphChoice.map { Swift.max(0, $0) }
        let total = pyramids.reduce(0) { sum, pyramid in
            let (added, overflow) = sum.addingReportingOverflow(pyramid.tileCount)
            return overflow ? .max : added
        }
        totalTiles = total
        let floor = Swift.max(1, unitTiles)
        let spread = total / Swift.max(1, maximumUnits) + (total % Swift.max(1, maximumUnits) == 0 ? 0 : 1)
        self.unitTiles = Swift.max(floor, spread)
    }

    public func makeIterator() -> Iterator { Iterator(cut: self) }

    public struct Iterator: IteratorProtocol {
        let cut: WorkUnitCut
        private var ordinal = 0
        private var pyramidIndex = 0
        private var zoomIndex = 0
        private var pending: [WorkUnit.Scope] = []
        private var pendingTiles: [Int] = []
        private var pendingHead = 0
        private var band: (zooms: ClosedRange<Int>, tiles: Int)?
        private var startedResources = false
        private var endedWithGlyphChoice = false

        init(cut: WorkUnitCut) {
            self.cut = cut
        }

        public mutating func next() -> WorkUnit? {
            if !startedResources {
                startedResources = true
                guard let fixed = cut.fixedBeforeGlyphChoice else { return emit(.resources, tiles: 0) }
                if fixed > 0 { return emit(.fixed(0...(fixed - 1)), tiles: 0) }
            }
            while pendingHead == pending.count {
                pending.removeAll(keepingCapacity: true)
                pendingTiles.removeAll(keepingCapacity: true)
                pendingHead = 0
                guard advance() else {
                    guard cut.fixedBeforeGlyphChoice != nil, !endedWithGlyphChoice else { return nil }
                    endedWithGlyphChoice = true
                    return emit(.glyphChoice, tiles: 0)
                }
            }
            defer { pendingHead += 1 }
            return emit(pending[pendingHead], tiles: pendingTiles[pendingHead])
        }

        private mutating func emit(_ scope: WorkUnit.Scope, tiles: Int) -> WorkUnit {
            defer { ordinal += 1 }
            return WorkUnit(ordinal: ordinal, scope: scope, tiles: tiles)
        }

        private mutating func queue(_ scope: WorkUnit.Scope, _ tiles: Int) {
            pending.append(scope)
            pendingTiles.append(tiles)
        }

        /// Processes the next zoom (or closes a pyramid); false when every pyramid is done.
        private mutating func advance() -> Bool {
            guard pyramidIndex < cut.pyramids.count else { return false }
            let pyramid = cut.pyramids[pyramidIndex]
            guard zoomIndex < pyramid.zooms.count else {
                flushBand()
                pyramidIndex += 1
                zoomIndex = 0
                return true
            }
            let zoom = pyramid.zooms[zoomIndex]
            zoomIndex += 1
            let cover = pyramid.cover(zoom: zoom)
            let count = cover.count
            let size = cut.unitTiles
            if let open = band, open.tiles <= size - count {
                band = (open.zooms.lowerBound...zoom, open.tiles + count)
                return true
            }
            flushBand()
            if count == 0 { return true }
            if count <= size {
                band = (zoom...zoom, count)
                return true
            }
            if case .bounds = pyramid.area {
                cutBox(cover, zoom: zoom, count: count)
            } else {
                cutRows(cover, zoom: zoom)
            }
            return true
        }

        private mutating func flushBand() {
            guard let open = band else { return }
            band = nil
            queue(.zooms(pyramid: pyramidIndex, open.zooms), open.tiles)
        }

        /// A box's cover is every row of a fixed set of columns: rows × width, in closed form.
        private mutating func cutBox(_ cover: TileCover, zoom: Int, count: Int) {
            var spans = cover.spans.makeIterator()
            guard let first = spans.next() else { return }
            var columns = [first.xRange]
            while let span = spans.next(), span.y == first.y { columns.append(span.xRange) }
            let width = columns.reduce(0) { $0 + $1.count }
            let rowCount = count / width
            let rows = first.y...(first.y + rowCount - 1)
            let size = cut.unitTiles
            if width <= size {
                let bounding = columns.first!.lowerBound...columns.last!.upperBound
                let rowsPerUnit = size / width
                var row = rows.lowerBound
                while row <= rows.upperBound {
                    let last = Swift.min(rows.upperBound, row + rowsPerUnit - 1)
                    queue(.window(pyramid: pyramidIndex, zoom: zoom, rows: row...last, columns: bounding), (last - row + 1) * width)
                    row = last + 1
                }
            } else {
                for row in rows {
                    for range in columns {
                        var start = range.lowerBound
                        while start <= range.upperBound {
                            let end = Swift.min(range.upperBound, start + size - 1)
                            queue(.window(pyramid: pyramidIndex, zoom: zoom, rows: row...row, columns: start...end), end - start + 1)
                            start = end + 1
                        }
                    }
                }
            }
        }

        /// A geometry's cover, walked row by row: consecutive rows join a unit while they fit;
        /// a row wider than a unit is cut into column windows.
        private mutating func cutRows(_ cover: TileCover, zoom: Int) {
            let size = cut.unitTiles
            var unit: (rows: ClosedRange<Int>, columns: ClosedRange<Int>, tiles: Int)?
            var row: [TileSpan] = []
            var rowTiles = 0

            func closeRow(_ iterator: inout Iterator) {
                guard let y = row.first?.y else { return }
                let columns = row.first!.xRange.lowerBound...row.last!.xRange.upperBound
                if let open = unit, open.tiles <= size - rowTiles {
                    let joined = Swift.min(open.columns.lowerBound, columns.lowerBound)...Swift.max(open.columns.upperBound, columns.upperBound)
                    unit = (open.rows.lowerBound...y, joined, open.tiles + rowTiles)
                } else {
                    if let open = unit {
                        iterator.queue(.window(pyramid: iterator.pyramidIndex, zoom: zoom, rows: open.rows, columns: open.columns), open.tiles)
                        unit = nil
                    }
                    if rowTiles <= size {
                        unit = (y...y, columns, rowTiles)
                    } else {
                        iterator.splitRow(row, zoom: zoom)
                    }
                }
                row.removeAll(keepingCapacity: true)
                rowTiles = 0
            }

            for span in cover.spans {
                if let y = row.first?.y, y != span.y { closeRow(&self) }
                row.append(span)
                rowTiles += span.count
            }
            closeRow(&self)
            if let open = unit {
                queue(.window(pyramid: pyramidIndex, zoom: zoom, rows: open.rows, columns: open.columns), open.tiles)
            }
        }

        /// One row's spans cut into column windows of at most a unit's tiles each.
        private mutating func splitRow(_ spans: [TileSpan], zoom: Int) {
            let size = cut.unitTiles
            let y = spans[0].y
            var window: (columns: ClosedRange<Int>, tiles: Int)?
            for span in spans {
                var start = span.xRange.lowerBound
                while start <= span.xRange.upperBound {
                    let room = size - (window?.tiles ?? 0)
                    let end = Swift.min(span.xRange.upperBound, start + room - 1)
                    let taken = end - start + 1
                    if let open = window {
                        window = (open.columns.lowerBound...end, open.tiles + taken)
                    } else {
                        window = (start...end, taken)
                    }
                    if window!.tiles == size {
                        queue(.window(pyramid: pyramidIndex, zoom: zoom, rows: y...y, columns: window!.columns), size)
                        window = nil
                    }
                    start = end + 1
                }
            }
            if let open = window {
                queue(.window(pyramid: pyramidIndex, zoom: zoom, rows: y...y, columns: open.columns), open.tiles)
            }
        }
    }
}
