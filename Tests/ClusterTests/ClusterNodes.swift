import Foundation
import Glibc
import Postgres
import PostgresTestSupport
import PackdTestSupport
import Testing

/// `packd serve` processes in cluster mode on one database of the test process's PostgreSQL
/// (a temporary server: initdb into a temporary directory), short leases so a killed node's
/// units come back within seconds.
final class ClusterProcesses: @unchecked Sendable {
    let server: TemporaryPostgres
    let database: PostgresURL
    private(set) var nodes: [PackdServer] = []
    let arguments: [String]
    let logLevel: String
    /// `--database` as the nodes get it.
    let serveURL: String

    /// `password`: given in the URL the nodes are started with (the test server trusts local
    /// connections, so any password is accepted: what matters is where it could show).
    /// `server`: a PostgreSQL of the test's own (one it restarts), else the shared one.
    /// The lease the nodes get unless a test says otherwise (`--cluster-lease`).
    static let defaultLeaseSeconds: Double = 4

    init(count: Int, arguments: [String] = [], password: String? = nil, logLevel: String = "warning",
         lease: String = "\(Int(defaultLeaseSeconds))s", server: TemporaryPostgres? = nil) throws {
        self.server = try server ?? TemporaryPostgres.shared()
        database = try self.server.makeDatabase(prefix: "cluster_e2e")
        let user = "\(TemporaryPostgres.superuser)@"
        serveURL = database.description.replacingOccurrences(of: "://" + user, with: "://" + (password.map {
            "\(TemporaryPostgres.superuser):\($0)@"
        } ?? user))
        self.arguments = ["--cluster-lease", lease] + arguments
        self.logLevel = logLevel
        for _ in 0..<count { nodes.append(try start()) }
    }

    deinit {
        for node in nodes { node.remove() }
        try? server.dropDatabase(database)
    }

    /// One more node on the same database.
    func start() throws -> PackdServer {
        try PackdServer(arguments: arguments, logLevel: logLevel, capturesOutput: true, database: serveURL)
    }

    /// A connection to the cluster's database, packd's schema first on the path.
    func connect() throws -> PostgresConnection {
        let connection = try PostgresConnection(url: database, applicationName: "cluster-test")
        try connection.execute("SET search_path TO packd, pg_catalog")
        return connection
    }

    /// Creates a started pack of `region` on `node`; its id.
    func createPack(on node: PackdServer, region: [String: Any], name: String = "shared",
                    extra: [String: Any] = [:]) throws -> Int64 {
        let reply = try node.send("POST", "/v1/packs", json: ["region": region, "name": name, "start": true]
                                      .merging(extra) { $1 })
        guard reply.status == 201, let id = reply.json["id"] as? Int else {
            throw ClientFailure(description: "creating the pack answered \(reply.status): \(reply.body)")
        }
        return Int64(id)
    }

    /// The pack as `node` shows it.
    func pack(_ id: Int64, on node: PackdServer) throws -> [String: Any] {
        try node.send("GET", "/v1/packs/\(id)").json
    }

    /// Waits until the pack is in a final state (complete or failed); that state.
    func waitUntilDone(_ id: Int64, on node: PackdServer, within seconds: Double = 120) throws -> [String: Any] {
        var last: [String: Any] = [:]
        guard eventually(within: seconds, {
            last = (try? pack(id, on: node)) ?? [:]
            return ["complete", "failed"].contains(last["state"] as? String ?? "")
        }) else {
            throw ClientFailure(description: "pack \(id) did not finish: \(last)")
        }
        return last
    }

    /// Units each node holds under a lease that has not run out, by the database, keyed by the
    /// node's index in `nodes` (nodes started again are matched by their listen address).
    func unitsHeld(on database: PostgresConnection) throws -> [Int: (units: Int64, tiles: Int64)] {
        var held: [Int: (units: Int64, tiles: Int64)] = [:]
        for (index, node) in nodes.enumerated() {
            let row = try database.query("""
                SELECT count(*)::int8, coalesce(sum(u.tiles), 0)::int8 FROM packd_work_units u
                JOIN packd_nodes n ON n.id = u.lease_owner
                WHERE n.listen_address = $1 AND n.stopped_at IS NULL AND u.state = 'leased' AND u.lease_expires_at >= now()
                """, [.text("127.0.0.1:\(node.port)")]).first
            held[index] = (try row?.int64(0) ?? 0, try row?.int64(1) ?? 0)
        }
        return held
    }

    /// Waits until the pack's stored tiles reach `share` of its expected tiles (polled over HTTP
    /// on `node`, a few times a second).
    func waitForShare(_ share: Double, of id: Int64, on node: PackdServer, within seconds: Double = 120) -> Bool {
        eventually(within: seconds) {
            usleep(20_000)
            guard let progress = (try? self.pack(id, on: node))?["progress"] as? [String: Any] else { return false }
            let expected = (progress["expected_resources"] as? Int ?? 0) - 2
            return expected > 0 && Double(progress["completed_tiles"] as? Int ?? 0) >= share * Double(expected)
        }
    }

    /// Checks a finished pack of `ClusterDownloadTests.region` the way every fault test does:
    /// complete, counts exact in the pack, the link table and the cluster's counters, every
    /// tile fetched; returns the expected tiles and the tiles requested more than once.
    func expectExact(_ id: Int64, upstream: TileServerUpstream, sourceLocation: SourceLocation = #_sourceLocation) throws
        -> (tiles: Int, duplicates: Int) {
        let pack = try waitUntilDone(id, on: nodes[0], within: 180)
        try #require(pack["state"] as? String == "complete", "\(pack)\n\(logs)", sourceLocation: sourceLocation)
        let progress = try #require(pack["progress"] as? [String: Any], sourceLocation: sourceLocation)
        let expected = try #require(progress["expected_resources"] as? Int, sourceLocation: sourceLocation) - 2
        #expect(progress["completed_tiles"] as? Int == expected && progress["failed_resources"] as? Int == 0,
                "\(progress)", sourceLocation: sourceLocation)
        let database = try connect()
        #expect(try database.scalarInt("SELECT count(*)::int8 FROM region_tiles WHERE region_id = $1", [.int8(id)]) == Int64(expected),
                sourceLocation: sourceLocation)
        #expect(try database.scalarInt("SELECT sum(linked_tiles)::int8 FROM packd_totals") == Int64(expected),
                sourceLocation: sourceLocation)
        let requests = upstream.tileRequests
        #expect(requests.count == expected, "every tile was fetched", sourceLocation: sourceLocation)
        return (expected, requests.values.reduce(0) { $0 + $1 - 1 })
    }

    /// Resources each node downloaded (`packd_downloaded_resources_total`).
    func downloadedPerNode() -> [Int] {
        nodes.map { Int((try? $0.metric("packd_downloaded_resources_total")) ?? nil ?? 0) }
    }

    /// Nodes that fenced themselves at least once (their log says they stopped their units).
    var fencedNodes: Int {
        nodes.filter { String(decoding: $0.standardError, as: UTF8.self).contains("stops its units") }.count
    }

    /// Each node's stderr, for a failing test's report.
    var logs: String {
        nodes.enumerated().map { "node \($0.offset): " + String(decoding: $0.element.standardError.suffix(4000), as: UTF8.self) }
            .joined(separator: "\n")
    }
}

/// An event stream read on a thread of its own until `until` says stop, every event kept with
/// when it arrived.
final class EventRecorder: @unchecked Sendable {
    struct Received {
        let event: StreamClient.Event
        let at: ContinuousClock.Instant
    }

    private let lock = NSLock()
    private var received: [Received] = []
    private var finished = false
    private let done = DispatchSemaphore(value: 0)

    /// Reads `client` until `until` is true for an event (included) or the stream ends.
    init(_ client: StreamClient, until: @escaping @Sendable (StreamClient.Event) -> Bool) {
        let box = LoopBoundClient(client)
        Thread { [self] in
            while let event = try? box.client.nextEvent() {
                lock.withLock { received.append(Received(event: event, at: .now)) }
                if until(event) { break }
            }
            lock.withLock { finished = true }
            done.signal()
        }.start()
    }

    var events: [Received] { lock.withLock { received } }

    /// Waits for the reader to stop; false after `seconds`.
    func wait(seconds: Double) -> Bool {
        done.wait(timeout: .now() + seconds) == .success
    }
}

private struct LoopBoundClient: @unchecked Sendable {
    let client: StreamClient
    init(_ client: StreamClient) { self.client = client }
}
