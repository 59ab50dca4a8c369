import ArgumentParser
import Foundation
import Packs
import Store

/// `packd-bench delta`: how much a device downloads to catch up. A pack of `--tiles` tiles is
/// stored and completed (version 1); a refresh replaces `--changed-share` of its tiles with new
/// bodies (version 2); the `maplibre` delta from version 1 to 2 is then exported beside the whole
/// version 2. The target (issue 25's "Delta size"): the delta at most 1.1 × the changed tiles'
/// stored bytes + 64 KiB, and delta/full near the changed share. Tile bodies are random
/// (incompressible, stored as they are) of `--tile-bytes` on average, half to one and a half
/// times it, so stored bytes are exactly what the tiles weigh.
struct DeltaBenchmark: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "delta",
        abstract: "Size of the delta after a refresh that changed a share of a pack's tiles, against the whole version.")

    @Option(help: "Tiles in the pack.") var tiles = 20_000
    @Option(help: "Average tile body in bytes.") var tileBytes = 12_000
    @Option(help: "Share of the tiles (0…1) the refresh replaces.") var changedShare = 0.05
    @Option(help: "Share of the tiles (0…1) the refresh turns into 404s (no-content rows in the delta).") var removedShare = 0.0
    @Option(help: "Directory for the database and exports (default: a new temp directory).") var directory: String?

    func run() throws {
        guard tiles > 0, tileBytes > 1, (0...1).contains(changedShare), (0...1).contains(removedShare) else {
            throw ValidationError("--tiles and --tile-bytes must be positive, the shares from 0 to 1")
        }
        let directory = self.directory ?? NSTemporaryDirectory() + "packd-delta-bench-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { if self.directory == nil { try? FileManager.default.removeItem(atPath: directory) } }
        let path = directory + "/pack.sqlite"
        let template = "https://bench.example/{z}/{x}/{y}.pbf"
        let side = Int64(Double(tiles).squareRoot().rounded(.up))
        func key(_ index: Int) -> ResourceKey {
            .tile(TileKey(urlTemplate: template, z: 15, x: 1_000 + Int64(index) % side, y: 1_000 + Int64(index) / side))
        }
        var random = SystemRandomNumberGenerator()
        func body() -> StoredBody {
            let count = Int.random(in: tileBytes / 2...tileBytes * 3 / 2, using: &random)
            var bytes = [UInt8](repeating: 0, count: count + 8)
            bytes.withUnsafeMutableBytes { raw in
                for offset in stride(from: 0, to: count, by: 8) { raw.storeBytes(of: random.next(), toByteOffset: offset, as: UInt64.self) }
            }
            return StoredBody(data: Array(bytes.prefix(count)), compressed: false)
        }

        let store = try OfflineDatabase(path: path)
        let pack = try store.createPack(PackRecord(name: "delta", state: .queued, definition: "{\"bench\":\"delta\"}"), now: 1_000)
        _ = try store.transition(pack, .start, now: 1_000)
        for start in stride(from: 0, to: tiles, by: 500) {
            let outcome = store.apply((start..<min(tiles, start + 500)).map { ResourceWrite(key: key($0), content: .body(body()), packID: pack) },
                                      now: 1_000)
            if let error = outcome.error { throw error }
        }
        _ = try store.transition(pack, .finished(failedResources: 0), now: 1_000)

        // The refresh: a spread-out share of the tiles replaced, another share gone.
        let changed = Int((Double(tiles) * changedShare).rounded())
        let removed = Int((Double(tiles) * removedShare).rounded())
        let picked = Array((0..<tiles).shuffled(using: &random).prefix(changed + removed))
        guard case .applied = try store.transition(pack, .invalidate, now: 2_000) else { throw ValidationError("invalidate refused") }
        _ = try store.transition(pack, .start, now: 2_000)
        var writes: [ResourceWrite] = []
        var changedBytes: Int64 = 0
        for (offset, index) in picked.enumerated() {
            if offset < changed {
                let new = body()
                changedBytes += Int64(new.data.count)
                writes.append(ResourceWrite(key: key(index), content: .body(new), packID: pack))
            } else {
                writes.append(ResourceWrite(key: key(index), content: .noContent, packID: pack))
            }
        }
        if let error = store.apply(writes, now: 2_000).error { throw error }
        guard case .applied(let completed) = try store.transition(pack, .finished(failedResources: 0), now: 2_000),
              let version = completed.createdVersions.first(where: { $0.packID == pack }) else {
            throw ValidationError("the refresh cut no version")
        }

        let reader = try StoreReader(path: path)
        func export(_ request: PackExportRequest, _ name: String) throws -> (bytes: Int64, seconds: Double) {
            let start = DispatchTime.now().uptimeNanoseconds
            _ = try reader.export(request, to: directory + "/" + name)
            let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
            let size = (try FileManager.default.attributesOfItem(atPath: directory + "/" + name)[.size] as? NSNumber)?.int64Value ?? 0
            return (size, seconds)
        }
        let delta = try export(PackExportRequest(pack: pack, version: version.version, since: 1), "delta.db")
        let full = try export(PackExportRequest(pack: pack, version: version.version), "full.db")
        let allowed = Double(changedBytes) * 1.1 + 65_536
        print("pack: \(tiles) tiles of \(tileBytes) bytes on average; the refresh replaced \(changed) (\(changedBytes) bytes), "
              + "removed \(removed); version \(version.version): \(version.changedResources) changed, \(version.removedResources) removed")
        print("export          bytes        seconds  of full")
        for (name, result) in [("delta 1→2", delta), ("full 2", full)] {
            print(name.padding(toLength: 16, withPad: " ", startingAt: 0)
                  + String(format: "%-12lld %8.2f %8.4f", result.bytes, result.seconds, Double(result.bytes) / Double(full.bytes)))
        }
        print(String(format: "delta/full %.4f (changed share %.4f); delta %lld bytes against 1.1 × changed + 64 KiB = %.0f: %@",
                     Double(delta.bytes) / Double(full.bytes), changedShare, delta.bytes, allowed,
                     Double(delta.bytes) <= allowed ? "met" : "NOT met"))
    }
}
