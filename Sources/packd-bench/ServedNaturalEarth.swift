import ArgumentParser
import Foundation
import Glibc

/// The shared Natural Earth fixture (`<fixtures>/ne`) copied into a fresh scratch directory and
/// served by nginx on 127.0.0.1 as `serve-ne.sh` serves it (vector tiles stored gzipped and sent
/// with `Content-Encoding: gzip`), with `{{BASE}}` in its style and TileJSONs replaced by the
/// server's URL. `stop()` stops nginx and removes the directory.
struct ServedNaturalEarth {
    /// The scratch directory (databases and logs may go here too).
    let directory: URL
    /// What nginx serves: the fixture's copy.
    let root: URL
    /// `http://127.0.0.1:PORT`.
    let base: String
    private let nginx: NginxBaseline

    /// `name` tells benchmarks' scratch directories apart.
    init(fixtures: String, name: String) throws {
        let source = URL(fileURLWithPath: fixtures).appendingPathComponent("ne")
        guard FileManager.default.fileExists(atPath: source.appendingPathComponent("style.json").path) else {
            throw ValidationError("no fixture at \(source.path) (pass --fixtures)")
        }
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("packd-bench-\(name)-\(getpid())")
        root = directory.appendingPathComponent("www")
        try? FileManager.default.removeItem(at: directory)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        do {
            try FileManager.default.copyItem(at: source, to: root)
            nginx = try NginxBaseline.start(in: directory, root: root, workers: 1, accessLog: false, locations: """
                types { application/json json geojson; image/png png; application/x-protobuf pbf; }
                location /tiles/ { add_header Content-Encoding gzip; try_files $uri =404; }
                location / { }
                """)
        } catch {
            try? FileManager.default.removeItem(at: directory)
            throw error
        }
        base = "http://127.0.0.1:\(nginx.port)"
        do {
            for name in ["style.json", "tiles.json", "raster.json"] {
                let file = root.appendingPathComponent(name)
                let text = try String(contentsOf: file, encoding: .utf8).replacingOccurrences(of: "{{BASE}}", with: base)
                try Data(text.utf8).write(to: file)
            }
        } catch {
            stop()
            throw error
        }
    }

    func stop() {
        nginx.stop()
        try? FileManager.default.removeItem(at: directory)
    }
}
