import Foundation
import Logging
import Loop
import Packs
import PackdTestSupport
import Store
import Testing
@testable import API

/// The durable event log when the store refuses appends (a full disk the writer's reserve
/// could not take them on): refused events are appended again until they land, so a replay
/// from the log has no gap.
@Suite struct EventLogTests {
    /// A real SQLite store whose event appends are refused while `refusals` lasts.
    final class RefusingStore: PackStore, @unchecked Sendable {
        let store: SQLiteStore
        private let lock = NSLock()
        private var refusalsLeft: Int
        private(set) var refusedAppends = 0

        init(_ store: SQLiteStore, refusals: Int) {
            self.store = store
            refusalsLeft = refusals
        }

        var refused: Int { lock.withLock { refusedAppends } }

        func logEvent(_ event: StoredEvent, failed: @escaping @Sendable (any Error) -> Void) {
            let refuse = lock.withLock { () -> Bool in
                guard refusalsLeft > 0 else { return false }
                refusalsLeft -= 1
                refusedAppends += 1
                return true
            }
            guard refuse else { return store.logEvent(event, failed: failed) }
            // As the writer answers: after the batch, from its thread.
            store.whenCommitted { failed(StoreError(.storageFull, "database or disk is full")) }
        }

        func read<T: Sendable>(_ query: @escaping @Sendable (any StoreReading & PackExporting) throws -> T,
                               then: @escaping (Result<T, any Error>) -> Void) { store.read(query, then: then) }
        func write<T: Sendable>(_ operation: @escaping @Sendable (any StoreWriting) throws -> T,
                                then: @escaping (Result<T, any Error>) -> Void) { store.write(operation, then: then) }
        func readNow<T>(_ query: (any StoreReading) throws -> T) throws -> T { try store.readNow(query) }
        var commitListener: (any CommittedBatchListener)? {
            get { store.commitListener }
            set { store.commitListener = newValue }
        }
        var committedChanges: UInt64 { store.committedChanges }
        func checkUpload(path: String, limits: UploadLimits, scratchDirectory: String) -> Result<any CheckedUpload, ImportError> {
            store.checkUpload(path: path, limits: limits, scratchDirectory: scratchDirectory)
        }
        func close() { store.close() }
        func submit(_ writes: [ResourceWrite]) { store.submit(writes) }
        func inBatch<T: Sendable>(_ operation: @escaping @Sendable (any StoreWriting) throws -> T,
                                  then: (@Sendable (Result<T, any Error>) -> Void)?) { store.inBatch(operation, then: then) }
        func whenCommitted(_ then: @escaping @Sendable () -> Void) { store.whenCommitted(then) }
        func flush(_ then: @escaping @Sendable () -> Void) { store.flush(then) }
        var pendingWrites: Int { store.pendingWrites }
    }

    @Test func refusedAppendsAreRetriedUntilEveryEventIsLoggedInItsPlace() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("packd-event-log-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("packd.sqlite").path
        nonisolated(unsafe) var made: (RefusingStore, EventBroadcaster, EventLog)?
        let fixture = try APIFixture { _, loop in
            let logger = Logger(label: "event-log-test") { _ in SwiftLogNoOpLogHandler() }
            let store = RefusingStore(try! SQLiteStore(path: path, loop: loop, configuration: .init(maximumBatchDelay: .milliseconds(5))),
                                      refusals: 5)
            let log = EventLog(store: store, loop: loop, clock: .fixed(1_800_000_000), logger: logger)
            made = (store, EventBroadcaster(loop: loop, delivery: LocalEventDelivery(log: log)), log)
        }
        let (store, broadcaster, log) = try #require(made)
        defer {
            fixture.onLoop { log.close(); broadcaster.close() }
            fixture.stop()
            store.close()
        }

        // The store refuses the first five appends: three events, then a fourth emitted while
        // they wait, then some of their retries. Each lands eventually, under its own id.
        for index in 1...3 {
            fixture.onLoop { broadcaster.publish(.state, packID: 7, payload: Array(#"{"n":\#(index)}"#.utf8)) }
        }
        #expect(eventually(within: 30) { store.refused == 3 })
        fixture.onLoop { broadcaster.publish(.state, packID: 7, payload: Array(#"{"n":4}"#.utf8)) }

        let reader = try StoreReader(path: path)
        #expect(eventually(within: 30) { (try? reader.events(after: 0).count) == 4 })
        let logged = try reader.events(after: 0)
        #expect(logged.map(\.id) == [1, 2, 3, 4], "every id once, in its place")
        #expect(logged.map(\.json) == (1...4).map { #"{"n":\#($0)}"# })
        #expect(store.refused == 5, "the retries were refused as well, and retried again")
        #expect(fixture.onLoop { log.backlogCount } == 0)
    }
}
