import Loop
import Packs
import Plan

/// The glyph choice of a `"glyphs": "region"` pack whose tiles other jobs stored: a cluster's
/// glyph-choice unit, claimed once every other unit of the pack is done. It reads every tile and
/// GeoJSON source the pack holds (`GlyphSelection`, as a whole pack's download does at its end)
/// and hands back the needed ranges as positions in the fixed resources of
/// `ResourcePlan.withEveryGlyphRange` — the list every node's units index, in the same order —
/// with the pack's exact counts. Loop thread only.
public final class PackGlyphChoice {
    public struct Choice: Sendable {
        /// The needed ranges, as runs of positions in `plan.withEveryGlyphRange.fixed` (each run
        /// one unit of fixed resources).
        public let positions: [ClosedRange<Int>]
        /// How many ranges the labels need.
        public let needed: Int
        public let skipped: SkippedGlyphRanges
        /// The pack's counts with the needed ranges: exact.
        public let counts: ExpectedCounts
    }

    private let packID: Int64
    private let plan: ResourcePlan
    private let loop: EventLoop
    private let store: any PackStore
    private var selection: GlyphSelection?
    private var stopped = false

    /// `plan`: the pack's plan as its documents give it, with its `glyphSubset`.
    public init(packID: Int64, plan: ResourcePlan, loop: EventLoop, store: any PackStore) {
        self.packID = packID
        self.plan = plan
        self.loop = loop
        self.store = store
    }

    /// Chooses once everything submitted before is committed; `then` gets the choice (nothing to
    /// choose for a plan without a glyph subset: no range), or the error the pack fails with.
    public func start(then: @escaping (Result<Choice, PackError>) -> Void) {
        loop.assertInLoopThread()
        guard let subset = plan.glyphSubset else {
            return then(.success(Self.choice(needed: [], skipped: SkippedGlyphRanges(ranges: 0, bytes: nil, rangesWithKnownBytes: 0),
                                              plan: plan)))
        }
        let selection = GlyphSelection(loop: loop, packID: packID, subset: subset, store: store, geoJSON: nil)
        self.selection = selection
        let plan = plan
        selection.runOnceCommitted { [weak self] result in
            guard let self, !stopped else { return }
            self.selection = nil
            then(result.map { Self.choice(needed: $0.needed, skipped: $0.skipped, plan: plan) })
        }
    }

    public func stop() {
        stopped = true
        selection?.stop()
        selection = nil
    }

    /// The needed ranges' positions in `plan.withEveryGlyphRange.fixed`, as runs; a range the
    /// plan's own fixed resources hold already is theirs.
    static func choice(needed: [PlannedResource], skipped: SkippedGlyphRanges, plan: ResourcePlan) -> Choice {
        let every = plan.withEveryGlyphRange.fixed
        let own = plan.fixed.count
        var position: [String: Int] = [:]
        for (index, resource) in every.enumerated() where index >= own { position[resource.url] = index }
        let sorted = Set(needed.compactMap { position[$0.url] }).sorted()
        var runs: [ClosedRange<Int>] = []
        for index in sorted {
            if let last = runs.last, last.upperBound == index - 1 {
                runs[runs.count - 1] = last.lowerBound...index
            } else {
                runs.append(index...index)
            }
        }
        let counts = ExpectedCounts(resources: Int64(clamping: plan.expectedResources.saturatingAdd(sorted.count)),
                                    tiles: Int64(clamping: plan.expectedTiles), precise: plan.pendingDocuments == 0)
        return Choice(positions: runs, needed: sorted.count, skipped: skipped, counts: counts)
    }
}

private extension Int {
    func saturatingAdd(_ other: Int) -> Int {
        let (sum, overflow) = addingReportingOverflow(other)
        return overflow ? .max : sum
    }
}
