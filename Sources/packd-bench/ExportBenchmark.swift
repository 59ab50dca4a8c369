import ArgumentParser
import CZlib
import Foundation
import Packs
import Store

/// `packd-bench export`: exports one pack of `--tiles` vector tiles to each format and reports
/// the time and peak RSS of each beside a baseline measured in the same run — reading every tile
/// body of the pack and writing it to a file, the least any export has to do.
struct ExportBenchmark: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Export a generated pack to maplibre, mbtiles and pmtiles; time and peak RSS against a copy baseline.")

    @Option(help: "Tiles in the pack.") var tiles = 100_000
    @Option(help: "Approximate uncompressed bytes of one vector tile.") var tileBytes = 12_000
    @Option(help: "Share of tiles (0…1) that are the same ocean tile, as at high zoom over water.") var repeatedShare = 0.1
    @Option(help: "Directory for the databases and exports (default: a new temp directory).") var directory: String?
    @Flag(help: "Reuse the pack database a previous run left in --directory.") var reuse = false
    @Flag(help: "Keep the exports (pack.maplibre.db, pack.mbtiles, pack.pmtiles) for external checks.") var keepExports = false
    @Flag(help: "Also export each format over HTTP from a release packd serve (built next to packd-bench) and compare.")
    var http = false

    func run() throws {
        let directory = self.directory ?? NSTemporaryDirectory() + "packd-export-bench-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { if self.directory == nil && !keepExports { try? FileManager.default.removeItem(atPath: directory) } }
        let databasePath = directory + "/pack.sqlite"
        if !(reuse && FileManager.default.fileExists(atPath: databasePath)) {
            let generated = try GeneratedPack(tiles: tiles, tileBytes: tileBytes, repeatedShare: repeatedShare).write(at: databasePath)
            print("pack: \(tiles) tiles, \(generated / 1_000_000) MB stored (zlib), in \(directory)")
            print("pack database: \(databasePath)")
        }

        let reader = try Database(path: databasePath, mode: .readOnly)
        let source = try PackTileSource.choose(pack: 1, urlTemplate: nil, in: reader)
        var results: [(name: String, seconds: Double, cpu: Double, peak: Int, anonymousPeak: Int, size: UInt64)] = []
        func measure(_ name: String, output: String, _ body: () throws -> Void) throws {
            PeakMemory.reset()
            let anonymous = AnonymousMemorySampler()
            let cpuStart = cpuSeconds()
            let start = DispatchTime.now().uptimeNanoseconds
            try body()
            let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
            let cpu = cpuSeconds() - cpuStart
            let anonymousPeak = anonymous.stop()
            let size = (try? FileManager.default.attributesOfItem(atPath: output)[.size] as? UInt64) ?? 0
            results.append((name, seconds, cpu, PeakMemory.kilobytes(), anonymousPeak, size))
            if !keepExports { try? FileManager.default.removeItem(atPath: output) }
        }
        try measure("baseline: read + write bodies", output: directory + "/copy.bin") {
            try copyBodies(reader, to: directory + "/copy.bin")
        }
        func request(_ format: PackExportRequest.Format) -> PackExportRequest {
            PackExportRequest(pack: 1, version: nil, format: format, source: format == .maplibre ? nil : source.urlTemplate)
        }
        try measure("maplibre", output: directory + "/pack.maplibre.db") {
            _ = try MapLibreExport.write(request(.maplibre), databasePath: databasePath, to: directory + "/pack.maplibre.db")
        }
        try measure("mbtiles", output: directory + "/pack.mbtiles") {
            _ = try MBTilesExport.write(request(.mbtiles), from: reader, to: directory + "/pack.mbtiles")
        }
        try measure("pmtiles", output: directory + "/pack.pmtiles") {
            _ = try PMTilesExport.write(request(.pmtiles), from: reader, to: directory + "/pack.pmtiles")
        }
        let baseline = results[0]
        // Peak RSS counts the pages of the memory-mapped pack too (page cache, not allocations);
        // the anonymous peak (sampled every 10 ms) is what the export itself holds.
        print("format                          wall s  × baseline   CPU s  × baseline  peak RSS MB  anon peak MB  output MB")
        for result in results {
            let name = result.name.padding(toLength: 30, withPad: " ", startingAt: 0)
            print(name + String(format: " %7.2f %10.2f %8.2f %10.2f %12.1f %13.1f %10.1f", result.seconds,
                                result.seconds / baseline.seconds, result.cpu, result.cpu / baseline.cpu,
                                Double(result.peak) / 1024, Double(result.anonymousPeak) / 1024, Double(result.size) / 1e6))
        }
        if http {
            let overHTTP = try ExportOverHTTP(databasePath: databasePath, directory: directory).run(formats: ["maplibre", "mbtiles", "pmtiles"])
            print("over HTTP (packd serve)         wall s  × store-level  server CPU s  × store-level  server anon MB: before  peak  body MB")
            for result in overHTTP {
                let storeLevel = results.first { $0.name == result.format }
                let name = ("GET export?format=" + result.format).padding(toLength: 30, withPad: " ", startingAt: 0)
                print(name + String(format: " %7.2f %13.2f %13.2f %13.2f %22.1f %5.1f %8.1f", result.seconds,
                                    result.seconds / (storeLevel?.seconds ?? .nan), result.serverCPUSeconds,
                                    result.serverCPUSeconds / (storeLevel?.cpu ?? .nan),
                                    Double(result.anonymousBeforeKB) / 1024, Double(result.anonymousPeakKB) / 1024,
                                    Double(result.bytes) / 1e6))
            }
        }
    }

    /// User + system CPU time of this process: on a shared, loaded machine the wall time of an
    /// export says as much about the neighbours as about the export.
    private func cpuSeconds() -> Double {
        var usage = rusage()
        getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
        return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec)
            + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
    }

    private func copyBodies(_ reader: Database, to path: String) throws {
        guard let file = fopen(path, "wb") else { throw CocoaError(.fileWriteUnknown) }
        defer { fclose(file) }
        try reader.makeStatement("SELECT t.data FROM region_tiles rt JOIN tiles t ON t.id = rt.tile_id WHERE rt.region_id = 1")
            .forEachRow { row in
                row.withBlob(at: 0) { bytes in
                    if let bytes, let base = bytes.baseAddress { fwrite(base, 1, bytes.count, file) }
                }
            }
    }
}

/// The process's peak resident set (VmHWM), resettable between measurements on Linux by
/// writing 5 to /proc/self/clear_refs.
enum PeakMemory {
    static func reset() {
        try? "5".write(toFile: "/proc/self/clear_refs", atomically: false, encoding: .utf8)
    }

    /// Of this process, or of `pid`.
    static func kilobytes(_ field: String = "VmHWM:", pid: Int32? = nil) -> Int {
        guard let status = try? String(contentsOfFile: "/proc/\(pid.map(String.init) ?? "self")/status", encoding: .utf8) else { return 0 }
        for line in status.split(separator: "\n") where line.hasPrefix(field) {
            return Int(line.split(separator: " ").dropFirst().first ?? "0") ?? 0
        }
        return 0
    }
}

/// The largest anonymous resident set (`RssAnon`: heap and stacks, no mapped files) seen while
/// running, polled from a thread: the kernel keeps no high-water mark for it.
final class AnonymousMemorySampler: @unchecked Sendable {
    private let lock = NSLock()
    private var peak = 0
    private var running = true
    private let pid: Int32?
    private let field: String

    /// Samples this process, or `pid` (a `packd serve` the benchmark started); `field` of
    /// /proc/PID/status (`VmRSS:` for the whole resident set).
    init(pid: Int32? = nil, field: String = "RssAnon:") {
        self.pid = pid
        self.field = field
        Thread { [self] in
            while lock.withLock({ running }) {
                let current = PeakMemory.kilobytes(field, pid: pid)
                lock.withLock { peak = max(peak, current) }
                usleep(10_000)
            }
        }.start()
    }

    /// Stops polling and returns the peak in KiB (including one last reading).
    func stop() -> Int {
        let current = PeakMemory.kilobytes(field, pid: pid)
        return lock.withLock {
            running = false
            return max(peak, current)
        }
    }
}
