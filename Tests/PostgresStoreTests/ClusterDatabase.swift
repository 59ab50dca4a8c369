import Foundation
import Geo
import Packs
import Plan
import Postgres
import PostgresStore
import PostgresTestSupport
import WorkSharing

/// A migrated cluster database of its own on the test process's shared PostgreSQL, and ways to
/// fill it.
struct ClusterDatabase {
    let url: PostgresURL

    init(_ prefix: String = "cluster") throws {
        url = try TemporaryPostgres.shared().makeDatabase(prefix: prefix)
        let connection = try PostgresConnection(url: url)
        try PostgresSchemaMigrator().migrate(connection)
    }

    /// A new connection using packd's schema.
    func connect(_ name: String = "test") throws -> PostgresConnection {
        let connection = try PostgresConnection(url: url, applicationName: name)
        try PostgresSchemaMigrator.use(connection)
        return connection
    }

    /// A pack row (region, pack, progress) in state `state`; its id.
    @discardableResult
    func insertPack(_ name: String = "pack", state: String = PackState.inactive.rawValue,
                    on connection: PostgresConnection) throws -> Int64 {
        try connection.transaction {
            let id = try connection.query("INSERT INTO regions (definition) VALUES ('{}') RETURNING id").first!.int64(0)
            try connection.query("""
                INSERT INTO packd_packs (region_id, name, state, created_at, updated_at) VALUES ($1, $2, $3, 0, 0)
                """, [.int8(id), .text(name), .text(state)])
            try connection.query("INSERT INTO packd_progress (pack_id) VALUES ($1)", [.int8(id)])
            return id
        }
    }

    /// A pack cut into units: a box at `zooms`, `unitTiles` per unit.
    func insertCutPack(zooms: [Int], unitTiles: Int, on connection: PostgresConnection) throws -> (pack: Int64, cut: WorkUnitCut) {
        let pack = try insertPack(on: connection)
        let cut = WorkUnitCut(pyramids: [try WorkUnitCutFixtures.box(zooms: zooms)], unitTiles: unitTiles)
        try WorkUnitLeases.store(cut, pack: pack, on: connection)
        return (pack, cut)
    }

    func registerNode(_ name: String, on connection: PostgresConnection, timing: LeaseTiming = .standard) throws -> Int64 {
        try ClusterNodes(timing: timing).register(name: name, listenAddress: "127.0.0.1:0", version: "test", on: connection)
    }
}

enum WorkUnitCutFixtures {
    /// One pyramid over a box of about 70° × 70°.
    static func box(zooms: [Int]) throws -> TilePyramid {
        TilePyramid(sourceID: "t", template: try TileURLTemplate("http://127.0.0.1/{z}/{x}/{y}.pbf"), zooms: zooms,
                    area: .bounds(try LngLatBounds(west: -30, south: -20, east: 40, north: 50)), clip: nil, pixelRatio: 1)
    }
}

/// Runs `body` on `count` threads at once (each with its index) and waits for all; the first
/// error thrown is rethrown.
func concurrently(_ count: Int, _ body: @escaping @Sendable (Int) throws -> Void) throws {
    let group = DispatchGroup()
    let failure = FirstError()
    let start = DispatchSemaphore(value: 0)
    for index in 0..<count {
        group.enter()
        Thread {
            start.wait()
            do { try body(index) } catch { failure.record(error) }
            group.leave()
        }.start()
    }
    for _ in 0..<count { start.signal() }
    group.wait()
    if let error = failure.error { throw error }
}

final class FirstError: @unchecked Sendable {
    private let lock = NSLock()
    private(set) var error: Error?

    func record(_ error: Error) {
        lock.lock()
        defer { lock.unlock() }
        if self.error == nil { self.error = error }
    }
}

/// A flag one thread sets and others poll.
final class StopFlag: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false

    var isSet: Bool { lock.withLock { value } }

    func set() {
        lock.withLock { value = true }
    }
}
