import Foundation
import Jobs
import Packs
import Plan
import PostgresStore
import WorkSharing

/// One pack active in the cluster as this node takes part in it: its record, whether its plan is
/// cut into units yet, the planning download while this node plans it, and the units it works on.
/// Loop thread only.
final class ClusterPack {
    let id: Int64
    var record: PackRecord?
    var region: RegionDefinition?
    /// The record is being read.
    var reading = false
    /// Cut into units (by any node).
    var isCut = false
    /// A revalidation, not a download: one unit, run whole by the node that claims it.
    var revalidating = false
    /// The plan's counts, once a plan of this node knew them.
    var expected: ExpectedCounts?
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

/// The `.plan` download of a pack: the documents, the counts (stored through the lifecycle), and
/// the plan, which the scheduler cuts into units.
final class PlanJob: JobOwner {
    private weak var scheduler: ClusterScheduler?
    var download: PackDownload?

    init(scheduler: ClusterScheduler) {
        self.scheduler = scheduler
    }

    func stop() {
        download?.stop()
        download = nil
    }

    func jobPlanKnown(_ packID: Int64, _ counts: ExpectedCounts) -> Bool {
        scheduler?.planKnown(packID, counts) ?? false
    }

    func jobPlanned(_ packID: Int64, _ plan: ResourcePlan) {
        scheduler?.planned(packID, plan)
    }

    func jobLinked(_ packID: Int64, _ progress: StoredProgress) {}
    func jobCounted(_ packID: Int64, _ counts: PackInvalidation, progress: StoredProgress) {}

    func jobEnded(_ packID: Int64, _ event: PackLifecycle.Event) {
        scheduler?.planEnded(packID, event)
    }
}

/// One work unit this node holds: a download restricted to the unit (or, for a pack being
/// revalidated, the whole revalidation), reporting to the scheduler under the unit's key.
final class UnitJob: JobOwner {
    let key: WorkUnitLeases.Key
    let unit: WorkUnit
    private weak var scheduler: ClusterScheduler?
    var download: PackDownload?
    var revalidation: PackRevalidation?

    init(key: WorkUnitLeases.Key, unit: WorkUnit, scheduler: ClusterScheduler) {
        self.key = key
        self.unit = unit
        self.scheduler = scheduler
    }

    func start() {
        download?.start()
        revalidation?.start()
    }

    func stop() {
        download?.stop()
        revalidation?.stop()
        download = nil
        revalidation = nil
    }

    func jobPlanKnown(_ packID: Int64, _ counts: ExpectedCounts) -> Bool { true }

    func jobPlanned(_ packID: Int64, _ plan: ResourcePlan) {
        scheduler?.unitPlanned(key, unit, plan)
    }

    func jobLinked(_ packID: Int64, _ progress: StoredProgress) {
        scheduler?.linked(packID, progress)
    }

    func jobCounted(_ packID: Int64, _ counts: PackInvalidation, progress: StoredProgress) {
        scheduler?.counted(packID, counts, progress: progress)
    }

    func jobEnded(_ packID: Int64, _ event: PackLifecycle.Event) {
        scheduler?.unitEnded(key, event)
    }
}
