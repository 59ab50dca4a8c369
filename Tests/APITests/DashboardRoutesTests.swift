import Foundation
import PackdTestSupport
import Server
import Testing
@testable import API

/// The dashboard's routes over real sockets: the redirect, files with their types, tags and
/// safe headers, `304`, `HEAD`, public access while keys are configured, and no way out of the
/// loaded tables (traversal, encoded slashes, symlinks, unserved names).
@Suite struct DashboardRoutesTests {
    /// A page directory and a map library directory in a fresh temporary folder.
    final class Files {
        let root: URL
        var pages: URL { root.appendingPathComponent("dashboard") }
        var library: URL { root.appendingPathComponent("maplibre-gl") }
        static let index = "<!doctype html><title>packd</title><script type=module src=app.js></script>"
        static let app = "import './api.js';\n"

        init(withLibrary: Bool = true) throws {
            root = FileManager.default.temporaryDirectory.appendingPathComponent("packd-dashboard-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: pages, withIntermediateDirectories: true)
            try write("dashboard/index.html", Self.index)
            try write("dashboard/app.js", Self.app)
            try write("dashboard/dashboard.css", "body{margin:0}")
            try write("dashboard/icon.svg", "<svg xmlns='http://www.w3.org/2000/svg'/>")
            try write("dashboard/notes.exe", "MZ")
            try write("dashboard/.hidden.js", "secret()")
            try write("secret.txt", "root:x:0:0")
            // A symlink in the page directory must not be followed.
            try FileManager.default.createSymbolicLink(atPath: pages.appendingPathComponent("escape.js").path,
                                                       withDestinationPath: root.appendingPathComponent("secret.txt").path)
            try FileManager.default.createDirectory(at: pages.appendingPathComponent("sub"), withIntermediateDirectories: true)
            try write("dashboard/sub/inner.js", "inner()")
            if withLibrary {
                try FileManager.default.createDirectory(at: library, withIntermediateDirectories: true)
                try write("maplibre-gl/maplibre-gl.js", "var maplibregl = {};")
                try write("maplibre-gl/maplibre-gl.css", ".maplibregl-map{}")
            }
        }

        func write(_ path: String, _ text: String) throws {
            try Data(text.utf8).write(to: root.appendingPathComponent(path))
        }

        func load() throws -> DashboardAssets {
            try DashboardAssets.load(pageDirectory: pages.path,
                                     mapLibraryDirectory: FileManager.default.fileExists(atPath: library.path) ? library.path : nil)
        }

        deinit { try? FileManager.default.removeItem(at: root) }
    }

    /// The routes behind the real route builder, with API keys configured: the page stays public.
    private func serve(_ assets: DashboardAssets, publicURL: String? = nil) throws -> APIFixture {
        let keys = try APIKeyAuthenticator(parsing: "read:read-key-0123456789abcdef", source: "test")
        let routes = APIRouteBuilder(authenticator: keys, cors: .disabled, metrics: PackdMetrics())
        return try APIFixture { router, _ in
            DashboardRoutes(assets: assets, publicURL: publicURL).register(in: &router, using: routes)
        }
    }

    private func get(_ port: Int, _ target: String, method: String = "GET", headers: [String: String] = [:]) throws -> RoutesFixture.Reply {
        let client = try StreamClient(port: port)
        var head = "\(method) \(target) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        try client.send(head + "\r\n")
        try client.readHead()
        let body = client.status == 304 || method == "HEAD" ? "" : try client.readBody()
        let reply = RoutesFixture.Reply(status: client.status, headers: client.headers, body: body)
        ResponseRecorder.record(method: method, target: target, status: reply.status, headers: reply.headers, body: reply.body)
        return reply
    }

    private func expectSafeHeaders(_ reply: RoutesFixture.Reply, _ target: String) {
        let policy = reply.header("Content-Security-Policy") ?? ""
        #expect(policy.contains("default-src 'none'"), "\(target)")
        #expect(policy.contains("script-src 'self'") && !policy.contains("unsafe"), "\(target)")
        #expect(policy.contains("worker-src blob:") && policy.contains("frame-ancestors 'none'"), "\(target)")
        #expect(reply.header("X-Content-Type-Options") == "nosniff", "\(target)")
        #expect(reply.header("Referrer-Policy") == "no-referrer", "\(target)")
        #expect(reply.header("X-Frame-Options") == "DENY", "\(target)")
    }

    @Test func rootRedirectsToThePageWhichIsServedWithItsFiles() throws {
        let files = try Files()
        let fixture = try serve(try files.load())
        defer { fixture.stop() }
        let root = try get(fixture.port, "/")
        #expect(root.status == 302 && root.header("Location") == "dashboard/")
        expectSafeHeaders(root, "/")
        let bare = try get(fixture.port, "/dashboard")
        #expect(bare.status == 302 && bare.header("Location") == "dashboard/")

        let page = try get(fixture.port, "/dashboard/")
        #expect(page.status == 200 && page.body == Files.index)
        #expect(page.header("Content-Type") == "text/html; charset=utf-8")
        #expect(page.header("Cache-Control") == "no-cache")
        #expect(page.header("ETag")?.hasPrefix("\"") == true)
        expectSafeHeaders(page, "/dashboard/")

        for (target, type, body) in [("/dashboard/app.js", "text/javascript; charset=utf-8", Files.app),
                                     ("/dashboard/dashboard.css", "text/css; charset=utf-8", "body{margin:0}"),
                                     ("/dashboard/icon.svg", "image/svg+xml", "<svg xmlns='http://www.w3.org/2000/svg'/>"),
                                     ("/dashboard/vendor/maplibre-gl.js", "text/javascript; charset=utf-8", "var maplibregl = {};"),
                                     ("/dashboard/vendor/maplibre-gl.css", "text/css; charset=utf-8", ".maplibregl-map{}")] {
            let reply = try get(fixture.port, target)
            #expect(reply.status == 200 && reply.body == body, "\(target)")
            #expect(reply.header("Content-Type") == type, "\(target)")
            expectSafeHeaders(reply, target)
        }
        let setup = try get(fixture.port, "/dashboard/setup.json")
        #expect(setup.json["map_library"] as? Bool == true)
        #expect(setup.json["public_origin"] is NSNull)
    }

    @Test func tagsAnswerNotModifiedAndHeadAnswersTheSameHeadersWithoutABody() throws {
        let files = try Files()
        let fixture = try serve(try files.load())
        defer { fixture.stop() }
        let first = try get(fixture.port, "/dashboard/app.js")
        let tag = try #require(first.header("ETag"))
        for offered in [tag, "W/\(tag)", "\"other\", \(tag)", "*"] {
            let again = try get(fixture.port, "/dashboard/app.js", headers: ["If-None-Match": offered])
            #expect(again.status == 304 && again.body.isEmpty, "\(offered)")
            #expect(again.header("ETag") == tag)
            expectSafeHeaders(again, "304")
        }
        #expect(try get(fixture.port, "/dashboard/app.js", headers: ["If-None-Match": "\"stale\""]).status == 200)
        // Another file has another tag; equal bytes have equal tags.
        #expect(try get(fixture.port, "/dashboard/dashboard.css").header("ETag") != tag)
        #expect(DashboardAssets.etag(Array(Files.app.utf8)) == tag)

        let head = try get(fixture.port, "/dashboard/app.js", method: "HEAD")
        #expect(head.status == 200 && head.body.isEmpty)
        #expect(head.header("Content-Length") == String(Files.app.utf8.count))
        #expect(head.header("Content-Type") == first.header("Content-Type") && head.header("ETag") == tag)
    }

    @Test func nothingOutsideTheLoadedFilesIsReachable() throws {
        let files = try Files()
        let assets = try files.load()
        #expect(Set(assets.pages.keys) == ["index.html", "app.js", "dashboard.css", "icon.svg"])
        #expect(assets.skipped.contains { $0.hasSuffix("escape.js: not a regular file") })
        #expect(assets.skipped.contains { $0.hasSuffix("notes.exe: not a served name or type") })
        let fixture = try serve(assets)
        defer { fixture.stop() }
        let attempts = [
            "/dashboard/../secret.txt", "/dashboard/..%2Fsecret.txt", "/dashboard/..%2f..%2fsecret.txt",
            "/dashboard/%2e%2e", "/dashboard/%2e%2e%2fsecret.txt", "/dashboard/vendor/..%2Findex.html",
            "/dashboard/vendor/%2e%2e%2f%2e%2e%2fsecret.txt", "/dashboard/escape.js", "/dashboard/notes.exe",
            "/dashboard/.hidden.js", "/dashboard/sub/inner.js", "/dashboard/sub%2Finner.js", "/dashboard/vendor/index.html",
            "/dashboard/maplibre-gl.js", "/dashboard/index.html%00.js", "/dashboard/%ff", "/dashboard/app.js/",
            "/dashboard//etc/passwd", "/dashboard/%2Fetc%2Fpasswd",
        ]
        for target in attempts {
            let reply = try get(fixture.port, target)
            #expect([404, 400].contains(reply.status), "\(target): \(reply.status)")
            #expect(!reply.body.contains("root:") && !reply.body.contains("secret()") && !reply.body.contains("inner()"), "\(target)")
        }
        // The page's own name is served under its own route only.
        #expect(try get(fixture.port, "/dashboard/index.html").status == 200)
        #expect(try get(fixture.port, "/dashboard/app.js/").status == 404)
    }

    @Test func withoutTheMapLibraryThePageSaysSoAndVendorIsEmpty() throws {
        let files = try Files(withLibrary: false)
        let fixture = try serve(try files.load())
        defer { fixture.stop() }
        #expect(try get(fixture.port, "/dashboard/setup.json").json["map_library"] as? Bool == false)
        #expect(try get(fixture.port, "/dashboard/vendor/maplibre-gl.js").status == 404)
        #expect(try get(fixture.port, "/dashboard/").status == 200)

        // Half a library is no library.
        try FileManager.default.createDirectory(at: files.library, withIntermediateDirectories: true)
        try files.write("maplibre-gl/maplibre-gl.js", "var maplibregl = {};")
        let half = try DashboardAssets.load(pageDirectory: files.pages.path, mapLibraryDirectory: files.library.path)
        #expect(!half.hasMapLibrary)
        #expect(half.skipped.contains { $0.contains("needs both") })
        // A library directory that cannot be read turns maps off; it does not stop the page.
        let missing = try DashboardAssets.load(pageDirectory: files.pages.path, mapLibraryDirectory: files.root.path + "/nowhere")
        #expect(!missing.hasMapLibrary && missing.pages["index.html"] != nil)
    }

    @Test func aPageDirectoryWithoutIndexIsRefusedAndLimitsHold() throws {
        let files = try Files()
        try FileManager.default.removeItem(at: files.pages.appendingPathComponent("index.html"))
        #expect(throws: DashboardAssets.LoadError.self) { try files.load() }

        // A file over the size limit is left out (and never read: it is sparse).
        let big = try Files()
        let path = big.pages.appendingPathComponent("huge.js").path
        #expect(FileManager.default.createFile(atPath: path, contents: nil))
        let handle = try #require(FileHandle(forWritingAtPath: path))
        try handle.truncate(atOffset: UInt64(DashboardAssets.maximumFileBytes + 1))
        try handle.close()
        let assets = try big.load()
        #expect(assets.pages["huge.js"] == nil)
        #expect(assets.skipped.contains { $0.contains("huge.js: over the size or count limit") })
        for name in ["index.html", "a-b_c.1.js", "Z9.css"] { #expect(DashboardAssets.isPlainName(name), "\(name)") }
        for name in ["", ".env", "-x.js", "a/b.js", "a b.js", "..", "é.js", String(repeating: "a", count: 129)] {
            #expect(!DashboardAssets.isPlainName(name), "\(name)")
        }
    }

    @Test func thePublicURLsOriginMayBeConnectedTo() throws {
        let files = try Files()
        let fixture = try serve(try files.load(), publicURL: "https://maps.example.org/packd")
        defer { fixture.stop() }
        let policy = try get(fixture.port, "/dashboard/").header("Content-Security-Policy") ?? ""
        #expect(policy.contains("connect-src 'self' https://maps.example.org;"))
        #expect(try get(fixture.port, "/dashboard/setup.json").json["public_origin"] as? String == "https://maps.example.org")
        #expect(DashboardHeaders.origin(of: "HTTPS://Maps.Example.org:443/packd") == "https://maps.example.org")
        #expect(DashboardHeaders.origin(of: "http://maps.example.org:8080") == "http://maps.example.org:8080")
    }
}
