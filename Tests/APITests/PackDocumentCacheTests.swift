import Foundation
import PackdTestSupport
import Packs
import Store
import Testing
@testable import API
@testable import Events

/// `GET /v1/packs/{id}` answered from the loop's cache of rendered packs: never staler than the
/// store, whoever wrote it, and bounded.
@Suite struct PackDocumentCacheTests {
    /// Runs `operation` on the writer and waits for it (as the scheduler writes, without telling the API).
    private func write(_ server: RoutesFixture, _ operation: @escaping @Sendable (OfflineDatabase) throws -> Void) {
        let done = DispatchSemaphore(value: 0)
        server.writer.perform({ database in try operation(database) }, completion: { _ in done.signal() })
        done.wait()
    }

    private func cachedCount(_ server: RoutesFixture) -> Int {
        nonisolated(unsafe) let api = server.api!
        return server.server.onLoop { api.packs.reads.documents.count }
    }

    @Test func committedProgressIsServedWithANewETag() throws {
        try RoutesFixture.using { server throws in
            let id = try #require(try server.send("POST", "/v1/packs", json: #"{"region": \#(RoutesFixture.templateRegion()), "start": false}"#).json["id"] as? Int)
            let first = try server.send("GET", "/v1/packs/\(id)")
            let oldTag = try #require(first.header("ETag"))
            #expect(cachedCount(server) == 1)
            #expect(try server.send("GET", "/v1/packs/\(id)", headers: ["If-None-Match": oldTag]).status == 304)

            // A tile linked to the pack, committed by the writer alone: no hook tells the API.
            let template = "https://tiles.example.org/{z}/{x}/{y}.png"
            let packID = Int64(id)
            write(server) { database in
                _ = database.apply([ResourceWrite(key: .tile(TileKey(urlTemplate: template, z: 0, x: 0, y: 0)),
                                                  content: .body(StoredBody(data: Array(repeating: 7, count: 300), compressed: false)),
                                                  packID: packID)], now: 1)
            }
            let changed = try server.send("GET", "/v1/packs/\(id)", headers: ["If-None-Match": oldTag])
            #expect(changed.status == 200)
            #expect((changed.json["progress"] as? [String: Any])?["completed_resources"] as? Int == 1)
            let newTag = try #require(changed.header("ETag"))
            #expect(newTag != oldTag)
            #expect(try server.send("GET", "/v1/packs/\(id)", headers: ["If-None-Match": newTag]).status == 304)
            #expect(try server.send("GET", "/v1/packs/\(id)", headers: ["If-None-Match": oldTag]).status == 200)
        }
    }

    @Test func stateChangesEditsAndRemovalsAreNeverServedStale() throws {
        try RoutesFixture.using { server throws in
            let id = try #require(try server.send("POST", "/v1/packs", json: #"{"region": \#(RoutesFixture.templateRegion()), "start": false}"#).json["id"] as? Int)
            #expect(try server.send("GET", "/v1/packs/\(id)").json["state"] as? String == "inactive")

            // A state the scheduler writes straight to the store.
            let packID = Int64(id)
            write(server) { try $0.setPackState(packID, state: .active, error: nil, now: 2) }
            #expect(try server.send("GET", "/v1/packs/\(id)").json["state"] as? String == "active")

            #expect(try server.send("POST", "/v1/packs/\(id)/suspend").status == 200)
            #expect(try server.send("GET", "/v1/packs/\(id)").json["state"] as? String == "inactive")
            #expect(try server.send("POST", "/v1/packs/\(id)/resume").status == 200)
            #expect(try server.send("GET", "/v1/packs/\(id)").json["state"] as? String == "queued")

            #expect(try server.send("PATCH", "/v1/packs/\(id)", json: #"{"name": "renamed"}"#).status == 200)
            #expect(try server.send("GET", "/v1/packs/\(id)").json["name"] as? String == "renamed")

            #expect(try server.send("DELETE", "/v1/packs/\(id)").status == 204)
            #expect(try server.send("GET", "/v1/packs/\(id)").status == 404)

            let other = try #require(try server.send("POST", "/v1/packs", json: #"{"region": \#(RoutesFixture.templateRegion()), "start": false}"#).json["id"] as? Int)
            #expect(try server.send("GET", "/v1/packs/\(other)").status == 200)
            #expect(try server.send("GET", "/v1/packs/\(other)").status == 200)
            #expect(try server.send("POST", "/v1/storage/reset", json: #"{"confirm": "reset"}"#).status == 204)
            #expect(try server.send("GET", "/v1/packs/\(other)").status == 404)
        }
    }

    /// What the per-pack tags are for: a download's commits (batches of another pack's rows)
    /// leave an idle pack's cached document valid, while everything that changes a pack's rows in
    /// a batch — its own tiles, a tile it shares rewritten by another pack, an operation riding
    /// the batch — still reaches its next poll.
    @Test func anotherPacksDownloadLeavesAPackCachedAndItsOwnChangesDoNot() throws {
        try RoutesFixture.using { server throws in
            let create = #"{"region": \#(RoutesFixture.templateRegion()), "start": false}"#
            let downloading = Int64(try #require(try server.send("POST", "/v1/packs", json: create).json["id"] as? Int))
            let idle = Int64(try #require(try server.send("POST", "/v1/packs", json: create).json["id"] as? Int))
            let idleTag = try #require(try server.send("GET", "/v1/packs/\(idle)").header("ETag"))
            nonisolated(unsafe) let api = server.api!
            let store = server.api.packs.store
            let cached = {
                server.server.onLoop {
                    api.packs.reads.documents.entry(idle, current: api.packs.reads.documents.tag(idle, storeChanges: store.documentChanges(of: idle))) != nil
                }
            }
            #expect(cached())

            func tile(_ x: Int64, size: Int, pack: Int64) -> ResourceWrite {
                ResourceWrite(key: .tile(TileKey(urlTemplate: "https://tiles.example.org/{z}/{x}/{y}.png", z: 4, x: x, y: 0)),
                              content: .body(StoredBody(data: Array(repeating: UInt8(truncatingIfNeeded: size), count: size), compressed: false)),
                              packID: pack)
            }
            func commit(_ writes: [ResourceWrite]) {
                let done = DispatchSemaphore(value: 0)
                server.writer.submit(contentsOf: writes)
                server.writer.flush { done.signal() }
                done.wait()
            }
            commit((0..<20).map { tile($0, size: 300, pack: downloading) })
            #expect(cached())
            #expect(try server.send("GET", "/v1/packs/\(idle)", headers: ["If-None-Match": idleTag]).status == 304)
            let progress = try server.send("GET", "/v1/packs/\(downloading)").json["progress"] as? [String: Any]
            #expect(progress?["completed_tiles"] as? Int == 20)

            // The idle pack links tile 0, then the downloading pack stores tile 0 again, larger:
            // the idle pack's bytes change though its download wrote nothing.
            commit([tile(0, size: 300, pack: idle)])
            let linked = try server.send("GET", "/v1/packs/\(idle)", headers: ["If-None-Match": idleTag])
            #expect(linked.status == 200)
            #expect((linked.json["progress"] as? [String: Any])?["completed_tile_bytes"] as? Int == 300)
            _ = try server.send("GET", "/v1/packs/\(idle)")
            #expect(cached())
            commit([tile(0, size: 700, pack: downloading)])
            #expect(try server.send("GET", "/v1/packs/\(idle)").json["progress"].flatMap { ($0 as? [String: Any])?["completed_tile_bytes"] as? Int } == 700)

            // A state change riding a batch, as the scheduler makes them.
            let applied = DispatchSemaphore(value: 0)
            server.writer.inBatch(.init(apply: { database in try? database.setPackState(idle, state: .queued, error: nil, now: 9) },
                                        finish: { _ in applied.signal() }))
            commit([tile(1, size: 300, pack: downloading)])
            applied.wait()
            #expect(try server.send("GET", "/v1/packs/\(idle)").json["state"] as? String == "queued")
        }
    }

    @Test func aRecordedRateIsServedAtOnce() throws {
        try RoutesFixture.using { server throws in
            let id = try #require(try server.send("POST", "/v1/packs", json: #"{"region": \#(RoutesFixture.templateRegion()), "start": false}"#).json["id"] as? Int)
            let packID = Int64(id)
            write(server) { try $0.setPackState(packID, state: .active, error: nil, now: 1) }
            nonisolated(unsafe) let api = server.api!
            let clock = SettableSeconds()
            server.server.onLoop { api.events.seconds = { clock.now } }
            let before = try server.send("GET", "/v1/packs/\(id)")
            #expect((before.json["progress"] as? [String: Any])?["bytes_per_second"] is NSNull)
            // Rates live on the loop: no store write moves the tag, the recorded samples must.
            server.server.onLoop {
                api.events.progressCommitted(packID, StoredProgress(completedResources: 1, completedBytes: 0), expected: ExpectedCounts(resources: 5, tiles: 0, precise: true))
            }
            clock.now = 2
            server.server.onLoop {
                api.events.progressCommitted(packID, StoredProgress(completedResources: 3, completedBytes: 4000), expected: ExpectedCounts(resources: 5, tiles: 0, precise: true))
            }
            let after = try server.send("GET", "/v1/packs/\(id)", headers: ["If-None-Match": try #require(before.header("ETag"))])
            #expect(after.status == 200)
            #expect((after.json["progress"] as? [String: Any])?["bytes_per_second"] as? Int == 2000)
        }
    }

    @Test func boundedByCountAndBytes() {
        let tag = PackDocumentCache.Tag(store: 1, local: 0)
        let byCount = PackDocumentCache(capacity: 2)
        for packID in Int64(1)...3 { byCount.fill(packID, body: [1], etag: "\"\(packID)\"", active: false, tag: tag, current: tag) }
        #expect(byCount.count == 2)
        #expect(byCount.entry(1, current: tag) == nil)
        #expect(byCount.entry(3, current: tag)?.etag == "\"3\"")

        let byBytes = PackDocumentCache(capacity: 100, maximumBytes: 16 * 1000)
        for packID in Int64(1)...20 { byBytes.fill(packID, body: Array(repeating: 0, count: 900), etag: "\"e\"", active: false, tag: tag, current: tag) }
        #expect(byBytes.bytes <= 16 * 1000)
        #expect(byBytes.count < 20 && byBytes.entry(20, current: tag) != nil)
        // One document too big for its share is served uncached.
        byBytes.fill(99, body: Array(repeating: 0, count: 2000), etag: "\"big\"", active: false, tag: tag, current: tag)
        #expect(byBytes.entry(99, current: tag) == nil)

        // An active pack refilled over and over (its entries expire) keeps the order in proportion.
        let refilled = PackDocumentCache(capacity: 2, activeLifetime: .zero)
        for _ in 0..<10_000 {
            refilled.fill(3, body: [2], etag: "\"3\"", active: true, tag: tag, current: tag)
            #expect(refilled.entry(3, current: tag) == nil)
        }
        #expect(refilled.orderSlots < 200)
    }

    @Test func racingFillsAreNeverKept() {
        let cache = PackDocumentCache()
        let old = PackDocumentCache.Tag(store: 1, local: 0)
        let moved = PackDocumentCache.Tag(store: 2, local: 0)
        // The store changed while the read ran: served once, not kept.
        cache.fill(1, body: [1], etag: "\"a\"", active: false, tag: old, current: moved)
        #expect(cache.entry(1, current: moved) == nil)

        // Two reads under one tag disagree: a commit landed between them. Neither is kept, nor a
        // later one still in flight under that tag.
        cache.fill(1, body: [1], etag: "\"a\"", active: false, tag: moved, current: moved)
        cache.fill(1, body: [2], etag: "\"b\"", active: false, tag: moved, current: moved)
        #expect(cache.entry(1, current: moved) == nil)
        cache.fill(1, body: [1], etag: "\"a\"", active: false, tag: moved, current: moved)
        #expect(cache.entry(1, current: moved) == nil)

        // An active pack's rate ages: its entry expires.
        let short = PackDocumentCache(activeLifetime: .zero)
        short.fill(1, body: [1], etag: "\"a\"", active: true, tag: old, current: old)
        #expect(short.entry(1, current: old) == nil)
        short.fill(2, body: [1], etag: "\"a\"", active: false, tag: old, current: old)
        #expect(short.entry(2, current: old) != nil)
        short.invalidate()
        #expect(short.entry(2, current: short.tag(2, storeChanges: 1)) == nil)
    }
}
