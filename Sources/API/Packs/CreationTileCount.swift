import Geo
import Plan
import Server

/// A template region's tiles counted at creation against the smallest of its limits (the pack's
/// `max_tiles`, the server's tile limit): `expected_resources` from the start, or the `422`
/// that refuses it. A style region's count needs its documents: the download engine checks it.
/// Bounds counts are closed-form, so an exceeding bounds region reports its exact count; a
/// geometry reports `limit + 1` ("more than").
struct CreationTileCount: Sendable {
    /// The region's tile count, when counted within the limit.
    var count: Int?
    /// The count and the limit it went past.
    var exceeded: Exceeded?

    struct Exceeded: Sendable {
        let count: Int
        let limit: Int64

        var problem: Problem {
            Problem(.tileLimitExceeded, detail: "the region covers \(count > limit ? "" : "more than ")\(count) tiles; the limit is \(limit)")
        }
    }

    /// nil for a region whose tiles are not counted here (a style or an archive).
    init?(_ region: RegionDefinition, limits: [Int64]) {
        guard case .tiles = region.content else { return nil }
        let lower = Int(region.minZoom.rounded(.down))
        let zooms = lower...max(lower, Int((region.maxZoom ?? region.minZoom).rounded(.down)))
        // Without a limit the count is only for `expected_resources`; stop at a sane ceiling.
        let limit = limits.min()
        let ceiling = Int(clamping: limit ?? 10_000_000)
        if let count = WebMercator.tileCount(region: region.area, zooms: zooms, limit: ceiling) {
            self.count = count
        } else if let limit {
            if case .bounds = region.area {
                exceeded = Exceeded(count: WebMercator.tileCount(region: region.area, zooms: zooms), limit: limit)
            } else {
                exceeded = Exceeded(count: ceiling == .max ? .max : ceiling + 1, limit: limit)
            }
        }
    }
}
