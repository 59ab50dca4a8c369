import Foundation
import Geo
import Packs
import Postgres
import PostgresStore
import PostgresTestSupport
import Testing
import WorkSharing

/// Claims and leases against a real PostgreSQL with concurrent connections.
@Suite struct WorkUnitLeasesTests {
    let database: ClusterDatabase

    init() throws {
        database = try ClusterDatabase("leases")
    }

    @Test func storedUnitsMatchTheCut() throws {
        let connection = try database.connect()
        let (pack, cut) = try database.insertCutPack(zooms: [0, 3, 5, 6], unitTiles: 40, on: connection)
        let units = Array(cut)
        #expect(try connection.scalarInt("SELECT count(*) FROM packd_work_units WHERE pack_id = $1", [.int8(pack)])
            == Int64(units.count))
        #expect(try connection.scalarInt("SELECT sum(tiles)::int8 FROM packd_work_units WHERE pack_id = $1", [.int8(pack)])
            == Int64(cut.totalTiles))
        #expect(try connection.scalarInt("SELECT work_unit_tiles FROM packd_packs WHERE region_id = $1", [.int8(pack)]) == 40)
        // Read back through a claim, every unit is what was cut.
        let node = try database.registerNode("reader", on: connection)
        let claimed = try WorkUnitLeases(node: node).claim(pack: pack, limit: 10_000, on: connection)
        #expect(claimed.map(\.unit) == units)
        #expect(claimed.allSatisfy { $0.claims == 1 && $0.storedTiles == 0 && $0.pack == pack })
    }

    /// A `"glyphs": "region"` pack's glyph choice is claimed only once every other unit is done —
    /// even by a claimer asking for every unit — and the ranges it adds are ordinary units of
    /// fixed resources, claimable at once; the pack finishes with the last of them.
    @Test func aGlyphChoiceWaitsForEveryOtherUnitAndItsRangesBecomeUnits() throws {
        let connection = try database.connect()
        let pack = try database.insertPack(state: PackState.active.rawValue, on: connection)
        let cut = WorkUnitCut(pyramids: [try WorkUnitCutFixtures.box(zooms: [3, 4])], unitTiles: 40, fixedBeforeGlyphChoice: 5)
        try WorkUnitLeases.store(cut, pack: pack, on: connection)
        let units = Array(cut)
        #expect(units.first?.scope == .fixed(0...4) && units.last?.scope == .glyphChoice)
        let node = try database.registerNode("chooser", on: connection)
        let leases = WorkUnitLeases(node: node)
        let first = try leases.claim(pack: pack, limit: 10_000, on: connection)
        #expect(first.map(\.unit) == Array(units.dropLast()), "everything but the choice")
        for unit in first.dropLast() { #expect(try leases.complete(.init(pack: pack, ordinal: unit.unit.ordinal), on: connection)) }
        #expect(try leases.claim(pack: pack, limit: 10, on: connection).isEmpty, "one unit is not done yet")
        let last = try #require(first.last)
        #expect(try leases.complete(.init(pack: pack, ordinal: last.unit.ordinal), on: connection))
        let choice = try #require(try leases.claim(pack: pack, limit: 10, on: connection).first)
        #expect(choice.unit.scope == .glyphChoice)

        let store = try PostgresStoreConnection(url: database.url, node: node, applicationName: "chooser")
        let key = WorkUnitLeases.Key(pack: pack, ordinal: choice.unit.ordinal)
        let counts = ExpectedCounts(resources: 12, tiles: 5, precise: true)
        let skipped = SkippedGlyphRanges(ranges: 500, bytes: nil, rangesWithKnownBytes: 0)
        let outcome = try store.completeGlyphChoice(key, node: node, ranges: [7...8, 11...11], counts: counts, maxTiles: nil,
                                                    skipped: skipped, now: 1)
        #expect(outcome.chosen && outcome.finished == nil)
        #expect(try !store.completeGlyphChoice(key, node: node, ranges: [7...8], counts: counts, maxTiles: nil, skipped: skipped,
                                               now: 1).chosen, "made once")
        let ranges = try leases.claim(pack: pack, limit: 10, on: connection)
        #expect(ranges.map(\.unit.scope) == [.fixed(7...8), .fixed(11...11)])
        #expect(try store.completeUnit(.init(pack: pack, ordinal: ranges[0].unit.ordinal), node: node, now: 2) == nil)
        guard case .applied(let transition)? = try store.completeUnit(.init(pack: pack, ordinal: ranges[1].unit.ordinal), node: node, now: 2)
        else { Issue.record("the last range finishes the pack"); return }
        #expect(transition.to == .complete)
        #expect(try connection.scalarInt("SELECT expected_resources FROM packd_packs WHERE region_id = $1", [.int8(pack)]) == 12)
    }

    /// Two nodes cutting the same pack at once store one cut.
    @Test func aPackIsCutOnce() throws {
        let connection = try database.connect()
        let pack = try database.insertPack(on: connection)
        let cut = try WorkUnitCut(pyramids: [WorkUnitCutFixtures.box(zooms: [4, 6])], unitTiles: 10)
        let stored = Collected<Int>()
        try concurrently(3) { _ in
            let own = try database.connect()
            stored.append(contentsOf: [try WorkUnitLeases.store(cut, pack: pack, on: own)])
        }
        let count = Array(cut).count
        #expect(stored.all.sorted() == [0, 0, count])
        #expect(try connection.scalarInt("SELECT count(*) FROM packd_work_units WHERE pack_id = $1", [.int8(pack)]) == Int64(count))
    }

    /// Four nodes claim and finish units concurrently until none is left: every unit is
    /// claimed exactly once.
    @Test func concurrentClaimersNeverGetTheSameUnit() throws {
        let setup = try database.connect()
        let (pack, cut) = try database.insertCutPack(zooms: [3, 5, 6, 7, 8], unitTiles: 10, on: setup)
        let total = Array(cut).count
        #expect(total > 200)
        let claimed = Collected<WorkUnitLeases.Key>()
        try concurrently(4) { index in
            let connection = try database.connect("claimer-\(index)")
            let leases = WorkUnitLeases(node: try database.registerNode("node-\(index)", on: connection))
            while true {
                let units = try leases.claim(pack: pack, limit: 1 + index, on: connection)
                if units.isEmpty { break }
                let keys = units.map { WorkUnitLeases.Key(pack: $0.pack, ordinal: $0.unit.ordinal) }
                claimed.append(contentsOf: keys)
                for key in keys { #expect(try leases.complete(key, on: connection)) }
            }
        }
        let keys = claimed.all
        #expect(keys.count == total)
        #expect(Set(keys).count == total)
        #expect(try setup.scalarInt("SELECT count(*) FROM packd_work_units WHERE state = 'done' AND claims = 1") == Int64(total))
    }

    /// With a start area the fixed resources are claimed first, then the units nearest its centre
    /// (the distance `StartAreaClaimOrder` measures, computed by the claim's SQL): distances never
    /// decrease, every unit within the radius comes before any unit farther than twice it, and
    /// the order is not the ordinals'. Every unit is claimed once.
    @Test func unitsNearestTheStartAreaAreClaimedFirst() throws {
        let connection = try database.connect()
        let (pack, cut) = try database.insertCutPack(zooms: [3, 5, 6, 7, 8], unitTiles: 10, on: connection)
        // Inside the box (-30…40 E, -20…50 N), off its centre: the nearest units are not the first cut.
        let near = StartAreaClaimOrder(longitude: 25, latitude: 35, radiusMetres: 300_000)
        let leases = WorkUnitLeases(node: try database.registerNode("near", on: connection))
        var claimed: [WorkUnit] = []
        while let unit = try leases.claim(pack: pack, limit: 1, near: near, on: connection).first {
            claimed.append(unit.unit)
        }
        #expect(claimed.count == Array(cut).count && Set(claimed.map(\.ordinal)).count == claimed.count)
        #expect(claimed.first?.scope == .resources)
        let distances = claimed.map { near.distance(to: $0.scope) }
        #expect(zip(distances, distances.dropFirst()).allSatisfy { $0 <= $1 + 1e-6 }, "\(distances)")
        let lastNear = try #require(distances.lastIndex { $0 <= near.radiusMetres })
        let firstFar = try #require(distances.firstIndex { $0 > 2 * near.radiusMetres })
        #expect(lastNear < firstFar)
        #expect(distances.filter { $0 > 0 && $0 <= near.radiusMetres }.count >= 5, "windows within the radius: \(distances)")
        #expect(claimed.map(\.ordinal) != claimed.map(\.ordinal).sorted())
    }

    /// Cluster mode's `start_area_ready`: recorded once, when the last unit within the radius is
    /// done — not before (the check runs after every unit), not again — and, claimed nearest
    /// first, long before the pack is done.
    @Test func theStartAreaIsReadyOnceItsUnitsAreDone() throws {
        let connection = try database.connect()
        let (pack, _) = try database.insertCutPack(zooms: [3, 5, 6, 7, 8], unitTiles: 10, on: connection)
        let near = StartAreaClaimOrder(longitude: 25, latitude: 35, radiusMetres: 300_000)
        let node = try database.registerNode("ready", on: connection)
        let leases = WorkUnitLeases(node: node)
        let store = try PostgresStoreConnection(url: database.url, node: node, applicationName: "ready")
        var done: [WorkUnit] = []
        var readyAfter: [Int] = []
        while let unit = try leases.claim(pack: pack, limit: 1, near: near, on: connection).first {
            #expect(try leases.complete(.init(pack: pack, ordinal: unit.unit.ordinal), on: connection))
            done.append(unit.unit)
            if try store.recordStartAreaReadyIfNearUnitsDone(pack, near: near, now: 1_000 + Int64(done.count)) {
                readyAfter.append(done.count)
            }
        }
        let distances = done.map { near.distance(to: $0.scope) }
        let lastNear = try #require(distances.lastIndex { $0 >= 0 && $0 <= near.radiusMetres })
        #expect(readyAfter == [lastNear + 1], "recorded once, with the last unit within the radius")
        #expect(try connection.scalarInt("SELECT start_area_ready_at FROM packd_packs WHERE region_id = $1", [.int8(pack)])
            == 1_000 + Int64(lastNear + 1))
        #expect(lastNear + 1 < done.count / 4, "ready after \(lastNear + 1) of \(done.count) units")
    }

    /// Cut at claim time, a start area's claims still take every tile once, and the first claim
    /// of tiles beyond the low zooms holds tiles within the radius.
    @Test func claimsNearTheStartAreaCutAtClaimTimeTakeEveryTileOnce() throws {
        let setup = try database.connect()
        let pyramid = try WorkUnitCutFixtures.box(zooms: [3, 5, 6, 7, 8])
        let pack = try database.insertPack(on: setup)
        let cut = WorkUnitCut(pyramids: [pyramid], unitTiles: 512)
        try WorkUnitLeases.store(cut, pack: pack, on: setup)
        let near = StartAreaClaimOrder(longitude: 25, latitude: 35, radiusMetres: 300_000)
        let leases = WorkUnitLeases(node: try database.registerNode("near-cut", on: setup))
        var claimed: [WorkUnit] = []
        while let unit = try leases.claim(pack: pack, limit: 1, cut: .init(pyramids: [pyramid], sizing: ClaimSizing(floor: 16, ceiling: 512),
                                                                           slots: 8), near: near, on: setup).first {
            claimed.append(unit.unit)
        }
        var union: Set<TileID> = []
        for unit in claimed {
            let own = Set(pyramid.zooms.flatMap { pyramid.cover(zoom: $0).filter { unit.scope.contains(pyramid: 0, tile: $0) } })
            #expect(own.count == unit.tiles && union.isDisjoint(with: own), "\(unit)")
            union.formUnion(own)
        }
        #expect(union.count == cut.totalTiles)
        let firstWindow = try #require(claimed.first { if case .window = $0.scope { true } else { false } })
        #expect(near.distance(to: firstWindow.scope) <= near.radiusMetres, "\(firstWindow)")
    }

    /// Four nodes claim two units at a time with cuts at claim time until nothing is left: every
    /// tile of the pack is claimed exactly once, under unique keys; the first claims are the
    /// pack over the slots, the last ones small; every unit ends done.
    @Test func claimsCutAtClaimTimeTakeEveryTileOnce() throws {
        let setup = try database.connect()
        let pyramid = try WorkUnitCutFixtures.box(zooms: [3, 5, 6, 7, 8])
        let pack = try database.insertPack(on: setup)
        let cut = WorkUnitCut(pyramids: [pyramid], unitTiles: 4096)
        try WorkUnitLeases.store(cut, pack: pack, on: setup)
        let sizing = ClaimSizing(floor: 16, ceiling: 4096)
        let claimed = Collected<WorkUnitLeases.Claimed>()
        try concurrently(4) { index in
            let connection = try database.connect("claimer-\(index)")
            let leases = WorkUnitLeases(node: try database.registerNode("node-\(index)", on: connection))
            while true {
                let units = try leases.claim(pack: pack, limit: 2,
                                             cut: .init(pyramids: [pyramid], sizing: sizing, slots: 8), on: connection)
                if units.isEmpty { break }
                claimed.append(contentsOf: units)
                for unit in units { #expect(try leases.complete(.init(pack: pack, ordinal: unit.unit.ordinal), on: connection)) }
            }
        }
        let all = claimed.all
        #expect(Set(all.map(\.unit.ordinal)).count == all.count, "every claim has a key of its own")
        var union: Set<TileID> = []
        for unit in all {
            let own = Set(pyramid.zooms.flatMap { pyramid.cover(zoom: $0).filter { unit.unit.scope.contains(pyramid: 0, tile: $0) } })
            #expect(own.count == unit.unit.tiles, "\(unit.unit)")
            #expect(union.isDisjoint(with: own), "\(unit.unit) was claimed twice")
            union.formUnion(own)
        }
        #expect(union.count == cut.totalTiles && all.reduce(0) { $0 + $1.unit.tiles } == cut.totalTiles)
        #expect(all.count > 8, "cut for 8 slots: \(all.map(\.unit.tiles))")
        #expect(all.allSatisfy { $0.unit.tiles <= (cut.totalTiles + 7) / 8 || $0.unit.scope == .resources },
                "no claim takes more than the pack over the slots: \(all.map(\.unit.tiles))")
        #expect(all.contains { $0.unit.tiles <= 32 && $0.unit.tiles > 0 }, "the last claims are small: \(all.map(\.unit.tiles))")
        #expect(try setup.scalarInt("SELECT count(*) FROM packd_work_units WHERE pack_id = $1 AND state <> 'done'",
                                    [.int8(pack)]) == 0)
        #expect(try setup.scalarInt("SELECT count(*) FROM packd_work_units WHERE pack_id = $1", [.int8(pack)]) == Int64(all.count))
    }

    /// The fixed resources' unit is cut by position like a unit of tiles: two nodes claiming
    /// parts of 100 of 520 resources get every position once, through the database.
    @Test func theFixedResourcesAreClaimedInParts() throws {
        let connection = try database.connect()
        let pack = try database.insertPack(on: connection)
        try WorkUnitLeases.store(WorkUnitCut(pyramids: []), pack: pack, on: connection)
        let cut = WorkUnitLeases.ClaimCut(pyramids: [], fixedResources: 520, sizing: ClaimSizing(floor: 100, ceiling: 100), slots: 4)
        let a = WorkUnitLeases(node: try database.registerNode("a", on: connection))
        let b = WorkUnitLeases(node: try database.registerNode("b", on: connection))
        var positions: [Int] = []
        while true {
            let claimed = try a.claim(pack: pack, limit: 1, cut: cut, on: connection) + b.claim(pack: pack, limit: 1, cut: cut, on: connection)
            if claimed.isEmpty { break }
            for unit in claimed {
                guard case .fixed(let range) = unit.unit.scope else {
                    Issue.record("a part of the fixed resources is .fixed: \(unit.unit)")
                    return
                }
                #expect(range.count <= 120 && unit.unit.tiles == 0)
                positions += range
                let leases = unit.unit.ordinal % 2 == 0 ? [a, b] : [b, a]
                #expect(try leases.contains { try $0.complete(.init(pack: pack, ordinal: unit.unit.ordinal), on: connection) })
            }
        }
        #expect(positions.sorted() == Array(0..<520))
    }

    /// A unit whose node died is split when another node takes it over: the head is leased
    /// (a takeover: claimed twice), the rest stays claimable in its place, and the dead node's
    /// renewal and completion find nothing of it.
    @Test func anExpiredUnitIsSplitWhenTakenOver() throws {
        let connection = try database.connect()
        let pyramid = try WorkUnitCutFixtures.box(zooms: [7])
        let pack = try database.insertPack(on: connection)
        try WorkUnitLeases.store(WorkUnitCut(pyramids: [pyramid], unitTiles: 4096), pack: pack, on: connection)
        let dying = WorkUnitLeases(node: try database.registerNode("dying", on: connection))
        let survivor = WorkUnitLeases(node: try database.registerNode("survivor", on: connection))
        let lost = try dying.claim(pack: pack, limit: 2, on: connection)
        let big = try #require(lost.last)
        #expect(big.unit.tiles > 300)
        try connection.query("UPDATE packd_work_units SET lease_expires_at = now() - interval '1 second' WHERE lease_owner = $1",
                             [.int8(dying.node)])
        let cut = WorkUnitLeases.ClaimCut(pyramids: [pyramid], sizing: ClaimSizing(floor: 16, ceiling: 4096), slots: 2)
        let taken = try survivor.claim(pack: pack, limit: 2, cut: cut, on: connection)
        #expect(taken.map(\.unit.ordinal).first == big.unit.ordinal - 1, "the resources unit first, whole")
        let head = try #require(taken.last)
        #expect(head.claims == 2 && head.unit.ordinal > big.unit.ordinal && head.unit.tiles < big.unit.tiles)
        let rest = try connection.query("SELECT state, tiles, lease_owner FROM packd_work_units WHERE pack_id = $1 AND ordinal = $2",
                                        [.int8(pack), .int8(Int64(big.unit.ordinal))]).first
        #expect(try rest?.string(0) == "pending" && rest?.int64(1) == Int64(big.unit.tiles - head.unit.tiles))
        #expect(try rest?.int64OrNil(2) == nil)
        let keys = Set(lost.map { WorkUnitLeases.Key(pack: pack, ordinal: $0.unit.ordinal) })
        #expect(try dying.renew(keys, on: connection).isEmpty)
        for key in keys { #expect(try !dying.complete(key, on: connection)) }
    }

    /// A claimer never waits for units another transaction has locked: it takes others.
    @Test func lockedUnitsAreSkippedNotWaitedFor() throws {
        let first = try database.connect("first")
        let second = try database.connect("second")
        try second.execute("SET statement_timeout = '20s'")
        let (pack, _) = try database.insertCutPack(zooms: [7], unitTiles: 20, on: first)
        let a = WorkUnitLeases(node: try database.registerNode("a", on: first))
        let b = WorkUnitLeases(node: try database.registerNode("b", on: second))
        try first.transaction {
            let held = try a.claim(pack: pack, limit: 2, on: first)
            // Still uncommitted: the rows stay locked by `first` while `second` claims.
            let other = try b.claim(pack: pack, limit: 2, on: second)
            #expect(held.count == 2 && other.count == 2)
            #expect(Set(held.map(\.unit.ordinal)).isDisjoint(with: other.map(\.unit.ordinal)))
        }
    }

    /// A node dies: once its leases expire by the database's clock, another node claims its
    /// units (claims = 2); the dead node's renewal and completion find them gone.
    @Test func anExpiredLeaseIsReclaimed() throws {
        let connection = try database.connect()
        let (pack, _) = try database.insertCutPack(zooms: [7], unitTiles: 20, on: connection)
        let dying = WorkUnitLeases(node: try database.registerNode("dying", on: connection))
        let survivor = WorkUnitLeases(node: try database.registerNode("survivor", on: connection))
        let lost = try dying.claim(pack: pack, limit: 3, on: connection)
        let lostKeys = Set(lost.map { WorkUnitLeases.Key(pack: pack, ordinal: $0.unit.ordinal) })
        // Live leases are not claimable.
        let others = try survivor.claim(pack: pack, limit: 100, on: connection)
        #expect(Set(others.map(\.unit.ordinal)).isDisjoint(with: lost.map(\.unit.ordinal)))
        #expect(try survivor.claim(pack: pack, limit: 100, on: connection).isEmpty)

        // The dying node's last renewal was a minute ago.
        try connection.query("UPDATE packd_work_units SET lease_expires_at = now() - interval '1 minute' WHERE lease_owner = $1",
                             [.int8(dying.node)])
        try connection.query("UPDATE packd_work_units SET stored_tiles = 7 WHERE pack_id = $1 AND ordinal = $2",
                             [.int8(pack), .int8(Int64(lost[0].unit.ordinal))])
        let taken = try survivor.claim(pack: pack, limit: 100, on: connection)
        #expect(Set(taken.map(\.unit.ordinal)) == Set(lost.map(\.unit.ordinal)))
        #expect(taken.allSatisfy { $0.claims == 2 })
        #expect(taken.first { $0.unit.ordinal == lost[0].unit.ordinal }?.storedTiles == 7)

        // Back from its pause, the old owner learns it lost them and cannot finish them.
        #expect(try dying.renew(lostKeys, on: connection).isEmpty)
        for key in lostKeys { #expect(try !dying.complete(key, on: connection)) }
        for key in lostKeys { #expect(try survivor.complete(key, on: connection)) }
    }

    /// Renewal extends what the node still works on and gives back what it dropped.
    @Test func renewalExtendsHeldUnitsAndReleasesDroppedOnes() throws {
        let connection = try database.connect()
        let (pack, _) = try database.insertCutPack(zooms: [7], unitTiles: 20, on: connection)
        let leases = WorkUnitLeases(node: try database.registerNode("renewer", on: connection), timing: LeaseTiming(lease: 30))
        let claimed = try leases.claim(pack: pack, limit: 4, on: connection)
        let keys = claimed.map { WorkUnitLeases.Key(pack: pack, ordinal: $0.unit.ordinal) }
        // Pretend the leases are nearly out.
        try connection.query("UPDATE packd_work_units SET lease_expires_at = now() + interval '1 second' WHERE lease_owner = $1",
                             [.int8(leases.node)])
        let kept = try leases.renew(Set(keys.prefix(2)), on: connection)
        #expect(kept == Set(keys.prefix(2)))
        let remaining = try connection.query("""
            SELECT ordinal, extract(epoch FROM lease_expires_at - now())::float8 FROM packd_work_units
            WHERE lease_owner = $1 ORDER BY ordinal
            """, [.int8(leases.node)])
        #expect(try remaining.map { Int(try $0.int64(0)) } == keys.prefix(2).map(\.ordinal))
        #expect(try remaining.allSatisfy { try $0.doubleOrNil(1)! > 25 })
        #expect(try connection.scalarInt("SELECT count(*) FROM packd_work_units WHERE state = 'pending' AND ordinal = ANY($1)",
                                         [.int8Array(keys.suffix(2).map { Int64($0.ordinal) })]) == 2)
        // Renewing nothing releases everything.
        #expect(try leases.renew([], on: connection).isEmpty)
        #expect(try connection.scalarInt("SELECT count(*) FROM packd_work_units WHERE lease_owner = $1", [.int8(leases.node)]) == 0)
    }

    /// `GET /v1/cluster`'s snapshot: units by state per active pack, expired leases counted as
    /// pending; each node's held units counted the same way, so they sum to the leased ones; a
    /// node whose heartbeat expired but whose lease has not is still listed.
    @Test func theStatusSnapshotAddsUp() throws {
        let connection = try database.connect()
        let (pack, cut) = try database.insertCutPack(zooms: [7], unitTiles: 20, on: connection)
        let (other, _) = try database.insertCutPack(zooms: [3], unitTiles: 20, on: connection)
        let (inactive, _) = try database.insertCutPack(zooms: [3], unitTiles: 20, on: connection)
        try connection.query("UPDATE packd_packs SET state = $1 WHERE region_id = ANY($2)",
                             [.text(PackState.active.rawValue), .int8Array([pack, other])])
        let total = Array(cut).count
        let timing = LeaseTiming(lease: 30)
        let a = WorkUnitLeases(node: try database.registerNode("a", on: connection), timing: timing)
        let b = WorkUnitLeases(node: try database.registerNode("b", on: connection), timing: timing)
        let claimed = try a.claim(pack: pack, limit: 3, on: connection)
        _ = try b.claim(pack: pack, limit: 2, on: connection)
        _ = try b.claim(pack: other, limit: 1, on: connection)
        _ = try b.claim(pack: inactive, limit: 1, on: connection)
        #expect(try a.complete(.init(pack: pack, ordinal: claimed[0].unit.ordinal), on: connection))
        let reader = ClusterStatusReader(timing: timing)
        var status = try reader.read(on: connection)
        #expect(status.packs.map(\.id) == [pack, other])
        #expect(status.packs[0].units == .init(pending: total - 5, leased: 4, done: 1))
        #expect(status.nodes.map(\.unitsHeld) == [2, 3], "the inactive pack's unit is not counted")
        #expect(status.nodes.map(\.unitsHeld).reduce(0, +) == status.units.leased)
        #expect(status.units.leased == 5)

        // a's leases ran out: pending, and a holds none. b went silent, its leases still run: listed.
        try connection.query("UPDATE packd_work_units SET lease_expires_at = now() - interval '1 second' WHERE lease_owner = $1",
                             [.int8(a.node)])
        try connection.query("UPDATE packd_nodes SET heartbeat_at = now() - interval '1 minute' WHERE id = $1", [.int8(b.node)])
        status = try reader.read(on: connection)
        #expect(status.packs[0].units == .init(pending: total - 3, leased: 2, done: 1))
        #expect(status.nodes.map(\.id) == [a.node, b.node])
        #expect(status.nodes.map(\.unitsHeld) == [0, 3])
        #expect(status.nodes.map(\.unitsHeld).reduce(0, +) == status.units.leased)
    }

    @Test func storedTilesAddUp() throws {
        let connection = try database.connect()
        let (pack, _) = try database.insertCutPack(zooms: [7], unitTiles: 20, on: connection)
        let leases = WorkUnitLeases(node: try database.registerNode("writer", on: connection))
        let unit = try #require(try leases.claim(pack: pack, limit: 1, on: connection).first)
        let key = WorkUnitLeases.Key(pack: pack, ordinal: unit.unit.ordinal)
        try WorkUnitLeases.addStoredTiles(5, to: key, on: connection)
        try WorkUnitLeases.addStoredTiles(3, to: key, on: connection)
        #expect(try connection.scalarInt("SELECT stored_tiles FROM packd_work_units WHERE pack_id = $1 AND ordinal = $2",
                                         [.int8(pack), .int8(Int64(key.ordinal))]) == 8)
    }
}
