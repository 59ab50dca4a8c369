import Foundation
import PackdTestSupport
import Testing

/// `packd serve` and its dashboard: on by default with the repository's `dashboard/` found beside
/// the built binary, off with `--dashboard=false` or `PACKD_DASHBOARD=false` (then `404`), and a
/// bad setting stops the process before it listens (exit 64).
@Suite struct DashboardServeTests {
    @Test func servedByDefaultFromTheRepository() throws {
        let packd = try PackdServer()
        defer { packd.remove() }
        let root = try packd.send("GET", "/")
        #expect(root.status == 302 && root.header("Location") == "dashboard/")
        let page = try packd.send("GET", "/dashboard/")
        #expect(page.status == 200 && page.body.contains("<script type=\"module\" src=\"app.js\"></script>"))
        #expect(page.header("Content-Security-Policy")?.contains("script-src 'self'") == true)
        for file in ["app.js", "api.js", "packs.js", "create.js", "maps.js", "dashboard.css"] {
            #expect(try packd.send("GET", "/dashboard/\(file)").status == 200, "\(file)")
        }
        // setup.json tells the page whether maps are there; either way it answers.
        #expect(try packd.send("GET", "/dashboard/setup.json").json["map_library"] is Bool)
    }

    @Test func offWithTheFlagOrTheEnvironment() throws {
        for (arguments, environment) in [(["--dashboard=false"], [String: String]()), ([], ["PACKD_DASHBOARD": "false"]),
                                         (["--dashboard", "off"], ["PACKD_DASHBOARD": "true"])] {
            let packd = try PackdServer(arguments: arguments, environment: environment)
            defer { packd.remove() }
            for target in ["/", "/dashboard/", "/dashboard/app.js", "/dashboard/setup.json"] {
                #expect(try packd.send("GET", target).status == 404, "\(arguments) \(environment) \(target)")
            }
            #expect(try packd.send("GET", "/healthz").status == 200)
        }
    }

    @Test func badSettingsStopTheProcessWithUsage() throws {
        for (arguments, message) in [(["--dashboard=maybe"], "invalid --dashboard: 'maybe' is not true or false"),
                                     (["--dashboard-dir", "/nonexistent/packd-dashboard"], "invalid --dashboard-dir"),
                                     (["--map-library-dir", "/nonexistent/maplibre"], "must hold maplibre-gl.js and maplibre-gl.css")] {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: BuiltExecutable.path("packd"))
            process.arguments = ["serve", "--listen", "127.0.0.1:0", "--database", "/nonexistent/packd.sqlite"] + arguments
            let errors = Pipe()
            process.standardError = errors
            process.standardOutput = FileHandle.nullDevice
            try process.run()
            let output = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            #expect(process.terminationStatus == 64, "\(arguments)")
            #expect(output.contains(message), "\(arguments): \(output)")
        }
    }
}
