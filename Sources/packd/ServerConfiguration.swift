import API
import Events
import Fetch
import Foundation
import Logging
import Postgres
import Server
import Webhooks
import Store
import WorkSharing

/// Everything `packd serve` needs, resolved from flags first, then `PACKD_*` environment
/// variables, then defaults, and validated once so a bad value stops the process before it binds.
struct ServerConfiguration {
    enum LogFormat: String, CaseIterable {
        case text
        case json
    }

    /// A bad setting, named the way the operator wrote it (flag or environment variable).
    struct Invalid: Error, CustomStringConvertible {
        let setting: String
        let problem: String
        var description: String { "invalid \(setting): \(problem)" }
    }

    var listen: ListenAddress
    /// The SQLite file (ignored in cluster mode).
    var databasePath: String
    /// The page size of a database packd creates.
    var databasePageSize = WriterThread.Configuration.defaultPageSize
    /// Versions kept per pack (`--keep-versions`).
    var keepVersions = 3
    /// Where artifacts are kept, and their byte budget (nil: unlimited).
    var artifactsDirectory: String
    var artifactsMaximumBytes: Int?
    /// Cluster mode: set when the database is a `postgresql://` URL.
    var cluster: ClusterConfiguration?
    var logLevel: Logger.Level
    var logFormat: LogFormat
    var openAPIPath: String?
    var portFile: String?
    var limits: ServerLimits
    var debugRoutes: Bool
    var authenticator: APIKeyAuthenticator
    var cors: CORSPolicy
    /// `scheme://host[:port][/path]` for offline URLs; nil: from each request's `Host`.
    var publicURL: String?
    /// Which upstream addresses downloads may reach beyond the public internet.
    var upstreamPolicy: AddressPolicy
    /// Download concurrency, retries, limits and upstream rules.
    var downloads: DownloadConfiguration
    /// Server-sent events: the heartbeat comment interval (tests shorten it).
    var events = EventBroadcaster.Configuration()
    /// Where the dashboard's files are; nil: `--dashboard=false`.
    var dashboard: DashboardFiles?
    /// How webhooks are sent: the retry schedule's maximum age (`--webhook-max-age`).
    var webhooks = WebhookDispatcher.Configuration()

    private static let defaultListen = ListenAddress.loopback(port: 8080)

    /// Reads one setting: the flag if given, else the environment variable, else nil.
    struct Source {
        let environment: [String: String]

        func value(_ flag: String?, _ name: String) -> (text: String, setting: String)? {
            if let flag { return (flag, "--\(name.lowercased().replacingOccurrences(of: "_", with: "-"))") }
            if let text = environment["PACKD_\(name)"], !text.isEmpty { return (text, "PACKD_\(name)") }
            return nil
        }
    }

    init(options: ServeCommand.Options, environment: [String: String]) throws(Invalid) {
        let source = Source(environment: environment)
        if let (text, setting) = source.value(options.listen, "LISTEN") {
            do {
                listen = try ListenAddress(parsing: text)
            } catch {
                throw Invalid(setting: setting, problem: error.description)
            }
        } else {
            listen = Self.defaultListen
        }
        let database = source.value(options.database, "DATABASE")
        databasePath = database?.text ?? "./packd.sqlite"
        if databasePath.isEmpty { throw Invalid(setting: database?.setting ?? "--database", problem: "empty path") }
        if let (text, setting) = source.value(options.databasePageSize, "DATABASE_PAGE_SIZE") {
            guard let size = Int(text), SchemaMigrator.isValidPageSize(size) else {
                throw Invalid(setting: setting, problem: "'\(text)' is not a power of two from 512 to 65536")
            }
            databasePageSize = size
        }
        keepVersions = try source.count(options.keepVersions, "KEEP_VERSIONS", 1...1_000) ?? keepVersions
        if let database, PostgresURL.looksLikeURL(database.text) {
            cluster = try ClusterConfiguration(url: database, options: options, source: source)
            databasePath = ""
        }
        if let (text, setting) = source.value(options.artifactsDir, "ARTIFACTS_DIR") {
            guard !text.isEmpty, !text.contains("\0") else { throw Invalid(setting: setting, problem: "empty path") }
            artifactsDirectory = text
        } else {
            artifactsDirectory = Self.defaultArtifactsDirectory(databasePath: databasePath)
        }
        artifactsMaximumBytes = try source.count(options.artifactsMaxBytes, "ARTIFACTS_MAX_BYTES", 1...1 << 50)

        logLevel = .info
        if let (text, setting) = source.value(options.logLevel, "LOG_LEVEL") {
            guard let level = Logger.Level(rawValue: text.lowercased()) else {
                throw Invalid(setting: setting, problem: "'\(text)' is not one of \(Logger.Level.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            logLevel = level
        }
        logFormat = .text
        if let (text, setting) = source.value(options.logFormat, "LOG_FORMAT") {
            guard let format = LogFormat(rawValue: text.lowercased()) else {
                throw Invalid(setting: setting, problem: "'\(text)' is not text or json")
            }
            logFormat = format
        }
        openAPIPath = source.value(options.openapi, "OPENAPI")?.text
        portFile = source.value(options.portFile, "PORT_FILE")?.text
        let keysFile = source.value(options.apiKeysFile, "API_KEYS_FILE")
        do {
            authenticator = try APIKeyAuthenticator.load(environment: environment, file: keysFile?.text)
        } catch {
            throw Invalid(setting: keysFile?.setting ?? "PACKD_API_KEYS", problem: error.description)
        }
        do {
            try ListenAddressPolicy.check(listen, authenticator: authenticator)
        } catch {
            throw Invalid(setting: source.value(options.listen, "LISTEN")?.setting ?? "--listen", problem: error.description)
        }
        cors = .disabled
        if let (text, setting) = source.value(options.corsOrigins, "CORS_ORIGINS") {
            do {
                cors = try CORSPolicy(parsing: text)
            } catch {
                throw Invalid(setting: setting, problem: error.description)
            }
        }
        if let (text, setting) = source.value(options.publicURL, "PUBLIC_URL") {
            guard let url = OfflineResourceRoutes.publicBaseURL(text) else {
                throw Invalid(setting: setting, problem: "'\(text.prefix(100))' is not an http(s) URL without user info, query or fragment")
            }
            publicURL = url
        }
        upstreamPolicy = AddressPolicy()
        if let (text, setting) = source.value(options.allowUpstreamHosts, "ALLOW_UPSTREAM_HOSTS") {
            guard let policy = Self.parseUpstreamPolicy(text) else {
                throw Invalid(setting: setting, problem: "'\(text)' is not a comma-separated list of host names or CIDRs")
            }
            upstreamPolicy = policy
        }
        var dashboardOn = true
        if let (text, setting) = source.value(options.dashboard, "DASHBOARD") {
            guard let value = Self.parseSwitch(text) else { throw Invalid(setting: setting, problem: "'\(text.prefix(20))' is not true or false") }
            dashboardOn = value
        }
        if dashboardOn {
            dashboard = try DashboardFiles.checked(pageDirectory: source.value(options.dashboardDir, "DASHBOARD_DIR"),
                                                   mapLibraryDirectory: source.value(options.mapLibraryDir, "MAP_LIBRARY_DIR"))
        }
        debugRoutes = options.debugRoutes || ["1", "true", "yes"].contains(environment["PACKD_DEBUG_ROUTES"]?.lowercased() ?? "")

        var limits = ServerLimits()
        let count = source.count
        let duration = source.duration
        limits.maxConnections = try count(options.maxConnections, "MAX_CONNECTIONS", 1...1_000_000) ?? limits.maxConnections
        // http_parser refuses heads over 80 KiB by itself, so a larger setting would be a lie.
        limits.maxHeaderBytes = try count(options.maxHeaderBytes, "MAX_HEADER_BYTES", 1024...80 * 1024) ?? limits.maxHeaderBytes
        limits.maxBodyBytes = try count(options.maxBodyBytes, "MAX_BODY_BYTES", 0...1 << 40) ?? limits.maxBodyBytes
        limits.maxPipelinedRequests = try count(options.maxPipelinedRequests, "MAX_PIPELINED_REQUESTS", 1...1024) ?? limits.maxPipelinedRequests
        limits.headerTimeout = try duration(options.headerTimeout, "HEADER_TIMEOUT") ?? limits.headerTimeout
        limits.bodyTimeout = try duration(options.bodyTimeout, "BODY_TIMEOUT") ?? limits.bodyTimeout
        limits.idleTimeout = try duration(options.idleTimeout, "IDLE_TIMEOUT") ?? limits.idleTimeout
        limits.writeTimeout = try duration(options.writeTimeout, "WRITE_TIMEOUT") ?? limits.writeTimeout
        limits.handlerTimeout = try duration(options.handlerTimeout, "HANDLER_TIMEOUT") ?? limits.handlerTimeout
        limits.shutdownGracePeriod = try duration(options.shutdownGrace, "SHUTDOWN_GRACE") ?? limits.shutdownGracePeriod
        self.limits = limits
        downloads = try DownloadConfiguration(options: options, source: source, upstreamPolicy: upstreamPolicy,
                                              clustered: cluster != nil)
        if let heartbeat = try duration(options.eventHeartbeat, "EVENT_HEARTBEAT") {
            events.heartbeatInterval = UInt64(max(1, (heartbeat / .milliseconds(1)).rounded()))
        }
        if let (text, setting) = source.value(options.webhookMaxAge, "WEBHOOK_MAX_AGE") {
            guard let age = Self.parseDuration(text, seconds: 60...30 * 86_400) else {
                throw Invalid(setting: setting, problem: "'\(text.prefix(40))' is not a duration from 1m to 30d (e.g. 3d, 12h)")
            }
            webhooks.schedule.maxAge = age
        }
        // Cluster mode: the leases in the database may be live nodes'; they expire instead, after
        // the cluster's lease (never before an attempt's timeout could have run out).
        webhooks.releasesLeasesAtStart = cluster == nil
        if let cluster {
            webhooks.lease = max(.milliseconds(Int64(cluster.timing.lease * 1000)), webhooks.timeout + .seconds(5))
        }
    }

    /// Beside the SQLite file: `data/packd.sqlite` → `data/packd-artifacts`; cluster mode (no
    /// file): `./packd-artifacts`.
    static func defaultArtifactsDirectory(databasePath: String) -> String {
        guard !databasePath.isEmpty else { return "./packd-artifacts" }
        let url = URL(fileURLWithPath: databasePath)
        let stem = url.deletingPathExtension().lastPathComponent
        return url.deletingLastPathComponent().appendingPathComponent(stem + "-artifacts").path
    }

    /// `tiles.internal, 10.0.0.0/8, ::1`: CIDRs and addresses become ranges, the rest host names
    /// (letters, digits, `-` and `.`, at most 253 bytes). Nil when any entry is neither.
    static func parseUpstreamPolicy(_ text: String) -> AddressPolicy? {
        var policy = AddressPolicy()
        let entries = text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        guard !entries.isEmpty, entries.count <= 1000 else { return nil }
        for entry in entries {
            if let range = AddressRange(entry) {
                policy.allowedRanges.append(range)
            } else if entry.utf8.count <= 253, !entry.hasPrefix("-"), entry.contains(where: \.isLetter),
                      entry.unicodeScalars.allSatisfy({ $0.isASCII && (CharacterSet.alphanumerics.contains($0) || $0 == "-" || $0 == ".") }) {
                policy.allowedHosts.insert(entry.lowercased())
            } else {
                return nil
            }
        }
        return policy
    }

    /// `true`/`false` and their usual spellings (`1`/`0`, `yes`/`no`, `on`/`off`).
    static func parseSwitch(_ text: String) -> Bool? {
        switch text.trimmingCharacters(in: .whitespaces).lowercased() {
        case "true", "1", "yes", "on": true
        case "false", "0", "no", "off": false
        default: nil
        }
    }

    /// `500ms`, `10s`, `2m`, `1h`, or a bare number of seconds (`2.5`); positive, at most a day
    /// unless `seconds` says otherwise (`d` for days is taken only when that range reaches them).
    static func parseDuration(_ text: String, seconds range: ClosedRange<Double> = .ulpOfOne...86_400) -> Duration? {
        var units: [(suffix: String, seconds: Double)] = [("ms", 0.001), ("s", 1), ("m", 60), ("h", 3600)]
        if range.upperBound > 86_400 { units.append(("d", 86_400)) }
        var number = Substring(text.trimmingCharacters(in: .whitespaces))
        var scale = 1.0
        for unit in units where number.hasSuffix(unit.suffix) {
            number = number.dropLast(unit.suffix.count)
            scale = unit.seconds
            break
        }
        guard let value = Double(number), value.isFinite, value > 0 else { return nil }
        let seconds = value * scale
        guard range.contains(seconds) else { return nil }
        return .milliseconds(Int64((seconds * 1000).rounded()))
    }
}
