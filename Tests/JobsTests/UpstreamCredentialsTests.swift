import Fetch
import Foundation
import Glibc
import Jobs
import PackdTestSupport
import Store
import Testing

/// Upstream rules carry credentials to the upstream and nowhere else: not into the database,
/// the API, the events or the logs.
@Suite struct UpstreamCredentialsTests {
    static let headerSecret = "hdrSecretQ7fZ2kLp9w"
    static let querySecret = "qrySecretM3xV8nTb4r"

    /// The real `packd serve` with a rules file adding a header token and a query token, at
    /// log level trace, downloads a pack to complete; then every byte it wrote or answered is
    /// searched for both secrets.
    @Test func ruleCredentialsReachTheUpstreamAndNothingElse() throws {
        // Every 7th upstream request fails once (500) so retries, and their log lines, happen too.
        let upstream = try MapUpstream(faults: .init(failEvery: 7))
        defer { upstream.stop() }
        let rulesDirectory = try TemporaryDatabase()
        defer { rulesDirectory.remove() }
        let directory = rulesDirectory.directory
        let rules = """
            {"rules": [{"prefix": "\(upstream.base)/", "headers": {"X-Upstream-Token": "\(Self.headerSecret)"},
                        "query": {"access_token": "\(Self.querySecret)"}}]}
            """
        let rulesPath = directory.appendingPathComponent("rules.json").path
        try Data(rules.utf8).write(to: URL(fileURLWithPath: rulesPath))
        let server = try PackdServer(arguments: ["--retry-initial-backoff", "10ms", "--retry-max-backoff", "100ms"],
                                     environment: ["PACKD_UPSTREAM_RULES_FILE": rulesPath], logLevel: "trace",
                                     capturesOutput: true)
        defer { server.remove() }
        let port = server.port
        var answers: [[UInt8]] = []
        let body: [String: Any] = ["name": "credentials", "start": true,
                                   "region": PackDownloadTests.region(upstream, maxZoom: 4)]
        let created = try BinaryExchange.send(port: port, method: "POST", path: "/v1/packs",
                                            body: try JSONSerialization.data(withJSONObject: body))
        answers.append(created.body)
        let packID = try #require(try created.decodedJSON()["id"] as? Int)
        var last: [String: Any] = [:]
        #expect(eventually {
            guard let pack = try? BinaryExchange.send(port: port, method: "GET", path: "/v1/packs/\(packID)") else { return false }
            answers.append(pack.body)
            last = (try? pack.decodedJSON()) ?? [:]
            return ["complete", "failed"].contains(last["state"] as? String ?? "")
        })
        #expect(last["state"] as? String == "complete", "\(last)")

        for path in ["/v1/packs", "/v1/packs/\(packID)/errors", "/v1/storage"] {
            let answer = try BinaryExchange.send(port: port, method: "GET", path: path)
            #expect(answer.status == 200, "\(path)")
            answers.append(answer.body)
        }
        // The pack's events, replayed from the start, read until its `complete` state arrives.
        let events = try BinaryExchange.send(port: port, method: "GET", path: "/v1/packs/\(packID)/events",
                                           headers: ["Last-Event-ID: 0"]) { received in
            received.firstRange(of: Array(#""complete""#.utf8)) != nil
        }
        #expect(String(decoding: events.body, as: UTF8.self).contains("event: state"))
        answers.append(events.body)

        #expect(server.stop() == 0)

        // The upstream saw both credentials on every request.
        let requests = upstream.requests
        #expect(requests.count > 20)
        for request in requests {
            #expect(request.headers["x-upstream-token"] == Self.headerSecret, "\(request.target)")
            #expect(request.target.contains("access_token=\(Self.querySecret)"), "\(request.target)")
        }

        // Nowhere else: database (and its WAL), every API answer, events, logs.
        var places: [(String, [UInt8])] = []
        for suffix in ["", "-wal", "-shm", "-journal"] {
            if let bytes = FileManager.default.contents(atPath: server.databasePath + suffix) {
                places.append(("database\(suffix)", Array(bytes)))
            }
        }
        // The files searched do hold the download: its canonical URLs are there.
        let stored = places.flatMap(\.1)
        #expect(stored.firstRange(of: Array((upstream.base + "/style.json").utf8)) != nil)
        for (index, answer) in answers.enumerated() { places.append(("answer \(index)", answer)) }
        let log = server.standardOutput + server.standardError
        #expect(String(decoding: log, as: UTF8.self).contains("listening on"))
        places.append(("logs", log))
        for (place, bytes) in places {
            for secret in [Self.headerSecret, Self.querySecret] {
                #expect(bytes.firstRange(of: Array(secret.utf8)) == nil, "\(secret) found in \(place)")
            }
        }
        // The canonical URLs are what the store holds.
        let reader = try StoreReader(path: server.databasePath)
        #expect(try reader.resource(.resource(url: upstream.base + "/style.json", kind: .style)) != nil)
    }

    /// A rewrite rule changes where requests go, never what is stored: the store keeps the
    /// canonical URL template, and the rewritten base appears in no stored row.
    @Test func rewriteRuleStoresCanonicalURLs() throws {
        let upstream = try TestUpstream { request in
            .respond(status: 200, headers: [("Cache-Control", "max-age=60")], body: Array("tile \(request.target)".utf8))
        }
        defer { upstream.stop() }
        let database = try TemporaryDatabase()
        defer { database.remove() }
        let canonical = "http://tiles.canonical.invalid/base/"
        let rule = UpstreamRule(prefix: canonical, rewrittenPrefix: upstream.url("/mirror/"))
        let harness = try JobsHarness(path: database.path, fetch: FetchConfiguration(addressPolicy: .loopbackForTests,
                                                                                    rules: [rule]))
        defer { harness.close() }
        let template = canonical + "{z}/{x}/{y}.png"
        let packID = try harness.createQueuedPack(region: ["tiles": [template], "bounds": [-10.0, -10.0, 10.0, 10.0],
                                                           "min_zoom": 0, "max_zoom": 3])
        try harness.onLoop { harness.scheduler.packQueued(packID) }
        #expect(harness.waitForState(packID, ["complete", "failed"]).last == "complete",
                "\(harness.publishedError(packID) ?? "")")
        harness.close()

        let requests = upstream.requests
        #expect(!requests.isEmpty)
        #expect(requests.allSatisfy { $0.target.hasPrefix("/mirror/") })
        let store = try Database(path: database.path, mode: .readOnly)
        let templates = try Self.strings("SELECT DISTINCT url_template FROM tiles", in: store)
        #expect(templates == [template])
        #expect(try store.scalarInt("SELECT count(*) FROM tiles") == Int64(requests.count))
        let rewritten = upstream.url("/mirror/")
        let urls = try Self.strings("SELECT url FROM resources", in: store)
        #expect(!urls.contains { $0.contains(rewritten) || $0.contains("127.0.0.1") })
    }

    static func strings(_ sql: String, in database: Database) throws -> [String] {
        var result: [String] = []
        try database.cachedStatement(sql).forEachRow([]) { result.append($0.string(at: 0) ?? "") }
        return result
    }
}
