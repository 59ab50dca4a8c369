import Packs

/// The resources of one job that failed for good: each is recorded in the pack's failure list
/// with the writer's open batch, and the job learns when more failed than its budget allows
/// (`DownloadSettings.failureBudget`) — a broken upstream stops the pack early instead of being
/// asked for everything else first. Loop thread only.
struct FailureLedger {
    private let packID: Int64
    private let store: any PackStore
    private let budget: Int
    private(set) var count: Int64 = 0

    init(packID: Int64, store: any PackStore, budget: Int) {
        self.packID = packID
        self.store = store
        self.budget = budget
    }

    /// Records one failed resource; true when the failures now exceed the budget.
    mutating func record(url: String, status: Int?, message: String, attempts: Int, now: Int64) -> Bool {
        count += 1
        let packID = packID
        store.inBatch({ database in
            try database.recordFailure(packID: packID, url: url, status: status.map(Int64.init), message: message,
                                       attempts: Int64(attempts), now: now)
        }, then: nil)
        return count > Int64(budget)
    }
}
