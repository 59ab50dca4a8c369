import Foundation
import Postgres
import PostgresTestSupport
import PackdTestSupport
import Testing

/// `packd serve` processes in cluster mode on one database of the test process's PostgreSQL
/// (a temporary server: initdb into a temporary directory), short leases so a killed node's
/// units come back within seconds.
final class ClusterProcesses: @unchecked Sendable {
    let database: PostgresURL
    private(set) var nodes: [PackdServer] = []
    let arguments: [String]
    let logLevel: String
    /// `--database` as the nodes get it.
    let serveURL: String

    /// `password`: given in the URL the nodes are started with (the test server trusts local
    /// connections, so any password is accepted: what matters is where it could show).
    init(count: Int, arguments: [String] = [], password: String? = nil, logLevel: String = "warning") throws {
        database = try TemporaryPostgres.shared().makeDatabase(prefix: "cluster_e2e")
        let user = "\(TemporaryPostgres.superuser)@"
        serveURL = database.description.replacingOccurrences(of: "://" + user, with: "://" + (password.map {
            "\(TemporaryPostgres.superuser):\($0)@"
        } ?? user))
        self.arguments = ["--cluster-lease", "4s"] + arguments
        self.logLevel = logLevel
        for _ in 0..<count { nodes.append(try start()) }
    }

    deinit {
        for node in nodes { node.remove() }
        try? TemporaryPostgres.shared().dropDatabase(database)
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
    func createPack(on node: PackdServer, region: [String: Any], name: String = "shared") throws -> Int64 {
        let reply = try node.send("POST", "/v1/packs", json: ["region": region, "name": name, "start": true])
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

    /// Resources each node downloaded (`packd_downloaded_resources_total`).
    func downloadedPerNode() -> [Int] {
        nodes.map { Int((try? $0.metric("packd_downloaded_resources_total")) ?? nil ?? 0) }
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
