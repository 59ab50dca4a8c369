import Foundation
import Loop
import Packs
import Postgres
import PostgresStore
import Testing

/// Cluster mode's per-pack change marks across nodes: a node's commits name the packs they
/// changed (`CommitChannel`, `node:ids`), so another node's cached documents of other packs stay
/// valid while one pack downloads — and activation, which no writer makes, names its packs too.
@Suite struct ClusterChangeMarksTests {
    @Test func anotherNodesCommitsMoveOnlyThePacksTheyChanged() throws {
        let database = try ClusterDatabase("marks")
        let thread = try LoopThread(name: "marks")
        let writing = try PostgresStore(url: database.url, loop: thread.loop, nodeName: "writing")
        let watching = try PostgresStore(url: database.url, loop: thread.loop, nodeName: "watching")
        let listener = IgnoredActivity()
        let notifications = try thread.sync { ClusterNotifications(store: watching, loop: thread.loop, lastEventID: 0,
                                                                                  events: listener, activity: listener) }
        defer {
            withExtendedLifetime(listener) {}
            try? thread.sync {
                notifications.close()
                writing.close()
                watching.close()
            }
            thread.shutdown()
        }
        let fence = try write(writing, thread) { try $0.createPack(Self.pack("fence"), now: 1) }
        let before = watching.documentChanges(of: fence)
        try thread.sync { notifications.start() }
        // Connected (and listening): what it may have missed moved every pack.
        #expect(Self.waitUntil { watching.documentChanges(of: fence) != before })

        let downloading = try write(writing, thread) { try $0.createPack(Self.pack("downloading"), now: 1) }
        let idle = try write(writing, thread) { try $0.createPack(Self.pack("idle"), now: 1) }
        let queued = try write(writing, thread) { try $0.createPack(Self.pack("queued", state: .queued), now: 1) }
        var fences = 0
        /// A commit of the fence pack alone, heard: everything committed before it was heard too
        /// (one node's notifications arrive in commit order).
        func passFence() throws {
            let seen = watching.documentChanges(of: fence)
            fences += 1
            let name = "fence \(fences)"
            _ = try write(writing, thread) { try $0.updatePack(fence, name: name, context: nil, now: 2) }
            #expect(Self.waitUntil { watching.documentChanges(of: fence) != seen })
        }
        try passFence()
        let marks = { [downloading, idle, queued].map { watching.documentChanges(of: $0) } }
        var last = marks()
        func moved() -> [Bool] {
            let now = marks()
            defer { last = now }
            return zip(last, now).map { $0 != $1 }
        }

        // One pack's download on the other node: that pack moves here, the others stay put.
        let tiles = (0..<20).map { x in
            ResourceWrite(key: .tile(TileKey(urlTemplate: "https://t/{z}/{x}/{y}.pbf", z: 6, x: Int64(x), y: 1)),
                          content: .body(StoredBody(data: Array(repeating: UInt8(x), count: 200), compressed: false)),
                          packID: downloading)
        }
        try thread.sync { writing.submit(tiles) }
        let flushed = DispatchSemaphore(value: 0)
        try thread.sync { writing.flush { flushed.signal() } }
        #expect(flushed.wait(timeout: .now() + 60) == .success)
        try passFence()
        #expect(moved() == [true, false, false])

        // Activation (made on a coordination connection, no writer's) names the packs it started.
        let connection = try database.connect()
        #expect(try PackActivation.activate(limit: 10, now: 3, on: connection) == [queued])
        try passFence()
        #expect(moved() == [false, false, true])

        // More packs in one commit than a notification can name (8000 bytes): it commits all the
        // same, and every node moves every pack.
        let many = try write(writing, thread) { writer in try (0..<1_700).map { try writer.createPack(Self.pack("many \($0)"), now: 4) } }
        #expect(many.count == 1_700)
        try passFence()
        #expect(moved() == [true, true, true])
    }

    static func pack(_ name: String, state: PackState = .inactive) -> PackRecord {
        PackRecord(name: name, state: state, definition: "{}")
    }

    /// `operation` on `store`'s writer, waited for.
    private func write<T: Sendable>(_ store: PostgresStore, _ thread: LoopThread,
                                    _ operation: @escaping @Sendable (any StoreWriting) throws -> T) throws -> T {
        let done = DispatchSemaphore(value: 0)
        let box = Box<T>()
        try thread.sync {
            store.write(operation) { result in
                box.result = result
                done.signal()
            }
        }
        guard done.wait(timeout: .now() + 60) == .success, let result = box.result else { throw Timeout() }
        return try result.get()
    }

    /// Waits (up to 30 s) for a condition another thread makes true.
    static func waitUntil(_ condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(30)
        let tick = DispatchSemaphore(value: 0)
        while !condition() {
            if Date() > deadline { return false }
            _ = tick.wait(timeout: .now() + .milliseconds(5))
        }
        return true
    }

    private struct Timeout: Error {}

    private final class Box<T>: @unchecked Sendable {
        var result: Result<T, any Error>?
    }
}

/// The marks are what this suite watches; the events and activity notifications go nowhere.
private final class IgnoredActivity: StoredEventListener, ClusterActivityListener {
    func eventsCommitted(_ events: [StoredEvent]) {}
    func otherNodeActed() {}
}
