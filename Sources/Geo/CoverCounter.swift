/// Tile counts of one region at many zooms in bounded time, for estimates that must answer at
/// once whatever the region: a box is closed-form at every zoom; a geometry's sweep costs a step
/// per row, so it is swept from zoom 0 upwards while a row budget lasts (rows roughly double per
/// zoom, so the budget reaches about zoom log2(budget) even for the whole world), and deeper zooms
/// are extrapolated from the last three exact counts and marked as such.
///
/// The extrapolation fits `c(z) = A·4^z + B·2^z + C` — area, perimeter and point terms of a cover
/// — through those counts, and keeps the result between the last exact count (a cover never
/// shrinks with zoom: every tile meeting the region has a child that does) and the closed-form
/// count of the region's bounding box.
public struct CoverCounter: Sendable {
    public struct Count: Hashable, Sendable {
        public let zoom: Int
        public let tiles: Int
        /// False when extrapolated.
        public let exact: Bool
    }

    private let region: PreparedRegion
    private let clip: LngLatBounds?
    /// The bounding box of a geometry: its closed-form cover bounds every extrapolation.
    private let envelope: LngLatBounds?

    public init(region: TileRegion, within clip: LngLatBounds? = nil) {
        self.region = PreparedRegion(region)
        self.clip = clip
        if case .geometry(let geometry) = region { envelope = geometry.bounds } else { envelope = nil }
    }

    /// The count at each of `zooms` (clamped to 0…30). `rowBudget` bounds the rows geometry sweeps
    /// may visit over all zooms together.
    public func counts(zooms: [Int], rowBudget: Int) -> [Count] {
        let zooms = zooms.map { Swift.min(Swift.max($0, 0), WebMercator.maxZoom) }
        if case .bounds = region {
            return zooms.map { Count(zoom: $0, tiles: TileCover(prepared: region, zoom: $0, within: clip).count, exact: true) }
        }
        guard let deepest = zooms.max() else { return [] }
        var exact: [Int] = []
        var budget = rowBudget
        for zoom in 0...deepest {
            guard let count = sweep(zoom: zoom, rowBudget: &budget) else { break }
            exact.append(count)
        }
        return zooms.map { zoom in
            zoom < exact.count ? Count(zoom: zoom, tiles: exact[zoom], exact: true)
                : Count(zoom: zoom, tiles: extrapolate(exact, to: zoom), exact: false)
        }
    }

    /// The exact count at `zoom`, or nil when its rows would overdraw the budget.
    private func sweep(zoom: Int, rowBudget: inout Int) -> Int? {
        var total = 0
        var lastRow = -1
        for span in TileCover(prepared: region, zoom: zoom, within: clip).spans {
            if span.y != lastRow {
                lastRow = span.y
                rowBudget -= 1
                if rowBudget < 0 { return nil }
            }
            total += span.count
        }
        return total
    }

    private func extrapolate(_ exact: [Int], to zoom: Int) -> Int {
        let upper = envelope.map { TileCover(region: .bounds($0), zoom: zoom, within: clip).count } ?? Int.max
        guard let last = exact.last else { return upper }
        let lower = last
        var estimate = Double(upper)
        if exact.count >= 3 {
            let c0 = Double(last), c1 = Double(exact[exact.count - 2]), c2 = Double(exact[exact.count - 3])
            // Through t = 0, -1, -2 with t = zoom - (last exact zoom).
            let d1 = c0 - c1, d2 = c1 - c2
            var a = 8 * (d1 - 2 * d2) / 3
            var b = 2 * d1 - 1.5 * a
            if a < 0 {
                // Noise at low zooms: fall back to a line-like (perimeter) growth.
                a = 0
                b = max(2 * d1, 0)
            }
            let c = c0 - a - b
            let t = Double(zoom - (exact.count - 1))
            estimate = a * Double(sign: .plus, exponent: Int(2 * t), significand: 1)
                + b * Double(sign: .plus, exponent: Int(t), significand: 1) + c
        }
        // Compared as Doubles, returned as the exact bound when reached (a Double near 2^60 is
        // not the Int it came from).
        if !(estimate < Double(upper)) { return Swift.max(upper, lower) }
        if estimate <= Double(lower) { return lower }
        return Swift.max(Int(estimate.rounded()), lower)
    }
}
