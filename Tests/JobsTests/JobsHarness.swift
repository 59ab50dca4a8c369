import Fetch
import Foundation
import Jobs
import Loop
import PackdTestSupport
import Packs
import Plan
import Store

/// A scheduler, fetcher and writer on a real SQLite file, with blocking helpers that wait for a
/// condition (a state, a progress count) under a generous deadline — never a sleep.
final class JobsHarness: @unchecked Sendable {
    let path: String
    let thread: LoopThread
    let store: SQLiteStore
    var writer: WriterThread { store.writer }
    private let listener = HarnessListener()
    private(set) var fetcher: Fetcher!
    private(set) var scheduler: PackScheduler!
    private let condition = NSCondition()
    private var states: [Int64: [String]] = [:]
    private var progress: [Int64: StoredProgress] = [:]
    private var errors: [Int64: String] = [:]
    private var expected: [Int64: ExpectedCounts] = [:]
    /// Rows of each committed batch, as the writer reports them (on its thread).
    private let batchSizes = BatchSizes()
    /// Per pack, each `start_area_ready` heard: when, and the progress last published before it.
    private var startAreaReady: [Int64: [(at: Int64, progress: StoredProgress?)]] = [:]

    init(path: String, settings: DownloadSettings = JobsHarness.fastRetries, maxActive: Int = 2,
         fetch: FetchConfiguration = FetchConfiguration(addressPolicy: .loopbackForTests),
         writer: WriterThread.Configuration = WriterThread.Configuration()) throws {
        self.path = path
        let thread = try LoopThread(name: "jobs-test")
        self.thread = thread
        let batchSizes = batchSizes
        store = try SQLiteStore(path: path, loop: thread.loop, configuration: writer,
                                onCommitOnWriter: { batchSizes.append($0.committedWrites) })
        listener.harness = self
        try thread.sync {
            self.fetcher = try Fetcher(loop: thread.loop, configuration: fetch)
            self.scheduler = PackScheduler(loop: thread.loop, fetcher: self.fetcher, store: self.store, listener: self.listener,
                                           maxActive: maxActive, settings: settings)
        }
    }

    /// What the scheduler reports, as the API would publish it.
    private final class HarnessListener: PackActivityListener {
        weak var harness: JobsHarness?
        /// Revalidation counts as committed (tests of `invalidate` read them).
        var onRevalidation: ((Int64, PackInvalidation) -> Void)?

        func packTransitioned(_ packID: Int64, _ transition: PackLifecycle.Transition) {
            guard transition.loopActions.contains(.publishState), let state = transition.to else { return }
            harness?.record {
                harness?.states[packID, default: []].append(state.rawValue)
                harness?.errors[packID] = transition.error.flatMap { try? SortedJSONEncoder.encode($0) }
                    .map { String(decoding: $0, as: UTF8.self) }
            }
        }

        func progressCommitted(_ packID: Int64, _ progress: StoredProgress, expected: ExpectedCounts?) {
            harness?.record {
                harness?.progress[packID] = progress
                if let expected { harness?.expected[packID] = expected }
            }
        }

        func revalidationCommitted(_ packID: Int64, _ counts: PackInvalidation, progress: StoredProgress,
                                   expected: ExpectedCounts) {
            onRevalidation?(packID, counts)
        }

        func resourceFailed(_ failure: ResourceErrorEvent) {}

        func startAreaReady(_ packID: Int64, _ startArea: StartArea, at time: Int64) {
            harness?.record { harness?.startAreaReady[packID, default: []].append((time, harness?.progress[packID])) }
        }
    }

    /// Each `start_area_ready` of `packID`, with the progress published before it.
    func startAreaReadyHeard(_ packID: Int64) -> [(at: Int64, progress: StoredProgress?)] {
        condition.withLock { startAreaReady[packID, default: []] }
    }

    /// Hears each revalidation's committed counts (set on the loop thread).
    var onRevalidation: ((Int64, PackInvalidation) -> Void)? {
        get { listener.onRevalidation }
        set { listener.onRevalidation = newValue }
    }

    static let fastRetries = DownloadSettings(maxInFlight: 8, initialBackoff: .milliseconds(5), maxBackoff: .milliseconds(50))

    /// Creates a pack in `queued` (as the API does for `start: true`) and returns its id.
    func createQueuedPack(region json: [String: Any], limits: PackLimits = PackLimits(),
                          startArea: StartArea? = nil) throws -> Int64 {
        let region = try RegionDefinition(json: json)
        let record = PackRecord(name: "test", state: .queued, definition: region.mapLibreJSON, createdAt: 0, updatedAt: 0,
                                limits: limits, startArea: startArea)
        return try performAndWait { try $0.createPack(record, now: 0) }
    }

    func performAndWait<T: Sendable>(_ operation: @escaping @Sendable (OfflineDatabase) throws -> T) throws -> T {
        let box = Box<Result<T, any Error>>()
        writer.perform(operation) { box.set($0) }
        guard let result = box.wait(deadline: .seconds(60)) else { throw HarnessTimeout() }
        return try result.get()
    }

    func onLoop<T>(_ work: @escaping () throws -> T) throws -> T { try thread.sync(work) }

    /// Waits until `packID` published one of `wanted`; returns the states it went through.
    func waitForState(_ packID: Int64, _ wanted: Set<String>, deadline: Duration = .seconds(120)) -> [String] {
        waitFor(deadline) { self.states[packID, default: []].contains(where: wanted.contains) }
        return condition.withLock { states[packID, default: []] }
    }

    /// Waits until `packID` published `state` at least `count` times (a refresh completes again).
    @discardableResult
    func waitForState(_ packID: Int64, _ state: String, count: Int, deadline: Duration = .seconds(120)) -> Bool {
        waitFor(deadline) { self.states[packID, default: []].filter { $0 == state }.count >= count }
    }

    /// Waits until `packID` published at least `count` states, the last one of `wanted`.
    func waitFor(states packID: Int64, count: Int, _ wanted: Set<String>, deadline: Duration = .seconds(120)) -> Bool {
        waitFor(deadline) {
            let states = self.states[packID, default: []]
            return states.count >= count && states.last.map(wanted.contains) == true
        }
    }

    /// Waits until the committed progress of `packID` satisfies `predicate`.
    @discardableResult
    func waitForProgress(_ packID: Int64, deadline: Duration = .seconds(120),
                         _ predicate: @escaping (StoredProgress) -> Bool) -> Bool {
        waitFor(deadline) { self.progress[packID].map(predicate) ?? false }
    }

    func publishedProgress(_ packID: Int64) -> StoredProgress? { condition.withLock { progress[packID] } }
    func publishedExpected(_ packID: Int64) -> ExpectedCounts? { condition.withLock { expected[packID] } }
    func publishedError(_ packID: Int64) -> String? { condition.withLock { errors[packID] } }
    /// The rows of each batch the writer committed, in order.
    var committedBatchSizes: [Int] { batchSizes.values }

    private var closed = false

    /// Stops downloads, the fetcher, the loop and the writer, in the server's shutdown order.
    /// Idempotent (tests close early to read the database, and again on exit).
    func close() {
        guard !condition.withLock({ () -> Bool in
            defer { closed = true }
            return closed
        }) else { return }
        try? thread.sync {
            self.scheduler.shutdown()
            self.fetcher.shutdown()
        }
        thread.shutdown()
        store.close()
    }

    @discardableResult
    private func waitFor(_ deadline: Duration, _ done: () -> Bool) -> Bool {
        let limit = Date().addingTimeInterval(Double(deadline.components.seconds))
        condition.lock()
        defer { condition.unlock() }
        while !done() {
            if !condition.wait(until: limit) { return done() }
        }
        return true
    }

    private func record(_ change: () -> Void) {
        condition.lock()
        change()
        condition.broadcast()
        condition.unlock()
    }
}

/// One value handed from another thread, awaited with a deadline.
final class Box<T>: @unchecked Sendable {
    private let condition = NSCondition()
    private var value: T?

    func set(_ value: T) {
        condition.withLock {
            self.value = value
            condition.broadcast()
        }
    }

    func wait(deadline: Duration) -> T? {
        let limit = Date().addingTimeInterval(Double(deadline.components.seconds))
        condition.lock()
        defer { condition.unlock() }
        while value == nil {
            if !condition.wait(until: limit) { break }
        }
        return value
    }
}

/// A fresh directory under the system temp dir, removed by `remove()`.
struct TemporaryDatabase {
    let directory: URL
    var path: String { directory.appendingPathComponent("packd.db").path }

    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("jobs-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    func remove() { try? FileManager.default.removeItem(at: directory) }
}


/// Batch sizes reported from the writer thread.
private final class BatchSizes: @unchecked Sendable {
    private let lock = NSLock()
    private var sizes: [Int] = []

    func append(_ size: Int) { lock.withLock { sizes.append(size) } }
    var values: [Int] { lock.withLock { sizes } }
}
