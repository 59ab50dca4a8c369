import ArgumentParser
import Foundation
import Glibc
import Packs

/// Release `packd serve` processes sharing one database (cluster mode, or one SQLite file),
/// started together and kept running across the packs a benchmark downloads with them.
struct ClusterNodeGroup {
    let processes: [PackdServeProcess]
    /// The PostgreSQL server's data directory, to count its CPU (nil in SQLite mode).
    let postgresData: String?
    /// When the last node had written its port: every node was up.
    let startedAt: ContinuousClock.Instant

    /// What one pack's download measured.
    struct Run {
        var seconds: Double
        var tiles: Int
        var rate: Double { Double(tiles) / seconds }
        /// From `POST /v1/packs` to the first tile counted in the pack's progress.
        var firstTileSeconds: Double?
        /// From 90 % of the tiles stored to complete: the tail, where nodes run out of work.
        var lastTenthSeconds: Double?
        /// Tiles each node downloaded for this pack.
        var split: [Int]
        var cpuMicrosecondsPerTile: Double
        /// The PostgreSQL server's CPU per tile (0 in SQLite mode).
        var databaseMicrosecondsPerTile: Double
        /// The most requests the upstream had in flight at once.
        var peakInFlight: Int
        /// Tile requests the upstream answered beyond one per tile.
        var duplicates: Int
    }

    /// Starts a node per entry of `databases` with `arguments`, in parallel, and returns once all
    /// have written their ports.
    static func start(databases: [String], postgresData: String?, in directory: URL, logPrefix: String,
                      arguments: [String]) throws -> ClusterNodeGroup {
        let started = Started(count: databases.count)
        DispatchQueue.concurrentPerform(iterations: databases.count) { index in
            started.set(index, Result {
                try PackdServeProcess.start(in: directory, databaseArgument: databases[index],
                                            logName: "\(logPrefix)-\(index).log", arguments: arguments)
            })
        }
        let results = started.results
        let processes = results.compactMap { try? $0?.get() }
        guard processes.count == databases.count else {
            for process in processes { process.stop() }
            for case .failure(let error)? in results { throw error }
            throw ValidationError("a packd did not start")
        }
        return ClusterNodeGroup(processes: processes, postgresData: postgresData, startedAt: .now)
    }

    func stop() {
        DispatchQueue.concurrentPerform(iterations: processes.count) { processes[$0].stop() }
    }

    /// Creates a pack of `region` on the first node and waits until it is complete with exactly
    /// `tiles` tiles, polling every `pollMilliseconds`; what it took.
    func download(region: [String: Any], tiles: Int, upstream: DelayedTileUpstream, pollMilliseconds: Int = 10) throws -> Run {
        let cpuBefore = processes.map { $0.cpuSeconds ?? 0 }
        let databaseBefore = databaseCPU()
        let downloadedBefore = try downloaded()
        let answeredBefore = upstream.answered
        _ = upstream.takePeakInFlight()
        let posted = ContinuousClock.now
        let created = try LoopbackHTTPClient.request(port: processes[0].port, method: "POST", path: "/v1/packs",
                                                     json: ["region": region, "name": "bench", "start": true])
        guard created.status == 201, let id = try created.json()["id"] as? Int else {
            throw ValidationError("POST /v1/packs answered \(created.status): \(String(decoding: created.body, as: UTF8.self))")
        }
        var firstTile: Double?
        var ninetyPercent: ContinuousClock.Instant?
        while true {
            guard processes.allSatisfy(\.process.isRunning) else { throw ValidationError("a packd exited during the download") }
            let pack = try LoopbackHTTPClient.request(port: processes[0].port, method: "GET", path: "/v1/packs/\(id)").pack()
            if firstTile == nil, pack.progress.completedTiles > 0 { firstTile = Self.seconds(.now - posted) }
            if ninetyPercent == nil, pack.progress.completedTiles * 10 >= tiles * 9 { ninetyPercent = .now }
            if !pack.state.isScheduled {
                guard pack.state == .complete, pack.progress.completedTiles == tiles else {
                    throw ValidationError("the pack ended \(pack.state) with \(pack.progress.completedTiles) of \(tiles) tiles")
                }
                break
            }
            usleep(useconds_t(pollMilliseconds * 1000))
        }
        let seconds = Self.seconds(.now - posted)
        let cpu = zip(processes, cpuBefore).reduce(0.0) { $0 + ($1.0.cpuSeconds ?? 0) - $1.1 }
        let database = databaseCPU() - databaseBefore
        return Run(seconds: seconds, tiles: tiles, firstTileSeconds: firstTile, lastTenthSeconds: ninetyPercent.map { Self.seconds(.now - $0) },
                   split: zip(try downloaded(), downloadedBefore).map { $0 - $1 },
                   cpuMicrosecondsPerTile: cpu / Double(tiles) * 1e6, databaseMicrosecondsPerTile: database / Double(tiles) * 1e6,
                   peakInFlight: upstream.takePeakInFlight(), duplicates: upstream.answered - answeredBefore - tiles)
    }

    /// Resources each node has downloaded so far (`packd_downloaded_resources_total`).
    private func downloaded() throws -> [Int] {
        try processes.map { process in
            let text = String(decoding: try LoopbackHTTPClient.request(port: process.port, method: "GET", path: "/metrics").body,
                              as: UTF8.self)
            let line = text.split(separator: "\n").first { $0.hasPrefix("packd_downloaded_resources_total ") }
            return line.flatMap { Double($0.split(separator: " ")[1]) }.map { Int($0) } ?? 0
        }
    }

    private func databaseCPU() -> Double {
        postgresData.map { ProcessCPU.postgresSeconds(dataDirectory: $0) } ?? 0
    }

    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    /// The processes as the starting threads report them.
    private final class Started: @unchecked Sendable {
        private let lock = NSLock()
        private var slots: [Result<PackdServeProcess, any Error>?]

        init(count: Int) {
            slots = Array(repeating: nil, count: count)
        }

        var results: [Result<PackdServeProcess, any Error>?] { lock.withLock { slots } }

        func set(_ index: Int, _ result: Result<PackdServeProcess, any Error>) {
            lock.withLock { slots[index] = result }
        }
    }
}
