import Foundation
import Packs
import Testing

/// The store contract, packs: what a repository keeps and how it answers, for every store.
@Suite struct PackRepositoryContractTests {
    @Test(arguments: StoreFactory.all)
    func packsReadBackInCreationOrderAndFilter(_ factory: StoreFactory) throws {
        let store = try ContractHarness(factory)
        defer { store.close() }
        let names = ["alps", "Paris 100%", "paris_north", "berlin"]
        var created: [Int64] = []
        for (index, name) in names.enumerated() {
            let record = ContractRows.pack(name, state: index == 3 ? .inactive : .queued, context: index == 0 ? [1, 2, 255] : nil,
                                           limits: index == 1 ? PackLimits(maxTiles: 7) : PackLimits())
            created.append(try store.write { try $0.createPack(record, now: 100 + Int64(index)) })
        }
        let ids = created
        #expect(ids == ids.sorted() && Set(ids).count == 4, "ids increase in creation order")

        let first = try #require(try store.read { try $0.pack(ids[0]) })
        #expect(first.name == "alps" && first.state == .queued && first.context == [1, 2, 255])
        #expect(first.definition == ContractRows.definition && first.createdAt == 100 && first.updatedAt == 100)
        #expect(first.expected == ExpectedCounts(resources: 12, tiles: 10, precise: true) && first.completedAt == nil)
        #expect(try store.read { try $0.pack(ids[1]) }?.limits == PackLimits(maxTiles: 7))
        #expect(try store.read { try $0.progress(ids[0]) } == StoredProgress())
        #expect(try store.read { try $0.pack(987_654) } == nil)
        #expect(try store.read { try $0.progress(987_654) } == nil)

        #expect(try store.read { try $0.packs(after: 0, state: nil, nameContains: nil, limit: 10) }.map(\.id) == ids)
        #expect(try store.read { try $0.packs(after: ids[1], state: nil, nameContains: nil, limit: 1) }.map(\.id) == [ids[2]])
        #expect(try store.read { try $0.packs(after: 0, state: .inactive, nameContains: nil, limit: 10) }.map(\.id) == [ids[3]])
        #expect(try store.read { try $0.packs(after: 0, state: nil, nameContains: "PARIS", limit: 10) }.map(\.id) == [ids[1], ids[2]],
                "ASCII case ignored")
        #expect(try store.read { try $0.packs(after: 0, state: nil, nameContains: "100%", limit: 10) }.map(\.id) == [ids[1]],
                "literal, no wildcards")
        #expect(try store.read { try $0.packs(after: 0, state: nil, nameContains: "_", limit: 10) }.map(\.id) == [ids[2]])
        #expect(try store.read { try $0.packCount() } == 4)
        #expect(try store.read { try $0.packCountsByState() } == [.queued: 3, .inactive: 1])
    }

    @Test(arguments: StoreFactory.all)
    func transitionsFollowTheLifecycleAndApplyTheirStorageActions(_ factory: StoreFactory) throws {
        let store = try ContractHarness(factory)
        defer { store.close() }
        let id = try store.write { try $0.createPack(ContractRows.pack("t"), now: 1) }
        func transition(_ event: PackLifecycle.Event, at now: Int64 = 10) throws -> TransitionOutcome {
            try store.write { try $0.transition(id, event, now: now) }
        }
        func state() throws -> PackState? { try store.read { try $0.pack(id) }?.state }

        guard case .applied(let start) = try transition(.start) else { Issue.record("start refused"); return }
        #expect(start.from == .queued && start.to == .active)
        #expect(try state() == .active)
        #expect(try store.read { try $0.scheduledPackIDs() } == [id])

        guard case .refused(let refusal) = try transition(.invalidate) else { Issue.record("invalidate of an active pack applied"); return }
        #expect(!refusal.reason.isEmpty)
        #expect(try state() == .active, "a refusal changes nothing")

        // A failure is stored with its error; resume forgets the recorded failures.
        try store.write { database in
            try database.recordFailure(packID: id, url: "https://t/1", status: 500, message: "HTTP 500", attempts: 5, now: 11)
            try database.recordFailure(packID: id, url: "https://t/2", status: nil, message: "timeout", attempts: 5, now: 12)
        }
        let error = PackError(.tooManyFailures, "2 resources failed", url: "https://t/2")
        guard case .applied(let failed) = try transition(.fail(error), at: 13) else { Issue.record("fail refused"); return }
        #expect(failed.to == .failed && failed.error == error)
        let stored = try #require(try store.read { try $0.pack(id) })
        #expect(stored.state == .failed && stored.error == error && stored.updatedAt == 13)
        #expect(try store.read { try $0.progress(id) }?.failedResources == 2)
        guard case .applied = try transition(.resume) else { Issue.record("resume refused"); return }
        #expect(try state() == .queued)
        #expect(try store.read { try $0.pack(id) }?.error == nil)
        #expect(try store.read { try $0.failures(packID: id, limit: 10) }.isEmpty)
        #expect(try store.read { try $0.progress(id) }?.failedResources == 0)

        // A legal no-op changes nothing; an unknown pack is told apart from a refusal.
        guard case .applied(let noOp) = try transition(.resume) else { Issue.record("resume of a queued pack refused"); return }
        #expect(noOp.from == .queued && noOp.to == .queued && !noOp.changesState)
        #expect(try store.write { try $0.transition(987_654, .suspend, now: 1) } == .noSuchPack)

        // Plan, finish, revalidate.
        _ = try transition(.start)
        let counts = ExpectedCounts(resources: 40, tiles: 30, precise: true)
        guard case .applied = try transition(.planKnown(counts, maxTiles: nil)) else { Issue.record("plan refused"); return }
        #expect(try store.read { try $0.pack(id) }?.expected == counts)
        guard case .applied(let finished) = try transition(.finished(failedResources: 0), at: 50) else { Issue.record("finish refused"); return }
        #expect(finished.to == .complete)
        #expect(try store.read { try $0.pack(id) }?.completedAt == 50)
        guard case .applied = try transition(.invalidate, at: 60) else { Issue.record("invalidate refused"); return }
        let revalidating = try #require(try store.read { try $0.pack(id) })
        #expect(revalidating.state == .queued && revalidating.invalidation?.startedAt == 60 && revalidating.invalidation?.isRunning == true)

        // Over the pack's own limit the counts are still stored, and the pack fails.
        let limited = try store.write { try $0.createPack(ContractRows.pack("limited", limits: PackLimits(maxTiles: 5)), now: 1) }
        _ = try store.write { try $0.transition(limited, .start, now: 2) }
        guard case .applied(let over) = try store.write({ try $0.transition(limited, .planKnown(counts, maxTiles: 5), now: 3) }) else {
            Issue.record("plan over the limit refused")
            return
        }
        #expect(over.to == .failed && over.error?.code == .tileLimitExceeded)
        #expect(try store.read { try $0.pack(limited) }?.expected == counts)

        guard case .applied(let deleted) = try transition(.delete) else { Issue.record("delete refused"); return }
        #expect(deleted.to == nil)
        #expect(try store.read { try $0.pack(id) } == nil)
        #expect(try store.write { try $0.transition(id, .delete, now: 1) } == .noSuchPack)
    }

    @Test(arguments: StoreFactory.all)
    func namesContextsFailuresAndIdempotencyKeys(_ factory: StoreFactory) throws {
        let store = try ContractHarness(factory)
        defer { store.close() }
        let id = try store.write { try $0.createPack(ContractRows.pack("before", context: [9]), now: 1) }
        #expect(try store.write { try $0.updatePack(id, name: "after", context: .some(nil), now: 5) })
        let updated = try #require(try store.read { try $0.pack(id) })
        #expect(updated.name == "after" && updated.context == nil && updated.updatedAt == 5)
        #expect(try !store.write { try $0.updatePack(987_654, name: "x", context: nil, now: 5) })

        try store.write { try $0.setUpdateAvailable(id, true, now: 7) }
        let checked = try #require(try store.read { try $0.pack(id) })
        #expect(checked.updateAvailable && checked.updateCheckedAt == 7)

        for index in 1...3 {
            try store.write { try $0.recordFailure(packID: id, url: "https://t/\(index)", status: index == 2 ? nil : 500,
                                                    message: "m\(index)", attempts: Int64(index), now: Int64(index)) }
        }
        let failures = try store.read { try $0.failures(packID: id, limit: 2) }
        #expect(failures.map(\.url) == ["https://t/3", "https://t/2"], "newest first, limited")
        #expect(failures[1].status == nil && failures[1].message == "m2" && failures[1].attempts == 2)
        #expect(try store.read { try $0.progress(id) }?.failedResources == 3)

        try store.write { try $0.storeIdempotencyKey("k", requestHash: "h1", packID: id, status: 201, body: [1, 2], now: 100, retention: 50) }
        try store.write { try $0.storeIdempotencyKey("k", requestHash: "h2", packID: nil, status: 500, body: [], now: 101, retention: 50) }
        let entry = try #require(try store.read { try $0.idempotencyEntry("k") })
        #expect(entry.requestHash == "h1" && entry.packID == id && entry.status == 201 && entry.body == [1, 2], "the first answer wins")
        try store.write { try $0.storeIdempotencyKey("other", requestHash: "h", packID: nil, status: 200, body: [], now: 200, retention: 50) }
        #expect(try store.read { try $0.idempotencyEntry("k") } == nil, "entries older than the retention go")
    }

    @Test(arguments: StoreFactory.all)
    func eventIdsKeepIncreasingAcrossARestart(_ factory: StoreFactory) throws {
        let store = try ContractHarness(factory)
        defer { store.close() }
        let id = try store.write { try $0.createPack(ContractRows.pack("e"), now: 1) }
        #expect(try store.read { try $0.lastEventID() } == 0)
        #expect(try store.read { try $0.oldestEventID() } == nil)
        for number in Int64(1)...5 {
            store.store.logEvent(StoredEvent(id: number, packID: id, type: "progress", json: #"{"n":\#(number)}"#, createdAt: number)) { error in
                Issue.record("event \(number) not logged: \(error)")
            }
        }
        try store.flush()
        let events = try store.read { try $0.events(after: 2, packID: id, limit: 10) }
        #expect(events.map(\.id) == [3, 4, 5] && events.first?.json == #"{"n":3}"# && events.first?.type == "progress")
        #expect(try store.read { try $0.events(after: 0, packID: nil, limit: 2) }.map(\.id) == [1, 2])
        #expect(try store.read { try $0.oldestEventID() } == 1)
        try store.reopen()
        #expect(try store.read { try $0.lastEventID() } == 5, "ids survive a restart")
    }
}
