import ArgumentParser
import Foundation
import Geo

/// Tile cover counting and streaming, beside baselines run in the same process: the closed-form
/// world count against a plain loop of 4^z sums, the polygon count against one projection pass
/// over its vertices per zoom (the least any cover must do), and iteration against counting.
struct GeoBenchmark: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "geo",
        abstract: "Tile cover counts and streaming iteration (targets: world z0-22 < 1 ms; 10k-vertex polygon z0-16 count < 50 ms, iteration peak < 32 MiB)."
    )

    @Option(help: "Vertices of the generated coastline polygon.")
    var vertices = 10_000

    @Option(help: "Highest zoom for the polygon cover.")
    var maxZoom = 16

    @Option(help: "Repetitions of each timed measurement; the best run is reported.")
    var repetitions = 5

    func run() throws {
        let worldZooms = 0...22
        var sink = 0
        // The zooms come from an option so the optimiser cannot fold the baseline loop away.
        let opaqueZooms = Array(worldZooms.lowerBound...(worldZooms.upperBound + (repetitions < 0 ? 1 : 0)))
        let baseline = best(repetitions * 100) {
            var total = 0
            for z in opaqueZooms { total &+= (1 << z) * (1 << z) }
            sink &+= total
        }
        let world = best(repetitions * 100) {
            sink &+= WebMercator.tileCount(region: .bounds(.world), zooms: worldZooms)
        }
        let worldTiles = WebMercator.tileCount(region: .bounds(.world), zooms: worldZooms)
        print("world z0-22: \(worldTiles) tiles, count \(format(world)) (target < 1 ms); baseline plain loop summing 4^z \(format(baseline)), ratio \(ratio(world, baseline))")

        let coastline = Self.coastline(vertices: vertices)
        let region = TileRegion.geometry(coastline)
        let zooms = 0...maxZoom
        let projection = best(repetitions) {
            var total = 0.0
            for _ in zooms { coastline.forEachVertex { total += WebMercator.project($0).y } }
            sink &+= Int(total)
        }
        let count = best(repetitions) {
            sink &+= WebMercator.tileCount(region: region, zooms: zooms)
        }
        let tiles = WebMercator.tileCount(region: region, zooms: zooms)
        print("coastline \(vertices) vertices z\(zooms.lowerBound)-\(zooms.upperBound): \(tiles) tiles, count \(format(count)) (target < 50 ms); baseline projection pass per zoom \(format(projection)), ratio \(ratio(count, projection))")

        let before = Self.peakResidentBytes()
        var iterated = 0
        let start = ContinuousClock.now
        for zoom in zooms {
            for tile in TileCover(region: region, zoom: zoom) { iterated &+= 1; sink &+= tile.x }
        }
        let iteration = ContinuousClock.now - start
        let after = Self.peakResidentBytes()
        print("coastline iteration: \(iterated) tiles in \(format(iteration)) (\(Int(Double(iterated) / seconds(iteration) / 1e6)) M tiles/s), ratio to count \(ratio(iteration, count))")
        print("peak RSS (VmHWM): before \(mib(before)), after iteration \(mib(after)) (target < 32 MiB), growth \(mib(after - before))")
        guard iterated == tiles else { throw ValidationError("iteration yielded \(iterated) tiles, count said \(tiles)") }
        if sink == 42 { print("") } // keeps the optimiser from dropping the timed work
    }

    /// A star-shaped, simple, coastline-like ring around 60°N 10°E: radius varied by a sum of
    /// sines with 1/k amplitudes (a fractal-like, seeded, deterministic outline).
    static func coastline(vertices: Int) -> Geometry {
        var state: UInt64 = 0xC0A5_7115
        func random() -> Double {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Double(state >> 11) / Double(1 << 53)
        }
        let harmonics = (1...200).map { k in (k: Double(k), amplitude: 0.35 / Double(k), phase: random() * 2 * .pi) }
        var ring = (0..<vertices).map { index -> LngLat in
            let angle = Double(index) / Double(vertices) * 2 * .pi
            let wobble = harmonics.reduce(0) { $0 + $1.amplitude * sin($1.k * angle + $1.phase) }
            let radius = 6 * max(0.2, 1 + wobble)
            return LngLat(longitude: 10 + radius * cos(angle) * 1.8, latitude: 60 + radius * sin(angle) * 0.9)
        }
        ring.append(ring[0])
        return .polygon([ring])
    }

    static func peakResidentBytes() -> Int {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return 0 }
        for line in status.split(separator: "\n") where line.hasPrefix("VmHWM:") {
            let kib = line.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0
            return kib * 1024
        }
        return 0
    }

    private func best(_ runs: Int, _ body: () -> Void) -> Duration {
        var fastest = Duration.seconds(1_000_000)
        for _ in 0..<max(runs, 1) {
            let start = ContinuousClock.now
            body()
            fastest = min(fastest, ContinuousClock.now - start)
        }
        return fastest
    }
}

/// A duration in seconds, for the benchmarks' rates and formats.
func seconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) + Double(duration.components.attoseconds) * 1e-18
}

private func format(_ duration: Duration) -> String {
    let s = seconds(duration)
    if s < 1e-6 { return String(format: "%.0f ns", s * 1e9) }
    if s < 1e-3 { return String(format: "%.1f µs", s * 1e6) }
    if s < 1 { return String(format: "%.2f ms", s * 1e3) }
    return String(format: "%.2f s", s)
}

private func ratio(_ a: Duration, _ b: Duration) -> String {
    String(format: "%.1fx", seconds(a) / max(seconds(b), 1e-12))
}

private func mib(_ bytes: Int) -> String {
    String(format: "%.1f MiB", Double(bytes) / 1_048_576)
}

private extension Geometry {
    func forEachVertex(_ body: (LngLat) -> Void) {
        if case .polygon(let rings) = self { rings.forEach { $0.forEach(body) } }
    }
}
