import Foundation
import Logging
import Loop
import Packs
import PackdTestSupport
import Postgres
import PostgresStore
import PostgresTestSupport
import Server
import Testing
@testable import API
@testable import Events

/// Issue 30: a client that reconnects to a cluster node with a `Last-Event-ID` — far behind the
/// replay window or within it — gets the pack's current state and the newest id, even from a
/// node that has not yet delivered the other nodes' events (its `LISTEN` connection behind).
/// The gap is made, not waited for: node C's notifications start only when the test says.
@Suite(.serialized) struct StoreNumberedResumeTests {
    /// Node C: the API on its own PostgreSQL store, events numbered by the store, its
    /// `ClusterNotifications` made but not started.
    final class NodeC: @unchecked Sendable {
        let fixture: APIFixture
        private(set) var api: PackdAPI!
        private(set) var notifications: ClusterNotifications!
        private(set) var store: PostgresStore!
        /// The notifications' activity listener (held weakly there): the node's own, so it is freed
        /// with the node — a weak reference to an object alive at exit is a LeakSanitizer report.
        private let activity = Unused()

        init(url: PostgresURL) throws {
            nonisolated(unsafe) var made: (PackdAPI, ClusterNotifications, PostgresStore)?
            nonisolated(unsafe) let activity = activity
            fixture = try APIFixture { router, loop in
                let logger = Logger(label: "node-c") { _ in SwiftLogNoOpLogHandler() }
                let store = try! PostgresStore(url: url, loop: loop, nodeName: "c")
                let routes = APIRouteBuilder(authenticator: APIKeyAuthenticator(), cors: .disabled, metrics: PackdMetrics())
                // No heartbeats: a stream that waits for an event that never comes times out (30 s).
                let events = try! PackEventPublisher(store: store, loop: loop, numbering: .store, configuration: .init(heartbeatInterval: 0),
                                                     metrics: routes.metrics.events, logger: logger)
                let api = PackdAPI(store: store, loop: loop, events: events, scheduling: nil, routes: routes, logger: logger)
                api.register(in: &router)
                let notifications = ClusterNotifications(store: store, loop: loop, lastEventID: events.streams.lastEventID,
                                                         events: events, activity: activity, pollInterval: 60_000)
                made = (api, notifications, store)
            }
            (api, notifications, store) = made!
        }

        /// The node hears the others from now on (it reads the events it has not delivered).
        func catchUp() {
            let notifications = notifications!
            fixture.onLoop { notifications.start() }
        }

        var delivered: Int64 {
            let api = api!
            return fixture.onLoop { api.events.streams.lastEventID }
        }

        func stop() {
            let (api, notifications, store) = (api!, notifications!, store!)
            fixture.onLoop {
                notifications.close()
                api.close()
            }
            fixture.stop()
            store.close()
        }

        final class Unused: ClusterActivityListener, @unchecked Sendable {
            func otherNodeActed() {}
            func sharesChanged() {}
        }
    }

    /// Node A: writes through a store of its own, as another node's download does.
    final class NodeA: @unchecked Sendable {
        let thread: LoopThread
        let store: PostgresStore

        init(url: PostgresURL) throws {
            thread = try LoopThread(name: "node-a")
            store = try PostgresStore(url: url, loop: thread.loop, nodeName: "a")
        }

        func write<T: Sendable>(_ operation: @escaping @Sendable (any StoreWriting) throws -> T) throws -> T {
            let done = DispatchSemaphore(value: 0)
            nonisolated(unsafe) var outcome: Result<T, any Error>?
            let store = store
            try thread.sync { store.write(operation) { outcome = $0; done.signal() } }
            guard done.wait(timeout: .now() + 60) == .success else { throw TimedOut() }
            return try outcome!.get()
        }

        /// Appends events (numbered by the store) and waits until they are committed.
        func log(_ events: [(type: String, json: String)], pack: Int64) throws {
            let done = DispatchSemaphore(value: 0)
            let store = store
            try thread.sync {
                for event in events {
                    store.logEvent(StoredEvent(id: 0, packID: pack, type: event.type, json: event.json, createdAt: 1_800_000_000)) { _ in }
                }
                store.flush { done.signal() }
            }
            guard done.wait(timeout: .now() + 60) == .success else { throw TimedOut() }
        }

        func newestEventID() throws -> Int64 {
            let done = DispatchSemaphore(value: 0)
            nonisolated(unsafe) var outcome: Result<Int64, any Error>?
            let store = store
            try thread.sync { store.read({ try $0.lastEventID() }) { outcome = $0; done.signal() } }
            guard done.wait(timeout: .now() + 60) == .success else { throw TimedOut() }
            return try outcome!.get()
        }

        func stop() {
            let store = store
            try? thread.sync { store.close() }
            thread.shutdown()
        }

        struct TimedOut: Error {}
    }

    static func progress(_ pack: Int64, completed: Int, state: String) -> (type: String, json: String) {
        ("progress", #"{"pack_id":\#(pack),"state":"\#(state)","progress":{"completed_resources":\#(completed)}}"#)
    }

    @Test func aReconnectFromAnyIDGetsTheCurrentStateAndTheNewestID() throws {
        let url = try TemporaryPostgres.shared().makeDatabase(prefix: "resume")
        defer { try? TemporaryPostgres.shared().dropDatabase(url) }
        let c = try NodeC(url: url)
        defer { c.stop() }
        let a = try NodeA(url: url)
        defer { a.stop() }

        // Node A downloads a pack: more progress events than any replay holds, then `complete`.
        let definition = #"{"tiles":["https://t.example.org/{z}/{x}/{y}.png"],"scheme":"xyz","tile_size":256,"min_zoom":0.0,"max_zoom":1.0,"pixel_ratio":1.0,"include_ideographs":true,"bounds":[-85.0,-180.0,85.0,180.0]}"#
        let pack = try a.write { try $0.createPack(PackRecord(name: "far", state: .active, definition: definition), now: 1_800_000_000) }
        let behind = EventRoutes.maximumStoredReplay + 200
        try a.log((1...behind).map { Self.progress(pack, completed: $0, state: "active") }, pack: pack)
        let finished = try a.write { try $0.transition(pack, .finished(failedResources: 0), now: 1_800_000_001) }
        guard case .applied(let transition) = finished, transition.to == .complete else {
            Issue.record("the pack did not complete: \(finished)")
            return
        }
        try a.log([("state", #"{"pack_id":\#(pack),"state":"complete","previous_state":"active","error":null}"#)], pack: pack)
        let newest = try a.newestEventID()
        #expect(c.delivered < newest - Int64(behind), "node C has delivered none of it")

        // Far behind: the snapshot says `complete`, under the newest id.
        let far = try StreamClient(port: c.fixture.port)
        try far.get("/v1/events", headers: ["Last-Event-ID": String(newest - Int64(behind) - 1)])
        #expect(far.status == 200)
        let snapshot = try #require(try far.nextEvent())
        #expect(snapshot.type == "progress" && snapshot.id == newest, "\(snapshot)")
        #expect(snapshot.data.contains(#""state":"complete""#), "\(snapshot)")
        // Within the window: exactly what was missed, ending at the newest id in state `complete`.
        let near = try StreamClient(port: c.fixture.port)
        try near.get("/v1/events", headers: ["Last-Event-ID": String(newest - 3)])
        let replayed = try near.events { $0.id == newest }
        #expect(replayed.map(\.id) == [newest - 2, newest - 1, newest])
        #expect(replayed.last?.type == "state" && replayed.last?.data.contains(#""state":"complete""#) == true)
        // A pack's stream without Last-Event-ID starts from the same truth.
        let fresh = try StreamClient(port: c.fixture.port)
        try fresh.get("/v1/packs/\(pack)/events")
        let start = try #require(try fresh.nextEvent())
        #expect(start.id == newest && start.data.contains(#""state":"complete""#), "\(start)")

        // Node C now reads every event it had not delivered: none of the old ones reaches these
        // clients again; the next event any node commits does.
        c.catchUp()
        #expect(eventually(within: 60) { c.delivered == newest })
        try a.log([Self.progress(pack, completed: behind + 1, state: "complete")], pack: pack)
        for client in [far, near, fresh] {
            let next = try #require(try client.nextEvent())
            #expect(next.id == newest + 1, "\(next)")
        }
    }
}
