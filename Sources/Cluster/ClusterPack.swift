import Foundation
import Jobs
import Packs
import Plan
import PostgresStore
import WorkSharing

/// One pack active in the cluster as this node takes part in it: its record, this node's plan of
/// it (the pyramids its claims cut by, reused by every unit it runs), whether the pack is cut into
/// units yet, the planning download while this node plans it, and the units it works on.
final class ClusterPack {
    let id: Int64
    var record: PackRecord?
    var region: RegionDefinition?
    /// The record is being read.
    var reading = false
    /// Cut into units (by any node).
    var isCut = false
    /// This node is storing the cut.
    var storingCut = false
    /// A revalidation, not a download: one unit, run whole by the node that claims it.
    var revalidating = false
    /// The plan's counts, once a plan of this node knew them.
    var expected: ExpectedCounts?
    /// This node's plan of the pack (its `.plan` download's).
    var plan: ResourcePlan?
    /// The fixed resources units point into: the plan's, then (`"glyphs": "region"`) every
    /// candidate glyph range (`ResourcePlan.withEveryGlyphRange`).
    var unitFixedResources = 0
    var planner: PlanJob?
    var units: [Int: UnitJob] = [:]

    init(id: Int64) {
        self.id = id
    }

    /// Stops everything this node runs for the pack.
    func stop() {
        planner?.stop()
        planner = nil
        for unit in units.values { unit.stop() }
        units.removeAll()
    }
}

/// The `.plan` download of a pack: the documents, the counts (stored through the lifecycle by
/// the first planner), and the plan, which this node's claims cut by.
final class PlanJob: JobOwner {
    private weak var packs: ActivePacks?
    var download: PackDownload?

    init(packs: ActivePacks) {
        self.packs = packs
    }

    func stop() {
        download?.stop()
        download = nil
    }

    func jobPlanKnown(_ packID: Int64, _ counts: ExpectedCounts) -> Bool {
        packs?.planKnown(packID, counts) ?? false
    }

    func jobPlanned(_ packID: Int64, _ plan: ResourcePlan) {
        packs?.planned(packID, plan)
    }

    func jobLinked(_ packID: Int64, _ progress: StoredProgress) {}
    func jobCounted(_ packID: Int64, _ counts: PackInvalidation, progress: StoredProgress) {}

    func jobEnded(_ packID: Int64, _ event: PackLifecycle.Event) {
        packs?.planEnded(packID, event)
    }
}

/// One work unit this node holds: a download restricted to the unit (or, for a pack being
/// revalidated, the whole revalidation; for a `"glyphs": "region"` pack's last unit, its glyph
/// choice), reporting to the runner under the unit's key.
final class UnitJob: JobOwner {
    let key: WorkUnitLeases.Key
    let unit: WorkUnit
    private weak var runner: UnitRunner?
    var download: PackDownload?
    var revalidation: PackRevalidation?
    var glyphChoice: PackGlyphChoice?

    init(key: WorkUnitLeases.Key, unit: WorkUnit, runner: UnitRunner) {
        self.key = key
        self.unit = unit
        self.runner = runner
    }

    func start() {
        download?.start()
        revalidation?.start()
        let key = key
        glyphChoice?.start { [weak runner] result in runner?.glyphsChosen(key, result) }
    }

    func stop() {
        download?.stop()
        revalidation?.stop()
        glyphChoice?.stop()
        download = nil
        revalidation = nil
        glyphChoice = nil
    }

    func jobPlanKnown(_ packID: Int64, _ counts: ExpectedCounts) -> Bool { true }

    func jobPlanned(_ packID: Int64, _ plan: ResourcePlan) {
        runner?.unitPlanned(key, unit, plan)
    }

    func jobLinked(_ packID: Int64, _ progress: StoredProgress) {
        runner?.linked(packID, progress)
    }

    func jobCounted(_ packID: Int64, _ counts: PackInvalidation, progress: StoredProgress) {
        runner?.counted(packID, counts, progress: progress)
    }

    func jobEnded(_ packID: Int64, _ event: PackLifecycle.Event) {
        runner?.unitEnded(key, event)
    }

    func jobOpenedArchives(_ packID: Int64, _ identities: [String: String], replacing: [String: String],
                           then: @escaping ([String: String]?) -> Void) {
        runner?.agreeOnArchives(key, identities, replacing: replacing, then: then)
    }
}

/// Who the fetcher counts each download's transfers for: a token of its own per download, as
/// several downloads of one pack run on a node (its plan, its units). Loop thread only.
final class TransferOwners {
    private var last: UInt64 = 1 << 62

    func next() -> UInt64 {
        last += 1
        return last
    }
}
