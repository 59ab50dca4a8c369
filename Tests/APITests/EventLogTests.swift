import Foundation
import Logging
import Loop
import Packs
import PackdTestSupport
import Store
import Testing
@testable import API
@testable import Events

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

        /// Every later append is taken.
        func stopRefusing() { lock.withLock { refusalsLeft = 0 } }

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
        var reservedStorageBytes: Int64 { store.reservedStorageBytes }
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
        let rig = try RefusingLog(refusals: 5)
        defer { rig.stop() }
        let (store, log, path) = (rig.store, rig.log, rig.path)

        // The store refuses the first five appends: three events, then a fourth emitted while
        // they wait, then some of their retries. Each lands eventually, under its own id.
        rig.publish(1...3)
        #expect(eventually(within: 30) { store.refused == 3 })
        rig.publish(4...4)

        let reader = try StoreReader(path: path)
        #expect(eventually(within: 30) { (try? reader.events(after: 0).count) == 4 })
        let logged = try reader.events(after: 0)
        #expect(logged.map(\.id) == [1, 2, 3, 4], "every id once, in its place")
        #expect(logged.map(\.json) == (1...4).map { #"{"n":\#($0)}"# })
        #expect(store.refused == 5, "the retries were refused as well, and retried again")
        #expect(rig.fixture.onLoop { log.backlogCount } == 0)
    }

    /// `EventLog.maximumBacklog`: while the store refuses every append, at most 10,000 events
    /// wait; each one beyond drops the oldest, logged as an error; once the store takes appends
    /// again, the 10,000 newest land under their own ids, in order.
    @Test func atMostTenThousandRefusedEventsWaitAndTheOldestGo() throws {
        let captured = CapturedLog()
        let rig = try RefusingLog(refusals: .max, logger: captured.logger())
        defer { rig.stop() }
        let (store, log, path, fixture) = (rig.store, rig.log, rig.path, rig.fixture)
        let bound = EventLog.maximumBacklog
        #expect(bound == 10_000)
        let published = bound + 5
        rig.publish(1...published)
        let dropped = {
            captured.entries.filter { $0.level == .error && $0.message.contains("the backlog waiting for the store is full") }
                .map { "\($0.metadata["event_id"] ?? "?")" }
        }
        #expect(eventually(within: 60) { dropped().count == 5 })
        #expect(dropped() == ["1", "2", "3", "4", "5"], "the oldest go, each logged with its id")
        #expect(fixture.onLoop { log.backlogCount } <= bound)

        store.stopRefusing()
        let reader = try StoreReader(path: path)
        #expect(eventually(within: 60) { (try? reader.events(after: 0, limit: bound + 10).count) == bound })
        let logged = try reader.events(after: 0, limit: bound + 10)
        let inOrder = logged.map(\.id) == Array(6...Int64(published))
        #expect(inOrder, "the newest 10,000, each under its own id, in order: got \(logged.count), ids \(logged.first?.id ?? 0)…\(logged.last?.id ?? 0)")
        #expect(logged.last?.json == #"{"n":\#(published)}"#)
        #expect(eventually(within: 30) { fixture.onLoop { log.backlogCount } == 0 })
        #expect(dropped().count == 5, "nothing dropped while the backlog was appended again")
    }
}

/// A broadcaster on its own loop whose events are logged to a store that refuses appends
/// (`EventLogTests.RefusingStore`), in a database file removed by `stop`.
final class RefusingLog: @unchecked Sendable {
    let directory: URL
    let path: String
    let fixture: APIFixture
    let store: EventLogTests.RefusingStore
    let broadcaster: EventBroadcaster
    let log: EventLog

    init(refusals: Int, logger: Logger = Logger(label: "event-log-test") { _ in SwiftLogNoOpLogHandler() }) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("packd-event-log-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let path = directory.appendingPathComponent("packd.sqlite").path
        self.path = path
        nonisolated(unsafe) var made: (EventLogTests.RefusingStore, EventBroadcaster, EventLog)?
        fixture = try APIFixture { _, loop in
            let store = EventLogTests.RefusingStore(
                try! SQLiteStore(path: path, loop: loop, configuration: .init(maximumBatchDelay: .milliseconds(5))), refusals: refusals)
            let log = EventLog(store: store, loop: loop, clock: .fixed(1_800_000_000), logger: logger)
            made = (store, EventBroadcaster(loop: loop, delivery: LocalEventDelivery(log: log)), log)
        }
        (store, broadcaster, log) = made!
    }

    /// `state` events of pack 7 with payloads `{"n":…}`, in one loop turn.
    func publish(_ numbers: ClosedRange<Int>) {
        let broadcaster = broadcaster
        fixture.onLoop {
            for index in numbers { broadcaster.publish(.state, packID: 7, payload: Array(#"{"n":\#(index)}"#.utf8)) }
        }
    }

    func stop() {
        let (log, broadcaster) = (log, broadcaster)
        fixture.onLoop { log.close(); broadcaster.close() }
        fixture.stop()
        store.close()
        try? FileManager.default.removeItem(at: directory)
    }
}
