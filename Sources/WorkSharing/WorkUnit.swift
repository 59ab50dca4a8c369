import Geo

/// A share of one pack's download that one node claims and works through under a lease: the
/// pack's fixed resources (style, TileJSONs, sprites, glyphs), some whole zooms of a tile pyramid
/// (low zooms, few tiles together), or a window of one zoom (a range of rows, and of columns
/// when rows are wider than a unit) — and, for a `"glyphs": "region"` pack, the choice of its
/// glyph ranges. A unit's tiles are its window intersected with the pyramid's cover, so a unit is
/// a few numbers however many tiles it holds.
public struct WorkUnit: Hashable, Sendable {
    /// 0-based position in the pack's cut; claim order (resources first, then low zooms).
    public let ordinal: Int
    public let scope: Scope
    /// Exact number of tiles (0 for the resources unit).
    public let tiles: Int

    public init(ordinal: Int, scope: Scope, tiles: Int) {
        self.ordinal = ordinal
        self.scope = scope
        self.tiles = tiles
    }

    public enum Scope: Hashable, Sendable {
        /// Every non-tile resource of the pack's plan (style, TileJSONs, sprites, glyphs, …).
        case resources
        /// The non-tile resources at these positions of the plan's `fixed` list (the same order on
        /// every node): a part of `resources` split off at claim time (a style's glyph ranges
        /// alone are often hundreds of requests).
        case fixed(ClosedRange<Int>)
        /// Every tile of `pyramid` (its index in the plan) at the zooms in `zooms`.
        case zooms(pyramid: Int, ClosedRange<Int>)
        /// The tiles of `pyramid` at `zoom` within `rows` × `columns`.
        case window(pyramid: Int, zoom: Int, rows: ClosedRange<Int>, columns: ClosedRange<Int>)
        /// A `"glyphs": "region"` pack's glyph choice: claimable once every other unit of the pack
        /// is done, it reads every tile they stored and adds the needed ranges as `.fixed` units,
        /// at positions past the plan's own fixed resources (`ResourcePlan.withEveryGlyphRange`
        /// lists the candidate ranges there, in the same order on every node).
        case glyphChoice
    }
}

extension WorkUnit.Scope {
    /// The pyramid the unit's tiles belong to (nil for resources).
    public var pyramid: Int? {
        switch self {
        case .resources, .fixed, .glyphChoice: return nil
        case .zooms(let pyramid, _), .window(let pyramid, _, _, _): return pyramid
        }
    }

    /// The positions in the plan's `fixed` list the unit downloads (`resources`: all of them,
    /// `count`); empty for a unit of tiles.
    public func fixedPositions(count: Int) -> Range<Int> {
        switch self {
        case .resources: return 0..<max(0, count)
        case .fixed(let positions):
            let lower = min(max(0, positions.lowerBound), max(0, count))
            return lower..<min(max(lower, positions.upperBound + 1), max(0, count))
        case .zooms, .window, .glyphChoice: return 0..<0
        }
    }

    /// Whether `tile` of pyramid `pyramid` falls in this unit (given it is in the pyramid's cover).
    public func contains(pyramid: Int, tile: TileID) -> Bool {
        switch self {
        case .resources, .fixed, .glyphChoice:
            return false
        case .zooms(let own, let zooms):
            return own == pyramid && zooms.contains(tile.z)
        case .window(let own, let zoom, let rows, let columns):
            return own == pyramid && zoom == tile.z && rows.contains(tile.y) && columns.contains(tile.x)
        }
    }
}
