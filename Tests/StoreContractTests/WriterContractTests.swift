import Foundation
import PackdTestSupport
import Packs
import Store
import Testing

/// The one batching writer (`Writer.BatchingWriter`) as every store shows it through `PackStore`:
/// batch sizes by count and by time, operations riding a batch, per-pack change marks, a full
/// database, stopping with work pending. This is the test to copy for a new `WriterBackend`: a
/// store adds its factory to `StoreFactory.all` and passes these unchanged.
@Suite struct WriterContractTests {
    @Test(arguments: StoreFactory.all)
    func aBatchCommitsWhenItHoldsItsCountAndTheRestAtFlush(_ factory: StoreFactory) throws {
        // An hour's delay: only the count, or the flush, may end a batch.
        let store = try ContractHarness(factory, batches: BatchSettings(maximumCount: 10, maximumDelay: .seconds(3600)))
        defer { store.close() }
        let id = try store.createPack("count")
        store.submit((0..<25).map { ContractRows.tile(z: 5, x: Int64($0), y: 0, pack: id) })
        #expect(store.waitForCommit { $0.count == 2 })
        #expect(store.committed.map(\.committedWrites) == [10, 10])
        #expect(store.committed.last?.progress[id]?.completedTiles == 20, "each batch reports what it committed")
        #expect(try store.read { try $0.progress(id) }?.completedTiles == 20, "the last five wait in the open batch")
        try store.flush()
        #expect(store.committed.map(\.committedWrites) == [10, 10, 5])
        #expect(try store.read { try $0.progress(id) }?.completedTiles == 25)
    }

    @Test(arguments: StoreFactory.all)
    func aBatchCommitsWhenItsTimeIsUp(_ factory: StoreFactory) throws {
        let store = try ContractHarness(factory, batches: BatchSettings(maximumCount: 1000, maximumDelay: .milliseconds(20)))
        defer { store.close() }
        // No flush and far from the count: the delay alone commits both rows, in one batch.
        store.submit([ContractRows.tile(z: 1, x: 0, y: 0, pack: nil), ContractRows.tile(z: 1, x: 1, y: 0, pack: nil)])
        #expect(store.waitForCommit { $0.map(\.committedWrites).reduce(0, +) == 2 })
        #expect(store.committed.map(\.committedWrites) == [2])
        // An operation alone opens a batch too, and the delay commits it.
        let id = try store.inBatch { try $0.createPack(ContractRows.pack("timed"), now: 1) }
        #expect(try store.read { try $0.pack(id) }?.name == "timed")
    }

    @Test(arguments: StoreFactory.all)
    func operationsRideTheOpenBatchAndWaitersHearOfItsCommit(_ factory: StoreFactory) throws {
        let store = try ContractHarness(factory, batches: BatchSettings(maximumCount: 10, maximumDelay: .seconds(3600)))
        defer { store.close() }
        let id = try store.createPack("riding")
        let heard = Heard()
        store.submit((0..<4).map { ContractRows.tile(z: 6, x: Int64($0), y: 0, pack: id) })
        store.store.inBatch({ database in
            try database.recordFailure(packID: id, url: "https://t/gone", status: 404, message: "HTTP 404", attempts: 1, now: 2)
            return try database.createPack(ContractRows.pack("made in the batch"), now: 2)
        }, then: { result in heard.record("operation", (try? result.get()).map(String.init) ?? "\(result)") })
        let batchesSeen = store.committed.count
        store.store.whenCommitted { heard.record("waiter", "batches: \(store.committed.count - batchesSeen)") }
        // The batch is open: nothing riding it is durable, nobody has heard of it.
        #expect(try store.read { try $0.failures(packID: id, limit: 10) }.isEmpty)
        #expect(heard.all.isEmpty)
        store.submit((4..<10).map { ContractRows.tile(z: 6, x: Int64($0), y: 0, pack: id) })
        // The tenth row fills the batch: one commit holds the rows and the operation.
        #expect(heard.wait(for: 2))
        #expect(store.committed.map(\.committedWrites) == [10], "the operation and the waiter cut nothing short")
        let made = try #require(heard.all.first { $0.0 == "operation" }.flatMap { Int64($0.1) })
        #expect(heard.all.contains { $0 == ("waiter", "batches: 1") }, "the waiter heard after the batch committed")
        #expect(try store.read { try $0.pack(made) }?.name == "made in the batch")
        #expect(try store.read { try $0.failures(packID: id, limit: 10) }.map(\.url) == ["https://t/gone"])
        #expect(try store.read { try $0.progress(id) }?.completedTiles == 10)
    }

    /// The writes that came with versions and webhooks are operations like any other: a pack's
    /// completion riding another pack's download cuts the pack's version and writes its webhook
    /// outbox row in that batch's one commit — none of it before, all of it with the rows — and
    /// moves the marks of the two packs it changed, not a third's.
    @Test(arguments: StoreFactory.all)
    func aCompletionRidingABatchCutsItsVersionAndWritesItsOutboxInThatCommit(_ factory: StoreFactory) throws {
        let store = try ContractHarness(factory, batches: BatchSettings(maximumCount: 10, maximumDelay: .seconds(3600)))
        defer { store.close() }
        let now = WebhookStoreRules.nowMilliseconds()
        let endpoint = try store.write {
            try $0.createWebhookEndpoint(WebhookEndpointRecord(
                url: "https://hooks.example/", description: "", subscription: WebhookSubscription(events: ["*"]),
                secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", createdAt: now, updatedAt: now))
        }
        let (done, downloading, idle) = (try store.createPack("done"), try store.createPack("downloading"), try store.createPack("idle"))
        _ = try store.write { try $0.transition(done, .start, now: 2) }
        store.submit((0..<3).map { ContractRows.tile(z: 4, x: Int64($0), y: 2, pack: done) })
        try store.flush()
        func outbox() throws -> [WebhookEventType] {
            try store.read { try $0.webhookDeliveries(endpointID: endpoint, before: nil, limit: 10) }.map(\.type)
        }
        let marks = ChangeMarks(store.store, [done, downloading, idle])

        let heard = Heard()
        store.submit((0..<4).map { ContractRows.tile(z: 4, x: Int64($0), y: 3, pack: downloading) })
        store.store.inBatch({ try $0.transition(done, .finished(failedResources: 0), now: 3) }, then: { result in
            guard case .success(.applied(let transition)) = result else { return heard.record("completion", "\(result)") }
            heard.record("completion", transition.createdVersions.map { "\($0.packID) v\($0.version)" }.joined(separator: ","))
        })
        #expect(try store.read { try $0.pack(done) }?.version == 0, "nothing of the open batch is durable")
        #expect(try outbox().isEmpty)
        store.submit((4..<10).map { ContractRows.tile(z: 4, x: Int64($0), y: 3, pack: downloading) })
        #expect(heard.wait(for: 1))
        #expect(heard.all.first?.1 == "\(done) v1")
        #expect(store.committed.last?.committedWrites == 10, "the completion cut nothing short")
        let completed = try #require(try store.read { try $0.pack(done) })
        #expect(completed.state == .complete && completed.version == 1)
        #expect(try store.read { try $0.versions(of: done) }.map(\.version) == [1])
        #expect(try outbox() == [.packCompleted])
        #expect(try store.read { try $0.progress(downloading) }?.completedTiles == 10)
        #expect(marks.moved() == [true, true, false])
    }

    /// `documentChanges(of:)`: moved for exactly the packs whose documents a commit changed, as
    /// the database reports it (SQLite's update hook, PostgreSQL's triggers) — never by another
    /// pack's download — and for every pack by an operation that made no promise.
    @Test(arguments: StoreFactory.all)
    func eachCommitMovesThePacksItChangedAndNoOther(_ factory: StoreFactory) throws {
        let store = try ContractHarness(factory, batches: BatchSettings(maximumCount: 256, maximumDelay: .seconds(3600)))
        defer { store.close() }
        let (a, b, c) = (try store.createPack("a"), try store.createPack("b"), try store.createPack("c"))
        let marks = ChangeMarks(store.store, [a, b, c])

        // A's download: its tiles and progress only.
        store.submit((0..<5).map { ContractRows.tile(z: 3, x: Int64($0), y: 1, pack: a) })
        try store.flush()
        #expect(marks.moved() == [true, false, false])
        // B links a tile A stored (B's progress), then stores it again at another size: the
        // progress of every pack linking it changes, A's too, though A's download wrote nothing.
        store.submit([ContractRows.tile(z: 3, x: 0, y: 1, pack: b)])
        try store.flush()
        #expect(marks.moved() == [false, true, false])
        store.submit([ContractRows.tile(z: 3, x: 0, y: 1, pack: b, size: 900)])
        try store.flush()
        #expect(marks.moved() == [true, true, false])
        // An operation riding a batch: seen by what it changed.
        store.store.inBatch({ try $0.setUpdateAvailable(c, true, now: 5) }, then: nil)
        try store.flush()
        #expect(marks.moved() == [false, false, true])
        // Ambient rows and the event log change no pack's document.
        store.submit([ContractRows.tile(z: 9, x: 9, y: 9, pack: nil)])
        store.store.logEvent(StoredEvent(id: 1, packID: a, type: "progress", json: "{}", createdAt: 6)) { Issue.record("\($0)") }
        try store.flush()
        #expect(marks.moved() == [false, false, false])
        // Nor does the webhook dispatcher's outbox work riding a batch (a ping queued, claimed,
        // its attempt recorded): a dispatcher pass leaves every pack's cached document valid.
        let endpoint = try store.write { try $0.createWebhookEndpoint(WebhookContractTests.endpoint("https://hook.example/")) }
        _ = marks.moved()
        let owner = "node-1", now = WebhookStoreRules.nowMilliseconds()
        let claims = Heard()
        store.store.inBatch({ _ = try $0.enqueueWebhookPing(endpointID: endpoint, data: "{}", now: now) }, then: nil)
        store.store.inBatch({
            try $0.claimWebhookDeliveries(owner: owner, now: now + 1, leaseUntil: now + 60_000, limit: 10, perEndpoint: 10).count
        }, then: { claims.record("claimed", "\((try? $0.get()) ?? -1)") })
        try store.flush()
        #expect(claims.wait(for: 1) && claims.all.first?.1 == "1", "\(claims.all)")
        #expect(marks.moved() == [false, false, false])
        // An operation that made no promise moves every pack.
        _ = try store.write { try $0.updatePack(a, name: "renamed", context: nil, now: 7) }
        #expect(marks.moved() == [true, true, true])
        // One that promised to change no pack's document and changed one anyway: that pack moves.
        let done = Heard()
        factory.performPromisingNoChange(store.store, { _ = try $0.updatePack(b, name: "quiet", context: nil, now: 8) }) {
            done.record("done", "")
        }
        #expect(done.wait(for: 1))
        #expect(marks.moved() == [false, true, false])
    }

    /// Storage that refuses new rows (a full disk): the batch that meets it is reported with
    /// `storageFull` and the packs it held, nothing of it is durable, each operation riding it
    /// hears once, and once there is room the writer goes on as before.
    @Test(arguments: StoreFactory.all)
    func aBatchFullStorageRefusesIsReportedAndTheWriterGoesOn(_ factory: StoreFactory) throws {
        let store = try ContractHarness(factory, batches: BatchSettings(maximumCount: 1000, maximumDelay: .seconds(3600)))
        defer { store.close() }
        let id = try store.createPack("full")
        store.submit((0..<4).map { ContractRows.tile(z: 8, x: Int64($0), y: 0, pack: id) })
        try store.flush()
        try store.write { try factory.fillStorage($0, true) }

        let big = (0..<8).map { ContractRows.tile(z: 8, x: Int64(100 + $0), y: 0, pack: id, size: 64 << 10) }
        let heard = Heard()
        store.submit(big)
        store.store.inBatch({ try $0.recordFailure(packID: id, url: "https://t/x", status: 503, message: "HTTP 503", attempts: 5, now: 2) },
                            then: { result in heard.record("operation", Self.describe(result)) })
        try store.flush()
        let refused = try #require(store.committed.last)
        #expect(refused.error?.isStorageFull == true, "\(String(describing: refused.error))")
        #expect(refused.failedPackIDs == [id], "the download learns which packs to fail with storage_full")
        #expect(refused.committedWrites == 8)
        #expect(try store.read { try $0.progress(id) }?.completedTiles == 4, "nothing of the refused batch is durable")
        #expect(heard.wait(for: 1))
        let operation = try #require(heard.all.first)
        // Whether it landed is the store's to say (SQLite's writer applies it again alone, in the
        // room its reserve held; a PostgreSQL batch is one transaction); if it did not, it heard
        // of the full storage, not something vaguer.
        #expect(operation.1 == "ok" || operation.1 == "storage full", "\(operation)")

        try store.write { try factory.fillStorage($0, false) }
        store.submit(big)
        try store.flush()
        #expect(store.committed.last?.error == nil, "\(String(describing: store.committed.last?.error))")
        #expect(try store.read { try $0.progress(id) }?.completedTiles == 12)
        #expect(heard.all.count == 1, "an operation hears once")
    }

    /// SQLite-only: the storage reserve. A SQLite file lives on packd's own file system, where a
    /// file of held-back room (`<database>-reserve`) can be given up when the disk fills, so the
    /// facts riding the batch it refused — a pack's failure, its events — still land and no pack
    /// is left `active` with nothing downloading it. PostgreSQL's storage is the server's: packd
    /// cannot hold room on it, and a server out of disk refuses every transaction, so there the
    /// shared test above is the whole contract.
    @Test(.enabled(if: SmallFileSystem.available, "mounting a tmpfs needs root (CI and the dev machines run as root)"))
    func sqliteOnlyTheReserveLetsTheOperationsOfARefusedBatchLand() throws {
        let disk = try SmallFileSystem(bytes: 12 << 20)
        defer { disk.unmount() }
        let path = disk.directory.appendingPathComponent("reserve.sqlite").path
        let sqlite = StoreFactory.sqlite
        let factory = StoreFactory(name: "SQLite with a 4 MiB reserve", open: { loop, existing, batches in
            let store = try SQLiteStore(path: existing ?? path, loop: loop, configuration: .init(
                maximumBatchCount: batches.maximumCount, maximumBatchDelay: batches.maximumDelay, storageReserveBytes: 4 << 20))
            return (store, existing ?? path)
        }, remove: { _ in }, performPromisingNoChange: sqlite.performPromisingNoChange, fillStorage: sqlite.fillStorage)
        let store = try ContractHarness(factory, batches: BatchSettings(maximumCount: 1000, maximumDelay: .seconds(3600)))
        defer { store.close() }
        #expect((try? FileManager.default.attributesOfItem(atPath: path + "-reserve")[.size] as? Int) == 4 << 20)
        let id = try store.createPack("reserve")
        let heard = Heard()
        var batches = 0
        while !store.committed.contains(where: { $0.error?.isStorageFull == true }) {
            try #require(batches < 200, "the 12 MiB file system never filled")
            store.submit((0..<8).map { ContractRows.tile(z: 12, x: Int64(batches * 8 + $0), y: 0, pack: id, size: 64 << 10) })
            let url = "https://t/\(batches)"
            store.store.inBatch({ try $0.recordFailure(packID: id, url: url, status: 503, message: "HTTP 503", attempts: 5, now: 2) },
                                then: { heard.record(url, Self.describe($0)) })
            try store.flush()
            batches += 1
        }
        #expect(heard.wait(for: batches))
        #expect(heard.all.allSatisfy { $0.1 == "ok" }, "the refused batch's operation landed too: \(heard.all.suffix(2))")
        #expect(try store.read { try $0.failures(packID: id, limit: 1000) }.count == batches)
        #expect(!FileManager.default.fileExists(atPath: path + "-reserve"), "its room was given up")

        // Room again: the reserve is taken back, and rows are stored.
        try disk.resize(to: 64 << 20)
        store.submit([ContractRows.tile(z: 12, x: 1_000_000, y: 0, pack: id, size: 64 << 10)])
        try store.flush()
        #expect(store.committed.last?.error == nil, "\(String(describing: store.committed.last?.error))")
        #expect(FileManager.default.fileExists(atPath: path + "-reserve"), "the reserve is held again")
    }

    static func describe(_ result: Result<Void, any Error>) -> String {
        switch result {
        case .success: "ok"
        case .failure(let error as StoreError) where error.isStorageFull: "storage full"
        case .failure(let error): "\(error)"
        }
    }

    /// Stopping commits what is queued — rows, operations riding the open batch, events — and
    /// answers what comes after instead of leaving it waiting.
    @Test(arguments: StoreFactory.all)
    func stoppingCommitsThePendingWorkAndAnswersWhatComesAfter(_ factory: StoreFactory) throws {
        let store = try ContractHarness(factory, batches: BatchSettings(maximumCount: 1000, maximumDelay: .seconds(3600)))
        defer { store.close() }
        let id = try store.createPack("pending")
        let heard = Heard()
        store.submit((0..<30).map { ContractRows.tile(z: 7, x: Int64($0), y: 3, pack: id) })
        store.store.inBatch({ try $0.createPack(ContractRows.pack("riding"), now: 2) },
                            then: { result in heard.record("operation", (try? result.get()).map(String.init) ?? "\(result)") })
        store.store.logEvent(StoredEvent(id: 7, packID: id, type: "state", json: #"{"state":"queued"}"#, createdAt: 2)) { error in
            heard.record("event", "\(error)")
        }
        let stopped = store.store!
        try store.thread.sync { stopped.close() }
        #expect(heard.wait(for: 1))
        #expect(heard.all.map(\.0) == ["operation"], "the operation committed, the event did not fail: \(heard.all)")

        // After the stop: a write is answered with an error, a flush returns.
        do {
            _ = try store.write { try $0.createPack(ContractRows.pack("too late"), now: 3) }
            Issue.record("a write after the stop succeeded")
        } catch {
            #expect(!(error is ContractHarness.Timeout), "a write after the stop must be answered, not left waiting")
        }
        try store.flush()

        try store.reopen()
        #expect(try store.read { try $0.progress(id) }?.completedTiles == 30)
        #expect(try store.read { try $0.packs(after: 0, state: nil, nameContains: nil, limit: 10) }.map(\.name) == ["pending", "riding"])
        #expect(try store.read { try $0.events(after: 0, packID: id, limit: 10) }.map(\.type) == ["state"])
    }
}

/// What completions heard, in order, from any thread; `wait` blocks until enough arrived.
final class Heard: @unchecked Sendable {
    private let condition = NSCondition()
    private var entries: [(String, String)] = []

    func record(_ what: String, _ detail: String) {
        condition.withLock {
            entries.append((what, detail))
            condition.broadcast()
        }
    }

    var all: [(String, String)] { condition.withLock { entries } }

    func wait(for count: Int) -> Bool {
        let deadline = Date().addingTimeInterval(60)
        return condition.withLock {
            while entries.count < count {
                if !condition.wait(until: deadline) { break }
            }
            return entries.count >= count
        }
    }
}

/// Which packs' `documentChanges(of:)` moved since the last look; each must only ever go up.
final class ChangeMarks {
    let store: any PackStore
    let packs: [Int64]
    private var last: [UInt64]

    init(_ store: any PackStore, _ packs: [Int64]) {
        self.store = store
        self.packs = packs
        last = packs.map { store.documentChanges(of: $0) }
    }

    func moved() -> [Bool] {
        let now = packs.map { store.documentChanges(of: $0) }
        defer { last = now }
        for (before, after) in zip(last, now) { #expect(after >= before, "a change mark went back") }
        return zip(last, now).map { $0 != $1 }
    }
}
