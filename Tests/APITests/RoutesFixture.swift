import API
import Foundation
import Logging
import Loop
import Packs
import PackdTestSupport
import Prometheus
import Server
import Store

/// packd's Store-backed API in process: a real database in a temp directory, the writer thread,
/// and the server on an ephemeral 127.0.0.1 port. Replies are recorded as JSON lines for
/// `scripts/check-responses.py` when `PACKD_RECORD_RESPONSES` names a file.
final class RoutesFixture: @unchecked Sendable {
    static let readKey = "read-key-0123456789abcdef"
    static let writeKey = "write-key-0123456789abcdef"
    static let adminKey = "admin-key-0123456789abcdef"

    let directory: URL
    let path: String
    /// The SQLite store the API runs on; its writer is at hand for tests that write behind the API's back.
    private(set) var store: SQLiteStore!
    var writer: WriterThread { store.writer }
    let server: APIFixture
    nonisolated(unsafe) var api: PackdAPI!

    /// `withKeys`: the three keys above are configured; without, every request is allowed.
    /// `directory`: reopen an earlier fixture's database.
    /// `sharing`: the export/import settings (scratch directory, upload limit).
    /// `scheduling`: what the API tells of state changes (nothing runs downloads without one).
    init(withKeys: Bool = false, reopening directory: URL? = nil, limits: ServerLimits = ServerLimits(),
         sharing: SharingSettings? = nil, cors: CORSPolicy = .disabled, publicURL: String? = nil,
         scheduling: (any PackScheduling)? = nil) throws {
        self.directory = directory ?? FileManager.default.temporaryDirectory.appendingPathComponent("packd-routes-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: self.directory, withIntermediateDirectories: true)
        path = self.directory.appendingPathComponent("packd.sqlite").path
        let authenticator = withKeys
            ? try APIKeyAuthenticator(parsing: "read:\(Self.readKey)\nwrite:\(Self.writeKey)\nadmin:\(Self.adminKey)", source: "test")
            : APIKeyAuthenticator()
        let routes = APIRouteBuilder(authenticator: authenticator, cors: cors, metrics: PackdMetrics())
        nonisolated(unsafe) var built: (PackdAPI, SQLiteStore)?
        nonisolated(unsafe) let scheduling = scheduling
        let path = path
        server = try APIFixture(limits: limits) { router, loop in
            let logger = Logger(label: "routes-test") { _ in SwiftLogNoOpLogHandler() }
            let store = try! SQLiteStore(path: path, loop: loop, configuration: .init(maximumBatchDelay: .milliseconds(5)))
            let api = try! PackdAPI(store: store, loop: loop, routes: routes, scheduling: scheduling, logger: logger)
            if let sharing { api.sharing = sharing }
            if api.sharing.artifactsDirectory == nil { api.sharing.artifactsDirectory = (path as NSString).deletingLastPathComponent + "/artifacts" }
            api.offlinePublicURL = publicURL
            api.register(in: &router)
            built = (api, store)
        }
        api = built?.0
        store = built?.1
    }

    var port: Int { server.port }

    /// Stops server and writer; the database stays for `reopening`.
    func stop() {
        nonisolated(unsafe) let api = api
        server.onLoop { api?.close() }
        server.stop()
        store.close()
    }

    func removeFiles() {
        try? FileManager.default.removeItem(at: directory)
    }

    struct Reply {
        var status: Int
        var headers: [(String, String)]
        var body: String

        func header(_ name: String) -> String? {
            headers.first { $0.0.lowercased() == name.lowercased() }?.1
        }

        var json: [String: Any] {
            (try? JSONSerialization.jsonObject(with: Data(body.utf8))) as? [String: Any] ?? [:]
        }
    }

    /// One request on its own connection. JSON bodies get `Content-Type: application/json`
    /// unless `headers` sets one.
    @discardableResult
    func send(_ method: String, _ target: String, json: String? = nil, body: [UInt8]? = nil,
              headers: [String: String] = [:]) throws -> Reply {
        let client = try StreamClient(port: port)
        let payload = body ?? json.map { Array($0.utf8) } ?? []
        var head = "\(method) \(target) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
        var fields = headers
        if json != nil, fields.keys.allSatisfy({ $0.lowercased() != "content-type" }) { fields["Content-Type"] = "application/json" }
        for (name, value) in fields { head += "\(name): \(value)\r\n" }
        if !payload.isEmpty || method == "POST" || method == "PUT" || method == "PATCH" { head += "Content-Length: \(payload.count)\r\n" }
        try client.send(head + "\r\n" + String(decoding: payload, as: UTF8.self))
        try client.readHead()
        let text = client.status == 304 || client.status == 204 || method == "HEAD" ? "" : try client.readBody()
        let reply = Reply(status: client.status, headers: client.headers, body: text)
        ResponseRecorder.record(method: method, target: target, status: reply.status, headers: reply.headers, body: reply.body)
        return reply
    }

    /// A region whose tile count is known at creation: 1 tile at z0, 4 at z1.
    static func templateRegion(maxZoom: Int = 1, bounds: String = "[-180, -85, 180, 85]") -> String {
        #"{"tiles": ["https://tiles.example.org/{z}/{x}/{y}.png"], "bounds": \#(bounds), "min_zoom": 0, "max_zoom": \#(maxZoom)}"#
    }
}
