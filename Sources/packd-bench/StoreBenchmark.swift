import ArgumentParser
import CSQLite
import Foundation
import Packs
import Store

/// Writer throughput: tiles with incompressible 20 KiB bodies in batches of 256, through
/// `WriterThread` (body encoding, upserts, links, progress, one transaction per batch), beside a
/// bare loop of the same inserts through the sqlite3 C API on an identical database (same
/// schema, same pragmas) — so the ratio is the cost of packd's Swift layer and its lookups.
struct StoreBenchmark: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "store",
        abstract: "SQLite writer throughput vs a bare C-API loop of the same inserts.")

    @Option(help: "Tiles per run.") var rows = 20_000
    @Option(help: "Body size in bytes (random, incompressible).") var bodySize = 20 * 1024
    @Option(help: "Rows per batch / transaction.") var batch = 256
    @Option(help: "Alternating runs of each; the best of each is reported.") var rounds = 3
    @Option(help: "Directory for the temporary databases.") var directory = NSTemporaryDirectory()
    @Option(help: "SQLite page size of the new databases (both sides); default SQLite's 4096.") var pageSize: Int?

    func run() throws {
        guard rows > 0, bodySize > 0, batch > 0, rounds > 0 else { throw ValidationError("all counts must be positive") }
        // A pool of distinct random bodies: generating them is not what is measured.
        var generator = SystemRandomNumberGenerator()
        let bodies: [[UInt8]] = (0..<64).map { _ in
            var body = [UInt8](repeating: 0, count: bodySize)
            body.withUnsafeMutableBytes { raw in
                for offset in stride(from: 0, to: raw.count - 7, by: 8) { raw.storeBytes(of: generator.next(), toByteOffset: offset, as: UInt64.self) }
            }
            return body
        }
        var best = (packd: RunTime.worst, baseline: RunTime.worst)
        for round in 0..<rounds {
            // Alternate the order so neither side always runs on a warmer page cache.
            let order = round % 2 == 0 ? [false, true] : [true, false]
            for isBaseline in order {
                let path = directory + "/packd-bench-store-\(ProcessInfo.processInfo.processIdentifier)-\(round)-\(isBaseline ? "c" : "swift").db"
                defer { for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) } }
                let time = isBaseline ? try runBaseline(path: path, bodies: bodies) : try runPackd(path: path, bodies: bodies)
                let seconds = time.wall
                let fileSize = ["", "-wal"].reduce(0) { total, suffix in
                    total + ((try? FileManager.default.attributesOfItem(atPath: path + suffix)[.size] as? Int) ?? 0)
                }
                print(String(format: "round %d %-8@ %7.3f s (cpu %6.3f s)  %7.0f rows/s  %6.1f MB/s  file %.0f MB (%.2fx input)", round,
                             (isBaseline ? "C loop" : "packd") as NSString, seconds, time.cpu, Double(rows) / seconds,
                             Double(rows * bodySize) / seconds / 1e6, Double(fileSize) / 1e6, Double(fileSize) / Double(rows * bodySize)))
                if isBaseline { best.baseline = best.baseline.best(time) } else { best.packd = best.packd.best(time) }
            }
        }
        let packdRate = Double(rows) / best.packd.wall
        let baselineRate = Double(rows) / best.baseline.wall
        print(String(format: "packd:    %.0f rows/s, %.1f MB/s input", packdRate, packdRate * Double(bodySize) / 1e6))
        print(String(format: "C loop:   %.0f rows/s, %.1f MB/s input", baselineRate, baselineRate * Double(bodySize) / 1e6))
        print(String(format: "ratio:    %.1f %% of the C loop by wall time, %.1f %% by CPU time (target >= 80 %%); target >= 20000 rows/s",
                     100 * packdRate / baselineRate, 100 * best.baseline.cpu / best.packd.cpu))
    }

    private func key(_ index: Int) -> TileKey {
        TileKey(urlTemplate: "https://bench.test/{z}/{x}/{y}.png", z: 16, x: Int64(index % 4096), y: Int64(index / 4096))
    }

    private func runPackd(path: String, bodies: [[UInt8]]) throws -> RunTime {
        let done = DispatchSemaphore(value: 0)
        let writer = try WriterThread(path: path, configuration: .init(maximumBatchCount: batch, maximumBatchDelay: .milliseconds(50), pageSize: pageSize),
                                      onCommit: { if let error = $0.error { print("batch failed: \(error)") } })
        defer { writer.stop() }
        let packBox = PackIDBox()
        writer.perform({ try $0.createPack(PackRecord(name: "bench", state: .active, definition: "{}"), now: 1) },
                       completion: { packBox.id = (try? $0.get()) ?? 0; done.signal() })
        done.wait()
        let start = RunTime.Start()
        for index in 0..<rows {
            let body = try StoredBody.encoding(bodies[index % bodies.count])
            writer.submit(ResourceWrite(key: .tile(key(index)), content: .body(body), packID: packBox.id))
        }
        writer.flush { done.signal() }
        done.wait()
        let time = start.elapsed()
        let stored = try StoreReader(path: path).progress(packBox.id)?.completedTiles ?? 0
        guard stored == rows else { throw ValidationError("packd stored \(stored) of \(rows) tiles") }
        return time
    }

    /// The least a C program must do for the same rows: one INSERT per tile and one per link
    /// (bound and stepped directly, no lookups, ids from `sqlite3_last_insert_rowid`), one
    /// progress UPDATE and one COMMIT per batch. packd additionally looks rows up (updates keep
    /// ids stable), checks existing links, encodes bodies and hands them across threads.
    private func runBaseline(path: String, bodies: [[UInt8]]) throws -> RunTime {
        let database = try SchemaMigrator.openWriter(path: path, pageSize: pageSize) // same file setup, schema and pragmas
        let store = try OfflineDatabase(path: path)
        let pack = try store.createPack(PackRecord(name: "bench", state: .active, definition: "{}"), now: 1)
        let db = try openRaw(path)
        defer { sqlite3_close_v2(db) }
        func prepare(_ sql: String) -> OpaquePointer? {
            var statement: OpaquePointer?
            sqlite3_prepare_v3(db, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil)
            return statement
        }
        let insert = prepare("INSERT INTO tiles (url_template, pixel_ratio, x, y, z, modified, must_revalidate, etag, expires, accessed, data, compressed) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)")
        let link = prepare("INSERT INTO region_tiles (region_id, tile_id) VALUES (?1, ?2)")
        let progress = prepare("UPDATE packd_progress SET completed_tiles = completed_tiles + ?2, completed_tile_bytes = completed_tile_bytes + ?3, completed_resources = completed_resources + ?2, completed_bytes = completed_bytes + ?3 WHERE pack_id = ?1")
        defer { [insert, link, progress].forEach { sqlite3_finalize($0) } }
        let transient = packd_sqlite3_transient()
        let now: Int64 = 1

        let start = RunTime.Start()
        var index = 0
        while index < rows {
            sqlite3_exec(db, "BEGIN IMMEDIATE", nil, nil, nil)
            var linked: Int64 = 0
            var bytes: Int64 = 0
            for _ in 0..<min(batch, rows - index) {
                let tile = key(index)
                let body = bodies[index % bodies.count]
                sqlite3_bind_text(insert, 1, tile.urlTemplate, -1, transient)
                sqlite3_bind_int64(insert, 2, 1); sqlite3_bind_int64(insert, 3, tile.x)
                sqlite3_bind_int64(insert, 4, tile.y); sqlite3_bind_int64(insert, 5, tile.z)
                sqlite3_bind_null(insert, 6); sqlite3_bind_int64(insert, 7, 0)
                sqlite3_bind_null(insert, 8); sqlite3_bind_null(insert, 9); sqlite3_bind_int64(insert, 10, now)
                body.withUnsafeBytes { _ = sqlite3_bind_blob64(insert, 11, $0.baseAddress, sqlite3_uint64($0.count), transient) }
                sqlite3_bind_int64(insert, 12, 0)
                guard sqlite3_step(insert) == SQLITE_DONE else { throw ValidationError("insert failed") }
                sqlite3_reset(insert)
                sqlite3_bind_int64(link, 1, pack)
                sqlite3_bind_int64(link, 2, sqlite3_last_insert_rowid(db))
                guard sqlite3_step(link) == SQLITE_DONE else { throw ValidationError("link failed") }
                sqlite3_reset(link)
                linked += 1
                bytes += Int64(body.count)
                index += 1
            }
            sqlite3_bind_int64(progress, 1, pack); sqlite3_bind_int64(progress, 2, linked); sqlite3_bind_int64(progress, 3, bytes)
            guard sqlite3_step(progress) == SQLITE_DONE else { throw ValidationError("progress failed") }
            sqlite3_reset(progress)
            guard sqlite3_exec(db, "COMMIT", nil, nil, nil) == SQLITE_OK else { throw ValidationError("commit failed") }
        }
        let time = start.elapsed()
        withExtendedLifetime((database, store)) {}
        return time
    }

    private func openRaw(_ path: String) throws -> OpaquePointer? {
        var db: OpaquePointer?
        guard sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nil) == SQLITE_OK else {
            throw ValidationError("cannot open \(path)")
        }
        for pragma in ["PRAGMA journal_mode = WAL", "PRAGMA synchronous = NORMAL", "PRAGMA foreign_keys = ON"] {
            sqlite3_exec(db, pragma, nil, nil, nil)
        }
        sqlite3_busy_timeout(db, 5000)
        return db
    }
}

private final class PackIDBox: @unchecked Sendable { var id: Int64 = 0 }

/// Wall time and process CPU time (all threads) of one run. CPU time is the steadier measure on
/// a machine shared with other work; wall time is what a user sees.
private struct RunTime {
    var wall: Double
    var cpu: Double

    static let worst = RunTime(wall: .infinity, cpu: .infinity)

    func best(_ other: RunTime) -> RunTime { RunTime(wall: min(wall, other.wall), cpu: min(cpu, other.cpu)) }

    struct Start {
        let wall = DispatchTime.now()
        let cpu = RunTime.processCPUSeconds()

        func elapsed() -> RunTime {
            RunTime(wall: Double(DispatchTime.now().uptimeNanoseconds - wall.uptimeNanoseconds) / 1e9,
                    cpu: RunTime.processCPUSeconds() - cpu)
        }
    }

    static func processCPUSeconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        func seconds(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1e6 }
        return seconds(usage.ru_utime) + seconds(usage.ru_stime)
    }
}
