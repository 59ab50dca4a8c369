import Packs
import Plan

/// What a job (a download or a revalidation) tells the scheduler that runs it. Loop thread.
public protocol JobOwner: AnyObject {
    /// The plan is known. The owner applies `.planKnown` (storing the counts); false when that
    /// fails the pack (its own `max_tiles`): the job then stops without another word.
    func jobPlanKnown(_ packID: Int64, _ counts: ExpectedCounts) -> Bool
    /// Rows stored elsewhere were linked to the pack (committed).
    func jobLinked(_ packID: Int64, _ progress: StoredProgress)
    /// A revalidation's counts committed.
    func jobCounted(_ packID: Int64, _ counts: PackInvalidation, progress: StoredProgress)
    /// The job ended with `event` — `.finished(failedResources:)` or `.fail(_:)` — once what it
    /// wrote is committed. A stopped job (suspend, delete, shutdown) reports nothing.
    func jobEnded(_ packID: Int64, _ event: PackLifecycle.Event)
    /// The plan of a download with the `.plan` scope, after `jobPlanKnown` accepted it (the
    /// job then stops without another word), or of a `.unit` download before it downloads.
    func jobPlanned(_ packID: Int64, _ plan: ResourcePlan)
    /// A cluster unit opened the pack's PMTiles archives (`identities`: `ArchiveValidator.identity`
    /// by archive key): before it stores anything, the owner has every node agree on them. `then`
    /// gets nil when the pack's record now holds these versions (recorded first, the same, or moved
    /// here from the versions in `replacing`, which the unit saw replaced — the units done with
    /// them are redone), else the versions recorded instead (the unit opens the archive again).
    func jobOpenedArchives(_ packID: Int64, _ identities: [String: String], replacing: [String: String],
                           then: @escaping ([String: String]?) -> Void)
}

extension JobOwner {
    public func jobPlanned(_ packID: Int64, _ plan: ResourcePlan) {}

    /// One node: nothing to agree with.
    public func jobOpenedArchives(_ packID: Int64, _ identities: [String: String], replacing: [String: String],
                                  then: @escaping ([String: String]?) -> Void) {
        then(nil)
    }
}
