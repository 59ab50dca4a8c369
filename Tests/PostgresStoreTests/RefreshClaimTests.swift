import Foundation
import Jobs
import Loop
import PackdTestSupport
import Packs
import PostgresStore
import PostgresTestSupport
import Testing

/// Cluster mode's scheduled refresh: every node runs a `PackRefresher` over the shared database,
/// and each due refresh is claimed by exactly one of them.
@Suite(.serialized) struct RefreshClaimTests {
    /// What a node's scheduler was asked to run.
    final class QueuedPacks: PackScheduling, @unchecked Sendable {
        private let lock = NSLock()
        private var ids: [Int64] = []
        var values: [Int64] { lock.withLock { ids } }
        func packQueued(_ packID: Int64) { lock.withLock { ids.append(packID) } }
        func packSuspended(_ packID: Int64) {}
        func packRemoved(_ packID: Int64) {}
    }

    @Test func twoNodesClaimEachDueRefreshExactlyOnce() throws {
        let url = try TemporaryPostgres.shared().makeDatabase(prefix: "refresh")
        defer { try? TemporaryPostgres.shared().dropDatabase(url) }
        let now: Int64 = 2_000_000_000
        let nodes = try (0..<2).map { index in try LoopThread(name: "node-\(index)") }
        defer { for node in nodes { node.shutdown() } }
        let stores = try nodes.enumerated().map { index, node in
            try PostgresStore(url: url, loop: node.loop, nodeName: "node-\(index)", clock: .fixed(now))
        }
        defer { for store in stores { store.close() } }
        let first = stores[0]
        var packs: [Int64] = []
        for index in 0..<24 {
            let id = try blocking(on: nodes[0]) { done in
                first.write({ database -> Int64 in
                    let id = try database.createPack(PackRecord(name: "due \(index)", state: .queued, definition: "{}"), now: 1)
                    _ = try database.transition(id, .start, now: 1)
                    _ = try database.transition(id, .finished(failedResources: 0), now: 1)
                    try database.setRefresh(id, every: "P1D", next: now - Int64(index), now: 1)
                    return id
                }, then: done)
            }
            packs.append(id)
        }
        let queued = nodes.map { _ in QueuedPacks() }
        let refreshers = try nodes.indices.map { index in
            try nodes[index].sync {
                PackRefresher(loop: nodes[index].loop, store: stores[index], clock: .fixed(now),
                              pollInterval: .milliseconds(20), listener: nil, scheduling: queued[index])
            }
        }
        for index in nodes.indices { try nodes[index].sync { refreshers[index].start() } }
        defer { for index in nodes.indices { try? nodes[index].sync { refreshers[index].shutdown() } } }

        #expect(eventually { queued.map(\.values.count).reduce(0, +) >= packs.count })
        let (a, b) = (queued[0].values, queued[1].values)
        #expect((a + b).sorted() == packs, "every due refresh ran, none twice")
        #expect(Set(a).isDisjoint(with: b), "never on both nodes")
        let ids = packs
        let states = try blocking(on: nodes[1]) { done in
            stores[1].read({ reader in try ids.map { try reader.pack($0) } }, then: done)
        }
        #expect(states.allSatisfy { $0?.state == .queued && ($0?.nextRefreshAt ?? 0) >= now + 86_400 })
    }
}
