import ArgumentParser
import Foundation

/// `mapproxy-seed` (MapProxy from PyPI, in a virtualenv the Makefile makes under `.build/`)
/// seeding a file cache from a tile source: the WAN benchmark's other baseline, a widely used
/// seeder run as its users run it.
struct MapProxySeed {
    let executable: String

    /// Seconds `mapproxy-seed -c concurrency` takes to seed `window` from `template`
    /// (`%(z)s/%(x)s/%(y)s` placeholders, an https URL trusted through `caFile`), into a fresh
    /// cache under `directory`.
    func seconds(template: String, window: TileWindow, caFile: String, concurrency: Int, directory: URL) throws -> Double {
        try? FileManager.default.removeItem(at: directory)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let bounds = window.bounds
        let configuration = """
            services:
              demo:
            layers:
              - name: bench
                title: bench
                sources: [bench_cache]
            caches:
              bench_cache:
                grids: [webmercator]
                sources: [bench_source]
                format: image/png
                cache:
                  type: file
                  directory: \(directory.path)/cache
            sources:
              bench_source:
                type: tile
                url: \(template)
                grid: webmercator
                transparent: false
                http:
                  ssl_ca_certs: \(caFile)
            grids:
              webmercator:
                base: GLOBAL_WEBMERCATOR
            globals:
              cache:
                base_dir: \(directory.path)/cache
                lock_dir: \(directory.path)/locks
            """
        // The bounding box sits a quarter tile inside the window on every side, so its cover at
        // the window's zoom is exactly the window.
        let seed = """
            seeds:
              bench:
                caches: [bench_cache]
                grids: [webmercator]
                levels:
                  from: \(window.zoom)
                  to: \(window.zoom)
                coverages: [window]
            coverages:
              window:
                bbox: [\(bounds.west), \(bounds.south), \(bounds.east), \(bounds.north)]
                srs: 'EPSG:4326'
            """
        try Data(configuration.utf8).write(to: directory.appendingPathComponent("mapproxy.yaml"))
        try Data(seed.utf8).write(to: directory.appendingPathComponent("seed.yaml"))
        let process = Process()
        ClientCPUs.launch(process, URL(fileURLWithPath: executable),
                          ["-f", directory.appendingPathComponent("mapproxy.yaml").path,
                           "-s", directory.appendingPathComponent("seed.yaml").path, "-c", "\(concurrency)", "--quiet"])
        process.currentDirectoryURL = directory
        let log = directory.appendingPathComponent("mapproxy-seed.log")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        process.standardOutput = try FileHandle(forWritingTo: log)
        process.standardError = try FileHandle(forWritingTo: log)
        let start = Date().timeIntervalSince1970
        try process.run()
        process.waitUntilExit()
        let elapsed = Date().timeIntervalSince1970 - start
        guard process.terminationStatus == 0 else {
            throw ValidationError("mapproxy-seed exited \(process.terminationStatus); see \(log.path)")
        }
        return elapsed
    }
}
