import API
import Foundation
import Glibc
import Synchronization
import PackdTestSupport
import Packs
import Testing

/// The client subcommands as scripts run them: real `packd` processes against a real
/// `packd serve` on 127.0.0.1 and in-process upstreams, asserting what a script branches on —
/// the exit status, JSON lines that decode as Packs' wire types, problems with their pointers.
@Suite struct CommandLineTests {
    /// Tiles of any path, each a few bytes derived from it.
    static func tileUpstream(_ reply: @escaping @Sendable (TestUpstream.Request) -> TestUpstream.Reply = { request in
        .respond(status: 200, headers: [("Content-Type", "image/png")], body: Array("tile \(request.target)".utf8))
    }) throws -> TestUpstream {
        try TestUpstream(reply)
    }

    static func server(_ server: PackdServer) -> [String] { ["--server", "http://127.0.0.1:\(server.port)"] }

    /// `--tiles` of `upstream` over a small box: zooms 0-3 are 13 tiles.
    static func tilesRegion(_ upstream: TestUpstream, zooms: String = "0-3") -> [String] {
        ["--tiles", upstream.url("/t/{z}/{x}/{y}.png"), "--bbox", "-10,-10,10,10", "--zooms", zooms]
    }

    /// Each line of `output` as `{"event", "id", "data"}`, its data read back with
    /// `PackEvent(kind:data:)`.
    static func events(_ output: String) throws -> [(id: Int64?, event: PackEvent)] {
        try output.split(separator: "\n").map { line in
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "\(line)")
            #expect(Set(object.keys).isSubset(of: ["event", "id", "data"]))
            let kind = try #require(object["event"] as? String)
            let data = try JSONSerialization.data(withJSONObject: try #require(object["data"]))
            return ((object["id"] as? NSNumber)?.int64Value, try PackEvent(kind: kind, data: data))
        }
    }

    @Test func createWaitFollowsThePackToCompletionAsJSONLines() throws {
        let upstream = try Self.tileUpstream()
        defer { upstream.stop() }
        let server = try PackdServer()
        defer { server.remove() }
        let run = try PackdCommand.run(["create"] + Self.server(server) + Self.tilesRegion(upstream) + ["--name", "small", "--wait"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stderr.isEmpty)
        let events = try Self.events(run.stdout)
        let packID = try #require(events.first?.event.packID)
        #expect(events.allSatisfy { $0.event.packID == packID })
        // Stream ids only, increasing; the last event is the change to complete.
        let ids = events.compactMap(\.id)
        #expect(ids.count == events.count && ids == ids.sorted())
        guard case .state(let last)? = events.last?.event else { Issue.record("the last line is not a state event"); return }
        #expect(last.state == .complete && last.previousState == .active)
        let done = events.compactMap { entry -> Int64? in
            if case .progress(let progress) = entry.event { return progress.progress.completedResources }
            return nil
        }
        #expect(done == done.sorted() && done.last == 13)
        let pack = try JSONDecoder().decode(Pack.self, from: Data(PackdCommand.run(["show", "\(packID)"] + Self.server(server)).stdout.utf8))
        #expect(pack.state == .complete && pack.progress.completedTiles == 13 && pack.name == "small")
    }

    /// `--glyphs region` and `--start-area LON,LAT,RADIUS_M` reach the pack; `--wait --json`
    /// shows the `start_area_ready` event before the pack completes.
    @Test func createTakesGlyphsAndAStartArea() throws {
        let upstream = try LabelUpstream()
        defer { upstream.stop() }
        let server = try PackdServer()
        defer { server.remove() }
        let region = ["--style", upstream.styleURL, "--bbox", LabelWorld.region.map { "\($0)" }.joined(separator: ","),
                      "--zooms", "\(LabelWorld.minZoom)-\(LabelWorld.maxZoom)", "--glyphs", "region"]
        let run = try PackdCommand.run(["create"] + Self.server(server) + region + ["--start-area", "8.54,47.37,20000", "--wait"])
        #expect(run.status == 0, "\(run.stderr)")
        let events = try Self.events(run.stdout)
        let ready = events.compactMap { entry -> StartAreaReadyEvent? in
            if case .startAreaReady(let ready) = entry.event { return ready }
            return nil
        }
        #expect(ready.count == 1 && ready.first?.startArea == StartArea(longitude: 8.54, latitude: 47.37, radiusM: 20_000))
        let packID = try #require(events.first?.event.packID)
        let pack = try JSONDecoder().decode(Pack.self, from: Data(PackdCommand.run(["show", "\(packID)"] + Self.server(server)).stdout.utf8))
        #expect(pack.region.glyphs == "region" && pack.skippedGlyphRanges != nil && pack.startAreaReadyAt != nil)
        // A start area that is not two or three numbers is a usage error, before any request.
        let bad = try PackdCommand.run(["create"] + Self.server(server) + region + ["--start-area", "8.54"])
        #expect(bad.status == 64 && bad.stderr.contains("--start-area"))
    }

    @Test func aForbiddenUpstreamFailsThePackWithExitOne() throws {
        let upstream = try Self.tileUpstream { _ in .respond(status: 403) }
        defer { upstream.stop() }
        let server = try PackdServer()
        defer { server.remove() }
        let run = try PackdCommand.run(["create"] + Self.server(server) + Self.tilesRegion(upstream, zooms: "0-1") + ["--wait"])
        #expect(run.status == 1, "\(run.stderr)")
        #expect(run.stderr.contains("failed: upstream_unauthorized") && run.stderr.contains("403 for \(upstream.url("/t/"))"), "\(run.stderr)")
        guard case .state(let last)? = try Self.events(run.stdout).last?.event else { Issue.record("no state event last"); return }
        #expect(last.state == .failed && last.error?.code == .upstreamUnauthorized && last.error?.status == 403)
        // `wait` on the failed pack ends at once with the same status.
        let again = try PackdCommand.run(["wait", "\(last.packID)"] + Self.server(server))
        #expect(again.status == 1 && again.stderr.contains("upstream_unauthorized"))
    }

    @Test func anInvalidRegionExitsSixtyFourWithThePointers() throws {
        let upstream = try Self.tileUpstream()
        defer { upstream.stop() }
        let server = try PackdServer()
        defer { server.remove() }
        let run = try PackdCommand.run(["create"] + Self.server(server)
            + ["--tiles", upstream.url("/t/{z}/{x}/{y}.png"), "--bbox", "-10,35,20,95", "--zooms", "0-40", "--wait"])
        #expect(run.status == 64)
        #expect(run.stderr.contains("422 "), "\(run.stderr)")
        #expect(run.stderr.contains("\n  /region/bounds/3: ") && run.stderr.contains("\n  /region/max_zoom: "), "\(run.stderr)")
        #expect(run.stdout.isEmpty)
        // What the flags cannot even express is a usage error before any request.
        let usage = try PackdCommand.run(["create"] + Self.server(server) + ["--tiles", "x", "--bbox", "1,2,3", "--zooms", "0-1"])
        #expect(usage.status == 64 && usage.stderr.contains("--bbox must be four numbers"))
        let both = try PackdCommand.run(["estimate"] + Self.server(server) + ["--style", "http://a/s.json", "--tiles", "x", "--bbox", "0,0,1,1"])
        #expect(both.status == 64)
        #expect(try PackdCommand.run(["list"] + Self.server(server)).stdout.isEmpty, "nothing was created")
        #expect(upstream.requests.isEmpty)
    }

    @Test func noServerExitsSixtyNine() throws {
        // A port that was free a moment ago: nothing listens there.
        let listener = try TestUpstream { _ in .reset }
        let url = "http://127.0.0.1:\(listener.port)"
        listener.stop()
        for arguments in [["list"], ["wait", "1"], ["show", "1"], ["estimate", "--tiles", "http://t/{z}/{x}/{y}", "--bbox", "0,0,1,1", "--zooms", "1"]] {
            let run = try PackdCommand.run(arguments + ["--server", url])
            #expect(run.status == 69, "\(arguments): \(run.stderr)")
            #expect(run.stderr.hasPrefix("packd \(arguments[0]): request to \(url) failed: "), "\(run.stderr)")
        }
        // PACKD_SERVER is the default for --server.
        let fromEnvironment = try PackdCommand.run(["list"], environment: ["PACKD_SERVER": url])
        #expect(fromEnvironment.status == 69 && fromEnvironment.stderr.contains(url))
    }

    @Test func aRefusedKeyExitsSeventySevenAndIsNeverPrinted() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("packd-cli-keys-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let reader = "cli-reader-key-0123456789abcdef", writer = "cli-writer-key-0123456789abcdef"
        try Data("read:\(reader)\nwrite:\(writer)\n".utf8).write(to: directory.appendingPathComponent("keys"))
        try Data("\(writer)\n".utf8).write(to: directory.appendingPathComponent("writer"))
        let server = try PackdServer(arguments: ["--api-keys-file", directory.appendingPathComponent("keys").path])
        defer { server.remove() }
        let create = ["create"] + Self.server(server) + ["--tiles", "https://t.example/{z}/{x}/{y}.png", "--bbox", "0,0,1,1", "--zooms", "0", "--no-start"]
        var runs: [PackdCommand] = []
        let wrong = try PackdCommand.run(["list"] + Self.server(server), environment: ["PACKD_API_KEY": "wrong-key-0123456789abcdef"])
        runs.append(wrong)
        #expect(wrong.status == 77 && wrong.stderr.contains("401 "), "\(wrong.stderr)")
        let none = try PackdCommand.run(["list"] + Self.server(server))
        runs.append(none)
        #expect(none.status == 77)
        // A read key may list but not create: 403.
        let readOnly = try PackdCommand.run(create, environment: ["PACKD_API_KEY": reader])
        runs.append(readOnly)
        #expect(readOnly.status == 77 && readOnly.stderr.contains("403 "), "\(readOnly.stderr)")
        // The file wins over the environment.
        let written = try PackdCommand.run(create + ["--api-key-file", directory.appendingPathComponent("writer").path],
                                           environment: ["PACKD_API_KEY": reader])
        runs.append(written)
        #expect(written.status == 0, "\(written.stderr)")
        let listed = try PackdCommand.run(["list"] + Self.server(server), environment: ["PACKD_API_KEY": reader])
        runs.append(listed)
        #expect(listed.status == 0 && listed.stdout.split(separator: "\n").count == 1)
        // A key that would split the Authorization header is refused before any request.
        let injected = try PackdCommand.run(["list"] + Self.server(server), environment: ["PACKD_API_KEY": "\(reader)\r\nX-Injected: 1"])
        runs.append(injected)
        #expect(injected.status == 64 && injected.stderr.contains("PACKD_API_KEY"), "\(injected.stderr)")
        for run in runs {
            for key in [reader, writer, "wrong-key-0123456789abcdef"] {
                #expect(!run.stdout.contains(key) && !run.stderr.contains(key))
            }
        }
    }

    @Test func listPagesThroughNextWithItsFilters() throws {
        let server = try PackdServer()
        defer { server.remove() }
        var created: [Int64] = []
        for index in 1...5 {
            let run = try PackdCommand.run(["create"] + Self.server(server)
                + ["--tiles", "https://t.example/{z}/{x}/{y}.png", "--bbox", "0,0,1,1", "--zooms", "0-2", "--no-start", "--name", "pack \(index % 2 == 0 ? "even" : "odd") \(index)"])
            #expect(run.status == 0, "\(run.stderr)")
            let pack = try JSONDecoder().decode(Pack.self, from: Data(run.stdout.utf8))
            #expect(pack.state == .inactive)
            created.append(pack.id)
        }
        func list(_ arguments: [String]) throws -> [Pack] {
            let run = try PackdCommand.run(["list"] + Self.server(server) + arguments)
            #expect(run.status == 0, "\(run.stderr)")
            return try run.stdout.split(separator: "\n").map { try JSONDecoder().decode(Pack.self, from: Data($0.utf8)) }
        }
        // Three pages of two: every pack once, in creation order.
        #expect(try list(["--page-size", "2"]).map(\.id) == created)
        #expect(try list(["--page-size", "2", "--query", "even"]).map(\.name) == ["pack even 2", "pack even 4"])
        #expect(try list(["--state", "inactive", "--page-size", "1"]).count == 5)
        #expect(try list(["--state", "complete"]).isEmpty)
        let badState = try PackdCommand.run(["list"] + Self.server(server) + ["--state", "sleeping"])
        #expect(badState.status == 64)
    }

    @Test func estimateCountsTheRegionAndVersionMatchesBuildInfo() throws {
        let server = try PackdServer()
        defer { server.remove() }
        let run = try PackdCommand.run(["estimate"] + Self.server(server)
            + ["--tiles", "https://t.example/{z}/{x}/{y}.png", "--bbox", "-180,-85,180,85", "--zooms", "0-2"])
        #expect(run.status == 0, "\(run.stderr)")
        let estimate = try JSONDecoder().decode(Estimate.self, from: Data(run.stdout.utf8))
        #expect(estimate.tiles == 21 && estimate.exact && estimate.expectedResources == 21)
        #expect(estimate.sources.first?.zooms.map(\.tiles) == [1, 4, 16])
        #expect(estimate.estimatedBytes == nil && estimate.tileLimit == nil && estimate.withinTileLimit)
        // The line is the server's body re-encoded through the same wire type: byte for byte.
        let body = try server.send("POST", "/v1/estimates", json: ["region": [
            "tiles": ["https://t.example/{z}/{x}/{y}.png"], "bounds": [-180, -85, 180, 85], "min_zoom": 0, "max_zoom": 2]]).body
        #expect(run.stdout == body + "\n")

        // A person at a terminal reads the same counts as text.
        let text = try Self.runOnTerminal(["estimate"] + Self.server(server)
            + ["--tiles", "https://t.example/{z}/{x}/{y}.png", "--bbox", "-180,-85,180,85", "--zooms", "0-2"], standardInput: false)
        #expect(text.status == 0 && text.output.contains("  z2   16") && text.output.contains("tiles      21")
                && text.output.contains("size       unknown"), "\(text.output)")

        let version = try PackdCommand.run(["--version"])
        #expect(version.status == 0 && version.stdout == BuildInfo.version + "\n")
        let metrics = try server.send("GET", "/metrics").body
        #expect(metrics.contains("packd_build_info{version=\"\(BuildInfo.version)\""), "\(metrics.split(separator: "\n").filter { $0.contains("build_info") })")
    }

    @Test func createAPackOfAPMTilesArchive() throws {
        let archive = ArchiveFixture(maxZoom: 4)
        let upstream = try ArchiveUpstream(archive: archive.bytes)
        defer { upstream.stop() }
        let server = try PackdServer()
        defer { server.remove() }
        let region = ["--pmtiles", upstream.url, "--bbox", "-180,-85,180,85", "--zooms", "0-"]
        let estimate = try JSONDecoder().decode(Estimate.self, from: Data(try PackdCommand.run(["estimate"] + Self.server(server) + region).stdout.utf8))
        // The archive's zooms 1-4 (its z0 tile is absent): 340 tiles.
        #expect(estimate.tiles == 340 && estimate.expectedResources == 341)
        let run = try PackdCommand.run(["create"] + Self.server(server) + region + ["--wait"])
        #expect(run.status == 0, "\(run.stderr)")
        let packID = try #require(try Self.events(run.stdout).first?.event.packID)
        let pack = try JSONDecoder().decode(Pack.self, from: Data(PackdCommand.run(["show", "\(packID)"] + Self.server(server)).stdout.utf8))
        #expect(pack.state == .complete && pack.progress.completedTiles == 340 && pack.region.pmtiles == upstream.url)
        #expect(pack.progress.archiveRequests > 0 && pack.progress.archiveRequests < 20)
        let both = try PackdCommand.run(["estimate"] + Self.server(server) + region + ["--style", "https://x/style.json"])
        #expect(both.status == 64 && both.stderr.contains("--pmtiles"))
    }

    @Test func suspendResumeAndDelete() throws {
        // Tiles that never come: the pack stays active until it is suspended.
        let upstream = try Self.tileUpstream { _ in .hang }
        defer { upstream.stop() }
        let server = try PackdServer()
        defer { server.remove() }
        let created = try PackdCommand.run(["create"] + Self.server(server) + Self.tilesRegion(upstream) + ["--no-start"])
        let id = try JSONDecoder().decode(Pack.self, from: Data(created.stdout.utf8)).id
        func state(_ action: String) throws -> PackState? {
            let run = try PackdCommand.run([action, "\(id)"] + Self.server(server))
            #expect(run.status == 0, "\(action): \(run.stderr)")
            return try? JSONDecoder().decode(Pack.self, from: Data(run.stdout.utf8)).state
        }
        let resumed = try state("resume")
        #expect(resumed == .queued || resumed == .active)
        #expect(eventually(within: 20) { upstream.requests.contains { $0.target.hasPrefix("/t/") } })
        #expect(try state("suspend") == .inactive)
        #expect(try state("show") == .inactive)

        // From a terminal, delete wants --yes.
        let refused = try Self.runOnTerminal(["delete", "\(id)"] + Self.server(server), standardInput: true)
        #expect(refused.status == 64 && refused.stderr.contains("--yes"))
        #expect(try state("show") == .inactive, "not deleted")
        // A script (standard input not a terminal) is not asked.
        let deleted = try PackdCommand.run(["delete", "\(id)"] + Self.server(server))
        #expect(deleted.status == 0 && deleted.stdout.isEmpty, "\(deleted.stderr)")
        let gone = try PackdCommand.run(["show", "\(id)"] + Self.server(server))
        #expect(gone.status == 64 && gone.stderr.contains("404 "), "\(gone.stderr)")
        #expect(try PackdCommand.run(["suspend", "\(id)"] + Self.server(server)).status == 64)
    }

    @Test func createSendsTheContextFileAndLimits() throws {
        let server = try PackdServer()
        defer { server.remove() }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("packd-cli-context-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let context: [UInt8] = [0, 1, 2, 0xFE, 0xFF] + Array("app state".utf8)
        try Data(context).write(to: directory.appendingPathComponent("context.bin"))
        let run = try PackdCommand.run(["create"] + Self.server(server)
            + ["--tiles", "https://t.example/{z}/{x}/{y}.png", "--bbox", "0,0,1,1", "--zooms", "0-2", "--no-start",
               "--context-file", "context.bin", "--max-tiles", "50", "--max-bytes-per-second", "1000"], in: directory)
        #expect(run.status == 0, "\(run.stderr)")
        let created = try JSONDecoder().decode(Pack.self, from: Data(run.stdout.utf8))
        let pack = try JSONDecoder().decode(Pack.self, from: Data(server.send("GET", "/v1/packs/\(created.id)").body.utf8))
        #expect(pack.context?.bytes == context && pack.limits == PackLimits(maxTiles: 50, maxBytesPerSecond: 1000) && pack.state == .inactive)
        // Limits the server refuses come back with their pointers.
        let refused = try PackdCommand.run(["create"] + Self.server(server)
            + ["--tiles", "https://t.example/{z}/{x}/{y}.png", "--bbox", "0,0,1,1", "--zooms", "0", "--max-tiles", "0"])
        #expect(refused.status == 64 && refused.stderr.contains("\n  /limits/max_tiles: "), "\(refused.stderr)")
    }

    @Test func versionsListsWhatEachRefreshChanged() throws {
        let revision = Mutex(0)
        let upstream = try Self.tileUpstream { request in
            // Tile 1/0/0 changes with each revision; the rest never do.
            let suffix = request.target.hasSuffix("/1/0/0.png") ? " r\(revision.withLock { $0 })" : ""
            return .respond(status: 200, headers: [("Content-Type", "image/png")], body: Array("tile \(request.target)\(suffix)".utf8))
        }
        defer { upstream.stop() }
        let server = try PackdServer()
        defer { server.remove() }
        let created = try PackdCommand.run(["create"] + Self.server(server) + Self.tilesRegion(upstream) + ["--refresh", "P7D"])
        #expect(created.status == 0, "\(created.stderr)")
        let pack = try JSONDecoder().decode(Pack.self, from: Data(created.stdout.utf8))
        #expect(pack.refresh == PackRefresh(every: "P7D") && pack.nextRefreshAt != nil)
        #expect(try PackdCommand.run(["wait", "\(pack.id)"] + Self.server(server)).status == 0)

        revision.withLock { $0 = 1 }
        #expect(try server.send("POST", "/v1/packs/\(pack.id)/invalidate").status == 202)
        #expect(eventually { (try? server.send("GET", "/v1/packs/\(pack.id)").json["version"] as? Int) == 2 })
        let listed = try PackdCommand.run(["versions", "\(pack.id)"] + Self.server(server))
        #expect(listed.status == 0, "\(listed.stderr)")
        let list = try JSONDecoder().decode(PackVersionList.self, from: Data(listed.stdout.utf8))
        #expect(list.version == 2 && list.versions.map(\.version) == [2, 1])
        #expect(list.versions.first?.changedResources == 1 && list.versions.last?.changedResources == 13)
        #expect(try PackdCommand.run(["versions", "987654"] + Self.server(server)).status == 64)
    }

    @Test func geoJSONFromStandardInput() throws {
        let server = try PackdServer()
        defer { server.remove() }
        let square = #"{"type": "Polygon", "coordinates": [[[-10, 35], [20, 35], [20, 60], [-10, 60], [-10, 35]]]}"#
        let point = #"{"type": "Point", "coordinates": [2.35, 48.85]}"#
        let collection = #"{"type": "FeatureCollection", "features": [{"type": "Feature", "properties": {}, "geometry": \#(square)}, {"type": "Feature", "properties": null, "geometry": \#(point)}]}"#
        let region = ["--tiles", "https://t.example/{z}/{x}/{y}.png", "--geojson", "-", "--zooms", "0-4"]
        let run = try PackdCommand.run(["create"] + Self.server(server) + region + ["--no-start"], standardInput: Data(collection.utf8))
        #expect(run.status == 0, "\(run.stderr)")
        let pack = try JSONDecoder().decode(Pack.self, from: Data(run.stdout.utf8))
        guard case .object(let geometry)? = pack.region.geometry, case .array(let members)? = geometry["geometries"] else {
            Issue.record("not a geometry collection: \(String(describing: pack.region.geometry))")
            return
        }
        #expect(geometry["type"] == .string("GeometryCollection") && members.count == 2)
        // The same counts as estimating the square and the point's tiles: computed by the server from stdin.
        let estimate = try PackdCommand.run(["estimate"] + Self.server(server) + region,
                                            standardInput: Data(#"{"type": "Feature", "properties": {}, "geometry": \#(square)}"#.utf8))
        #expect(estimate.status == 0, "\(estimate.stderr)")
        #expect(try JSONDecoder().decode(Estimate.self, from: Data(estimate.stdout.utf8)).tiles > 5)
        let notJSON = try PackdCommand.run(["create"] + Self.server(server) + region, standardInput: Data("{\"type\": ".utf8))
        #expect(notJSON.status == 64 && notJSON.stderr.contains("standard input is not JSON"))
        let bad = try PackdCommand.run(["create"] + Self.server(server) + region,
                                       standardInput: Data(#"{"type": "Polygon", "coordinates": [[[0, 0], [1, 0], [1, 1]]]}"#.utf8))
        #expect(bad.status == 64 && bad.stderr.contains("/region/geometry"), "\(bad.stderr)")
    }

    @Test func aTerminalGetsAProgressBarRedrawnInPlace() throws {
        let upstream = try Self.tileUpstream()
        defer { upstream.stop() }
        let server = try PackdServer()
        defer { server.remove() }
        let run = try Self.runOnTerminal(["create"] + Self.server(server) + Self.tilesRegion(upstream) + ["--wait"], standardInput: false)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.output.contains("created pack 1"))
        // Redrawn with a carriage return and erase-to-end-of-line; the last drawing is complete.
        #expect(run.output.contains("\r\u{1B}[K") || run.output.contains("\u{1B}[K\r"))
        let last = try #require(run.output.components(separatedBy: "\r").last { $0.contains("pack 1") })
        #expect(last.contains("[########") && last.contains("100.0%") && last.contains("13/13") && last.contains("complete"), "\(last)")
        #expect(!run.output.contains("{\""), "no JSON on a terminal")
    }

    /// Runs packd with standard output (or only standard input) on a pseudo-terminal, in the C
    /// locale (an ASCII bar); what it wrote there and its standard error.
    static func runOnTerminal(_ arguments: [String], standardInput: Bool) throws -> (status: Int32, output: String, stderr: String) {
        let pair = try PseudoTerminal()
        let master = pair.controller, terminal = pair.terminal
        defer { close(master) }
        let errors = FileManager.default.temporaryDirectory.appendingPathComponent("packd-cli-tty-\(UUID().uuidString)")
        _ = FileManager.default.createFile(atPath: errors.path, contents: nil)
        defer { try? FileManager.default.removeItem(at: errors) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: BuiltExecutable.path("packd"))
        process.arguments = arguments
        var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("PACKD_") }
        environment["LANG"] = "C"
        environment["LC_ALL"] = "C"
        process.environment = environment
        let handle = FileHandle(fileDescriptor: terminal, closeOnDealloc: false)
        if standardInput {
            process.standardInput = handle
            process.standardOutput = FileHandle.nullDevice
        } else {
            process.standardInput = FileHandle.nullDevice
            process.standardOutput = handle
        }
        process.standardError = try FileHandle(forWritingTo: errors)
        try process.run()
        close(terminal)
        // Read until the child's end of the terminal is closed (EIO), so it never blocks on a full one.
        var output: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = read(master, &buffer, buffer.count)
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            output += buffer[0..<count]
        }
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: output, as: UTF8.self), try String(contentsOf: errors, encoding: .utf8))
    }
}
