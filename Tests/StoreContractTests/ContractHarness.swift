import Foundation
import Loop
import Packs
import Testing

/// A store on its own loop thread, driven from the test with blocking calls that wait for the
/// store's completions under a generous deadline (never a sleep).
final class ContractHarness: CommittedBatchListener, @unchecked Sendable {
    struct Timeout: Error {}

    let factory: StoreFactory
    let thread: LoopThread
    private(set) var store: (any PackStore)!
    private(set) var location: String
    private let condition = NSCondition()
    private var outcomes: [BatchOutcome] = []
    private var closed = false

    init(_ factory: StoreFactory, batches: BatchSettings = BatchSettings()) throws {
        self.factory = factory
        thread = try LoopThread(name: "contract")
        let opened = try factory.open(thread.loop, nil, batches)
        store = opened.store
        location = opened.location
        try observeCommits()
    }

    /// The harness stands where the download engine does: the store's commit listener.
    private func observeCommits() throws {
        let store = store!
        try thread.sync { store.commitListener = self }
    }

    func committed(_ outcome: BatchOutcome) {
        condition.withLock {
            outcomes.append(outcome)
            condition.broadcast()
        }
    }

    /// Closes the store and opens the same one again (a restart).
    func reopen(batches: BatchSettings = BatchSettings()) throws {
        let old = store!
        try thread.sync { old.close() }
        store = try factory.open(thread.loop, location, batches).store
        condition.withLock { outcomes.removeAll() }
        try observeCommits()
    }

    func close() {
        guard !condition.withLock({ () -> Bool in defer { closed = true }; return closed }) else { return }
        let store = store!
        try? thread.sync { store.close() }
        thread.shutdown()
        factory.remove(location)
    }

    deinit { close() }

    /// Committed batches so far.
    var committed: [BatchOutcome] { condition.withLock { outcomes } }

    // MARK: Blocking calls

    func read<T: Sendable>(_ query: @escaping @Sendable (any StoreReading & PackExporting) throws -> T) throws -> T {
        try wait { done in self.store.read(query, then: done) }
    }

    func write<T: Sendable>(_ operation: @escaping @Sendable (any StoreWriting) throws -> T) throws -> T {
        try wait { done in self.store.write(operation, then: done) }
    }

    /// Runs `operation` riding the open batch and waits for its batch to commit.
    func inBatch<T: Sendable>(_ operation: @escaping @Sendable (any StoreWriting) throws -> T) throws -> T {
        try wait { done in self.store.inBatch(operation, then: { done($0) }) }
    }

    /// A new pack named `name` (as `ContractRows.pack` makes it); its id.
    func createPack(_ name: String, state: PackState = .queued) throws -> Int64 {
        try write { try $0.createPack(ContractRows.pack(name, state: state), now: 1) }
    }

    func submit(_ writes: [ResourceWrite]) {
        store.submit(writes)
    }

    func flush() throws {
        try wait { (done: @escaping @Sendable (Result<Void, any Error>) -> Void) in self.store.flush { done(.success(())) } }
    }

    /// Waits until a committed batch satisfies `predicate`.
    func waitForCommit(_ predicate: @escaping ([BatchOutcome]) -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(60)
        return condition.withLock {
            while !predicate(outcomes) {
                if !condition.wait(until: deadline) { return predicate(outcomes) }
            }
            return true
        }
    }

    private func wait<T>(_ start: @escaping (@escaping @Sendable (Result<T, any Error>) -> Void) -> Void) throws -> T {
        let box = ResultBox<T>()
        try thread.sync { start { box.set($0) } }
        guard let result = box.wait() else { throw Timeout() }
        return try result.get()
    }
}

private final class ResultBox<T>: @unchecked Sendable {
    private let condition = NSCondition()
    private var result: Result<T, any Error>?

    func set(_ value: Result<T, any Error>) {
        condition.withLock {
            result = value
            condition.broadcast()
        }
    }

    func wait() -> Result<T, any Error>? {
        let deadline = Date().addingTimeInterval(60)
        return condition.withLock {
            while result == nil {
                if !condition.wait(until: deadline) { break }
            }
            return result
        }
    }
}

/// Rows and packs the tests store.
enum ContractRows {
    static let template = "https://tiles.example/{z}/{x}/{y}.pbf"
    static let definition = #"{"style_url":"https://example/style.json","bounds":[0.0,0.0,1.0,1.0],"min_zoom":0.0,"max_zoom":2.0,"pixel_ratio":1.0}"#

    static func pack(_ name: String, state: PackState = .queued, context: [UInt8]? = nil,
                     limits: PackLimits = PackLimits()) -> PackRecord {
        PackRecord(name: name, state: state, context: context, definition: definition, limits: limits,
                   expectedResources: 12, expectedTiles: 10, expectedIsPrecise: true)
    }

    /// A tile with `size` bytes of deterministic content.
    static func tile(z: Int64, x: Int64, y: Int64, pack: Int64?, size: Int = 300, template: String = template) -> ResourceWrite {
        var state = UInt64(z << 40 | x << 20 | y) &+ 0x9E37_79B9_7F4A_7C15
        let body = (0..<size).map { _ -> UInt8 in
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return UInt8(truncatingIfNeeded: state >> 33)
        }
        return ResourceWrite(key: .tile(TileKey(urlTemplate: template, z: z, x: x, y: y)),
                             content: .body(StoredBody(data: body, compressed: false)), packID: pack)
    }

    static func resource(_ url: String, pack: Int64?, text: String = "{}") -> ResourceWrite {
        ResourceWrite(key: .resource(url: url, kind: .style), content: .body(StoredBody(data: Array(text.utf8), compressed: false)),
                      packID: pack)
    }
}
