import Packs
import Plan

/// A whole pack's download with `"glyphs": "region"`: the glyph ranges chosen once every tile is
/// stored (a cluster's packs choose in a unit of their own: `PackGlyphChoice`).
extension PackDownload {
    /// Every tile is resolved: once the writer committed them, the stored tiles and GeoJSON say
    /// which glyph ranges the labels need; the counts become exact, the choice is recorded, and
    /// the needed ranges are fetched (or linked) like any fixed resource.
    func chooseGlyphs(_ subset: GlyphSubset) {
        downloading = false
        choosingGlyphs = true
        chooseGlyphs(subset, packID: packID, store: store, loop: loop, geoJSON: geoJSONLabels)
    }

    func glyphsChosen(_ outcome: GlyphSelection.Outcome) {
        guard let lookup, let before = expected else { return }
        let counts = ExpectedCounts(resources: before.resources + Int64(outcome.needed.count), tiles: before.tiles,
                                    precise: true)
        expected = counts
        guard owner?.jobPlanKnown(packID, counts) == true else { return stop() }
        let (packID, skipped, now) = (packID, outcome.skipped, clock.now)
        store.inBatch({ database in try database.recordSkippedGlyphRanges(packID, skipped, now: now) }, then: nil)
        lookup.fixed(outcome.needed, refetch: []) { [weak self] toFetch in
            guard let self, !ended else { return }
            choosingGlyphs = false
            pending.append(contentsOf: toFetch.map(PendingResources.Entry.fixed))
            downloading = true
            pump()
        }
    }
}
